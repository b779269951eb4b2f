/* SPDX-License-Identifier: MIT */
/* measure.h: what the C benchmark drivers share to time a piece of work
 * on one core (the CPU time of the thread that does it, which other work
 * on a shared machine does not lower) and to sample the process's
 * anonymous memory beside it (the log is a shared read-only mapping of
 * the page cache, which does not count). Header-only: each driver is one
 * file, which defines _GNU_SOURCE first (RUSAGE_THREAD). */
#ifndef MMS_BENCH_MEASURE_H
#define MMS_BENCH_MEASURE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static inline double clock_s(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The calling thread's user CPU seconds (its system time left out: on a
 * guest the host's cost of a fresh page moves it from run to run). */
static inline double thread_user_s(void)
{
	struct rusage u;

	if (getrusage(RUSAGE_THREAD, &u))
		return 0;
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6;
}

static inline uint64_t rss_anon_kib(void)
{
	char line[256];
	uint64_t v = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "RssAnon:", 8)) {
			v = strtoull(line + 8, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* One timed piece of work, with a thread sampling the anonymous memory
 * every 2 ms while it runs. */
struct measure {
	pthread_t th;
	atomic_int running;
	_Atomic uint64_t peak_kib;
	uint64_t base;  /* KiB before */
	double t0, cpu0, user0;
	double wall, cpu, user; /* seconds, set by measure_end(); user: of cpu, the user time */
};

static void *measure_sampler(void *arg)
{
	struct measure *m = arg;
	struct timespec ms2 = { 0, 2000000 };
	uint64_t v;

	while (atomic_load(&m->running)) {
		v = rss_anon_kib();
		if (v > atomic_load(&m->peak_kib))
			atomic_store(&m->peak_kib, v);
		nanosleep(&ms2, NULL);
	}
	return NULL;
}

static inline void measure_start(struct measure *m)
{
	m->base = rss_anon_kib();
	atomic_store(&m->peak_kib, m->base);
	atomic_store(&m->running, 1);
	pthread_create(&m->th, NULL, measure_sampler, m);
	m->t0 = clock_s(CLOCK_MONOTONIC);
	m->cpu0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	m->user0 = thread_user_s();
}

/* Stops the clocks and the sampler; returns the peak anonymous memory
 * over the base, in KiB. */
static inline uint64_t measure_end(struct measure *m)
{
	m->cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - m->cpu0;
	m->user = thread_user_s() - m->user0;
	m->wall = clock_s(CLOCK_MONOTONIC) - m->t0;
	atomic_store(&m->running, 0);
	pthread_join(m->th, NULL);
	return atomic_load(&m->peak_kib) - m->base;
}

#endif /* MMS_BENCH_MEASURE_H */
