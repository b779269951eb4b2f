/* SPDX-License-Identifier: MIT */
/* cleanthreads.c: eight threads allocating, writing, reallocating and
 * freeing at once (guard: no finding). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 8
#define ROUNDS 5000

static void *volatile handoff[THREADS];

static void *work(void *arg)
{
	unsigned seed = (unsigned)(size_t)arg * 7919u + 1;
	unsigned long sum = 0;

	for (int i = 0; i < ROUNDS; i++) {
		size_t n = 1 + (seed = seed * 1103515245u + 12345u) % 700;
		char *p = malloc(n);
		void *other;

		memset(p, (int)(n & 0x7f), n);
		p = realloc(p, n * 2);
		memset(p + n, 1, n);
		sum += (unsigned char)p[n - 1];
		/* Free this thread's previous block, keep this one. */
		other = __atomic_exchange_n(&handoff[(size_t)arg], p, __ATOMIC_ACQ_REL);
		free(other);
	}
	return (void *)sum;
}

int main(void)
{
	pthread_t t[THREADS];
	unsigned long sum = 0;

	for (size_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, work, (void *)i);
	for (size_t i = 0; i < THREADS; i++) {
		void *r;

		pthread_join(t[i], &r);
		sum += (unsigned long)r;
		free(handoff[i]);
	}
	printf("sum %lu\n", sum);
	return 0;
}
