/* SPDX-License-Identifier: MIT */
/* statebench.c: replays one log through the heap state (mms_replay_next()
 * with no index, as a one-pass export does) several times and prints the
 * events per CPU second of the replaying thread (one core; the median of
 * the runs, with the slowest and fastest), and per second of its user
 * time alone (on a guest the system time, the kernel zeroing the tables'
 * fresh pages, moves with the host's memory), the most live blocks seen, and
 * the anonymous memory the replay took (sampled every 2 ms), per live
 * block: it must follow the live blocks, never the log's length.
 *
 * Beside each run, the floor: the same log's heap events (MALLOC and FREE
 * of HOST blocks), decoded into arrays beforehand, replayed through the
 * least a live-block table can be (one flat hash map of address -> slot,
 * 64-byte slots, a stack of free slots, the same lookahead as the
 * iterator's: the map's line 16 events ahead, a FREE's slot 8 ahead), on
 * fresh memory each run. No decoding, no event record, no subscriber: what
 * the memory of the machine at hand allows for these events, to read the
 * first figure against; each run's rate over its floor run's, the median
 * of those ratios, is the figure a host whose speed moves from one minute
 * to the next moves least.
 *
 * Usage: statebench LOG [RUNS]   (RUNS default 5) */
#define _GNU_SOURCE /* RUSAGE_THREAD (measure.h) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

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

/* The floor's events: address, size, and whether it is a MALLOC. */
struct heap_events {
	uint64_t *addr, *size;
	uint8_t *malloc;
	size_t n, cap;
};

static void heap_events_read(mms_log_t *log, struct heap_events *h)
{
	mms_iter_t *it;
	mms_event_t ev;
	int rc;

	if ((rc = mms_iter_open(log, &it)))
		die("iterator", rc);
	while ((rc = mms_iter_next(it, &ev)) == 1) {
		if ((ev.kind != MMS_EV_MALLOC && ev.kind != MMS_EV_FREE) || ev.mem != MMS_MEM_HOST || !ev.addr)
			continue;
		if (h->n == h->cap) {
			h->cap = h->cap ? 2 * h->cap : 1 << 16;
			h->addr = realloc(h->addr, h->cap * sizeof(*h->addr));
			h->size = realloc(h->size, h->cap * sizeof(*h->size));
			h->malloc = realloc(h->malloc, h->cap);
			if (!h->addr || !h->size || !h->malloc)
				die("events", -12);
		}
		h->addr[h->n] = ev.addr;
		h->size[h->n] = ev.size;
		h->malloc[h->n] = ev.kind == MMS_EV_MALLOC;
		h->n++;
	}
	if (rc < 0)
		die("iterator stopped", rc);
	mms_iter_close(it);
}

struct floor_ent {
	uint64_t key, slot;
};

struct floor_blk {
	uint64_t addr, size, event, pad[5];
};

static void *floor_map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("floor table", -12);
#ifdef MADV_HUGEPAGE
	madvise(p, bytes, MADV_HUGEPAGE);
#endif
	return p;
}

#define FLOOR_HASH(k, shift) ((size_t)(((k) * 0x9e3779b97f4a7c15ull) >> (shift)))

/* One replay of h through the floor table, sized for most live blocks
 * (load at most one half); returns the peak live bytes (kept so the
 * compiler keeps the work). */
static uint64_t floor_run(const struct heap_events *h, uint64_t most)
{
	unsigned bits = 10, shift;
	size_t mask, i, j, q, home, hole, nfree = 0, nslots = 0;
	uint64_t live = 0, peak = 0, k;
	struct floor_ent *m;
	struct floor_blk *b;
	uint32_t *free_slots;

	while (((size_t)1 << bits) < 2 * most + 2)
		bits++;
	mask = ((size_t)1 << bits) - 1;
	shift = 64 - bits;
	m = floor_map((mask + 1) * sizeof(*m));
	b = floor_map((most + 1) * sizeof(*b));
	free_slots = malloc((most + 1) * sizeof(*free_slots));
	if (!free_slots)
		die("floor table", -12);
	for (i = 0; i < h->n; i++) {
		if (i + 16 < h->n)
			__builtin_prefetch(&m[FLOOR_HASH(h->addr[i + 16], shift)]);
		if (i + 8 < h->n && !h->malloc[i + 8]) {
			k = h->addr[i + 8];
			for (j = FLOOR_HASH(k, shift); m[j].key; j = (j + 1) & mask)
				if (m[j].key == k) {
					__builtin_prefetch(&b[m[j].slot]);
					break;
				}
		}
		k = h->addr[i];
		for (j = FLOOR_HASH(k, shift); m[j].key && m[j].key != k; j = (j + 1) & mask)
			;
		if (h->malloc[i]) {
			if (m[j].key)
				continue; /* live already: a damaged log's; keep the first */
			if (!nfree && nslots > most)
				continue; /* cannot happen: most counts every live block */
			m[j].key = k;
			m[j].slot = nfree ? free_slots[--nfree] : nslots++;
			b[m[j].slot].addr = k;
			b[m[j].slot].size = h->size[i];
			b[m[j].slot].event = i;
			live += h->size[i];
			peak = live > peak ? live : peak;
			continue;
		}
		if (!m[j].key)
			continue;
		live -= b[m[j].slot].size;
		free_slots[nfree++] = (uint32_t)m[j].slot;
		/* Backward-shift deletion, as the map of the heap state. */
		hole = j;
		for (q = (hole + 1) & mask; m[q].key; q = (q + 1) & mask) {
			home = FLOOR_HASH(m[q].key, shift);
			if (((q - home) & mask) >= ((q - hole) & mask)) {
				m[hole] = m[q];
				hole = q;
			}
		}
		m[hole].key = 0;
	}
	munmap(m, (mask + 1) * sizeof(*m));
	munmap(b, (most + 1) * sizeof(*b));
	free(free_slots);
	return peak;
}

/* The most HOST blocks live at once in h (a set of addresses). */
static uint64_t floor_most(const struct heap_events *h)
{
	uint64_t live = 0, most = 0;
	unsigned bits = 10;
	size_t mask, i, j;
	uint64_t *set;
	uint8_t *in;

	/* Each address keeps its entry once seen, with a flag for whether
	 * it is live: a tombstone per free would make an address reused
	 * over and over (sqlite3's pages) probe past all of its own. */
	while (((size_t)1 << bits) < 2 * h->n + 2)
		bits++;
	mask = ((size_t)1 << bits) - 1;
	set = calloc(mask + 1, sizeof(*set));
	in = calloc(mask + 1, 1);
	if (!set || !in)
		die("floor", -12);
	for (i = 0; i < h->n; i++) {
		for (j = FLOOR_HASH(h->addr[i], 64 - bits); set[j] && set[j] != h->addr[i]; j = (j + 1) & mask)
			;
		set[j] = h->addr[i];
		if (h->malloc[i] && !in[j]) {
			in[j] = 1;
			most = ++live > most ? live : most;
		} else if (!h->malloc[i] && in[j]) {
			in[j] = 0;
			live--;
		}
	}
	free(set);
	free(in);
	return most;
}

int main(int argc, char **argv)
{
	mms_replay_options_t ro = { .forward_only = 1 };
	int runs = argc > 2 ? atoi(argv[2]) : 5, i, rc;
	uint64_t n = 0, live = 0, live_peak = 0, kib, kib_peak = 0, most, peak = 0;
	double *rate, *urate, *frate, *ratio;
	struct heap_events h = { 0 };
	struct measure m;
	mms_replay_t *r;
	mms_log_t *log;
	mms_where_t w;

	if (argc < 2 || runs < 1) {
		fprintf(stderr, "usage: statebench LOG [RUNS]\n");
		return 2;
	}
	rate = calloc((size_t)runs, sizeof(*rate));
	urate = calloc((size_t)runs, sizeof(*urate));
	frate = calloc((size_t)runs, sizeof(*frate));
	ratio = calloc((size_t)runs, sizeof(*ratio));
	if (!rate || !urate || !frate || !ratio)
		die("runs", -12);
	if ((rc = mms_log_open(argv[1], &log)))
		die(argv[1], rc);
	heap_events_read(log, &h);
	most = floor_most(&h);
	/* Each run of the heap state beside a run of the floor: on a host
	 * whose speed moves within minutes, the ratio of the two is the
	 * figure that moves least. */
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
		urate[i] = m.user > 0 ? (double)n / m.user / 1e6 : 0;
		kib_peak = kib > kib_peak ? kib : kib_peak;

		measure_start(&m);
		peak += floor_run(&h, most);
		measure_end(&m);
		frate[i] = (double)h.n / m.cpu / 1e6;
		ratio[i] = rate[i] / frate[i];
	}
	qsort(rate, (size_t)runs, sizeof(*rate), cmp_double);
	qsort(urate, (size_t)runs, sizeof(*urate), cmp_double);
	qsort(frate, (size_t)runs, sizeof(*frate), cmp_double);
	qsort(ratio, (size_t)runs, sizeof(*ratio), cmp_double);
	printf("floor: %zu heap events, up to %" PRIu64 " live: %.1f million events/s (median of %d, %.1f to %.1f)"
	       " through a minimal table, decoded beforehand (peak %" PRIu64 " bytes)\n",
	       h.n, most, frate[runs / 2], runs, frate[0], frate[runs - 1], peak / (uint64_t)runs);
	printf("%" PRIu64 " events, up to %" PRIu64
	       " live blocks: %.1f million events/s per CPU second through the heap"
	       " state (median of %d, %.1f to %.1f; per user CPU second %.1f, %.1f to %.1f); %.2f of the floor's rate"
	       " (median of the runs' ratios, %.2f to %.2f); anonymous memory at most"
	       " %" PRIu64 " KiB (%.0f bytes per live block)\n",
	       n, live_peak, rate[runs / 2], runs, rate[0], rate[runs - 1], urate[runs / 2], urate[0], urate[runs - 1],
	       ratio[runs / 2], ratio[0], ratio[runs - 1], kib_peak,
	       live_peak ? (double)kib_peak * 1024 / (double)live_peak : 0.0);
	free(rate);
	free(urate);
	free(frate);
	free(ratio);
	free(h.addr);
	free(h.size);
	free(h.malloc);
	mms_log_close(log);
	return 0;
}
