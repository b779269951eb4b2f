/* SPDX-License-Identifier: MIT */
/* neighbour.c: an overflow into the next block, which is freed before
 * anyone reads it, so nothing goes visibly wrong natively (guard: overflow
 * of the first, 16-byte block). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? (size_t)atoi(argv[1]) : 16;
	char *a = malloc(n); /* ALLOC */
	char *b = malloc(n);

	memset(b, 'b', n);
	memset(a, 'a', n + 4); /* four bytes into the neighbour's way */
	free(b);
	printf("%c\n", a[0]);
	free(a);
	return 0;
}
