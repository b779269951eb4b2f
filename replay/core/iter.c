/* SPDX-License-Identifier: MIT */
/* iter.c: yields a log's events in replay order: a k-way merge, by stamp,
 * of one cursor per thread, ties broken by thread and file offset. Each
 * event is decoded once: straight into the caller's, or, for the heap
 * events of a replay that looks ahead, by the lookahead cursor, whose
 * decoding the caller's then takes; the merge reads only the next
 * record's stamp. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "base-int.h"
#include "decode-int.h"
#include "iter-int.h"
#include "log-int.h"
#include "state-int.h"

/* How far (in events of its thread) a second cursor runs ahead of each
 * thread's to ask for the heap state's cache lines: the live-block
 * table's for every heap event, then, half as far ahead, the block of a
 * FREE. A power of two. */
#define ITER_AHEAD 16u
/* The slots of the events it decoded: twice as many, so that the event
 * just yielded from its slot stays there, untouched by the lookahead, until
 * the next call (mms__iter_next_ref()). A power of two. */
#define ITER_RING (2 * ITER_AHEAD)
_Static_assert(MMS__SPAN_MAX <= ITER_RING / 2, "a run made must leave the last one's events be");

/* One thread's run of segments, its cursor at the record of its next
 * event once peeked. */
struct iter_src {
	struct mms__cursor c;
	size_t seg, seg_end;  /* current segment, end of the thread's run */
	int peeked;           /* c is at the next event's record, stamp is its stamp; the
	                         last thread left does without until its next call */
	uint64_t stamp;       /* the next event's stamp: the merge's key */
	/* Looking ahead, in the current segment only: pc is `ahead` events
	 * past c. */
	struct mms__cursor pc;
	unsigned ahead;
	int pc_stop;          /* pc reached the segment's end or a record it leaves */
	uint64_t n;           /* events this thread yielded */
	/* The heap events pc decoded, by event number (n, from 1): the
	 * record at `at`, decoded into ev[], the cursor after it at `next`.
	 * c takes them from here instead of decoding each record a second
	 * time; halfway, a FREE's block is asked for. The events apart, side
	 * by side, so that a run of them is an array (mms__iter_next_span()).
	 * Only heap events are decoded into ev[], and only the fields a heap
	 * event sets (mms__decode_heap_to() with whole 0) and its id and
	 * time_ns, when it is yielded: the others stay 0 from calloc(). */
	struct ahead_ev {
		uint64_t n;
		const uint8_t *at, *next;
	} evs[ITER_RING];
	mms_event_t ev[ITER_RING];
};

struct mms_iter {
	mms_log_t *log;
	struct iter_src *srcs;
	size_t *heap;         /* indices into srcs, a binary min-heap by next event */
	size_t nheap;
	uint64_t next_id;
	int err;              /* the error that stopped the iteration, or 0 */
	uint64_t limit;       /* no event stamped after it is yielded */
	const struct mms__state *pf; /* the state to fetch ahead for, or NULL */
	mms_event_t ev;              /* an event decoded here, not in a lookahead slot */
	/* The last run mms__iter_next_span() gave: its thread, first slot,
	 * length (0: none) and segment (the thread may be in its next one
	 * since), first event's id, and the delta state before its first
	 * record. */
	const struct iter_src *span_src;
	size_t span_slot, span_n, span_seg;
	uint64_t span_id, span_stamp, span_prev_addr;
};

static void seg_enter(mms_log_t *log, struct iter_src *s)
{
	const struct mms__segment *g = &log->segs[s->seg];

	s->c.p = log->map + g->begin;
	s->c.end = log->map + g->end;
	s->c.stamp = g->first;
	s->c.prev_addr = 0;
	s->c.thread = g->thread;
	/* The lookahead starts again from here. */
	s->pc = s->c;
	s->ahead = 0;
	s->pc_stop = 0;
}

/* Turns an event record into the public event (id and time set later). */
static void rec_to_event(const mms_log_t *log, const struct mms__rec *r, uint32_t thread, mms_event_t *ev)
{
	uint64_t device;

	memset(ev, 0, sizeof(*ev));
	ev->stamp = r->stamp;
	ev->thread = thread;
	ev->file_offset = r->off;
	ev->sub = r->sub;
	switch (r->type) {
	case MMS_TAG_ALLOC:
	case MMS_TAG_ALLOC_RT:
		ev->kind = MMS_EV_MALLOC;
		ev->addr = r->addr;
		ev->size = r->u[0];
		ev->stack = (uint32_t)r->u[1];
		ev->runtime = r->type == MMS_TAG_ALLOC_RT ? (uint32_t)r->u[2] : 0;
		break;
	case MMS_TAG_FREE:
	case MMS_TAG_FREE_STACK:
		ev->kind = MMS_EV_FREE;
		ev->addr = r->addr;
		ev->stack = r->type == MMS_TAG_FREE_STACK ? (uint32_t)r->u[0] : 0;
		break;
	case MMS_TAG_MMAP:
	case MMS_TAG_MMAP_RT:
		ev->kind = MMS_EV_MALLOC;
		ev->mem = MMS_MEM_MMAP;
		ev->addr = r->addr;
		ev->size = r->u[0];
		ev->flags = r->u[1];
		ev->stack = (uint32_t)r->u[2];
		ev->runtime = r->type == MMS_TAG_MMAP_RT ? (uint32_t)r->u[3] : 0;
		/* Reserved, not memory: where it lands, nothing is. */
		if (log->hdr.version >= 9 && !(r->u[1] >> 32)) {
			ev->kind = MMS_EV_FREE;
			ev->sub = MMS_MAP_RESERVE;
		}
		break;
	case MMS_TAG_MPROTECT:
		ev->kind = r->u[1] ? MMS_EV_MALLOC : MMS_EV_FREE;
		ev->sub = MMS_MAP_PROTECT;
		ev->mem = MMS_MEM_MMAP;
		ev->addr = r->addr;
		ev->size = r->u[0];
		ev->flags = r->u[1] << 32;
		ev->stack = (uint32_t)r->u[2];
		break;
	case MMS_TAG_MUNMAP:
		ev->kind = MMS_EV_FREE;
		ev->mem = MMS_MEM_MMAP;
		ev->addr = r->addr;
		ev->size = r->u[0];
		break;
	case MMS_TAG_POOL_ALLOC:
	case MMS_TAG_POOL_FREE:
		ev->kind = r->type == MMS_TAG_POOL_ALLOC ? MMS_EV_MALLOC : MMS_EV_FREE;
		ev->mem = MMS_MEM_POOL;
		ev->name = mms__log_string(log, r->u[0]);
		ev->addr = r->addr;
		ev->size = r->u[1];
		ev->total = r->u[2];
		ev->used = r->u[3];
		ev->stack = r->type == MMS_TAG_POOL_ALLOC ? (uint32_t)r->u[4] : 0;
		break;
	case MMS_TAG_DEV_ALLOC:
	case MMS_TAG_DEV_FREE:
		ev->kind = r->type == MMS_TAG_DEV_ALLOC ? MMS_EV_MALLOC : MMS_EV_FREE;
		ev->mem = MMS_MEM_DEVICE;
		ev->addr = r->addr;
		if (r->type == MMS_TAG_DEV_ALLOC) {
			ev->size = r->u[0];
			ev->stack = (uint32_t)r->u[1];
		}
		/* The device comes last: u[2] of an allocation, u[0] of a free. */
		device = r->u[r->type == MMS_TAG_DEV_ALLOC ? 2 : 0];
		ev->device = device > UINT16_MAX ? UINT16_MAX : (uint16_t)device;
		break;
	case MMS_TAG_ACCESS:
		ev->kind = MMS_EV_ACCESS;
		ev->addr = r->addr;
		ev->size = r->u[0];
		break;
	case MMS_TAG_OP_BEGIN:
	case MMS_TAG_OP_END:
		ev->kind = MMS_EV_OP_LAUNCH;
		ev->sub = r->type == MMS_TAG_OP_END;
		if (r->type == MMS_TAG_OP_BEGIN)
			ev->name = mms__log_string(log, r->u[0]);
		break;
	case MMS_TAG_KERNEL:
	case MMS_TAG_KERNEL_DEV:
		ev->kind = MMS_EV_KERNEL_LAUNCH;
		ev->name = mms__log_string(log, r->u[0]);
		if (r->type == MMS_TAG_KERNEL_DEV) {
			/* On a device: said as device memory is. */
			ev->mem = MMS_MEM_DEVICE;
			ev->device = r->u[1] > UINT16_MAX ? UINT16_MAX : (uint16_t)r->u[1];
		}
		break;
	case MMS_TAG_MARK:
		ev->kind = MMS_EV_MSTX;
		ev->name = mms__log_string(log, r->u[0]);
		break;
	case MMS_TAG_RANGE_START:
		ev->kind = MMS_EV_MSTX;
		ev->sub = 1;
		ev->range_id = r->u[0];
		ev->name = mms__log_string(log, r->u[1]);
		break;
	case MMS_TAG_RANGE_END:
		ev->kind = MMS_EV_MSTX;
		ev->sub = 2;
		ev->range_id = r->u[0];
		break;
	case MMS_TAG_STEP:
		ev->kind = MMS_EV_STEP;
		ev->sub = r->sub; /* enum mms_step_source */
		break;
	case MMS_TAG_OWNER_PUSH:
	case MMS_TAG_OWNER_POP:
		ev->kind = MMS_EV_OWNER;
		ev->sub = r->type == MMS_TAG_OWNER_POP;
		if (r->type == MMS_TAG_OWNER_PUSH)
			ev->name = mms__log_string(log, r->u[0]);
		break;
	case MMS_TAG_OWNER_TAG:
		ev->kind = MMS_EV_OWNER;
		ev->sub = MMS_OWNER_TAG;
		ev->addr = r->addr;
		ev->name = mms__log_string(log, r->u[0]);
		break;
	case MMS_TAG_WATCH:
		ev->kind = MMS_EV_WATCH;
		ev->addr = r->addr;
		ev->size = r->u[0];
		ev->name = mms__log_string(log, r->u[1]);
		if (r->sub != MMS_WATCH_REGISTER) {
			ev->used = r->u[2];
			ev->total = r->u[3];
			ev->flags = r->u[4];
		}
		break;
	case MMS_TAG_COLLECT:
		ev->kind = MMS_EV_COLLECT;
		ev->sub = (r->u[0] & 1) != 0;
		ev->flags = (r->u[0] & MMS_COLLECT_BY_STEPS) != 0;
		break;
	case MMS_TAG_ALLOC_FAIL:
		ev->kind = MMS_EV_ALLOC_FAIL;
		ev->mem = MMS_MEM_HOST;
		ev->size = r->u[0];
		ev->stack = (uint32_t)r->u[1];
		ev->flags = r->u[2];
		break;
	case MMS_TAG_DEV_ALLOC_FAIL:
		ev->kind = MMS_EV_ALLOC_FAIL;
		ev->mem = MMS_MEM_DEVICE;
		ev->size = r->u[0];
		ev->stack = (uint32_t)r->u[1];
		ev->device = r->u[2] > UINT16_MAX ? UINT16_MAX : (uint16_t)r->u[2];
		break;
	case MMS_TAG_GUARD:
		ev->kind = MMS_EV_GUARD;
		if (r->sub == MMS_GUARD_CHECK)
			break;
		ev->addr = r->addr;
		ev->size = r->u[0];
		ev->flags = r->u[1];
		ev->total = (uint64_t)mms_unzigzag(r->u[2]);
		ev->used = r->u[3];
		ev->stack = (uint32_t)r->u[4];
		ev->range_id = r->u[4] >> 32 | r->u[5] << 32;
		break;
	default: /* MMS_TAG_SYSTEM */
		ev->kind = MMS_EV_SYSTEM;
		if (r->sub == MMS_SYSTEM_FORK)
			ev->total = r->u[0];
		break;
	}
}

/* Moves s's cursor to its next event's record, through metadata and
 * segments, and reads that event's stamp. Returns 1, 0 when the thread
 * has no more events, or MMS_ECORRUPT. */
static int src_peek(mms_log_t *log, struct iter_src *s)
{
	struct mms__rec r;
	const char *why;
	int rc;

	for (;;) {
		if (s->c.p < s->c.end) {
			rc = mms__decode_peek(&s->c, &s->stamp);
			if (rc == 1) {
				s->peeked = 1;
				return 1;
			}
			if (rc == 0)
				rc = mms__decode(&s->c, &r, &why); /* metadata: read, go on */
			if (rc < 0)
				return MMS_ECORRUPT; /* the open pass stopped segments before damage */
			if (rc == 1)
				continue;
		}
		if (++s->seg >= s->seg_end)
			return 0;
		seg_enter(log, s);
	}
}

/* The heap event at s's cursor, when the lookahead decoded it already:
 * moves the cursor past it and returns its slot (where it stays until the
 * next call), or NULL (decode it). The record's address tells a slot of
 * this event from a stale one. */
static inline mms_event_t *src_take(struct iter_src *s)
{
	size_t i = (s->n + 1) & (ITER_RING - 1);
	const struct ahead_ev *a = &s->evs[i];

	if (a->at != s->c.p)
		return NULL;
	s->c.p = a->next;
	s->c.stamp = s->ev[i].stamp;
	s->c.prev_addr = s->ev[i].addr;
	return &s->ev[i];
}

/* The event at s's cursor (src_peek() found it): the lookahead's slot, or
 * *ev decoded here. Returns it, or NULL when the record does not decode. */
static inline mms_event_t *src_decode(mms_log_t *log, struct iter_src *s, mms_event_t *ev)
{
	mms_event_t *e = src_take(s);
	struct mms__rec r;
	const char *why;

	if (e)
		return e;
	if (mms__decode_heap(&s->c, ev))
		return ev;
	if (mms__decode(&s->c, &r, &why) != 1)
		return NULL;
	rec_to_event(log, &r, s->c.thread, ev);
	return ev;
}

/* Runs s's second cursor on until it is ITER_AHEAD events past c, asking
 * for the line of the live-block table each event will look in; a heap
 * event is decoded there once, for src_take(). Stops it (pc_stop) where
 * it cannot go on in this segment. The cursor and counts in locals: the
 * events' stores cannot then make the compiler read them again. */
static inline __attribute__((always_inline)) void src_fill(const mms_iter_t *it, struct iter_src *s)
{
	struct mms__cursor pc = s->pc;
	unsigned ahead = s->ahead;
	const uint64_t n = s->n;
	struct mms__rec r;
	const char *why;
	uint64_t addr;

	while (ahead < ITER_AHEAD) {
		size_t i = (n + ahead + 1) & (ITER_RING - 1);
		struct ahead_ev *a = &s->evs[i];
		const uint8_t *at = pc.p;

		if (at >= pc.end)
			goto stop;
		if (mms__decode_heap_to(&pc, &s->ev[i], 0)) {
			a->at = at;
			a->n = n + ahead + 1;
			a->next = pc.p;
			addr = s->ev[i].addr;
		} else {
			a->at = NULL;
			if (mms__decode(&pc, &r, &why) != 1 || r.type == MMS_TAG_SEGMENT)
				goto stop;
			if (!mms__is_event(r.type))
				continue;
			if (r.type != MMS_TAG_ACCESS) {
				ahead++; /* no block to look up */
				continue;
			}
			addr = r.addr;
		}
		ahead++;
		mms__state_prefetch_addr(it->pf, addr);
	}
	s->pc = pc;
	s->ahead = ahead;
	return;
stop:
	s->pc = pc;
	s->ahead = ahead;
	s->pc_stop = 1;
}

/* Asks for the block event n of s will free, when the lookahead decoded
 * that event and it is a FREE (the table's line, asked for earlier, has
 * come by now). */
static inline __attribute__((always_inline)) void src_free_ahead(const mms_iter_t *it, const struct iter_src *s,
								 uint64_t n)
{
	size_t i = n & (ITER_RING - 1);

	if (s->evs[i].n == n && s->ev[i].kind == MMS_EV_FREE)
		mms__state_prefetch_blk(it->pf, s->ev[i].addr);
}

/* After s yielded an event: keeps the lookahead ITER_AHEAD events ahead
 * and, halfway, asks for the block of a FREE to come. */
static inline void src_fetch_ahead(const mms_iter_t *it, struct iter_src *s)
{
	uint64_t half = s->n + ITER_AHEAD / 2;

	/* pc is `ahead` events past c; with none ahead (the segment's start,
	 * or the lookahead behind), it starts again from c. */
	if (s->ahead)
		s->ahead--;
	else if (!s->pc_stop)
		s->pc = s->c;
	if (!mms__state_prefetching(it->pf)) {
		/* Small tables: not worth it. The lookahead starts again
		 * with the next segment, if they grew. */
		s->pc_stop = 1;
		s->ahead = 0;
		return;
	}
	if (!s->pc_stop)
		src_fill(it, s);
	src_free_ahead(it, s, half);
}

static inline int src_less(const struct iter_src *a, const struct iter_src *b)
{
	if (a->stamp != b->stamp)
		return a->stamp < b->stamp;
	if (a->c.thread != b->c.thread)
		return a->c.thread < b->c.thread;
	return a->c.p - a->c.base < b->c.p - b->c.base;
}

static void heap_down(mms_iter_t *it, size_t i)
{
	size_t n = it->nheap, v = it->heap[i], l, m;

	for (;;) {
		l = 2 * i + 1;
		if (l >= n)
			break;
		m = l;
		if (l + 1 < n && src_less(&it->srcs[it->heap[l + 1]], &it->srcs[it->heap[l]]))
			m = l + 1;
		if (!src_less(&it->srcs[it->heap[m]], &it->srcs[v]))
			break;
		it->heap[i] = it->heap[m];
		i = m;
	}
	it->heap[i] = v;
}

/* Opens an iterator with each thread's cursor at the start of its run, or
 * at pos when given. */
static int iter_open(mms_log_t *log, uint64_t next_id, const struct mms__src_pos *pos, mms_iter_t **out)
{
	const struct mms__segment *g;
	mms_iter_t *it;
	size_t i;

	if (!log || !out)
		return MMS_EUSAGE;
	*out = NULL;
	it = calloc(1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->log = log;
	it->next_id = next_id;
	it->limit = UINT64_MAX;
	it->srcs = calloc(log->nruns + 1, sizeof(*it->srcs));
	if (!it->srcs)
		goto fail_it;
	it->heap = calloc(log->nruns + 1, sizeof(*it->heap));
	if (!it->heap)
		goto fail_srcs;
	for (i = 0; i < log->nruns; i++) {
		struct iter_src *s = &it->srcs[i];

		s->c.base = log->map;
		s->seg = log->runs[i];
		s->seg_end = log->runs[i + 1];
		if (pos) {
			/* A saved position must lie inside this thread's run
			 * and its segment: an index that does not match the
			 * log is refused, not trusted. */
			if (pos[i].seg == UINT64_MAX)
				continue;
			if (pos[i].seg < s->seg || pos[i].seg >= s->seg_end)
				goto fail_pos;
			s->seg = (size_t)pos[i].seg;
			g = &log->segs[s->seg];
			if (pos[i].off < g->begin || pos[i].off >= g->end)
				goto fail_pos;
			seg_enter(log, s);
			s->c.p = log->map + pos[i].off;
			s->c.stamp = pos[i].stamp;
			s->c.prev_addr = pos[i].prev_addr;
			s->pc = s->c;
		} else {
			seg_enter(log, s);
		}
		if (src_peek(log, s) == 1)
			it->heap[it->nheap++] = i;
	}
	for (i = it->nheap / 2; i-- > 0;)
		heap_down(it, i);
	*out = it;
	return 0;
fail_pos:
	free(it->heap);
	free(it->srcs);
	free(it);
	return MMS_ECORRUPT;
fail_srcs:
	free(it->srcs);
fail_it:
	free(it);
	return -ENOMEM;
}

MMS__EXPORT int mms_iter_open(mms_log_t *log, mms_iter_t **out)
{
	return iter_open(log, 0, NULL, out);
}

int mms__iter_open_at(mms_log_t *log, uint64_t next_id, const struct mms__src_pos *pos, mms_iter_t **out)
{
	return iter_open(log, next_id, pos, out);
}

void mms__iter_prefetch_for(mms_iter_t *it, const struct mms__state *st)
{
	it->pf = st;
}

void mms__iter_save(const mms_iter_t *it, uint64_t at, uint64_t *next_id, struct mms__src_pos *pos)
{
	const struct iter_src *s, *mid = NULL;
	struct iter_src tmp;
	size_t i;

	*next_id = it->next_id;
	for (i = 0; i < it->log->nruns; i++)
		pos[i].seg = UINT64_MAX;
	if (at != it->next_id && it->span_n && at >= it->span_id && at - it->span_id < it->span_n) {
		/* Inside the last run: event at's record is the one after
		 * event at - 1's, in its segment; every other thread's next
		 * event comes after the run. */
		s = mid = it->span_src;
		i = it->span_slot + (size_t)(at - it->span_id);
		*next_id = at;
		pos[s - it->srcs].seg = it->span_seg;
		pos[s - it->srcs].off = s->ev[i].file_offset;
		pos[s - it->srcs].stamp = at == it->span_id ? it->span_stamp : s->ev[i - 1].stamp;
		pos[s - it->srcs].prev_addr = at == it->span_id ? it->span_prev_addr : s->ev[i - 1].addr;
	}
	/* Only threads with a pending event have somewhere to resume; the
	 * others are done. */
	for (i = 0; i < it->nheap; i++) {
		s = &it->srcs[it->heap[i]];
		if (s == mid)
			continue;
		if (!s->peeked) {
			/* Where its next event is, found on a copy. */
			tmp = *s;
			if (src_peek(it->log, &tmp) != 1)
				continue;
			s = &tmp;
		}
		pos[it->heap[i]].seg = s->seg;
		pos[it->heap[i]].off = (uint64_t)(s->c.p - s->c.base) + s->c.base_off;
		pos[it->heap[i]].stamp = s->c.stamp;
		pos[it->heap[i]].prev_addr = s->c.prev_addr;
	}
}

void mms__iter_limit(mms_iter_t *it, uint64_t limit)
{
	it->limit = limit;
}

void mms__iter_save_follow(const mms_iter_t *it, uint64_t *next_id, struct mms__follow_pos *pos)
{
	struct iter_src tmp;
	size_t i;

	*next_id = it->next_id;
	for (i = 0; i < it->log->nthreads; i++)
		pos[i].valid = 0;
	for (i = 0; i < it->log->nruns; i++) {
		/* On a copy: the thread's next event, or the end of what it
		 * had (its cursor stays in its last segment). */
		struct mms__follow_pos *f = &pos[it->log->segs[it->log->runs[i]].thread];

		tmp = it->srcs[i];
		if (!tmp.peeked && tmp.seg < tmp.seg_end)
			f->at_end = src_peek(it->log, &tmp) != 1;
		else
			f->at_end = !tmp.peeked;
		f->off = (uint64_t)(tmp.c.p - tmp.c.base) + tmp.c.base_off;
		f->stamp = tmp.c.stamp;
		f->prev_addr = tmp.c.prev_addr;
		f->valid = 1;
	}
}

int mms__iter_open_follow(mms_log_t *log, uint64_t next_id, const struct mms__follow_pos *pos, size_t npos,
			  uint64_t stamp, uint32_t thread, mms_iter_t **out)
{
	const struct mms__segment *g;
	struct iter_src *s;
	mms_iter_t *it;
	size_t i, k;
	uint32_t t;
	int rc;

	/* The last look may find the log stops before what was fed (damage,
	 * or a file that ends inside a chunk, which a look while the program
	 * runs leaves for later): a replay of the written log leaves out
	 * events a feed gave already. A thread whose records all go then has
	 * no run to check below. */
	if (log->stop != UINT64_MAX && stamp >= log->stop)
		return log->info.damage_error ? log->info.damage_error : log->info.cut ? MMS_ETRUNCATED : MMS_ECORRUPT;
	rc = iter_open(log, next_id, NULL, &it);
	if (rc)
		return rc;
	it->nheap = 0;
	for (i = 0; i < log->nruns; i++) {
		const struct mms__follow_pos *f;

		s = &it->srcs[i];
		t = log->segs[log->runs[i]].thread;
		f = t < npos && pos[t].valid ? &pos[t] : NULL;
		if (f) {
			/* The segment that holds the saved position. */
			for (k = s->seg; k < s->seg_end; k++) {
				g = &log->segs[k];
				if (g->begin <= f->off && f->off <= g->end)
					break;
			}
			if (k == s->seg_end) {
				mms_iter_close(it);
				return MMS_EORDER;
			}
			s->seg = k;
			seg_enter(log, s);
			s->c.p = log->map + f->off;
			s->c.stamp = f->stamp;
			s->c.prev_addr = f->prev_addr;
			s->pc = s->c;
		}
		s->peeked = 0;
		if (src_peek(log, s) != 1)
			continue;
		/* Nothing may come before what was yielded already. */
		if (s->stamp < stamp || (s->stamp == stamp && t < thread)) {
			mms_iter_close(it);
			return MMS_EORDER;
		}
		it->heap[it->nheap++] = i;
	}
	for (i = it->nheap / 2; i-- > 0;)
		heap_down(it, i);
	*out = it;
	return 0;
}

int mms__iter_next_ref(mms_iter_t *it, mms_event_t **evp)
{
	struct iter_src *s;
	mms_event_t *ev;
	int rc;

	if (!it->nheap)
		return it->err;
	s = &it->srcs[it->heap[0]];
	if (it->limit != UINT64_MAX) {
		/* Following a log that grows: the events after the limit
		 * wait for the next look. */
		if (!s->peeked) {
			rc = src_peek(it->log, s);
			if (rc != 1) {
				it->err = rc;
				it->nheap = 0;
				return rc;
			}
		}
		if (s->stamp > it->limit)
			return 0;
	}
	if (!s->peeked) {
		/* Alone: the record at the cursor is most often a heap
		 * event's, for the fast path. */
		ev = src_take(s);
		if (ev)
			goto decoded;
		ev = &it->ev;
		if (mms__decode_heap(&s->c, ev))
			goto decoded;
		rc = src_peek(it->log, s);
		if (rc != 1) {
			it->err = rc;
			it->nheap = 0;
			return rc;
		}
	}
	ev = src_decode(it->log, s, &it->ev);
	if (!ev) {
		it->err = MMS_ECORRUPT;
		it->nheap = 0;
		return it->err;
	}
decoded:
	*evp = ev;
	ev->id = it->next_id++;
	ev->time_ns = mms__log_time(it->log, ev->stamp);
	s->n++;
	if (it->pf)
		src_fetch_ahead(it, s);
	s->peeked = 0;
	if (it->nheap == 1)
		return 1; /* alone: no merge needs its next stamp */
	rc = src_peek(it->log, s);
	if (rc < 0) {
		/* Yield this event; the next call reports the error. */
		it->err = rc;
		it->nheap = 0;
		return 1;
	}
	if (rc == 0)
		it->heap[0] = it->heap[--it->nheap];
	if (it->nheap > 1)
		heap_down(it, 0);
	return 1;
}

/* Events in a run from the lookahead: at most this many, so that each
 * FREE's block is still asked for halfway between the lookahead and its
 * turn. */
#define ITER_SPAN (ITER_AHEAD / 2)

int mms__iter_next_span(mms_iter_t *it, mms_event_t **v, size_t max)
{
	struct iter_src *s;
	const struct iter_src *r;
	struct mms__clock clk;
	size_t j, k, i, lim;
	uint64_t half, id, upto = UINT64_MAX;
	int rc;

	it->span_n = 0;
	if (!it->nheap || it->limit != UINT64_MAX || max < 2)
		return mms__iter_next_ref(it, v);
	s = &it->srcs[it->heap[0]];
	if (it->nheap > 1) {
		/* Other threads: the run ends before the next of their
		 * events (the lesser of the heap's second level; every
		 * source there has its next event peeked), so that the
		 * merge's order stays: a thread that waits (in a join, a
		 * lock, a sleep) no longer holds a busy one to an event at
		 * a time. Stamps up to upto come first: the same stamp
		 * only from a thread of a lower number. */
		r = &it->srcs[it->heap[1]];
		if (it->nheap > 2 && src_less(&it->srcs[it->heap[2]], r))
			r = &it->srcs[it->heap[2]];
		upto = s->c.thread < r->c.thread ? r->stamp : r->stamp - 1;
	}
	mms__log_clock(it->log, &clk);
	id = it->next_id;
	it->span_stamp = s->c.stamp;
	it->span_prev_addr = s->c.prev_addr;
	j = (s->n + 1) & (ITER_RING - 1);
	lim = ITER_RING - j; /* the run does not wrap around the ring */
	lim = lim < max ? lim : max;
	if (s->ahead) {
		/* The lookahead's heap events, one record after the other. */
		if (s->evs[j].at != s->c.p || s->evs[j].n != s->n + 1)
			return mms__iter_next_ref(it, v);
		lim = lim < s->ahead ? lim : s->ahead;
		lim = lim < ITER_SPAN ? lim : ITER_SPAN;
		for (k = 1; k < lim && s->evs[j + k].at == s->evs[j + k - 1].next && s->ev[j + k].stamp <= upto; k++)
			;
		s->ahead -= (unsigned)k;
		s->c.p = s->evs[j + k - 1].next;
		s->c.stamp = s->ev[j + k - 1].stamp;
		s->c.prev_addr = s->ev[j + k - 1].addr;
		for (i = 0; i < k; i++) {
			s->ev[j + i].id = id + i;
			s->ev[j + i].time_ns = mms__clock_time(&clk, s->ev[j + i].stamp);
		}
	} else if (!it->pf || s->pc_stop) {
		/* No lookahead: the heap records at the cursor, decoded
		 * straight into the ring, as many as the ring holds past
		 * the last run (no block is asked for halfway). */
		struct mms__cursor c = s->c; /* in registers: see src_fill() */
		mms_event_t *e = &s->ev[j];

		/* The slots' records (evs[]) are not set: src_take() finds
		 * none of these, all behind the cursor. Each event's id and
		 * time while its stamp is at hand. */
		if (upto == UINT64_MAX) {
			for (k = 0; k < lim && mms__decode_heap_to(&c, &e[k], 0); k++) {
				e[k].id = id + k;
				e[k].time_ns = mms__clock_time(&clk, e[k].stamp);
			}
		} else {
			/* Up to another thread's next event: one decoded past
			 * it goes back (the cursor as it was before it). */
			const uint8_t *p = c.p;
			uint64_t stamp = c.stamp, prev_addr = c.prev_addr;

			for (k = 0; k < lim && mms__decode_heap_to(&c, &e[k], 0); k++) {
				if (e[k].stamp > upto) {
					c.p = p;
					c.stamp = stamp;
					c.prev_addr = prev_addr;
					break;
				}
				e[k].id = id + k;
				e[k].time_ns = mms__clock_time(&clk, e[k].stamp);
				p = c.p;
				stamp = c.stamp;
				prev_addr = c.prev_addr;
			}
		}
		s->c = c;
		if (!k)
			return mms__iter_next_ref(it, v);
	} else {
		return mms__iter_next_ref(it, v);
	}
	it->next_id = id + k;
	s->n += k;
	s->peeked = 0;
	if (it->pf) {
		if (!s->ahead && !s->pc_stop)
			s->pc = s->c;
		if (!mms__state_prefetching(it->pf)) {
			s->pc_stop = 1;
			s->ahead = 0;
		} else {
			if (!s->pc_stop)
				src_fill(it, s);
			/* What src_fetch_ahead() asks for after each of the k. */
			for (half = s->n - k + 1 + ITER_AHEAD / 2; half <= s->n + ITER_AHEAD / 2; half++)
				src_free_ahead(it, s, half);
		}
	}
	it->span_src = s;
	it->span_seg = s->seg;
	it->span_slot = j;
	it->span_n = k;
	it->span_id = s->ev[j].id;
	*v = &s->ev[j];
	if (it->nheap > 1) {
		/* The thread's next event, and its place in the merge, as
		 * mms__iter_next_ref() does after each. */
		rc = src_peek(it->log, s);
		if (rc < 0) {
			/* Yield the run; the next call reports the error. */
			it->err = rc;
			it->nheap = 0;
			return (int)k;
		}
		if (rc == 0)
			it->heap[0] = it->heap[--it->nheap];
		if (it->nheap > 1)
			heap_down(it, 0);
	}
	return (int)k;
}

MMS__EXPORT int mms_iter_next(mms_iter_t *it, mms_event_t *ev)
{
	mms_event_t *e;
	int rc;

	if (!it || !ev)
		return MMS_EUSAGE;
	rc = mms__iter_next_ref(it, &e);
	if (rc == 1)
		*ev = *e;
	return rc;
}

MMS__EXPORT void mms_iter_close(mms_iter_t *it)
{
	if (!it)
		return;
	free(it->srcs);
	free(it->heap);
	free(it);
}
