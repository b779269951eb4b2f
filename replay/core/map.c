/* SPDX-License-Identifier: MIT */
/* map.c: a flat open-addressing hash map from uint64_t to uint64_t, used
 * for the live-block tables and the log's id tables (lookups are inline in
 * map-int.h). */
#include <stddef.h>
#include <stdlib.h>

#include "map-int.h"
#include "table-int.h"

#define MAP_MIN_BITS 6u
#define MAP_CACHED ((size_t)2 << 20) /* bytes of entries that stay in the caches */

void mms__map_init(struct mms__map *m)
{
	m->ents = NULL;
	m->mask = 0;
	m->count = 0;
	m->room = 0;
	m->shift = 64;
	m->has_zero = 0;
	m->zero_val = 0;
	m->hint = 0;
}

/* The entries an array of 2^bits entries takes before it grows. Keep the
 * load at or under 3/8 while the array is small enough for the caches:
 * probes and the runs a removal shifts stay short (at one half, replay of
 * a cached heap was 15% slower). Past that, at or under one half: lines
 * come from memory either way, and the memory (zeroed by the kernel as it
 * is touched) counts more. The key 0 is not in the array but counts: one
 * more is fine. */
static size_t map_room(unsigned bits)
{
	size_t cap = (size_t)1 << bits;

	return cap / 8 * (cap * sizeof(struct mms__map_ent) < MAP_CACHED ? 3 : 4);
}

void mms__map_free(struct mms__map *m)
{
	mms__table_free(m->ents, m->ents ? (m->mask + 1) * sizeof(*m->ents) : 0);
	mms__map_init(m);
}

/* Doubles the array (or makes the first), moving every entry; or makes
 * it as large as m->hint asks, once. A table that grows by doubling to N
 * entries has touched twice the memory it ends with, and moved each entry
 * about twice: the kernel's zeroing of that memory and the moves were a
 * sixth of a replay of a few million live blocks. */
static int map_grow(struct mms__map *m)
{
	unsigned bits = m->ents ? 64 - m->shift + 1 : MAP_MIN_BITS, want = bits;
	struct mms__map n = *m;
	const struct mms__map_ent *e;
	size_t i, j;

	while (m->hint > map_room(want) && want < 8 * sizeof(size_t) - 6)
		want++;
	n.hint = 0;
	/* A hint the memory cannot take falls back to doubling. */
	n.ents = mms__table_alloc(((size_t)1 << want) * sizeof(*n.ents));
	if (n.ents)
		bits = want;
	else if (want == bits || !(n.ents = mms__table_alloc(((size_t)1 << bits) * sizeof(*n.ents))))
		return -1;
	n.mask = ((size_t)1 << bits) - 1;
	n.shift = 64 - bits;
	n.room = map_room(bits);
	for (i = 0; m->ents && i <= m->mask; i++) {
		/* The new array is too big for the cache when it matters:
		 * ask for the line of an entry some way on. */
		if (i + 16 <= m->mask && m->ents[i + 16].key)
			__builtin_prefetch(&n.ents[mms__map_home(&n, m->ents[i + 16].key)], 1);
		e = &m->ents[i];
		if (!e->key)
			continue;
		for (j = mms__map_home(&n, e->key); n.ents[j].key; j = (j + 1) & n.mask)
			;
		n.ents[j] = *e;
	}
	mms__table_free(m->ents, m->ents ? (m->mask + 1) * sizeof(*m->ents) : 0);
	*m = n;
	return 0;
}

uint64_t *mms__map_put_slow(struct mms__map *m, uint64_t key, int *isnew)
{
	int dummy;

	if (!isnew)
		isnew = &dummy;
	if (!key) {
		*isnew = !m->has_zero;
		if (*isnew) {
			m->has_zero = 1;
			m->zero_val = 0;
			m->count++;
		}
		return &m->zero_val;
	}
	if (map_grow(m))
		return NULL;
	return mms__map_put(m, key, isnew);
}

/* Empties entry e, moving later entries of its probe run back into the
 * hole when their home does not lie between the hole and them: no
 * tombstones. */
void mms__map_erase(struct mms__map *m, struct mms__map_ent *e)
{
	size_t i = (size_t)(e - m->ents), j, home, dst;
	int move;

	for (j = (i + 1) & m->mask; m->ents[j].key; j = (j + 1) & m->mask) {
		home = mms__map_home(m, m->ents[j].key);
		move = ((j - home) & m->mask) >= ((j - i) & m->mask);
		/* Without a branch, which would go either way at random: an
		 * entry that stays is copied onto itself. */
		dst = move ? i : j;
		m->ents[dst] = m->ents[j];
		i = move ? j : i;
	}
	m->ents[i].key = 0;
	m->count--;
}

int mms__map_del_slow(struct mms__map *m, uint64_t key, uint64_t *val)
{
	if (key || !m->has_zero)
		return 0; /* a key other than 0 comes here only when the map is empty */
	if (val)
		*val = m->zero_val;
	m->has_zero = 0;
	m->count--;
	return 1;
}

int mms__map_del_if(struct mms__map *m, uint64_t key, uint64_t val)
{
	uint64_t *v = mms__map_get(m, key);

	if (!v || *v != val)
		return 0;
	return mms__map_del(m, key, NULL);
}
