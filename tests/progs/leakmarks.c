/* SPDX-License-Identifier: MIT */
/* leakmarks.c: a loop whose iterations begin with msmemscope_mark("iter"),
 * for the leaks analysis's marks rule (--leak-marks): a block allocated
 * between two "iter" marks and still live at the next one is a leak.
 * Five iterations; iteration i (from 0) allocates 100 bytes it frees at
 * once, kept[i] of 1000 + i bytes kept to the end (KEEP_LINE), and in
 * iteration 1 a block of 777 bytes (LATE_LINE) freed in iteration 3.
 * Marks named "other" end each iteration: the rule counts only its name.
 * "leakmarks steps" also ends each iteration with msmemscope_step().
 * Prints each kept block's address and the late one's, after the loop. */
#include <stdlib.h>
#include <string.h>

#include "msmemscope.h"
#include "progs.h"

#define ITERATIONS 5

static void *volatile sink;

/* Uses a block, so the compiler cannot drop a malloc/free pair. */
__attribute__((noinline)) static void *use(void *p, size_t size)
{
	if (!p)
		prog_die("out of memory");
	memset(p, 3, size);
	sink = p;
	return p;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 && !strcmp(argv[1], "steps");
	void *kept[ITERATIONS], *late = NULL, *tmp;
	int i;

	for (i = 0; i < ITERATIONS; i++) {
		msmemscope_mark("iter");
		tmp = use(malloc(100), 100);
		kept[i] = use(malloc(1000 + (size_t)i), 1000 + (size_t)i); /* KEEP_LINE */
		if (i == 1)
			late = use(malloc(777), 777); /* LATE_LINE */
		if (i == 3)
			free(late);
		free(tmp);
		msmemscope_mark("other");
		if (steps)
			msmemscope_step();
	}
	for (i = 0; i < ITERATIONS; i++)
		prog_say(1, "kept %d %p\n", i, kept[i]);
	prog_say(1, "late %p\n", late);
	for (i = 0; i < ITERATIONS; i++)
		free(kept[i]);
	return 0;
}
