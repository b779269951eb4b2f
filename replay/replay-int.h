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

/* --- flat hash map: uint64_t key -> uint64_t value (map.c) ---------------
 * Open addressing with linear probing and backward-shift deletion, so a
 * lookup never walks tombstones and memory follows the live entries. */
struct mms__map {
	uint64_t *keys;
	uint64_t *vals;
	uint8_t *used;   /* slot occupied */
	size_t mask;     /* capacity - 1 (capacity a power of two), 0 if none */
	size_t count;
};

void mms__map_init(struct mms__map *m);
void mms__map_free(struct mms__map *m);
/* Returns a pointer to key's value, or NULL when key is absent. The pointer
 * is valid until the next insertion or removal. */
uint64_t *mms__map_get(const struct mms__map *m, uint64_t key);
/* Inserts key (value 0 when new) and returns a pointer to its value; *isnew
 * says whether it was absent. Returns NULL when out of memory. */
uint64_t *mms__map_put(struct mms__map *m, uint64_t key, int *isnew);
/* Removes key; returns 1 and its value in *val (may be NULL), or 0. */
int mms__map_del(struct mms__map *m, uint64_t key, uint64_t *val);

/* --- disjoint address ranges (intervals.c) ------------------------------ */
struct mms__ivset {
	struct mms__iv {
		uint64_t lo, hi; /* [lo, hi) */
	} *iv;                   /* sorted by lo, disjoint */
	size_t n, cap;
};

void mms__ivset_free(struct mms__ivset *s);
/* Removes [lo, hi) from the set, cutting or splitting ranges; *removed gets
 * the bytes that were in the set. Returns 0 or -ENOMEM. */
int mms__ivset_remove(struct mms__ivset *s, uint64_t lo, uint64_t hi, uint64_t *removed);
/* Adds [lo, hi) as one range, first removing what it overlaps (*replaced
 * gets those bytes). Returns 0 or -ENOMEM. */
int mms__ivset_add(struct mms__ivset *s, uint64_t lo, uint64_t hi, uint64_t *replaced);

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
	const uint8_t *base; /* start of the file mapping, for offsets */
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
	uint32_t thread;
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
};

/* Metadata tables (meta.c). mms__meta_record() stores a metadata record;
 * returns 0, -ENOMEM, or MMS_ECORRUPT for a field out of range. */
struct mms__thread *mms__thread_note(mms_log_t *log, uint32_t index);
int mms__meta_record(mms_log_t *log, const struct mms__rec *r);
void mms__meta_free(mms_log_t *log);

/* Opens a log held in memory (the fuzz target's entry). The log does not
 * take ownership of buf, which must outlive it. */
int mms__log_open_buf(const void *buf, size_t len, mms_log_t **out, mms_open_error_t *err);
/* Name of a string id, or NULL when unknown or 0. */
const char *mms__log_string(const mms_log_t *log, uint64_t id);
/* Converts a stamp to CLOCK_REALTIME nanoseconds, see log.c. */
uint64_t mms__log_time(const mms_log_t *log, uint64_t stamp);

#endif /* MMS_REPLAY_INT_H */
