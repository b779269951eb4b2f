/* SPDX-License-Identifier: MIT */
/* ownertag.c: tags blocks with owners after the fact
 * (msmemscope_owner_tag), before and after the peak, by their start
 * address and by an address inside them, and tags an address that is no
 * block. Every figure below is what ownertag.sh asserts.
 *
 *   block   bytes  allocated under   tagged (when)              live at the end
 *   a        4096  model             weight (after the peak)    yes
 *   b        2048  (no owner)        gradient, at a + 100,      yes
 *                                    after the peak
 *   c        8192  (no owner)        -                          freed after the peak
 *   d        1024  (no owner)        activation (after its      yes
 *                                    allocation, past the peak)
 *
 * The peak (14336 bytes) is reached by c; the end holds 7168 bytes. A tag
 * names a block for its whole life, so the peak shows a and b under the
 * owners they were given later. */
#include <stdint.h>

#include "msmemscope.h"
#include "progs.h"

int main(void)
{
	char *a, *b, *c, *d;
	int not_a_block = 0;

	msmemscope_owner_push("model");
	a = prog_malloc(4096);
	msmemscope_owner_pop();
	b = prog_malloc(2048);
	c = prog_malloc(8192);
	free(c);
	msmemscope_owner_tag(a, "weight");
	msmemscope_owner_tag(b + 100, "gradient");
	d = prog_malloc(1024);
	msmemscope_owner_tag(d, "activation");
	msmemscope_owner_tag(&not_a_block, "nothing");
	prog_say(1, "ownertag a=%p b=%p d=%p\n", (void *)a, (void *)b, (void *)d);
	return 0;
}
