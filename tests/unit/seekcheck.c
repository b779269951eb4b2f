/* SPDX-License-Identifier: MIT */
/* seekcheck.c: checks seeking against replaying from the start: the state
 * (figures and every live block) at each step's end and at random
 * positions, reached by seeks in random order through a small checkpoint
 * interval, must equal the state a plain replay from event 0 reaches.
 * Usage: seekcheck LOG [POSITIONS [CHECKPOINT_EVERY [SEED]]] */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope-replay.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t mix_str(uint64_t h, const char *s)
{
	if (!s)
		return mix(h, 1);
	while (*s)
		h = mix(h, (uint8_t)*s++);
	return mix(h, 0);
}

/* Blocks are visited in no set order: sum the per-block hashes. */
static int block_hash(const mms_block_t *b, void *ctx)
{
	uint64_t h = 0, *sum = ctx;

	h = mix(h, b->addr);
	h = mix(h, b->size);
	h = mix(h, b->mem);
	h = mix(h, b->fn);
	h = mix(h, b->thread);
	h = mix(h, b->stack);
	h = mix(h, b->alloc_id);
	h = mix(h, b->alloc_event);
	h = mix(h, b->step);
	h = mix(h, b->op_launch);
	h = mix(h, b->kernel_launches);
	h = mix_str(h, b->op);
	h = mix_str(h, b->owner);
	h = mix_str(h, b->pool);
	*sum += h;
	return 0;
}

static uint64_t state_hash(mms_replay_t *r, uint64_t *nblocks)
{
	mms_where_t w;
	mms_event_t ev;
	uint64_t h = 0, sum = 0;
	int i;

	mms_replay_where(r, &w);
	h = mix(h, w.position);
	h = mix(h, w.step);
	h = mix(h, (uint64_t)w.in_step);
	h = mix(h, w.op_launches);
	h = mix(h, w.kernel_launches);
	h = mix_str(h, w.op);
	h = mix(h, w.op_launch);
	h = mix(h, w.thread);
	for (i = 0; i < MMS_MEM_KIND_COUNT; i++) {
		h = mix(h, w.mem[i].allocs);
		h = mix(h, w.mem[i].frees);
		h = mix(h, w.mem[i].bytes_allocated);
		h = mix(h, w.mem[i].peak_bytes);
		h = mix(h, w.mem[i].live_blocks);
		h = mix(h, w.mem[i].live_bytes);
	}
	h = mix(h, w.peak_bytes);
	h = mix(h, w.unmatched_frees);
	h = mix(h, w.double_allocs);
	if (mms_replay_last_event(r, &ev))
		h = mix(mix(h, ev.id), ev.file_offset);
	mms_replay_blocks(r, block_hash, &sum);
	*nblocks = w.mem[0].live_blocks + w.mem[1].live_blocks + w.mem[2].live_blocks;
	return mix(h, sum);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	mms_replay_options_t opt = { 0 };
	uint64_t npos = argc > 2 ? strtoull(argv[2], NULL, 0) : 200, *pos, *want, i, j, n, steps, end, nb;
	mms_replay_t *full, *seeker;
	mms_where_t w;
	mms_log_t *log;
	int rc, fails = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: seekcheck LOG [POSITIONS [CHECKPOINT_EVERY [SEED]]]\n");
		return 2;
	}
	if (argc > 4)
		rng ^= strtoull(argv[4], NULL, 0) * 0x9e3779b97f4a7c15ull;
	rc = mms_log_open(argv[1], &log);
	if (rc) {
		fprintf(stderr, "seekcheck: %s: %s\n", argv[1], mms_strerror(rc));
		return 1;
	}
	/* The reference replay never seeks; the other one has dense
	 * checkpoints and only seeks. */
	opt.no_index_file = 1;
	opt.checkpoint_every = UINT64_MAX;
	rc = mms_replay_open_ex(log, &opt, &full);
	opt.checkpoint_every = argc > 3 ? strtoull(argv[3], NULL, 0) : 97;
	if (!rc)
		rc = mms_replay_open_ex(log, &opt, &seeker);
	if (rc) {
		fprintf(stderr, "seekcheck: replay: %s\n", mms_strerror(rc));
		return 1;
	}
	mms_replay_where(full, &w);
	steps = mms_replay_steps(full);
	pos = calloc(npos + 2 * steps + 2, sizeof(*pos));
	want = calloc(npos + 2 * steps + 2, sizeof(*want));
	if (!pos || !want)
		return 1;
	n = 0;
	pos[n++] = w.events;
	pos[n++] = 0;
	for (i = 1; i <= steps; i++) {
		mms_replay_step_range(full, i, &pos[n], &end);
		pos[++n] = end;
		n++;
	}
	for (i = 0; i < npos; i++)
		pos[n++] = w.events ? next_rand() % (w.events + 1) : 0;
	qsort(pos, n, sizeof(*pos), cmp_u64);
	for (i = 0; i < n; i++) {
		rc = mms_replay_seek(full, pos[i]); /* forward only: a plain replay */
		if (rc) {
			fprintf(stderr, "seekcheck: replay to %" PRIu64 ": %s\n", pos[i], mms_strerror(rc));
			return 1;
		}
		want[i] = state_hash(full, &nb);
	}
	/* Visit them again in random order by seeking. */
	for (i = n; i > 1; i--) {
		j = next_rand() % i;
		uint64_t t = pos[i - 1], u = want[i - 1];
		pos[i - 1] = pos[j], want[i - 1] = want[j];
		pos[j] = t, want[j] = u;
	}
	for (i = 0; i < n; i++) {
		rc = mms_replay_seek(seeker, pos[i]);
		if (rc) {
			fprintf(stderr, "seekcheck: seek to %" PRIu64 ": %s\n", pos[i], mms_strerror(rc));
			fails++;
			continue;
		}
		if (state_hash(seeker, &nb) != want[i]) {
			fprintf(stderr, "seekcheck: state after seeking to %" PRIu64 " differs from the replay from the start\n",
				pos[i]);
			fails++;
		}
	}
	printf("seekcheck: %s: %" PRIu64 " events, %" PRIu64 " steps, %" PRIu64 " positions checked, %d differ\n",
	       argv[1], w.events, steps, n, fails);
	mms_replay_close(seeker);
	mms_replay_close(full);
	mms_log_close(log);
	free(pos);
	free(want);
	return fails ? 1 : 0;
}
