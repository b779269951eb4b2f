/* SPDX-License-Identifier: MIT */
/* holdbench.c: holds N live heap blocks (default 100000) allocated from
 * ten call sites, then calls holdbench_ready(), where bench/gdb.sh stops
 * to time `memscope leaks`. Usage: holdbench [N] */
#include <stdio.h>
#include <stdlib.h>

void holdbench_ready(void);

__attribute__((noinline)) void holdbench_ready(void)
{
	__asm__ volatile("" ::: "memory");
}

/* Not inlined and not a tail call, so each site is a stack of its own. */
#define SITE(k)                                                   \
	__attribute__((noinline)) static void *site##k(size_t size) \
	{                                                         \
		void *p = malloc(size + k);                       \
		__asm__ volatile("" : : "r"(p) : "memory");       \
		return p;                                         \
	}
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7) SITE(8) SITE(9)

int main(int argc, char **argv)
{
	static void *(*const sites[])(size_t) = { site0, site1, site2, site3, site4,
						  site5, site6, site7, site8, site9 };
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000, i;
	void **keep = calloc(n ? n : 1, sizeof(*keep));

	if (!keep)
		return 1;
	for (i = 0; i < n; i++)
		keep[i] = sites[i % 10](16 + i % 64);
	holdbench_ready();
	for (i = 0; i < n; i++)
		free(keep[i]);
	free(keep);
	printf("held %lu blocks\n", n);
	return 0;
}
