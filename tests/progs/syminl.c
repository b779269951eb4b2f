/* SPDX-License-Identifier: MIT */
/* syminl.c: an allocation inside a function that is always inlined, for
 * the symbolizer's inlined frames (see tests/progs/symbolize.sh). */
#include <stdlib.h>

#include "symprog.h"

static inline __attribute__((always_inline)) void *sym_inl_alloc(size_t n)
{
	void *p = malloc(n); /* SYM-INL-ALLOC */

	sym_keep(p);
	return p;
}

__attribute__((noinline)) void *sym_outer(size_t n)
{
	void *p = sym_inl_alloc(n); /* SYM-INL-CALL */

	sym_keep(p);
	return p;
}
