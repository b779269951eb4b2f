/* SPDX-License-Identifier: MIT */
/* intervals.c: a sorted set of disjoint address ranges, the live mappings
 * of the MMAP kind, where munmap may cut one mapping or span several. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base-int.h"
#include "intervals-int.h"

void mms__ivset_free(struct mms__ivset *s)
{
	free(s->iv);
	s->iv = NULL;
	s->n = s->cap = 0;
}

/* Ranges are disjoint and sorted, so their ends are sorted too: a binary
 * search. */
size_t mms__ivset_first_after(const struct mms__ivset *s, uint64_t lo)
{
	size_t a = 0, b = s->n, m;

	while (a < b) {
		m = a + (b - a) / 2;
		if (s->iv[m].hi <= lo)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

int mms__ivset_remove(struct mms__ivset *s, uint64_t lo, uint64_t hi, uint64_t *removed)
{
	size_t i, j;
	uint64_t gone = 0;

	*removed = 0;
	if (lo >= hi)
		return 0;
	i = mms__ivset_first_after(s, lo);
	if (i < s->n && s->iv[i].lo < lo && s->iv[i].hi > hi) {
		/* A hole in the middle of one mapping splits it in two. */
		if (mms__grow(&s->iv, &s->cap, s->n, sizeof(*s->iv)) || (s->ref && s->ref(s->ctx, s->iv[i].val, 1)))
			return -ENOMEM;
		memmove(&s->iv[i + 2], &s->iv[i + 1], (s->n - i - 1) * sizeof(*s->iv));
		s->iv[i + 1].lo = hi;
		s->iv[i + 1].hi = s->iv[i].hi;
		s->iv[i + 1].val = s->iv[i].val;
		s->iv[i].hi = lo;
		s->n++;
		*removed = hi - lo;
		return 0;
	}
	if (i < s->n && s->iv[i].lo < lo) {
		gone += s->iv[i].hi - lo;
		s->iv[i].hi = lo;
		i++;
	}
	for (j = i; j < s->n && s->iv[j].lo < hi && s->iv[j].hi <= hi; j++) {
		gone += s->iv[j].hi - s->iv[j].lo;
		if (s->ref)
			(void)s->ref(s->ctx, s->iv[j].val, -1);
	}
	if (j < s->n && s->iv[j].lo < hi) {
		gone += hi - s->iv[j].lo;
		s->iv[j].lo = hi;
	}
	if (j > i) {
		memmove(&s->iv[i], &s->iv[j], (s->n - j) * sizeof(*s->iv));
		s->n -= j - i;
	}
	*removed = gone;
	return 0;
}

int mms__ivset_add(struct mms__ivset *s, uint64_t lo, uint64_t hi, uint64_t *replaced)
{
	return mms__ivset_add_val(s, lo, hi, 0, replaced);
}

int mms__ivset_add_val(struct mms__ivset *s, uint64_t lo, uint64_t hi, uint64_t val, uint64_t *replaced)
{
	size_t i;
	int rc;

	/* A new mapping over old ones replaces them, as MAP_FIXED does. */
	rc = mms__ivset_remove(s, lo, hi, replaced);
	if (rc || lo >= hi)
		return rc;
	if (mms__grow(&s->iv, &s->cap, s->n, sizeof(*s->iv)))
		return -ENOMEM;
	i = mms__ivset_first_after(s, lo);
	memmove(&s->iv[i + 1], &s->iv[i], (s->n - i) * sizeof(*s->iv));
	s->iv[i].lo = lo;
	s->iv[i].hi = hi;
	s->iv[i].val = val;
	s->n++;
	return 0;
}

uint64_t mms__ivset_covered(const struct mms__ivset *s, uint64_t lo, uint64_t hi)
{
	uint64_t n = 0;

	for (size_t i = mms__ivset_first_after(s, lo); i < s->n && s->iv[i].lo < hi; i++)
		n += (s->iv[i].hi < hi ? s->iv[i].hi : hi) - (s->iv[i].lo > lo ? s->iv[i].lo : lo);
	return n;
}

size_t mms__ivset_find(const struct mms__ivset *s, uint64_t addr)
{
	size_t i = mms__ivset_first_after(s, addr);

	return i < s->n && s->iv[i].lo <= addr ? i : (size_t)-1;
}
