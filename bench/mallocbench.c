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
 * (found with dlsym, so the native run links nothing more).
 *
 * With MALLOCBENCH_GUARD_FLOOR=BYTES the loop does itself the least that
 * guard mode's design does (doc/guard.md), inline and without any
 * recorder: 16-byte red zones before and after each block, filled at its
 * allocation and compared at its free, and a FIFO quarantine of BYTES
 * (0: none) whose blocks are filled at their free and compared when they
 * leave it. bench/guard.sh times it as the floor of guard mode. */
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

/* ---- the guard floor ---- */

#define FLOOR_ZONE 16
#define FLOOR_SLOTS 65536 /* blocks in a quarantine at most */
#define FLOOR_PAT 0xfd

static int floor_on;
static size_t floor_quarantine;
static unsigned char floor_run[4096 + 2 * FLOOR_ZONE];
static unsigned long floor_damaged; /* never nonzero: the loop writes in bounds */

struct floor_q {
	struct {
		char *user;
		size_t size;
	} * ent;
	size_t head, n, bytes;
};

static char *floor_malloc(size_t n)
{
	char *raw = malloc(n + 2 * FLOOR_ZONE);

	if (!raw)
		return NULL;
	memset(raw, FLOOR_PAT, FLOOR_ZONE);
	memset(raw + FLOOR_ZONE + n, FLOOR_PAT, FLOOR_ZONE);
	return raw + FLOOR_ZONE;
}

static void floor_free(struct floor_q *q, char *user, size_t n)
{
	if (!user)
		return;
	if (memcmp(user - FLOOR_ZONE, floor_run, FLOOR_ZONE) || memcmp(user + n, floor_run, FLOOR_ZONE))
		floor_damaged++;
	if (n > floor_quarantine) {
		free(user - FLOOR_ZONE);
		return;
	}
	memset(user, FLOOR_PAT, n);
	q->ent[(q->head + q->n) % FLOOR_SLOTS].user = user;
	q->ent[(q->head + q->n) % FLOOR_SLOTS].size = n;
	q->n++;
	q->bytes += n;
	while (q->bytes > floor_quarantine || q->n == FLOOR_SLOTS) {
		char *o = q->ent[q->head].user;
		size_t m = q->ent[q->head].size;

		/* The whole of it: the freed bytes and both zones. */
		if (memcmp(o - FLOOR_ZONE, floor_run, m + 2 * FLOOR_ZONE))
			floor_damaged++;
		q->bytes -= m;
		q->head = (q->head + 1) % FLOOR_SLOTS;
		q->n--;
		free(o - FLOOR_ZONE);
	}
}

static void *bench_thread(void *arg)
{
	unsigned long long rng = 0x9e3779b97f4a7c15ull + (size_t)arg;
	void **live = calloc(window, sizeof(*live));
	size_t *sizes = calloc(window, sizeof(*sizes));
	struct floor_q q = { 0 };

	if (floor_on)
		q.ent = calloc(FLOOR_SLOTS, sizeof(*q.ent));
	if (!live || !sizes || (floor_on && !q.ent)) {
		fprintf(stderr, "mallocbench: out of memory\n");
		exit(1);
	}
	for (unsigned long i = 0; i < iterations; i++) {
		size_t slot = i % window, size = next_size(&rng);

		if (floor_on) {
			floor_free(&q, live[slot], sizes[slot]);
			live[slot] = floor_malloc(size);
			sizes[slot] = size;
		} else {
			free(live[slot]);
			live[slot] = malloc(size);
		}
		if (!live[slot]) {
			fprintf(stderr, "mallocbench: malloc(%zu) failed\n", size);
			exit(1);
		}
		*(volatile char *)live[slot] = (char)i;
		if (step_fn && !arg && (i + 1) % step_every == 0)
			step_fn();
	}
	for (size_t i = 0; i < window; i++) {
		if (floor_on)
			floor_free(&q, live[i], sizes[i]);
		else
			free(live[i]);
	}
	while (q.n) {
		free(q.ent[q.head].user - FLOOR_ZONE);
		q.head = (q.head + 1) % FLOOR_SLOTS;
		q.n--;
	}
	free(q.ent);
	free(sizes);
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
	if (getenv("MALLOCBENCH_GUARD_FLOOR")) {
		char *end;

		errno = 0;
		floor_quarantine = strtoul(getenv("MALLOCBENCH_GUARD_FLOOR"), &end, 10);
		if (errno || *end) {
			fprintf(stderr, "mallocbench: MALLOCBENCH_GUARD_FLOOR must be a number of bytes\n");
			return 2;
		}
		floor_on = 1;
		memset(floor_run, FLOOR_PAT, sizeof(floor_run));
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
	if (floor_damaged) {
		fprintf(stderr, "mallocbench: the guard floor found %lu damaged blocks\n", floor_damaged);
		return 1;
	}
	printf("events=%lu\n", 2 * nthreads * iterations);
	return 0;
}
