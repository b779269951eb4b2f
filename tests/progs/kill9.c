/* SPDX-License-Identifier: MIT */
/* kill9.c: allocates forever (a sliding window of live blocks) and, after
 * each malloc has returned, writes the number of returned mallocs to a
 * progress fd, so a test that kills it with SIGKILL knows a lower bound on
 * the allocations the log must hold.
 *
 * Usage: kill9 PROGRESS_FD [THREADS]
 * Each thread writes lines "T N\n" (thread index, mallocs returned in that
 * thread) with one write(2) each; the line for N is written after the N-th
 * malloc of that thread returned. */
#include <pthread.h>
#include <signal.h>

#include "progs.h"

#define WINDOW 512

static int progress_fd;

static void *worker_main(void *arg)
{
	unsigned id = (unsigned)(size_t)arg;
	unsigned long long rng = 0x2545f4914f6cdd1dull + id, n = 0;
	void *live[WINDOW] = {0};

	for (;;) {
		size_t slot = n % WINDOW;
		void *p;

		free(live[slot]);
		p = malloc(16 + prog_rand(&rng) % 2048);
		if (!p)
			prog_die("kill9: malloc failed");
		((volatile char *)p)[0] = 1;
		live[slot] = p;
		n++;
		if (prog_say(progress_fd, "%u %llu\n", id, n))
			prog_die("kill9: cannot write progress");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned nthreads = 1;
	pthread_t th[16];

	if (argc < 2 || argc > 3)
		prog_die("usage: kill9 PROGRESS_FD [THREADS]");
	progress_fd = (int)prog_arg(argv[1], "PROGRESS_FD");
	if (argc == 3)
		nthreads = (unsigned)prog_arg(argv[2], "THREADS");
	if (nthreads == 0 || nthreads > 16)
		prog_die("kill9: THREADS must be 1..16");
	for (unsigned t = 1; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, worker_main, (void *)(size_t)t))
			prog_die("kill9: pthread_create failed");
	worker_main(0);
	return 0;
}
