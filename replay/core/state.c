/* SPDX-License-Identifier: MIT */
/* state.c: the heap state that replay drives: live blocks of every memory
 * kind with their origin (stack, thread, step, operator, owner), the
 * per-thread operator and owner stacks, and the running figures, as the
 * events are applied (what is read of it: state-query.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "msmemscope/config.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/summary.h"
#include "base-int.h"
#include "decimal-int.h"
#include "intervals-int.h"
#include "log-int.h"
#include "map-int.h"
#include "state-int.h"
#include "table-int.h"

static int map_ref(void *ctx, uint64_t slot, int delta);

/* One slot, one cache line: see struct mms__blk. */
_Static_assert(sizeof(struct mms__blk) == 64, "a block slot is 64 bytes");

void mms__state_init(struct mms__state *st, mms_log_t *log)
{
	memset(st, 0, sizeof(*st));
	st->log = log;
	mms__slotmap_init(&st->host);
	mms__slotmap_init(&st->dev);
	mms__map_init(&st->freed_ix);
	mms__map_init(&st->mrefs);
	mms__map_init(&st->own.ix);
	mms__map_init(&st->own.oix);
	st->ow = &st->own;
	st->maps.ref = map_ref;
	st->maps.ctx = st;
	st->last_blk = &st->last_piece;
}

void mms__state_free(struct mms__state *st)
{
	size_t i;

	mms__table_free(st->blks, st->blks_cap * sizeof(*st->blks));
	mms__table_free(st->ext, st->ext_cap * st->ext_size);
	free(st->free_slots);
	mms__slotmap_free(&st->host);
	mms__slotmap_free(&st->dev);
	mms__ivset_free(&st->maps);
	mms__map_free(&st->mrefs);
	for (i = 0; i < st->npools; i++)
		mms__slotmap_free(&st->pools[i].live);
	free(st->pools);
	for (i = 0; i < st->nthreads; i++) {
		free(st->threads[i].ops);
		free(st->threads[i].tags);
	}
	free(st->threads);
	free(st->freed);
	mms__map_free(&st->freed_ix);
	mms__owners_free(&st->own);
	free(st->live_ix);
	memset(st, 0, sizeof(*st));
}

/* --- block slots ---------------------------------------------------------- */

int mms__state_blks_grow(struct mms__state *st)
{
	size_t cap = st->blks_cap ? st->blks_cap * 2 : 16;
	uint32_t *f;

	if (st->nblks < st->blks_cap)
		return 0;
	/* The stack of free slots has room for every slot, so releasing
	 * one never allocates; it grows first, so that it never lags.
	 * Slots are numbered in 32 bits. */
	if (cap > UINT32_MAX || !(f = realloc(st->free_slots, cap * sizeof(*f))))
		return -1;
	st->free_slots = f;
	if (st->ext_size && st->ext_cap < cap && mms__table_grow(&st->ext, &st->ext_cap, st->ext_cap, st->ext_size))
		return -1;
	return mms__table_grow(&st->blks, &st->blks_cap, st->nblks, sizeof(*st->blks));
}

/* Takes a free slot, the last released first (its lines are the likeliest
 * in the cache); returns its index or -1 when out of memory. */
static inline int64_t slot_new(struct mms__state *st)
{
	uint64_t i;

	if (st->nfree) {
		/* The slot a run of allocations takes some calls later. */
		if (st->nfree > 8)
			__builtin_prefetch(&st->blks[st->free_slots[st->nfree - 8]], 1);
		i = st->free_slots[--st->nfree];
	} else {
		if (st->nblks >= st->blks_cap && mms__state_blks_grow(st))
			return -1;
		i = st->nblks++;
	}
	/* The subscribers' data starts zeroed: most often 8 bytes (one
	 * subscriber's), stored without a call (ext_size is a multiple of
	 * 8, ext aligned). */
	if (st->ext_size == 8)
		*(uint64_t *)(void *)(st->ext + i * 8) = 0;
	else if (st->ext_size)
		memset(st->ext + i * st->ext_size, 0, st->ext_size);
	return (int64_t)i;
}

static inline void slot_release(struct mms__state *st, uint64_t i)
{
	st->blks[i].live = 0;
	st->free_slots[st->nfree++] = (uint32_t)i;
}

void mms__state_unhold(struct mms__state *st, const uint32_t *slots, size_t n)
{
	/* Not live since their free: only their numbers move. */
	if (n)
		memcpy(st->free_slots + st->nfree, slots, n * sizeof(*slots));
	st->nfree += n;
}

/* A mapping's pieces share one slot; the last piece to go frees it. The
 * pieces are counted in mrefs from the second on (a mapping's first split
 * makes its entry): most mappings are never split, and have none. */
int mms__state_map_piece(struct mms__state *st, uint64_t slot)
{
	uint64_t *n = mms__map_put(&st->mrefs, slot, NULL);

	if (!n)
		return -ENOMEM;
	*n = *n ? *n + 1 : 2;
	return 0;
}

/* The interval set's callback: +1 when a range of the mapping in slot
 * splits, -1 when one goes. */
static int map_ref(void *ctx, uint64_t slot, int delta)
{
	struct mms__state *st = ctx;
	uint64_t *n;

	if (delta > 0)
		return mms__state_map_piece(st, slot);
	n = mms__map_get(&st->mrefs, slot);
	if (n && --*n > 1)
		return 0;
	if (n)
		mms__map_del(&st->mrefs, slot, NULL);
	else
		slot_release(st, slot);
	return 0;
}

/* The state of a thread: events number their threads below the log's
 * thread count (log.c renumbers them), which bounds the table. */
static struct mms__tstate *thread_grow(struct mms__state *st, uint32_t thread)
{
	size_t n;
	struct mms__tstate *t;

	n = st->log->nthreads > thread ? st->log->nthreads : (size_t)thread + 1;
	t = realloc(st->threads, n * sizeof(*t));
	if (!t)
		return NULL;
	memset(t + st->nthreads, 0, (n - st->nthreads) * sizeof(*t));
	st->threads = t;
	st->nthreads = n;
	return &t[thread];
}

static inline struct mms__tstate *thread_state(struct mms__state *st, uint32_t thread)
{
	return thread < st->nthreads ? &st->threads[thread] : thread_grow(st, thread);
}

/* --- applying events -------------------------------------------------------- */

static void kind_add(struct mms__state *st, mms_kind_summary_t *k, uint64_t size)
{
	uint64_t total;

	k->live_bytes += size;
	if (k->live_bytes > k->peak_bytes)
		k->peak_bytes = k->live_bytes;
	total = mms__state_live_total(st);
	if (total > st->peak_total)
		st->peak_total = total;
}

/* blk_origin()'s lookup, when the thread's index will not do. */
static __attribute__((noinline)) int64_t origin_find(struct mms__state *st, const mms_event_t *ev,
						     struct mms__tstate *t, int named)
{
	struct mms__origin o = { 0 };
	char name[16] = "cuda:";
	int64_t i;

	o.op = t->nops ? t->ops[t->nops - 1].name : NULL;
	o.owner = t->owner;
	o.thread = ev->thread;
	o.device = ev->device > UINT8_MAX ? UINT8_MAX : (uint8_t)ev->device;
	if (ev->mem == MMS_MEM_POOL) {
		o.pool = ev->name ? ev->name : "";
	} else if (ev->mem == MMS_MEM_DEVICE) {
		/* A DEVICE block's device, named as PyTorch names it
		 * ("cuda:1"), as its pool: the analyses that tell pools apart
		 * (decompose) tell devices apart so. */
		o.pool = mms__state_owner(st, name, 5 + mms__dec(name + 5, o.device));
		if (!o.pool)
			return -ENOMEM;
	}
	i = mms__state_origin(st, &o);
	if (i < 0)
		return -ENOMEM;
	if (!named) {
		t->origin = (uint32_t)i;
		t->origin_ok = 1;
	}
	return i;
}

/* The origin of a block a MALLOC event allocates on thread t: an index
 * that the thread keeps while its operator and owner stay, for HOST and
 * MMAP blocks; or -ENOMEM. */
static inline int64_t blk_origin(struct mms__state *st, const mms_event_t *ev, struct mms__tstate *t)
{
	int named = ev->mem == MMS_MEM_POOL || ev->mem == MMS_MEM_DEVICE || ev->device;

	return !named && t->origin_ok ? t->origin : origin_find(st, ev, t, named);
}

/* Fills the new slot b from a MALLOC event, the last event's block.
 * Returns 0 or -ENOMEM (b untouched). */
static inline __attribute__((always_inline)) int blk_fill(struct mms__state *st, struct mms__blk *b,
							  const mms_event_t *ev, struct mms__tstate *t)
{
	int64_t origin = blk_origin(st, ev, t);
	uint8_t runtime = 0;

	if (origin < 0)
		return -ENOMEM;
	if (ev->mem == MMS_MEM_HOST) {
		/* A block a runtime keeps for itself, or what a realloc of
		 * one (a thread's TLS vector growing) made of it. */
		runtime = ev->runtime <= MMS_RT_STDIO || ev->runtime == MMS_RT_SELF || ev->runtime == MMS_RT_LOADER ||
					  ev->runtime == MMS_RT_CUDA || ev->runtime == MMS_RT_PYIMPORT
				  ? (uint8_t)ev->runtime
				  : 0;
		if (!runtime && ev->sub == MMS_ALLOC_REALLOC)
			runtime = t->realloc_runtime;
		t->realloc_runtime = 0;
	} else if (ev->mem == MMS_MEM_MMAP && ev->runtime == MMS_RT_CUDA) {
		runtime = MMS_RT_CUDA; /* the driver's own mapping */
	}
	*b = (struct mms__blk){
		.addr = ev->addr,
		.size = ev->size,
		.time_ns = ev->time_ns,
		.alloc_id = ++st->alloc_ids,
		.alloc_event = ev->id,
		.op_launch = t->nops ? t->ops[t->nops - 1].launch : 0,
		.kernels = st->kernel_launches,
		/* Between "step start" ranges a block is in no step. */
		.step = st->step_kind == 2 ? (st->in_range ? (uint32_t)st->ranges_seen : 0) : (uint32_t)st->steps_seen,
		.origin = (uint32_t)origin,
		.stack = ev->stack,
		.mem = (uint8_t)ev->mem,
		.fn = (uint8_t)ev->sub,
		.runtime = runtime,
		.live = 1,
	};
	st->last_blk = b;
	st->last_free_event = UINT64_MAX;
	st->last_blk_valid = 1;
	st->last_slot = b - st->blks;
	st->blk_events++;
	return 0;
}

static void last_set(struct mms__state *st, const struct mms__blk *b, uint64_t free_event)
{
	st->last_blk = b;
	st->last_free_event = free_event;
	st->last_blk_valid = 1;
	st->last_slot = b - st->blks;
}

/* --- recent frees ------------------------------------------------------------ */

/* Takes the ring's next entry for a free, the oldest going when it is
 * full, and indexes it under addr when the ring is indexed. Returns the
 * entry to fill, or NULL when out of memory. */
static inline struct mms__freed *freed_next(struct mms__state *st, uint64_t addr)
{
	uint64_t *v, slot;

	if (!st->freed && !(st->freed = malloc(MMS__RECENT_FREES * sizeof(*st->freed))))
		return NULL;
	if (st->nfreed == MMS__RECENT_FREES) {
		/* The oldest goes, and its address with it unless a later
		 * free of it took its place; the new one takes its entry. */
		slot = st->freed_head;
		if (st->freed_indexed)
			mms__map_del_if(&st->freed_ix, st->freed[slot].addr, slot);
		st->freed_head = (slot + 1) % MMS__RECENT_FREES;
	} else {
		slot = (st->freed_head + st->nfreed++) % MMS__RECENT_FREES;
	}
	if (st->freed_indexed) {
		v = mms__map_put(&st->freed_ix, addr, NULL);
		if (!v) {
			st->nfreed--; /* the entry is not the ring's */
			return NULL;
		}
		*v = slot;
	}
	return &st->freed[slot];
}

int mms__state_freed_add(struct mms__state *st, const struct mms__freed *f)
{
	struct mms__freed *n = freed_next(st, f->addr);

	if (!n)
		return -ENOMEM;
	*n = *f;
	return 0;
}

/* --- the keyed tables and the events' application ----------------------------- */

int mms__state_slot_put(struct mms__state *st, struct mms__slotmap *m, uint64_t addr, uint64_t slot)
{
	uint32_t hash = mms__slotmap_hash(addr);

	if (mms__slotmap_reserve(m))
		return -ENOMEM;
	mms__slotmap_set(m, mms__slotmap_find(m, addr, hash, st->blks, sizeof(*st->blks)), hash, (uint32_t)slot);
	return 0;
}

/* An allocation keyed by address in table m (HOST or one pool). */
static inline __attribute__((always_inline)) int keyed_alloc_in(struct mms__state *st, struct mms__slotmap *m,
								const mms_event_t *ev, struct mms__tstate *t)
{
	mms_kind_summary_t *k = &st->mem[ev->mem];
	uint32_t hash = mms__slotmap_hash(ev->addr);
	struct mms__slotmap_ent *e;
	int64_t slot;
	int isnew;

	if (mms__slotmap_reserve(m))
		return -ENOMEM;
	e = mms__slotmap_find(m, ev->addr, hash, st->blks, sizeof(*st->blks));
	isnew = !e->slot1;
	if (!isnew) {
		/* The address is already live: the ordering rule says this
		 * cannot happen; count it and let the new block replace it. */
		if (!st->double_allocs++)
			st->double_alloc_first = st->pos;
		k->live_bytes -= st->blks[e->slot1 - 1].size;
		slot_release(st, e->slot1 - 1);
	}
	slot = slot_new(st);
	if (slot >= 0 && blk_fill(st, &st->blks[slot], ev, t)) {
		slot_release(st, (uint64_t)slot);
		slot = -1;
	}
	if (slot < 0) {
		if (!isnew)
			mms__slotmap_erase(m, e);
		return -ENOMEM;
	}
	/* slot_new() may have moved blks, not the map: e is still valid. */
	mms__slotmap_set(m, e, hash, (uint32_t)slot);
	k->allocs++;
	k->bytes_allocated += ev->size;
	kind_add(st, k, ev->size);
	k->live_blocks = m == &st->host || m == &st->dev ? m->count : k->live_blocks + isnew;
	return 0;
}

/* A heap block b released by ev, when the block's function or the
 * release's is a C++ operator: a mismatched free when their families
 * differ, unless one is the malloc family and a module of the log calls
 * its own operators (unchecked then). */
static __attribute__((noinline, cold)) void cxx_free(struct mms__state *st, const struct mms__blk *b,
						     const mms_event_t *ev)
{
	unsigned a = mms__alloc_family(b->fn), f = mms__free_family(ev->sub);

	if (a == f)
		return;
	/* new and malloc are the same to a module with its own operators:
	 * malloc'd here may be its new's. */
	if ((!a || !f) && mms__log_own_operators(st->log))
		st->unchecked_frees++;
	else
		mms__state_free_mismatched(st, b);
}

/* heap: the table is the heap's (HOST), whose blocks and frees name their
 * functions. */
static inline __attribute__((always_inline)) int keyed_free_in(struct mms__state *st, struct mms__slotmap *m,
							       const mms_event_t *ev, const char *pool, int heap)
{
	mms_kind_summary_t *k = &st->mem[ev->mem];
	const struct mms__blk *b;
	struct mms__freed *f;
	int64_t slot;

	k->frees++;
	slot = mms__slotmap_del(m, ev->addr, st->blks, sizeof(*st->blks));
	if (slot < 0)
		return mms__state_free_unmatched(st, ev, pool);
	b = &st->blks[slot];
	k->live_bytes -= b->size;
	k->live_blocks--;
	/* A block made by new freed by free, by new[] freed by delete, ... */
	if (heap && __builtin_expect(b->fn >= MMS_FN_NEW || ev->sub >= MMS_FN_DELETE, 0))
		cxx_free(st, b, ev);
	last_set(st, b, ev->id);
	st->blk_events++;
	/* Filled in place: a copy of a struct just built would wait on
	 * its stores. */
	f = freed_next(st, b->addr);
	if (f) {
		f->addr = b->addr;
		f->size = b->size;
		f->alloc_event = b->alloc_event;
		f->free_event = ev->id;
		f->pool = pool;
		f->stack = b->stack;
		f->free_stack = ev->stack;
		f->mem = b->mem;
	}
	slot_release(st, (uint64_t)slot);
	return f ? 0 : -ENOMEM;
}

/* The two out of line, for device and pool blocks; heap blocks, most
 * events, take them inline (apply_memory()). */
static __attribute__((noinline)) int keyed_alloc(struct mms__state *st, struct mms__slotmap *m, const mms_event_t *ev,
						 struct mms__tstate *t)
{
	return keyed_alloc_in(st, m, ev, t);
}

static __attribute__((noinline)) int keyed_free(struct mms__state *st, struct mms__slotmap *m, const mms_event_t *ev,
						const char *pool)
{
	return keyed_free_in(st, m, ev, pool, 0);
}

static struct mms__pool *pool_get(struct mms__state *st, const char *name)
{
	struct mms__pool *p;
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
	mms__slotmap_init(&p->live);
	return p;
}

static int apply_mmap(struct mms__state *st, const mms_event_t *ev, struct mms__tstate *t)
{
	mms_kind_summary_t *k = &st->mem[MMS_MEM_MMAP];
	uint64_t hi = ev->addr + ev->size < ev->addr ? UINT64_MAX : ev->addr + ev->size;
	uint64_t bytes, had = 0;
	size_t i;
	int64_t slot;
	int rc;

	/* States are copied whole (a checkpoint restored into a replay):
	 * point the callback at this one. */
	st->maps.ctx = st;
	if (ev->sub != MMS_MAP_MMAP) {
		/* mprotect, or a mapping made with PROT_NONE: memory changes
		 * only where access does (opening what is open already, as a
		 * JIT's RW -> RX, changes nothing). */
		had = mms__ivset_covered(&st->maps, ev->addr, hi);
		if (ev->kind == MMS_EV_MALLOC ? had == hi - ev->addr : !had) {
			st->last_blk_valid = 0;
			return 0;
		}
	}
	if (ev->kind == MMS_EV_MALLOC) {
		slot = slot_new(st);
		if (slot < 0)
			return -ENOMEM;
		if (blk_fill(st, &st->blks[slot], ev, t)) {
			slot_release(st, (uint64_t)slot);
			return -ENOMEM;
		}
		/* A mapping past the top of the address space (only a damaged
		 * log has one) ends there, and counts what it covers. */
		st->blks[slot].size = hi - ev->addr;
		rc = mms__ivset_add_val(&st->maps, ev->addr, hi, (uint64_t)slot, &bytes);
		if (rc) {
			st->last_blk_valid = 0;
			slot_release(st, (uint64_t)slot);
			return rc;
		}
		k->live_bytes -= bytes;
		k->allocs++;
		/* What an mprotect opened: only the bytes that had no access. */
		k->bytes_allocated += hi - ev->addr - had;
		kind_add(st, k, hi - ev->addr);
	} else {
		/* Unmapping what was never mapped is legal (and common for
		 * mappings made before recording began): not unmatched. The
		 * block reported is the first mapping the range takes from
		 * (a reservation unmapped whole begins where none is). */
		k->frees++;
		i = mms__ivset_first_after(&st->maps, ev->addr);
		if (i < st->maps.n && st->maps.iv[i].lo < hi) {
			last_set(st, &st->blks[st->maps.iv[i].val], ev->id);
			st->blk_events++;
			st->last_piece = *st->last_blk;
			st->last_piece.size = ev->size;
			st->last_blk = &st->last_piece;
		}
		rc = mms__ivset_remove(&st->maps, ev->addr, hi, &bytes);
		if (rc)
			return rc;
		k->live_bytes -= bytes;
	}
	k->live_blocks = st->maps.n;
	return 0;
}

/* A FREE of the heap. */
static inline __attribute__((always_inline)) int host_free_in(struct mms__state *st, const mms_event_t *ev,
							      struct mms__tstate *t)
{
	int rc;

	/* free(NULL) does nothing; valgrind does not count it either. */
	if (!ev->addr)
		return 0;
	t->realloc_runtime = 0;
	rc = keyed_free_in(st, &st->host, ev, NULL, 1);
	/* (A realloc outside a module's import makes the program's block.) */
	if (ev->sub == MMS_FREE_REALLOC && st->last_blk_valid)
		t->realloc_runtime = (uint8_t)mms__blk_runtime_now(st->last_blk);
	return rc;
}

static __attribute__((noinline)) int host_free(struct mms__state *st, const mms_event_t *ev, struct mms__tstate *t)
{
	return host_free_in(st, ev, t);
}

static int apply_memory(struct mms__state *st, const mms_event_t *ev, struct mms__tstate *t)
{
	struct mms__pool *p;

	if (ev->mem == MMS_MEM_MMAP)
		return apply_mmap(st, ev, t);
	if (ev->mem == MMS_MEM_DEVICE) {
		if (ev->kind != MMS_EV_MALLOC)
			return ev->addr ? keyed_free(st, &st->dev, ev, NULL) : 0;
		return keyed_alloc(st, &st->dev, ev, t);
	}
	if (ev->mem == MMS_MEM_POOL) {
		p = pool_get(st, ev->name);
		if (!p)
			return -ENOMEM;
		if (ev->kind == MMS_EV_MALLOC)
			return keyed_alloc(st, &p->live, ev, t);
		return keyed_free(st, &p->live, ev, p->name);
	}
	/* The heap's events come here only as a thread's first event:
	 * mms__state_apply() takes the others inline. */
	if (ev->kind == MMS_EV_MALLOC)
		return keyed_alloc(st, &st->host, ev, t);
	return host_free(st, ev, t);
}

static int apply_op(struct mms__state *st, const mms_event_t *ev, struct mms__tstate *t)
{
	if (ev->sub == 1) {
		/* An end without a begin (recording started inside the
		 * operator) ends nothing. */
		st->ended_op = t->nops ? t->ops[--t->nops].name : NULL;
		t->origin_ok = 0;
		return 0;
	}
	if (mms__grow(&t->ops, &t->ops_cap, t->nops, sizeof(*t->ops)))
		return -ENOMEM;
	t->ops[t->nops].name = ev->name;
	t->ops[t->nops].launch = ++st->op_launches;
	t->nops++;
	t->origin_ok = 0;
	return 0;
}

/* msmemscope_owner_tag(): the live block containing the address takes
 * the owner; the last event's block is it, and last_old_owner its owner
 * before, so that a subscriber sees what moved (decompose). */
static int apply_owner_tag(struct mms__state *st, const mms_event_t *ev)
{
	struct mms__blk *b = (struct mms__blk *)mms__state_find(st, ev->addr);
	const char *name = ev->name ? ev->name : "";
	struct mms__origin o;
	int64_t i;

	if (!b)
		return 0;
	o = *mms__blk_origin(st, b);
	st->last_old_owner = o.owner;
	o.owner = mms__state_owner(st, name, strlen(name));
	if (!o.owner || (i = mms__state_origin(st, &o)) < 0)
		return -ENOMEM;
	last_set(st, b, UINT64_MAX);
	b->origin = (uint32_t)i;
	return 0;
}

static int apply_owner(struct mms__state *st, const mms_event_t *ev, struct mms__tstate *t)
{
	if (ev->sub == MMS_OWNER_TAG)
		return apply_owner_tag(st, ev);
	if (ev->sub == 1) {
		if (!t->ntags)
			return 0;
		t->ntags--;
	} else {
		if (mms__grow(&t->tags, &t->tags_cap, t->ntags, sizeof(*t->tags)))
			return -ENOMEM;
		t->tags[t->ntags++] = ev->name ? ev->name : "";
	}
	return mms__state_owner_join(st, t);
}

static void apply_mstx(struct mms__state *st, const mms_event_t *ev)
{
	if (ev->sub == 1 && ev->name && !strcmp(ev->name, "step start")) {
		/* Whichever way of marking steps comes first is the one used. */
		if (!st->step_kind)
			st->step_kind = 2;
		st->ranges_seen++;
		st->step_range_id = ev->range_id;
		st->in_range = 1;
	} else if (ev->sub == 2 && st->in_range && ev->range_id == st->step_range_id) {
		st->in_range = 0;
	}
}

/* Collection at the log's start, as its configuration says (the first
 * event comes after it): the recorder writes a COLLECT record only where
 * that changes, or at a fork child's start. */
static __attribute__((noinline, cold)) void collect_init(struct mms__state *st)
{
	mms_config_t cfg;
	int step1 = 0;

	st->collect = MMS__COLLECT_KNOWN;
	if (mms_log_config(st->log, &cfg))
		return;
	for (uint32_t i = 0; i < cfg.nsteps; i++)
		step1 |= cfg.steps[i] == 1;
	if (cfg.deferred)
		st->collect |= MMS__OFF_PROGRAM;
	if (cfg.nsteps && !step1)
		st->collect |= MMS__OFF_STEPS;
}

int mms__state_apply(struct mms__state *st, const mms_event_t *ev)
{
	struct mms__tstate *t;

	st->pos = ev->id + 1;
	st->last_blk_valid = 0;
	st->last_bad_free = 0;
	st->last_thread = ev->thread;
	if (ev->mem == MMS_MEM_HOST && (unsigned)(ev->kind - MMS_EV_MALLOC) < 2 && ev->thread < st->nthreads) {
		/* The heap's events, most of any log, straight to their
		 * table: a thread the state knows is one of the log's. */
		st->by_kind[ev->kind]++;
		st->after_step = 1;
		t = &st->threads[ev->thread];
		if (ev->kind == MMS_EV_MALLOC)
			return keyed_alloc_in(st, &st->host, ev, t);
		return host_free_in(st, ev, t);
	}
	if (ev->kind < MMS_EV_KIND_COUNT)
		st->by_kind[ev->kind]++;
	if (ev->kind != MMS_EV_SYSTEM && ev->kind != MMS_EV_STEP)
		st->after_step = 1;
	if (__builtin_expect(!st->collect, 0))
		collect_init(st);
	if (ev->thread >= st->log->nthreads)
		return MMS_ECORRUPT; /* not from this log's iterator */
	t = thread_state(st, ev->thread);
	if (!t)
		return -ENOMEM;
	switch (ev->kind) {
	case MMS_EV_MALLOC:
	case MMS_EV_FREE:
		return apply_memory(st, ev, t);
	case MMS_EV_ACCESS:
	case MMS_EV_WATCH: {
		const struct mms__blk *b;

		if (ev->kind == MMS_EV_WATCH && ev->sub != MMS_WATCH_REGISTER)
			return 0; /* a checksum the recorder took: no use by the program */
		b = mms__state_find(st, ev->addr);
		if (b)
			last_set(st, b, UINT64_MAX);
		return 0;
	}
	case MMS_EV_OP_LAUNCH:
		return apply_op(st, ev, t);
	case MMS_EV_KERNEL_LAUNCH:
		st->kernel_launches++;
		return 0;
	case MMS_EV_STEP:
		/* A step the recorder inferred counts only where the
		 * program marks none itself. */
		if (!mms__log_step_counts(st->log, ev->sub))
			return 0;
		if (!st->step_kind)
			st->step_kind = 1;
		st->steps_seen++;
		st->after_step = 0;
		return 0;
	case MMS_EV_MSTX:
		apply_mstx(st, ev);
		return 0;
	case MMS_EV_COLLECT: {
		unsigned why = ev->flags ? MMS__OFF_STEPS : MMS__OFF_PROGRAM;

		if (!ev->sub)
			st->gap_event = ev->id + 1;
		st->collect = ev->sub ? st->collect & ~why : st->collect | why;
		return 0;
	}
	case MMS_EV_OWNER:
		return apply_owner(st, ev, t);
	default:
		return 0;
	}
}

/* --- a fork child's start ------------------------------------------------------ */

/* Adds inherited block i (alloc_id i + 1) as a live block. */
static int inherit_blk(struct mms__state *st, size_t i)
{
	const struct mms__inherit *inh = &st->log->inh;
	const struct mms__iblk *ib = &inh->blks[i];
	const char *owner = mms__inherit_str(inh, ib->owner), *pool = mms__inherit_str(inh, ib->pool);
	struct mms__slotmap *m = &st->host;
	struct mms__origin o = { 0 };
	struct mms__blk *b;
	struct mms__pool *p;
	uint64_t bytes;
	int64_t slot, origin;

	/* Names are interned as the state's own, which checkpoints keep. */
	if (owner && !(owner = mms__state_owner(st, owner, strlen(owner))))
		return -ENOMEM;
	if (ib->mem == MMS_MEM_POOL) {
		if (!(pool = mms__state_owner(st, pool ? pool : "", pool ? strlen(pool) : 0)) ||
		    !(p = pool_get(st, pool)))
			return -ENOMEM;
		m = &p->live;
	}
	o.owner = owner;
	o.pool = ib->mem == MMS_MEM_POOL ? pool : NULL;
	origin = mms__state_origin(st, &o);
	if (origin < 0)
		return -ENOMEM;
	slot = slot_new(st);
	if (slot < 0)
		return -ENOMEM;
	b = &st->blks[slot];
	memset(b, 0, sizeof(*b));
	b->addr = ib->addr;
	b->size = ib->size;
	b->alloc_id = i + 1;
	b->stack = ib->stack;
	b->mem = (uint8_t)ib->mem;
	b->fn = ib->fn;
	b->runtime = ib->runtime;
	b->origin = (uint32_t)origin;
	b->live = 1;
	if (ib->mem == MMS_MEM_MMAP) {
		st->maps.ctx = st;
		if (mms__ivset_add_val(&st->maps, ib->addr, ib->addr + ib->size, (uint64_t)slot, &bytes)) {
			slot_release(st, (uint64_t)slot);
			return -ENOMEM;
		}
		return 0;
	}
	if (mms__state_slot_put(st, m, ib->addr, (uint64_t)slot)) {
		slot_release(st, (uint64_t)slot);
		return -ENOMEM;
	}
	return 0;
}

int mms__state_seed(struct mms__state *st)
{
	const struct mms__inherit *inh = &st->log->inh;
	struct mms__owners *ow = st->ow;
	mms_log_t *log = st->log;
	uint64_t total = 0;
	size_t i;
	int k;

	if (inh->state != MMS_FORK_INHERITED)
		return 0;
	for (i = 0; i < inh->n; i++) {
		if (inherit_blk(st, i)) {
			mms__state_free(st);
			mms__state_init(st, log);
			if (ow != &st->own)
				st->ow = ow;
			return -ENOMEM;
		}
	}
	/* What it inherited is live, not allocated, in the child. */
	for (k = 0; k < MMS_MEM_KIND_COUNT; k++) {
		st->mem[k].live_blocks = k == MMS_MEM_MMAP ? st->maps.n : inh->blocks[k];
		st->mem[k].live_bytes = st->mem[k].peak_bytes = inh->bytes[k];
		total += inh->bytes[k];
	}
	st->peak_total = total;
	st->alloc_ids = inh->n;
	st->step_kind = inh->step_kind;
	st->steps_seen = inh->steps_seen;
	st->ranges_seen = inh->ranges_seen;
	st->in_range = inh->in_range;
	st->step_range_id = inh->step_range_id;
	return 0;
}

void mms__state_expect_whole(struct mms__state *st)
{
	const mms_log_t *log = st->log;
	uint64_t n = log->live_peak_est > 0 ? (uint64_t)log->live_peak_est : 0;

	if (log->inh.state == MMS_FORK_INHERITED)
		n += log->inh.n;
	if (n <= SIZE_MAX)
		st->host.hint = (size_t)n;
}

int mms__state_start(struct mms__state *st, mms_log_t *log)
{
	mms__state_init(st, log);
	return mms__state_seed(st);
}
