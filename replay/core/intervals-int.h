/* SPDX-License-Identifier: MIT */
/* intervals-int.h: sets of disjoint address ranges (intervals.c). */
#ifndef MMS_INTERVALS_INT_H
#define MMS_INTERVALS_INT_H

#include <stddef.h>
#include <stdint.h>

/* --- disjoint address ranges (intervals.c) ------------------------------ */
struct mms__ivset {
	struct mms__iv {
		uint64_t lo, hi; /* [lo, hi) */
		uint64_t val;    /* the owner's value, copied when a range splits */
	} *iv;                   /* sorted by lo, disjoint */
	size_t n, cap;
	/* Optional: told +1 when a range with val splits in two, -1 when one
	 * disappears, so the owner can count the pieces sharing a value. */
	int (*ref)(void *ctx, uint64_t val, int delta); /* 0, or -ENOMEM (for +1 only) */
	void *ctx;
};

void mms__ivset_free(struct mms__ivset *s);
/* Removes [lo, hi) from the set, cutting or splitting ranges; *removed gets
 * the bytes that were in the set. Returns 0 or -ENOMEM. */
int mms__ivset_remove(struct mms__ivset *s, uint64_t lo, uint64_t hi, uint64_t *removed);
/* Adds [lo, hi) as one range, first removing what it overlaps (*replaced
 * gets those bytes). Returns 0 or -ENOMEM. */
int mms__ivset_add(struct mms__ivset *s, uint64_t lo, uint64_t hi, uint64_t *replaced);
/* Like mms__ivset_add(), giving the new range the value val. */
int mms__ivset_add_val(struct mms__ivset *s, uint64_t lo, uint64_t hi, uint64_t val, uint64_t *replaced);
/* The bytes of [lo, hi) the set holds. */
uint64_t mms__ivset_covered(const struct mms__ivset *s, uint64_t lo, uint64_t hi);
/* Index of the range containing addr, or (size_t)-1. */
size_t mms__ivset_find(const struct mms__ivset *s, uint64_t addr);
/* The index of the first range that ends after lo (s->n when none). */
size_t mms__ivset_first_after(const struct mms__ivset *s, uint64_t lo);

#endif /* MMS_INTERVALS_INT_H */
