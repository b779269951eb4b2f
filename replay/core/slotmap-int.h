/* SPDX-License-Identifier: MIT */
/* slotmap-int.h: the live-block tables of the heap state (slotmap.c), with
 * their lookups inline: nearly every event takes one. */
#ifndef MMS_SLOTMAP_INT_H
#define MMS_SLOTMAP_INT_H

#include <stddef.h>
#include <stdint.h>

/* --- slot map: a block's address -> its slot ------------------------------
 * Like struct mms__map (open addressing, linear probing from a Fibonacci
 * hash, backward-shift deletion), but an entry is 8 bytes: the top 32 bits
 * of the key's hash and the slot + 1 (0: empty). The key itself is not
 * kept: it is the first 8 bytes of the slot's record in the array the
 * caller passes (base, records of stride bytes), which a lookup reads when
 * the hash bits match. A lookup of an address that is not there (every
 * allocation) reads no record; one that is there (every free) reads the
 * record its caller reads next anyway. Half the bytes of a (key, value)
 * entry: twice the entries per cache line, half the pages to zero. Slots
 * are below 2^32 - 1; the table holds up to 2^32 entries. */
struct mms__slotmap_ent {
	uint32_t hash;  /* the top 32 bits of the key's hash */
	uint32_t slot1; /* slot + 1; 0: an empty entry */
};

struct mms__slotmap {
	struct mms__slotmap_ent *ents; /* mask + 1 entries, or NULL */
	size_t mask;     /* capacity - 1, 0 if none */
	size_t count;    /* entries in use */
	size_t room;     /* entries the array takes before it grows */
	unsigned bits;   /* log2(capacity), 0 if none */
	size_t hint;     /* entries expected (0: unknown): the first growth
	                    makes room for them at once */
};

void mms__slotmap_init(struct mms__slotmap *m);
void mms__slotmap_free(struct mms__slotmap *m);
/* Makes room for one more entry. Returns 0 or -1 (out of memory). */
int mms__slotmap_grow(struct mms__slotmap *m);
/* Moves m's entries into an array as large as their count asks and gives
 * the old one, of *bytes, to the caller (free it with mms__table_free()):
 * memory already touched, for a table made at the end of a pass, where
 * fresh pages cost a fault each (the heap's map of perl's log: 32 MiB,
 * 26 k entries left of 2 M). Returns NULL (m unchanged) when the old
 * array has fewer than min bytes, or without memory. */
void *mms__slotmap_shrink(struct mms__slotmap *m, size_t min, size_t *bytes);
/* mms__slotmap_erase() where the entry after e is used. */
void mms__slotmap_erase_run(struct mms__slotmap *m, struct mms__slotmap_ent *e);

static inline uint32_t mms__slotmap_hash(uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32);
}

static inline size_t mms__slotmap_home(const struct mms__slotmap *m, uint32_t hash)
{
	return (size_t)(hash >> (32 - m->bits));
}

static inline uint64_t mms__slotmap_key(const void *base, size_t stride, uint32_t slot)
{
	uint64_t k;

	__builtin_memcpy(&k, (const char *)base + (size_t)slot * stride, sizeof(k));
	return k;
}

/* The entry of key (hash its mms__slotmap_hash()), or, when key is absent,
 * the empty entry where it would go; NULL only when the table has no
 * array (call mms__slotmap_reserve() first to insert). Valid until the
 * next insertion or removal. */
static inline struct mms__slotmap_ent *mms__slotmap_find(const struct mms__slotmap *m, uint64_t key, uint32_t hash,
							   const void *base, size_t stride)
{
	struct mms__slotmap_ent *e;
	size_t i;

	if (!m->ents)
		return NULL;
	for (i = mms__slotmap_home(m, hash);; i = (i + 1) & m->mask) {
		e = &m->ents[i];
		if (!e->slot1 || (e->hash == hash && mms__slotmap_key(base, stride, e->slot1 - 1) == key))
			return e;
	}
}

/* The slot of key, or -1. */
static inline int64_t mms__slotmap_get(const struct mms__slotmap *m, uint64_t key, const void *base, size_t stride)
{
	const struct mms__slotmap_ent *e = mms__slotmap_find(m, key, mms__slotmap_hash(key), base, stride);

	return e && e->slot1 ? (int64_t)e->slot1 - 1 : -1;
}

/* Makes sure an insertion has room. Returns 0 or -1 (out of memory). */
static inline int mms__slotmap_reserve(struct mms__slotmap *m)
{
	return m->count < m->room ? 0 : mms__slotmap_grow(m);
}

/* Puts key's slot into entry e that mms__slotmap_find() returned (after
 * mms__slotmap_reserve()): a new key, or a new slot for it. */
static inline void mms__slotmap_set(struct mms__slotmap *m, struct mms__slotmap_ent *e, uint32_t hash, uint32_t slot)
{
	m->count += !e->slot1;
	e->hash = hash;
	e->slot1 = slot + 1;
}

/* Removes key; returns its slot, or -1 when it is absent. */
/* Empties entry e, moving later entries of its probe run back: where the
 * next entry is empty (most often) none moves, and e is emptied here,
 * without a call. */
static inline void mms__slotmap_erase(struct mms__slotmap *m, struct mms__slotmap_ent *e)
{
	if (m->ents[(size_t)(e - m->ents + 1) & m->mask].slot1) {
		mms__slotmap_erase_run(m, e);
		return;
	}
	e->slot1 = 0;
	m->count--;
}

static inline int64_t mms__slotmap_del(struct mms__slotmap *m, uint64_t key, const void *base, size_t stride)
{
	struct mms__slotmap_ent *e = mms__slotmap_find(m, key, mms__slotmap_hash(key), base, stride);
	int64_t slot;

	if (!e || !e->slot1)
		return -1;
	slot = (int64_t)e->slot1 - 1;
	mms__slotmap_erase(m, e);
	return slot;
}

/* Entries past which a table is far larger than the caches: a lookup's
 * line and the next are both asked for. */
#define MMS__SLOTMAP_WIDE (1u << 20)

/* Asks for the cache line where a lookup of key starts, for a lookup some
 * events later, and in a wide table the line after it too: the entries
 * of a run go on past their line often enough there that the probes of
 * perl's log (4 million entries, half of them used) stalled on it, 17%
 * of the heap state's samples. (Always inlined: GCC deems a function
 * whose only effect is a prefetch pure, and drops its calls.) */
static inline __attribute__((always_inline)) void mms__slotmap_prefetch(const struct mms__slotmap *m, uint64_t key)
{
	size_t h;

	if (!m->ents)
		return;
	h = mms__slotmap_home(m, mms__slotmap_hash(key));
	__builtin_prefetch(&m->ents[h]);
	if (m->mask >= MMS__SLOTMAP_WIDE)
		__builtin_prefetch(&m->ents[(h + 8) & m->mask]);
}

/* The slot of the first entry whose hash bits are key's, likely key's own
 * (for a prefetch of its record: nothing is read but the table), or -1.
 * Also asks for the line after the entry's, which the removal of key
 * reads when the entries after it go on past their line (the backward
 * shift). */
static inline __attribute__((always_inline)) int64_t mms__slotmap_guess(const struct mms__slotmap *m, uint64_t key)
{
	uint32_t hash = mms__slotmap_hash(key);
	size_t i;

	if (!m->ents)
		return -1;
	for (i = mms__slotmap_home(m, hash); m->ents[i].slot1; i = (i + 1) & m->mask)
		if (m->ents[i].hash == hash) {
			__builtin_prefetch(&m->ents[(i + 8) & m->mask]);
			return (int64_t)m->ents[i].slot1 - 1;
		}
	return -1;
}

#endif /* MMS_SLOTMAP_INT_H */
