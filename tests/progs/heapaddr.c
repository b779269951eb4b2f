/* SPDX-License-Identifier: MIT */
/* heapaddr.c: prints where the heap puts a program's blocks: its first
 * two small mallocs, then blocks of many sizes after frees, reallocs,
 * stdio (fopen, printf) and calloc, as offsets from its first block and
 * as addresses. Under the recorder, with or without stacks, every figure
 * must be the native one: the recorder allocates nothing from the
 * program's heap (heapaddr.sh compares the addresses with address space
 * randomization off, the offsets always). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 200

int main(int argc, char **argv)
{
	char *first = malloc(24), *second = malloc(24);
	char *blocks[N];
	unsigned long long seed = 42;
	FILE *f;
	char line[256];

	(void)argc;
	printf("first two: %p %p, second - first = %td\n", (void *)first, (void *)second, second - first);
	for (int i = 0; i < N; i++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		blocks[i] = malloc(8 + seed % 600);
	}
	for (int i = 0; i < N; i += 3) {
		free(blocks[i]);
		blocks[i] = NULL;
	}
	for (int i = 1; i < N; i += 7)
		blocks[i] = realloc(blocks[i], 700 + (size_t)i);
	/* stdio allocates its FILE and buffer from the heap too. */
	f = fopen(argv[0], "r");
	if (f) {
		if (!fgets(line, sizeof line, f))
			line[0] = 0;
		fclose(f);
	}
	for (int i = 0; i < N; i += 3)
		blocks[i] = i % 2 ? calloc(3, 40) : malloc(100 + (size_t)i);
	for (int i = 0; i < N; i++)
		printf("%d %td %p\n", i, blocks[i] - first, (void *)blocks[i]);
	for (int i = 0; i < N; i++)
		free(blocks[i]);
	uintptr_t base = (uintptr_t)first;
	free(second);
	free(first);
	char *last = malloc(5000);
	printf("last %td %p\n", (ptrdiff_t)((uintptr_t)last - base), (void *)last);
	free(last);
	return 0;
}
