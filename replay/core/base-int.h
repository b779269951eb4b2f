/* SPDX-License-Identifier: MIT */
/* base-int.h: what every module of the replay library may use: the mark of an
 * exported function and growable arrays. */
#ifndef MMS_BASE_INT_H
#define MMS_BASE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MMS__EXPORT __attribute__((visibility("default")))

/* Makes room for one more item in a growable array of elem-sized items
 * (*arrayp, *cap items allocated, n in use), doubling it. Returns 0, or -1
 * when out of memory (the array is left as it was). */
static inline int mms__grow(void *arrayp, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	/* The pointer is copied in and out with memcpy, not through a
	 * void ** lvalue, which would break strict aliasing. */
	memcpy(&p, arrayp, sizeof(p));
	p = realloc(p, ncap * elem);
	if (!p)
		return -1;
	memcpy(arrayp, &p, sizeof(p));
	*cap = ncap;
	return 0;
}

/* a + b and a - b, held at the ends of int64_t where they would
 * overflow: sums of sizes read from files, which may be absurd. */
static inline int64_t mms__add_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (!__builtin_add_overflow(a, b, &r))
		return r;
	return b > 0 ? INT64_MAX : INT64_MIN;
}

static inline int64_t mms__sub_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (!__builtin_sub_overflow(a, b, &r))
		return r;
	return b < 0 ? INT64_MAX : INT64_MIN;
}

#endif /* MMS_BASE_INT_H */
