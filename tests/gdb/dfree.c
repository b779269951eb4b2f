/* SPDX-License-Identifier: MIT */
/* dfree.c: allocates a 100-byte block, frees it, and frees it again;
 * glibc then aborts the program. tests/gdb/dfree.sh asks memscope about
 * the block and the two frees. No stdio: the only heap block is this
 * one; the pointer gdb reads is a volatile global. */
#include <stdlib.h>
#include <string.h>

char *volatile p;

int main(void)
{
	p = malloc(100);
	if (!p)
		return 1;
	memset(p, 1, 100);
	free(p);
	free(p);
	return 0;
}
