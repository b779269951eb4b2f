/* SPDX-License-Identifier: MIT */
/* map.c: a flat open-addressing hash map from uint64_t to uint64_t, used
 * for the live-block tables and the log's id tables. */
#include <stdlib.h>

#include "replay-int.h"

#define MAP_MIN_CAP 64u

static inline size_t map_slot(uint64_t key, size_t mask)
{
	/* Fibonacci hashing: addresses share low zero bits, so mix them all
	 * into the high half before taking the slot. */
	uint64_t h = key * 0x9e3779b97f4a7c15ull;
	return (size_t)(h ^ (h >> 32)) & mask;
}

void mms__map_init(struct mms__map *m)
{
	m->keys = NULL;
	m->vals = NULL;
	m->used = NULL;
	m->mask = 0;
	m->count = 0;
}

void mms__map_free(struct mms__map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	mms__map_init(m);
}

uint64_t *mms__map_get(const struct mms__map *m, uint64_t key)
{
	size_t i;

	if (!m->count)
		return NULL;
	for (i = map_slot(key, m->mask); m->used[i]; i = (i + 1) & m->mask)
		if (m->keys[i] == key)
			return &m->vals[i];
	return NULL;
}

static int map_grow(struct mms__map *m)
{
	size_t cap = m->mask ? (m->mask + 1) * 2 : MAP_MIN_CAP;
	struct mms__map n;
	size_t i, j;

	n.keys = malloc(cap * sizeof(*n.keys));
	n.vals = malloc(cap * sizeof(*n.vals));
	n.used = calloc(cap, 1);
	if (!n.keys || !n.vals || !n.used) {
		free(n.keys);
		free(n.vals);
		free(n.used);
		return -1;
	}
	n.mask = cap - 1;
	n.count = m->count;
	for (i = 0; m->mask && i <= m->mask; i++) {
		if (!m->used[i])
			continue;
		for (j = map_slot(m->keys[i], n.mask); n.used[j]; j = (j + 1) & n.mask)
			;
		n.used[j] = 1;
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
	}
	mms__map_free(m);
	*m = n;
	return 0;
}

uint64_t *mms__map_put(struct mms__map *m, uint64_t key, int *isnew)
{
	size_t i;

	/* Keep the load at or under one half: probes stay short. */
	if ((m->count + 1) * 2 > (m->mask ? m->mask + 1 : 0) && map_grow(m))
		return NULL;
	for (i = map_slot(key, m->mask); m->used[i]; i = (i + 1) & m->mask) {
		if (m->keys[i] == key) {
			if (isnew)
				*isnew = 0;
			return &m->vals[i];
		}
	}
	m->used[i] = 1;
	m->keys[i] = key;
	m->vals[i] = 0;
	m->count++;
	if (isnew)
		*isnew = 1;
	return &m->vals[i];
}

int mms__map_del(struct mms__map *m, uint64_t key, uint64_t *val)
{
	size_t i, j, home;

	if (!m->count)
		return 0;
	for (i = map_slot(key, m->mask); m->used[i]; i = (i + 1) & m->mask)
		if (m->keys[i] == key)
			break;
	if (!m->used[i])
		return 0;
	if (val)
		*val = m->vals[i];
	/* Backward-shift deletion: move later entries of the probe run into
	 * the hole when their home slot does not lie between hole and them. */
	for (j = (i + 1) & m->mask; m->used[j]; j = (j + 1) & m->mask) {
		home = map_slot(m->keys[j], m->mask);
		if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->used[i] = 0;
	m->count--;
	return 1;
}
