/* SPDX-License-Identifier: MIT */
/* heapaddr.c: prints where the heap puts a program's blocks: its first
 * two small mallocs, then blocks of many sizes after frees, reallocs,
 * stdio (fopen, printf) and calloc, as offsets from its first block and
 * as addresses. Under the recorder, with or without stacks, every figure
 * must be the native one: the recorder allocates nothing from the
 * program's heap (heapaddr.sh compares the addresses with address space
 * randomization off, the offsets always). With "threads" it starts and
 * joins threads twice (the second time glibc reuses the first ones'
 * stacks), then loads the libraries named after it (copies of tlsplug.so)
 * while a thread waits, which then reaches each one's thread-local
 * variable (glibc grows that thread's vector of thread-local storage),
 * and prints blocks of the main thread allocated between these steps:
 * each thread's vector comes from the heap, and must be as long as
 * natively (hooks/dtv.c). */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 200

static void *work(void *arg)
{
	free(malloc(100 + (size_t)(uintptr_t)arg));
	return NULL;
}

static pthread_mutex_t go_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER;
static int go;
static void *plugs[64];
static int nplugs;

/* Waits until the libraries are loaded, then reaches each one's
 * thread-local variable. */
static void *late(void *arg)
{
	long sum = 0;

	(void)arg;
	pthread_mutex_lock(&go_lock);
	while (!go)
		pthread_cond_wait(&go_cond, &go_lock);
	pthread_mutex_unlock(&go_lock);
	for (int i = 0; i < nplugs; i++) {
		long *(*var)(void) = (long *(*)(void))dlsym(plugs[i], "tlsplug_var");
		if (var)
			sum += *var();
	}
	return (void *)(uintptr_t)sum;
}

static void threads_round(int n)
{
	pthread_t t[8];

	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, work, (void *)(uintptr_t)i);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static int threads(int argc, char **argv)
{
	char *first = malloc(40), *p;
	pthread_t t;
	void *sum;

	printf("first %p\n", (void *)first);
	threads_round(8);
	p = malloc(40);
	printf("after 8 threads %td %p\n", p - first, (void *)p);
	threads_round(8);
	p = malloc(40);
	printf("after 8 more %td %p\n", p - first, (void *)p);
	pthread_create(&t, NULL, late, NULL);
	for (int i = 2; i < argc && nplugs < 64; i++)
		if ((plugs[nplugs] = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL)))
			nplugs++;
	pthread_mutex_lock(&go_lock);
	go = 1;
	pthread_cond_signal(&go_cond);
	pthread_mutex_unlock(&go_lock);
	pthread_join(t, &sum);
	p = malloc(40);
	printf("after %d libraries (sum %ld) %td %p\n", nplugs, (long)(uintptr_t)sum, p - first, (void *)p);
	threads_round(3);
	p = malloc(5000);
	printf("last %td %p\n", p - first, (void *)p);
	return 0;
}

int main(int argc, char **argv)
{
	char *first = malloc(24), *second = malloc(24);
	char *blocks[N];
	unsigned long long seed = 42;
	FILE *f;
	char line[256];

	if (argc > 1 && !strcmp(argv[1], "threads"))
		return threads(argc, argv);
	printf("first two: %p %p, second - first = %td\n", (void *)first, (void *)second, second - first);
	for (int i = 0; i < N; i++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		blocks[i] = malloc(8 + seed % 600);
	}
	for (int i = 0; i < N; i += 3) {
		free(blocks[i]);
		blocks[i] = NULL;
	}
	for (int i = 1; i < N; i += 7)
		blocks[i] = realloc(blocks[i], 700 + (size_t)i);
	/* stdio allocates its FILE and buffer from the heap too. */
	f = fopen(argv[0], "r");
	if (f) {
		if (!fgets(line, sizeof line, f))
			line[0] = 0;
		fclose(f);
	}
	for (int i = 0; i < N; i += 3)
		blocks[i] = i % 2 ? calloc(3, 40) : malloc(100 + (size_t)i);
	for (int i = 0; i < N; i++)
		printf("%d %td %p\n", i, blocks[i] - first, (void *)blocks[i]);
	for (int i = 0; i < N; i++)
		free(blocks[i]);
	uintptr_t base = (uintptr_t)first;
	free(second);
	free(first);
	char *last = malloc(5000);
	printf("last %td %p\n", (ptrdiff_t)((uintptr_t)last - base), (void *)last);
	free(last);
	return 0;
}
