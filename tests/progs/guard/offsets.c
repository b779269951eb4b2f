/* SPDX-License-Identifier: MIT */
/* offsets.c: for every block size from 1 to 100 bytes, a block written
 * after its free at its first byte, one at its last byte, and a block
 * written one byte past its end (then freed): the checks read small
 * blocks and red zones as words, and every damaged byte must be found at
 * its offset. Natively glibc aborts (its free list lives in a freed
 * block). Prints, in the order the findings come, one line per error
 * made: "KIND SIZE OFFSET" (guard.sh compares them with the JSON). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where each block is seen from outside, so that the compiler keeps the
 * stores into freed blocks. */
char *volatile offsets_seen;

int main(void)
{
	for (size_t size = 1; size <= 100; size++) {
		for (int last = 0; last <= 1; last++) {
			char *p = malloc(size);

			memset(p, 1, size);
			offsets_seen = p;
			free(p);
			offsets_seen[last ? size - 1 : 0] = 7; /* write after free */
			/* Push it out of the quarantine (a few KiB). */
			for (int i = 0; i < 64; i++) {
				offsets_seen = malloc(256);
				free(offsets_seen);
			}
			printf("write_after_free %zu %zu\n", size, last ? size - 1 : 0);
		}
		offsets_seen = malloc(size);
		offsets_seen[size] = 9; /* one past the end */
		free(offsets_seen);
		printf("overflow %zu %zu\n", size, size);
	}
	return 0;
}
