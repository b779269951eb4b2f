/* SPDX-License-Identifier: MIT */
/* replaybench.c: measures the replay library on one log: opening it,
 * replaying it whole through the heap state (events per second, on one
 * core), building the seek index, and seeking to random events and steps
 * with the index loaded; prints the figures and the process's memory
 * (peak resident, and anonymous memory while replaying, which is what
 * follows the live blocks: the log itself is a shared read-only mapping
 * of the page cache).
 *
 * Usage: replaybench LOG [SEEKS]   (writes LOG.idx) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "msmemscope-replay.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A field of /proc/self/status in KiB, or 0. */
static uint64_t status_kib(const char *key)
{
	char line[256];
	uint64_t v = 0;
	size_t n = strlen(key);
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			v = strtoull(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static uint64_t peak_anon;

static void sample(void)
{
	uint64_t a = status_kib("RssAnon");

	if (a > peak_anon)
		peak_anon = a;
}

static int on_progress(void *ctx, uint64_t done, uint64_t total)
{
	(void)ctx;
	(void)done;
	(void)total;
	sample();
	return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "replaybench: %s: %s\n", what, mms_strerror(rc));
	exit(1);
}

int main(int argc, char **argv)
{
	mms_replay_options_t ro = { .progress = on_progress };
	int seeks = argc > 2 ? atoi(argv[2]) : 20, i, rc;
	double t0, t_open, t_replay, t_build, t_load, worst_ev = 0, worst_step = 0, sum_ev = 0, sum_step = 0;
	uint64_t events, steps, n = 0, live_peak = 0, base_anon;
	mms_replay_t *r;
	mms_log_t *log;
	mms_where_t w;
	mms_event_t ev;
	char idx[4096];

	if (argc < 2) {
		fprintf(stderr, "usage: replaybench LOG [SEEKS]\n");
		return 2;
	}
	snprintf(idx, sizeof(idx), "%s.idx", argv[1]);
	unlink(idx);
	base_anon = status_kib("RssAnon");

	t0 = now();
	if ((rc = mms_log_open(argv[1], &log)))
		die(argv[1], rc);
	t_open = now() - t0;

	/* A plain replay through the heap state, no index: the events per
	 * second figure. */
	ro.forward_only = 1;
	if ((rc = mms_replay_open_ex(log, &ro, &r)))
		die("replay", rc);
	t0 = now();
	while ((rc = mms_replay_next(r, &ev)) == 1) {
		if ((++n & 0xfffff) == 0) {
			sample();
			mms_replay_where(r, &w);
			if (w.mem[0].live_blocks > live_peak)
				live_peak = w.mem[0].live_blocks;
		}
	}
	t_replay = now() - t0;
	if (rc < 0)
		die("replay stopped", rc);
	mms_replay_close(r);

	/* Building the index (a replay that also saves checkpoints). */
	ro.forward_only = 0;
	t0 = now();
	if ((rc = mms_replay_open_ex(log, &ro, &r)))
		die("index", rc);
	t_build = now() - t0;
	mms_replay_close(r);

	/* Loading it, as the next query does, and seeking. */
	t0 = now();
	if ((rc = mms_replay_open(log, &r)))
		die("index load", rc);
	t_load = now() - t0;
	if (mms_replay_index_state(r, NULL) != MMS_INDEX_LOADED)
		fprintf(stderr, "replaybench: warning: the index was not reloaded from %s\n", idx);
	mms_replay_where(r, &w);
	events = w.events;
	steps = mms_replay_steps(r);
	for (i = 0; i < seeks; i++) {
		double t;
		uint64_t e = next_rand() % events, s, end;

		t = now();
		if ((rc = mms_replay_seek(r, e + 1)))
			die("seek", rc);
		t = now() - t;
		sum_ev += t;
		worst_ev = t > worst_ev ? t : worst_ev;
		if (!steps)
			continue;
		s = 1 + next_rand() % steps;
		mms_replay_step_range(r, s, NULL, &end);
		t = now();
		if ((rc = mms_replay_seek(r, end)))
			die("seek to step", rc);
		t = now() - t;
		sum_step += t;
		worst_step = t > worst_step ? t : worst_step;
	}
	sample();
	mms_replay_close(r);

	printf("log            %s: %" PRIu64 " events, %" PRIu64 " steps\n", argv[1], events, steps);
	printf("open           %.3f s (validates every record)\n", t_open);
	printf("replay         %.3f s: %.1f million events/s through the heap state (one core)\n", t_replay,
	       (double)n / t_replay / 1e6);
	printf("index build    %.3f s; index load %.3f s\n", t_build, t_load);
	printf("seek to event  mean %.3f s, worst %.3f s (%d random events, index loaded)\n", sum_ev / seeks, worst_ev,
	       seeks);
	if (steps)
		printf("seek to step   mean %.3f s, worst %.3f s (%d random step ends)\n", sum_step / seeks, worst_step,
		       seeks);
	printf("memory         peak resident %" PRIu64 " MiB (the log is mapped: %" PRIu64 " MiB of page cache);"
	       " anonymous memory at most %" PRIu64 " MiB over %" PRIu64 " MiB at start, with up to %" PRIu64
	       " live blocks\n",
	       status_kib("VmHWM") / 1024, status_kib("RssFile") / 1024, peak_anon / 1024, base_anon / 1024, live_peak);
	mms_log_close(log);
	return 0;
}
