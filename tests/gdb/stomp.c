/* SPDX-License-Identifier: MIT */
/* stomp.c: six operator launches over an arena of two pool blocks, `own'
 * (64 bytes) and its neighbour `nb' (32 bytes) right after it. Each
 * launch fills `own'; the third one, "scale", writes 8 bytes past its end,
 * into the first 8 bytes of `nb' (a0..a7 become 20..27). tests/gdb/watch.sh
 * watches `nb' from ready() on: gdb must stop once, in launch 3.
 *
 * The program gives the same stops at any optimization level: the
 * functions gdb names are not inlined and end with a barrier (no tail
 * calls), the pointers gdb reads are volatile globals. */
#include <stdlib.h>

#include "msmemscope.h"

#define OWN 64
#define NB 32
#define OVERRUN 8

unsigned char *volatile own;
unsigned char *volatile nb;

static const char *const names[6] = { "embed", "norm", "scale", "mix", "pool", "out" };

void ready(void);

/* Where the test arms its watch: the arena is set up, no launch ran. */
__attribute__((noinline)) void ready(void)
{
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) static void op_run(int k)
{
	unsigned n = OWN + (k == 2 ? OVERRUN : 0);

	msmemscope_op_begin(names[k]);
	for (unsigned i = 0; i < n; i++)
		own[i] = (unsigned char)((k << 4) | (i & 15));
	msmemscope_op_end();
	__asm__ __volatile__("" ::: "memory");
}

int main(void)
{
	unsigned char *arena = malloc(OWN + NB);

	if (!arena)
		return 1;
	own = arena;
	nb = arena + OWN;
	msmemscope_pool_alloc("arena", own, OWN, OWN + NB, OWN);
	msmemscope_pool_alloc("arena", nb, NB, OWN + NB, OWN + NB);
	for (unsigned i = 0; i < NB; i++)
		nb[i] = (unsigned char)(0xa0 + i);
	ready();
	for (int k = 0; k < 6; k++)
		op_run(k);
	msmemscope_pool_free("arena", nb, NB, OWN + NB, OWN);
	msmemscope_pool_free("arena", own, OWN, OWN + NB, 0);
	free(arena);
	return 0;
}
