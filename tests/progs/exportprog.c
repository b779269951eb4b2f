/* SPDX-License-Identifier: MIT */
/* exportprog.c: a small program whose every event is known, for the dump
 * exports (tests/progs/export.sh compares the CSV with export.golden and
 * asks the database the questions doc/export.md shows). Linked against the
 * no-op stubs, with -g; its allocating functions keep their frames at any
 * optimization level (noinline, no tail calls).
 *
 * Three steps (msmemscope_step() twice):
 *   step 1: make_buffer(); operator "conv" allocates tagged_alloc()
 *           under owner tags model@weights, launches a kernel, writes the
 *           100-byte buffer
 *   step 2: range "forward" around operator "relu", which takes 512 bytes
 *           from the pool "arena" (4096 reserved), reads 64 of them, gives
 *           them back, allocates leaky_alloc() and frees the 100-byte
 *           buffer; then a mark whose name holds a comma and quotes
 *   step 3: frees the 200-byte block
 * The 300-byte block is never freed. Prints "exportprog pid=PID". */
#include <stdint.h>
#include <unistd.h>

#include "msmemscope.h"
#include "progs.h"

static char pool_arena[4096];
/* Where the leak stays reachable, so the compiler keeps it. */
static void *volatile exportprog_leak;

/* Code after each malloc() call, so no optimization level turns it into a
 * tail call that would take the allocating function off the stack. The
 * three allocating functions differ (in their sizes), so none is folded
 * into another. */
static inline void keep(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

__attribute__((noinline)) static void *make_buffer(void)
{
	void *p = malloc(100);

	keep(p);
	return p;
}

__attribute__((noinline)) static void *tagged_alloc(void)
{
	void *p = malloc(200);

	keep(p);
	return p;
}

__attribute__((noinline)) static void *leaky_alloc(void)
{
	void *p = malloc(300);

	keep(p);
	return p;
}

int main(void)
{
	void *a, *w;
	uint64_t r;

	a = make_buffer();
	msmemscope_op_begin("conv");
	msmemscope_owner_push("model");
	msmemscope_owner_push("weights");
	w = tagged_alloc();
	msmemscope_owner_pop();
	msmemscope_owner_pop();
	msmemscope_kernel_launch("conv_kernel");
	msmemscope_access(a, 100, MSMEMSCOPE_ACCESS_WRITE);
	msmemscope_op_end();
	if (!a || !w)
		prog_die("exportprog: malloc failed");
	msmemscope_step();

	r = msmemscope_range_start("forward");
	msmemscope_op_begin("relu");
	msmemscope_pool_alloc("arena", pool_arena, 512, sizeof(pool_arena), 512);
	msmemscope_access(pool_arena, 64, MSMEMSCOPE_ACCESS_READ);
	msmemscope_pool_free("arena", pool_arena, 512, sizeof(pool_arena), 0);
	exportprog_leak = leaky_alloc();
	free(a);
	msmemscope_op_end();
	msmemscope_range_end(r);
	msmemscope_mark("checkpoint, \"quoted\"");
	msmemscope_step();

	free(w);
	prog_say(1, "exportprog pid=%ld\n", (long)getpid());
	return 0;
}
