/* SPDX-License-Identifier: MIT */
/* longstep.c: a log with one long step, for a replay's work to be caught
 * in the middle (progress.sh interrupts `report step 3` at the prompt of
 * -i). Step 2 allocates 64 blocks; step 3 frees and allocates one of them
 * N times; step 4 frees them all.
 *
 * Usage: longstep N */
#include <stdlib.h>

#include "msmemscope.h"

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	void *v[64];

	msmemscope_step();
	for (int i = 0; i < 64; i++)
		v[i] = malloc(16);
	msmemscope_step();
	for (long i = 0; i < n; i++) {
		free(v[i & 63]);
		v[i & 63] = malloc(16 + (size_t)(i & 7));
	}
	msmemscope_step();
	for (int i = 0; i < 64; i++)
		free(v[i]);
	return 0;
}
