/* SPDX-License-Identifier: MIT */
/* suppress.c: LeakSanitizer's suppressions ("leak:PATTERN") read from a
 * file and matched against the frames of allocation stacks, as LSan
 * matches them: function, source file or module, '*' for any run of
 * characters, substring unless anchored by '^' or '$'. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "msmemscope/analysis.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/symbolize.h"
#include "analysis-int.h"
#include "base-int.h"
#include "log-int.h"
#include "map-int.h"

#define MAX_IPS 256
#define MAX_INLINED 16

struct mms_suppressions {
	char **pats;
	size_t n, cap;
};

MMS__EXPORT void mms_suppressions_free(mms_suppressions_t *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++)
		free(s->pats[i]);
	free(s->pats);
	free(s);
}

MMS__EXPORT size_t mms_suppressions_count(const mms_suppressions_t *s)
{
	return s ? s->n : 0;
}

MMS__EXPORT const char *mms_suppressions_pattern(const mms_suppressions_t *s, size_t i)
{
	return s && i < s->n ? s->pats[i] : NULL;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

MMS__EXPORT int mms_suppressions_parse(const char *text, size_t len, mms_suppressions_t **out, unsigned *bad_line)
{
	mms_suppressions_t *s;
	const char *p = text, *end = text + len, *eol, *a, *b;
	unsigned line = 0;

	if ((!text && len) || !out)
		return MMS_EUSAGE;
	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (; p < end; p = eol + (eol < end)) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		line++;
		for (a = p; a < eol && is_space(*a); a++)
			;
		for (b = eol; b > a && is_space(b[-1]); b--)
			;
		if (a == b || *a == '#')
			continue;
		/* LSan's files may hold other sanitizers' kinds too; only
		 * "leak:" means something to a leak checker, and anything
		 * else is a mistake worth saying. */
		if (b - a <= 5 || memcmp(a, "leak:", 5) || memchr(a, '\0', (size_t)(b - a))) {
			if (bad_line)
				*bad_line = line;
			mms_suppressions_free(s);
			return MMS_EUSAGE;
		}
		a += 5;
		if (mms__grow(&s->pats, &s->cap, s->n, sizeof(*s->pats)) ||
		    !(s->pats[s->n] = strndup(a, (size_t)(b - a)))) {
			mms_suppressions_free(s);
			return -ENOMEM;
		}
		s->n++;
	}
	*out = s;
	return 0;
}

MMS__EXPORT int mms_suppressions_load(const char *path, mms_suppressions_t **out, unsigned *bad_line)
{
	struct stat sb;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, rc;

	if (!path || !out)
		return MMS_EUSAGE;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		close(fd);
		return -EISDIR;
	}
	for (;;) {
		if (len + 1 >= cap) {
			char *nb = realloc(buf, cap ? cap * 2 : 4096);

			if (!nb) {
				rc = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap = cap ? cap * 2 : 4096;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	rc = mms_suppressions_parse(buf, len, out, bad_line);
out:
	free(buf);
	close(fd);
	return rc;
}

/* LSan's TemplateMatch: '*' matches any run of characters; the template
 * matches anywhere in str unless it begins with '^' or ends with '$'. */
static int template_match(const char *templ, const char *str)
{
	const char *tpos, *next;
	int start = 0, asterisk = 0;
	size_t len;
	char *chunk;

	if (!str || !*str)
		return 0;
	if (*templ == '^') {
		start = 1;
		templ++;
	}
	while (*templ) {
		if (*templ == '*') {
			templ++;
			start = 0;
			asterisk = 1;
			continue;
		}
		if (*templ == '$')
			return *str == '\0' || asterisk;
		if (*str == '\0')
			return 0;
		tpos = strchr(templ, '*');
		next = strchr(templ, '$');
		if (!tpos || (next && next < tpos))
			tpos = next;
		len = tpos ? (size_t)(tpos - templ) : strlen(templ);
		chunk = strndup(templ, len);
		if (!chunk)
			return 0;
		next = strstr(str, chunk);
		free(chunk);
		if (!next)
			return 0;
		if (start && next != str)
			return 0;
		str = next + len;
		templ += len;
		start = 0;
		asterisk = 0;
	}
	return 1;
}

/* 1 + the index of the first suppression matching a frame of stack, or 0. */
static size_t stack_match(const mms_suppressions_t *s, const mms_log_t *log, mms_symbolizer_t *sym, uint32_t stack)
{
	uint64_t ips[MAX_IPS];
	mms_frame_t fr[MAX_INLINED];
	int n, m, i, k;
	size_t j;

	n = stack ? mms__log_stack(log, stack, ips, MAX_IPS) : 0;
	if (n > MAX_IPS)
		n = MAX_IPS;
	for (i = 0; i < n; i++) {
		m = sym ? mms_symbolize(sym, ips[i], fr, MAX_INLINED) : 0;
		if (m <= 0) {
			memset(fr, 0, sizeof(fr[0]));
			m = 1;
		}
		for (k = 0; k < m; k++)
			for (j = 0; j < s->n; j++)
				if (template_match(s->pats[j], fr[k].function) ||
				    template_match(s->pats[j], fr[k].file) || template_match(s->pats[j], fr[k].module))
					return j + 1;
	}
	return 0;
}

static int suppress_list(mms_leak_t *l, size_t n, struct mms__map *cache, const mms_suppressions_t *s,
			 const mms_log_t *log, mms_symbolizer_t *sym)
{
	uint64_t *v;
	size_t i;
	int isnew;

	for (i = 0; i < n; i++) {
		/* Stacks repeat: each is matched once. */
		v = mms__map_put(cache, l[i].b.stack, &isnew);
		if (!v)
			return -ENOMEM;
		if (isnew)
			*v = stack_match(s, log, sym, l[i].b.stack);
		l[i].suppression = (size_t)*v;
	}
	return 0;
}

int mms__leaks_suppress(mms_leaks_t *l, const mms_log_t *log, mms_suppressions_t *s, mms_symbolizer_t *sym)
{
	struct mms__map cache;
	int rc;

	if (!l || !log || !s)
		return MMS_EUSAGE;
	mms__map_init(&cache);
	rc = suppress_list(l->step_leaks, l->nstep_leaks, &cache, s, log, sym);
	if (!rc)
		rc = suppress_list(l->exit_leaks, l->nexit_leaks, &cache, s, log, sym);
	if (!rc)
		rc = suppress_list(l->mark_leaks, l->nmark_leaks, &cache, s, log, sym);
	mms__map_free(&cache);
	return rc;
}
