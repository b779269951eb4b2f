/* SPDX-License-Identifier: MIT */
/* summary.c: replays a whole log through a heap state (live blocks per
 * memory kind) and counts allocations, frees, bytes, peaks and steps. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "replay-int.h"

/* Live blocks of one named pool. */
struct pool {
	const char *name;  /* owned by the log; "" when unnamed */
	struct mms__map live;
};

struct sum_state {
	mms_summary_t *out;
	struct mms__map host;     /* addr -> size */
	struct mms__ivset maps;   /* live mappings */
	struct pool *pools;
	size_t npools, pools_cap;
	int step_kind;            /* 0 none yet, 1 STEP events, 2 "step start" ranges */
	uint64_t nsteps, nranges;
	int after_step;           /* something happened since the last STEP event */
};

static void kind_alloc(mms_kind_summary_t *k, uint64_t size)
{
	k->allocs++;
	k->bytes_allocated += size;
	k->live_bytes += size;
	if (k->live_bytes > k->peak_bytes)
		k->peak_bytes = k->live_bytes;
}

/* An allocation keyed by address in table m (HOST or one pool). */
static int block_alloc(struct sum_state *st, struct mms__map *m, mms_kind_summary_t *k, const mms_event_t *ev)
{
	uint64_t *slot;
	int isnew;

	slot = mms__map_put(m, ev->addr, &isnew);
	if (!slot)
		return -ENOMEM;
	if (!isnew) {
		/* The address is already live: the ordering rule says this
		 * cannot happen; count it and let the new block replace it. */
		st->out->double_allocs++;
		k->live_bytes -= *slot;
	}
	*slot = ev->size;
	kind_alloc(k, ev->size);
	k->live_blocks = m->count;
	return 0;
}

static void block_free(struct sum_state *st, struct mms__map *m, mms_kind_summary_t *k, const mms_event_t *ev)
{
	uint64_t size;

	k->frees++;
	if (mms__map_del(m, ev->addr, &size)) {
		k->live_bytes -= size;
		k->live_blocks = m->count;
	} else {
		st->out->unmatched_frees++;
	}
}

static struct pool *pool_get(struct sum_state *st, const char *name)
{
	struct pool *p;
	size_t i;

	if (!name)
		name = "";
	for (i = 0; i < st->npools; i++)
		if (st->pools[i].name == name || !strcmp(st->pools[i].name, name))
			return &st->pools[i];
	if (mms__grow(&st->pools, &st->pools_cap, st->npools, sizeof(*st->pools)))
		return NULL;
	p = &st->pools[st->npools++];
	p->name = name;
	mms__map_init(&p->live);
	return p;
}

static int apply_mmap(struct sum_state *st, const mms_event_t *ev)
{
	mms_kind_summary_t *k = &st->out->mem[MMS_MEM_MMAP];
	uint64_t hi = ev->addr + ev->size < ev->addr ? UINT64_MAX : ev->addr + ev->size;
	uint64_t bytes;
	int rc;

	if (ev->kind == MMS_EV_MALLOC) {
		rc = mms__ivset_add(&st->maps, ev->addr, hi, &bytes);
		if (rc)
			return rc;
		k->live_bytes -= bytes;
		kind_alloc(k, ev->size);
	} else {
		/* Unmapping what was never mapped is legal (and common for
		 * mappings made before recording began): not unmatched. */
		k->frees++;
		rc = mms__ivset_remove(&st->maps, ev->addr, hi, &bytes);
		if (rc)
			return rc;
		k->live_bytes -= bytes;
	}
	k->live_blocks = st->maps.n;
	return 0;
}

static int apply(struct sum_state *st, const mms_event_t *ev)
{
	mms_summary_t *out = st->out;
	struct pool *p;

	if (ev->kind != MMS_EV_SYSTEM && ev->kind != MMS_EV_STEP)
		st->after_step = 1;
	out->events++;
	if (ev->kind < MMS_EV_KIND_COUNT)
		out->by_kind[ev->kind]++;
	switch (ev->kind) {
	case MMS_EV_MALLOC:
	case MMS_EV_FREE:
		if (ev->mem == MMS_MEM_MMAP)
			return apply_mmap(st, ev);
		if (ev->mem == MMS_MEM_POOL) {
			p = pool_get(st, ev->name);
			if (!p)
				return -ENOMEM;
			if (ev->kind == MMS_EV_MALLOC)
				return block_alloc(st, &p->live, &out->mem[MMS_MEM_POOL], ev);
			block_free(st, &p->live, &out->mem[MMS_MEM_POOL], ev);
			return 0;
		}
		if (ev->kind == MMS_EV_MALLOC)
			return block_alloc(st, &st->host, &out->mem[MMS_MEM_HOST], ev);
		/* free(NULL) does nothing; valgrind does not count it either. */
		if (ev->addr)
			block_free(st, &st->host, &out->mem[MMS_MEM_HOST], ev);
		return 0;
	case MMS_EV_STEP:
		/* Whichever way of marking steps comes first is the one used. */
		if (!st->step_kind)
			st->step_kind = 1;
		st->nsteps += st->step_kind == 1;
		st->after_step = 0;
		return 0;
	case MMS_EV_MSTX:
		if (ev->sub != 1 || !ev->name || strcmp(ev->name, "step start"))
			return 0;
		if (!st->step_kind)
			st->step_kind = 2;
		st->nranges += st->step_kind == 2;
		return 0;
	default:
		return 0;
	}
}

MMS__EXPORT int mms_summarize(mms_log_t *log, mms_summary_t *out)
{
	struct sum_state st = { .out = out };
	mms_iter_t *it;
	mms_event_t ev;
	size_t i;
	int rc;

	if (!log || !out)
		return MMS_EUSAGE;
	memset(out, 0, sizeof(*out));
	mms__map_init(&st.host);
	rc = mms_iter_open(log, &it);
	if (rc)
		return rc;
	while ((rc = mms_iter_next(it, &ev)) == 1) {
		rc = apply(&st, &ev);
		if (rc)
			break;
	}
	out->threads = log->nthreads;
	/* msmemscope_step() ends step k and begins k + 1: a program that
	 * calls it at the end of each of N iterations has run N steps, and
	 * the step it began last counts only if something happened in it. */
	out->steps = st.step_kind == 1 ? st.nsteps + (uint64_t)st.after_step : st.nranges;
	mms_iter_close(it);
	mms__map_free(&st.host);
	mms__ivset_free(&st.maps);
	for (i = 0; i < st.npools; i++)
		mms__map_free(&st.pools[i].live);
	free(st.pools);
	return rc;
}
