/* SPDX-License-Identifier: MIT */
/* live.c: a program whose log the launcher reads while it runs
 * (launch-live.c): phases of allocations with pauses between them, long
 * enough for the reader to catch up, so the report is mostly read during
 * the run. live.sh checks the report is the one read after the run.
 *
 * Usage: live MODE
 *   steps    six steps (msmemscope_step()) of operators, each leaking a
 *            block of its own, a per-step leak
 *   threads  a second thread allocates from step 2 on, freeing main's
 *            blocks through a shared slot
 *   late     a thread allocates once at the start, sleeps, then
 *            allocates again at the end: the reader must wait for it
 *   fork     a child allocates and leaks, then exits; the parent waits
 *   kill     leaks, then dies of SIGKILL mid-run (an incomplete log)
 *   busyexit two threads allocate and free without a pause; main exits
 *            while they do (they take chunks after the recorder gave the
 *            file's spare room back at the exit)
 * Each mode prints "done" on stdout (kill: nothing). */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#include "msmemscope.h"
#include "progs.h"

static void *volatile sink;
static void *volatile slot;
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Not inlined: its name is on the leaks' stacks. */
__attribute__((noinline)) static void *live_leak(size_t size)
{
	char *p = malloc(size);

	if (p)
		memset(p, 1, size);
	sink = p;
	return p;
}

/* Many blocks allocated and freed, some of them by way of the shared slot
 * when another thread takes them. */
__attribute__((noinline)) static void churn(unsigned long long *rng, int n)
{
	void *keep[64] = { 0 };

	for (int i = 0; i < n; i++) {
		size_t k = prog_rand(rng) % 64;
		void *p = malloc(16 + prog_rand(rng) % 2000);

		free(keep[k]);
		keep[k] = p;
		if (i % 97 == 0) {
			pthread_mutex_lock(&slot_lock);
			if (!slot) {
				slot = p;
				keep[k] = NULL;
			}
			pthread_mutex_unlock(&slot_lock);
		}
	}
	for (int k = 0; k < 64; k++)
		free(keep[k]);
}

static void steps(int nsteps, long pause)
{
	unsigned long long rng = 42;

	for (int s = 1; s <= nsteps; s++) {
		msmemscope_op_begin("forward");
		churn(&rng, 20000);
		live_leak(100 + (size_t)s);
		msmemscope_op_end();
		msmemscope_step();
		pause_ms(pause);
	}
}

static void *taker(void *arg)
{
	unsigned long long rng = 7;

	(void)arg;
	while (!stop) {
		pthread_mutex_lock(&slot_lock);
		free(slot);
		slot = NULL;
		pthread_mutex_unlock(&slot_lock);
		churn(&rng, 500);
		pause_ms(1);
	}
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	sink = malloc(77);
	free(sink);
	while (!stop)
		pause_ms(5);
	live_leak(4242);
	return NULL;
}

/* busyexit's threads: pairs, until the process ends. */
static void *busy(void *arg)
{
	(void)arg;
	for (unsigned i = 0;; i++) {
		void *p = malloc(16 + (i & 255));

		sink = p; /* kept from the optimizer */
		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "steps";
	pthread_t th;
	pid_t pid;
	int status;

	if (!strcmp(mode, "steps")) {
		steps(6, 60);
	} else if (!strcmp(mode, "threads") || !strcmp(mode, "late")) {
		int late = !strcmp(mode, "late");

		if (late && pthread_create(&th, NULL, sleeper, NULL))
			return 2;
		steps(1, 60);
		if (!late && pthread_create(&th, NULL, taker, NULL))
			return 2;
		steps(5, 60);
		stop = 1;
		pthread_join(th, NULL);
		free(slot);
	} else if (!strcmp(mode, "fork")) {
		steps(2, 60);
		pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0) {
			steps(2, 30);
			_exit(0);
		}
		steps(2, 60);
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
			return 3;
	} else if (!strcmp(mode, "kill")) {
		steps(3, 60);
		raise(SIGKILL);
	} else if (!strcmp(mode, "busyexit")) {
		struct timespec ts = { 0, 30 * 1000 * 1000 };

		for (int i = 0; i < 2; i++)
			if (pthread_create(&th, NULL, busy, NULL))
				return 2;
		nanosleep(&ts, NULL);
		prog_say(1, "done\n");
		exit(0); /* the threads still allocating */
	} else {
		prog_say(2, "live: unknown mode %s\n", mode);
		return 2;
	}
	prog_say(1, "done\n");
	return 0;
}
