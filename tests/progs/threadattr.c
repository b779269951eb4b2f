/* SPDX-License-Identifier: MIT */
/* threadattr.c: threads whose first allocation is one that
 * pthread_getattr_np() makes (the affinity mask it reallocates, holding
 * the thread's own lock), as a JVM's threads and Rust's std::thread do to
 * find their stacks. The recorder's first stack capture in a thread asks
 * pthread_getattr_np() for the thread's stack too: taken from inside that
 * realloc, it waited for the lock its thread held, forever (java -version
 * hung recorded with C stacks). Each thread then allocates a block of its
 * own, freed by main. Prints "done THREADS".
 *
 * Usage: threadattr [THREADS] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "progs.h"

static void *work(void *arg)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	(void)arg;
	if (pthread_getattr_np(pthread_self(), &attr))
		prog_die("pthread_getattr_np failed");
	if (pthread_attr_getstack(&attr, &addr, &size) || !size)
		prog_die("pthread_attr_getstack failed");
	pthread_attr_destroy(&attr);
	return prog_malloc(64 + size % 7);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t th[64];

	if (n < 1 || n > 64)
		prog_die("usage: threadattr [THREADS 1-64]");
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, work, NULL))
			prog_die("pthread_create failed");
	for (int i = 0; i < n; i++) {
		void *p;

		pthread_join(th[i], &p);
		free(p);
	}
	printf("done %d\n", n);
	return 0;
}
