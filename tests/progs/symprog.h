/* SPDX-License-Identifier: MIT */
/* symprog.h: what the symbolization test program's files share. */
#ifndef MMS_TEST_SYMPROG_H
#define MMS_TEST_SYMPROG_H

#include <stddef.h>

/* Sizes that name each allocation in the log. */
#define SYM_SIZE_DIRECT 7001
#define SYM_SIZE_INLINE 7002
#define SYM_SIZE_LIB 7003
#define SYM_SIZE_RUST 7004

/* Keeps p live in a register across the asm: a call whose result is
 * used after it is never turned into a tail call (a jump would take the
 * caller's frame out of the recorded stack). */
static inline void sym_keep(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

void *sym_outer(size_t n);

#endif /* MMS_TEST_SYMPROG_H */
