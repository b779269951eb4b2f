/* SPDX-License-Identifier: MIT */
/* transform.c: allocates from known functions in a known order so that
 * tests/progs/transform.sh can check the memray-style transforms: what is
 * live at the high-water mark, what leaks, and which allocations are
 * temporary at thresholds 0, 1 and 3. Every allocation runs on the main
 * thread; the lines carry XF-... markers that the test looks up.
 *
 * The sequence (sizes in bytes; "kept" blocks are never freed):
 *   leak_two      2 x 300 kept
 *   temp_zero     4 x (64, freed at once)              temporary at N >= 0
 *   temp_one      3 x (128, one_filler 16 kept, free)  the 128: N >= 1
 *   temp_three    2 x (256, 3 x three_filler 8 kept, free)  the 256: N >= 3
 *   peak_three    3 x 1000, peak_big 5000: the first peak, 8696 live;
 *                 then freed big first (N >= 0), then 1000s last to first
 *                 (N >= 1, 2, 3)
 *   peak_again    8000: live 8696 again, the peak memray reports (the last
 *                 time it is reached); then freed (N >= 0)
 *
 * With the argument "threads", instead: memray counts temporary
 * allocations per thread. A worker thread allocates 32 bytes
 * (worker_alloc), the main thread then allocates 5 x 24 bytes (main_noise,
 * kept) and 48 bytes (cross_alloc), and the worker frees its 32 bytes (no
 * allocation of its own in between: temporary at N >= 0) and the 48 bytes
 * (allocated by another thread: never temporary).
 *
 * With "mmap": a 3-page mapping unmapped at once (temporary at N >= 0), a
 * 4-page mapping and 100 bytes (the peak), the mapping unmapped in two
 * cuts (never temporary: memray matches a whole unmapping only), then a
 * 2-page mapping kept.
 *
 * Before it returns, each run drops its pointers to the kept blocks: they
 * are leaked at exit (transform's --leaks selects leaks, not the blocks
 * the program still points to). With "keep", the first sequence keeps
 * them: they are still reachable at exit, no leaks. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "progs.h"

/* Volatile, so the compiler neither removes a malloc whose block is only
 * stored nor pairs a malloc with its free; every allocating function
 * stores its block after the call, so no call is a tail call (the stacks
 * are the same at any optimization level). */
static void *volatile sink;
static void *volatile kept[16];
static int nkept;

static __attribute__((noinline)) void leak_two(void)
{
	kept[nkept++] = malloc(300); /* XF-LEAK1 */
	kept[nkept++] = malloc(300); /* XF-LEAK2 */
}

static __attribute__((noinline)) void temp_zero(void)
{
	void *p = malloc(64); /* XF-ZERO */

	sink = p;
	free(p);
}

static __attribute__((noinline)) void one_filler(void)
{
	kept[nkept++] = malloc(16); /* XF-ONEFILL */
}

static __attribute__((noinline)) void temp_one(void)
{
	void *p = malloc(128); /* XF-ONE */

	sink = p;
	one_filler();
	free(p);
}

static __attribute__((noinline)) void three_filler(void)
{
	kept[nkept++] = malloc(8); /* XF-THREEFILL */
}

static __attribute__((noinline)) void temp_three(void)
{
	void *p = malloc(256); /* XF-THREE */

	sink = p;
	three_filler(); /* XF-THREECALL1 */
	three_filler(); /* XF-THREECALL2 */
	three_filler(); /* XF-THREECALL3 */
	free(p);
}

static __attribute__((noinline)) void *peak_three(void)
{
	void *p = malloc(1000); /* XF-PEAKTHREE */

	sink = p;
	return p;
}

static __attribute__((noinline)) void *peak_big(void)
{
	void *p = malloc(5000); /* XF-PEAKBIG */

	sink = p;
	return p;
}

static __attribute__((noinline)) void *peak_again(void)
{
	void *p = malloc(8000); /* XF-PEAKAGAIN */

	sink = p;
	return p;
}

static pthread_barrier_t bar;
static void *volatile shared;

/* The kept blocks become leaks: no pointer to them is left. */
static void drop_kept(void)
{
	for (int i = 0; i < nkept; i++)
		kept[i] = NULL;
	shared = sink = NULL;
}

static __attribute__((noinline)) void *worker_alloc(void)
{
	void *p = malloc(32); /* XF-WORKER */

	sink = p;
	return p;
}

static __attribute__((noinline)) void main_noise(void)
{
	kept[nkept++] = malloc(24); /* XF-NOISE */
}

static __attribute__((noinline)) void cross_alloc(void)
{
	shared = malloc(48); /* XF-CROSS */
}

static void *worker(void *arg)
{
	void *p;

	(void)arg;
	pthread_barrier_wait(&bar);
	p = worker_alloc();
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* main allocates */
	free(p);
	free(shared);
	return NULL;
}

static int threads(void)
{
	pthread_t t;
	int i;

	if (pthread_barrier_init(&bar, NULL, 2) || pthread_create(&t, NULL, worker, NULL))
		return 1;
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar); /* the worker allocated */
	for (i = 0; i < 5; i++)
		main_noise();
	cross_alloc();
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	prog_say(1, "transform threads pid=%ld kept=%d", (long)getpid(), nkept);
	drop_kept();
	return 0;
}

static __attribute__((noinline)) char *map_pages(long pages)
{
	size_t n = (size_t)(pages * sysconf(_SC_PAGESIZE));
	int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
	char *p = mmap(NULL, n, prot, flags, -1, 0); /* XF-MMAP */

	if (p == MAP_FAILED)
		exit(1);
	sink = p;
	return p;
}

static int mappings(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char *a, *b;

	a = map_pages(3);
	munmap(a, 3 * pg);
	b = map_pages(4);
	kept[nkept++] = malloc(100); /* XF-MMAPMALLOC */
	munmap(b, pg);
	munmap(b + pg, 3 * pg);
	map_pages(2);
	prog_say(1, "transform mmap pid=%ld page=%zu", (long)getpid(), pg);
	drop_kept();
	return 0;
}

int main(int argc, char **argv)
{
	void *b[3], *g, *h;
	int i;

	if (argc > 1 && !strcmp(argv[1], "threads"))
		return threads();
	if (argc > 1 && !strcmp(argv[1], "mmap"))
		return mappings();

	leak_two();
	for (i = 0; i < 4; i++)
		temp_zero();
	for (i = 0; i < 3; i++)
		temp_one();
	for (i = 0; i < 2; i++)
		temp_three();
	for (i = 0; i < 3; i++)
		b[i] = peak_three();
	g = peak_big();
	sink = g;
	free(g);
	for (i = 2; i >= 0; i--)
		free(b[i]);
	h = peak_again();
	sink = h;
	free(h);
	prog_say(1, "transform pid=%ld kept=%d", (long)getpid(), nkept);
	if (argc < 2 || strcmp(argv[1], "keep"))
		drop_kept();
	return 0;
}
