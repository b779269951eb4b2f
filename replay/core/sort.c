/* SPDX-License-Identifier: MIT */
/* sort.c: sorts (key, index) pairs by a least-significant-digit radix sort
 * over the bytes in which the keys differ: a million blocks live at a
 * peak take six counting passes instead of qsort()'s twenty million calls
 * of a comparison. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sort-int.h"

int mms__sort_keyed(struct mms__keyed *v, size_t n)
{
	size_t (*count)[256], i, sum, c;
	struct mms__keyed *a = v, *b, *t;
	unsigned d;

	if (n < 2)
		return 0;
	count = calloc(8, sizeof(*count));
	b = malloc(n * sizeof(*b));
	if (!count || !b) {
		free(count);
		free(b);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		for (d = 0; d < 8; d++)
			count[d][(v[i].key >> (8 * d)) & 0xff]++;
	for (d = 0; d < 8; d++) {
		if (count[d][(v[0].key >> (8 * d)) & 0xff] == n)
			continue; /* every key has this byte: nothing moves */
		for (sum = 0, i = 0; i < 256; i++) {
			c = count[d][i];
			count[d][i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			b[count[d][(a[i].key >> (8 * d)) & 0xff]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	if (a != v)
		memcpy(v, a, n * sizeof(*v));
	free(a == v ? b : a);
	free(count);
	return 0;
}
