/* SPDX-License-Identifier: MIT */
/* cleanrealloc.c: realloc chains that grow and shrink, keeping their
 * contents (guard: no finding). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	unsigned long sum = 0;
	char *p = NULL;

	for (int round = 0; round < 4; round++) {
		for (size_t n = 1; n < 5000; n = n * 3 / 2 + 1) {
			size_t old = n * 2 / 3;
			p = realloc(p, n);
			memset(p + (old < n ? old : 0), (int)(n & 0x7f), n - (old < n ? old : 0));
			sum += (unsigned char)p[n - 1];
		}
		for (size_t n = 5000; n > 1; n /= 2) {
			p = realloc(p, n);
			sum += (unsigned char)p[n - 1];
		}
	}
	p = realloc(p, 0); /* frees */
	free(p);
	p = reallocarray(NULL, 10, 10);
	memset(p, 1, 100);
	free(p);
	printf("sum %lu\n", sum);
	return 0;
}
