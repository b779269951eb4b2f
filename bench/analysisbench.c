/* SPDX-License-Identifier: MIT */
/* analysisbench.c: times the analyses of the replay library over one log
 * (events per CPU second of the thread that runs them, one core) and samples the process's anonymous
 * memory while each runs (the log itself is a shared read-only mapping
 * of the page cache, which does not count).
 *
 * Usage: analysisbench LOG */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "msmemscope-replay.h"

static double clock_s(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t rss_anon_kib(void)
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

static atomic_int running;
static _Atomic uint64_t peak_kib;

/* Samples the anonymous memory every 2 ms while an analysis runs. */
static void *sampler(void *arg)
{
	struct timespec ms2 = { 0, 2000000 };
	uint64_t v;

	(void)arg;
	while (atomic_load(&running)) {
		v = rss_anon_kib();
		if (v > atomic_load(&peak_kib))
			atomic_store(&peak_kib, v);
		nanosleep(&ms2, NULL);
	}
	return NULL;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "analysisbench: %s: %s\n", what, mms_strerror(rc));
	exit(1);
}

/* One timed call, with the sampler running beside it. */
struct measure {
	pthread_t th;
	uint64_t base;
	double t0, cpu0;
};

static void measure_start(struct measure *m)
{
	m->base = rss_anon_kib();
	atomic_store(&peak_kib, m->base);
	atomic_store(&running, 1);
	pthread_create(&m->th, NULL, sampler, NULL);
	m->t0 = clock_s(CLOCK_MONOTONIC);
	m->cpu0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
}

static void measure_end(struct measure *m, const char *name, uint64_t events)
{
	double cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - m->cpu0, t = clock_s(CLOCK_MONOTONIC) - m->t0;

	atomic_store(&running, 0);
	pthread_join(m->th, NULL);
	/* CPU time of the thread that ran it: the figure for one core, which
	 * other work on a shared machine does not lower. */
	printf("%-12s %.3f s (%.3f s CPU): %.1f million events/s per CPU second; anonymous memory at most %" PRIu64
	       " KiB over %" PRIu64 " KiB before\n",
	       name, t, cpu, (double)events / cpu / 1e6, atomic_load(&peak_kib) - m->base, m->base);
}

int main(int argc, char **argv)
{
	mms_decompose_t *d;
	mms_inefficient_options_t io = { .keep = 10 };
	mms_inefficient_t *ineff;
	mms_log_info_t info;
	struct measure m;
	mms_log_t *log;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: analysisbench LOG\n");
		return 2;
	}
	if ((rc = mms_log_open(argv[1], &log)))
		die(argv[1], rc);
	mms_log_get_info(log, &info);
	printf("log          %s: %" PRIu64 " events\n", argv[1], info.events);

	measure_start(&m);
	if ((rc = mms_decompose_run(log, NULL, &d)))
		die("decompose", rc);
	measure_end(&m, "decompose", info.events);
	printf("             end %" PRIu64 " bytes in %" PRIu64 " blocks, %zu nodes; peak %" PRIu64 " bytes\n",
	       d->end->bytes, d->end->blocks, d->end->n, d->peak->bytes);
	mms_decompose_free(d);

	measure_start(&m);
	if ((rc = mms_inefficient_run(log, &io, &ineff)))
		die("inefficient", rc);
	measure_end(&m, "inefficient", info.events);
	printf("             %" PRIu64 " blocks: %" PRIu64 " early_allocation, %" PRIu64 " late_deallocation, %" PRIu64
	       " temporary_idleness; %" PRIu64 " accesses (the 10 largest kept, as the CLI's --top)\n",
	       ineff->flagged, ineff->count[0], ineff->count[1], ineff->count[2], ineff->accesses);
	mms_inefficient_free(ineff);
	mms_log_close(log);
	return 0;
}
