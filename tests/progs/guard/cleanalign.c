/* SPDX-License-Identifier: MIT */
/* cleanalign.c: memalign, posix_memalign, aligned_alloc and valloc keep
 * their alignment, and their blocks are written whole (guard: no
 * finding), up to an alignment of 8 GiB. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int bad;

static void check(void *p, size_t align, size_t size, const char *what)
{
	if (!p || (uintptr_t)p % align) {
		printf("%s(%zu, %zu): %p not aligned\n", what, align, size, p);
		bad++;
		return;
	}
	memset(p, 0x5a, size);
}

int main(void)
{
	for (size_t align = 16; align <= 8192; align *= 2) {
		for (size_t size = 1; size < 10000; size = size * 7 + 3) {
			void *p = memalign(align, size), *q = NULL, *r = aligned_alloc(align, size);

			check(p, align, size, "memalign");
			if (posix_memalign(&q, align, size))
				q = NULL;
			check(q, align, size, "posix_memalign");
			check(r, align, size, "aligned_alloc");
			free(p);
			free(q);
			free(r);
		}
	}
	/* An alignment of 8 GiB: guard mode keeps such a block unguarded
	 * (its head would not fit), and frees it as it is; enough frees
	 * after it to push it through the quarantine. Skipped where the
	 * address space is refused. */
	if (sizeof(size_t) == 8) {
		void *h = NULL;

		if (posix_memalign(&h, (size_t)1 << 33, 100) == 0) {
			check(h, (size_t)1 << 33, 100, "posix_memalign");
			free(h);
			for (int i = 0; i < 20000; i++)
				free(malloc(1000));
		}
	}
	void *v = valloc(100);
	check(v, (size_t)sysconf(_SC_PAGESIZE), 100, "valloc");
	free(v);
	printf("%s\n", bad ? "misaligned" : "aligned");
	return bad;
}
