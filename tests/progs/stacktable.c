/* SPDX-License-Identifier: MIT */
/* stacktable.c: allocations from more distinct call stacks than the
 * recorder's first table of stack frames holds (3 M frames): each of N
 * allocations (argument, default 200000) comes from a path of DEPTH
 * recursive calls chosen at random among 16 functions per level, so the
 * stacks share little below their first levels. The last allocation
 * comes from last_alloc(), which the test looks for in its stack; it and
 * the blocks of the last 16 walks, whose stacks' innermost frames are
 * new when the first table is full, are kept to the end (leaks); the
 * others are freed at once. No stdio. */
#include <stdlib.h>

#include "progs.h"

#define DEPTH 10

static void *volatile sink;
static int keep;           /* leaf() keeps its block: the last KEPT walks */
static void *kept[16];
static int nkept;
static unsigned long long rng = 0x9e3779b97f4a7c15ull;

__attribute__((noinline)) static void leaf(void)
{
	void *p = malloc(16);

	sink = p;
	if (keep && nkept < 16)
		kept[nkept++] = p;
	else
		free(p);
}

__attribute__((noinline)) static void last_alloc(void)
{
	sink = malloc(24);
}

static void walk(int depth);
static char marks[16];

/* Sixteen functions that call walk() again: in walk(), sixteen calls of
 * different targets, each with its own return address, and in each
 * function another. Their bodies differ (the mark each stores), so that
 * no optimizer folds them into one (GCC's identical code folding at -O2). */
#define STEP(k)                                                        \
	__attribute__((noinline)) static void step##k(int depth)        \
	{                                                              \
		walk(depth);                                           \
		sink = &marks[k]; /* no tail call; a body of its own */ \
	}
STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7)
STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15)

__attribute__((noinline)) static void walk(int depth)
{
	if (!depth) {
		leaf();
		return;
	}
	switch (prog_rand(&rng) & 15) {
	case 0: step0(depth - 1); break;
	case 1: step1(depth - 1); break;
	case 2: step2(depth - 1); break;
	case 3: step3(depth - 1); break;
	case 4: step4(depth - 1); break;
	case 5: step5(depth - 1); break;
	case 6: step6(depth - 1); break;
	case 7: step7(depth - 1); break;
	case 8: step8(depth - 1); break;
	case 9: step9(depth - 1); break;
	case 10: step10(depth - 1); break;
	case 11: step11(depth - 1); break;
	case 12: step12(depth - 1); break;
	case 13: step13(depth - 1); break;
	case 14: step14(depth - 1); break;
	default: step15(depth - 1); break;
	}
	sink = &rng; /* no tail call */
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? prog_arg(argv[1], "allocations") : 200000, i;

	for (i = 0; i < n; i++) {
		keep = i + 16 >= n;
		walk(DEPTH);
	}
	last_alloc();
	return 0;
}
