/* SPDX-License-Identifier: MIT */
/* family.c: calls every interposed allocator and mapping function a known
 * number of times with known sizes, so the test can check the counts and
 * bytes of each. With the argument "none" it does nothing but start and
 * exit, which measures what the C runtime allocates by itself.
 *
 * Malloc family (valgrind's rules: a realloc of a block is one allocation
 * and one free, realloc(NULL, n) an allocation only, realloc(p, 0) a free
 * only, free(NULL) nothing):
 *   malloc 10 x 100 B; calloc 5 x (10 x 20 B); realloc(null_ptr, 64);
 *   realloc to 4096 (moves); realloc down to 1000 (stays in place);
 *   realloc(p, 0); reallocarray(null_ptr, 4, 8); reallocarray to 8 x 8;
 *   posix_memalign 2 x (64, 100 B); aligned_alloc(64, 128); memalign(32, 200);
 *   valloc(300); pvalloc(300) (glibc and valgrind count a page: 4096);
 *   free(NULL) 3 times; everything freed except LEAK_COUNT malloc(LEAK_SIZE).
 *   Totals: 28 allocations, 26 frees, 12846 bytes allocated, peak 4924
 *   bytes live, 2 blocks of 333 B live at exit.
 * Mappings: 3 anonymous mmaps of 8192 B, mremap of one to 16384 B (one
 * unmap and one map), munmap of all three. */
#define _GNU_SOURCE
#include <malloc.h>
#include <string.h>
#include <sys/mman.h>

#include "progs.h"

#define LEAK_COUNT 2
#define LEAK_SIZE 333

/* Keeps the compiler from folding malloc/free pairs away, and from turning
 * realloc(NULL, n) into malloc(n) or dropping free(NULL). */
static void *volatile sink;
static void *volatile null_ptr;

static void *check(void *p, const char *what)
{
	if (!p)
		prog_die("family: %s failed", what);
	sink = p;
	return p;
}

static void heap_calls(void)
{
	void *p[10], *q;
	char *r;

	for (int i = 0; i < 10; i++)
		p[i] = check(malloc(100), "malloc");
	for (int i = 0; i < 10; i++)
		free(p[i]);

	for (int i = 0; i < 5; i++)
		p[i] = check(calloc(10, 20), "calloc");
	for (int i = 0; i < 5; i++)
		free(p[i]);

	r = check(realloc(null_ptr, 64), "realloc(NULL)");
	memset(r, 'a', 64);
	r = check(realloc(r, 4096), "realloc grow");
	r = check(realloc(r, 1000), "realloc shrink");
	if (r[63] != 'a')
		prog_die("family: realloc lost the contents");
	q = realloc(r, 0); /* glibc frees and returns NULL */
	if (q)
		prog_die("family: realloc(p, 0) returned a block");

	q = check(reallocarray(null_ptr, 4, 8), "reallocarray(NULL)");
	q = check(reallocarray(q, 8, 8), "reallocarray");
	free(q);

	for (int i = 0; i < 2; i++)
		if (posix_memalign(&p[i], 64, 100))
			prog_die("family: posix_memalign failed");
	p[2] = check(aligned_alloc(64, 128), "aligned_alloc");
	p[3] = check(memalign(32, 200), "memalign");
	p[4] = check(valloc(300), "valloc");
	p[5] = check(pvalloc(300), "pvalloc");
	for (int i = 0; i < 6; i++)
		free(p[i]);

	free(null_ptr);
	free(null_ptr);
	free(null_ptr);

	for (int i = 0; i < LEAK_COUNT; i++)
		check(malloc(LEAK_SIZE), "malloc");
}

static void map_calls(void)
{
	void *m[3];

	for (int i = 0; i < 3; i++) {
		m[i] = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m[i] == MAP_FAILED)
			prog_die("family: mmap failed");
		memset(m[i], 1, 8192);
	}
	m[1] = mremap(m[1], 8192, 16384, MREMAP_MAYMOVE);
	if (m[1] == MAP_FAILED)
		prog_die("family: mremap failed");
	munmap(m[0], 8192);
	munmap(m[1], 16384);
	munmap(m[2], 8192);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "none"))
		return 0;
	heap_calls();
	map_calls();
	prog_say(1, "family done\n");
	return 0;
}
