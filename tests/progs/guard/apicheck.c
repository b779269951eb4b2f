/* SPDX-License-Identifier: MIT */
/* apicheck.c: an overflow of a live block, found by the program's own
 * msmemscope_guard_check() before the block is freed (guard: one
 * overflow of an 8-byte block, at a full check; the free finds the zone
 * repaired). Natively the call is the stubs' no-op. */
#include <stdio.h>
#include <stdlib.h>

#include "msmemscope.h"

/* Where the check can see it: the compiler keeps the stray store. */
char *volatile block;

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? (size_t)atoi(argv[1]) : 8;
	int found;

	block = malloc(n); /* ALLOC */
	block[n] = 1; /* one past the end */
	found = msmemscope_guard_check();
	msmemscope_step();
	free(block);
	printf("checked\n");
	return found > 1;
}
