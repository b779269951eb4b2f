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
 * unw_backtrace, whose result is dropped.
 *
 * With FLOOR_GUARD=BYTES it records nothing and does instead the least
 * that guard mode's design does (doc/guard.md): each block of malloc,
 * calloc and realloc gets a 16-byte tail zone filled with a pattern (and
 * a 16-byte head holding a mark and its size, where guard mode keeps a
 * zone and an entry in a set), compared at its free; freed blocks wait
 * in a FIFO quarantine of BYTES (0: none), filled with the pattern and
 * compared when they leave it. A block without the mark (the C library's
 * own, or aligned) goes to the real free. bench/guard.sh times it as
 * the floor of guard mode on programs it cannot rebuild (sqlite3).
 *
 * Not a recorder: it keeps nothing readable and handles no signals; only
 * for bench/mallocbench and the bench's sqlite3 run. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <fcntl.h>
#include <libunwind.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static size_t (*real_usable)(void *);
static long guard_quarantine = -1; /* FLOOR_GUARD, -1 without */
#define GPAT 0xfd
static unsigned char gpat[4096]; /* the pattern, for memcmp() */
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

	const char *g = getenv("FLOOR_GUARD");

	*(void **)&real_malloc = dlsym(RTLD_NEXT, "malloc");
	*(void **)&real_free = dlsym(RTLD_NEXT, "free");
	*(void **)&real_realloc = dlsym(RTLD_NEXT, "realloc");
	*(void **)&real_usable = dlsym(RTLD_NEXT, "malloc_usable_size");
	*(void **)&real_calloc = dlsym(RTLD_NEXT, "calloc");
	if (g && *g) {
		memset(gpat, GPAT, sizeof(gpat));
		guard_quarantine = atol(g);
	}
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

/* ---- FLOOR_GUARD ---- */

#define GZONE 16
#define GMARK 0x64726175676d6d73ull
#define GSLOTS 65536

static struct {
	char *user;
	size_t size;
} gq[GSLOTS];
static size_t gq_head, gq_n, gq_bytes;
static int gq_lock;
static unsigned long g_damaged;

static int guarded(const char *user)
{
	uint64_t mark;

	__builtin_memcpy(&mark, user - GZONE, sizeof(mark));
	return mark == GMARK;
}

static size_t gsize(const char *user)
{
	size_t n;

	__builtin_memcpy(&n, user - GZONE + 8, sizeof(n));
	return n;
}

/* p's bytes [0, n) against the pattern, a run at a time. */
static int gintact(const char *p, size_t n)
{
	for (size_t k; n; p += k, n -= k) {
		k = n < sizeof(gpat) ? n : sizeof(gpat);
		if (memcmp(p, gpat, k))
			return 0;
	}
	return 1;
}

static void *gmalloc(size_t n)
{
	char *raw;
	uint64_t mark = GMARK;

	if (n > SIZE_MAX - 2 * GZONE || !(raw = real_malloc(n + 2 * GZONE)))
		return NULL;
	__builtin_memcpy(raw, &mark, sizeof(mark));
	__builtin_memcpy(raw + 8, &n, sizeof(n));
	memset(raw + GZONE + n, GPAT, GZONE);
	return raw + GZONE;
}

static void gfree(char *user)
{
	size_t n = gsize(user);

	if (!gintact(user + n, GZONE))
		g_damaged++;
	memset(user - GZONE, 0, 8); /* its mark: ours no more */
	if ((long)n > guard_quarantine) {
		real_free(user - GZONE);
		return;
	}
	memset(user, GPAT, n);
	while (__atomic_exchange_n(&gq_lock, 1, __ATOMIC_ACQUIRE))
		;
	gq[(gq_head + gq_n) % GSLOTS].user = user;
	gq[(gq_head + gq_n) % GSLOTS].size = n;
	gq_n++;
	gq_bytes += n;
	while ((long)gq_bytes > guard_quarantine || gq_n == GSLOTS) {
		char *o = gq[gq_head].user;
		size_t m = gq[gq_head].size;

		/* Its freed bytes and its tail zone. */
		if (!gintact(o, m + GZONE))
			g_damaged++;
		gq_bytes -= m;
		gq_head = (gq_head + 1) % GSLOTS;
		gq_n--;
		real_free(o - GZONE);
	}
	__atomic_store_n(&gq_lock, 0, __ATOMIC_RELEASE);
}

__attribute__((destructor)) static void floor_fini(void)
{
	if (g_damaged)
		fprintf(stderr, "floor: %lu damaged blocks\n", g_damaged);
}

/* dlsym's own calloc, before the real one is known. */
static char boot[4096];
static size_t boot_used;

void *calloc(size_t a, size_t b)
{
	void *p;

	if (!real_calloc) {
		size_t n = (a * b + 15) & ~(size_t)15;

		if (b && a > SIZE_MAX / b)
			return NULL;
		if (boot_used + n > sizeof(boot))
			return NULL;
		p = boot + boot_used;
		boot_used += n;
		return p;
	}
	if (guard_quarantine < 0)
		return real_calloc(a, b);
	if (b && a > SIZE_MAX / b)
		return NULL;
	p = gmalloc(a * b);
	if (p)
		memset(p, 0, a * b);
	return p;
}

void *realloc(void *p, size_t n)
{
	char *q;

	if (!real_realloc)
		floor_init();
	if (guard_quarantine < 0 || (p && !guarded(p)))
		return real_realloc(p, n);
	q = gmalloc(n);
	if (q && p) {
		size_t m = gsize(p);

		memcpy(q, p, m < n ? m : n);
		gfree(p);
	}
	return q;
}

size_t malloc_usable_size(void *p)
{
	if (!real_usable)
		floor_init();
	return p && guard_quarantine >= 0 && guarded(p) ? gsize(p) : real_usable(p);
}

void *malloc(size_t n)
{
	void *p, *frames[256];

	if (!real_malloc)
		floor_init();
	if (guard_quarantine >= 0)
		return gmalloc(n);
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
	if (!p || ((char *)p >= boot && (char *)p < boot + sizeof(boot)))
		return;
	if (guard_quarantine >= 0) {
		if (guarded(p))
			gfree(p);
		else
			real_free(p);
		return;
	}
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
