/* SPDX-License-Identifier: MIT */
/* unwindlib.c: the libraries that tests/progs/unwind loads with dlopen:
 * they recurse (no frame pointer), allocate, and call back into the
 * program, so stacks cross modules that come and go. unwindlib.so and
 * unwindlib2.so differ only in the frame size of down() (UNWINDLIB_PAD):
 * with gcc -O2 their code lies at the same offsets, so when the second is
 * loaded where the first was, a return address of one is a return address
 * of the other, with another frame rule: a walker that kept the first's
 * rules after dlclose would step wrongly. */
#include <stdlib.h>

#ifndef UNWINDLIB_PAD
#define UNWINDLIB_PAD 24
#endif

void *unwindlib_walk(int n, void *(*cb)(int), int arg);

static void *volatile sink;

static __attribute__((noinline)) void *down(int n, void *(*cb)(int), int arg)
{
	volatile char pad[UNWINDLIB_PAD];
	void *r;

	pad[0] = (char)n;
	if (n <= 0)
		return cb(arg);
	r = down(n - 1, cb, arg);
	sink = r;
	return (char *)r + pad[0] - n;
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
