/* SPDX-License-Identifier: MIT */
/* doublefree.c: a block freed twice (guard: double free of a 16-byte
 * block; natively glibc aborts). */
#include <stdio.h>
#include <stdlib.h>

static void *volatile again;

int main(void)
{
	char *p = malloc(16); /* ALLOC */

	p[0] = 1;
	again = p;
	free(p); /* FREE */
	printf("freed once\n");
	fflush(stdout);
	free(again);
	return 0;
}
