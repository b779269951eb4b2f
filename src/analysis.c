/* SPDX-License-Identifier: MIT */
/* analysis.c: the table of analyses and the one loop that runs those a
 * command line asked for over a log. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"

/* Each analysis's entry point lives in its own src/an-<name>.c. */
const struct an_def an_defs[] = {
	{ "watch", "the launches that changed each watched block (--watch, msmemscope_watch)", an_watch },
	{ NULL, NULL, NULL },
};

const struct an_def *an_find(const char *name)
{
	for (const struct an_def *d = an_defs; d->name; d++)
		if (!strcmp(d->name, name))
			return d;
	return NULL;
}

const char *an_names(void)
{
	static char buf[256];
	size_t n = 0;

	buf[0] = 0;
	for (const struct an_def *d = an_defs; d->name && n < sizeof(buf); d++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? ", " : "", d->name);
	return buf;
}

const char *an_parse_list(const char *list, unsigned *mask)
{
	static char msg[384];
	const char *p = list;

	*mask = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		const struct an_def *d;

		for (d = an_defs; d->name; d++)
			if (strlen(d->name) == len && !strncmp(d->name, p, len))
				break;
		if (!d->name) {
			snprintf(msg, sizeof(msg), "no analysis '%.*s'; the analyses are %s", (int)len, p,
				 an_names());
			return msg;
		}
		*mask |= 1u << (d - an_defs);
		p += len;
		if (*p == ',')
			p++;
	}
	return NULL;
}

int an_run(const char *path, mms_log_t *log, unsigned mask, const struct an_opts *o, FILE *out)
{
	struct an_ctx c = { path, log, o, out, NULL, 0 };
	int status = 0;

	for (const struct an_def *d = an_defs; d->name; d++) {
		if (!(mask & 1u << (d - an_defs)))
			continue;
		if (d->run(&c))
			status = CLI_EXIT_FAILURE;
		fflush(out);
	}
	mms_symbolizer_close(c.sym);
	return status;
}

mms_symbolizer_t *an_symbolizer(struct an_ctx *c)
{
	if (!c->sym && !c->sym_failed && mms_symbolizer_open(c->log, &c->sym)) {
		c->sym = NULL;
		c->sym_failed = 1;
	}
	return c->sym;
}

char *an_out_path(const struct an_opts *o, const char *name)
{
	return xasprintf("%s/%s", o->outdir ? o->outdir : ".", name);
}
