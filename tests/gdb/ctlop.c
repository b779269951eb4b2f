/* SPDX-License-Identifier: MIT */
/* ctlop.c: an operator whose name carries a newline, a line like one of
 * memscope's and an escape sequence (clear the screen) writes into a
 * block gdb watches; the block is then freed outside any operator, and
 * an operator whose name has a C1 control character runs. ctlop.sh wants
 * gdb's messages to name them with \xHH escapes, and `memscope break op'
 * to take the names so written. */
#include <stdlib.h>
#include <string.h>

#include "msmemscope.h"

char *volatile buf;
void ready(void);

__attribute__((noinline)) void ready(void)
{
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	buf = malloc(64);
	if (!buf)
		return 1;
	memset(buf, 1, 64);
	ready();
	msmemscope_op_begin("bad\nmemscope: no watches.\x1b[2J");
	memset(buf, 2, 8);
	msmemscope_op_end();
	free(buf);
	/* A C1 control character (CSI, U+009B) in UTF-8. */
	msmemscope_op_begin("csi\xc2\x9b"
			    "op");
	msmemscope_op_end();
	return 0;
}
