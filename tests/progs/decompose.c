/* SPDX-License-Identifier: MIT */
/* decompose.c: allocates under owners nested three deep, in the heap and
 * in two custom pools, so the decompose analysis has known figures at the
 * peak and at the end. Every figure below is what decompose.sh asserts.
 *
 *   owner                  kind        bytes   live at the end
 *   model@encoder@layer1   HOST         4096   yes
 *   model@encoder@layer1   pool arena   8192   yes
 *   model@encoder@layer2   HOST         2048   freed after the peak
 *   model                  HOST         1024   yes
 *   model@decoder          pool arena   3072   yes
 *   (no owner)             pool kv      6144   yes
 *   model@cache            MMAP        12288   its first page unmapped
 *                                              after the peak
 *   scratch                HOST        16384   freed after the peak
 *
 * The peak (53248 bytes) is reached by the scratch block; the end holds
 * 30720 bytes. The program's own heap use outside these calls (none at
 * the peak: it uses no stdio) would show under HOST (no owner). */
#include <stdint.h>
#include <sys/mman.h>

#include "msmemscope.h"
#include "progs.h"

static char arena[8192 + 3072];
static char kv[6144];

int main(void)
{
	void *l1, *l2, *m, *scratch;
	char *cache;

	msmemscope_owner_push("model");
	msmemscope_owner_push("encoder");
	msmemscope_owner_push("layer1");
	l1 = prog_malloc(4096);
	msmemscope_pool_alloc("arena", arena, 8192, sizeof(arena), 8192);
	msmemscope_owner_pop();
	msmemscope_owner_push("layer2");
	l2 = prog_malloc(2048);
	msmemscope_owner_pop();
	msmemscope_owner_pop();
	m = prog_malloc(1024);
	msmemscope_owner_push("decoder");
	msmemscope_pool_alloc("arena", arena + 8192, 3072, sizeof(arena), sizeof(arena));
	msmemscope_owner_pop();
	msmemscope_owner_pop();
	msmemscope_pool_alloc("kv", kv, sizeof(kv), sizeof(kv), sizeof(kv));
	msmemscope_owner_push("model");
	msmemscope_owner_push("cache");
	cache = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (cache == MAP_FAILED)
		prog_die("decompose: mmap failed");
	msmemscope_owner_pop();
	msmemscope_owner_pop();

	msmemscope_owner_push("scratch");
	scratch = prog_malloc(16384);
	msmemscope_owner_pop();
	free(scratch);
	free(l2);
	if (munmap(cache, 4096))
		prog_die("decompose: munmap failed");

	prog_say(1, "decompose l1=%p m=%p\n", l1, m);
	return 0;
}
