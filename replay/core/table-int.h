/* SPDX-License-Identifier: MIT */
/* table-int.h: big zero-filled tables (table.c). */
#ifndef MMS_TABLE_INT_H
#define MMS_TABLE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Big tables (table.c): from 2 MiB up mapped on their own, aligned for
 * transparent huge pages; below, the heap's. */
/* Returns bytes of zeros, or NULL. Free with mms__table_free(p, bytes). */
void *mms__table_alloc(size_t bytes);
/* The same for a table read and written mostly in order, left to the
 * system's page size: no huge pages asked for. A trace list's 32 MiB of
 * sort keys (2 M blocks) took 9 to 80 ms to be written the first time
 * with them, some of its huge pages' faults 5 ms each on a VM (where the
 * host had taken the memory back), and 19 to 23 ms without; its passes
 * in order gain nothing from them. Its pages are faulted in by one call,
 * as it is written whole: a fault per 4 KiB page traps into the
 * hypervisor on a VM (perl's log, 2 M blocks: the lists' making
 * 300 -> 230 ms). Freed with mms__table_free() too. */
void *mms__table_alloc_seq(size_t bytes);
void mms__table_free(void *p, size_t bytes);
/* mms__grow() for an array of mms__table_alloc()'s (*cap items). */
int mms__table_grow(void *arrayp, size_t *cap, size_t n, size_t elem);

/* mms__table_fit()'s growth, out of line. */
int mms__table_fit_grow(void *arrayp, size_t *n, size_t i, size_t elem);
/* Makes a zero-filled table (*arrayp, *n items of elem bytes) hold index
 * i, doubling it (from 8) and zeroing what it adds. Returns 0, or -1 when
 * out of memory (the table is left as it was). */
static inline int mms__table_fit(void *arrayp, size_t *n, size_t i, size_t elem)
{
	/* Inline, the growth a call: the test runs at every event. */
	return i < *n ? 0 : mms__table_fit_grow(arrayp, n, i, elem);
}

#endif /* MMS_TABLE_INT_H */
