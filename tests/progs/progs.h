/* SPDX-License-Identifier: MIT */
/* progs.h: small helpers shared by the test programs: a deterministic PRNG
 * and output that never goes through stdio (stdio allocates its buffers
 * lazily, which would add allocations the tests do not expect). */
#ifndef MMS_TEST_PROGS_H
#define MMS_TEST_PROGS_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* xorshift64: the same sequence on every run and every machine. */
static inline unsigned long long prog_rand(unsigned long long *state)
{
	unsigned long long x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

/* Writes a formatted line to fd with one write(2) (no allocation, no stdio
 * buffer), retrying short writes. Returns 0 or -1. */
__attribute__((format(printf, 2, 3))) static inline int prog_say(int fd, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;
	size_t off = 0;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	while (off < (size_t)n) {
		ssize_t w = write(fd, buf + off, (size_t)n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

/* Dies with a message on stderr: test programs only. */
__attribute__((noreturn, format(printf, 1, 2))) static inline void prog_die(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	prog_say(2, "%s\n", buf);
	exit(99);
}

/* Parses a non-negative decimal argument or dies naming it. */
static inline unsigned long prog_arg(const char *s, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end)
		prog_die("bad %s: '%s'", what, s);
	return v;
}

/* malloc(n), or dies. Not inlined: the allocation stacks of the tests
 * that call it begin with it and name their caller next. */
__attribute__((noinline, unused)) static void *prog_malloc(size_t n)
{
	void *p = malloc(n);

	if (!p)
		prog_die("malloc(%zu) failed", n);
	return p;
}

/* dir/name, in one of four static buffers (so a call can take a few):
 * the files of the checks that write into a folder of their own. */
static inline char *prog_in_dir(const char *dir, const char *name)
{
	static char buf[4][4096];
	static int k;
	char *p = buf[k++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
	return p;
}

#endif /* MMS_TEST_PROGS_H */
