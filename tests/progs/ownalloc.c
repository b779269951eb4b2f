/* SPDX-License-Identifier: MIT */
/* ownalloc.c: a small replacement for the malloc family, as programs and
 * allocators such as jemalloc bring: its arenas come from mmap, called
 * under its own lock (the way jemalloc's start-up calls it), blocks over
 * 128 KiB get a mapping each and give it back with munmap when freed;
 * smaller blocks are cut from the current arena and never reused. Built
 * into tests/progs/ownmalloc (the program defines malloc itself, ahead of
 * the recorder) and into tests/progs/allocplug.so (preloaded after the
 * recorder: the recorder's real allocator). ownmalloc.sh says what each
 * must show. With -DOWNALLOC_PLUG (allocplug.so) its constructor keeps a
 * block of 24 bytes allocated through the malloc the process resolves
 * (the recorder's, preloaded first), as tcmalloc's start-up does: the
 * allocator's own state, not the program's leak. With -DOWNALLOC_FORK (tests/progs/forklock.so, preloaded
 * after the recorder) it holds its lock across fork, as jemalloc and
 * PartitionAlloc hold theirs, and protects a page under it: see
 * forklock.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ARENA (1u << 20)
#ifndef BIG /* threadattr-own: 64, every block of 64 bytes or more mapped */
#define BIG (128u << 10)
#endif

/* Before each block: its size, and where its own mapping starts (NULL:
 * cut from an arena). 16 bytes: blocks stay 16-byte aligned. */
struct head {
	size_t size;
	void *map;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *cur, *end;

static void *fail(void)
{
	errno = ENOMEM;
	return NULL;
}

static size_t up(size_t n, size_t a)
{
	return (n + a - 1) & ~(a - 1);
}

/* A block of n bytes aligned to align (a power of two, at least 16). */
static void *take(size_t n, size_t align)
{
	size_t need;
	char *at;
	struct head *h;

	if (n > SIZE_MAX / 4 || align > SIZE_MAX / 4)
		return fail();
	need = up(n, 16) + sizeof(struct head) + align - 16;
	if (need >= BIG) {
		size_t len = up(need + 16, 4096); /* the length first, then the head */
		char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return fail();
		*(size_t *)m = len;
		at = (char *)up((uintptr_t)m + 16 + sizeof(struct head), align);
		h = (struct head *)at - 1;
		h->size = n;
		h->map = m;
		return at;
	}
	pthread_mutex_lock(&lock);
	if (!cur || (size_t)(end - cur) < need) {
		char *m = mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED) {
			pthread_mutex_unlock(&lock);
			return fail();
		}
		cur = m;
		end = m + ARENA;
	}
	at = (char *)up((uintptr_t)cur + sizeof(struct head), align);
	cur = at + up(n, 16);
	pthread_mutex_unlock(&lock);
	h = (struct head *)at - 1;
	h->size = n;
	h->map = NULL;
	return at;
}

void *malloc(size_t n)
{
	return take(n, 16);
}

void free(void *p)
{
	struct head *h;

	if (!p)
		return;
	h = (struct head *)p - 1;
	if (h->map)
		munmap(h->map, *(size_t *)h->map);
}

void *calloc(size_t k, size_t n)
{
	void *p;

	if (n && k > SIZE_MAX / n)
		return fail();
	p = take(k * n, 16);
	if (p)
		memset(p, 0, k * n);
	return p;
}

void *realloc(void *p, size_t n)
{
	void *q;
	size_t old;

	if (!p)
		return take(n, 16);
	if (!n) {
		free(p);
		return NULL;
	}
	old = ((struct head *)p - 1)->size;
	q = take(n, 16);
	if (q) {
		memcpy(q, p, old < n ? old : n);
		free(p);
	}
	return q;
}

void *reallocarray(void *p, size_t k, size_t n)
{
	if (n && k > SIZE_MAX / n)
		return fail();
	return realloc(p, k * n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	p = take(n, align < 16 ? 16 : align);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
	if (!align || (align & (align - 1)))
		return errno = EINVAL, NULL;
	return take(n, align < 16 ? 16 : align);
}

void *memalign(size_t align, size_t n)
{
	return aligned_alloc(align, n);
}

void *valloc(size_t n)
{
	return take(n, 4096);
}

void *pvalloc(size_t n)
{
	return take(up(n ? n : 1, 4096), 4096);
}

size_t malloc_usable_size(void *p)
{
	return p ? ((struct head *)p - 1)->size : 0;
}

#ifdef OWNALLOC_FORK
/* The handlers are registered by the library's constructor, which runs
 * before the recorder's (preloaded before it): older than the recorder's
 * unless it puts its own first. The child's handler changes a page's
 * protection holding the lock (its first event in the child), and so may
 * ownalloc_protect(), from any thread. */
static void *fork_page;

static void fork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&lock);
}

static void fork_child(void)
{
	mprotect(fork_page, 4096, PROT_READ | PROT_WRITE);
	pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void fork_init(void)
{
	fork_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fork_page == MAP_FAILED)
		abort();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void ownalloc_protect(void);
void ownalloc_protect(void)
{
	pthread_mutex_lock(&lock);
	mprotect(fork_page, 4096, PROT_READ);
	mprotect(fork_page, 4096, PROT_READ | PROT_WRITE);
	pthread_mutex_unlock(&lock);
}
#endif

#ifdef OWNALLOC_PLUG
/* Kept where the compiler cannot drop the store (which would leave
 * malloc a tail call: the loader's frame would be its caller). */
void *volatile ownalloc_plug_state;

__attribute__((constructor)) static void plug_init(void)
{
	ownalloc_plug_state = malloc(24);
}
#endif
