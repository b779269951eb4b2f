/* SPDX-License-Identifier: MIT */
/* map-int.h: the flat hash map of uint64_t keys and values (map.c), with
 * its lookups inline: every event takes some. */
#ifndef MMS_MAP_INT_H
#define MMS_MAP_INT_H

#include <stddef.h>
#include <stdint.h>

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
	size_t hint;     /* entries expected (0: unknown): the next growth makes
	                    room for them at once, not by doubling */
};

/* The entries an open-addressing array of 2^bits entries of ent_size
 * bytes takes before it grows. */
size_t mms__map_room(unsigned bits, size_t ent_size);
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

#endif /* MMS_MAP_INT_H */
