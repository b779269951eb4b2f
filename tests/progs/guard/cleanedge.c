/* SPDX-License-Identifier: MIT */
/* cleanedge.c: the allocation calls at their edges (size 0, sizes that
 * overflow, alignments that are no power of two, realloc to 0), each
 * printed as what it returned and errno: guard mode must give what the
 * C library gives natively, whatever its version says of them (glibc
 * before 2.38 takes aligned_alloc(3, 16) as memalign does; later ones
 * refuse it). No finding. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What p is (a block, written whole, or NULL and errno), then frees it. */
static void show(const char *what, void *p, size_t size, int err)
{
	if (p)
		memset(p, 0x5a, size);
	printf("%-28s %s errno=%d\n", what, p ? "block" : "NULL", p ? 0 : err);
	free(p);
}

#define CALL(expr, size)                          \
	do {                                      \
		void *p_;                         \
		errno = 0;                        \
		p_ = (expr);                      \
		show(#expr, p_, (size), errno);   \
	} while (0)

/* Not constants: the compiler would warn of the sizes it can see. */
static volatile size_t half = SIZE_MAX / 2, all = SIZE_MAX, ptrdiff = PTRDIFF_MAX;

int main(void)
{
	void *q = NULL, *r;
	int rc;

	CALL(malloc(0), 0);
	CALL(calloc(0, 10), 0);
	CALL(calloc(half, 4), 0);
	CALL(reallocarray(NULL, half, 4), 0);
	CALL(malloc(all), 0);
	CALL(malloc(ptrdiff), 0);
	CALL(aligned_alloc(3, 16), 16);
	CALL(aligned_alloc(0, 16), 16);
	CALL(aligned_alloc(64, 100), 100);
	CALL(memalign(3, 16), 16);
	CALL(memalign(0, 16), 16);
	rc = posix_memalign(&q, 3, 16);
	printf("posix_memalign(3, 16)        rc=%d %s\n", rc, q ? "block" : "NULL");
	rc = posix_memalign(&q, 32, 16);
	printf("posix_memalign(32, 16)       rc=%d %s\n", rc, q ? "block" : "NULL");
	free(q);
	r = malloc(10);
	r = realloc(r, 0);
	printf("realloc(p, 0)                %s\n", r ? "block" : "NULL");
	free(r);
	free(NULL);
	return 0;
}
