/* SPDX-License-Identifier: MIT */
/* api.c: calls every function of the instrumentation API a known number of
 * times, so the test can count the events of each kind. Linked against the
 * no-op stubs (-lmsmemscope) it must run the same without the recorder.
 *
 * Usage: api           every function, as below
 *        api ranges N  N "step start" ranges (each around a malloc/free),
 *                      and no other step marks
 *        api inferred N [marked]
 *                      N iterations that each keep a block of 100 + i
 *                      bytes and end with the step the recorder infers at
 *                      the end of a PyTorch optimizer step (what
 *                      msmemscope._torchops calls), then, with marked,
 *                      msmemscope_step() too
 *
 * Per run, recorded in immediate mode:
 *   steps: 3 msmemscope_step() + 1 "step start" range (the replay counts
 *   steps one way, the first it meets: here msmemscope_step())
 *   op launches: 4 begin/end pairs; kernels: 5; marks: 2 + 1 mstxMarkA
 *   ranges: 2 named + 1 "step start" (start and end each)
 *   accesses: 3; owners: 2 push/pop pairs; watch: 1
 *   pool: 3 allocs (100, 200, 300 bytes), 2 frees; heap: API_ALLOCS
 *   blocks of 64 bytes recorded and freed, then stop, STOPPED_ALLOCS
 *   blocks of 64 bytes allocated and freed unrecorded, then start again,
 *   AFTER_ALLOCS blocks of 64 bytes allocated and freed.
 * The "collect" events are stop + start. With collect=deferred, recording
 * begins at the first msmemscope_start() (see the test for the counts). */
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "msmemscope.h"
#include "progs.h"

#define API_ALLOCS 10
#define STOPPED_ALLOCS 7
#define AFTER_ALLOCS 5

static char pool_arena[1024];

static void alloc_some(unsigned n, void **out)
{
	for (unsigned i = 0; i < n; i++)
		if (!(out[i] = malloc(64)))
			prog_die("api: malloc failed");
}

/* Steps marked only with mstx "step start" ranges, the way programs
 * annotated for msMemScope mark them. */
static void step_ranges(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		uint64_t id = mstxRangeStartA("step start", NULL);
		void *volatile p = malloc(32);

		free(p);
		mstxRangeEnd(id);
	}
}

/* Iterations ending with an inferred step, the recorder's entry point
 * found as _torchops finds it (none without the recorder). */
static void inferred_steps(unsigned long n, int marked)
{
	void (*optimizer_step)(void);
	void *volatile kept;

	*(void **)&optimizer_step = dlsym(RTLD_DEFAULT, "msmemscope__optimizer_step");
	for (unsigned long i = 0; i < n; i++) {
		kept = malloc(100 + i); /* kept: a per-step leak from step 2 on */
		if (!kept)
			prog_die("api: malloc failed");
		if (optimizer_step)
			optimizer_step();
		if (marked)
			msmemscope_step();
	}
}

int main(int argc, char **argv)
{
	void *held[API_ALLOCS], *stopped[STOPPED_ALLOCS], *after[AFTER_ALLOCS];
	uint64_t r1, r2, rs;
	char *buf;

	if (argc == 3 && !strcmp(argv[1], "ranges")) {
		step_ranges(prog_arg(argv[2], "N"));
		return 0;
	}
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "inferred")) {
		if (argc == 4 && strcmp(argv[3], "marked"))
			prog_die("usage: api inferred N [marked]");
		inferred_steps(prog_arg(argv[2], "N"), argc == 4);
		return 0;
	}
	if (argc != 1)
		prog_die("usage: api [ranges N | inferred N [marked]]");

	alloc_some(API_ALLOCS, held);
	buf = held[0];
	memset(buf, 0, 64);

	msmemscope_owner_push("model");
	msmemscope_owner_push("layer1");
	msmemscope_op_begin("embed");
	msmemscope_kernel_launch("gather");
	msmemscope_kernel_launch("scale");
	msmemscope_access(buf, 64, MSMEMSCOPE_ACCESS_WRITE);
	msmemscope_op_end();
	msmemscope_owner_pop();
	msmemscope_owner_pop();
	msmemscope_watch(buf, 64, "buf");
	msmemscope_step();

	r1 = msmemscope_range_start("forward");
	msmemscope_op_begin("matmul");
	msmemscope_kernel_launch("gemm");
	msmemscope_access(buf, 32, MSMEMSCOPE_ACCESS_READ);
	msmemscope_op_end();
	msmemscope_op_begin("softmax");
	msmemscope_kernel_launch("exp");
	msmemscope_op_end();
	msmemscope_range_end(r1);
	msmemscope_mark("checkpoint");
	msmemscope_step();

	msmemscope_pool_alloc("arena", pool_arena, 100, sizeof(pool_arena), 100);
	msmemscope_pool_alloc("arena", pool_arena + 128, 200, sizeof(pool_arena), 300);
	msmemscope_pool_alloc("arena", pool_arena + 512, 300, sizeof(pool_arena), 600);
	msmemscope_pool_free("arena", pool_arena, 100, sizeof(pool_arena), 500);
	msmemscope_pool_free("arena", pool_arena + 128, 200, sizeof(pool_arena), 300);
	msmemscope_access(buf, 16, MSMEMSCOPE_ACCESS_UNKNOWN);
	msmemscope_owner_push("optimizer");
	r2 = msmemscope_range_start("backward");
	msmemscope_range_end(r2);
	msmemscope_owner_pop();
	msmemscope_step();

	mstxMarkA("mstx-mark", NULL);
	rs = mstxRangeStartA("step start", NULL);
	msmemscope_op_begin("loss");
	msmemscope_kernel_launch("reduce");
	msmemscope_op_end();
	mstxRangeEnd(rs);
	msmemscope_mark("done");

	for (unsigned i = 0; i < API_ALLOCS; i++)
		free(held[i]);
	msmemscope_stop();
	alloc_some(STOPPED_ALLOCS, stopped);
	for (unsigned i = 0; i < STOPPED_ALLOCS; i++)
		free(stopped[i]);
	msmemscope_start();
	alloc_some(AFTER_ALLOCS, after);

	for (unsigned i = 0; i < AFTER_ALLOCS; i++)
		free(after[i]);
	prog_say(1, "api done ranges=%llu,%llu,%llu\n", (unsigned long long)r1, (unsigned long long)r2,
		 (unsigned long long)rs);
	return 0;
}
