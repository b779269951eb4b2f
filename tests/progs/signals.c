/* SPDX-License-Identifier: MIT */
/* signals.c: a malloc loop interrupted by a high-frequency SIGALRM timer,
 * so signals land inside the recorder's hooks. The handler either does
 * work without allocating (the safe variant) or allocates and frees a
 * block (undefined behaviour by POSIX, but common in real programs). The
 * handler's size is one the main loop never uses, and the program warms
 * glibc's per-thread cache for it first, so the handler's malloc and free
 * stay in that cache and never take the arena lock the main loop may hold:
 * natively this variant runs reliably, so any failure is the recorder's.
 *
 * Usage: signals quiet|malloc ITERATIONS INTERVAL_US
 * Prints "iterations=N handler_calls=H handler_mallocs=M". */
#include <signal.h>
#include <string.h>
#include <sys/time.h>

#include "progs.h"

#define WINDOW 64
#define HANDLER_SIZE 1000 /* the main loop allocates 16..515 bytes */

static int handler_mallocs;
static volatile sig_atomic_t handler_calls, handler_malloc_count;
static volatile unsigned long long handler_sum;

static void on_alarm(int sig)
{
	int saved = errno;

	(void)sig;
	handler_calls++;
	if (handler_mallocs) {
		unsigned char *p = malloc(HANDLER_SIZE);

		if (p) {
			p[0] = (unsigned char)handler_calls;
			handler_sum += p[0];
			free(p);
			handler_malloc_count++;
		}
	} else {
		/* Some work that touches memory but not the allocator. */
		for (int i = 0; i < 64; i++)
			handler_sum = handler_sum * 31 + (unsigned)i;
	}
	errno = saved;
}

int main(int argc, char **argv)
{
	unsigned long iterations, interval;
	struct sigaction sa;
	struct itimerval it;
	void *live[WINDOW] = {0};
	unsigned long long rng = 42;

	if (argc != 4)
		prog_die("usage: signals quiet|malloc ITERATIONS INTERVAL_US");
	handler_mallocs = !strcmp(argv[1], "malloc");
	if (!handler_mallocs && strcmp(argv[1], "quiet"))
		prog_die("signals: unknown variant '%s'", argv[1]);
	iterations = prog_arg(argv[2], "ITERATIONS");
	interval = prog_arg(argv[3], "INTERVAL_US");

	free(malloc(HANDLER_SIZE));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL))
		prog_die("signals: sigaction failed");
	it.it_interval.tv_sec = 0;
	it.it_interval.tv_usec = (suseconds_t)interval;
	it.it_value = it.it_interval;
	if (setitimer(ITIMER_REAL, &it, NULL))
		prog_die("signals: setitimer failed");

	for (unsigned long i = 0; i < iterations; i++) {
		size_t slot = i % WINDOW;

		free(live[slot]);
		live[slot] = malloc(16 + prog_rand(&rng) % 500);
		if (!live[slot])
			prog_die("signals: malloc failed");
	}

	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	for (size_t i = 0; i < WINDOW; i++)
		free(live[i]);
	prog_say(1, "iterations=%lu handler_calls=%d handler_mallocs=%d\n", iterations, (int)handler_calls,
		 (int)handler_malloc_count);
	return 0;
}
