/* SPDX-License-Identifier: MIT */
/* leaky.c: four steps, each with the operators "load" and "compute", that
 * keep some of what they allocate (nothing is ever freed but one scratch
 * block; their addresses are forgotten before the exit: leaked):
 *
 *   step   load: keep_small (100 bytes)   compute: keep_big (4096 bytes)
 *   1      1                              0     (+ scratch: 777 bytes, freed)
 *   2      2                              1
 *   3      0                              1
 *   4      1                              0
 *
 * checkpoint(N) runs at the end of step N, before msmemscope_step() ends
 * it: steps 1..N-1 have ended there. tests/gdb/leaks.sh, at.sh and
 * commands.sh stop there and ask memscope about it.
 *
 * No stdio: the only heap blocks are the program's own. The functions gdb
 * or the stacks name are not inlined and end with a barrier, so the
 * stacks are the same at any optimization level. */
#include <stdlib.h>
#include <string.h>

#include "msmemscope.h"

#define SMALL 100
#define BIG 4096
#define SCRATCH 777

void *kept[16];
unsigned nkept;
void *volatile small_last, *volatile big_last, *volatile freed_scratch;

void checkpoint(int step);

__attribute__((noinline)) void checkpoint(int step)
{
	(void)step;
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) static void *keep_small(void)
{
	void *p = malloc(SMALL);

	if (p)
		memset(p, 1, SMALL);
	kept[nkept++ % 16] = p;
	__asm__ __volatile__("" ::: "memory");
	return p;
}

__attribute__((noinline)) static void *keep_big(void)
{
	void *p = malloc(BIG);

	if (p)
		memset(p, 2, BIG);
	kept[nkept++ % 16] = p;
	__asm__ __volatile__("" ::: "memory");
	return p;
}

__attribute__((noinline)) static void scratch(void)
{
	char *p = malloc(SCRATCH);

	if (p)
		memset(p, 3, SCRATCH);
	freed_scratch = p;
	free(p);
	__asm__ __volatile__("" ::: "memory");
}

int main(void)
{
	static const int smalls[4] = { 1, 2, 0, 1 }, bigs[4] = { 0, 1, 1, 0 };

	for (int step = 1; step <= 4; step++) {
		msmemscope_op_begin("load");
		for (int i = 0; i < smalls[step - 1]; i++)
			small_last = keep_small();
		if (step == 1)
			scratch();
		msmemscope_op_end();
		msmemscope_op_begin("compute");
		for (int i = 0; i < bigs[step - 1]; i++)
			big_last = keep_big();
		msmemscope_op_end();
		checkpoint(step);
		msmemscope_step();
	}
	/* Their addresses forgotten: leaked at exit, not still reachable. */
	memset(kept, 0, sizeof(kept));
	small_last = big_last = NULL;
	__asm__ __volatile__("" ::: "memory");
	return 0;
}
