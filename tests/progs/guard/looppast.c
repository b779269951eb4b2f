/* SPDX-License-Identifier: MIT */
/* looppast.c: a loop that writes one element past a malloc'ed array
 * (guard: overflow of a 32-byte block). */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8, sum = 0;
	int *a = malloc((size_t)n * sizeof *a); /* ALLOC */

	for (int i = 0; i <= n; i++) /* one too many */
		a[i] = i;
	for (int i = 0; i < n; i++)
		sum += a[i];
	printf("sum %d\n", sum);
	free(a);
	return 0;
}
