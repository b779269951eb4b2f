/* SPDX-License-Identifier: MIT */
/* report.c: reports built on a replay: live blocks grouped by allocation
 * stack or by owner, and what one step did (peak, launches and their
 * memory, what it allocated and kept). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "analysis-int.h"
#include "base-int.h"
#include "map-int.h"
#include "pass-int.h"
#include "state-int.h"
#include "track-int.h"

/* --- grouping blocks by stack ---------------------------------------------------- */

void mms__groups_init(struct mms__groups *g)
{
	memset(g, 0, sizeof(*g));
	mms__map_init(&g->ix);
}

void mms__groups_free(struct mms__groups *g)
{
	mms__map_free(&g->ix);
	free(g->groups);
	memset(g, 0, sizeof(*g));
}

int mms__groups_add(struct mms__groups *g, const mms_block_t *b)
{
	mms_stack_group_t *s;
	uint64_t *v;
	int isnew;

	uint32_t dev = b->mem == MMS_MEM_DEVICE ? 1 + (b->device & 0xff) : 0;

	/* Keyed by stack and runtime: what a runtime keeps stays apart; so
	 * does each memory kind (the scan at exit judges heap blocks only),
	 * CUDA memory per device, and each verdict of the scan. */
	v = mms__map_put(&g->ix,
			 (uint64_t)(b->mem & 0xff) << 56 | (uint64_t)(b->reach & 0xff) << 48 | (uint64_t)dev << 40 |
				 (uint64_t)(b->runtime & 0xff) << 32 | b->stack,
			 &isnew);
	if (!v || (isnew && mms__grow(&g->groups, &g->cap, g->n, sizeof(*g->groups))))
		return -ENOMEM;
	if (isnew) {
		*v = g->n;
		s = &g->groups[g->n++];
		memset(s, 0, sizeof(*s));
		s->stack = b->stack;
		s->runtime = b->runtime;
		s->mem = b->mem;
		s->device = dev ? b->device : 0;
		s->reach = b->reach;
	}
	s = &g->groups[*v];
	s->blocks++;
	s->bytes += b->size;
	s->indirect_blocks += b->indirect_blocks;
	s->indirect_bytes += b->indirect_bytes;
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
	uint64_t xb = x->bytes + x->indirect_bytes, yb = y->bytes + y->indirect_bytes;

	/* A leaked group with what was lost with it first: the blocks to
	 * free, before those that go with them. */
	if (xb != yb)
		return xb > yb ? -1 : 1;
	if (x->blocks != y->blocks)
		return x->blocks > y->blocks ? -1 : 1;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	if (x->mem != y->mem || x->device != y->device)
		return x->mem != y->mem ? (x->mem < y->mem ? -1 : 1) : (x->device < y->device ? -1 : 1);
	if (x->runtime != y->runtime)
		return x->runtime < y->runtime ? -1 : 1;
	return x->reach < y->reach ? -1 : x->reach > y->reach;
}

void mms__groups_finish(struct mms__groups *g, mms_stack_group_t **out, size_t *n)
{
	if (g->n)
		qsort(g->groups, g->n, sizeof(*g->groups), group_cmp);
	*out = g->groups;
	*n = g->n;
	g->groups = NULL;
	mms__groups_free(g);
}

struct group_ctx {
	uint64_t step_lo, step_hi;
	struct mms__groups g;
	int err;
};

static int group_add(const mms_block_t *b, void *ctx)
{
	struct group_ctx *c = ctx;

	if (b->step < c->step_lo || b->step > c->step_hi)
		return 0;
	c->err = mms__groups_add(&c->g, b);
	return c->err != 0;
}

MMS__EXPORT int mms_replay_group_live(const mms_replay_t *r, uint64_t step_lo, uint64_t step_hi,
				      mms_stack_group_t **out, size_t *n)
{
	struct group_ctx c = { .step_lo = step_lo, .step_hi = step_hi };
	int rc;

	if (!r || !out || !n)
		return MMS_EUSAGE;
	mms__groups_init(&c.g);
	rc = mms_replay_blocks(r, group_add, &c);
	if (c.err || rc < 0) {
		mms__groups_free(&c.g);
		return c.err ? c.err : rc;
	}
	mms__groups_finish(&c.g, out, n);
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

/* A tracked launch as the report gives it. */
static void launch_out(mms_launch_t *l, const struct mms__tlaunch *t)
{
	l->launch = t->launch;
	l->name = t->name;
	l->thread = t->thread;
	l->begin_event = t->begin_event;
	l->end_event = t->end_event;
	l->allocs = t->m.allocs;
	l->frees = t->m.frees;
	l->bytes_allocated = t->m.bytes_allocated;
	l->bytes_freed = t->m.bytes_freed;
	l->delta_bytes = (int64_t)(t->m.bytes_allocated - t->m.bytes_freed);
}

static int launch_add(mms_step_report_t *rep, size_t *cap, const struct mms__tlaunch *t)
{
	if (mms__grow(&rep->launches, cap, rep->nlaunches, sizeof(*rep->launches)))
		return -ENOMEM;
	launch_out(&rep->launches[rep->nlaunches++], t);
	return 0;
}

static int launch_cmp(const void *a, const void *b)
{
	const mms_launch_t *x = a, *y = b;

	return x->launch < y->launch ? -1 : x->launch > y->launch;
}

/* The step's replay as a subscriber of a pass over the replay: its
 * memory, its peak, and the launches that began in it (those still
 * running at its end too). */
struct step_sub {
	struct mms__sub sub;
	mms_step_report_t *rep;
	size_t cap;
	struct mms__counts m;
	unsigned collect; /* MMS__SEEN_* */
};

static uint64_t live_bytes(const struct mms__state *st)
{
	uint64_t n = 0;

	for (int k = 0; k < MMS_MEM_KIND_COUNT; k++)
		n += st->mem[k].live_bytes;
	return n;
}

static int step_event(struct mms__sub *sub, struct mms_pass *p, const mms_event_t *ev)
{
	struct step_sub *s = (struct step_sub *)sub;
	const struct mms__state *st = mms__pass_state(p);
	const struct mms__track *tr = mms__pass_track(p);
	int rc;

	if (tr->has_ended && tr->ended.begin_event >= s->rep->begin &&
	    (rc = launch_add(s->rep, &s->cap, &tr->ended)))
		return rc;
	s->collect = mms__collect_seen(s->collect, st, ev);
	if ((ev->kind == MMS_EV_MALLOC || ev->kind == MMS_EV_FREE) && st->last_blk_valid) {
		mms__counts_add(&s->m, ev->kind == MMS_EV_MALLOC, st->last_blk->size);
		if (live_bytes(st) > s->m.peak_bytes) {
			s->m.peak_bytes = live_bytes(st);
			s->m.peak_event = ev->id;
		}
	}
	return 0;
}

static int step_end(struct mms__sub *sub, struct mms_pass *p)
{
	struct step_sub *s = (struct step_sub *)sub;
	const struct mms__track *tr = mms__pass_track(p);
	mms_step_report_t *rep = s->rep;
	size_t i, j;
	int rc = 0;

	for (i = 0; !rc && i < tr->nthreads; i++)
		for (j = 0; !rc && j < tr->threads[i].n; j++)
			rc = launch_add(rep, &s->cap, &tr->threads[i].ops[j]);
	if (rc)
		return rc;
	if (rep->nlaunches)
		qsort(rep->launches, rep->nlaunches, sizeof(*rep->launches), launch_cmp);
	rep->allocs = s->m.allocs;
	rep->frees = s->m.frees;
	rep->bytes_allocated = s->m.bytes_allocated;
	rep->bytes_freed = s->m.bytes_freed;
	rep->peak_bytes = s->m.peak_bytes;
	rep->peak_event = s->m.peak_event;
	rep->recorded = mms__collect_recorded(s->collect);
	return 0;
}

static void step_drop(struct mms__sub *sub)
{
	free(sub);
}

/* Replays the step from its beginning (where r stands) to its end. */
static int step_replay(mms_replay_t *r, mms_step_report_t *rep)
{
	struct step_sub *s;
	struct mms_pass *p;
	mms_where_t w;
	int rc, status = 0;

	rc = mms__pass_open_replay(r, rep->end, &p);
	if (rc)
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s) {
		mms_pass_close(p);
		return -ENOMEM;
	}
	mms_replay_where(r, &w);
	s->rep = rep;
	s->collect = mms__collect_seen(0, mms__pass_state(p), NULL) |
		     (mms__inherit_step_begun(p->log, rep->step) ? MMS__SEEN_FORK : 0);
	s->m.peak_bytes = w.live_bytes;
	s->m.peak_event = rep->begin ? rep->begin - 1 : 0;
	rep->delta_bytes = -(int64_t)w.live_bytes;
	s->sub.name = "step report";
	s->sub.kinds = ~0u;
	s->sub.track = MMS__TRACK_LAUNCHES;
	s->sub.event = step_event;
	s->sub.end = step_end;
	s->sub.drop = step_drop;
	s->sub.status = &status;
	rc = mms__pass_add(p, &s->sub);
	if (!rc)
		rc = mms_pass_run(p);
	mms_pass_close(p);
	return rc ? rc : status;
}

MMS__EXPORT const char *mms_step_recorded_name(mms_step_recorded_t r)
{
	static const char *const names[] = { "all", "part", "none" };

	return (unsigned)r < sizeof(names) / sizeof(names[0]) ? names[r] : NULL;
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
	struct owner_ctx o = { 0 };
	mms_step_report_t *rep;
	size_t i;
	int rc;

	if (!r || !out)
		return MMS_EUSAGE;
	*out = NULL;
	rep = calloc(1, sizeof(*rep));
	if (!rep)
		return -ENOMEM;
	rep->step = step;
	rc = mms_replay_step_range(r, step, &rep->begin, &rep->end);
	if (!rc)
		rc = mms_replay_seek(r, rep->begin);
	if (!rc)
		rc = step_replay(r, rep);
	if (rc)
		goto fail;
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
	*out = rep;
	return 0;
fail:
	mms_step_report_free(rep);
	return rc;
}
