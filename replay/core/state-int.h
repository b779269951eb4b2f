/* SPDX-License-Identifier: MIT */
/* state-int.h: the heap state a replay drives (state.c applies the events,
 * state-query.c reads the state; summary.c, runtime.c), with the prefetch
 * helpers the iterator calls inline. */
#ifndef MMS_STATE_INT_H
#define MMS_STATE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope/log.h"
#include "msmemscope/replay.h"
#include "msmemscope/summary.h"
#include "log-int.h"
#include "map-int.h"
#include "slotmap-int.h"
#include "intervals-int.h"

/* --- heap state (state.c, state-query.c) --------------------------------
 * What replaying events up to a position leaves: live blocks with their
 * origin, per-thread operator and owner stacks, step and launch counters,
 * and the running figures. Everything here is saved in checkpoints
 * (checkpoint.c), so each field must be serializable: names are pointers
 * into the log's string arena or the state's owner strings. */

/* What many blocks share of where they came from: their thread, and the
 * names current there (operator, owner, and the pool's or device's).
 * Interned once per replay among its owner strings (struct mms__owners),
 * a block keeps the index: mms__blk_origin() reads it. */
struct mms__origin {
	const char *op, *owner, *pool; /* pool: POOL, the pool's name; DEVICE, the
	                                  device's ("cuda:1"); NULL otherwise */
	uint32_t thread;
	uint8_t device;          /* DEVICE: the CUDA device ordinal (255 for 255 and above) */
};

/* A block slot: 64 bytes, one cache line of the slot array (which is
 * aligned), the one line a replay reads of a block at its free. */
struct mms__blk {
	uint64_t addr, size;
	uint64_t time_ns; /* of the allocation (0: inherited at a fork) */
	/* Counters of the log's events (allocations, events, operator and
	 * kernel launches) in 48 bits each, packed (three words for four):
	 * event ids count from 0 and a log of 2^48 events would be
	 * petabytes, replayed in months (a checkpoint that says more is
	 * damaged). GCC reads a field with two loads at most; its address
	 * cannot be taken. */
	struct __attribute__((packed)) {
		uint64_t alloc_id : 48, alloc_event : 48;
		uint64_t op_launch : 48, kernels : 48;
	};
	uint32_t step;           /* by the state's step kind at the allocation: STEP
	                            events before it (1), or the "step start" range it
	                            was allocated in, 0 = none (2); 0 while unknown.
	                            mms__state_blk_step() reads it. */
	uint32_t origin;         /* index of its struct mms__origin, 0 = none */
	uint32_t stack;
	uint8_t mem;             /* enum mms_mem_kind */
	uint8_t fn;              /* HOST: enum mms_alloc_func; DEVICE: enum mms_device_sub */
	uint8_t runtime;         /* HOST: enum mms_runtime_kind of a block a runtime keeps
	                            for itself (ALLOC_RT), 0 = the program's; or
	                            MMS_RT_PYIMPORT, the program's until the end
	                            (mms__blk_runtime_now()) */
	uint8_t live;            /* 0 = free slot (MMAP: the ranges sharing it are
	                            counted in the state's mrefs) */
};

/* The family of a heap block's allocating function (enum mms_alloc_func)
 * and of a releasing one (enum mms_free_func): 0 the malloc family, 1 new
 * and delete, 2 new[] and delete[]. */
static inline unsigned mms__alloc_family(unsigned fn)
{
	return fn >= MMS_FN_NEW ? fn - MMS_FN_NEW + 1 : 0;
}

static inline unsigned mms__free_family(unsigned fn)
{
	return fn >= MMS_FN_DELETE ? fn - MMS_FN_DELETE + 1 : 0;
}

/* The runtime that keeps b for itself during the run (enum mms_runtime, 0:
 * the program): what a module's import allocated (MMS_RT_PYIMPORT) is the
 * program's until the end, where mms__blk_runtime_at_end() tells. */
static inline unsigned mms__blk_runtime_now(const struct mms__blk *b)
{
	return b->runtime == MMS_RT_PYIMPORT ? 0 : b->runtime;
}

/* An operator running on a thread. */
struct mms__op {
	const char *name;
	uint64_t launch;
};

struct mms__tstate {
	struct mms__op *ops;     /* nested operator launches, innermost last */
	size_t nops, ops_cap;
	const char **tags;       /* owner tags pushed, innermost last */
	size_t ntags, tags_cap;
	const char *owner;       /* the tags joined by '@' (interned), or NULL */
	uint32_t origin;         /* of a HOST or MMAP block allocated now, when origin_ok */
	int origin_ok;           /* origin is current: reset when an operator or owner changes */
	uint8_t realloc_runtime; /* the runtime kind of the block this thread's last
	                            realloc freed: its new block keeps it */
};

struct mms__pool {
	const char *name;        /* in the log's arena; "" when unnamed */
	struct mms__slotmap live; /* addr -> block slot */
};

/* Interned owner strings (tags joined by '@'), and the blocks' origins. */
struct mms__owners {
	struct mms__map ix;      /* hash of a string -> index in strs + 1 */
	char **strs;
	size_t n, cap;
	struct mms__map oix;     /* hash of an origin -> its index */
	struct mms__origin *origins; /* [0] = none: no names, thread 0 */
	size_t norigins, origins_cap;
};

void mms__owners_free(struct mms__owners *o);
/* The index in o->strs of s, one of its strings (a pointer it handed out),
 * or UINT64_MAX. */
uint64_t mms__owners_index(const struct mms__owners *o, const char *s);

/* A block freed recently. */
struct mms__freed {
	uint64_t addr, size;
	uint64_t alloc_event, free_event;
	const char *pool;            /* POOL: the pool's name as the state has it */
	uint32_t stack;
	uint32_t free_stack;         /* the free's own stack (0: none recorded) */
	uint16_t mem;
};

#define MMS__RECENT_FREES 4096

/* mms__state.collect */
#define MMS__OFF_PROGRAM 1u /* collect=deferred: before msmemscope_start(), after _stop() */
#define MMS__OFF_STEPS 2u   /* a step --steps left out */
#define MMS__COLLECT_KNOWN 4u

struct mms__state {
	mms_log_t *log;
	uint64_t pos;            /* events applied */
	int step_kind;           /* 0 unknown, 1 STEP events, 2 "step start" ranges */
	int step_kind_hint;      /* the log's kind when known in advance (index) */
	uint64_t steps_seen, ranges_seen;
	uint64_t step_range_id;  /* the open "step start" range */
	int in_range;
	int after_step;          /* an event since the last STEP */
	uint64_t op_launches, kernel_launches, alloc_ids;
	mms_kind_summary_t mem[MMS_MEM_KIND_COUNT];
	uint64_t by_kind[MMS_EV_KIND_COUNT];
	uint64_t peak_total;
	uint64_t unmatched_frees, double_allocs;
	/* The position after the first double alloc, while double_allocs
	 * counts from 0 (a checkpoint does not keep it). */
	uint64_t double_alloc_first;
	uint64_t double_frees, invalid_frees; /* unmatched frees, told apart */
	uint64_t mismatched_frees;            /* heap blocks released by another family's
	                              function (delete of new[], free of new, ...) */
	/* The id + 1 of the last COLLECT stop event (msmemscope_stop(), the
	 * end of a step --steps recorded), 0 while none: a block allocated
	 * before it may have been freed while nothing was recorded
	 * (mms__blk_before_gap()). */
	uint64_t gap_event;
	/* The log was recorded in parts (collect=deferred, --steps): a free
	 * of no live block may release a block allocated while nothing was
	 * recorded, and counts in unrecorded_frees, not as a bad free. 1 yes,
	 * -1 no, 0 not known yet (read at the first such free: badfree.c). */
	int parts;
	/* Whether collection is on now: 0 not known yet (read from the
	 * log's configuration at its first event that is not the heap's),
	 * else MMS__COLLECT_KNOWN | MMS__OFF_* for each reason it is off. */
	unsigned collect;
	uint64_t unrecorded_frees;
	uint64_t unchecked_frees;             /* releases between the malloc and a C++
	                              family in a log with a module that calls its
	                              own operators (mms__log_own_operators()) */
	/* MALLOC and FREE events that had a block (last_blk_valid), since
	 * the state started or was restored: only differences mean
	 * anything (a checkpoint does not keep it). */
	uint64_t blk_events;
	uint32_t last_thread;
	const char *ended_op;    /* the operator the last OP_LAUNCH end ended */

	struct mms__blk *blks;   /* slots */
	size_t nblks, blks_cap;
	uint32_t *free_slots;    /* free slots, the next to take last (room for blks_cap) */
	size_t nfree;
	/* Bytes per slot that the subscribers of a pass keep for each live
	 * block (mms__pass_attach()), zeroed when a slot is taken: ext_size
	 * bytes per slot, 0 when none is kept. */
	uint8_t *ext;
	size_t ext_size, ext_cap;
	struct mms__slotmap host; /* addr -> slot */
	struct mms__slotmap dev; /* DEVICE blocks, of every device: addr -> slot (CUDA
	                            addresses are unique across devices) */
	struct mms__ivset maps;  /* MMAP ranges, val = slot */
	struct mms__map mrefs;   /* MMAP slot -> ranges sharing it (pieces of a
	                            mapping partly unmapped) */
	struct mms__pool *pools;
	size_t npools, pools_cap;
	struct mms__tstate *threads; /* by thread index */
	size_t nthreads;

	/* Owner strings: a replay shares one table among all its states,
	 * so strings it hands out outlive seeks; a lone state uses own. */
	struct mms__owners *ow;
	struct mms__owners own;

	/* The last event's block, for mms_replay_event_block(). */
	/* The last event's block, when last_blk_valid: its slot (a freed
	 * block's slot keeps its fields until the next event takes it), or
	 * last_piece for the part of a mapping an munmap removed. Valid
	 * until the next event is applied. */
	const struct mms__blk *last_blk;
	struct mms__blk last_piece;
	uint64_t last_free_event;
	int last_blk_valid;
	int64_t last_slot;           /* last_blk's slot, or -1 */
	/* When the last event was an OWNER tag (msmemscope_owner_tag) of
	 * last_blk: the owner the block had before it, now replaced. */
	const char *last_old_owner;

	/* The last frees of HOST and POOL blocks, oldest first in a ring of
	 * MMS__RECENT_FREES (allocated at the first free), so that a free of
	 * no live block tells a double free from an address that was no
	 * block: bounded, memory still follows the live blocks. */
	struct mms__freed *freed;
	size_t nfreed, freed_head;   /* entries, slot of the oldest */
	/* addr -> slot of its last free in the ring. Built from the ring at
	 * the first free of no live block and kept from then on: a log
	 * without one never pays for it. */
	struct mms__map freed_ix;
	int freed_indexed;
	/* When the last event freed no live block: the double free's earlier
	 * free (double_free), or an invalid free. */
	int last_bad_free;          /* 0 none, else enum mms_bad_free_kind */
	struct mms__freed bad_prev; /* the earlier free of a double one; the block
	                                of a mismatched one */
	unsigned bad_alloc_fn;      /* a mismatched one: the block's enum mms_alloc_func */
	/* While the state is frozen (mms__state_freeze()): the slots of
	 * its live blocks (not mappings), ascending, which
	 * mms__state_each() walks in place of every slot. */
	uint32_t *live_ix;
	size_t nlive_ix;
};

/* Makes room for one more slot at st->blks[st->nblks]. Returns 0 or -1
 * (out of memory). */
int mms__state_blks_grow(struct mms__state *st);
/* An empty state (what a checkpoint is restored into). */
void mms__state_init(struct mms__state *st, mms_log_t *log);
/* Makes an empty state the state at position 0 of its log: for a fork
 * child, the blocks it inherited (log->inh), numbered alloc_id 1 to n,
 * with their names interned in st->ow. Returns 0, or -ENOMEM with st
 * left empty. */
int mms__state_seed(struct mms__state *st);
/* Before mms__state_seed(), for a replay from position 0 that will
 * likely read the whole log: the live-block table is sized at its first
 * growth for the most live blocks the log is estimated to hold
 * (log->live_peak_est), instead of growing by doubling. */
void mms__state_expect_whole(struct mms__state *st);
/* mms__state_init() and mms__state_seed(): the state at position 0 of
 * log. Returns 0 or -ENOMEM (st then needs no freeing). */
int mms__state_start(struct mms__state *st, mms_log_t *log);
void mms__state_free(struct mms__state *st);
/* Applies one event. Returns 0 or -ENOMEM. */
int mms__state_apply(struct mms__state *st, const mms_event_t *ev);
/* Whether b is a block the state's fork child inherited (live from
 * position 0, allocated in the parent). */
static inline int mms__blk_inherited(const struct mms__state *st, const struct mms__blk *b)
{
	return st->log->inh.state == MMS_FORK_INHERITED && b->alloc_id && b->alloc_id <= st->log->inh.n;
}
/* Whether live block b was allocated before recording last stopped: the
 * program may have freed it since while nothing was recorded. */
static inline int mms__blk_before_gap(const struct mms__state *st, const struct mms__blk *b)
{
	return st->gap_event && b->alloc_event < st->gap_event - 1;
}
/* The step a block was allocated in, under the state's step kind. */
uint64_t mms__state_blk_step(const struct mms__state *st, const struct mms__blk *b);
/* The current step, and whether inside one. */
uint64_t mms__state_step(const struct mms__state *st, int *in_step);
/* Fills a public block from a slot. */
void mms__state_blk_export(const struct mms__state *st, const struct mms__blk *b, mms_block_t *out);
/* The live block containing addr, or NULL; at a start address a pool's
 * block first, the inner one (a tensor at the start of PyTorch's segment). */
const struct mms__blk *mms__state_find(const struct mms__state *st, uint64_t addr);

/* The process's live bytes, the kinds that peaks and steps count
 * together: HOST, MMAP and POOL. CUDA memory (DEVICE), another resource,
 * has its own figures (mem[MMS_MEM_DEVICE]). */
static inline uint64_t mms__state_live_total(const struct mms__state *st)
{
	return st->mem[MMS_MEM_HOST].live_bytes + st->mem[MMS_MEM_MMAP].live_bytes + st->mem[MMS_MEM_POOL].live_bytes;
}
/* The table that keys the live blocks of kind mem by address (for POOL,
 * of the pool named pool, the state's own string); NULL for MMAP, whose
 * mappings are ranges, and for a pool the state does not know. */
const struct mms__slotmap *mms__state_map_of(const struct mms__state *st, unsigned mem, const char *pool);
/* One more piece of the mapping in slot (a second or later: a first
 * piece has no entry in mrefs). Returns 0 or -ENOMEM. */
int mms__state_map_piece(struct mms__state *st, uint64_t slot);
/* Puts slot, whose block starts at addr (its record filled), into table m
 * of st, in place of a block at addr it holds. Returns 0 or -ENOMEM. */
int mms__state_slot_put(struct mms__state *st, struct mms__slotmap *m, uint64_t addr, uint64_t slot);
/* The slot of the live block at addr in table m of st, or -1. */
static inline int64_t mms__state_slot_at(const struct mms__state *st, const struct mms__slotmap *m, uint64_t addr)
{
	return mms__slotmap_get(m, addr, st->blks, sizeof(*st->blks));
}
/* The slot of live block b (a pointer to a slot, or a copy of a live
 * block: found by its start address and allocation), or -1. */
int64_t mms__state_slot_of(const struct mms__state *st, const struct mms__blk *b);
/* Keeps the slot of the block the last event freed out of reuse, its
 * fields and subscriber data as they are, until mms__state_unhold():
 * returns the slot, or -1 when the last event freed none or its slot was
 * taken again. A held slot is not live: mms__state_each() and checkpoints
 * leave it out. */
static inline int64_t mms__state_hold_last(struct mms__state *st)
{
	int64_t s = st->last_slot;

	/* A freed slot is the last of the free ones until an event takes
	 * it. */
	if (!st->last_blk_valid || s < 0 || st->last_blk != &st->blks[s] || st->blks[s].live || !st->nfree ||
	    st->free_slots[st->nfree - 1] != (uint32_t)s)
		return -1;
	st->nfree--;
	return s;
}
/* Whether the state knows how the log marks steps (mms__state_blk_step()
 * says 0 until it does). */
static inline int mms__state_steps_known(const struct mms__state *st)
{
	return st->step_kind_hint || st->step_kind;
}
/* Gives the n held slots at slots back to the free ones. */
void mms__state_unhold(struct mms__state *st, const uint32_t *slots, size_t n);
/* Interns an owner string (NUL-terminated); NULL when out of memory. */
const char *mms__state_owner(struct mms__state *st, const char *s, size_t len);
/* Interns an origin; returns its index, or -1 when out of memory. */
int64_t mms__state_origin(struct mms__state *st, const struct mms__origin *o);

/* The origin of block b of st (names and thread). */
static inline const struct mms__origin *mms__blk_origin(const struct mms__state *st, const struct mms__blk *b)
{
	static const struct mms__origin none;

	return b->origin < st->ow->norigins ? &st->ow->origins[b->origin] : &none;
}
/* runtime.c: the runtime kind (enum mms_runtime_kind) of a block live at
 * the end of the log: its mark, or the log's "runtime_live" list (the
 * standard streams' buffers at exit); 0 for the program's blocks. A walk
 * over the blocks live at the end passes one memo (zeroed before, freed
 * with mms__rtmemo_free() after; NULL: none), which keeps what the walk
 * of each allocation stack through the modules found: a PyTorch
 * program's 700,000 blocks live at exit share a few thousand stacks. */
struct mms__rtmemo {
	uint16_t *by_stack; /* by the stack's index in stack_nodes: 2 bits per question, 0 unknown */
	size_t len;
	struct mms__ivset mods; /* the modules' ranges, each its index (the later wins) */
	int mods_ready;         /* 1: mods holds them; -1: no memory, look one by one */
};
unsigned mms__blk_runtime_at_end(const struct mms__state *st, struct mms__rtmemo *memo, const struct mms__blk *b);
void mms__rtmemo_free(struct mms__rtmemo *memo);
/* reach.c: what heap block b, live at the end of the log, was to the
 * program when it exited (enum mms_reach), from the recorder's scan then;
 * MMS_REACH_UNKNOWN for another kind of block, a state before the end, a
 * log without a whole scan. mms__reach_known(): whether the log has
 * verdicts and st is at its end. */
unsigned mms__blk_reach_at_end(const struct mms__state *st, const struct mms__blk *b);
int mms__reach_known(const struct mms__state *st);
/* Sets out->runtime and out->reach of block b, live at the end: the
 * runtime that keeps it (mms__blk_runtime_at_end), or, for the program's,
 * its verdict; an interpreter's state at exit is its own whatever points
 * to it, and no verdict is asked of it (the graph is built only when one
 * is). */
void mms__blk_at_end(const struct mms__state *st, struct mms__rtmemo *memo, const struct mms__blk *b, mms_block_t *out);

/* The state's figures as a summary (summary.c). */
void mms__state_summary(const struct mms__state *st, mms_summary_t *out);
/* owners.c: recomputes thread t's joined owner string after a push or
 * pop. Returns 0 or -ENOMEM. */
int mms__state_owner_join(struct mms__state *st, struct mms__tstate *t);
/* badfree.c: a free of no live block in table m (HOST, or the pool named
 * pool): counted, and told apart (double or invalid) for
 * mms__state_bad_free(). Returns 0 or -ENOMEM. */
int mms__state_free_unmatched(struct mms__state *st, const mms_event_t *ev, const char *pool);
/* Remembers a free in the ring of recent frees (see struct mms__state).
 * Returns 0 or -ENOMEM. */
int mms__state_freed_add(struct mms__state *st, const struct mms__freed *f);
/* badfree.c: the last event released heap block b (last_blk) with a
 * function of another family than the one that allocated it: counted, and
 * kept for mms__state_bad_free(). */
void mms__state_free_mismatched(struct mms__state *st, const struct mms__blk *b) __attribute__((cold));
/* When the last event freed no live block, or freed one with a function of
 * another family, appends what it was to list (*n of max kept). */
void mms__state_bad_free(const struct mms__state *st, const mms_event_t *ev, mms_bad_free_t *list, size_t *n,
			 size_t max);
/* The subscribers' data at offset off of the block the last event
 * allocated, freed or touched, or NULL (none, or no data kept):
 * mms__pass_data(), for a subscriber that has the pass's state at hand. */
static inline void *mms__state_last_data(const struct mms__state *st, size_t off)
{
	if (!st->ext_size || !st->last_blk_valid || st->last_slot < 0)
		return NULL;
	return st->ext + (size_t)st->last_slot * st->ext_size + off;
}
/* Calls fn on each live block until it returns non-zero: the slots'
 * blocks in slot order, then the pieces of live mappings. */
int mms__state_each(const struct mms__state *st, int (*fn)(const struct mms__blk *b, void *ctx), void *ctx);
/* Where several walks of a state that does not change follow one
 * another (the ends of a pass's subscribers): lists the live slots once,
 * so that each mms__state_each() until mms__state_thaw() visits those
 * only, not every slot (at the end of a log most slots may be free or
 * held: 2.4 M slots of 64 bytes for 26 K live blocks). Nothing may
 * change which slots are live until then (holding and releasing freed
 * slots may). Out of memory, nothing is listed and the walks go over
 * every slot, as before. */
void mms__state_freeze(struct mms__state *st);
void mms__state_thaw(struct mms__state *st);

/* Entries of the live-block table past which the state's tables outgrow
 * the caches, and the iterator asks for their lines some events ahead;
 * below, asking costs more than it saves. */
#define MMS__PREFETCH_LIVE (1u << 14)

/* Whether st's tables are worth fetching ahead for. */
static inline int mms__state_prefetching(const struct mms__state *st)
{
	return st->host.mask >= MMS__PREFETCH_LIVE;
}

/* For a HOST event some way ahead of the state: asks for the cache line
 * of the live-block table where applying it will look first. Changes
 * nothing. */
static inline __attribute__((always_inline)) void mms__state_prefetch_addr(const struct mms__state *st, uint64_t addr)
{
	mms__slotmap_prefetch(&st->host, addr);
}

/* Nearer, when the table's line has come: the block a FREE of addr will
 * release, and the subscribers' data beside it (which they read at the
 * free: a leak's step, inefficient's record). */
static inline __attribute__((always_inline)) void mms__state_prefetch_blk(const struct mms__state *st, uint64_t addr)
{
	int64_t slot = mms__slotmap_guess(&st->host, addr);

	if (slot >= 0 && (uint64_t)slot < st->nblks) {
		__builtin_prefetch(&st->blks[slot]);
		if (st->ext_size)
			__builtin_prefetch(st->ext + (size_t)slot * st->ext_size);
	}
}

#endif /* MMS_STATE_INT_H */
