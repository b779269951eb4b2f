/* SPDX-License-Identifier: MIT */
/* floor.c: the least a recorder can do, preloaded like the real one, for
 * bench/run.sh to measure on this machine beside it (the floors of
 * DESIGN.md): malloc and free forward to the real functions and store a
 * 16-byte record (an rdtsc stamp, the address) into a thread-local ring of
 * 1 MiB, reused, so neither a file nor new memory is paid for. With
 * FLOOR_STACKS=N in the environment each malloc also captures N frames
 * with libunwind's unw_backtrace, whose result is dropped. Not a recorder:
 * it keeps nothing and handles neither calloc's dlsym bootstrap nor
 * signals; only for bench/mallocbench. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define RING (1u << 20)

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static int stacks;
static __thread uint64_t *ring, *pos;
static __thread int busy;

__attribute__((constructor)) static void floor_init(void)
{
	const char *s = getenv("FLOOR_STACKS");

	*(void **)&real_malloc = dlsym(RTLD_NEXT, "malloc");
	*(void **)&real_free = dlsym(RTLD_NEXT, "free");
	stacks = s ? atoi(s) : 0;
	if (stacks > 256)
		stacks = 256;
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

static inline uint64_t tsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

static inline void put(uint64_t stamp, const void *p)
{
	if (__builtin_expect(!pos || pos + 2 > ring + RING / 8, 0)) {
		if (!ring) {
			ring = mmap(NULL, RING, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
				    -1, 0);
			if (ring == MAP_FAILED)
				abort();
		}
		pos = ring;
	}
	pos[0] = stamp;
	pos[1] = (uintptr_t)p;
	pos += 2;
}

void *malloc(size_t n)
{
	void *p, *frames[256];

	if (!real_malloc)
		floor_init();
	p = real_malloc(n);
	if (!busy) {
		busy = 1;
		if (stacks)
			unw_backtrace(frames, stacks);
		put(tsc(), p);
		busy = 0;
	}
	return p;
}

void free(void *p)
{
	if (!p)
		return;
	if (!busy) {
		busy = 1;
		put(tsc(), p);
		busy = 0;
	}
	real_free(p);
}
