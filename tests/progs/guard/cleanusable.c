/* SPDX-License-Identifier: MIT */
/* cleanusable.c: a program that uses what malloc_usable_size says it may
 * (guard: it says the requested size, and there is no finding). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	size_t total = 0;

	for (size_t n = 1; n < 3000; n += 37) {
		char *p = malloc(n);
		size_t u = malloc_usable_size(p);

		if (u < n) {
			printf("usable %zu < %zu\n", u, n);
			return 1;
		}
		memset(p, 'u', u);
		total += n;
		free(p);
	}
	printf("total %zu\n", total);
	return 0;
}
