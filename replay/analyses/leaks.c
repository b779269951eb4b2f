/* SPDX-License-Identifier: MIT */
/* leaks.c: msMemScope's leak rules over one forward pass of a log: blocks
 * of step N >= 2 still live at the end of step N + 1, blocks live at the
 * end, blocks allocated between two marks of one name and live at the
 * third (when asked), and the live bytes of each step (the "gap" table). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope/analysis.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "analysis-int.h"
#include "base-int.h"
#include "intervals-int.h"
#include "map-int.h"
#include "pass-int.h"
#include "state-int.h"
#include "track-int.h"

/* A block of a step after the warm-up followed until its step's successor ends: only
 * the blocks of the last two steps are ever followed. Kept small (the
 * rest is in the heap state while the block lives): most blocks are
 * freed before their step ends. */
struct followed {
	uint64_t addr; /* while free: the next free slot + 1 */
	uint64_t alloc_id;
	const char *pool; /* POOL: the pool's name as the state has it */
	uint32_t step;
	uint16_t mem;
	uint16_t used;
};

struct finder {
	struct mms__sub sub;
	const struct mms__state *st;
	const struct mms__track *tr;
	mms_leaks_options_t opt;
	uint64_t warmup;    /* the steps whose blocks are not followed */
	int warmup_decided; /* by the first step's end, when not asked for */
	size_t closed;      /* steps of tr whose end was handled */
	struct mms_pass *pass;
	size_t off;         /* each live block's index in fol + 1, in the pass's data */
	struct followed *fol;
	size_t nfol, folcap;
	size_t free_head; /* free slots of fol chained through addr, + 1 */
	mms_leaks_t *l;
	struct mms__strs *strs; /* the blocks' owner strings, held by l */
	size_t leakcap, stepcap, exitcap, keptcap, reachcap, markcap, unreccap, sunreccap;
	uint64_t mark_first;     /* the first of the three marks, from 0 */
	struct mms__rtmemo rtmemo; /* for the walk of the blocks live at the end */
	mms_leak_step_t pending; /* events before the first step mark */
	int pending_seen;
	uint64_t prev_live[MMS_MEM_KIND_COUNT];
	/* The pieces of mappings found as per-step leaks, followed on to
	 * their unmapping as a block is to its free (val: the leak's index
	 * in step_leaks), and of each leak its pieces still there. */
	struct mms__ivset mleaks;
	uint32_t *mpieces;
	size_t mpieces_cap;
	uint64_t ev_id; /* the event being handled, for mleak_ref() */
	/* The Python package's sweep at exit (MMS_SYS_SWEEP_BEGIN): its
	 * thread + 1 while it runs (0: none), whether the event being
	 * handled is that thread's, and which per-step leaks it freed (one
	 * byte each, by index in step_leaks; nswept of them known). */
	uint32_t sweep_thread;
	int ev_swept;
	uint8_t *swept;
	size_t nswept, sweptcap;
	/* At the end, for the tests that set per-step leaks apart: the last
	 * step the program ended, and a value per allocation stack. */
	uint64_t marked;
	struct mms__map groups;
};

/* In a block's data: the block, a per-step leak already, is followed to
 * its free (the low bits: its index in step_leaks). */
#define LEAK_FOLLOWED (UINT64_C(1) << 63)

static int leak_add(mms_leak_t **arr, size_t *n, size_t *cap, const mms_block_t *b, uint64_t found)
{
	if (mms__grow(arr, cap, *n, sizeof(**arr)))
		return -ENOMEM;
	(*arr)[*n].b = *b;
	(*arr)[*n].found_step = found;
	(*arr)[*n].freed_step = 0;
	(*arr)[*n].freed_event = 0;
	(*arr)[*n].suppression = 0;
	(*n)++;
	return 0;
}

static int follow(struct finder *f, const struct mms__blk *b, uint64_t step)
{
	uint64_t *v = mms__pass_data(f->pass, f->off);
	size_t i;

	if (f->free_head) {
		i = f->free_head - 1;
		f->free_head = (size_t)f->fol[i].addr;
	} else {
		if (mms__grow(&f->fol, &f->folcap, f->nfol, sizeof(*f->fol)))
			return -ENOMEM;
		i = f->nfol++;
	}
	f->fol[i].addr = b->addr;
	f->fol[i].alloc_id = b->alloc_id;
	f->fol[i].pool = mms__blk_origin(f->st, b)->pool;
	f->fol[i].step = (uint32_t)step;
	f->fol[i].mem = b->mem;
	f->fol[i].used = 1;
	if (v)
		*v = i + 1;
	return 0;
}

/* Per-step leak i was freed by event id, in the step the event is in
 * (after the last step mark: the last step, which the end of the log
 * closes; finder_end() tells the two apart), by the sweep at exit or
 * not. Returns 0 or -ENOMEM. */
static int leak_freed(struct finder *f, size_t i, uint64_t id)
{
	mms_leak_t *lk = &f->l->step_leaks[i];

	lk->freed_step = f->tr->ev_step == MMS__STEP_PENDING || f->tr->ev_step == MMS__STEP_NONE ? f->tr->nsteps
												 : f->tr->ev_step;
	lk->freed_event = id;
	if (!f->ev_swept)
		return 0;
	if (i >= f->nswept) {
		while (f->sweptcap <= i)
			if (mms__grow(&f->swept, &f->sweptcap, f->sweptcap, 1))
				return -ENOMEM;
		memset(f->swept + f->nswept, 0, i + 1 - f->nswept);
		f->nswept = i + 1;
	}
	f->swept[i] = 1;
	return 0;
}

/* mleaks' callback: a piece of leak `val` split in two (+1) or gone (-1);
 * the last one gone frees the leak. */
static int mleak_ref(void *ctx, uint64_t val, int delta)
{
	struct finder *f = ctx;

	if (delta > 0)
		f->mpieces[val]++;
	else if (!--f->mpieces[val])
		return leak_freed(f, (size_t)val, f->ev_id);
	return 0;
}

/* An MMAP event took [addr, addr + size) from the mappings the state had
 * there (unmapped, replaced, or made inaccessible): so it does from the
 * leaks' pieces. */
static int mleaks_event(struct finder *f, const mms_event_t *ev)
{
	uint64_t hi = ev->addr + ev->size < ev->addr ? UINT64_MAX : ev->addr + ev->size, bytes;

	f->ev_id = ev->id;
	return mms__ivset_remove(&f->mleaks, ev->addr, hi, &bytes);
}

/* Releases slot i of fol, already out of the map. */
static void fol_release(struct finder *f, size_t i)
{
	f->fol[i].used = 0;
	f->fol[i].addr = f->free_head;
	f->free_head = i + 1;
}

/* The live pieces of a followed mapping: munmap may have cut it. */
static int mapping_leaks(struct finder *f, const struct followed *fo, uint64_t found)
{
	const struct mms__state *st = f->st;
	mms_block_t piece;
	uint64_t bytes;
	size_t i;
	int rc;

	for (i = 0; i < st->maps.n; i++) {
		const struct mms__blk *blk = &st->blks[st->maps.iv[i].val];

		if (blk->alloc_id != fo->alloc_id)
			continue;
		mms__state_blk_export(st, blk, &piece);
		piece.addr = st->maps.iv[i].lo;
		piece.size = st->maps.iv[i].hi - st->maps.iv[i].lo;
		if (mms__blk_before_gap(st, blk)) {
			rc = leak_add(&f->l->step_unrecorded, &f->l->nstep_unrecorded, &f->sunreccap, &piece, found);
			if (rc)
				return rc;
			continue;
		}
		rc = leak_add(&f->l->step_leaks, &f->l->nstep_leaks, &f->leakcap, &piece, found);
		if (rc)
			return rc;
		/* Followed on: a piece of it unmapped in a later step frees
		 * it there once none is left. */
		while (f->mpieces_cap < f->l->nstep_leaks)
			if (mms__grow(&f->mpieces, &f->mpieces_cap, f->mpieces_cap, sizeof(*f->mpieces)))
				return -ENOMEM;
		f->mpieces[f->l->nstep_leaks - 1] = 1;
		rc = mms__ivset_add_val(&f->mleaks, st->maps.iv[i].lo, st->maps.iv[i].hi, f->l->nstep_leaks - 1,
					&bytes);
		if (rc)
			return rc;
	}
	return 0;
}

/* The followed block in the heap state, or NULL when it is gone: freed,
 * or replaced by an allocation of its live address (MMS_EORDER's case,
 * which has no free). */
static const struct mms__blk *followed_live(const struct mms__state *st, const struct followed *fo)
{
	const struct mms__slotmap *m = mms__state_map_of(st, fo->mem, fo->pool);
	int64_t slot = m ? mms__state_slot_at(st, m, fo->addr) : -1;

	return slot >= 0 && st->blks[slot].alloc_id == fo->alloc_id ? &st->blks[slot] : NULL;
}

/* Step k ended: the followed blocks of step k - 1 still live are leaks,
 * and are not followed further; those allocated before recording stopped
 * since (step k or part of it not recorded) the log cannot judge:
 * step_unrecorded. */
static int step_ended(struct finder *f, uint64_t k)
{
	const struct mms__blk *blk;
	uint64_t *v;
	mms_block_t b;
	size_t i;
	int rc = 0;

	for (i = 0; i < f->nfol; i++) {
		struct followed *fo = &f->fol[i];
		int leak = 0;

		if (!fo->used || fo->step >= k)
			continue;
		/* A mapping's entry is looked at only when it is freed. */
		blk = fo->mem == MMS_MEM_MMAP ? NULL : followed_live(f->st, fo);
		v = blk ? mms__pass_data_of(f->pass, blk, f->off) : NULL;
		if (fo->step + 1 == k) {
			if (fo->mem == MMS_MEM_MMAP) {
				rc = mapping_leaks(f, fo, k);
			} else if (blk && mms__blk_before_gap(f->st, blk)) {
				mms__state_blk_export(f->st, blk, &b);
				rc = leak_add(&f->l->step_unrecorded, &f->l->nstep_unrecorded, &f->sunreccap, &b, k);
			} else if (blk) {
				mms__state_blk_export(f->st, blk, &b);
				rc = leak_add(&f->l->step_leaks, &f->l->nstep_leaks, &f->leakcap, &b, k);
				leak = 1;
			}
			if (rc)
				return rc;
		}
		/* A leak is followed on to its free, which is noted in it;
		 * another block no more. */
		if (v)
			*v = leak ? LEAK_FOLLOWED | (f->l->nstep_leaks - 1) : 0;
		fol_release(f, i);
	}
	return 0;
}

/* The statistics of step k (from 1), made when first asked for. */
static mms_leak_step_t *step_stats(struct finder *f, uint64_t k)
{
	mms_leaks_t *l = f->l;
	mms_leak_step_t *s;

	while (l->nsteps < k) {
		if (mms__grow(&l->steps, &f->stepcap, l->nsteps, sizeof(*l->steps)))
			return NULL;
		s = &l->steps[l->nsteps++];
		memset(s, 0, sizeof(*s));
		s->step = l->nsteps;
		/* Step 1 of a log counting STEP events began with the log: it
		 * holds what came before the first mark. */
		if (s->step == 1 && f->tr->step_kind == 1 && f->pending_seen) {
			*s = f->pending;
			s->step = 1;
			continue;
		}
		memcpy(s->min_bytes, f->prev_live, sizeof(s->min_bytes));
		memcpy(s->max_bytes, f->prev_live, sizeof(s->max_bytes));
		memcpy(s->end_bytes, f->prev_live, sizeof(s->end_bytes));
	}
	return &l->steps[k - 1];
}

static int leak_order(const void *a, const void *b);

static int mark_add(const struct mms__blk *blk, void *ctx)
{
	struct finder *f = ctx;
	mms_block_t b;

	/* What a runtime keeps for itself is no leak between marks either. */
	if (blk->alloc_event <= f->l->mark_events[0] || blk->alloc_event >= f->l->mark_events[1] ||
	    mms__blk_runtime_now(blk))
		return 0;
	mms__state_blk_export(f->st, blk, &b);
	return leak_add(&f->l->mark_leaks, &f->l->nmark_leaks, &f->markcap, &b, 0);
}

/* A mark named opt.marks, event id: one of the three, and at the third,
 * the blocks live then that the first two enclose. */
static int mark_seen(struct finder *f, uint64_t id)
{
	mms_leaks_t *l = f->l;
	uint64_t n = l->marks_seen++;
	int rc;

	if (n < f->mark_first || n - f->mark_first > 2)
		return 0;
	l->mark_events[n - f->mark_first] = id;
	if (n - f->mark_first < 2)
		return 0;
	rc = mms__state_each(f->st, mark_add, f);
	if (!rc && l->nmark_leaks > 1)
		qsort(l->mark_leaks, l->nmark_leaks, sizeof(*l->mark_leaks), leak_order);
	return rc;
}

static int finder_event_any(struct mms__sub *sub, struct mms_pass *p, const mms_event_t *ev);

/* A memory event in a log with no step mark: nothing to follow or count
 * (finder_event_any() says why), in a call that does only that. */
static int finder_event(struct mms__sub *sub, struct mms_pass *p, const mms_event_t *ev)
{
	const struct finder *f = (const struct finder *)sub;

	if (f->tr->no_marks && (ev->kind == MMS_EV_MALLOC || ev->kind == MMS_EV_FREE))
		return 0;
	return finder_event_any(sub, p, ev);
}

static __attribute__((noinline)) int finder_event_any(struct mms__sub *sub, struct mms_pass *p, const mms_event_t *ev)
{
	struct finder *f = (struct finder *)sub;
	const struct mms__state *st = f->st;
	mms_leak_step_t *s = NULL;
	uint64_t *v;
	unsigned k;
	int rc;

	(void)p;
	/* The default warm-up, decided where the first step ends (no block
	 * of step 2 is followed yet): 2 for steps inferred from a PyTorch
	 * optimizer, 1 (msMemScope's) for the program's own. */
	if (!f->opt.warmup_steps && !f->warmup_decided && ev->kind == MMS_EV_STEP && st->steps_seen == 1) {
		f->warmup = ev->sub == MMS_STEP_OPTIMIZER ? 2 : 1;
		f->l->warmup_steps = (uint32_t)f->warmup;
		f->warmup_decided = 1;
	}
	if (ev->kind == MMS_EV_SYSTEM && (ev->sub == MMS_SYS_SWEEP_BEGIN || ev->sub == MMS_SYS_SWEEP_END))
		f->sweep_thread = ev->sub == MMS_SYS_SWEEP_BEGIN ? ev->thread + 1 : 0;
	f->ev_swept = f->sweep_thread && ev->thread + 1 == f->sweep_thread;
	if (f->opt.marks && ev->kind == MMS_EV_MSTX && ev->sub == MMS_MSTX_MARK && ev->name &&
	    !strcmp(ev->name, f->opt.marks) && (rc = mark_seen(f, ev->id)))
		return rc;
	/* A log without step marks has no step and no per-step leak: a
	 * block of no step (0) is never followed, and what is counted
	 * before the first step would never be used. */
	if (f->tr->no_marks)
		return 0;
	if (f->tr->ev_step == MMS__STEP_PENDING) {
		s = &f->pending;
		if (!f->pending_seen) {
			memcpy(s->min_bytes, f->prev_live, sizeof(s->min_bytes));
			memcpy(s->max_bytes, f->prev_live, sizeof(s->max_bytes));
			memcpy(s->end_bytes, f->prev_live, sizeof(s->end_bytes));
			f->pending_seen = 1;
		}
	} else if (f->tr->ev_step != MMS__STEP_NONE) {
		s = step_stats(f, f->tr->ev_step);
		if (!s)
			return -ENOMEM;
	}
	/* The state took the range from its mappings (an MMAP event it left
	 * alone, as an mprotect that opens what is open, has no block). */
	if (ev->mem == MMS_MEM_MMAP && f->mleaks.n && (ev->kind == MMS_EV_FREE || st->last_blk_valid) &&
	    (rc = mleaks_event(f, ev)))
		return rc;
	if ((ev->kind == MMS_EV_MALLOC || ev->kind == MMS_EV_FREE) && st->last_blk_valid) {
		/* Only blocks allocated after the warm-up steps are followed. */
		uint64_t step = mms__state_blk_step(st, st->last_blk);
		int followed = step > f->warmup;

		if (ev->kind == MMS_EV_MALLOC) {
			if (s) {
				s->allocs++;
				s->bytes_allocated += st->last_blk->size;
			}
			/* What a runtime keeps for itself is no step's leak. */
			if (followed && !mms__blk_runtime_now(st->last_blk) && (rc = follow(f, st->last_blk, step)))
				return rc;
		} else if (followed && ev->mem != MMS_MEM_MMAP && (v = mms__pass_data(f->pass, f->off)) && *v) {
			/* A mapping is looked at when its step ends: munmap
			 * may free only a piece of it. */
			if (*v & LEAK_FOLLOWED) {
				rc = leak_freed(f, (size_t)(*v & ~LEAK_FOLLOWED), ev->id);
				if (rc)
					return rc;
			} else {
				fol_release(f, (size_t)*v - 1);
			}
			*v = 0;
		}
		k = ev->mem < MMS_MEM_KIND_COUNT ? ev->mem : 0;
		if (s && st->mem[k].live_bytes < s->min_bytes[k])
			s->min_bytes[k] = st->mem[k].live_bytes;
		if (s && st->mem[k].live_bytes > s->max_bytes[k])
			s->max_bytes[k] = st->mem[k].live_bytes;
	}
	for (k = 0; k < MMS_MEM_KIND_COUNT; k++)
		f->prev_live[k] = st->mem[k].live_bytes;
	if (s)
		memcpy(s->end_bytes, f->prev_live, sizeof(s->end_bytes));
	while (f->closed < f->tr->nsteps && f->tr->steps[f->closed].end != UINT64_MAX) {
		rc = step_ended(f, ++f->closed);
		if (rc)
			return rc;
	}
	return 0;
}

static int exit_add(const struct mms__blk *blk, void *ctx)
{
	struct finder *f = ctx;
	mms_block_t b;

	mms__state_blk_export(f->st, blk, &b);
	mms__blk_at_end(f->st, &f->rtmemo, blk, &b);
	if (b.runtime)
		return leak_add(&f->l->runtime_kept, &f->l->nruntime_kept, &f->keptcap, &b, 0) ? -ENOMEM : 0;
	if (b.reach == MMS_REACH_REACHABLE)
		return leak_add(&f->l->reachable, &f->l->nreachable, &f->reachcap, &b, 0) ? -ENOMEM : 0;
	if (b.reach == MMS_REACH_UNRECORDED)
		return leak_add(&f->l->unrecorded, &f->l->nunrecorded, &f->unreccap, &b, 0) ? -ENOMEM : 0;
	return leak_add(&f->l->exit_leaks, &f->l->nexit_leaks, &f->exitcap, &b, 0) ? -ENOMEM : 0;
}

static int leak_order(const void *a, const void *b)
{
	const mms_leak_t *x = a, *y = b;

	if (x->b.alloc_id != y->b.alloc_id)
		return x->b.alloc_id < y->b.alloc_id ? -1 : 1;
	return x->b.addr < y->b.addr ? -1 : x->b.addr > y->b.addr;
}

/* Whether per-step leak lk, at index i of step_leaks, goes to a list of
 * its own (the tests below; finder_end() sets f->marked and f->groups). */
typedef int leak_test(const struct finder *f, size_t i, const mms_leak_t *lk);

/* Moves the per-step leaks that pass `is` to *to (*nto of them; to NULL:
 * drops them), keeping the order of both lists. Returns 0 or -ENOMEM. */
static int leaks_move(struct finder *f, leak_test *is, mms_leak_t **to, size_t *nto)
{
	mms_leaks_t *l = f->l;
	size_t i, k = 0, n = 0;

	for (i = 0; i < l->nstep_leaks; i++)
		n += is(f, i, &l->step_leaks[i]);
	if (!n)
		return 0;
	if (to && !(*to = malloc(n * sizeof(**to))))
		return -ENOMEM;
	for (i = 0; i < l->nstep_leaks; i++) {
		if (!is(f, i, &l->step_leaks[i]))
			l->step_leaks[k++] = l->step_leaks[i];
		else if (to)
			(*to)[(*nto)++] = l->step_leaks[i];
	}
	l->nstep_leaks = k;
	return 0;
}

/* Freed in a step the program ended (1 to marked): held. */
static int is_held(const struct finder *f, size_t i, const mms_leak_t *lk)
{
	(void)i;
	return lk->freed_step && lk->freed_step <= f->marked;
}

/* Freed by the sweep at exit (and not held). */
static int is_swept(const struct finder *f, size_t i, const mms_leak_t *lk)
{
	return i < f->nswept && f->swept[i] && !is_held(f, i, lk);
}

/* Found by the end of the log (of its last step: found_step after
 * marked) still live then, and kept at exit by a runtime by design
 * (runtime_kept, sorted: CPython's objects still referenced, which it
 * does not free): what the last step left to the program's end, as the
 * loop's last gradients are, is not kept from one step to the next, and
 * the section of blocks live at exit lists it. Dropped. */
static int is_runtime_at_end(const struct finder *f, size_t i, const mms_leak_t *lk)
{
	const mms_leaks_t *l = f->l;

	(void)i;
	return lk->found_step > f->marked && !lk->freed_step && l->nruntime_kept &&
	       bsearch(lk, l->runtime_kept, l->nruntime_kept, sizeof(*l->runtime_kept), leak_order);
}

/* The value of lk's allocation stack in f->groups (stack 0, none
 * recorded, is one group), or NULL. */
static const uint64_t *group_of(const struct finder *f, const mms_leak_t *lk)
{
	return mms__map_get(&f->groups, (uint64_t)lk->b.stack + 1);
}

/* Still in a cache or queue when the steps ended (f->groups: of each
 * stack with held blocks, the longest one of them lived): of an
 * allocation stack whose held blocks show it turning over, a block no
 * older at the end of the last step the program ended (marked) than the
 * longest that one of its held blocks lived before it was freed. A block
 * of step S lived through the ends of steps S to marked; a held block of
 * step S freed in step F, through those of S to F - 1. A stack that never
 * gave a block back holds no cache, and blocks older than its turnover
 * are kept beyond it: both stay leaks; so do a stack's blocks when its
 * turnover is longer than half the steps after the warm-up (too long a
 * time to tell its contents from a leak). */
static int is_cached(const struct finder *f, size_t i, const mms_leak_t *lk)
{
	const uint64_t *lived = group_of(f, lk);

	(void)i;
	return lived && lk->b.step <= f->marked && f->marked + 1 - lk->b.step <= *lived &&
	       2 * *lived + f->warmup <= f->marked;
}

/* The steps after the one a group of per-step leaks came from that must
 * have kept nothing of the group for it to be one-time. */
#define ONCE_AFTER 3
#define ONCE_MANY (UINT64_C(1) << 63)

/* Kept from one step only (f->groups: of each stack, its leaks' step, |
 * ONCE_MANY if several): of an allocation stack whose leaks all came
 * from one step S followed by at least ONCE_AFTER steps, allocated once
 * after the warm-up and kept (a table or cache built lazily, where a
 * code path first ran), not memory that grows from step to step. */
static int is_once(const struct finder *f, size_t i, const mms_leak_t *lk)
{
	const uint64_t *step = group_of(f, lk);

	(void)i;
	return !(*step & ONCE_MANY) && *step + ONCE_AFTER < f->tr->nsteps;
}

/* Fills f->groups (emptied first) with a value per allocation stack of
 * the n leaks of v: the longest a block lived (lived: freed_step -
 * b.step), else the step the blocks came from, | ONCE_MANY when several.
 * Returns 0 or -ENOMEM. */
static int groups_fill(struct finder *f, const mms_leak_t *v, size_t n, int lived)
{
	uint64_t *g, x;
	int isnew;

	mms__map_free(&f->groups);
	mms__map_init(&f->groups);
	for (size_t i = 0; i < n; i++) {
		x = lived ? v[i].freed_step - v[i].b.step : v[i].b.step;
		g = mms__map_put(&f->groups, (uint64_t)v[i].b.stack + 1, &isnew);
		if (!g)
			return -ENOMEM;
		if (isnew || (lived && x > *g))
			*g = x;
		else if (!lived && *g != x)
			*g |= ONCE_MANY;
	}
	return 0;
}

/* At the end of the log (the pass closed the last step as the index
 * closes it): what is live is the last section. A log that stops at a
 * cut or at damage did not end its last step there: the per-step rule
 * finds nothing at that step's end. */
static int finder_end(struct mms__sub *sub, struct mms_pass *p)
{
	struct finder *f = (struct finder *)sub;
	size_t ended = mms__pass_stopped(p) ? mms__pass_steps_marked(p) : f->tr->nsteps;
	/* The steps the program's own marks ended: the last one, which the
	 * end of the log closes, does not count. */
	uint64_t marked = f->closed;
	int rc;

	while (f->closed < ended && f->tr->steps[f->closed].end != UINT64_MAX) {
		rc = step_ended(f, ++f->closed);
		if (rc)
			return rc;
	}
	/* Statistics of a step the track dropped (nothing after the last
	 * STEP event) go too. */
	if (f->l->nsteps > f->tr->nsteps && f->tr->step_kind == 1)
		f->l->nsteps = f->tr->nsteps;
	if (!f->tr->step_kind)
		f->l->nsteps = 0;
	for (size_t i = 0; i < f->l->nsteps && i < f->tr->nsteps; i++)
		f->l->steps[i].recorded = mms__collect_recorded(f->tr->steps[i].collect);
	f->marked = marked;
	rc = leaks_move(f, is_swept, &f->l->step_swept, &f->l->nstep_swept);
	if (!rc)
		rc = leaks_move(f, is_held, &f->l->step_held, &f->l->nstep_held);
	if (rc)
		return rc;
	f->l->reach_known = mms__reach_known(f->st);
	rc = mms__state_each(f->st, exit_add, f);
	mms__rtmemo_free(&f->rtmemo);
	if (rc)
		return rc;
	if (f->l->nexit_leaks)
		qsort(f->l->exit_leaks, f->l->nexit_leaks, sizeof(*f->l->exit_leaks), leak_order);
	if (f->l->nruntime_kept)
		qsort(f->l->runtime_kept, f->l->nruntime_kept, sizeof(*f->l->runtime_kept), leak_order);
	if (f->l->nreachable)
		qsort(f->l->reachable, f->l->nreachable, sizeof(*f->l->reachable), leak_order);
	if (f->l->nunrecorded)
		qsort(f->l->unrecorded, f->l->nunrecorded, sizeof(*f->l->unrecorded), leak_order);
	rc = leaks_move(f, is_runtime_at_end, NULL, NULL);
	if (!rc)
		rc = groups_fill(f, f->l->step_held, f->l->nstep_held, 1);
	if (!rc)
		rc = leaks_move(f, is_cached, &f->l->step_cached, &f->l->nstep_cached);
	if (!rc)
		rc = groups_fill(f, f->l->step_leaks, f->l->nstep_leaks, 0);
	if (!rc)
		rc = leaks_move(f, is_once, &f->l->step_once, &f->l->nstep_once);
	if (rc)
		return rc;
	f->l->events = f->st->pos;
	f->l->stop_rc = p->stop_rc;
	f->l->double_frees = f->st->double_frees;
	f->l->invalid_frees = f->st->invalid_frees;
	f->l->mismatched_frees = f->st->mismatched_frees;
	f->l->unchecked_frees = f->st->unchecked_frees;
	f->l->unrecorded_frees = f->st->unrecorded_frees;
	memcpy(f->l->bad_frees, p->bad, p->nbad * sizeof(*p->bad));
	f->l->nbad_frees = p->nbad;
	if (f->opt.suppressions)
		return mms__leaks_suppress(f->l, p->log, f->opt.suppressions, f->opt.sym);
	return 0;
}

static int finder_begin(struct mms__sub *sub, struct mms_pass *p)
{
	struct finder *f = (struct finder *)sub;

	f->st = mms__pass_state(p);
	f->tr = mms__pass_track(p);
	/* A fork child's pass starts with its inherited heap. */
	for (int k = 0; k < MMS_MEM_KIND_COUNT; k++)
		f->prev_live[k] = f->st->mem[k].live_bytes;
	/* Without step marks its memory events do nothing (finder_event):
	 * not fed them at all. */
	if (f->tr->no_marks)
		mms__pass_quiet(p, sub, ~0u);
	return 0;
}

static void finder_drop(struct mms__sub *sub)
{
	struct finder *f = (struct finder *)sub;

	free(f->fol);
	mms__ivset_free(&f->mleaks);
	free(f->mpieces);
	free(f->swept);
	mms__map_free(&f->groups);
	free(f);
}

/* The result, with the reference to the owner strings its blocks name. */
struct leaks_res {
	mms_leaks_t pub;
	struct mms__strs *strs;
};

MMS__EXPORT void mms_leaks_free(mms_leaks_t *l)
{
	struct leaks_res *res = (struct leaks_res *)l;

	if (!l)
		return;
	free(l->step_leaks);
	free(l->step_held);
	free(l->step_swept);
	free(l->step_once);
	free(l->step_unrecorded);
	free(l->step_cached);
	free(l->exit_leaks);
	free(l->runtime_kept);
	free(l->reachable);
	free(l->unrecorded);
	free(l->mark_leaks);
	free(l->steps);
	mms__strs_unref(res->strs);
	free(res);
}

MMS__EXPORT int mms_leaks_add(mms_pass_t *p, const mms_leaks_options_t *opt, mms_leaks_t **out)
{
	struct leaks_res *res;
	struct finder *f;
	int rc;

	if (!out)
		return MMS_EUSAGE;
	*out = NULL;
	if (!p)
		return MMS_EUSAGE;
	res = calloc(1, sizeof(*res));
	f = calloc(1, sizeof(*f));
	if (!res || !f) {
		free(res);
		free(f);
		return -ENOMEM;
	}
	res->strs = mms__strs_ref(p->strs);
	mms__map_init(&f->groups);
	f->l = &res->pub;
	if (opt)
		f->opt = *opt;
	/* 0: the first step's end decides (finder_event). */
	f->warmup = f->opt.warmup_steps ? f->opt.warmup_steps : 1;
	res->pub.warmup_steps = (uint32_t)f->warmup;
	f->mark_first = f->opt.mark_first ? f->opt.mark_first - 1 : 0;
	for (int k = 0; k < 3; k++)
		res->pub.mark_events[k] = UINT64_MAX;
	f->pass = p;
	f->mleaks.ref = mleak_ref;
	f->mleaks.ctx = f;
	/* Each block's followed entry, for per-step leaks: none in a whole
	 * log with no step mark (every event before the first step, nothing
	 * followed; 8 bytes a live block of fresh memory saved). */
	if (p->log->follow || mms__log_has_steps(p->log))
		f->off = mms__pass_attach(p, sizeof(uint64_t));
	else
		f->off = SIZE_MAX;
	f->sub.name = "leaks";
	f->sub.kinds = ~0u;
	f->sub.track = MMS__TRACK_STEPS;
	f->sub.begin = finder_begin;
	f->sub.event = finder_event;
	f->sub.end = finder_end;
	f->sub.drop = finder_drop;
	f->sub.status = &res->pub.status;
	*out = &res->pub;
	rc = mms__pass_add(p, &f->sub);
	if (rc) {
		mms_leaks_free(*out);
		*out = NULL;
	}
	return rc;
}

MMS__RUN_ONE(leaks, mms_leaks_options_t, mms_leaks_t)

MMS__EXPORT int mms_leaks_group(const mms_leak_t *leaks, size_t n, mms_stack_group_t **out, size_t *ngroups)
{
	struct mms__groups g;
	size_t i;

	if ((!leaks && n) || !out || !ngroups)
		return MMS_EUSAGE;
	mms__groups_init(&g);
	for (i = 0; i < n; i++) {
		if (leaks[i].suppression)
			continue;
		if (mms__groups_add(&g, &leaks[i].b)) {
			mms__groups_free(&g);
			return -ENOMEM;
		}
	}
	mms__groups_finish(&g, out, ngroups);
	return 0;
}
