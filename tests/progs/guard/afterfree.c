/* SPDX-License-Identifier: MIT */
/* afterfree.c: a write through a pointer kept after free (guard: write
 * after free of a 24-byte block, found by the check at exit).
 * afterfree push: then frees four more 24-byte blocks, which push it out
 * of a quarantine of 48 bytes (--guard-quarantine=48): found as it
 * leaves.
 * afterfree many: first allocates and frees 300,000 blocks, more frees
 * than the reader's guard analysis remembers, which must still know the
 * free of the damaged block (the window of the finding starts there). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *volatile kept;

int main(int argc, char **argv)
{
	char *p;

	if (argc > 1 && !strcmp(argv[1], "many"))
		for (int i = 0; i < 300000; i++) {
			kept = malloc(16 + i % 64);
			free(kept);
		}
	p = malloc(24); /* ALLOC */

	strcpy(p, "short-lived");
	printf("%s\n", p);
	kept = p;
	free(p); /* FREE */
	kept[3] = 'x';
	if (argc > 1 && !strcmp(argv[1], "push"))
		for (int i = 0; i < 4; i++) {
			kept = malloc(24); /* through the volatile: kept by the compiler */
			free(kept);
		}
	return 0;
}
