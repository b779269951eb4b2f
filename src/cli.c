/* SPDX-License-Identifier: MIT */
/* cli.c: helpers shared by the command-line programs, see cli.h. */
#define _GNU_SOURCE /* vasprintf */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "msmemscope-replay.h"
#include "cli.h"
#include "progress.h"

const char *cli_progname = "msmemscope";
const char *cli_help_command;

void cli_init(const char *argv0)
{
	const char *slash;

	if (!argv0 || !*argv0)
		return;
	slash = strrchr(argv0, '/');
	cli_progname = slash && slash[1] ? slash + 1 : argv0;
}

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	progress_clear();
	fprintf(stderr, "%s: %s", cli_progname, prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void die(int status, const char *fmt, ...)
{
	va_list ap;

	progress_die_if_caught();
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
	exit(status);
}

void die_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", cli_help_command ? cli_help_command : cli_progname);
	exit(CLI_EXIT_USAGE);
}

void warn(const char *fmt, ...)
{
	va_list ap;

	/* A signal cancelled the work: its failures are not news. */
	if (progress_caught())
		return;
	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void say_error(const char *fmt, ...)
{
	va_list ap;

	if (progress_caught())
		return;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void cli_die_of(int sig)
{
	struct rlimit no_core = { 0, 0 };
	sigset_t set;

	fflush(NULL);
	setrlimit(RLIMIT_CORE, &no_core);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		die(CLI_EXIT_FAILURE, "out of memory (%zu bytes)", size);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die(CLI_EXIT_FAILURE, "out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size ? size : 1);
	if (!p)
		die(CLI_EXIT_FAILURE, "out of memory (%zu bytes)", size);
	return p;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xmalloc(n), s, n);
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		die(CLI_EXIT_FAILURE, "out of memory");
	return s;
}

int cli_opt_value(int argc, char **argv, int *i, const char *name, const char **value)
{
	const char *arg = argv[*i];
	size_t n = strlen(name);

	if (strncmp(arg, name, n))
		return 0;
	if (arg[n] == '=') {
		*value = arg + n + 1;
		return 1;
	}
	if (arg[n])
		return 0;
	if (*i + 1 >= argc)
		die_usage("option '%s' needs a value", name);
	*value = argv[++*i];
	return 1;
}

int cli_opt_flag(const char *arg, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(arg, name, n))
		return 0;
	if (arg[n] == '=')
		die_usage("option '%s' takes no value", name);
	return arg[n] == '\0';
}

int cli_parse_u64(const char *s, uint64_t *out)
{
	uintmax_t v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoumax(s, &end, 10);
	if (*end)
		return -1;
	if (errno || v > UINT64_MAX)
		return -2;
	*out = (uint64_t)v;
	return 0;
}

const char *cli_u64_why(const char *s)
{
	uint64_t n;

	return cli_parse_u64(s, &n) == -2 ? "a whole number up to 18446744073709551615" : "a whole number";
}

/* Length of the valid UTF-8 sequence at s (at most len bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t len)
{
	size_t n, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n > len)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* Reject overlong forms, surrogates and values past U+10FFFF. */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void json_put_string(FILE *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;

	fputc('"', f);
	while (i < len) {
		unsigned char c = p[i];

		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc(c, f);
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\t') {
			fputs("\\t", f);
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
		} else if (c >= 0x80) {
			n = utf8_len(p + i, len - i);
			if (!n) {
				fputs("\\ufffd", f);
				i++;
				continue;
			}
			fwrite(p + i, 1, n, f);
			i += n;
			continue;
		} else {
			fputc(c, f);
		}
		i++;
	}
	fputc('"', f);
}

const char *human_bytes(uint64_t n, char *buf, size_t cap)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)n;
	int u = -1;

	if (n < 1024) {
		snprintf(buf, cap, "%" PRIu64 " bytes", n);
		return buf;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, cap, "%.1f %s", v, units[u]);
	return buf;
}

const char *cli_event_kind_name(unsigned kind)
{
	static const char *const names[MMS_EV_KIND_COUNT] = {
		[MMS_EV_SYSTEM] = "SYSTEM",
		[MMS_EV_MALLOC] = "MALLOC",
		[MMS_EV_FREE] = "FREE",
		[MMS_EV_ACCESS] = "ACCESS",
		[MMS_EV_OP_LAUNCH] = "OP_LAUNCH",
		[MMS_EV_KERNEL_LAUNCH] = "KERNEL_LAUNCH",
		[MMS_EV_MSTX] = "MSTX",
		[MMS_EV_STEP] = "STEP",
		[MMS_EV_OWNER] = "OWNER",
		[MMS_EV_WATCH] = "WATCH",
		[MMS_EV_COLLECT] = "COLLECT",
		[MMS_EV_GUARD] = "GUARD",
		[MMS_EV_ALLOC_FAIL] = "ALLOC_FAIL",
	};

	return kind < MMS_EV_KIND_COUNT && names[kind] ? names[kind] : "UNKNOWN";
}

int cli_make_dirs(const char *dir)
{
	char *p, *s;
	int rc = 0;

	if (!*dir)
		return -ENOENT;
	p = xstrdup(dir);
	for (s = p + 1;; s++) {
		if (*s != '/' && *s)
			continue;
		char c = *s;

		*s = '\0';
		if (mkdir(p, 0750) && errno != EEXIST) {
			rc = -errno;
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	free(p);
	return rc;
}

const char *human_bytes_exact(uint64_t n, char *buf, size_t cap)
{
	char h[32];

	human_bytes(n, h, sizeof(h));
	if (n < 1024)
		snprintf(buf, cap, "%s", h);
	else
		snprintf(buf, cap, "%s (%" PRIu64 " bytes)", h, n);
	return buf;
}
