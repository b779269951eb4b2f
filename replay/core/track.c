/* SPDX-License-Identifier: MIT */
/* track.c: follows a replay event by event and keeps what the index, the
 * step reports and the exports count over it: the operator launches
 * running on each thread with the memory each moved, and the steps as
 * they begin and end, with theirs. One definition of both for all three. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope/log.h"
#include "base-int.h"
#include "state-int.h"
#include "table-int.h"
#include "track-int.h"

void mms__counts_add(struct mms__counts *c, int alloc, uint64_t size)
{
	if (alloc) {
		c->allocs++;
		c->bytes_allocated += size;
	} else {
		c->frees++;
		c->bytes_freed += size;
	}
}

void mms__track_init(struct mms__track *t, unsigned what)
{
	memset(t, 0, sizeof(*t));
	t->what = what;
}

void mms__track_free(struct mms__track *t)
{
	size_t i;

	for (i = 0; i < t->nthreads; i++)
		free(t->threads[i].ops);
	free(t->threads);
	free(t->steps);
	memset(t, 0, sizeof(*t));
}

static uint64_t live_bytes(const struct mms__state *st)
{
	return mms__state_live_total(st);
}

/* --- steps ------------------------------------------------------------------ */

static struct mms__tstep *step_add(struct mms__track *t, const struct mms__state *st, uint64_t begin, uint64_t live)
{
	struct mms__tstep *s;

	if (mms__grow(&t->steps, &t->steps_cap, t->nsteps, sizeof(*t->steps)))
		return NULL;
	s = &t->steps[t->nsteps++];
	memset(s, 0, sizeof(*s));
	s->begin = begin;
	s->end = UINT64_MAX;
	s->live_begin = s->m.peak_bytes = live;
	s->m.peak_event = begin ? begin - 1 : 0;
	s->collect = mms__collect_seen(0, st, NULL);
	return s;
}

static void step_end(struct mms__track *t, uint64_t end, uint64_t live)
{
	t->steps[t->nsteps - 1].end = end;
	t->steps[t->nsteps - 1].live_end = live;
}

/* The step the current event counts for: the open one, the first (not
 * known yet) before any mark, or none. */
static struct mms__tstep *step_current(struct mms__track *t, uint64_t *num)
{
	if (t->nsteps && t->steps[t->nsteps - 1].end == UINT64_MAX) {
		*num = t->nsteps;
		return &t->steps[t->nsteps - 1];
	}
	if (!t->step_kind) {
		*num = MMS__STEP_PENDING;
		return &t->pending;
	}
	*num = MMS__STEP_NONE;
	return NULL;
}

/* The boundaries the event just applied opened, from the state's step
 * counters before and after it (state.c decides what a step mark is):
 * a "step start" range opens a step before its event counts. */
static int steps_open(struct mms__track *t, const struct mms__state *st, const mms_event_t *ev)
{
	if (st->step_kind == 2 && st->ranges_seen != t->ranges_seen) {
		if (!t->step_kind) {
			t->step_kind = 2;
			memset(&t->pending, 0, sizeof(t->pending));
		}
		if (t->nsteps && t->steps[t->nsteps - 1].end == UINT64_MAX)
			step_end(t, ev->id, t->live_before);
		return step_add(t, st, ev->id, t->live_before) ? 0 : -ENOMEM;
	}
	if (st->step_kind == 1 && st->steps_seen != t->steps_seen && !t->step_kind) {
		/* Step 1 began with the log: it takes what was pending. */
		t->step_kind = 1;
		if (!step_add(t, st, 0, 0))
			return -ENOMEM;
		t->steps[0] = t->pending;
		t->steps[0].begin = 0;
		t->steps[0].end = UINT64_MAX;
	}
	return 0;
}

/* ... and the ones it closed, after it counted: a STEP event ends its
 * step (the next begins), a range end ends the range's step. */
static int steps_close(struct mms__track *t, const struct mms__state *st, const mms_event_t *ev)
{
	uint64_t live = live_bytes(st);

	if (t->step_kind == 1 && st->steps_seen != t->steps_seen) {
		step_end(t, ev->id + 1, live);
		return step_add(t, st, ev->id + 1, live) ? 0 : -ENOMEM;
	}
	if (t->step_kind == 2 && t->in_range && !st->in_range && t->nsteps)
		step_end(t, ev->id + 1, live);
	return 0;
}

uint64_t mms__track_step_of(const struct mms__track *t, uint64_t id)
{
	size_t a = 0, b = t->nsteps, m;

	if (!t->step_kind)
		return MMS__STEP_PENDING;
	/* The last step beginning at or before id. */
	while (a < b) {
		m = a + (b - a) / 2;
		if (t->steps[m].begin <= id)
			a = m + 1;
		else
			b = m;
	}
	if (!a || id >= t->steps[a - 1].end)
		return MMS__STEP_NONE;
	return a;
}

void mms__track_finish(struct mms__track *t, const struct mms__state *st)
{
	/* The step begun last counts if anything happened in it (STEP
	 * events), or always (an unfinished range). */
	if (!t->nsteps || t->steps[t->nsteps - 1].end != UINT64_MAX)
		return;
	if (t->step_kind == 1 && !st->after_step)
		t->nsteps--;
	else
		step_end(t, st->pos, live_bytes(st));
}

/* --- launches ------------------------------------------------------------------ */

static struct mms__tthread *thread_of(struct mms__track *t, uint32_t thread)
{
	if (mms__table_fit(&t->threads, &t->nthreads, thread, sizeof(*t->threads)))
		return NULL;
	return &t->threads[thread];
}

const struct mms__tlaunch *mms__track_running(const struct mms__track *t, uint32_t thread)
{
	if (thread >= t->nthreads || !t->threads[thread].n)
		return NULL;
	return &t->threads[thread].ops[t->threads[thread].n - 1];
}

static int launch_event(struct mms__track *t, const struct mms__state *st, const mms_event_t *ev,
			struct mms__tstep *s)
{
	struct mms__tthread *th;
	struct mms__tlaunch *l;
	size_t i;

	/* Most events: memory, on a thread with no launch open (a thread
	 * not yet in the table has none). */
	if (ev->kind == MMS_EV_MALLOC || ev->kind == MMS_EV_FREE) {
		if (!st->last_blk_valid || ev->thread >= t->nthreads)
			return 0;
		th = &t->threads[ev->thread];
		for (i = 0; i < th->n; i++)
			mms__counts_add(&th->ops[i].m, ev->kind == MMS_EV_MALLOC, st->last_blk->size);
		return 0;
	}
	th = thread_of(t, ev->thread);
	if (!th)
		return -ENOMEM;
	if (ev->kind == MMS_EV_OP_LAUNCH && ev->sub == 0) {
		if (mms__grow(&th->ops, &th->cap, th->n, sizeof(*th->ops)))
			return -ENOMEM;
		l = &th->ops[th->n++];
		memset(l, 0, sizeof(*l));
		/* The state numbers launches over the whole log, also when
		 * tracking began in the middle of it. */
		l->launch = st->op_launches;
		l->name = ev->name;
		l->thread = ev->thread;
		l->begin_event = ev->id;
		l->end_event = UINT64_MAX;
		l->step = t->ev_step;
		if (s)
			s->launches++;
	} else if (ev->kind == MMS_EV_OP_LAUNCH && th->n) {
		/* An end with no begin seen (recording, or tracking, began
		 * inside the operator) ends nothing, as in the state. */
		t->ended = th->ops[--th->n];
		t->ended.end_event = ev->id;
		t->has_ended = 1;
	}
	return 0;
}

int mms__track_event_any(struct mms__track *t, const struct mms__state *st, const mms_event_t *ev)
{
	struct mms__tstep *s = NULL;
	int rc = 0, memory;

	t->has_ended = 0;
	memory = (ev->kind == MMS_EV_MALLOC || ev->kind == MMS_EV_FREE) && st->last_blk_valid;
	if ((t->what & MMS__TRACK_STEPS) && t->no_marks) {
		/* No step ever begins: what is counted before the first
		 * would never be used. */
		t->ev_step = MMS__STEP_PENDING;
	} else if (t->what & MMS__TRACK_STEPS) {
		rc = steps_open(t, st, ev);
		if (rc)
			return rc;
		s = step_current(t, &t->ev_step);
		if (s) {
			s->events++;
			s->collect = mms__collect_seen(s->collect, st, ev);
			if (memory) {
				mms__counts_add(&s->m, ev->kind == MMS_EV_MALLOC, st->last_blk->size);
				if (live_bytes(st) > s->m.peak_bytes) {
					s->m.peak_bytes = live_bytes(st);
					s->m.peak_event = ev->id;
				}
			}
		}
	}
	if (t->what & MMS__TRACK_LAUNCHES)
		rc = launch_event(t, st, ev, s);
	if (!rc && (t->what & MMS__TRACK_STEPS) && !t->no_marks)
		rc = steps_close(t, st, ev);
	t->steps_seen = st->steps_seen;
	t->ranges_seen = st->ranges_seen;
	t->in_range = st->in_range;
	t->live_before = live_bytes(st);
	return rc;
}

/* A fork child's steps from its log's start: the parent's before the
 * fork, in no log of the child's, then the step the fork came in (with
 * "step start" ranges, where it came inside one), open from the start,
 * its part before the fork the parent's. */
static int steps_inherited(struct mms__track *t, const struct mms__state *st)
{
	int open;
	uint64_t before = mms__inherit_fork_step(&st->log->inh, &open) - (uint64_t)open;
	struct mms__tstep *s;

	t->step_kind = st->step_kind;
	for (uint64_t i = 0; i < before + (uint64_t)open; i++) {
		s = step_add(t, st, 0, i < before ? 0 : live_bytes(st));
		if (!s)
			return -ENOMEM;
		s->collect = MMS__SEEN_FORK;
		if (i < before)
			s->end = 0;
	}
	return 0;
}

int mms__track_start(struct mms__track *t, const struct mms__state *st)
{
	t->steps_seen = st->steps_seen;
	t->ranges_seen = st->ranges_seen;
	t->in_range = st->in_range;
	t->live_before = live_bytes(st);
	if (!st->pos && st->step_kind && (t->what & MMS__TRACK_STEPS) && !t->no_marks && !t->nsteps)
		return steps_inherited(t, st);
	return 0;
}
