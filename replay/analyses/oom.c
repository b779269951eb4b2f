/* SPDX-License-Identifier: MIT */
/* oom.c: msMemScope's OOM analysis over one forward pass of a log: at each
 * allocation the allocator refused (ALLOC_FAIL, format 7; the CUDA
 * driver's refusals, format 8), the request, where it was made (thread,
 * step, operator) and what was live then of the memory it asked for: the
 * k most recently allocated blocks and the k largest. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope/analysis.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "base-int.h"
#include "pass-int.h"
#include "state-int.h"
#include "track-int.h"

#define OOM_K_DEFAULT 10
#define OOM_FAILURES_DEFAULT 16

struct oom_sub {
	struct mms__sub sub;
	struct mms_pass *pass;
	mms_oom_t *o;
	size_t k, max, cap;
	/* The failure being filled: the live blocks by allocation order
	 * and by size, each kept to the k best. */
	mms_oom_failure_t *f;
};

/* Newest first. */
static int newer(const mms_block_t *x, const mms_block_t *y)
{
	return x->alloc_id > y->alloc_id || (x->alloc_id == y->alloc_id && x->addr < y->addr);
}

/* Largest first, then the older. */
static int larger(const mms_block_t *x, const mms_block_t *y)
{
	if (x->size != y->size)
		return x->size > y->size;
	return x->alloc_id < y->alloc_id || (x->alloc_id == y->alloc_id && x->addr < y->addr);
}

static int newer_cmp(const void *a, const void *b)
{
	return newer(a, b) ? -1 : newer(b, a);
}

static int larger_cmp(const void *a, const void *b)
{
	return larger(a, b) ? -1 : larger(b, a);
}

/* Keeps the k best blocks by better() in v (n of them): a heap whose root
 * is the worst kept, so a block that does not make the list costs one
 * comparison and one that does log k, whatever k (up to 100000) and the
 * live blocks. Sorted once at the end (qsort with the same order). */
static void keep_best(mms_block_t *v, size_t *n, size_t k, const mms_block_t *b,
		      int (*better)(const mms_block_t *, const mms_block_t *))
{
	mms_block_t x = *b;
	size_t i, c;

	if (*n < k) {
		/* Up: a parent is no better than its children. */
		for (i = (*n)++; i > 0 && better(&v[(i - 1) / 2], &x); i = (i - 1) / 2)
			v[i] = v[(i - 1) / 2];
		v[i] = x;
		return;
	}
	if (!better(&x, &v[0]))
		return;
	/* Down from the root, which x replaces. */
	for (i = 0; (c = 2 * i + 1) < k; i = c) {
		if (c + 1 < k && better(&v[c], &v[c + 1]))
			c++;
		if (!better(&x, &v[c]))
			break;
		v[i] = v[c];
	}
	v[i] = x;
}

static int live_add(const struct mms__blk *blk, void *ctx)
{
	struct oom_sub *s = ctx;
	const struct mms__state *st = mms__pass_state(s->pass);
	mms_oom_failure_t *f = s->f;
	mms_block_t b;

	/* The resource refused: a malloc the host's (not CUDA memory); the
	 * driver's device memory on that device, or its pinned host memory. */
	if (f->mem == MMS_MEM_DEVICE) {
		if (blk->mem != MMS_MEM_DEVICE || (blk->fn == MMS_DEVICE_PINNED) != (f->fn == MMS_DEVICE_PINNED))
			return 0;
	} else if (blk->mem == MMS_MEM_DEVICE) {
		return 0;
	}
	mms__state_blk_export(st, blk, &b);
	if (f->mem == MMS_MEM_DEVICE && f->fn != MMS_DEVICE_PINNED && b.device != f->device)
		return 0;
	f->live_blocks++;
	f->live_bytes += b.size;
	keep_best(f->recent, &f->nrecent, s->k, &b, newer);
	keep_best(f->largest, &f->nlargest, s->k, &b, larger);
	return 0;
}

static int oom_event(struct mms__sub *sub, struct mms_pass *p, const mms_event_t *ev)
{
	struct oom_sub *s = (struct oom_sub *)sub;
	const struct mms__track *tr = mms__pass_track(p);
	const struct mms__tlaunch *l;
	mms_oom_failure_t *f;
	int rc;

	if (ev->kind != MMS_EV_ALLOC_FAIL)
		return 0;
	if (s->o->failures++ >= s->max)
		return 0;
	if (mms__grow(&s->o->list, &s->cap, s->o->n, sizeof(*s->o->list)))
		return -ENOMEM;
	f = &s->o->list[s->o->n];
	memset(f, 0, sizeof(*f));
	f->recent = calloc(s->k, sizeof(*f->recent));
	f->largest = calloc(s->k, sizeof(*f->largest));
	if (!f->recent || !f->largest) {
		free(f->recent);
		free(f->largest);
		return -ENOMEM;
	}
	s->o->n++;
	f->event = ev->id;
	f->time_ns = ev->time_ns;
	f->thread = ev->thread;
	f->mem = ev->mem;
	f->fn = ev->sub;
	f->device = ev->device;
	f->size = ev->size;
	f->align = ev->mem == MMS_MEM_DEVICE ? 0 : ev->flags;
	f->stack = ev->stack;
	l = mms__track_running(tr, ev->thread);
	if (l) {
		f->op = l->name;
		f->op_launch = l->launch;
	}
	s->f = f;
	rc = mms__state_each(mms__pass_state(p), live_add, s);
	s->f = NULL;
	qsort(f->recent, f->nrecent, sizeof(*f->recent), newer_cmp);
	qsort(f->largest, f->nlargest, sizeof(*f->largest), larger_cmp);
	return rc;
}

static int oom_end(struct mms__sub *sub, struct mms_pass *p)
{
	struct oom_sub *s = (struct oom_sub *)sub;
	const struct mms__track *tr = mms__pass_track(p);
	size_t i;

	/* Steps are known for certain once the log is read: the events
	 * before the first mark are step 1 of a log counting STEP events. */
	for (i = 0; i < s->o->n; i++) {
		uint64_t step = mms__track_step_of(tr, s->o->list[i].event);

		if (step == MMS__STEP_PENDING)
			step = tr->step_kind == 1 ? 1 : 0;
		s->o->list[i].step = step;
	}
	s->o->events = mms__pass_state(p)->pos;
	s->o->stop_rc = p->stop_rc;
	return 0;
}

static void oom_drop(struct mms__sub *sub)
{
	free(sub);
}

/* The result, with the reference to the owner strings its blocks name. */
struct oom_res {
	mms_oom_t pub;
	struct mms__strs *strs;
};

MMS__EXPORT void mms_oom_free(mms_oom_t *o)
{
	struct oom_res *res = (struct oom_res *)o;
	size_t i;

	if (!o)
		return;
	for (i = 0; i < o->n; i++) {
		free(o->list[i].recent);
		free(o->list[i].largest);
	}
	free(o->list);
	mms__strs_unref(res->strs);
	free(res);
}

MMS__EXPORT int mms_oom_add(mms_pass_t *p, const mms_oom_options_t *opt, mms_oom_t **out)
{
	struct oom_res *res;
	struct oom_sub *s;
	int rc;

	if (!out)
		return MMS_EUSAGE;
	*out = NULL;
	if (!p || (opt && opt->k > 100000))
		return MMS_EUSAGE;
	res = calloc(1, sizeof(*res));
	s = calloc(1, sizeof(*s));
	if (!res || !s) {
		free(res);
		free(s);
		return -ENOMEM;
	}
	res->strs = mms__strs_ref(p->strs);
	s->o = &res->pub;
	s->pass = p;
	s->k = opt && opt->k ? opt->k : OOM_K_DEFAULT;
	s->max = opt && opt->max_failures ? opt->max_failures : OOM_FAILURES_DEFAULT;
	s->sub.name = "oom";
	s->sub.kinds = 1u << MMS_EV_ALLOC_FAIL;
	s->sub.track = MMS__TRACK_STEPS | MMS__TRACK_LAUNCHES;
	s->sub.event = oom_event;
	s->sub.end = oom_end;
	s->sub.drop = oom_drop;
	s->sub.status = &res->pub.status;
	*out = &res->pub;
	rc = mms__pass_add(p, &s->sub);
	if (rc) {
		mms_oom_free(*out);
		*out = NULL;
	}
	return rc;
}

MMS__RUN_ONE(oom, mms_oom_options_t, mms_oom_t)
