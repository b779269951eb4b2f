/* SPDX-License-Identifier: MIT */
/* fdlimit.c: a program that changes its own descriptor limit, as Go and
 * Java runtimes do at start, and then opens files. What it prints is what
 * it saw: the same natively and under the recorder.
 *
 *   fdlimit setrlimit|setrlimit64|prlimit|prlimit-pid|syscall SOFT COUNT
 *       closes every descriptor it inherited but 0, 1 and 2 (as every
 *       mode does first), raises its soft limit to SOFT (the hard limit
 *       as it is) with that call (syscall: libc's syscall() with
 *       SYS_prlimit64), then opens /dev/null COUNT times and says which numbers it
 *       got: the first, the last, and every place where the next number
 *       was not one more than the last.
 *   fdlimit none 0 COUNT
 *       the same without changing the limit.
 *   fdlimit lower SOFT COUNT
 *       allocates, lowers its soft limit to SOFT, allocates heavily, forks
 *       a child that allocates, and opens files until EMFILE (at most
 *       COUNT).
 *   fdlimit errors 0 COUNT
 *       calls that fail (soft above hard, an unknown resource, a pid that
 *       does not exist, the hard limit raised: EPERM without privilege)
 *       and ones that succeeds with errno set: what each
 *       returned, its errno, and the limits after it; then opens COUNT
 *       files as above. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

static void limits(const char *after)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		prog_die("fdlimit: getrlimit: %s\n", strerror(errno));
	prog_say(1, "%s: soft %llu hard %llu\n", after, (unsigned long long)rl.rlim_cur,
		 (unsigned long long)rl.rlim_max);
}

/* Opens /dev/null up to count times (until EMFILE if stop_at_emfile) and
 * says which numbers it got. */
static void open_many(long count, int stop_at_emfile)
{
	unsigned long sum = 0;
	int first = -1, last = -1, gaps = 0;
	long n;

	for (n = 0; n < count; n++) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0) {
			if (stop_at_emfile && errno == EMFILE)
				break;
			prog_die("fdlimit: open number %ld: %s\n", n + 1, strerror(errno));
		}
		if (first < 0)
			first = fd;
		else if (fd != last + 1 && gaps++ < 20)
			prog_say(1, "gap: %d after %d\n", fd, last);
		last = fd;
		sum = sum * 31 + (unsigned long)fd;
	}
	prog_say(1, "opened %ld files: %d to %d, %d gaps, checksum %lu%s\n", n, first, last, gaps, sum,
		 n < count ? ", then EMFILE" : "");
}

static void call(const char *what, int r)
{
	int err = errno;

	if (r)
		prog_say(1, "%s = %d, errno %s\n", what, r, strerrorname_np(err));
	else
		prog_say(1, "%s = %d, errno %s\n", what, r, err == EDOM ? "EDOM (as set)" : "changed");
	limits(what);
}

/* Allocates and frees, enough for some megabytes of log. */
static unsigned long churn(unsigned long long seed, int rounds)
{
	void *live[256] = { 0 };
	unsigned long sum = 0;

	for (int i = 0; i < rounds; i++) {
		unsigned k = (unsigned)(prog_rand(&seed) % 256);
		free(live[k]);
		live[k] = malloc(16 + prog_rand(&seed) % 300);
		if (!live[k])
			exit(2);
		memset(live[k], i, 8);
		sum += ((unsigned char *)live[k])[0];
	}
	for (int k = 0; k < 256; k++)
		free(live[k]);
	return sum;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	struct rlimit rl, old;
	struct rlimit64 rl64;
	long count;
	int r = 0;

	if (argc != 4) {
		prog_say(2, "usage: fdlimit MODE SOFT COUNT\n");
		return 2;
	}
	count = (long)prog_arg(argv[3], "COUNT");
	/* What the test's caller left open is not compared. */
	closefrom(3);
	/* Allocate first: the recorder's log exists, where the limit the
	 * program started with put it. */
	free(malloc(100));
	if (getrlimit(RLIMIT_NOFILE, &rl))
		prog_die("fdlimit: getrlimit: %s\n", strerror(errno));
	limits("at start");
	rl.rlim_cur = (rlim_t)prog_arg(argv[2], "SOFT");
	rl64.rlim_cur = rl.rlim_cur;
	rl64.rlim_max = rl.rlim_max;
	if (!strcmp(mode, "setrlimit")) {
		r = setrlimit(RLIMIT_NOFILE, &rl);
	} else if (!strcmp(mode, "setrlimit64")) {
		r = setrlimit64(RLIMIT_NOFILE, &rl64);
	} else if (!strcmp(mode, "prlimit")) {
		r = prlimit(0, RLIMIT_NOFILE, &rl, &old);
	} else if (!strcmp(mode, "prlimit-pid")) {
		r = prlimit(getpid(), RLIMIT_NOFILE, &rl, NULL);
	} else if (!strcmp(mode, "syscall")) {
		r = (int)syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &rl, NULL);
	} else if (!strcmp(mode, "lower")) {
		unsigned long sum;
		pid_t pid;
		int st = 0;

		r = setrlimit(RLIMIT_NOFILE, &rl);
		limits("lowered");
		sum = churn(1, 300000);
		pid = fork();
		if (pid == 0)
			_exit(churn(2, 1000) == churn(2, 1000) ? 0 : 1);
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			prog_die("fdlimit: fork or wait failed\n");
		prog_say(1, "churn %lu; the child's status %d\n", sum, st);
		open_many(count, 1);
		return r != 0;
	} else if (!strcmp(mode, "errors")) {
		struct rlimit bad = { rl.rlim_max, rl.rlim_max };

		bad.rlim_cur = rl.rlim_max == RLIM_INFINITY ? RLIM_INFINITY : rl.rlim_max + 1;
		bad.rlim_max = rl.rlim_max == RLIM_INFINITY ? 1024 : rl.rlim_max;
		errno = 0;
		call("setrlimit(soft above hard)", setrlimit(RLIMIT_NOFILE, &bad));
		call("setrlimit(resource 1000)", setrlimit((__rlimit_resource_t)1000, &bad));
		call("prlimit(0, soft above hard)", prlimit(0, RLIMIT_NOFILE, &bad, NULL));
		call("prlimit(no such pid)", prlimit(0x3ffffff0, RLIMIT_NOFILE, &bad, NULL));
		if (rl.rlim_max != RLIM_INFINITY) {
			/* EPERM, but for a process with CAP_SYS_RESOURCE, where
			 * it succeeds (natively too). */
			struct rlimit up = { rl.rlim_cur, rl.rlim_max + 1 };

			r = setrlimit(RLIMIT_NOFILE, &up);
			if (r)
				call("setrlimit(hard above hard)", r);
			else
				prog_say(1, "setrlimit(hard above hard) succeeded: privileged\n");
			r = 0;
		}
		/* A call that succeeds leaves errno as it was. */
		rl.rlim_cur = 4096;
		errno = EDOM;
		call("setrlimit(4096) with errno EDOM", setrlimit(RLIMIT_NOFILE, &rl));
		errno = EDOM;
		call("prlimit(0, read only) with errno EDOM", prlimit(0, RLIMIT_NOFILE, NULL, &old));
	} else if (strcmp(mode, "none")) {
		prog_say(2, "fdlimit: unknown mode %s\n", mode);
		return 2;
	}
	if (r)
		prog_die("fdlimit: %s: %s\n", mode, strerror(errno));
	limits("then");
	open_many(count, 0);
	return 0;
}
