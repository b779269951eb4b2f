/* SPDX-License-Identifier: MIT */
/* launch-live.c: the launcher reads the program's log while the program
 * runs, so that the report is ready soon after it exits: a thread of idle
 * scheduling priority (it takes no CPU time the program wants) follows the
 * log (mms_log_follow()) and feeds the report's pass (mms_pass_feed());
 * after the exit, report_run() reads the rest. Whatever keeps the thread
 * from following (a cut or damaged log, a thread that wrote late, no
 * memory) only costs the time it spent: the report then reads the log
 * after the run, as without it. */
#include "config.h"

#define _GNU_SOURCE 1 /* SCHED_IDLE */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "msmemscope-replay.h"
#include "analysis.h"
#include "cli.h"
#include "launch.h"

/* Between two looks at the log: after one that found events (each look
 * costs a walk of the segment table: a few thousand events read at a
 * time), and after one that found none, doubling up to the longest wait
 * while the program writes nothing (a server waiting for work). */
#define LIVE_BATCH_NS (5 * 1000 * 1000L)
#define LIVE_IDLE_NS (20 * 1000 * 1000L)
#define LIVE_IDLE_MAX_NS (200 * 1000 * 1000L)

struct live {
	pthread_t thread;
	char *path;
	char *shown;
	const struct opts *o;
	const struct run *run;
	atomic_int exited;      /* the program exited: the thread stops */
	pthread_mutex_t lock;   /* with wake: live_stop() ends the thread's wait */
	pthread_cond_t wake;
	/* The thread's, until live_stop() joins it. */
	mms_log_t *log;
	struct an_opts ao;
	struct an_ctx *c;
	int status;             /* an_open()'s */
	int failed;             /* following stopped (the error): read the log after the run */
	int taken;              /* report_run() took the pass */
	uint64_t fed;           /* events fed while the program ran */
	uint64_t looks;         /* looks at the log */
};

/* Frees what the thread read. */
static void live_drop_quiet(struct live *lv)
{
	if (lv->c)
		an_close(lv->c);
	mms_log_close(lv->log);
	lv->c = NULL;
	lv->log = NULL;
}

/* The process exec'd another program, whose log (its successor) has
 * appeared: that image is the program's, and the one followed so far a
 * wrapper's (env, a shell script, pyenv's shims), so the thread follows
 * the new log instead. Returns 1 when it switched. */
static int live_follow_exec(struct live *lv)
{
	char *next = exec_successor(lv->run->dir, lv->shown);

	if (!next)
		return 0;
	live_drop_quiet(lv);
	free(lv->shown);
	free(lv->path);
	lv->shown = next;
	lv->path = xasprintf("%s/%s", lv->run->dir, next);
	return 1;
}

/* Waits ns nanoseconds, or until live_stop() says the program exited. */
static void idle(struct live *lv, long ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += ns;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&lv->lock);
	while (!atomic_load(&lv->exited) && pthread_cond_timedwait(&lv->wake, &lv->lock, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&lv->lock);
}

/* Opens the log once the recorder has written its header, and the
 * report's pass over it. Returns 1 when open, 0 when not yet, or the
 * negative code that says why it cannot be followed. Not yet: no file,
 * or one whose header is not whole: the recorder sizes the file before
 * it writes the header, and writes the magic last (a loaded machine may
 * show the zeros for a while; what never becomes a log is said by the
 * read after the run). */
static int live_open(struct live *lv)
{
	int rc = mms_log_follow(lv->path, &lv->log, NULL);

	if (rc == -ENOENT || rc == MMS_ETRUNCATED || rc == MMS_EBADMAGIC)
		return 0;
	if (rc)
		return rc;
	report_options(lv->run, lv->o, &lv->ao);
	lv->c = an_open(lv->path, lv->log, lv->o->analyses, &lv->ao, stderr, &lv->status);
	lv->c->shown = lv->shown;
	lv->c->summary = 1;
	return 1;
}

static void *live_main(void *arg)
{
	struct live *lv = arg;
	struct sched_param sp = { 0 };
	sigset_t all;
	mms_pass_info_t pi;
	long wait = LIVE_IDLE_NS;
	int rc;

	/* Signals are the main thread's (it forwards them to the program). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* Only the time no other thread wants: the program comes first. */
	pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	while (!atomic_load(&lv->exited)) {
		if (!lv->log) {
			rc = live_open(lv);
			if (rc == 0) {
				idle(lv, LIVE_IDLE_NS / 4);
				continue;
			}
		} else {
			lv->looks++;
			rc = mms_log_follow_refresh(lv->log);
			if (rc == 0 && live_follow_exec(lv))
				continue;
			if (rc == 0) {
				idle(lv, wait);
				if (wait < LIVE_IDLE_MAX_NS)
					wait *= 2;
				continue;
			}
			wait = LIVE_IDLE_NS;
		}
		if (rc >= 0)
			rc = mms_pass_feed(lv->c->pass);
		if (rc) {
			lv->failed = rc;
			break;
		}
		idle(lv, LIVE_BATCH_NS);
	}
	if (lv->c) {
		mms_pass_get_info(lv->c->pass, &pi);
		lv->fed = pi.events;
	}
	return NULL;
}

struct live *live_start(const struct run *run, pid_t pid, const struct opts *o)
{
	pthread_condattr_t ca;
	struct live *lv;

	/* The report it prepares: the summary and the leaks, read straight
	 * from the events (analyses that write files, a dump, or
	 * suppressions matched by frames are read after the run). */
	if (o->no_live || o->record_only || o->data_format || o->suppressions ||
	    (o->analyses & ~an_mask("leaks")))
		return NULL;
	lv = xcalloc(1, sizeof(*lv));
	lv->shown = xasprintf("memscope_%ld.mms", (long)pid);
	lv->path = xasprintf("%s/%s", run->dir, lv->shown);
	lv->o = o;
	lv->run = run;
	pthread_mutex_init(&lv->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&lv->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&lv->thread, NULL, live_main, lv)) {
		pthread_cond_destroy(&lv->wake);
		pthread_mutex_destroy(&lv->lock);
		free(lv->path);
		free(lv->shown);
		free(lv);
		return NULL;
	}
	return lv;
}

void live_stop(struct live *lv)
{
	if (!lv)
		return;
	pthread_mutex_lock(&lv->lock);
	atomic_store(&lv->exited, 1);
	pthread_cond_signal(&lv->wake);
	pthread_mutex_unlock(&lv->lock);
	pthread_join(lv->thread, NULL);
}

/* Frees what the thread read, and says once why it is not used. */
static void live_drop(struct live *lv)
{
	if (getenv("MSMEMSCOPE_LIVE_DEBUG")) {
		mms_log_info_t in;
		const char *what = NULL;

		if (lv->failed && lv->log) {
			mms_log_get_info(lv->log, &in);
			what = in.damage;
		}
		fprintf(stderr, "%s: live: not used (%s%s%s%s)\n", cli_progname,
			lv->failed ? "following stopped: " : "no log while it ran",
			lv->failed ? mms_strerror(lv->failed) : "", what ? ": " : "", what ? what : "");
	}
	live_drop_quiet(lv);
}

struct an_ctx *live_take(struct live *lv, const char *name, mms_log_t **log, int *status)
{
	struct an_ctx *c;

	if (!lv)
		return NULL;
	/* An image the thread did not reach (it exec'd after the last look)
	 * is read after the run. */
	if (strcmp(lv->shown, name) != 0) {
		if (getenv("MSMEMSCOPE_LIVE_DEBUG"))
			fprintf(stderr, "%s: live: not used (%s exec'd %s after the last look)\n", cli_progname,
				lv->shown, name);
		live_drop_quiet(lv);
		return NULL;
	}
	/* The last look, and the rest of the events: a thread's records
	 * written late, stamped before events fed already, make the log read
	 * anew; what was read goes first, so that the new read does not
	 * hold the heap state twice. */
	if (!lv->c || lv->failed || (lv->failed = mms_log_follow_end(lv->log)) ||
	    (lv->failed = mms_pass_feed(lv->c->pass))) {
		live_drop(lv);
		return NULL;
	}
	if (getenv("MSMEMSCOPE_LIVE_DEBUG"))
		fprintf(stderr, "%s: live: %llu events read while the program ran, %llu looks\n", cli_progname,
			(unsigned long long)lv->fed, (unsigned long long)lv->looks);
	lv->taken = 1;
	c = lv->c;
	*log = lv->log;
	*status = lv->status;
	lv->c = NULL;
	lv->log = NULL;
	return c;
}

void live_free(struct live *lv)
{
	if (!lv)
		return;
	if (!lv->taken && (lv->c || lv->log))
		live_drop(lv); /* the report did not ask (record only) */
	pthread_cond_destroy(&lv->wake);
	pthread_mutex_destroy(&lv->lock);
	free(lv->path);
	free(lv->shown);
	free(lv);
}
