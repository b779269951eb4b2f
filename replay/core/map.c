/* SPDX-License-Identifier: MIT */
/* map.c: a flat open-addressing hash map from uint64_t to uint64_t, used
 * for the live-block tables and the log's id tables (lookups are inline in
 * map-int.h). */
#include <stddef.h>
#include <stdlib.h>

#include "map-int.h"
#include "probe-int.h"
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

/* The entries an array of 2^bits entries of ent_size bytes takes before
 * it grows (the slot maps' too). Keep the load at or under 3/8 while the
 * array is small enough for the caches: probes and the runs a removal
 * shifts stay short (at one half, replay of a cached heap was 15%
 * slower). Past that, at or under one half: lines come from memory either
 * way, and the memory (zeroed by the kernel as it is touched) counts more.
 * The key 0 is not in the array but counts: one more is fine. */
size_t mms__map_room(unsigned bits, size_t ent_size)
{
	size_t cap = (size_t)1 << bits;

	return cap / 8 * (cap * ent_size < MAP_CACHED ? 3 : 4);
}

static size_t map_room(unsigned bits)
{
	return mms__map_room(bits, sizeof(struct mms__map_ent));
}

void mms__map_free(struct mms__map *m)
{
	mms__table_free(m->ents, m->ents ? (m->mask + 1) * sizeof(*m->ents) : 0);
	mms__map_init(m);
}

/* See probe-int.h. The hint matters: a table that grows by doubling to N
 * entries has touched twice the memory it ends with, and moved each entry
 * about twice: the kernel's zeroing of that memory and the moves were a
 * sixth of a replay of a few million live blocks. */
void *mms__probe_array(unsigned bits, unsigned min_bits, unsigned max_bits, size_t hint, size_t ent_size,
		       unsigned *out_bits)
{
	unsigned want;
	void *a;

	bits = bits ? bits + 1 : min_bits;
	if (bits > max_bits)
		return NULL;
	for (want = bits; hint > mms__map_room(want, ent_size) && want < max_bits; want++)
		;
	/* A hint the memory cannot take falls back to doubling. */
	a = mms__table_alloc(((size_t)1 << want) * ent_size);
	if (a)
		bits = want;
	else if (want == bits || !(a = mms__table_alloc(((size_t)1 << bits) * ent_size)))
		return NULL;
	*out_bits = bits;
	return a;
}

#define MAP_USED(e) ((e)->key)
#define MAP_HOME(m, e) mms__map_home(m, (e)->key)

/* Doubles the array (or makes the first), moving every entry; or makes
 * it as large as m->hint asks, once. */
static int map_grow(struct mms__map *m)
{
	struct mms__map n = *m;
	unsigned bits;

#define NEW_HOME(e) MAP_HOME(&n, e)
	n.ents = mms__probe_array(m->ents ? 64 - m->shift : 0, MAP_MIN_BITS, 8 * sizeof(size_t) - 6, m->hint,
				  sizeof(*n.ents), &bits);
	if (!n.ents)
		return -1;
	n.hint = 0;
	n.mask = ((size_t)1 << bits) - 1;
	n.shift = 64 - bits;
	n.room = map_room(bits);
	MMS__PROBE_REHASH(m->ents, m->mask, n.ents, n.mask, MAP_USED, NEW_HOME);
#undef NEW_HOME
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

/* Empties entry e: backward-shift deletion (probe-int.h). */
void mms__map_erase(struct mms__map *m, struct mms__map_ent *e)
{
#define OLD_HOME(e) MAP_HOME(m, e)
#define MAP_CLEAR(e) ((e)->key = 0)
	MMS__PROBE_ERASE(m->ents, m->mask, (size_t)(e - m->ents), MAP_USED, OLD_HOME, MAP_CLEAR);
#undef OLD_HOME
#undef MAP_CLEAR
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
