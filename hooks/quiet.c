/* SPDX-License-Identifier: MIT */
/* quiet.c: the recorder's own writes raise no signal in the program and
 * land in no file of the program's; and the limits of the process the
 * recorder keeps to (RLIMIT_FSIZE, RLIMIT_AS).
 *
 * A write to a pipe whose reader is gone sends the writing thread SIGPIPE,
 * and a file grown past the process's RLIMIT_FSIZE sends it SIGXFSZ; both
 * kill by default. The program never asked for the recorder's log, its
 * messages on stderr or its dumps: where one of those meets a closed pipe
 * or a file size limit the program set (`ulimit -f`, setrlimit), the
 * program must not die of it, nor find a signal pending that it never
 * caused. So each such call runs with both signals blocked in its thread,
 * and a signal that became pending during it (the kernel sends these to
 * the thread that made the call) is taken back before the mask is
 * restored. A signal that was pending before is the program's and stays. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hooks-int.h"

static const int quiet_sigs[] = { SIGPIPE, SIGXFSZ };

void mms__quiet_begin(struct mms_quiet *q)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof quiet_sigs / sizeof quiet_sigs[0]; i++)
		sigaddset(&set, quiet_sigs[i]);
	pthread_sigmask(SIG_BLOCK, &set, &q->old);
	if (sigpending(&q->before))
		sigemptyset(&q->before);
}

void mms__quiet_end(struct mms_quiet *q)
{
	static const struct timespec now = { 0, 0 };
	sigset_t pending, take;
	int any = 0;

	if (sigpending(&pending) == 0) {
		sigemptyset(&take);
		for (size_t i = 0; i < sizeof quiet_sigs / sizeof quiet_sigs[0]; i++)
			if (sigismember(&pending, quiet_sigs[i]) && !sigismember(&q->before, quiet_sigs[i])) {
				sigaddset(&take, quiet_sigs[i]);
				any = 1;
			}
		/* Each is a standard signal: pending once at most. */
		while (any && sigtimedwait(&take, NULL, &now) > 0)
			;
	}
	pthread_sigmask(SIG_SETMASK, &q->old, NULL);
}

/* The file that was stderr when the process (or this image) started. A
 * program that closed stderr and opened a file of its own on descriptor
 * 2 gets none of the recorder's messages in that file: they are said
 * only while descriptor 2 is still that file (a duplicate kept open
 * instead would hold a pipe's write end that the program closed, and its
 * reader would never see the end). */
static struct {
	int known;
	dev_t dev;
	ino_t ino;
} said_to;

void mms__say_init(void)
{
	struct stat st;

	if (fstat(2, &st) == 0) {
		said_to.dev = st.st_dev;
		said_to.ino = st.st_ino;
		said_to.known = 1;
	}
}

void mms__say(const char *buf, int n, size_t cap)
{
	struct mms_quiet q;
	struct stat st;
	ssize_t r;

	if (n <= 0 || !said_to.known || fstat(2, &st) || st.st_dev != said_to.dev || st.st_ino != said_to.ino)
		return;
	mms__quiet_begin(&q);
	r = write(2, buf, (size_t)n < cap ? (size_t)n : cap - 1);
	(void)r;
	mms__quiet_end(&q);
}

int mms__as_limited(void)
{
	struct rlimit r;

	return getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY;
}

uint64_t mms__fsize_limit(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_FSIZE, &r) || r.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	return (uint64_t)r.rlim_cur;
}
