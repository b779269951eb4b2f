/* SPDX-License-Identifier: MIT */
/* ctlnames.c: names the program gives (an operator, an owner tag, a pool,
 * a mark) with control characters in them: a newline and a line that
 * looks like one of the leaks report's, a terminal's escape sequence
 * (clear the screen), a tab, a C1 control in UTF-8 (U+009B, CSI), and,
 * beside them, names in UTF-8 that must stay as they are (Chinese, as
 * msMemScope's users name their operators). Leaves one block per step
 * from step 2 on, allocated inside the operator, under the owner tag.
 * Prints "done". */
#include <stdlib.h>

#include "msmemscope.h"
#include "progs.h"

static char pool_arena[256];

int main(void)
{
	void *kept[4];
	int s;

	for (s = 0; s < 4; s++) {
		msmemscope_op_begin("conv\n====== Leaks: none (forged) ======\x1b[2J");
		msmemscope_owner_push("own\ter\x1b[31m");
		kept[s] = malloc(100 + (size_t)s);
		msmemscope_owner_pop();
		msmemscope_op_end();
		msmemscope_op_begin("\xe5\x8d\xb7\xe7\xa7\xaf\xe5\xb1\x82"); /* 卷积层 */
		free(malloc(64));
		msmemscope_op_end();
		msmemscope_mark("mark\xc2\x9b"
				"31m");
		msmemscope_pool_alloc("pool\x7f", pool_arena, 64, sizeof(pool_arena), 64);
		msmemscope_pool_free("pool\x7f", pool_arena, 64, sizeof(pool_arena), 0);
		msmemscope_step();
	}
	/* Leaks per step from step 2: the first step's block is freed. */
	free(kept[0]);
	prog_say(1, "done\n");
	return 0;
}
