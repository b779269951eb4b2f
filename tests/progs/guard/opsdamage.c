/* SPDX-License-Identifier: MIT */
/* opsdamage.c: six operator launches over one long-lived block; the third,
 * "scale", writes one element past the block's end (guard: one overflow
 * of a 64-byte block). Nothing frees or checks the block until the exit,
 * so without --guard=ops the finding's window spans every launch; with
 * it, the check at the end of "scale" finds the damage and the window
 * holds that launch alone. Natively the calls are the stubs' no-ops. */
#include <stdio.h>
#include <stdlib.h>

#include "msmemscope.h"

/* The compiler keeps the stray store. */
int *volatile v;

static void op(const char *name, int stray)
{
	msmemscope_op_begin(name);
	for (int i = 0; i < 16 + stray; i++)
		v[i] += 1;
	msmemscope_op_end();
}

int main(void)
{
	static const char *const names[] = { "load", "norm", "scale", "shift", "sum", "store" };

	v = calloc(16, sizeof(*v)); /* ALLOC */
	for (int k = 0; k < 6; k++)
		op(names[k], k == 2);
	printf("done\n");
	free(v);
	return 0;
}
