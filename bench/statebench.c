/* SPDX-License-Identifier: MIT */
/* statebench.c: replays one log through the heap state (mms_replay_next()
 * with no index, as a one-pass export does) several times and prints the
 * events per CPU second of the replaying thread (one core; the median of
 * the runs, with the slowest and fastest), the most live blocks seen, and
 * the anonymous memory the replay took (sampled every 2 ms), per live
 * block: it must follow the live blocks, never the log's length.
 *
 * Usage: statebench LOG [RUNS]   (RUNS default 5) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "measure.h"
#include "msmemscope-replay.h"

static void die(const char *what, int rc)
{
	fprintf(stderr, "statebench: %s: %s\n", what, mms_strerror(rc));
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The most live blocks (all kinds) of w. */
static uint64_t live_blocks(const mms_where_t *w)
{
	uint64_t n = 0;
	int k;

	for (k = 0; k < MMS_MEM_KIND_COUNT; k++)
		n += w->mem[k].live_blocks;
	return n;
}

int main(int argc, char **argv)
{
	mms_replay_options_t ro = { .forward_only = 1 };
	int runs = argc > 2 ? atoi(argv[2]) : 5, i, rc;
	uint64_t n = 0, live = 0, live_peak = 0, kib, kib_peak = 0;
	double *rate;
	struct measure m;
	mms_replay_t *r;
	mms_log_t *log;
	mms_where_t w;

	if (argc < 2 || runs < 1) {
		fprintf(stderr, "usage: statebench LOG [RUNS]\n");
		return 2;
	}
	rate = calloc((size_t)runs, sizeof(*rate));
	if (!rate)
		die("runs", -12);
	if ((rc = mms_log_open(argv[1], &log)))
		die(argv[1], rc);
	for (i = 0; i < runs; i++) {
		if ((rc = mms_replay_open_ex(log, &ro, &r)))
			die("replay", rc);
		n = 0;
		measure_start(&m);
		while ((rc = mms_replay_next(r, NULL)) == 1) {
			/* The live blocks, now and then: cheap beside 64 Ki events. */
			if ((++n & 0xffff) == 0) {
				mms_replay_where(r, &w);
				live = live_blocks(&w);
				live_peak = live > live_peak ? live : live_peak;
			}
		}
		kib = measure_end(&m);
		if (rc < 0)
			die("replay stopped", rc);
		mms_replay_close(r);
		rate[i] = (double)n / m.cpu / 1e6;
		kib_peak = kib > kib_peak ? kib : kib_peak;
	}
	qsort(rate, (size_t)runs, sizeof(*rate), cmp_double);
	printf("%" PRIu64 " events, up to %" PRIu64 " live blocks: %.1f million events/s per CPU second through the heap"
	       " state (median of %d, %.1f to %.1f); anonymous memory at most %" PRIu64 " KiB (%.0f bytes per live"
	       " block)\n",
	       n, live_peak, rate[runs / 2], runs, rate[0], rate[runs - 1], kib_peak,
	       live_peak ? (double)kib_peak * 1024 / (double)live_peak : 0.0);
	free(rate);
	mms_log_close(log);
	return 0;
}
