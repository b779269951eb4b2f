/* SPDX-License-Identifier: MIT */
/* badfree.c: frees that free no live block, for the reports that must name
 * them: a custom pool frees one of its blocks twice and then an address it
 * never handed out (the API records both, nothing crashes); with "abort",
 * the heap then frees a block a second time, which glibc detects and
 * aborts on (the recorder has written the free first). With "deferred",
 * only a block allocated before msmemscope_start() and freed after it (a
 * recording with --collect-mode=deferred sees its free alone).
 *
 * Usage: badfree [abort|deferred]
 * Prints "badfree pool=ADDR heap=ADDR" (the blocks freed twice). */
#include <stdint.h>
#include <string.h>

#include "msmemscope.h"
#include "progs.h"

static char arena[1024];
/* The block freed twice, out of the compiler's sight (it warns). */
static void *volatile freed_once;

int main(int argc, char **argv)
{
	char *p, *q;

	if (argc > 1 && !strcmp(argv[1], "deferred")) {
		freed_once = malloc(48);
		msmemscope_start();
		free(freed_once);
		return 0;
	}
	msmemscope_pool_alloc("arena", arena, 64, sizeof(arena), 64);
	msmemscope_pool_free("arena", arena, 64, sizeof(arena), 0);
	msmemscope_pool_free("arena", arena, 64, sizeof(arena), 0);       /* double free */
	msmemscope_pool_free("arena", arena + 512, 32, sizeof(arena), 0); /* never handed out */
	p = malloc(48);
	q = malloc(48);
	if (!p || !q)
		return 1;
	prog_say(1, "badfree pool=%p heap=%p", (void *)arena, (void *)p);
	freed_once = p;
	free(p);
	free(q);
	if (argc > 1 && !strcmp(argv[1], "abort"))
		free(freed_once); /* glibc: "free(): double free detected", abort */
	return 0;
}
