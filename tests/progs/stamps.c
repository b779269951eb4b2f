/* SPDX-License-Identifier: MIT */
/* stamps.c: the recorder's stamps while one thread records, then
 * several (doc/recorder.md, "Order"). Beside a thread that records
 * nothing (it waits on a pipe), main allocates a block of 1001 bytes,
 * sleeps 30 ms, allocates one of 1002, makes a burst of 20,000
 * allocations and frees of 24 bytes (every 1000th followed by a page
 * mapped and unmapped), then 20 rounds of: 100 allocations and frees at
 * the start of a coarse clock tick, a pause of 0.6 tick outside any hook,
 * a page mapped and unmapped, one more allocation and free; then sleeps
 * 30 ms again and allocates one of 1003 (the replay must give these
 * blocks their real times), then allocates N blocks of 40 bytes and keeps
 * them. Then the idle thread ends, and 4 threads free those blocks
 * (allocated while main was the only one recording) and hand blocks of
 * their own to each other, which the next thread frees: most frees meet
 * a block another thread allocated. Prints the counts a correct recording
 * shows.
 *
 * Usage: stamps N
 * Output: allocs=A frees=F live=L */
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>

#include "progs.h"

#define THREADS 4
#define HANDOFF 20000

static void **kept;
static unsigned long nkept;
static unsigned long allocs, frees;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *slot[THREADS]; /* a block handed to the thread of that index */

static void pause_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

static long long ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void repeat_then_map(void)
{
	struct timespec res;
	long long t0, spin;
	void *p, *m;
	int i;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) || res.tv_sec)
		return;
	spin = res.tv_nsec * 6 / 10;
	t0 = ns(CLOCK_MONOTONIC_COARSE);
	while (ns(CLOCK_MONOTONIC_COARSE) == t0)
		; /* a tick begins */
	for (i = 0; i < 100; i++) {
		if (!(p = malloc(32)))
			abort();
		*(volatile char *)p = (char)i;
		free(p);
	}
	t0 = ns(CLOCK_MONOTONIC);
	while (ns(CLOCK_MONOTONIC) - t0 < spin)
		;
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		abort();
	munmap(m, 4096);
	if (!(p = malloc(32)))
		abort();
	*(volatile char *)p = 1;
	free(p);
}

/* A thread that records nothing: it waits on a pipe until main ends it. */
static int idle_pipe[2];

static void *idle(void *arg)
{
	char c;

	(void)arg;
	while (read(idle_pipe[0], &c, 1) < 0)
		;
	return NULL;
}

static void *worker(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg, next = (me + 1) % THREADS;
	unsigned long i, a = 0, f = 0;
	void *p;

	/* The blocks main allocated alone: every THREADS-th is this one's. */
	for (i = me; i < nkept; i += THREADS) {
		free(kept[i]);
		f++;
	}
	for (i = 0; i < HANDOFF; i++) {
		p = malloc(48);
		if (!p)
			abort();
		a++;
		pthread_mutex_lock(&lock);
		if (slot[next]) {
			free(slot[next]); /* another thread's block, most often */
			f++;
		}
		slot[next] = p;
		pthread_mutex_unlock(&lock);
	}
	pthread_mutex_lock(&lock);
	allocs += a;
	frees += f;
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[THREADS], idler;
	void *a, *b, *c, *p;
	unsigned long i;
	unsigned t;

	if (argc != 2)
		return 2;
	nkept = strtoul(argv[1], NULL, 10);
	if (pipe(idle_pipe) || pthread_create(&idler, NULL, idle, NULL))
		abort();
	a = malloc(1001);
	pause_ms(30);
	b = malloc(1002);
	for (i = 0; i < 20000; i++) {
		/* Used, so that the compiler keeps the pair. */
		if (!(p = malloc(24)))
			abort();
		*(volatile char *)p = (char)i;
		free(p);
		/* A mapping's events always read the TSC: the allocations
		 * after them must not repeat an older reading. */
		if (i % 1000 == 500) {
			void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (m == MAP_FAILED)
				abort();
			munmap(m, 4096);
		}
	}
	/* In one coarse clock tick: events enough to repeat readings, a
	 * pause of more than 2^20 TSC ticks in no hook, a mapping (which
	 * reads the TSC), then an allocation: its stamp must not go back
	 * before the mapping's. */
	for (i = 0; i < 20; i++)
		repeat_then_map();
	pause_ms(30);
	c = malloc(1003);
	kept = calloc(nkept ? nkept : 1, sizeof(*kept));
	if (!a || !b || !c || !kept)
		abort();
	for (i = 0; i < nkept; i++)
		if (!(kept[i] = malloc(40)))
			abort();
	allocs = 3 + 20000 + 20 * 101 + 1 + nkept;
	frees = 20000 + 20 * 101;
	if (write(idle_pipe[1], "", 1) != 1 || pthread_join(idler, NULL))
		abort();
	for (t = 0; t < THREADS; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t))
			abort();
	for (t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	for (t = 0; t < THREADS; t++)
		if (slot[t]) {
			free(slot[t]);
			frees++;
		}
	free(kept);
	free(a);
	free(b);
	free(c);
	frees += 4;
	printf("allocs=%lu frees=%lu live=%lu\n", allocs, frees, allocs - frees);
	return 0;
}
