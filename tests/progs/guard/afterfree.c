/* SPDX-License-Identifier: MIT */
/* afterfree.c: a write through a pointer kept after free (guard: write
 * after free of a 24-byte block, found by the check at exit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *volatile kept;

int main(void)
{
	char *p = malloc(24); /* ALLOC */

	strcpy(p, "short-lived");
	printf("%s\n", p);
	kept = p;
	free(p); /* FREE */
	kept[3] = 'x';
	return 0;
}
