/* SPDX-License-Identifier: MIT */
/* sort.c: sorts (key, index) pairs by a most-significant-digit radix sort
 * in place (American flag sort) over the bytes in which the keys differ:
 * a million blocks live at a peak take a few counting passes instead of
 * qsort()'s twenty million calls of a comparison, and no second array
 * (16 bytes a block of freshly touched memory, which is time on a VM);
 * and sorts 64-bit values that carry their key and index together by a
 * least-significant-digit radix sort, in half the bytes, where the caller
 * has the room of a second array already. */
#include <stdlib.h>
#include <string.h>

#include "sort-int.h"

/* Below this many pairs an insertion sort is quicker than a level more. */
#define SMALL 32

/* Pairs of equal keys by index. */
static int pair_cmp(const struct mms__keyed *x, const struct mms__keyed *y)
{
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->ix < y->ix ? -1 : x->ix > y->ix;
}

static int ix_cmp(const void *a, const void *b)
{
	return pair_cmp(a, b);
}

static void insertion(struct mms__keyed *v, size_t n)
{
	struct mms__keyed x;
	size_t i, j;

	for (i = 1; i < n; i++) {
		x = v[i];
		for (j = i; j && pair_cmp(&v[j - 1], &x) > 0; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* Sorts v by the bytes of the keys from byte `byte` down (the bytes above
 * are the same in all of v), then equal keys by index. */
static void flag_sort(struct mms__keyed *v, size_t n, int byte)
{
	size_t count[256], next[256], end[256], i, sum;
	struct mms__keyed x, t;
	unsigned d, b, shift;

	for (;;) {
		if (n <= SMALL) {
			insertion(v, n);
			return;
		}
		if (byte < 0) {
			/* Every key is the same. */
			qsort(v, n, sizeof(*v), ix_cmp);
			return;
		}
		shift = 8u * (unsigned)byte;
		for (i = 0; i < 256; i++)
			count[i] = 0;
		for (i = 0; i < n; i++)
			count[(v[i].key >> shift) & 0xff]++;
		if (count[(v[0].key >> shift) & 0xff] != n)
			break;
		byte--; /* every key has this byte: nothing moves */
	}
	for (sum = 0, i = 0; i < 256; i++) {
		next[i] = sum;
		sum += count[i];
		end[i] = sum;
	}
	/* Each pair goes straight to the next free place of its bucket,
	 * taking out the pair there, until one that belongs to the place
	 * being filled comes back. */
	for (b = 0; b < 256; b++) {
		while (next[b] < end[b]) {
			x = v[next[b]];
			for (d = (x.key >> shift) & 0xff; d != b; d = (x.key >> shift) & 0xff) {
				t = v[next[d]];
				v[next[d]++] = x;
				x = t;
			}
			v[next[b]++] = x;
		}
	}
	for (sum = 0, b = 0; b < 256; sum += count[b++])
		if (count[b] > 1)
			flag_sort(v + sum, count[b], byte - 1);
}

int mms__sort_keyed(struct mms__keyed *v, size_t n)
{
	uint64_t any = 0;
	size_t i;

	for (i = 0; i < n; i++)
		any |= v[i].key;
	/* From the highest byte a key has set. */
	flag_sort(v, n, any ? (int)(mms__bits(any) - 1) / 8 : -1);
	return 0;
}

/* The digits of mms__sort_bits(): 1024 buckets. A 30-bit key (a size's
 * rank over an event) takes three passes; 2048 buckets, the same three,
 * took twice the time here for 2 M values (10 against 22 ms: a pass
 * writes to as many places at once as there are buckets, and 2048 of
 * them outrun the caches' room for lines being written), and 256
 * buckets' four passes 12 to 15 ms. */
#define DIGIT 10
#define BUCKETS (1u << DIGIT)

/* The mask of the digit at shift, where hi may end it early. */
static inline uint64_t digit_mask(unsigned shift, unsigned hi)
{
	return (hi - shift < DIGIT ? ((uint64_t)1 << (hi - shift)) : BUCKETS) - 1;
}

void mms__sort_bits(uint64_t *v, uint64_t *tmp, size_t n, unsigned lo, unsigned hi)
{
	/* The counts of this pass's digit, and of the next one's, counted
	 * while this pass moves the values: one read of the values a pass
	 * and one more at the start, not two a pass. */
	size_t counts[2][BUCKETS], *cur = counts[0], *next = counts[1], *sw, i, sum, c;
	uint64_t *from = v, *to = tmp, *swap, x, mask, nmask;
	unsigned shift, nshift, b;
	int ready = 0;

	if (n < 2)
		return;
	for (shift = lo; shift < hi; shift += DIGIT) {
		mask = digit_mask(shift, hi);
		nshift = shift + DIGIT;
		nmask = nshift < hi ? digit_mask(nshift, hi) : 0;
		if (!ready) {
			memset(cur, 0, BUCKETS * sizeof(*cur));
			for (i = 0; i < n; i++)
				cur[(from[i] >> shift) & mask]++;
		}
		ready = 0;
		if (cur[(from[0] >> shift) & mask] == n)
			continue; /* every value has this digit */
		for (sum = 0, b = 0; b <= mask; b++) {
			c = cur[b];
			cur[b] = sum;
			sum += c;
		}
		if (nmask) {
			memset(next, 0, BUCKETS * sizeof(*next));
			for (i = 0; i < n; i++) {
				x = from[i];
				to[cur[(x >> shift) & mask]++] = x;
				next[(x >> nshift) & nmask]++;
			}
			ready = 1;
		} else {
			for (i = 0; i < n; i++) {
				x = from[i];
				to[cur[(x >> shift) & mask]++] = x;
			}
		}
		swap = from;
		from = to;
		to = swap;
		sw = cur;
		cur = next;
		next = sw;
	}
	if (from != v)
		memcpy(v, from, n * sizeof(*v));
}
