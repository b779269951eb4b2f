/* SPDX-License-Identifier: MIT */
/* badfree.c: what a free of no live block was: a double free when the
 * address is among the state's recent frees and was not handed out again
 * since, else an invalid free; a heap block's release by a function of
 * another family than the one that allocated it (mismatched); and the
 * summary's list of them all. The ring of
 * recent frees is filled by state.c at every free; it is indexed by
 * address here, at the first free that needs it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope/config.h"
#include "msmemscope/log.h"
#include "msmemscope/summary.h"
#include "map-int.h"
#include "state-int.h"

/* Indexes the ring by address, oldest first so that each address ends
 * at its last free: what adding each free as it came would have left.
 * Returns 0 or -ENOMEM (no index then). */
static int freed_index(struct mms__state *st)
{
	uint64_t *v, slot;
	size_t i;

	for (i = 0; i < st->nfreed; i++) {
		slot = (st->freed_head + i) % MMS__RECENT_FREES;
		v = mms__map_put(&st->freed_ix, st->freed[slot].addr, NULL);
		if (!v) {
			mms__map_free(&st->freed_ix);
			return -ENOMEM;
		}
		*v = slot;
	}
	st->freed_indexed = 1;
	return 0;
}

/* Whether addr was handed out again, in HOST or a pool, after event
 * free_event: it is live there with a later allocation. */
static int handed_out_since(const struct mms__state *st, uint64_t addr, uint64_t free_event)
{
	int64_t slot = mms__state_slot_at(st, &st->host, addr);
	size_t i;

	if (slot >= 0 && st->blks[slot].alloc_event > free_event)
		return 1;
	slot = mms__state_slot_at(st, &st->dev, addr);
	if (slot >= 0 && st->blks[slot].alloc_event > free_event)
		return 1;
	for (i = 0; i < st->npools; i++) {
		slot = mms__state_slot_at(st, &st->pools[i].live, addr);
		if (slot >= 0 && st->blks[slot].alloc_event > free_event)
			return 1;
	}
	return 0;
}

/* Whether the log was recorded in parts (collect=deferred, --steps): its
 * configuration, read when first needed, as a log followed while its
 * program runs may not hold that record yet when the state opens (the
 * launcher's report then called such frees bad: a race). */
static int in_parts(struct mms__state *st)
{
	mms_config_t cfg;

	if (!st->parts && !mms_log_config(st->log, &cfg))
		st->parts = cfg.deferred || cfg.nsteps ? 1 : -1;
	return st->parts > 0;
}

/* A free of no live block in table m (HOST or the pool named pool): a
 * double free when the address is among the recent frees of the same
 * memory and was not handed out again since, else an invalid one. The
 * index holds each address's last free; allocations leave it alone, so
 * that the common events do no work for the rare one. */
int mms__state_free_unmatched(struct mms__state *st, const mms_event_t *ev, const char *pool)
{
	const struct mms__freed *f;
	const uint64_t *v;

	if (!st->freed_indexed && freed_index(st))
		return -ENOMEM;
	v = mms__map_get(&st->freed_ix, ev->addr);
	f = v ? &st->freed[*v] : NULL;
	if (f && handed_out_since(st, ev->addr, f->free_event))
		f = NULL;

	st->unmatched_frees++;
	/* What was allocated while nothing was recorded, freed since: no
	 * bug the log can show. */
	if (st->gap_event || in_parts(st)) {
		st->unrecorded_frees++;
		return 0;
	}
	if (f && f->mem == ev->mem && (f->pool == pool || (f->pool && pool && !strcmp(f->pool, pool)))) {
		st->double_frees++;
		st->last_bad_free = MMS_BAD_FREE_DOUBLE;
		st->bad_prev = *f;
	} else {
		st->invalid_frees++;
		st->last_bad_free = MMS_BAD_FREE_INVALID;
	}
	return 0;
}

void mms__state_free_mismatched(struct mms__state *st, const struct mms__blk *b)
{
	st->mismatched_frees++;
	st->last_bad_free = MMS_BAD_FREE_MISMATCHED;
	memset(&st->bad_prev, 0, sizeof(st->bad_prev));
	st->bad_prev.addr = b->addr;
	st->bad_prev.size = b->size;
	st->bad_prev.alloc_event = b->alloc_event;
	st->bad_prev.stack = b->stack;
	st->bad_prev.mem = b->mem;
	st->bad_alloc_fn = b->fn;
}

void mms__state_bad_free(const struct mms__state *st, const mms_event_t *ev, mms_bad_free_t *list, size_t *n,
			 size_t max)
{
	mms_bad_free_t *b;

	if (!st->last_bad_free || *n >= max)
		return;
	b = &list[(*n)++];
	memset(b, 0, sizeof(*b));
	b->event = ev->id;
	b->addr = ev->addr;
	b->thread = ev->thread;
	b->mem = ev->mem;
	b->pool = ev->mem == MMS_MEM_POOL ? (ev->name ? ev->name : "") : NULL;
	b->freed_event = UINT64_MAX;
	b->kind = (unsigned)st->last_bad_free;
	b->free_stack = ev->stack;
	if (st->last_bad_free != MMS_BAD_FREE_INVALID) {
		if (st->last_bad_free == MMS_BAD_FREE_DOUBLE) {
			b->freed_event = st->bad_prev.free_event;
			b->freed_stack = st->bad_prev.free_stack;
		}
		b->alloc_event = st->bad_prev.alloc_event;
		b->size = st->bad_prev.size;
		b->stack = st->bad_prev.stack;
	}
	if (st->last_bad_free == MMS_BAD_FREE_MISMATCHED) {
		b->alloc_fn = st->bad_alloc_fn;
		b->free_fn = ev->sub;
	}
}
