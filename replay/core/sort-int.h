/* SPDX-License-Identifier: MIT */
/* sort-int.h: sorting many results (blocks by size, by order) by an
 * integer key (sort.c): a radix sort of (key, index) pairs, after which
 * the caller takes its items in that order. */
#ifndef MMS_SORT_INT_H
#define MMS_SORT_INT_H

#include <stddef.h>
#include <stdint.h>

struct mms__keyed {
	uint64_t key;
	size_t ix;   /* the caller's: what the key is of */
};

/* Sorts the n pairs at v by key ascending, pairs of equal keys by ix (so
 * pairs given in the order of their ix keep it, as a stable sort would
 * keep them), in place: no memory but a few KiB of stack. Returns 0. */
int mms__sort_keyed(struct mms__keyed *v, size_t n);

/* Sorts the n values at v by their bits lo to hi - 1 (hi <= 64) ascending,
 * keeping the order of values equal in those bits (a stable sort), with
 * tmp's room for n more values; 32 KiB of counts on the stack besides. */
void mms__sort_bits(uint64_t *v, uint64_t *tmp, size_t n, unsigned lo, unsigned hi);

/* The number of bits v needs (0 for 0). */
static inline unsigned mms__bits(uint64_t v)
{
	return v ? 64u - (unsigned)__builtin_clzll(v) : 0;
}

#endif /* MMS_SORT_INT_H */
