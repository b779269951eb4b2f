/* SPDX-License-Identifier: MIT */
/* threads8.c: N threads each allocate M blocks and hand them through one
 * shared queue, so most blocks are freed by a thread other than the one that
 * allocated them; prints the counts a correct recording must show.
 *
 * Usage: threads8 NTHREADS BLOCKS_PER_THREAD KEEP
 * KEEP blocks are left live at exit on purpose. Output (one line):
 *   allocs=A frees=F bytes=B live=L live_bytes=LB cross=C
 * counting only the blocks this program allocates itself. */
#include <pthread.h>
#include <stdint.h>

#include "progs.h"

#define QUEUE_CAP 1024
#define QUEUE_HOLD 64 /* a pusher frees the oldest block beyond this many */

struct block {
	unsigned owner;  /* the thread that allocated it */
	size_t size;
};

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block *queue[QUEUE_CAP];
static size_t queue_head, queue_len;

static unsigned long per_thread;
static unsigned long long total_bytes, total_frees, freed_bytes, cross_frees;

struct worker {
	pthread_t th;
	unsigned id;
	unsigned long long bytes, frees, fbytes, cross;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned long long rng = 0x9e3779b97f4a7c15ull ^ ((unsigned long long)w->id << 32 | (w->id + 1));

	for (unsigned long i = 0; i < per_thread; i++) {
		size_t size = sizeof(struct block) + prog_rand(&rng) % 512;
		struct block *b = malloc(size), *old = NULL;

		if (!b)
			prog_die("threads8: malloc(%zu) failed", size);
		b->owner = w->id;
		b->size = size;
		w->bytes += size;

		/* Push ours and take the oldest in one critical section; free
		 * outside it, so frees race with other threads' mallocs. */
		pthread_mutex_lock(&queue_lock);
		queue[(queue_head + queue_len++) % QUEUE_CAP] = b;
		if (queue_len > QUEUE_HOLD) {
			old = queue[queue_head];
			queue_head = (queue_head + 1) % QUEUE_CAP;
			queue_len--;
		}
		pthread_mutex_unlock(&queue_lock);

		if (old) {
			w->cross += old->owner != w->id;
			w->fbytes += old->size;
			w->frees++;
			free(old);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned nthreads;
	unsigned long keep;
	struct worker *w;

	if (argc != 4)
		prog_die("usage: threads8 NTHREADS BLOCKS_PER_THREAD KEEP");
	nthreads = (unsigned)prog_arg(argv[1], "NTHREADS");
	per_thread = prog_arg(argv[2], "BLOCKS_PER_THREAD");
	keep = prog_arg(argv[3], "KEEP");
	if (nthreads == 0 || nthreads > 64)
		prog_die("threads8: NTHREADS must be 1..64");

	w = calloc(nthreads, sizeof(*w));
	if (!w)
		prog_die("threads8: calloc failed");
	for (unsigned t = 0; t < nthreads; t++) {
		w[t].id = t;
		if (pthread_create(&w[t].th, NULL, worker_main, &w[t]))
			prog_die("threads8: pthread_create failed");
	}
	for (unsigned t = 0; t < nthreads; t++) {
		pthread_join(w[t].th, NULL);
		total_bytes += w[t].bytes;
		total_frees += w[t].frees;
		freed_bytes += w[t].fbytes;
		cross_frees += w[t].cross;
	}
	free(w);

	/* Drain the queue, leaving `keep` blocks live. */
	while (queue_len > keep) {
		struct block *b = queue[queue_head];

		queue_head = (queue_head + 1) % QUEUE_CAP;
		queue_len--;
		freed_bytes += b->size;
		total_frees++;
		free(b);
	}
	prog_say(1, "allocs=%llu frees=%llu bytes=%llu live=%zu live_bytes=%llu cross=%llu\n",
		 (unsigned long long)nthreads * per_thread, total_frees, total_bytes, queue_len,
		 total_bytes - freed_bytes, cross_frees);
	return 0;
}
