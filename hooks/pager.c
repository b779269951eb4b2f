/* SPDX-License-Identifier: MIT */
/* pager.c: the log thread (msmemscope-log), which grows the log file and
 * faults its pages in ahead of the chunks the program's threads take.
 *
 * Once the log is past PAGER_START, the thread makes the file ready ahead
 * of the chunks, so the program's threads find them ready instead of
 * paying the page cache's work themselves (the largest part of recording,
 * after the hooks). It runs only in processes that log that much (a thread
 * changes what some programs may do: unshare(CLONE_NEWUSER) refuses a
 * process of more than one thread, so process.c's hooks of it and setns
 * end the thread first, mms__pager_stop), and not with
 * MSMEMSCOPE_LOG_THREAD=0. Everything it does is an optimization: a
 * chunk it has not reached is faulted in by its taker, as without it. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hooks-int.h"
#include "log.h"

#define PAGER_START (8u << 20)
#define PAGER_AHEAD (2u << 20)
static uint64_t pager_want;      /* atomic: fault pages in up to this offset */
static uint64_t pager_done;      /* atomic: pages are in up to this offset */
static uint32_t pager_seq;       /* futex word: bumped when pager_want moves */
static int pager_state;          /* 0 not started, 1 running, 2 not to be had */
/* The thread, joinable: mms__pager_stop() ends it (pager_quit) and waits
 * for it to be gone. Starting and stopping hold pager_lock. */
static pthread_mutex_t pager_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t pager_thread;
static int pager_joinable;
static int pager_quit;           /* atomic: the thread returns at its next look */
static pid_t pager_tid;          /* atomic: its thread id, from its start to its join */
/* The thread only helps where a CPU is free for it: while the process has
 * as many recording threads as it may use CPUs (mms__live_threads), the
 * work would only move between them, with switches on top, so the threads
 * fault their chunks in themselves. */
static uint32_t pager_cpus = 1;  /* CPUs the process may run on */

/* The log thread's loop: waits for pager_want to move past pager_done,
 * grows the file that far and faults the pages in. It stops for good at
 * the first error (the program's own threads then meet it and cut the log)
 * and once the file was trimmed at exit. */
static void *pager_main(void *arg)
{
	(void)arg;
	mms__tls_busy = 2; /* nothing this thread does is the program's */
	__atomic_store_n(&pager_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	for (;;) {
		uint32_t seq = __atomic_load_n(&pager_seq, __ATOMIC_ACQUIRE);
		uint64_t want = __atomic_load_n(&pager_want, __ATOMIC_ACQUIRE);
		uint64_t done = __atomic_load_n(&pager_done, __ATOMIC_ACQUIRE);

		if (__atomic_load_n(&pager_quit, __ATOMIC_ACQUIRE))
			return NULL;
		if (want <= done) {
			syscall(SYS_futex, &pager_seq, FUTEX_WAIT_PRIVATE, seq, NULL, NULL, 0);
			continue;
		}
		if (want > mms__config.log_limit)
			want = mms__config.log_limit;
		if (want <= done || mms__log_grow_ahead(want))
			break;
		while (done < want) {
			uint64_t len = want - done < (256u << 10) ? want - done : (256u << 10);
			if (mms__log_populate(done, len))
				goto out; /* trimmed under us, or a kernel without it */
			done += len;
			__atomic_store_n(&pager_done, done, __ATOMIC_RELEASE);
		}
	}
out:
	__atomic_store_n(&pager_state, 2, __ATOMIC_RELEASE);
	return NULL;
}

/* Starts the log thread, its signals blocked (they are the program's). */
static void pager_start(uint64_t from)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;
	int busy = mms__tls_busy, err;

	pthread_mutex_lock(&pager_lock);
	__atomic_store_n(&pager_done, from, __ATOMIC_RELEASE);
	mms__tls_busy = 2; /* pthread_create allocates: not the program's */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_attr_init(&attr);
	if (!err) {
		pthread_attr_setstacksize(&attr, 64u << 10);
		err = pthread_create(&th, &attr, pager_main, NULL);
		pthread_attr_destroy(&attr);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err && mms__real.pthread_setname_np)
		mms__real.pthread_setname_np(th, MMS_LOG_THREAD_NAME);
	mms__tls_busy = busy;
	if (err)
		__atomic_store_n(&pager_state, 2, __ATOMIC_RELEASE);
	if (!err)
		pager_thread = th;
	pager_joinable = !err;
	pthread_mutex_unlock(&pager_lock);
}

/* Waits until thread tid has left the process. pthread_join returns when
 * the kernel clears the thread's id word, early in its exit, and the
 * thread stays in the process's thread group a little longer: an
 * unshare(CLONE_NEWUSER) made then is refused (EINVAL), which a loaded
 * machine made happen (tests/progs/logthread.sh). tgkill answers ESRCH
 * once the thread is gone from the group. A bounded wait: 100 ms at most;
 * none where the program forbade our system calls. */
static void gone(pid_t tid)
{
	pid_t pid = getpid();

	if (!tid || mms__hands_off_now())
		return;
	for (int i = 0; i < 1000 && syscall(SYS_tgkill, pid, tid, 0) == 0; i++) {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
	}
}

void mms__pager_stop(void)
{
	int busy = mms__tls_busy;

	pthread_mutex_lock(&pager_lock);
	if (pager_joinable) {
		int running = __atomic_load_n(&pager_state, __ATOMIC_ACQUIRE) == 1;

		__atomic_store_n(&pager_quit, 1, __ATOMIC_RELEASE);
		__atomic_fetch_add(&pager_seq, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &pager_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		mms__tls_busy = 2; /* pthread_join frees the thread's state */
		pthread_join(pager_thread, NULL);
		mms__tls_busy = busy;
		gone(__atomic_exchange_n(&pager_tid, 0, __ATOMIC_ACQ_REL));
		pager_joinable = 0;
		__atomic_store_n(&pager_quit, 0, __ATOMIC_RELEASE);
		/* It starts again when the log needs it. */
		if (running)
			__atomic_store_n(&pager_state, 0, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&pager_lock);
}

int mms__log_thread_running(void)
{
	return __atomic_load_n(&pager_state, __ATOMIC_ACQUIRE) == 1;
}

int mms__pager_ready(uint64_t end)
{
	return end <= __atomic_load_n(&pager_done, __ATOMIC_ACQUIRE);
}

void mms__pager_poke(uint64_t end)
{
	uint64_t want = end + PAGER_AHEAD, cur;
	int state = __atomic_load_n(&pager_state, __ATOMIC_ACQUIRE);

	if (state == 2 || end < PAGER_START || !mms__config.log_thread ||
	    __atomic_load_n(&mms__live_threads, __ATOMIC_RELAXED) >= pager_cpus)
		return;
	cur = __atomic_load_n(&pager_want, __ATOMIC_RELAXED);
	if (end + PAGER_AHEAD / 2 <= cur)
		return;
	while (cur < want &&
	       !__atomic_compare_exchange_n(&pager_want, &cur, want, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	if (state == 0) {
		int expect = 0;
		if (__atomic_compare_exchange_n(&pager_state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			pager_start(end);
		return;
	}
	__atomic_fetch_add(&pager_seq, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &pager_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void mms__pager_init(void)
{
	cpu_set_t cpus;

	if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 0)
		pager_cpus = (uint32_t)CPU_COUNT(&cpus);
}

void mms__pager_after_fork_child(void)
{
	pager_state = 0; /* the parent's log thread is not in this process */
	pager_want = pager_done = 0;
	pager_joinable = 0;
	pager_quit = 0;
	pthread_mutex_init(&pager_lock, NULL);
}
