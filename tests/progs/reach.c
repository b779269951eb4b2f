/* SPDX-License-Identifier: MIT */
/* reach.c: blocks live at exit whose fate the recorder's scan at exit must
 * tell (hooks/reach.c, replay/core/reach.c), each of a size of its own so
 * the test finds it:
 *
 *   leaked (no pointer left):       1001 (its pointer overwritten), 1002 (its
 *                                   only pointer in a block freed since), 1003
 *                                   (a thread's, in another malloc arena, its
 *                                   pointer in a freed block of that arena),
 *                                   1004 (its only pointer on the stack of a
 *                                   thread that exited), 1005 (only in a dead
 *                                   frame of a thread still running at exit,
 *                                   below its stack pointer: "reach threads"),
 *                                   1009 (the heap's last
 *                                   block: malloc's top chunk starts in its last
 *                                   bytes, and glibc's main arena points there),
 *                                   300001 (a large block, mapped by malloc)
 *   indirectly leaked:              1011 (pointed to by 1010, leaked), 1021
 *                                   (a cycle with 1020: 1020 leaked, 1021 not)
 *   possibly leaked:                1031 (only a pointer into its middle),
 *                                   1032 (only a pointer 8 bytes in, where
 *                                   its first word is a pointer: no count
 *                                   nor length there, as in a list node or
 *                                   LLVM's operand list), 1041 (only a
 *                                   global pointing to its last word, where
 *                                   the next chunk's header begins, as
 *                                   glibc's main arena points to its top)
 *   reachable:                      2001 (a global), 2002 (pointed to by 2001),
 *                                   2003 (thread-local storage), 2004 (a page
 *                                   the program mapped itself), 2005 (a pointer
 *                                   8 bytes in: new[]'s count, a length
 *                                   prefix), 2008 (a pointer to its second
 *                                   base class: into its middle, at a vtable
 *                                   pointer, its first word another, as C++
 *                                   lays out an object of two base classes
 *                                   with virtual functions), 2006 (a thread
 *                                   still running at
 *                                   exit, on its stack), 2007 (a thread's, in
 *                                   another arena, from a global), 2009 (a
 *                                   thread still running at exit has just
 *                                   allocated it: only in its registers),
 *                                   2010 (in the lower half of a mapping whose
 *                                   upper half is a running thread's stack,
 *                                   given with pthread_attr_setstack: "reach
 *                                   threads"),
 *                                   300002 (a large block, from a global)
 *
 * "reach stdio" leaks 100 bytes alone, then prints "done" through stdout,
 * whose buffer, made after it, freeres frees into the top chunk: glibc's
 * main arena then points into its last bytes, and so did a word of the
 * dead frames of freeres that the scan's frames did not overwrite.
 * "reach threads" also leaves two threads running at exit (freeres does
 * not run then), one with 2009 in its registers; "reach limit" keeps 17
 * Mi pointers, more than the scan writes; "reach busy" exits while two
 * threads allocate and free blocks of 4001 to 4008 and 8001 to 8008 bytes
 * as fast as they can, each kept in a global table until the next takes its place (all
 * reachable, none leaked: the blocks made while the scan ran have
 * nothing pointing to them in the memory it read before). Prints
 * "done". */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "progs.h"

struct node {
	struct node *next;
	char pad[1];
};

static void *volatile global_ptr;
static void *volatile dropped;
static void *volatile thread_kept;
static char *volatile interior;
static char *volatile last_word;
static void *volatile plus8;
static void *volatile second_base;
static void *volatile past_link;
static void *volatile large_kept;
static __thread void *volatile tls_ptr;
static volatile int running = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t started = PTHREAD_COND_INITIALIZER;
static int alive;

/* Two vtables, as a C++ compiler makes them: arrays of pointers to
 * functions, in the module's read-only data. */
static __attribute__((noinline)) void virtual_one(void)
{
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void virtual_two(void)
{
	__asm__ volatile("nop" ::: "memory");
}

static void (*const vtable_a[])(void) = { virtual_one, virtual_two };
static void (*const vtable_b[])(void) = { virtual_two, virtual_one };

static void *make(size_t size)
{
	void *p = malloc(size);

	if (!p)
		abort();
	memset(p, 0, size);
	return p;
}

/* 1003 leaked and 2007 kept, from a thread (its own malloc arena). */
static void *arena_thread(void *arg)
{
	void **holder = make(64);

	(void)arg;
	/* Past the first 32 bytes, which free() may overwrite (tcache's
	 * links, a large free chunk's); volatile, or the compiler drops a
	 * store to a block freed before anyone reads it. */
	((void *volatile *)holder)[5] = make(1003);
	/* After it, so that the freed holder is not the top of the arena's
	 * heap, which glibc gives back (its pages read zeros then). */
	thread_kept = make(2007);
	free(holder); /* the only pointer to 1003 was in it */
	return NULL;
}

/* Leaves 1004's address on its stack and exits: the stack stays mapped
 * (glibc keeps exited threads' stacks for new ones), dead. */
static void *dies(void *arg)
{
	void *volatile mine = make(1004);

	(void)arg;
	return mine ? arg : NULL;
}

/* A thread that runs on a stack the program gave it, the upper half of a
 * mapping whose lower half (above a guard page) keeps 2010: its frames
 * below its stack pointer are dead, the memory below its stack is not. */
static void *own_stack_thread(void *arg)
{
	(void)arg;
	free(make(32)); /* it records: the recorder knows its stack */
	pthread_mutex_lock(&lock);
	alive++;
	pthread_cond_signal(&started);
	pthread_mutex_unlock(&lock);
	while (running)
		pause();
	return NULL;
}

static int own_stack_start(void)
{
	size_t size = (size_t)16 << 20;
	char *r = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_attr_t attr;
	pthread_t th;

	if (r == MAP_FAILED || mprotect(r, 4096, PROT_NONE) || pthread_attr_init(&attr) ||
	    pthread_attr_setstack(&attr, r + size / 2, size / 2))
		return 2;
	((void *volatile *)(r + 65536))[0] = make(2010);
	return pthread_create(&th, &attr, own_stack_thread, NULL) ? 2 : 0;
}

/* Leaves 1005's address in a frame 4 KiB deep, which returns: dead
 * frames of a thread that goes on, below its stack pointer. */
__attribute__((noinline, noipa)) static void bury(void)
{
	void *volatile deep[512];

	deep[0] = make(1005);
	for (size_t i = 1; i < sizeof deep / sizeof deep[0]; i++)
		deep[i] = NULL;
}

/* Keeps 2006 on its stack until the process exits, 1005 only below its
 * stack pointer. */
static void *stay(void *arg)
{
	void *volatile mine = make(2006);

	(void)arg;
	bury();
	/* The thread's last allocator address, a root (2009's case), is
	 * not 1005's then. */
	free(make(64));
	pthread_mutex_lock(&lock);
	alive++;
	pthread_cond_signal(&started);
	pthread_mutex_unlock(&lock);
	while (running && mine)
		pause();
	return NULL;
}

static void scrub(void);

/* Allocates 2009 and keeps it in a register only until the process exits:
 * meanwhile its address is kept scrambled (no pointer) while the dead
 * frames where malloc left it are cleared. */
#define SCRAMBLE 0x5555555555555555ull
static volatile int inflight_ready;
static volatile uintptr_t inflight_scrambled;

static void *inflight(void *arg)
{
	void *p = make(2009);

	(void)arg;
	inflight_scrambled = (uintptr_t)p ^ SCRAMBLE;
	p = NULL;
	scrub();
	p = (void *)(inflight_scrambled ^ SCRAMBLE);
	__atomic_store_n(&inflight_ready, 1, __ATOMIC_RELEASE);
	for (;;)
		__asm__ volatile("" : : "r"(p));
	return NULL;
}

/* Clears the stack below the caller's frame, where the dead frames of
 * work() held the blocks' addresses: the exit's frames, which the scan
 * reads, take that place, and what they do not overwrite would read as
 * pointers (valgrind's leak check sees them the same way). */
__attribute__((noinline, noipa)) static void scrub(void)
{
	volatile char buf[32768];

	/* Byte by byte through the volatile: GCC took a memset() of a local
	 * never read for nothing, and the call for one to make. */
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = 0;
}

__attribute__((noinline)) static int work(int threads)
{
	pthread_t th;
	struct node *a, *b;
	void **holder, **page;
	char *p;

	/* Leaked: the pointer overwritten. */
	global_ptr = make(1001);
	global_ptr = NULL;
	/* Leaked: the only pointer in a block freed since. */
	holder = make(64);
	((void *volatile *)holder)[5] = make(1002);
	free(holder);
	/* Indirectly leaked: 1011 from 1010, itself leaked. */
	a = make(1010);
	a->next = make(1011);
	a = NULL;
	/* A cycle: 1020 -> 1021 -> 1020, nothing else. */
	a = make(1020);
	b = make(1021);
	a->next = b;
	b->next = a;
	a = b = NULL;
	/* Possibly leaked: a pointer into its middle. */
	interior = (char *)make(1031) + 100;
	/* Possibly leaked too: a pointer 8 bytes in, to the second field of
	 * a node whose first is a pointer into the heap (to 2001's block,
	 * made below; valgrind reads it: neither a count nor a length). */
	past_link = (char *)make(1032) + 8;
	/* And one to its last word, where the header of the chunk after its
	 * own begins (1041 fills its chunk of 1056 bytes): a pointer of the
	 * program's, which valgrind calls possibly lost. */
	last_word = (char *)make(1041) + 1040;
	/* A large block, mapped by malloc, leaked and kept. */
	global_ptr = make(300001);
	global_ptr = NULL;
	large_kept = make(300002);
	/* Reachable: 2001 from a global, 2002 from 2001. */
	a = make(2001);
	a->next = make(2002);
	global_ptr = a;
	*(void **)((char *)past_link - 8) = a;
	a = NULL;
	tls_ptr = make(2003);
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 2;
	page[10] = make(2004);
	/* A length prefix (valgrind checks it is one: 8 bytes of the size
	 * that follows them). */
	p = make(2005);
	*(uint64_t *)p = 2005 - 8;
	plus8 = p + 8;
	/* An object of two base classes, kept only by a pointer to the
	 * second: each base begins with its vtable pointer. */
	p = make(2008);
	((const void **)p)[0] = (const void *)vtable_a;
	((const void **)p)[2] = (const void *)vtable_b;
	second_base = p + 16;
	if (pthread_create(&th, NULL, arena_thread, NULL) || pthread_join(th, NULL))
		return 2;
	if (pthread_create(&th, NULL, dies, NULL) || pthread_join(th, NULL))
		return 2;
	if (threads) {
		if (pthread_create(&th, NULL, stay, NULL))
			return 2;
		if (own_stack_start())
			return 2;
		pthread_mutex_lock(&lock);
		while (alive < 2)
			pthread_cond_wait(&started, &lock);
		pthread_mutex_unlock(&lock);
		if (pthread_create(&th, NULL, inflight, NULL))
			return 2;
		while (!__atomic_load_n(&inflight_ready, __ATOMIC_ACQUIRE))
			sched_yield();
	}
	/* Last in the heap: glibc's top chunk begins in its last 8 bytes,
	 * and the main arena points there. */
	dropped = make(1009);
	dropped = NULL;
	return 0;
}

/* "reach busy": each thread keeps its last BUSY_SLOTS blocks in its part
 * of a global table, the new one in the place of the oldest, freed first:
 * no block but the last one allocated is ever held only in a register,
 * which the scan cannot read (the last is a root: add_running() in
 * hooks/reach.c; one about to be freed, held in a register after its
 * pointer was overwritten, would read leaked). */
#define BUSY_THREADS 2
#define BUSY_SLOTS 64
static void *volatile busy_slots[BUSY_THREADS][BUSY_SLOTS];
static volatile unsigned long busy_made[BUSY_THREADS];

static void *busy(void *arg)
{
	uintptr_t me = (uintptr_t)arg;

	for (unsigned long i = 0;; i++) {
		free(busy_slots[me][i % BUSY_SLOTS]);
		/* Of two sizes in turn, each round of the table: the new
		 * block is not where the freed one was (malloc hands a freed
		 * block of the size back first), and a pointer to the freed
		 * one is no pointer to it. */
		busy_slots[me][i % BUSY_SLOTS] = make((i / BUSY_SLOTS % 2 ? 8001 : 4001) + i % 8);
		busy_made[me] = i + 1;
	}
	return NULL;
}

/* Starts the threads and returns once each has made 100,000 blocks. */
static int busy_start(void)
{
	pthread_t th;

	for (uintptr_t i = 0; i < BUSY_THREADS; i++)
		if (pthread_create(&th, NULL, busy, (void *)i))
			return 2;
	for (uintptr_t i = 0; i < BUSY_THREADS; i++)
		while (busy_made[i] < 100000)
			sched_yield();
	return 0;
}

/* More pointer-like words than the scan writes (16 Mi): 17 Mi pointers to
 * one block, kept. */
static void **many;

int main(int argc, char **argv)
{
	int rc;

	if (argc > 1 && !strcmp(argv[1], "limit")) {
		size_t n = (size_t)17 << 20;
		void *one = make(3001);

		many = malloc(n * sizeof(*many));
		if (!many)
			return 2;
		for (size_t i = 0; i < n; i++)
			many[i] = one;
		prog_say(1, "done\n");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "busy")) {
		rc = busy_start();
		if (!rc)
			prog_say(1, "done\n");
		return rc;
	}
	if (argc > 1 && !strcmp(argv[1], "stdio")) {
		dropped = make(100);
		dropped = NULL;
		scrub();
		printf("done\n");
		return 0;
	}
	rc = work(argc > 1 && !strcmp(argv[1], "threads"));

	scrub();
	if (!rc)
		prog_say(1, "done\n");
	/* Leaving as shells and forked children do: no exit handlers, no
	 * freeres; the memory as the program left it. */
	if (argc > 1 && !strcmp(argv[1], "quick"))
		_exit(rc);
	return rc;
}
