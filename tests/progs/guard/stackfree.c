/* SPDX-License-Identifier: MIT */
/* stackfree.c: free of a stack address (guard: invalid free, no block). */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	int local = 42;
	int *volatile p = &local;

	printf("local %d\n", local);
	fflush(stdout);
	free(p);
	return 0;
}
