/* SPDX-License-Identifier: MIT */
/* unwindlib.c: the library that tests/progs/unwind loads with dlopen: it
 * recurses (no frame pointer), allocates, and calls back into the program,
 * so stacks cross a module that comes and goes. */
#include <stdlib.h>

void *unwindlib_walk(int n, void *(*cb)(int), int arg);

static void *volatile sink;

static __attribute__((noinline)) void *down(int n, void *(*cb)(int), int arg)
{
	void *r;

	if (n <= 0)
		return cb(arg);
	r = down(n - 1, cb, arg);
	sink = r;
	return r;
}

__attribute__((visibility("default"))) void *unwindlib_walk(int n, void *(*cb)(int), int arg)
{
	void *p = malloc(40), *r;

	sink = p;
	r = down(n, cb, arg);
	free(p);
	p = calloc(1, 24);
	sink = p;
	free(p);
	return r;
}
