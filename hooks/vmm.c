/* SPDX-License-Identifier: MIT */
/* vmm.c: the recorder's tables of CUDA virtual memory management (cuda.c):
 * the device of each physical allocation handle (cuMemCreate), and the
 * address ranges mapped onto such memory (cuMemMap) that are live.
 *
 * Both are arrays sorted by key, in memory of the recorder's own
 * (mms__map_anon, never the program's heap), doubled when full and
 * mapped only on the first VMM call: a program that makes none pays
 * nothing. Mappings never overlap (the driver refuses to map a range
 * twice), so those that meet a range are consecutive. One lock guards
 * both; cuda.c holds it across the driver's own map, unmap and release
 * calls, so that the tables and the log follow the driver's order. VMM
 * calls are rare (a few per megabytes mapped), never the hot path. */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#include "hooks-int.h"

struct table {
	struct mms_vmm_map *v;
	size_t len, cap;
};

static struct table handles, maps, pinned;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

#define TABLE_MIN 256 /* entries: 6 KiB */

void mms__vmm_lock(void)
{
	pthread_mutex_lock(&lock);
}

void mms__vmm_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

/* The index of the first entry whose key is not below key. */
static size_t lower(const struct table *t, uint64_t key)
{
	size_t lo = 0, hi = t->len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].addr < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Makes room for extra more entries: 0, or -1 when the kernel refuses. */
static int reserve(struct table *t, size_t extra)
{
	size_t cap = t->cap ? t->cap : TABLE_MIN;
	struct mms_vmm_map *v;

	if (t->len + extra <= t->cap)
		return 0;
	while (cap < t->len + extra)
		cap *= 2;
	if (!(v = mms__map_anon(cap * sizeof *v)))
		return -1;
	if (t->v) {
		memcpy(v, t->v, t->len * sizeof *v);
		mms__unmap_own(t->v, t->cap * sizeof *v);
	}
	t->v = v;
	t->cap = cap;
	return 0;
}

/* Replaces the n entries at i with the k entries of with. Room must be
 * reserved. */
static void splice(struct table *t, size_t i, size_t n, const struct mms_vmm_map *with, size_t k)
{
	memmove(t->v + i + k, t->v + i + n, (t->len - i - n) * sizeof *t->v);
	if (k)
		memcpy(t->v + i, with, k * sizeof *with);
	t->len = t->len - n + k;
}

/* Tables keyed by one value (addr): the handles, the pinned blocks. */
static int key_put(struct table *t, const struct mms_vmm_map *e)
{
	size_t i;

	if (reserve(t, 1))
		return -1;
	i = lower(t, e->addr);
	splice(t, i, i < t->len && t->v[i].addr == e->addr, e, 1);
	return 0;
}

static const struct mms_vmm_map *key_get(const struct table *t, uint64_t key)
{
	size_t i = lower(t, key);

	return i < t->len && t->v[i].addr == key ? &t->v[i] : NULL;
}

static void key_drop(struct table *t, uint64_t key)
{
	size_t i = lower(t, key);

	if (i < t->len && t->v[i].addr == key)
		splice(t, i, 1, NULL, 0);
}

int mms__vmm_handle_put(uint64_t handle, unsigned device)
{
	struct mms_vmm_map e = { .addr = handle, .device = device };

	return key_put(&handles, &e);
}

int mms__vmm_handle_device(uint64_t handle, unsigned *device)
{
	const struct mms_vmm_map *e = key_get(&handles, handle);

	if (e)
		*device = e->device;
	return e != NULL;
}

void mms__vmm_handle_drop(uint64_t handle)
{
	key_drop(&handles, handle);
}

int mms__vmm_pinned_put(uint64_t addr, uint64_t size)
{
	struct mms_vmm_map e = { .addr = addr, .size = size };

	return key_put(&pinned, &e);
}

uint64_t mms__vmm_pinned_take(uint64_t addr)
{
	const struct mms_vmm_map *e = key_get(&pinned, addr);
	uint64_t size = e ? e->size : 0;

	key_drop(&pinned, addr);
	return size;
}

int mms__vmm_map_add(const struct mms_vmm_map *m)
{
	if (reserve(&maps, 1))
		return -1;
	splice(&maps, lower(&maps, m->addr), 0, m, 1);
	return 0;
}

size_t mms__vmm_find(uint64_t lo, uint64_t hi, const struct mms_vmm_map **first)
{
	size_t i = lower(&maps, lo), j;

	*first = maps.v;
	if (!maps.len)
		return 0;
	/* The one mapping that begins below lo may reach into the range. */
	if (i > 0 && maps.v[i - 1].addr + maps.v[i - 1].size > lo)
		i--;
	for (j = i; j < maps.len && maps.v[j].addr < hi; j++)
		;
	*first = maps.v + i;
	return j - i;
}

size_t mms__vmm_cut(uint64_t lo, uint64_t hi, struct mms_vmm_map pieces[2])
{
	const struct mms_vmm_map *first;
	size_t n = mms__vmm_find(lo, hi, &first), i, k = 0;
	const struct mms_vmm_map *last;

	if (!n)
		return 0;
	i = (size_t)(first - maps.v);
	last = first + n - 1;
	if (first->addr < lo)
		pieces[k++] = (struct mms_vmm_map){ first->addr, lo - first->addr, first->device, first->stack };
	if (last->addr + last->size > hi)
		pieces[k++] = (struct mms_vmm_map){ hi, last->addr + last->size - hi, last->device, last->stack };
	/* Two pieces of one mapping take one entry more: without room for
	 * it, the higher piece is no longer known. */
	if (k > n && reserve(&maps, 1))
		k = n;
	splice(&maps, i, n, pieces, k);
	return k;
}
