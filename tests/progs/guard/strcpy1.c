/* SPDX-License-Identifier: MIT */
/* strcpy1.c: an off-by-one strcpy: room for the characters, none for the
 * terminating NUL (guard: overflow of a 5-byte block). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	const char *word = getenv("GUARD_WORD") ? getenv("GUARD_WORD") : "hello";
	char *copy = malloc(strlen(word)); /* ALLOC */

	strcpy(copy, word);
	printf("%.5s\n", copy);
	free(copy);
	return 0;
}
