/* SPDX-License-Identifier: MIT */
/* opbench.c: many short operator launches around one 64 KiB block, for
 * measuring the gdb interface (bench/gdb.sh): each launch fills a 256-byte
 * scratch buffer of its own; launches LAUNCHES/4, LAUNCHES/2 and
 * 3*LAUNCHES/4 (numbered from 1) also write 8 bytes of opbench_block, the
 * block gdb watches.
 *
 * Usage: opbench [LAUNCHES]   (default 100000)
 *        with OPBENCH_WATCH=N (1 to 65536) in the environment, the first N
 *        bytes of opbench_block are also watched with msmemscope_watch()
 *        (when the recorder is preloaded): checksummed at every launch
 *        opbench offsets      the gdb descriptor's offsets (hooks/gdbif.h)
 *                             as shell assignments
 * The operator functions are found with dlsym, so the native run links
 * nothing more and calls no-ops. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdbif.h"

#define BLOCK (64 * 1024)

/* Not static: gdb takes the block's address, and the writes must stay. */
__attribute__((aligned(64))) unsigned char opbench_block[BLOCK];
unsigned char opbench_scratch[256];

static void nop_begin(const char *name)
{
	(void)name;
}

static void nop_end(void)
{
}

static void offsets(void)
{
	printf("off_armed=%zu\n", offsetof(struct msmemscope_gdb, armed));
	printf("off_watch=%zu\n", offsetof(struct msmemscope_gdb, watch));
	printf("w_addr=%zu\n", offsetof(struct mms_gdb_watch, addr));
	printf("w_size=%zu\n", offsetof(struct mms_gdb_watch, size));
	printf("w_generation=%zu\n", offsetof(struct mms_gdb_watch, generation));
	printf("off_launches=%zu\n", offsetof(struct msmemscope_gdb, launches));
	printf("off_op_launch=%zu\n", offsetof(struct msmemscope_gdb, op_launch));
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "embed", "matmul", "softmax", "norm" };
	void (*begin)(const char *) = nop_begin;
	void (*end)(void) = nop_end;
	unsigned long n = 100000;
	void *f;

	if (argc == 2 && !strcmp(argv[1], "offsets")) {
		offsets();
		return 0;
	}
	if (argc == 2)
		n = strtoul(argv[1], NULL, 10);
	if (argc > 2 || n < 4) {
		fprintf(stderr, "usage: opbench [LAUNCHES >= 4 | offsets]\n");
		return 2;
	}
	if ((f = dlsym(RTLD_DEFAULT, "msmemscope_op_begin")))
		*(void **)&begin = f;
	if ((f = dlsym(RTLD_DEFAULT, "msmemscope_op_end")))
		*(void **)&end = f;
	if (getenv("OPBENCH_WATCH") && (f = dlsym(RTLD_DEFAULT, "msmemscope_watch"))) {
		unsigned long bytes = strtoul(getenv("OPBENCH_WATCH"), NULL, 10);
		void (*watch)(const void *, size_t, const char *);

		*(void **)&watch = f;
		watch(opbench_block, bytes < 1 || bytes > BLOCK ? BLOCK : bytes, "opbench_block");
	}
	for (unsigned long i = 1; i <= n; i++) {
		begin(names[i & 3]);
		memset(opbench_scratch, (int)i, sizeof opbench_scratch);
		if (i == n / 4 || i == n / 2 || i == 3 * (n / 4))
			memset(opbench_block + (i & 0xff) * 8, (int)(i | 1), 8);
		end();
	}
	printf("launches=%lu\n", n);
	return 0;
}
