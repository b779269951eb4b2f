/* SPDX-License-Identifier: MIT */
/* report.c: reports built on a replay: live blocks grouped by allocation
 * stack or by owner, and what one step did (peak, launches and their
 * memory, what it allocated and kept). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "replay-int.h"

/* --- grouping live blocks by stack ------------------------------------------ */

struct group_ctx {
	uint64_t step_lo, step_hi;
	struct mms__map ix;       /* stack id -> index in groups */
	mms_stack_group_t *groups;
	size_t n, cap;
	int err;
};

static int group_add(const mms_block_t *b, void *ctx)
{
	struct group_ctx *g = ctx;
	mms_stack_group_t *s;
	uint64_t *v;
	int isnew;

	if (b->step < g->step_lo || b->step > g->step_hi)
		return 0;
	v = mms__map_put(&g->ix, b->stack, &isnew);
	if (!v || (isnew && mms__grow(&g->groups, &g->cap, g->n, sizeof(*g->groups)))) {
		g->err = -ENOMEM;
		return 1;
	}
	if (isnew) {
		*v = g->n;
		s = &g->groups[g->n++];
		memset(s, 0, sizeof(*s));
		s->stack = b->stack;
	}
	s = &g->groups[*v];
	s->blocks++;
	s->bytes += b->size;
	if (s->blocks == 1 || b->size > s->size) {
		s->addr = b->addr;
		s->size = b->size;
		s->step = b->step;
		s->op = b->op;
	}
	return 0;
}

static int group_cmp(const void *a, const void *b)
{
	const mms_stack_group_t *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->blocks != y->blocks)
		return x->blocks > y->blocks ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

MMS__EXPORT int mms_replay_group_live(const mms_replay_t *r, uint64_t step_lo, uint64_t step_hi,
				      mms_stack_group_t **out, size_t *n)
{
	struct group_ctx g = { .step_lo = step_lo, .step_hi = step_hi };
	int rc;

	if (!r || !out || !n)
		return MMS_EUSAGE;
	mms__map_init(&g.ix);
	rc = mms_replay_blocks(r, group_add, &g);
	mms__map_free(&g.ix);
	if (g.err || rc < 0) {
		free(g.groups);
		return g.err ? g.err : rc;
	}
	if (g.n)
		qsort(g.groups, g.n, sizeof(*g.groups), group_cmp);
	*out = g.groups;
	*n = g.n;
	return 0;
}

/* --- grouping by owner ---------------------------------------------------------- */

struct owner_ctx {
	mms_owner_group_t *groups;
	size_t n, cap;
	int err;
};

static int owner_add(const mms_block_t *b, void *ctx)
{
	struct owner_ctx *o = ctx;
	size_t i;

	/* Owner strings are interned: distinct pointers, few of them. */
	for (i = 0; i < o->n && o->groups[i].owner != b->owner; i++)
		;
	if (i == o->n) {
		if (mms__grow(&o->groups, &o->cap, o->n, sizeof(*o->groups))) {
			o->err = -ENOMEM;
			return 1;
		}
		o->groups[o->n].owner = b->owner;
		o->groups[o->n].blocks = 0;
		o->groups[o->n].bytes = 0;
		o->n++;
	}
	o->groups[i].blocks++;
	o->groups[i].bytes += b->size;
	return 0;
}

static int owner_cmp(const void *a, const void *b)
{
	const mms_owner_group_t *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (!x->owner || !y->owner)
		return !x->owner - !y->owner;
	return strcmp(x->owner, y->owner);
}

/* --- one step ---------------------------------------------------------------------- */

/* Launches open on each thread while the step replays. */
struct open_launches {
	size_t *ix;               /* indices into the report's launches, innermost last */
	size_t n, cap;
};

struct step_ctx {
	mms_step_report_t *rep;
	size_t launches_cap;
	struct open_launches *threads;
	size_t nthreads;
};

static struct open_launches *open_of(struct step_ctx *c, uint32_t thread)
{
	struct open_launches *t;
	size_t n;

	if (thread >= c->nthreads) {
		n = c->nthreads ? c->nthreads : 4;
		while (n <= thread)
			n *= 2;
		t = realloc(c->threads, n * sizeof(*t));
		if (!t)
			return NULL;
		memset(t + c->nthreads, 0, (n - c->nthreads) * sizeof(*t));
		c->threads = t;
		c->nthreads = n;
	}
	return &c->threads[thread];
}

static int step_event(struct step_ctx *c, mms_replay_t *r, const mms_event_t *ev)
{
	mms_step_report_t *rep = c->rep;
	struct open_launches *t = open_of(c, ev->thread);
	mms_launch_t *l;
	mms_block_t b;
	mms_where_t w;
	size_t i;

	if (!t)
		return -ENOMEM;
	if (ev->kind == MMS_EV_OP_LAUNCH && ev->sub == 0) {
		if (mms__grow(&rep->launches, &c->launches_cap, rep->nlaunches, sizeof(*rep->launches)) ||
		    mms__grow(&t->ix, &t->cap, t->n, sizeof(*t->ix)))
			return -ENOMEM;
		mms_replay_where(r, &w);
		l = &rep->launches[rep->nlaunches];
		memset(l, 0, sizeof(*l));
		l->launch = w.op_launch;
		l->name = ev->name;
		l->thread = ev->thread;
		l->begin_event = ev->id;
		l->end_event = UINT64_MAX;
		t->ix[t->n++] = rep->nlaunches++;
		return 0;
	}
	if (ev->kind == MMS_EV_OP_LAUNCH) {
		if (t->n)
			rep->launches[t->ix[--t->n]].end_event = ev->id;
		return 0;
	}
	if ((ev->kind != MMS_EV_MALLOC && ev->kind != MMS_EV_FREE) || !mms_replay_event_block(r, &b))
		return 0;
	if (ev->kind == MMS_EV_MALLOC) {
		rep->allocs++;
		rep->bytes_allocated += b.size;
	} else {
		rep->frees++;
		rep->bytes_freed += b.size;
	}
	mms_replay_where(r, &w);
	if (w.live_bytes > rep->peak_bytes) {
		rep->peak_bytes = w.live_bytes;
		rep->peak_event = ev->id;
	}
	for (i = 0; i < t->n; i++) {
		l = &rep->launches[t->ix[i]];
		if (ev->kind == MMS_EV_MALLOC) {
			l->allocs++;
			l->bytes_allocated += b.size;
		} else {
			l->frees++;
			l->bytes_freed += b.size;
		}
		l->delta_bytes = (int64_t)(l->bytes_allocated - l->bytes_freed);
	}
	return 0;
}

MMS__EXPORT void mms_step_report_free(mms_step_report_t *rep)
{
	if (!rep)
		return;
	free(rep->kept);
	free(rep->launches);
	free(rep->owners);
	free(rep);
}

MMS__EXPORT int mms_replay_step_report(mms_replay_t *r, uint64_t step, mms_step_report_t **out)
{
	struct step_ctx c = { 0 };
	struct owner_ctx o = { 0 };
	mms_step_report_t *rep;
	mms_event_t ev;
	mms_where_t w;
	size_t i;
	int rc;

	if (!r || !out)
		return MMS_EUSAGE;
	*out = NULL;
	rep = calloc(1, sizeof(*rep));
	if (!rep)
		return -ENOMEM;
	c.rep = rep;
	rep->step = step;
	rc = mms_replay_step_range(r, step, &rep->begin, &rep->end);
	if (!rc)
		rc = mms_replay_seek(r, rep->begin);
	if (rc)
		goto fail;
	mms_replay_where(r, &w);
	rep->peak_bytes = w.live_bytes;
	rep->peak_event = rep->begin ? rep->begin - 1 : 0;
	rep->delta_bytes = -(int64_t)w.live_bytes;
	while (w.position < rep->end) {
		rc = mms_replay_next(r, &ev);
		if (rc <= 0) {
			rc = rc ? rc : MMS_ECORRUPT;
			goto fail;
		}
		rc = step_event(&c, r, &ev);
		if (rc)
			goto fail;
		w.position = ev.id + 1;
	}
	mms_replay_where(r, &rep->at_end);
	rep->delta_bytes += (int64_t)rep->at_end.live_bytes;
	rc = mms_replay_group_live(r, step, step, &rep->kept, &rep->nkept);
	if (rc)
		goto fail;
	for (i = 0; i < rep->nkept; i++) {
		rep->kept_blocks += rep->kept[i].blocks;
		rep->kept_bytes += rep->kept[i].bytes;
	}
	rc = mms_replay_blocks(r, owner_add, &o);
	if (o.err || rc < 0) {
		rc = o.err ? o.err : rc;
		free(o.groups);
		goto fail;
	}
	if (o.n)
		qsort(o.groups, o.n, sizeof(*o.groups), owner_cmp);
	rep->owners = o.groups;
	rep->nowners = o.n;
	for (i = 0; i < c.nthreads; i++)
		free(c.threads[i].ix);
	free(c.threads);
	*out = rep;
	return 0;
fail:
	for (i = 0; i < c.nthreads; i++)
		free(c.threads[i].ix);
	free(c.threads);
	mms_step_report_free(rep);
	return rc;
}
