/* SPDX-License-Identifier: MIT */
/* pinpoint.c: six operator launches over an arena of two pool blocks,
 * `own' (64 bytes) and its neighbour `nb' (32 bytes) right after it.
 * Each launch fills `own'; the third, "scale", also stores past its end,
 * into bytes 8..15 of `nb', by the way the argument names: "store" (the
 * default) one plain store of 8 bytes, "memset" and "memcpy" through the
 * C library (the length is a volatile, so the compiler calls it).
 * "drift" stores as "store" does, but a run that finds the file
 * pinpoint.ran in the current folder (the first run makes it) allocates
 * 16 bytes more first: its arena lies elsewhere, as a program's whose
 * allocations depend on its input.
 * "once" stores as "store" does only in a run that does not find
 * pinpoint.ran (and makes it): a re-run makes no stray store.
 * tests/gdb/pinpoint.sh watches `nb' from ready() on, then `memscope
 * pinpoint' must stop at the line marked STRAY below.
 *
 * The functions gdb names are not inlined and end with a barrier; the
 * pointers gdb reads are volatile globals. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msmemscope.h"

#define OWN 64
#define NB 32

unsigned char *volatile own;
unsigned char *volatile nb;
volatile size_t stray_len = 8;
static const unsigned char pattern[8] = { 0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57 };

static const char *const names[6] = { "embed", "norm", "scale", "mix", "pool", "out" };

void ready(void);

/* Where the test arms its watch: the arena is set up, no launch ran. */
__attribute__((noinline)) void ready(void)
{
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) static void fill(int k)
{
	for (unsigned i = 0; i < OWN; i++)
		own[i] = (unsigned char)((k << 4) | (i & 15)); /* STRAY fill */
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) static void stray(int how)
{
	unsigned char *p = own + OWN + 8;

	if (how == 1)
		memset(p, 0x5a, stray_len); /* STRAY memset */
	else if (how == 2)
		memcpy(p, pattern, stray_len); /* STRAY memcpy */
	else
		*(volatile unsigned long long *)p = 0x5757575757575757ull; /* STRAY store */
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) static void op_run(int k, int how)
{
	msmemscope_op_begin(names[k]);
	fill(k);
	if (k == 2 && how >= 0)
		stray(how);
	msmemscope_op_end();
	__asm__ __volatile__("" ::: "memory");
}

int main(int argc, char **argv)
{
	unsigned char *extra = NULL, *arena;
	int how = 0, again = 0;

	if (argc > 1 && (!strcmp(argv[1], "drift") || !strcmp(argv[1], "once"))) {
		int fd;

		if (access("pinpoint.ran", F_OK) == 0)
			again = 1;
		else if ((fd = open("pinpoint.ran", O_WRONLY | O_CREAT, 0644)) >= 0)
			close(fd);
	}
	if (again && !strcmp(argv[1], "drift"))
		extra = malloc(16);
	arena = malloc(OWN + NB);
	if (!arena)
		return 1;
	if (argc > 1 && !strcmp(argv[1], "memset"))
		how = 1;
	else if (argc > 1 && !strcmp(argv[1], "memcpy"))
		how = 2;
	else if (again && !strcmp(argv[1], "once"))
		how = -1; /* no stray store */
	own = arena;
	nb = arena + OWN;
	msmemscope_pool_alloc("arena", own, OWN, OWN + NB, OWN);
	msmemscope_pool_alloc("arena", nb, NB, OWN + NB, OWN + NB);
	for (unsigned i = 0; i < NB; i++)
		nb[i] = (unsigned char)(0xa0 + i);
	ready();
	for (int k = 0; k < 6; k++)
		op_run(k, how);
	msmemscope_pool_free("arena", nb, NB, OWN + NB, OWN);
	msmemscope_pool_free("arena", own, OWN, OWN + NB, 0);
	free(arena);
	free(extra);
	return 0;
}
