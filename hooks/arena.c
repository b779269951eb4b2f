/* SPDX-License-Identifier: MIT */
/* arena.c: the recorder's own heap. Whatever a thread allocates while it is
 * inside the recorder (the recorder itself, or glibc on its behalf: stdio
 * in pthread_getattr_np, the thread vector of pthread_create, dlsym's
 * error state) comes from here, never from the program's allocator, so the
 * program's heap holds the blocks it holds natively, at the addresses it
 * gets natively. free() and realloc() recognise these blocks by address,
 * whoever calls them. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hooks-int.h"

/* Address space reserved at the first allocation and committed in steps
 * as it is used: 32 MiB, a hundred times what a run with stacks and
 * threads used (about 320 KiB), and little of an address space the
 * program may limit (RLIMIT_AS). Blocks are powers of two from 16 bytes,
 * each class cut from slabs of at least SLAB bytes; a table gives each
 * SLAB-sized unit of the arena its class, so a block needs no header and
 * keeps the alignment of its size (up to SLAB). Freed blocks go to their class's
 * list and are never given back to the system: the recorder's own needs
 * are small and recur. */
#define ARENA_SIZE (32ull << 20)
#define SLAB_BITS 16
#define SLAB (1ull << SLAB_BITS)
#define COMMIT_STEP (1ull << 20)
#define MIN_BITS 4
#define NCLASSES (30 - MIN_BITS)

uintptr_t mms__arena_lo, mms__arena_len;
static uint8_t unit_class[ARENA_SIZE >> SLAB_BITS];
static void *free_list[NCLASSES];
static uintptr_t bump[NCLASSES], bump_end[NCLASSES];
static uintptr_t top, committed;
static int lock;
/* This thread is inside the arena: an allocation now comes from a signal
 * handler that interrupted it, and must not wait for the lock it holds. */
static __thread int tls_in_arena;

/* Raw system calls: the arena serves allocations made before the real
 * mmap is known, and our mmap symbol is the program's hook. */
static void *sys_mmap(void *addr, size_t len, int prot, int flags)
{
	long r = syscall(SYS_mmap, addr, len, prot, flags, -1, 0);
	return r < 0 && r > -4096 ? MAP_FAILED : (void *)r;
}

static int reserve(void)
{
	void *p = sys_mmap(NULL, ARENA_SIZE + SLAB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
	uintptr_t lo;

	if (p == MAP_FAILED)
		return -1;
	mms__own_add(p, ARENA_SIZE + SLAB);
	/* SLAB-aligned, so every block is aligned to its size up to SLAB. */
	lo = ((uintptr_t)p + SLAB - 1) & ~(SLAB - 1);
	top = committed = lo;
	__atomic_store_n(&mms__arena_lo, lo, __ATOMIC_RELAXED);
	__atomic_store_n(&mms__arena_len, ARENA_SIZE, __ATOMIC_RELEASE);
	return 0;
}

/* Takes n bytes (a multiple of SLAB) at the top, aligned to align. */
static uintptr_t take(uintptr_t n, uintptr_t align)
{
	uintptr_t at = (top + align - 1) & ~(align - 1);

	uintptr_t end = mms__arena_lo + ARENA_SIZE;

	if (at + n > end)
		return 0;
	if (at + n > committed) {
		uintptr_t to = (at + n + COMMIT_STEP - 1) & ~(COMMIT_STEP - 1);
		if (to > end)
			to = end;
		if (syscall(SYS_mprotect, committed, to - committed, PROT_READ | PROT_WRITE))
			return 0;
		committed = to;
	}
	top = at + n;
	return at;
}

static void lock_arena(void)
{
	mms__spin_lock(&lock);
}

static void unlock_arena(void)
{
	mms__spin_unlock(&lock);
}

static unsigned class_of(size_t size)
{
	unsigned c = 0;

	while (((size_t)1 << (c + MIN_BITS)) < size)
		c++;
	return c;
}

static size_t class_size(unsigned c)
{
	return (size_t)1 << (c + MIN_BITS);
}

void *mms__arena_alloc(size_t size, size_t align)
{
	uintptr_t p = 0;
	unsigned c;
	size_t bytes;

	if (size < align)
		size = align;
	if (size > (1ull << (NCLASSES - 1 + MIN_BITS)) || align > SLAB || tls_in_arena) {
		errno = ENOMEM;
		return NULL;
	}
	c = class_of(size ? size : 1);
	bytes = class_size(c);
	tls_in_arena = 1;
	lock_arena();
	if (!mms__arena_len && reserve())
		goto out;
	if (free_list[c]) {
		p = (uintptr_t)free_list[c];
		free_list[c] = *(void **)free_list[c];
	} else if (bump[c] + bytes <= bump_end[c] && bump[c]) {
		p = bump[c];
		bump[c] += bytes;
	} else {
		uintptr_t n = bytes > SLAB ? bytes : SLAB;
		uintptr_t at = take(n, bytes > SLAB ? bytes : SLAB);
		if (at) {
			for (uintptr_t u = at; u < at + n; u += SLAB)
				unit_class[(u - mms__arena_lo) >> SLAB_BITS] = (uint8_t)c;
			p = at;
			bump[c] = at + bytes;
			bump_end[c] = at + n;
		}
	}
out:
	unlock_arena();
	tls_in_arena = 0;
	if (!p)
		errno = ENOMEM;
	return (void *)p;
}

size_t mms__arena_usable(const void *ptr)
{
	return class_size(unit_class[((uintptr_t)ptr - mms__arena_lo) >> SLAB_BITS]);
}

void mms__arena_free(void *ptr)
{
	unsigned c = unit_class[((uintptr_t)ptr - mms__arena_lo) >> SLAB_BITS];
	int nested = tls_in_arena;

	/* A free from a signal handler that interrupted this thread inside
	 * the arena: the block is lost rather than the lists torn. */
	if (nested)
		return;
	tls_in_arena = 1;
	lock_arena();
	*(void **)ptr = free_list[c];
	free_list[c] = ptr;
	unlock_arena();
	tls_in_arena = 0;
}

void *mms__arena_realloc(void *ptr, size_t size)
{
	size_t old = ptr ? mms__arena_usable(ptr) : 0;
	void *r;

	if (ptr && size <= old && size > old / 2)
		return ptr;
	r = mms__arena_alloc(size, 16);
	if (r && ptr)
		memcpy(r, ptr, old < size ? old : size);
	if (r && ptr)
		mms__arena_free(ptr);
	return r;
}

/* Around fork: the forking thread holds the lock, so no other thread is
 * half-way through the lists when the child's copy is made. */
void mms__arena_before_fork(void)
{
	lock_arena();
}

void mms__arena_after_fork(void)
{
	unlock_arena();
}

void *mms__map_anon(size_t size)
{
	void *p = mms__real.mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				 -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	mms__own_add(p, size);
	return p;
}
