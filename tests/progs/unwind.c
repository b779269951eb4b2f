/* SPDX-License-Identifier: MIT */
/* unwind.c: allocates from stacks of every shape the recorder's stack
 * walker meets, for unwind.sh to capture them with the walker and with
 * libunwind (MSMEMSCOPE_UNWIND_CHECK=1) and count the differences: deep
 * recursion through frames without a frame pointer and frames whose CFA is
 * rbp (alloca), at every depth on the way down and up; a frame whose CFA
 * is in rbx (which the walker leaves to libunwind); a library loaded
 * with dlopen that calls back into the program, unloaded, then another one
 * in its place;
 * threads; signal handlers that allocate, one on the thread's
 * stack (a signal frame: the walker gives such stacks to libunwind) and
 * one on an alternate signal stack (outside the thread's stack: the same).
 * Built -O2 -fomit-frame-pointer.
 *
 * Usage: unwind LIBRARY LIBRARY2 DEPTH
 * Prints "allocs=N" (the allocations made here, not the C runtime's). */
#include <alloca.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

#include "progs.h"

#define N_SIGNALS 20
#define N_ODD_FRAMES 10

static unsigned long allocs;
static void *volatile sink;

static __attribute__((noinline)) void alloc_one(size_t size)
{
	void *p = malloc(size);

	sink = p;
	free(p);
	__atomic_fetch_add(&allocs, 1, __ATOMIC_RELAXED);
}

static unsigned long descend_alloca(int n, int bottom);

#if defined(__x86_64__)
/* call_through_rbx(fn, arg) calls fn(arg) from a frame whose CFA is rbx
 * + 16: a rule libunwind follows and the walker leaves to it. */
void call_through_rbx(void (*fn)(size_t), size_t arg);
__asm__(".text\n"
	".type call_through_rbx, @function\n"
	"call_through_rbx:\n"
	".cfi_startproc\n"
	"push %rbx\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset rbx, -16\n"
	"mov %rsp, %rbx\n"
	".cfi_def_cfa_register rbx\n"
	"mov %rdi, %rax\n"
	"mov %rsi, %rdi\n"
	"call *%rax\n"
	"mov %rbx, %rsp\n"
	".cfi_def_cfa_register rsp\n"
	"pop %rbx\n"
	".cfi_def_cfa_offset 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size call_through_rbx, .-call_through_rbx\n");
#else
static void call_through_rbx(void (*fn)(size_t), size_t arg)
{
	fn(arg);
}
#endif

/* No frame pointer: the CFA is rsp plus an offset that changes as it
 * pushes. Allocates on the way down and up; never a tail call. */
static __attribute__((noinline)) unsigned long descend(int n, int bottom)
{
	unsigned long r;

	if (n % 7 == 3)
		alloc_one(16 + (size_t)n);
	if (n >= bottom) {
		alloc_one(64);
		return 1;
	}
	r = n % 5 == 4 ? descend_alloca(n + 1, bottom) : descend(n + 1, bottom);
	if (n % 11 == 5)
		alloc_one(32 + (size_t)n);
	return r + (unsigned long)n;
}

/* alloca: the frame keeps rbp, and its CFA is rbp + 16. */
static __attribute__((noinline)) unsigned long descend_alloca(int n, int bottom)
{
	volatile char *buf = alloca(16 + (size_t)(n % 13) * 8);
	unsigned long r;

	buf[0] = (char)n;
	alloc_one(24);
	r = descend(n + 1, bottom);
	return r + (unsigned long)buf[0];
}

/* Every depth from 1 to max, so each walk meets the last one's frames at a
 * different depth. */
static unsigned long stacks(int max)
{
	unsigned long sum = 0;

	for (int d = 1; d <= max; d++)
		sum += descend(0, d);
	for (int d = max; d >= 1; d -= 3)
		sum += descend(0, d);
	return sum;
}

static void *callback(int n)
{
	descend(0, n);
	return NULL;
}

/* Loads each library in turn (the second, if the loader puts it where the
 * first was, has the same return addresses with other frame rules). */
static int through_libraries(char *const *paths, int depth)
{
	for (int round = 0; round < 4; round++) {
		const char *path = paths[round % 2];
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		void *(*walk)(int, void *(*)(int), int);

		if (!h) {
			prog_say(2, "unwind: dlopen %s: %s\n", path, dlerror());
			return -1;
		}
		*(void **)&walk = dlsym(h, "unwindlib_walk");
		if (!walk) {
			prog_say(2, "unwind: no unwindlib_walk in %s\n", path);
			return -1;
		}
		for (int d = 1; d <= depth; d += 4)
			walk(d, callback, d);
		allocs += 2u * (unsigned)((depth + 3) / 4); /* the library's own two per walk */
		dlclose(h);
	}
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	descend(0, 12);
}

static void *thread_main(void *arg)
{
	stacks((int)(long)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	static char altstack[64 * 1024];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
	struct sigaction sa;
	pthread_t th;
	int depth;

	if (argc != 4) {
		prog_say(2, "usage: unwind LIBRARY LIBRARY2 DEPTH\n");
		return 99;
	}
	depth = atoi(argv[3]);
	stacks(depth);
	for (int i = 0; i < N_ODD_FRAMES; i++)
		call_through_rbx(alloc_one, 40 + (size_t)i);
	if (through_libraries(argv + 1, depth / 2))
		return 1;
	if (pthread_create(&th, NULL, thread_main, (void *)(long)(depth / 2)) || pthread_join(th, NULL))
		return 1;
	/* Threads one after the other, on stacks of other sizes: each takes
	 * over the recorder's state of the one before. */
	for (int i = 0; i < 3; i++) {
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, (size_t)(256 + 64 * i) * 1024);
		if (pthread_create(&th, &attr, thread_main, (void *)(long)(depth / 4)) || pthread_join(th, NULL))
			return 1;
		pthread_attr_destroy(&attr);
	}

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	if (sigaltstack(&ss, NULL))
		return 1;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR2, &sa, NULL);
	for (int i = 0; i < N_SIGNALS; i++) {
		raise(SIGUSR1);
		raise(SIGUSR2);
	}
	prog_say(1, "allocs=%lu\n", allocs);
	return 0;
}
