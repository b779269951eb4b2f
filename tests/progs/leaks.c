/* SPDX-License-Identifier: MIT */
/* leaks.c: a program whose leaks the leaks analysis must find to the byte
 * and to the operator. Five steps marked with msmemscope_step(), then a
 * teardown (step 6):
 *   step 1  init (launch 1): 1000 bytes kept to the end (warm-up: no
 *           per-step leak, but live at exit)
 *   step 2  embed (launch 2): 300 bytes freed late, in step 3 (not a
 *           leak), and 200 bytes freed at once
 *   step 3  attention (launch 3) frees the 300 bytes; outside any
 *           operator after 2 kernel launches, 100 bytes never freed
 *           (kernel_2); softmax (launch 4): 2 x 512 bytes from leak_buf()
 *           and 256 bytes of pool "kvpool", never freed
 *   step 4  cache (launch 5): 2048 bytes from suppressed_alloc(), never
 *           freed (the test's suppression file names it)
 *   step 5  decode (launch 6): 64 bytes freed at once, 128 bytes freed in
 *           the teardown (not a leak)
 * Steps 3 and 4 allocate more than the step before them. Everything runs
 * on main's thread; no stdio, which would allocate on its own. It prints
 * the pool block's address (the arena) for the test.
 * "leaks flat" marks no steps; "leaks tidy" frees what it would leak in
 * the step that allocated it, and the kept block and the pool block at
 * the end, so nothing leaks (the others' pointers are dropped before the
 * exit: no pointer to them is left); "leaks ranges" marks the five steps with
 * msMemScope's "step start" ranges instead, and the teardown is in none;
 * "leaks many" also leaks 150 blocks of 16 bytes in softmax (a leak in a
 * loop: 155 per-step leaks); "leaks queue" also holds 400 bytes of step 2
 * (embed) to step 4 (cache), as a queue of prefetched input would, held
 * past step 3 but freed before the last step ends (not a leak), as are
 * the two pages of a mapping of step 2, unmapped one in step 4 and the
 * other in step 5; and 600 bytes of step 3 (softmax) to the teardown (a
 * per-step leak). "leaks once" is another program: ten steps, each
 * allocating and freeing 64 bytes, and step 3 also 777 bytes it loses (a
 * leak at exit that the per-step rule sets apart as kept from one step
 * only). */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "msmemscope.h"
#include "progs.h"

static void *volatile sink;
static char arena[4096];

/* Uses a block, so the compiler cannot drop a malloc/free pair. */
__attribute__((noinline)) static void *use(void *p, size_t size)
{
	if (p)
		memset(p, 3, size);
	sink = p;
	return p;
}

/* Not inlined, so their names are on the allocation stacks. */
__attribute__((noinline)) static void *leak_buf(size_t size)
{
	return use(malloc(size), size);
}

/* Another body than leak_buf's, so -O2's identical code folding keeps
 * the two functions apart. */
__attribute__((noinline)) static void *suppressed_alloc(size_t size)
{
	char *p = malloc(size);

	if (p)
		memset(p, 7, size);
	sink = p;
	return p;
}

/* The queue's mapping (main's frame is left as it was: its stale slots
 * decide what the scan at exit finds reachable). */
static char *qm;

__attribute__((noinline)) static int queue_map(void)
{
	qm = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (qm == MAP_FAILED)
		return -1;
	use(qm, 8192);
	return 0;
}

/* Unmaps page `page` (0 or 1) of the queue's mapping, when there is one. */
__attribute__((noinline)) static void queue_unmap(int page)
{
	if (qm)
		munmap(qm + page * 4096, 4096);
}

static int flat, tidy, ranges, many, queue, steps;
static uint64_t range;

/* Ends a step; with ranges, the fifth ends the last. */
static void step(void)
{
	if (ranges) {
		msmemscope_range_end(range);
		if (++steps < 5)
			range = msmemscope_range_start("step start");
	} else if (!flat) {
		msmemscope_step();
	}
}

int main(int argc, char **argv)
{
	void *kept, *late, *last, *q2 = NULL, *q3 = NULL;
	static void *leaked[6];
	int i;

	if (argc > 1 && !strcmp(argv[1], "once")) {
		for (i = 1; i <= 10; i++) {
			if (i == 3)
				use(malloc(777), 777);
			free(use(malloc(64), 64));
			msmemscope_step();
		}
		sink = NULL;
		return 0;
	}
	flat = argc > 1 && !strcmp(argv[1], "flat");
	tidy = argc > 1 && !strcmp(argv[1], "tidy");
	ranges = argc > 1 && !strcmp(argv[1], "ranges");
	many = argc > 1 && !strcmp(argv[1], "many");
	queue = argc > 1 && !strcmp(argv[1], "queue");
	prog_say(1, "arena %p\n", (void *)arena);
	if (ranges)
		range = msmemscope_range_start("step start");

	msmemscope_op_begin("init");
	kept = use(malloc(1000), 1000);
	msmemscope_op_end();
	step();

	msmemscope_op_begin("embed");
	late = use(malloc(300), 300);
	free(use(malloc(200), 200));
	if (queue) {
		q2 = use(malloc(400), 400);
		if (queue_map())
			return 1;
	}
	msmemscope_op_end();
	step();

	msmemscope_op_begin("attention");
	free(late);
	msmemscope_op_end();
	msmemscope_kernel_launch("k_gemm");
	msmemscope_kernel_launch("k_add");
	leaked[0] = use(malloc(100), 100);
	msmemscope_op_begin("softmax");
	leaked[1] = leak_buf(512);
	leaked[2] = leak_buf(512);
	for (i = 0; many && i < 150; i++)
		sink = leak_buf(16);
	if (queue)
		q3 = use(malloc(600), 600);
	msmemscope_pool_alloc("kvpool", arena, 256, sizeof(arena), 256);
	if (tidy) {
		for (i = 0; i < 3; i++)
			free(leaked[i]);
		msmemscope_pool_free("kvpool", arena, 256, sizeof(arena), 0);
	}
	msmemscope_op_end();
	step();

	msmemscope_op_begin("cache");
	leaked[3] = suppressed_alloc(2048);
	if (q2)
		free(q2);
	queue_unmap(0);
	if (tidy)
		free(leaked[3]);
	msmemscope_op_end();
	step();

	msmemscope_op_begin("decode");
	free(use(malloc(64), 64));
	last = use(malloc(128), 128);
	queue_unmap(1);
	msmemscope_op_end();
	step();

	free(last);
	if (q3)
		free(q3);
	if (tidy)
		free(kept);
	sink = kept;
	/* Their pointers dropped: leaked at exit (still reachable else, as
	 * valgrind would say too). */
	for (i = 0; i < 6; i++)
		leaked[i] = NULL;
	sink = leaked;
	return 0;
}
