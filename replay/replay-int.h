/* SPDX-License-Identifier: MIT */
/* replay-int.h: internal interfaces shared by the modules of the replay
 * library (record decoder, flat hash map, log object, iterator). */
#ifndef MMS_REPLAY_INT_H
#define MMS_REPLAY_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "msmemscope-replay.h"

#define MMS__EXPORT __attribute__((visibility("default")))

/* Makes room for one more item in a growable array of elem-sized items
 * (*arrayp, *cap items allocated, n in use), doubling it. Returns 0, or -1
 * when out of memory (the array is left as it was). */
static inline int mms__grow(void *arrayp, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	/* The pointer is copied in and out with memcpy, not through a
	 * void ** lvalue, which would break strict aliasing. */
	memcpy(&p, arrayp, sizeof(p));
	p = realloc(p, ncap * elem);
	if (!p)
		return -1;
	memcpy(arrayp, &p, sizeof(p));
	*cap = ncap;
	return 0;
}

/* Big tables (table.c): from 2 MiB up mapped on their own, aligned for
 * transparent huge pages; below, the heap's. */
/* Returns bytes of zeros, or NULL. Free with mms__table_free(p, bytes). */
void *mms__table_alloc(size_t bytes);
void mms__table_free(void *p, size_t bytes);
/* mms__grow() for an array of mms__table_alloc()'s (*cap items). */
int mms__table_grow(void *arrayp, size_t *cap, size_t n, size_t elem);

/* Makes a zero-filled table (*arrayp, *n items of elem bytes) hold index
 * i, doubling it (from 8) and zeroing what it adds. Returns 0, or -1 when
 * out of memory (the table is left as it was). */
static inline int mms__table_fit(void *arrayp, size_t *n, size_t i, size_t elem)
{
	size_t nn;
	void *p;

	if (i < *n)
		return 0;
	nn = *n ? *n : 8;
	while (nn <= i)
		nn *= 2;
	memcpy(&p, arrayp, sizeof(p));
	p = realloc(p, nn * elem);
	if (!p)
		return -1;
	memset((char *)p + *n * elem, 0, (nn - *n) * elem);
	memcpy(arrayp, &p, sizeof(p));
	*n = nn;
	return 0;
}

/* --- flat hash map: uint64_t key -> uint64_t value (map.c) ---------------
 * One array of (key, value) entries, open addressing with linear probing
 * from a Fibonacci hash and backward-shift deletion, so a lookup touches
 * one cache line or two, never walks tombstones, and memory follows the
 * live entries. Key 0 marks an empty entry; the key 0 itself is kept
 * beside the array. */
struct mms__map_ent {
	uint64_t key, val;
};

struct mms__map {
	struct mms__map_ent *ents; /* mask + 1 entries, or NULL */
	size_t mask;     /* capacity - 1 (capacity a power of two), 0 if none */
	size_t count;    /* entries, the key 0 included */
	size_t room;     /* entries the array takes before it grows (3/8 of it) */
	unsigned shift;  /* 64 - log2(capacity) */
	int has_zero;    /* the key 0 is in the map, with value zero_val */
	uint64_t zero_val;
};

void mms__map_init(struct mms__map *m);
void mms__map_free(struct mms__map *m);
/* The out-of-line parts of mms__map_put() and mms__map_del() below. */
uint64_t *mms__map_put_slow(struct mms__map *m, uint64_t key, int *isnew);
int mms__map_del_slow(struct mms__map *m, uint64_t key, uint64_t *val);
void mms__map_erase(struct mms__map *m, struct mms__map_ent *e);
/* Removes key when its value is val; returns 1, or 0 (nothing removed). */
int mms__map_del_if(struct mms__map *m, uint64_t key, uint64_t val);

/* The entry where key's probe starts: the top bits of key times 2^64/phi,
 * which spreads keys sharing their low bits (heap addresses) evenly. */
static inline size_t mms__map_home(const struct mms__map *m, uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> m->shift);
}

/* Returns a pointer to key's value, or NULL when key is absent. The pointer
 * is valid until the next insertion or removal. */
static inline uint64_t *mms__map_get(const struct mms__map *m, uint64_t key)
{
	struct mms__map_ent *e;
	size_t i;

	if (!key)
		return m->has_zero ? (uint64_t *)&m->zero_val : NULL;
	if (!m->ents)
		return NULL;
	for (i = mms__map_home(m, key);; i = (i + 1) & m->mask) {
		e = &m->ents[i];
		if (e->key == key)
			return &e->val;
		if (!e->key)
			return NULL;
	}
}

/* Inserts key (value 0 when new) and returns a pointer to its value; *isnew
 * (may be NULL) says whether it was absent. Returns NULL when out of
 * memory. Inline but for the key 0 and growing. */
static inline uint64_t *mms__map_put(struct mms__map *m, uint64_t key, int *isnew)
{
	struct mms__map_ent *e;
	size_t i;

	if (!key || m->count >= m->room)
		return mms__map_put_slow(m, key, isnew);
	for (i = mms__map_home(m, key);; i = (i + 1) & m->mask) {
		e = &m->ents[i];
		if (e->key == key) {
			if (isnew)
				*isnew = 0;
			return &e->val;
		}
		if (!e->key)
			break;
	}
	e->key = key;
	e->val = 0;
	m->count++;
	if (isnew)
		*isnew = 1;
	return &e->val;
}

/* Removes key; returns 1 and its value in *val (may be NULL), or 0. */
static inline int mms__map_del(struct mms__map *m, uint64_t key, uint64_t *val)
{
	struct mms__map_ent *e;
	size_t i;

	if (!key || !m->ents)
		return mms__map_del_slow(m, key, val);
	for (i = mms__map_home(m, key);; i = (i + 1) & m->mask) {
		e = &m->ents[i];
		if (e->key == key)
			break;
		if (!e->key)
			return 0;
	}
	if (val)
		*val = e->val;
	mms__map_erase(m, e);
	return 1;
}

/* Asks for the cache line where a lookup of key starts, for a lookup some
 * events later. (The prefetch helpers are always inlined: GCC deems a
 * function whose only effect is a prefetch pure, and drops its calls.) */
static inline __attribute__((always_inline)) void mms__map_prefetch(const struct mms__map *m, uint64_t key)
{
	if (m->ents)
		__builtin_prefetch(&m->ents[mms__map_home(m, key)]);
}

/* --- disjoint address ranges (intervals.c) ------------------------------ */
struct mms__ivset {
	struct mms__iv {
		uint64_t lo, hi; /* [lo, hi) */
		uint64_t val;    /* the owner's value, copied when a range splits */
	} *iv;                   /* sorted by lo, disjoint */
	size_t n, cap;
	/* Optional: told +1 when a range with val splits in two, -1 when one
	 * disappears, so the owner can count the pieces sharing a value. */
	void (*ref)(void *ctx, uint64_t val, int delta);
	void *ctx;
};

void mms__ivset_free(struct mms__ivset *s);
/* Removes [lo, hi) from the set, cutting or splitting ranges; *removed gets
 * the bytes that were in the set. Returns 0 or -ENOMEM. */
int mms__ivset_remove(struct mms__ivset *s, uint64_t lo, uint64_t hi, uint64_t *removed);
/* Adds [lo, hi) as one range, first removing what it overlaps (*replaced
 * gets those bytes). Returns 0 or -ENOMEM. */
int mms__ivset_add(struct mms__ivset *s, uint64_t lo, uint64_t hi, uint64_t *replaced);
/* Like mms__ivset_add(), giving the new range the value val. */
int mms__ivset_add_val(struct mms__ivset *s, uint64_t lo, uint64_t hi, uint64_t val, uint64_t *replaced);
/* Index of the range containing addr, or (size_t)-1. */
size_t mms__ivset_find(const struct mms__ivset *s, uint64_t addr);
/* The index of the first range that ends after lo (s->n when none). */
size_t mms__ivset_first_after(const struct mms__ivset *s, uint64_t lo);

/* --- record decoder (decode.c) ------------------------------------------ */

/* One decoded record. Unsigned fields are stored in u[] in the order the
 * format lists them, skipping the address, which goes to addr (absolute). */
struct mms__rec {
	uint8_t tag;        /* the tag byte as written */
	uint8_t type;       /* the tag with its sub-code cleared (enum mms_tag) */
	uint8_t sub;        /* the sub-code (allocator function, mode, phase) */
	uint64_t off;       /* file offset of the tag byte */
	uint64_t stamp;     /* absolute stamp */
	uint64_t addr;      /* absolute address, for tags with a daddr field */
	uint64_t u[6];
	const char *s[2];   /* string fields, not NUL-terminated */
	uint64_t slen[2];
};

/* A position inside one chunk's records, with the segment's delta state. */
struct mms__cursor {
	const uint8_t *base; /* with base_off: p - base + base_off is p's file offset */
	uint64_t base_off;
	const uint8_t *p;    /* next record */
	const uint8_t *end;  /* end of the records to decode */
	uint64_t stamp;      /* stamp of the previous record */
	uint64_t prev_addr;  /* previous address of the segment */
	uint32_t thread;     /* thread of the current segment */
};

/* Decode results besides 1 (a record) and 0 (end reached). */
#define MMS__DEC_CORRUPT (-1) /* bytes that do not decode; *why says how */
#define MMS__DEC_ORDER (-2)   /* the stamp delta wraps around */
#define MMS__DEC_UNKNOWN (-3) /* a tag this version does not know */

/* Decodes the record at c->p into *r and advances. A SEGMENT record resets
 * the cursor's delta state and thread. On damage c->p is left at the bad
 * record and *why points at a static description. */
int mms__decode(struct mms__cursor *c, struct mms__rec *r, const char **why);

/* The fast path for the records most logs are made of, the heap's ALLOC,
 * ALLOC_RT and FREE: decodes the one at c->p straight into the event it
 * is (stamp, thread, file_offset, kind, sub, addr, size, stack, flags;
 * the other fields 0) and advances c. Returns 1, or 0 leaving c as it was
 * when the record is of another tag or not one this path reads (near the
 * end of the records, a field over 8 bytes, a stamp that wraps):
 * mms__decode() reads those. */
int mms__decode_heap(struct mms__cursor *c, mms_event_t *ev);

/* Whether the record at c->p (before c->end) is an event's: returns 1
 * with the event's stamp in *stamp, c left at the record; 0 for a record
 * of another kind; or an MMS__DEC_* code for a tag this version does not
 * know or a stamp that does not decode. */
int mms__decode_peek(const struct mms__cursor *c, uint64_t *stamp);

/* For looking ahead: steps c over the heap event record at c->p (ALLOC,
 * ALLOC_RT, FREE), decoding only its address, into *addr. Returns
 * MMS_EV_MALLOC or MMS_EV_FREE, or 0 leaving c as it was for any other
 * record and those mms__decode_heap() leaves to mms__decode(). */
int mms__skim_heap(struct mms__cursor *c, uint64_t *addr);

/* Like mms__decode(), for the open pass: of an event record it reads only
 * the tag and stamp and checks the shape of the other fields, which it
 * skips (r->addr, r->u[] are not set, the cursor's address delta state is
 * not kept). Other records are decoded in full. */
int mms__decode_skim(struct mms__cursor *c, struct mms__rec *r, const char **why);

/* Skims the run of common event records at c->p (those the fast path
 * reads: see decode.c), advancing c and its stamp. Returns how many. */
size_t mms__skim_events(struct mms__cursor *c);

/* Whether a record type is an event of the program (not metadata). */
static inline int mms__is_event(uint8_t type)
{
	return type >= MMS_TAG_ALLOC;
}

/* --- the open log (log.c) ----------------------------------------------- */

struct mms__segment {
	uint64_t begin;      /* file offset of the first record after SEGMENT */
	uint64_t end;        /* file offset past its last whole record */
	uint64_t first;      /* the SEGMENT record's absolute stamp */
	uint64_t last;       /* stamp of its last record */
	uint64_t events;     /* event records in [begin, end) */
	uint32_t thread;
	uint8_t lost_after;  /* its thread's records after it are lost: damage, or the file's end */
	uint8_t full_end;    /* it fills its chunk: its thread, if it went on, went on elsewhere */
};

struct mms__thread {
	uint32_t index;
	uint64_t tid;
	uint64_t name_id;    /* string id, 0 = unnamed */
};

struct mms__module {
	uint64_t base, lo, hi;
	size_t path, build_id;     /* arena offsets */
	uint64_t build_id_len;
};

struct mms__meta {
	size_t key, value;         /* arena offsets */
	uint64_t value_len;
};

/* A forked child's inherited blocks (inherit.c): the parent's live blocks
 * at its FORK event, which every replay of the child starts from. */
struct mms__iblk {
	uint64_t addr, size;
	uint64_t origin_pid, origin_event; /* the log that allocated it, its MALLOC */
	size_t owner, pool;        /* 1 + offset in strs, 0 = NULL */
	uint32_t stack;            /* a stack id of the child's log (imported) */
	uint16_t mem;
	uint8_t fn, runtime;
};

struct mms__inherit {
	int state;                 /* enum mms_fork_state */
	uint64_t parent_pid, fork_event;
	char *parent_log;          /* NULL when the log names none */
	char *why;                 /* MMS_FORK_UNKNOWN: why */
	struct mms__iblk *blks;    /* in the order they were allocated */
	size_t n, cap;
	uint64_t blocks[MMS_MEM_KIND_COUNT], bytes[MMS_MEM_KIND_COUNT];
	char *strs;                /* the blocks' owner and pool names */
	size_t strs_len, strs_cap;
};

struct mms_log {
	const uint8_t *map;        /* the file, mapped read-only (NULL if empty) */
	size_t size;
	int unmap;                 /* map came from mmap() and must be unmapped */
	struct mms_file_header hdr;
	mms_log_info_t info;
	char damage[192];

	char *arena;               /* NUL-terminated copies of strings */
	size_t arena_len, arena_cap;
	struct mms__map strings;   /* string id -> arena offset */
	struct mms__map stacks;    /* stack id -> index in stack_nodes */
	uint64_t (*stack_nodes)[2]; /* parent, ip */
	size_t nstacks, stacks_cap;
	struct mms__map thread_ix; /* thread index -> index in threads */
	struct mms__thread *threads;
	size_t nthreads, threads_cap;
	struct mms__module *modules;
	size_t nmodules, modules_cap;
	struct mms__meta *metas;
	size_t nmetas, metas_cap;

	/* Segments, sorted by (thread, first stamp, offset): a thread's
	 * segments follow each other in time, so the iterator merges one
	 * cursor per thread. runs[i] indexes the first segment of the i-th
	 * thread's run; runs[nruns] is nsegs. */
	struct mms__segment *segs;
	size_t nsegs, segs_cap;
	size_t *runs;              /* start index of each thread's run in segs */
	size_t nruns;
	uint64_t events;           /* event records found by the open pass */
	double ns_per_stamp;       /* stamp to nanoseconds, see mms__log_time() */
	char *path;                /* as opened; NULL for a log in memory */
	uint64_t dev, ino, mtime_ns; /* the file's identity when opened */
	struct mms__inherit inh;   /* a fork child's start (inherit.c) */

	/* Where the log is incomplete (log.c). Records stamped from stop on
	 * are left out: the first stamp the cut or the damage may have taken
	 * records from (UINT64_MAX: none). */
	uint64_t stop;
	uint64_t chunk_stamp_max;  /* the latest stamp a chunk read so far was taken after */
	int file_cut;              /* the file ends before the chunks it holds do */
	int chunks_lost;           /* a chunk is missing or cannot be read */
	int fini;                  /* an exit record (SYSTEM fini) was read */
	char cut_what[160];
	uint64_t bad_stacks;       /* atomic: walks of stack ids that do not resolve */
};

/* Opens the log file at path without looking for its parent's (log.c):
 * mms_log_open_ex() is this and mms__inherit_load(). */
int mms__log_open_file(const char *path, mms_log_t **out, mms_open_error_t *err);

/* Finds the blocks a fork child's log inherited (inherit.c), opening its
 * parent's log (depth: how many children down from the log first opened,
 * bounding a chain of parents). Returns 0, with log->inh filled in
 * (MMS_FORK_UNKNOWN and why when the parent's log cannot be had), or
 * -ENOMEM. */
int mms__inherit_load(mms_log_t *log, unsigned depth);
void mms__inherit_free(struct mms__inherit *inh);
/* The name at a 1 + offset reference of inh->strs, or NULL for 0. */
static inline const char *mms__inherit_str(const struct mms__inherit *inh, size_t ref)
{
	return ref ? inh->strs + ref - 1 : NULL;
}
/* Adds stack node (id: parent, ip) to the log's stack table (meta.c).
 * Returns 0 (also when id is already there: the first definition wins)
 * or -ENOMEM. */
int mms__log_stack_add(mms_log_t *log, uint32_t id, uint64_t parent, uint64_t ip);

/* Metadata tables (meta.c). mms__meta_record() stores a metadata record;
 * returns 0, -ENOMEM, or MMS_ECORRUPT for a field out of range. */
struct mms__thread *mms__thread_note(mms_log_t *log, uint32_t index);
int mms__meta_record(mms_log_t *log, const struct mms__rec *r);
void mms__meta_free(mms_log_t *log);

/* mms_log_stack() for the library's own reports: a stack id that does not
 * resolve (damaged stack records) has no frames, and is counted in the
 * log's info (bad_stacks). Returns the depth, 0 for such a stack. */
int mms__log_stack(const mms_log_t *log, uint32_t id, uint64_t *ips, size_t max);

/* Opens a log held in memory (the fuzz target's entry). The log does not
 * take ownership of buf, which must outlive it. */
int mms__log_open_buf(const void *buf, size_t len, mms_log_t **out, mms_open_error_t *err);
/* Name of a string id, or NULL when unknown or 0. */
const char *mms__log_string(const mms_log_t *log, uint64_t id);
/* Converts a stamp to CLOCK_REALTIME nanoseconds by the line log.c draws
 * through the log's two (stamp, realtime) pairs. Inline: every event
 * takes it. */
static inline uint64_t mms__log_time(const mms_log_t *log, uint64_t stamp)
{
	int64_t d = (int64_t)(stamp - log->hdr.start_stamp);
	double t;

	if (log->ns_per_stamp == 1.0)
		return log->hdr.start_realtime_ns + (uint64_t)d;
	/* Only a damaged header puts a stamp this far away; clamp it rather
	 * than convert an out-of-range double. */
	t = (double)d * log->ns_per_stamp;
	if (t > 9.0e18)
		t = 9.0e18;
	else if (t < -9.0e18)
		t = -9.0e18;
	return log->hdr.start_realtime_ns + (uint64_t)(int64_t)t;
}

/* --- heap state (state.c) ------------------------------------------------
 * What replaying events up to a position leaves: live blocks with their
 * origin, per-thread operator and owner stacks, step and launch counters,
 * and the running figures. Everything here is saved in checkpoints
 * (checkpoint.c), so each field must be serializable: names are pointers
 * into the log's string arena or the state's owner strings. */
struct mms__blk {
	uint64_t addr, size;
	uint64_t alloc_id, alloc_event;
	uint64_t op_launch, kernels;
	uint32_t steps_seen;     /* STEP events before the allocation */
	uint32_t ranges_seen;    /* the "step start" range it was allocated in, 0 = none */
	const char *op, *owner, *pool;
	uint32_t stack, thread;
	uint16_t mem;
	uint8_t fn;
	uint8_t runtime;         /* HOST: enum mms_runtime_kind of a block a runtime keeps
	                            for itself (ALLOC_RT), 0 = the program's */
	uint32_t refs;           /* MMAP: ranges sharing this block; 0 = free slot */
};

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
	uint8_t realloc_runtime; /* the runtime kind of the block this thread's last
	                            realloc freed: its new block keeps it */
};

struct mms__pool {
	const char *name;        /* in the log's arena; "" when unnamed */
	struct mms__map live;    /* addr -> block slot */
};

/* Interned owner strings (tags joined by '@'). */
struct mms__owners {
	struct mms__map ix;      /* hash of a string -> index in strs + 1 */
	char **strs;
	size_t n, cap;
};

void mms__owners_free(struct mms__owners *o);

/* A block freed recently. */
struct mms__freed {
	uint64_t addr, size;
	uint64_t alloc_event, free_event;
	const char *pool;            /* POOL: the pool's name as the state has it */
	uint32_t stack;
	uint16_t mem;
};

#define MMS__RECENT_FREES 4096

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
	uint64_t double_frees, invalid_frees; /* unmatched frees, told apart */
	uint32_t last_thread;
	const char *ended_op;    /* the operator the last OP_LAUNCH end ended */

	struct mms__blk *blks;   /* slots; free ones chained through addr */
	size_t nblks, blks_cap;
	uint32_t *free_slots;    /* free slots, the next to take last (room for blks_cap) */
	size_t nfree;
	/* Bytes per slot that the subscribers of a pass keep for each live
	 * block (mms__pass_attach()), zeroed when a slot is taken: ext_size
	 * bytes per slot, 0 when none is kept. */
	uint8_t *ext;
	size_t ext_size, ext_cap;
	struct mms__map host;    /* addr -> slot */
	struct mms__ivset maps;  /* MMAP ranges, val = slot */
	struct mms__pool *pools;
	size_t npools, pools_cap;
	struct mms__tstate *threads; /* by thread index */
	size_t nthreads;

	/* Owner strings: a replay shares one table among all its states,
	 * so strings it hands out outlive seeks; a lone state uses own. */
	struct mms__owners *ow;
	struct mms__owners own;

	/* The last event's block, for mms_replay_event_block(). */
	struct mms__blk last_blk;
	uint64_t last_free_event;
	int last_blk_valid;
	int64_t last_slot;           /* last_blk's slot, or -1 */

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
	int last_bad_free;           /* 0 none, 1 double, 2 invalid */
	struct mms__freed bad_prev;  /* the earlier free of a double one */
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
/* The step a block was allocated in, under the state's step kind. */
uint64_t mms__state_blk_step(const struct mms__state *st, const struct mms__blk *b);
/* The current step, and whether inside one. */
uint64_t mms__state_step(const struct mms__state *st, int *in_step);
/* Fills a public block from a slot. */
void mms__state_blk_export(const struct mms__state *st, const struct mms__blk *b, mms_block_t *out);
/* The live block containing addr, or NULL. */
const struct mms__blk *mms__state_find(const struct mms__state *st, uint64_t addr);
/* The slot of live block b (a pointer to a slot, or a copy of a live
 * block: found by its start address and allocation), or -1. */
int64_t mms__state_slot_of(const struct mms__state *st, const struct mms__blk *b);
/* Interns an owner string (NUL-terminated); NULL when out of memory. */
const char *mms__state_owner(struct mms__state *st, const char *s, size_t len);
/* runtime.c: the runtime kind (enum mms_runtime_kind) of a block live at
 * the end of the log: its mark, or the log's "runtime_live" list (the
 * standard streams' buffers at exit); 0 for the program's blocks. */
unsigned mms__blk_runtime_at_end(const mms_log_t *log, const struct mms__blk *b);

/* The state's figures as a summary (summary.c). */
void mms__state_summary(const struct mms__state *st, mms_summary_t *out);
/* Remembers a free in the ring of recent frees (see struct mms__state).
 * Returns 0 or -ENOMEM. */
int mms__state_freed_add(struct mms__state *st, const struct mms__freed *f);
/* When the last event freed no live block, appends what it was to list
 * (*n of max kept). */
void mms__state_bad_free(const struct mms__state *st, const mms_event_t *ev, mms_bad_free_t *list, size_t *n,
			 size_t max);
/* Calls fn on each live block until it returns non-zero. */
int mms__state_each(const struct mms__state *st, int (*fn)(const struct mms__blk *b, void *ctx), void *ctx);

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
	mms__map_prefetch(&st->host, addr);
}

/* Nearer, when the table's line has come: the block a FREE of addr will
 * release. */
static inline __attribute__((always_inline)) void mms__state_prefetch_blk(const struct mms__state *st, uint64_t addr)
{
	const uint64_t *v = mms__map_get(&st->host, addr);
	const char *b;

	if (v && *v < st->nblks) {
		b = (const char *)&st->blks[*v];
		__builtin_prefetch(b);
		__builtin_prefetch(b + sizeof(*st->blks) - 1);
	}
}

/* --- iterator positions (iter.c) ---------------------------------------- */
/* Where one thread's cursor stands: enough to resume without decoding what
 * came before. */
struct mms__src_pos {
	uint64_t seg;            /* segment index; UINT64_MAX when the thread is done */
	uint64_t off;            /* file offset of its pending event's record */
	uint64_t stamp, prev_addr; /* the delta state before that record */
};

/* Saves the iterator's position: next_id and one entry per thread run
 * (log->nruns of them, into pos). */
void mms__iter_save(const mms_iter_t *it, uint64_t *next_id, struct mms__src_pos *pos);
/* Opens an iterator at a saved position. Returns 0 or a negative code. */
int mms__iter_open_at(mms_log_t *log, uint64_t next_id, const struct mms__src_pos *pos, mms_iter_t **out);
/* Tells the iterator which heap state its events go to (NULL: none), so
 * that it asks for the state's cache lines some events ahead. */
void mms__iter_prefetch_for(mms_iter_t *it, const struct mms__state *st);

/* --- checkpoints (checkpoint.c) and the index (index.c) ------------------ */

/* Serializes st and the iterator it stands at (malloc'ed into *out). */
int mms__ckpt_save(const struct mms__state *st, const mms_iter_t *it, uint8_t **out, size_t *outlen);
/* Restores a checkpoint into st (initialized here, with owner strings in
 * ow when not NULL) and opens *it where it stood. Returns 0, MMS_ECORRUPT for bytes that do not fit the log, or
 * -ENOMEM; on failure st needs no freeing. */
int mms__ckpt_restore(mms_log_t *log, const uint8_t *buf, size_t len, struct mms__owners *ow, struct mms__state *st,
		      mms_iter_t **it);

struct mms__step {
	uint64_t begin, end;     /* positions: state before its first event, after its last */
};

struct mms__ckpt_ref {
	uint64_t pos, off, len;  /* position, and where its bytes lie in blobs */
};

/* A FORK event of the log: the fork's number and the event's id. */
struct mms__fork {
	uint64_t number, id;
};

struct mms__index {
	int step_kind;
	int stop_rc;             /* what stopped the build's replay (damage), or 0 */
	uint64_t events;         /* events the build replayed */
	uint64_t every;
	struct mms__step *steps;
	size_t nsteps, steps_cap;
	struct mms__ckpt_ref *ckpts;
	size_t nckpts, ckpts_cap;
	uint8_t *blobs;
	size_t blobs_len, blobs_cap;
	struct mms__fork *forks;  /* in log order */
	size_t nforks, forks_cap;
};

int mms__index_build(mms_log_t *log, const mms_replay_options_t *opt, struct mms__index *ix);
/* Loads the index at path. Returns 0; MMS_EVERSION when it is stale or of
 * another version, MMS_ECORRUPT when malformed, -errno when unreadable. */
int mms__index_load(const mms_log_t *log, const char *path, struct mms__index *ix);
/* Writes the index to path atomically; -EEXIST when path holds something
 * that is not an index (left alone). */
int mms__index_store(const mms_log_t *log, const char *path, const struct mms__index *ix);
void mms__index_free(struct mms__index *ix);


/* --- launches and steps followed over a replay (track.c) ----------------- */

/* Memory moved: allocations and frees with their bytes, and a peak. */
struct mms__counts {
	uint64_t allocs, frees, bytes_allocated, bytes_freed;
	uint64_t peak_bytes, peak_event;
};

void mms__counts_add(struct mms__counts *c, int alloc, uint64_t size);

/* One operator launch, with the memory its thread moved while it ran
 * (nested launches included). */
struct mms__tlaunch {
	uint64_t launch;          /* from 1, over the whole log */
	const char *name;
	uint32_t thread;
	uint64_t begin_event, end_event; /* end_event UINT64_MAX: not ended */
	uint64_t step;            /* the step holding begin_event, MMS__STEP_* */
	struct mms__counts m;
};

/* Step numbers besides 1, 2, ...: in no step, or before the first step
 * mark (step 1 if the log turns out to count STEP events, else none). */
#define MMS__STEP_NONE 0
#define MMS__STEP_PENDING UINT64_MAX

struct mms__tstep {
	uint64_t begin, end;      /* positions; end UINT64_MAX while open */
	uint64_t events, launches;
	uint64_t live_begin, live_end; /* live bytes, all kinds */
	struct mms__counts m;     /* peak_event: the event reaching peak_bytes */
};

/* The launches running on one thread, innermost last. */
struct mms__tthread {
	struct mms__tlaunch *ops;
	size_t n, cap;
};

#define MMS__TRACK_LAUNCHES 1u
#define MMS__TRACK_STEPS 2u

struct mms__track {
	unsigned what;            /* MMS__TRACK_* */
	struct mms__tthread *threads; /* by thread number */
	size_t nthreads;
	struct mms__tlaunch ended; /* the launch the last event ended, if has_ended */
	int has_ended;
	uint64_t ev_step;         /* the step the last event counted in */
	int step_kind;            /* as the state's, once a step began */
	struct mms__tstep *steps;
	size_t nsteps, steps_cap;
	struct mms__tstep pending; /* before the first mark */
	/* The state's step counters and live bytes after the last event. */
	uint64_t steps_seen, ranges_seen, live_before;
	int in_range;
};

void mms__track_init(struct mms__track *t, unsigned what);
void mms__track_free(struct mms__track *t);
/* Starts following from st's position (not needed from position 0). */
void mms__track_start(struct mms__track *t, const struct mms__state *st);
/* Follows ev, which st has just applied. Returns 0 or -ENOMEM. */
int mms__track_event(struct mms__track *t, const struct mms__state *st, const mms_event_t *ev);
/* At the end of the log: closes the last step as the index does. */
void mms__track_finish(struct mms__track *t, const struct mms__state *st);
/* The step holding event id (already followed): MMS__STEP_* or a number. */
uint64_t mms__track_step_of(const struct mms__track *t, uint64_t id);
/* The innermost launch running on a thread, or NULL. */
const struct mms__tlaunch *mms__track_running(const struct mms__track *t, uint32_t thread);

/* Marks the leaks of l that a suppression of s matches (suppress.c).
 * Returns 0, MMS_EUSAGE or -ENOMEM. */
int mms__leaks_suppress(mms_leaks_t *l, const mms_log_t *log, mms_suppressions_t *s, mms_symbolizer_t *sym);
/* The types (enum mms_inefficient_type bits) an inefficient result run
 * with tags noted for allocation id, 0 when none (inefficient.c). */
unsigned mms__inefficient_tags(const mms_inefficient_t *res, uint64_t alloc_id);
/* --- blocks grouped by allocation stack (report.c) ----------------------- */
struct mms__groups {
	struct mms__map ix;       /* stack id -> index in groups */
	mms_stack_group_t *groups;
	size_t n, cap;
};

void mms__groups_init(struct mms__groups *g);
void mms__groups_free(struct mms__groups *g);
/* Counts block b in its stack's group. Returns 0 or -ENOMEM. */
int mms__groups_add(struct mms__groups *g, const mms_block_t *b);
/* Hands out the groups, largest bytes first (then more blocks, then by
 * stack id): the caller frees *out. Frees the rest of g. */
void mms__groups_finish(struct mms__groups *g, mms_stack_group_t **out, size_t *n);

/* The state a public replay drives (seek.c). */
const struct mms__state *mms__replay_state(const mms_replay_t *r);
/* The id of the log's FORK event number `number`: returns 1 and sets *id,
 * or 0 when the log (as far as it is readable) has none (seek.c). */
int mms__replay_fork_event(const mms_replay_t *r, uint64_t number, uint64_t *id);

/* --- output files (outfile.c) ------------------------------------------------------------ */

/* An output file written under a temporary name in the same folder and
 * moved to its path at the end (replacing what is there only with
 * overwrite), so no partial file is ever left behind. */
struct mms__outfile {
	const char *path; /* a copy, in tmp's allocation */
	char *tmp;
	int overwrite;
};

/* Refuses with -EEXIST when path exists and overwrite is 0, then creates
 * the temporary file (mode 0640, O_EXCL, O_NOFOLLOW). Returns an open
 * descriptor, or a negative code. */
int mms__outfile_create(struct mms__outfile *f, const char *path, int overwrite);
/* Moves the finished temporary file to its path. Returns 0 or a negative
 * code (the temporary file is then removed). */
int mms__outfile_commit(struct mms__outfile *f);
/* Removes the temporary file; safe to call after a commit. */
void mms__outfile_abort(struct mms__outfile *f);
/* Writes all n bytes to fd, retrying short writes and EINTR. Returns 0 or
 * -errno. */
int mms__write_all(int fd, const void *p, size_t n);

/* --- sequence alignment (myers.c) ----------------------------------------- */

/* Aligns a[0..n) with b[0..m) by Myers' linear-space O((N+M)D) difference
 * algorithm: sets match[i] to the index in b paired with a[i], or SIZE_MAX
 * when a[i] is unpaired; the pairs are increasing in both sequences and
 * pair equal ids. With max_cost 0 the alignment is optimal (a longest
 * common subsequence); otherwise a search that passes max_cost edits
 * splits the problem where it stands, bounding the time at the price of
 * optimality. match holds n entries. Returns 0 or -ENOMEM. */
int mms__myers(const uint32_t *a, size_t n, const uint32_t *b, size_t m, size_t *match, size_t max_cost);

#endif /* MMS_REPLAY_INT_H */
