/* SPDX-License-Identifier: MIT */
/* floor.c: the least a recorder can do, preloaded like the real one, for
 * bench/run.sh to measure on this machine beside it (the floors of
 * DESIGN.md). malloc and free forward to the real functions and record
 * the call:
 *  - by default, a 16-byte record (an rdtsc stamp, the address) stored
 *    into a thread-local ring of 1 MiB, reused, so neither a file nor new
 *    memory is paid for;
 *  - with FLOOR_LOG=FILE, the recorder's own record shape (tag byte, then
 *    LEB128 varints: stamp delta, zigzag address delta, and for malloc the
 *    size and a stack id of 0) encoded into 64 KiB chunks of a shared
 *    mapping of FILE, each chunk faulted in with one MADV_POPULATE_WRITE
 *    as the recorder's threads do: what writing that log costs inline,
 *    without anything else a recorder needs.
 * With FLOOR_STACKS=N each malloc also captures N frames with libunwind's
 * unw_backtrace, whose result is dropped. Not a recorder: it keeps
 * nothing readable and handles neither calloc's dlsym bootstrap nor
 * signals; only for bench/mallocbench and the bench's sqlite3 run. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <fcntl.h>
#include <libunwind.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "format.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define RING (1u << 20)
#define CHUNK (64u << 10)
#define LOG_MAX (4ull << 30)

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static int stacks;
static uint8_t *log_base;        /* FLOOR_LOG's mapping, NULL without it */
static uint64_t log_next;        /* atomic: offset of the next free chunk */
static __thread uint64_t *ring, *pos;
static __thread uint8_t *cur, *end;
static __thread uint64_t prev_stamp, prev_addr;
static __thread int busy;

__attribute__((constructor)) static void floor_init(void)
{
	const char *s = getenv("FLOOR_STACKS"), *log = getenv("FLOOR_LOG");

	*(void **)&real_malloc = dlsym(RTLD_NEXT, "malloc");
	*(void **)&real_free = dlsym(RTLD_NEXT, "free");
	stacks = s ? atoi(s) : 0;
	if (stacks > 256)
		stacks = 256;
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	if (log && *log && !log_base) {
		int fd = open(log, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		void *p = MAP_FAILED;

		if (fd >= 0 && ftruncate(fd, (off_t)LOG_MAX) == 0)
			p = mmap(NULL, LOG_MAX, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			abort();
		log_base = p;
		if (fd >= 0)
			close(fd);
	}
}

static inline uint64_t tsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* The recorder's record shape, into this thread's chunk of the log. */
static inline void put_log(uint8_t tag, uint64_t stamp, uint64_t addr, int is_alloc, uint64_t size)
{
	uint8_t *p;
	int64_t d = (int64_t)(addr - prev_addr);

	if (__builtin_expect(!cur || end - cur < 64, 0)) {
		uint64_t off = __atomic_fetch_add(&log_next, CHUNK, __ATOMIC_RELAXED);
		if (off + CHUNK > LOG_MAX)
			abort();
		cur = log_base + off;
		end = cur + CHUNK;
		madvise(cur, CHUNK, MADV_POPULATE_WRITE);
	}
	p = cur;
	*p++ = tag;
	p = mms_put_u(p, stamp - prev_stamp);
	p = mms_put_u(p, mms_zigzag(d));
	if (is_alloc) {
		p = mms_put_u(p, size);
		p = mms_put_u(p, 0);
	}
	prev_stamp = stamp;
	prev_addr = addr;
	__atomic_store_n(&cur, p, __ATOMIC_RELEASE);
}

static inline void put_ring(uint64_t stamp, const void *p)
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
		if (log_base)
			put_log(MMS_TAG_ALLOC | MMS_ALLOC_MALLOC, tsc(), (uintptr_t)p, 1, n);
		else
			put_ring(tsc(), p);
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
		if (log_base)
			put_log(MMS_TAG_FREE | MMS_FREE_FREE, tsc(), (uintptr_t)p, 0, 0);
		else
			put_ring(tsc(), p);
		busy = 0;
	}
	real_free(p);
}
