/* SPDX-License-Identifier: MIT */
/* myers-int.h: sequence alignment (myers.c). */
#ifndef MMS_MYERS_INT_H
#define MMS_MYERS_INT_H

#include <stddef.h>
#include <stdint.h>

/* --- sequence alignment (myers.c) ----------------------------------------- */

/* Aligns a[0..n) with b[0..m) by Myers' linear-space O((N+M)D) difference
 * algorithm: sets match[i] to the index in b paired with a[i], or SIZE_MAX
 * when a[i] is unpaired; the pairs are increasing in both sequences and
 * pair equal ids. With max_cost 0 the alignment is optimal (a longest
 * common subsequence); otherwise a search that passes max_cost edits
 * splits the problem where it stands, bounding the time at the price of
 * optimality. match holds n entries. Returns 0 or -ENOMEM. */
int mms__myers(const uint32_t *a, size_t n, const uint32_t *b, size_t m, size_t *match, size_t max_cost);

#endif /* MMS_MYERS_INT_H */
