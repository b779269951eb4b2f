/* SPDX-License-Identifier: MIT */
/* guardop.c: for guard mode under gdb. Six operator launches over a
 * 24-byte block; the third, "scale", stores 4 bytes past its end (the
 * line marked STRAY), into the block's red zone. checked() is where
 * tests/gdb/guard.sh runs `memscope check'; the free of the block finds
 * the damage too. The functions gdb names are not inlined and end with a
 * barrier; the pointer gdb reads is a volatile global. */
#include <stdlib.h>

#include "msmemscope.h"

#define SIZE 24

unsigned char *volatile buf;
volatile unsigned over = 4;

static const char *const names[6] = { "embed", "norm", "scale", "mix", "pool", "out" };

void checked(void);

__attribute__((noinline)) void checked(void)
{
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) static void op_run(int k)
{
	msmemscope_op_begin(names[k]);
	for (unsigned i = 0; i < SIZE; i++)
		buf[i] = (unsigned char)(k + i);
	if (k == 2)
		*(volatile unsigned *)(buf + SIZE) = 0x5a5a5a5au + over; /* STRAY */
	msmemscope_op_end();
	__asm__ __volatile__("" ::: "memory");
}

int main(void)
{
	buf = malloc(SIZE);
	if (!buf)
		return 1;
	for (int k = 0; k < 6; k++)
		op_run(k);
	checked();
	free(buf);
	return 0;
}
