/* SPDX-License-Identifier: MIT */
/* mallocbench.c: a malloc-heavy loop for measuring the recorder's cost:
 * each thread keeps a working set of WINDOW blocks and, at every
 * iteration, frees the oldest and allocates a new one of 16..4096 bytes
 * (smaller sizes more likely, as in real programs), touching its first
 * byte.
 *
 * Usage: mallocbench THREADS ITERATIONS [WINDOW]
 * Prints "events=N": the allocations and frees the loop makes (the first
 * WINDOW frees of each thread are free(NULL), which count for nothing).
 * With MALLOCBENCH_STEPS=K in the environment, the first thread calls
 * msmemscope_step() K times, evenly spread, when the recorder is preloaded
 * (found with dlsym, so the native run links nothing more). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long iterations;
static size_t window = 1000;
static unsigned long step_every; /* 0: no steps */
static void (*step_fn)(void);

static unsigned long long next_rand(unsigned long long *s)
{
	unsigned long long x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* 16..4096 bytes, with a bias towards small blocks: a power of two from
 * 16 to 4096 is drawn first, then a size up to it. */
static size_t next_size(unsigned long long *s)
{
	unsigned long long r = next_rand(s);
	size_t size = 16 + (size_t)((r >> 16) % ((size_t)1 << (4 + r % 9)));

	return size > 4096 ? 4096 : size;
}

static void *bench_thread(void *arg)
{
	unsigned long long rng = 0x9e3779b97f4a7c15ull + (size_t)arg;
	void **live = calloc(window, sizeof(*live));

	if (!live) {
		fprintf(stderr, "mallocbench: out of memory\n");
		exit(1);
	}
	for (unsigned long i = 0; i < iterations; i++) {
		size_t slot = i % window, size = next_size(&rng);

		free(live[slot]);
		live[slot] = malloc(size);
		if (!live[slot]) {
			fprintf(stderr, "mallocbench: malloc(%zu) failed\n", size);
			exit(1);
		}
		*(volatile char *)live[slot] = (char)i;
		if (step_fn && !arg && (i + 1) % step_every == 0)
			step_fn();
	}
	for (size_t i = 0; i < window; i++)
		free(live[i]);
	free(live);
	return NULL;
}

static unsigned long parse(const char *s, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v == 0) {
		fprintf(stderr, "mallocbench: %s must be a positive number, not '%s'\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	unsigned long nthreads;
	pthread_t th[64];

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: mallocbench THREADS ITERATIONS [WINDOW]\n");
		return 2;
	}
	nthreads = parse(argv[1], "THREADS");
	iterations = parse(argv[2], "ITERATIONS");
	if (argc == 4)
		window = parse(argv[3], "WINDOW");
	if (getenv("MALLOCBENCH_STEPS")) {
		unsigned long k = parse(getenv("MALLOCBENCH_STEPS"), "MALLOCBENCH_STEPS");

		step_every = iterations / k ? iterations / k : 1;
		*(void **)&step_fn = dlsym(RTLD_DEFAULT, "msmemscope_step");
	}
	if (nthreads > 64) {
		fprintf(stderr, "mallocbench: at most 64 threads\n");
		return 2;
	}
	for (unsigned long t = 1; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, bench_thread, (void *)t)) {
			fprintf(stderr, "mallocbench: pthread_create failed\n");
			return 1;
		}
	bench_thread(NULL);
	for (unsigned long t = 1; t < nthreads; t++)
		pthread_join(th[t], NULL);
	printf("events=%lu\n", 2 * nthreads * iterations);
	return 0;
}
