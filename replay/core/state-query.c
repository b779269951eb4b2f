/* SPDX-License-Identifier: MIT */
/* state-query.c: what is read of a heap state without changing it (state.c
 * applies the events): a block's step and its public record, the block
 * at an address, a block's slot, the walk over every live block, and the
 * list of live slots that several walks of a state at rest share. */
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "msmemscope/log.h"
#include "msmemscope/replay.h"
#include "base-int.h"
#include "intervals-int.h"
#include "log-int.h"
#include "state-int.h"

static int step_kind(const struct mms__state *st)
{
	return st->step_kind_hint ? st->step_kind_hint : st->step_kind;
}

uint64_t mms__state_blk_step(const struct mms__state *st, const struct mms__blk *b)
{
	switch (step_kind(st)) {
	case 1:
		return (uint64_t)b->step + 1;
	case 2:
		return b->step;
	default:
		return 0;
	}
}

uint64_t mms__state_step(const struct mms__state *st, int *in_step)
{
	switch (step_kind(st)) {
	case 1:
		*in_step = 1;
		return st->steps_seen + 1;
	case 2:
		*in_step = st->in_range;
		return st->ranges_seen;
	default:
		*in_step = 0;
		return 0;
	}
}

void mms__state_blk_export(const struct mms__state *st, const struct mms__blk *b, mms_block_t *out)
{
	const struct mms__origin *o = mms__blk_origin(st, b);

	memset(out, 0, sizeof(*out));
	out->addr = b->addr;
	out->size = b->size;
	out->mem = b->mem;
	out->fn = b->fn;
	out->runtime = mms__blk_runtime_now(b);
	out->device = o->device;
	out->thread = o->thread;
	out->stack = b->stack;
	out->alloc_id = b->alloc_id;
	out->alloc_event = b->alloc_event;
	out->step = mms__state_blk_step(st, b);
	out->op_launch = b->op_launch;
	out->op = o->op;
	out->kernel_launches = b->kernels;
	out->owner = o->owner;
	out->pool = o->pool;
	out->free_event = UINT64_MAX;
	out->free_stack = 0;
	if (mms__blk_inherited(st, b)) {
		out->inherited = 1;
		out->step = 0;
		out->origin_pid = st->log->inh.blks[b->alloc_id - 1].origin_pid;
		out->origin_event = st->log->inh.blks[b->alloc_id - 1].origin_event;
	}
}

const struct mms__slotmap *mms__state_map_of(const struct mms__state *st, unsigned mem, const char *pool)
{
	size_t i;

	if (mem == MMS_MEM_HOST)
		return &st->host;
	if (mem == MMS_MEM_DEVICE)
		return &st->dev;
	for (i = 0; mem == MMS_MEM_POOL && i < st->npools; i++)
		if (st->pools[i].name == pool)
			return &st->pools[i].live;
	return NULL;
}

const struct mms__blk *mms__state_find(const struct mms__state *st, uint64_t addr)
{
	const struct mms__blk *b, *best = NULL;
	int64_t slot;
	size_t i, j;

	/* An exact start address is the common question and one lookup.
	 * A pool's block first: a pool carves its blocks out of memory of
	 * another kind, so its first block starts where that memory does (a
	 * tensor at the start of PyTorch's segment, a custom pool's first
	 * block at its arena's): the pool's is the inner one, the answer. */
	for (j = 0; j < st->npools; j++) {
		slot = mms__state_slot_at(st, &st->pools[j].live, addr);
		if (slot >= 0)
			return &st->blks[slot];
	}
	slot = mms__state_slot_at(st, &st->host, addr);
	if (slot < 0)
		slot = mms__state_slot_at(st, &st->dev, addr);
	if (slot >= 0)
		return &st->blks[slot];
	i = mms__ivset_find(&st->maps, addr);
	if (i != (size_t)-1)
		return &st->blks[st->maps.iv[i].val];
	/* An interior address: scan the live blocks. Interactive questions
	 * only, so linear is fine. A CUDA array is at its handle, not at an
	 * address range the program can reach: only its start finds it. */
	for (i = 0; i < st->nblks; i++) {
		b = &st->blks[i];
		if (b->live && b->mem != MMS_MEM_MMAP && !(b->mem == MMS_MEM_DEVICE && b->fn == MMS_DEVICE_ARRAY) &&
		    addr >= b->addr && addr - b->addr < b->size && (!best || b->addr > best->addr))
			best = b;
	}
	return best;
}

int64_t mms__state_slot_of(const struct mms__state *st, const struct mms__blk *b)
{
	int64_t slot = -1;
	size_t i;

	/* The block of the event just applied (freed already, its slot not
	 * yet taken again), or a piece of its mapping. */
	if (b == st->last_blk && st->last_blk_valid)
		return st->last_slot;
	if (b >= st->blks && b < st->blks + st->nblks)
		return b->live ? b - st->blks : -1;
	if (b == &st->last_piece)
		return -1;
	if (b->mem == MMS_MEM_MMAP) {
		i = mms__ivset_find(&st->maps, b->addr);
		slot = i != (size_t)-1 && st->maps.iv[i].val < st->nblks ? (int64_t)st->maps.iv[i].val : -1;
	} else {
		const struct mms__slotmap *m = mms__state_map_of(st, b->mem, mms__blk_origin(st, b)->pool);

		slot = m ? mms__state_slot_at(st, m, b->addr) : -1;
	}
	return slot >= 0 && st->blks[slot].alloc_id == b->alloc_id ? slot : -1;
}

/* Whether mms__state_each() visits slot b itself: a live block, not a
 * mapping (whose live pieces it visits instead). */
static inline int slot_walked(const struct mms__blk *b)
{
	return b->live && b->mem != MMS_MEM_MMAP;
}

int mms__state_each(const struct mms__state *st, int (*fn)(const struct mms__blk *b, void *ctx), void *ctx)
{
	struct mms__blk piece;
	const struct mms__iv *iv;
	size_t i;
	int rc;

	if (st->live_ix) {
		for (i = 0; i < st->nlive_ix; i++) {
			rc = fn(&st->blks[st->live_ix[i]], ctx);
			if (rc)
				return rc;
		}
	} else {
		for (i = 0; i < st->nblks; i++) {
			if (!slot_walked(&st->blks[i]))
				continue;
			rc = fn(&st->blks[i], ctx);
			if (rc)
				return rc;
		}
	}
	/* A mapping cut by munmap shows as its live pieces. */
	for (i = 0; i < st->maps.n; i++) {
		iv = &st->maps.iv[i];
		piece = st->blks[iv->val];
		piece.addr = iv->lo;
		piece.size = iv->hi - iv->lo;
		rc = fn(&piece, ctx);
		if (rc)
			return rc;
	}
	return 0;
}

void mms__state_freeze(struct mms__state *st)
{
	size_t i, n = 0, cap = 0;
	uint32_t *v = NULL;

	mms__state_thaw(st);
	for (i = 0; i < st->nblks; i++) {
		if (!slot_walked(&st->blks[i]))
			continue;
		if (n == cap) {
			uint32_t *w;

			cap = cap ? 2 * cap : 1024;
			w = realloc(v, cap * sizeof(*v));
			if (!w) {
				free(v);
				return;
			}
			v = w;
		}
		v[n++] = (uint32_t)i;
	}
	if (!v && !(v = malloc(sizeof(*v))))
		return;
	st->live_ix = v;
	st->nlive_ix = n;
}

void mms__state_thaw(struct mms__state *st)
{
	free(st->live_ix);
	st->live_ix = NULL;
	st->nlive_ix = 0;
}
