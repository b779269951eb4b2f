/* SPDX-License-Identifier: MIT */
/* stepper.c: a program with known steps, operators and owners for the
 * replay tests: a 4096-byte model block kept for the whole run (step 1,
 * owner "model"), then 4 steps of two operators, "load" (100 bytes, freed)
 * and "work" (64 bytes freed, and in steps 2 and 3 a block of 1000 * step
 * bytes under the owner "cache" that is never freed), and one interior
 * pointer printed so the test can ask about it. Every event is in main's
 * thread, so event ids are the same on every run. */
#include <stdint.h>
#include <stdlib.h>

#include "msmemscope.h"
#include "progs.h"

static void *keep[5];
static void *volatile sink;

/* Uses a block, so the compiler cannot drop a malloc/free pair. */
__attribute__((noinline)) static void *use(void *p, size_t size)
{
	if (p)
		memset(p, 2, size);
	sink = p;
	return p;
}

/* Not inlined, so its name is on the allocation stack. */
__attribute__((noinline)) static void *cache_alloc(size_t size)
{
	void *p = malloc(size); /* stepper.c: cache_alloc line */

	if (p)
		memset(p, 1, size);
	return p;
}

int main(void)
{
	void *weights, *a, *t;
	int s;

	msmemscope_owner_push("model");
	weights = use(malloc(4096), 4096);
	msmemscope_owner_pop();
	for (s = 1; s <= 4; s++) {
		msmemscope_op_begin("load");
		a = use(malloc(100), 100);
		free(a);
		msmemscope_op_end();
		msmemscope_op_begin("work");
		if (s == 2 || s == 3) {
			msmemscope_owner_push("cache");
			keep[s] = cache_alloc(1000 * (size_t)s);
			msmemscope_owner_pop();
		}
		t = use(malloc(64), 64);
		free(t);
		msmemscope_op_end();
		msmemscope_step();
	}
	prog_say(1, "keep2 %p keep3 %p\n", keep[2], keep[3]);
	free(weights);
	return 0;
}
