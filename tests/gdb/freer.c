/* SPDX-License-Identifier: MIT */
/* freer.c: a block allocated in step 1 by make() and freed in step 2,
 * inside launch 2 of operator "release", by drop(); then done(), where
 * tests/gdb/freestack.sh asks who freed it (the line marked FREE below).
 * The functions gdb names are not inlined and end with a barrier; the
 * pointer gdb reads is a volatile global. */
#include <stdlib.h>
#include <string.h>

#include "msmemscope.h"

char *volatile block;

void done(void);

__attribute__((noinline)) void done(void)
{
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) static char *make(size_t n)
{
	char *p = malloc(n);

	__asm__ __volatile__("" ::: "memory");
	return p;
}

__attribute__((noinline)) static void drop(char *p)
{
	free(p); /* FREE */
	__asm__ __volatile__("" ::: "memory");
}

int main(void)
{
	block = make(48);
	if (!block)
		return 1;
	memset(block, 7, 48);
	msmemscope_op_begin("fill");
	msmemscope_op_end();
	msmemscope_step();
	msmemscope_op_begin("release");
	drop(block);
	msmemscope_op_end();
	done();
	return 0;
}
