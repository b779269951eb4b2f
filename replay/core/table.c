/* SPDX-License-Identifier: MIT */
/* table.c: memory for the replay's big tables (hash maps, the heap
 * state's block slots). From 2 MiB up a table is mapped on its own,
 * aligned to 2 MiB and marked for transparent huge pages: a random access
 * that misses the TLB costs two to three times one that hits it (a page
 * walk, nested under virtualization), and a table of millions of live
 * blocks misses it on nearly every event with 4 KiB pages. */
#define _GNU_SOURCE /* mremap */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "table-int.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define TABLE_HUGE ((size_t)2 << 20)

static size_t huge_round(size_t bytes)
{
	return (bytes + TABLE_HUGE - 1) & ~(TABLE_HUGE - 1);
}

/* A table of its own mapping, aligned to 2 MiB; marked for huge pages
 * when huge. */
static void *table_map(size_t bytes, int huge)
{
	size_t size;
	char *p, *a;

	if (bytes < TABLE_HUGE)
		return calloc(1, bytes);
	size = huge_round(bytes);
	if (size < bytes)
		return NULL;
	/* Map one huge page more and trim it to alignment. */
	p = mmap(NULL, size + TABLE_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + TABLE_HUGE - 1) & ~(uintptr_t)(TABLE_HUGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + size + TABLE_HUGE > a + size)
		munmap(a + size, (size_t)(p + size + TABLE_HUGE - (a + size)));
#ifdef MADV_HUGEPAGE
	/* A hint: without huge pages the table works the same. */
	if (huge)
		madvise(a, size, MADV_HUGEPAGE);
#endif
	return a;
}

void *mms__table_alloc(size_t bytes)
{
	return table_map(bytes, 1);
}

void *mms__table_alloc_seq(size_t bytes)
{
	void *p = table_map(bytes, 0);

	/* Its pages faulted in by one call (a hint: an older kernel faults
	 * them as they are first written). */
	if (p && bytes >= TABLE_HUGE)
		madvise(p, huge_round(bytes), MADV_POPULATE_WRITE);
	return p;
}

void mms__table_free(void *p, size_t bytes)
{
	if (!p)
		return;
	if (bytes < TABLE_HUGE)
		free(p);
	else
		munmap(p, huge_round(bytes));
}

int mms__table_grow(void *arrayp, size_t *cap, size_t n, size_t elem)
{
	size_t ncap, old;
	void *p, *q;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	if (ncap > SIZE_MAX / elem)
		return -1;
	old = *cap * elem;
	memcpy(&p, arrayp, sizeof(p));
	if (ncap * elem < TABLE_HUGE) {
		q = realloc(p, ncap * elem);
	} else if (old >= TABLE_HUGE) {
		/* The kernel moves the pages, huge ones whole where the new
		 * place is aligned (as it places big mappings): no copy, and
		 * only the new half is zeroed, when first touched. */
		q = mremap(p, huge_round(old), huge_round(ncap * elem), MREMAP_MAYMOVE);
		if (q == MAP_FAILED)
			q = NULL;
	} else {
		q = mms__table_alloc(ncap * elem);
		if (q) {
			memcpy(q, p, n * elem);
			mms__table_free(p, old);
		}
	}
	if (!q)
		return -1;
	memcpy(arrayp, &q, sizeof(q));
	*cap = ncap;
	return 0;
}

int mms__table_fit_grow(void *arrayp, size_t *n, size_t i, size_t elem)
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
