/* SPDX-License-Identifier: MIT */
/* span.c: two adjacent heap blocks, `a' and `b' (256 bytes each), and a
 * global. One operator launch ("fill") writes the first 8 bytes of `a' and
 * the first 40 of `b'; then the program frees `b' and then `a'. tests/gdb/span.sh watches `a' with a SIZE that runs
 * far past its end (over `b'), and the global: gdb must say so when the
 * watches are set, and the stop at free(b) must name b, not a.
 *
 * The functions gdb names are not inlined and end with a barrier; the
 * pointers gdb reads are volatile globals. */
#include <stdlib.h>
#include <string.h>

#include "msmemscope.h"

#define SIZE 256

unsigned char *volatile a;
unsigned char *volatile b;
int counter;

void ready(void);

/* Where the test sets its watches: both blocks are live, no launch ran. */
__attribute__((noinline)) void ready(void)
{
	__asm__ __volatile__("" ::: "memory");
}

int main(void)
{
	a = malloc(SIZE);
	b = malloc(SIZE);
	if (!a || !b)
		return 1;
	memset(a, 0, SIZE);
	memset(b, 0, SIZE);
	ready();
	msmemscope_op_begin("fill");
	memset(a, 0x5a, 8);
	memset(b, 0x6b, 40);
	msmemscope_op_end();
	free(b);
	free(a);
	return 0;
}
