/* SPDX-License-Identifier: MIT */
/* iter.c: yields a log's events in replay order: a k-way merge, by stamp,
 * of one cursor per thread, ties broken by thread and file offset. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "replay-int.h"

/* One thread's run of segments and its next event. */
struct iter_src {
	struct mms__cursor c;
	size_t seg, seg_end;  /* current segment, end of the thread's run */
	mms_event_t ev;       /* pending event, valid while in the heap */
	/* The cursor's delta state before the pending event's record, so
	 * a checkpoint can resume here (mms__iter_save()). */
	uint64_t pre_stamp, pre_addr;
};

struct mms_iter {
	mms_log_t *log;
	struct iter_src *srcs;
	size_t *heap;         /* indices into srcs, a binary min-heap */
	size_t nheap;
	uint64_t next_id;
	int err;              /* the error that stopped the iteration, or 0 */
};

static void seg_enter(mms_log_t *log, struct iter_src *s)
{
	const struct mms__segment *g = &log->segs[s->seg];

	s->c.p = log->map + g->begin;
	s->c.end = log->map + g->end;
	s->c.stamp = g->first;
	s->c.prev_addr = 0;
	s->c.thread = g->thread;
}

/* Turns an event record into the public event (id and time set later). */
static void rec_to_event(const mms_log_t *log, const struct mms__rec *r, uint32_t thread, mms_event_t *ev)
{
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
		ev->flags = r->type == MMS_TAG_ALLOC_RT ? r->u[2] : 0;
		break;
	case MMS_TAG_FREE:
		ev->kind = MMS_EV_FREE;
		ev->addr = r->addr;
		break;
	case MMS_TAG_MMAP:
		ev->kind = MMS_EV_MALLOC;
		ev->mem = MMS_MEM_MMAP;
		ev->addr = r->addr;
		ev->size = r->u[0];
		ev->flags = r->u[1];
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
		ev->kind = MMS_EV_KERNEL_LAUNCH;
		ev->name = mms__log_string(log, r->u[0]);
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
		break;
	case MMS_TAG_OWNER_PUSH:
	case MMS_TAG_OWNER_POP:
		ev->kind = MMS_EV_OWNER;
		ev->sub = r->type == MMS_TAG_OWNER_POP;
		if (r->type == MMS_TAG_OWNER_PUSH)
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
		ev->sub = r->u[0] != 0;
		break;
	default: /* MMS_TAG_SYSTEM */
		ev->kind = MMS_EV_SYSTEM;
		if (r->sub == MMS_SYSTEM_FORK)
			ev->total = r->u[0];
		break;
	}
}

/* Decodes s's next event, moving through its thread's segments. Returns 1,
 * 0 when the thread has no more events, or MMS_ECORRUPT. */
static int src_advance(mms_log_t *log, struct iter_src *s)
{
	struct mms__rec r;
	const char *why;
	int rc;

	for (;;) {
		s->pre_stamp = s->c.stamp;
		s->pre_addr = s->c.prev_addr;
		rc = mms__decode(&s->c, &r, &why);
		if (rc == 1) {
			if (!mms__is_event(r.type))
				continue;
			rec_to_event(log, &r, s->c.thread, &s->ev);
			return 1;
		}
		if (rc < 0)
			return MMS_ECORRUPT; /* the open pass stopped segments before damage */
		if (++s->seg >= s->seg_end)
			return 0;
		seg_enter(log, s);
	}
}

static inline int ev_less(const mms_event_t *a, const mms_event_t *b)
{
	if (a->stamp != b->stamp)
		return a->stamp < b->stamp;
	if (a->thread != b->thread)
		return a->thread < b->thread;
	return a->file_offset < b->file_offset;
}

static void heap_down(mms_iter_t *it, size_t i)
{
	size_t n = it->nheap, v = it->heap[i], l, m;

	for (;;) {
		l = 2 * i + 1;
		if (l >= n)
			break;
		m = l;
		if (l + 1 < n && ev_less(&it->srcs[it->heap[l + 1]].ev, &it->srcs[it->heap[l]].ev))
			m = l + 1;
		if (!ev_less(&it->srcs[it->heap[m]].ev, &it->srcs[v].ev))
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
	int rc;

	if (!log || !out)
		return MMS_EUSAGE;
	*out = NULL;
	it = calloc(1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->log = log;
	it->next_id = next_id;
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
		} else {
			seg_enter(log, s);
		}
		rc = src_advance(log, s);
		if (rc == 1)
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

void mms__iter_save(const mms_iter_t *it, uint64_t *next_id, struct mms__src_pos *pos)
{
	const struct iter_src *s;
	size_t i;

	*next_id = it->next_id;
	for (i = 0; i < it->log->nruns; i++)
		pos[i].seg = UINT64_MAX;
	/* Only threads with a pending event have somewhere to resume; the
	 * others are done. */
	for (i = 0; i < it->nheap; i++) {
		s = &it->srcs[it->heap[i]];
		pos[it->heap[i]].seg = s->seg;
		pos[it->heap[i]].off = s->ev.file_offset;
		pos[it->heap[i]].stamp = s->pre_stamp;
		pos[it->heap[i]].prev_addr = s->pre_addr;
	}
}

MMS__EXPORT int mms_iter_next(mms_iter_t *it, mms_event_t *ev)
{
	struct iter_src *s;
	int rc;

	if (!it || !ev)
		return MMS_EUSAGE;
	if (!it->nheap)
		return it->err;
	s = &it->srcs[it->heap[0]];
	*ev = s->ev;
	ev->id = it->next_id++;
	ev->time_ns = mms__log_time(it->log, ev->stamp);
	rc = src_advance(it->log, s);
	if (rc < 0) {
		/* Yield this event; the next call reports the error. */
		it->err = rc;
		it->nheap = 0;
		return 1;
	}
	if (rc == 0)
		it->heap[0] = it->heap[--it->nheap];
	if (it->nheap)
		heap_down(it, 0);
	return 1;
}

MMS__EXPORT void mms_iter_close(mms_iter_t *it)
{
	if (!it)
		return;
	free(it->srcs);
	free(it->heap);
	free(it);
}
