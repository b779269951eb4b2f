/* SPDX-License-Identifier: MIT */
/* deferred.c: a program recorded with --collect-mode=deferred, in two
 * windows. Before the first msmemscope_start() it allocates 100 bytes
 * (never in the log) and frees them in the first window (a free of no
 * block the log saw: no error). In the first window it allocates 200
 * bytes, freed after msmemscope_stop(), and 300 bytes it loses (a leak
 * the log cannot tell from the freed one: both are live in the log and
 * not reachable at exit). In the second window, which lasts to exit, it
 * loses 400 bytes (a leak the log can tell: every free of that block
 * would be in it) and frees 50 at once. With "stop" it stops recording
 * before exit instead of opening the second window. With "steps" the
 * windows are steps 2 and 4 of four (msmemscope_step() for start and
 * stop), recorded with --steps=2,4 (or --steps=2: the second window not
 * recorded), where the same rules hold. With "mixed" it marks six steps
 * and starts and stops recording inside them (recorded with
 * --collect-mode=deferred, with or without --steps): step 1 starts
 * recording half-way, steps 2 and 3 are recorded whole (step 3 allocating
 * 100 bytes more than step 2, and keeping them), step 4 stops half-way,
 * step 5 is not recorded, step 6 starts again half-way. With "pause"
 * (recorded in immediate mode) it allocates and frees 60 bytes, calls
 * msmemscope_stop() and then loses 700 bytes: no block is live in the
 * log, which must not say that every block was freed.
 *
 * Usage: deferred [stop|steps|mixed|pause] */
#include <stdint.h>
#include <string.h>

#include "msmemscope.h"
#include "progs.h"

/* The blocks, in globals dropped before exit (no pointer left). */
static void *volatile before, *volatile inwin, *volatile lost1, *volatile lost2;

/* Uses a block, so the compiler cannot drop a malloc/free pair. */
__attribute__((noinline)) static void *use(void *p, size_t size)
{
	if (p)
		memset(p, 5, size);
	return p;
}

/* A window begins or ends: recording starts or stops, or a step ends. */
static void window(int steps, int begins)
{
	if (steps)
		msmemscope_step();
	else if (begins)
		msmemscope_start();
	else
		msmemscope_stop();
}

/* A step of "mixed": bytes allocated and freed, keep of them kept. */
static void step_work(size_t bytes, size_t keep)
{
	void *p = use(malloc(bytes), bytes);

	free(p);
	if (keep)
		lost2 = use(malloc(keep), keep);
}

static int mixed(void)
{
	step_work(1000, 0); /* step 1: before the start, not recorded */
	msmemscope_start();
	step_work(10, 0);
	msmemscope_step();
	step_work(200, 0); /* step 2 */
	msmemscope_step();
	step_work(200, 100); /* step 3: 100 more, kept */
	msmemscope_step();
	step_work(30, 0); /* step 4: stops half-way */
	msmemscope_stop();
	step_work(3000, 0);
	msmemscope_step();
	step_work(5000, 0); /* step 5: not recorded */
	msmemscope_step();
	step_work(7000, 0); /* step 6: starts half-way */
	msmemscope_start();
	step_work(40, 0);
	prog_say(1, "deferred mixed\n");
	return 0;
}

int main(int argc, char **argv)
{
	int stop = argc > 1 && !strcmp(argv[1], "stop");
	int steps = argc > 1 && !strcmp(argv[1], "steps");
	void *p;

	if (argc > 1 && !strcmp(argv[1], "mixed"))
		return mixed();
	if (argc > 1 && !strcmp(argv[1], "pause")) {
		free(use(malloc(60), 60));
		msmemscope_stop();
		lost2 = use(malloc(700), 700);
		lost2 = NULL;
		prog_say(1, "deferred pause\n");
		return 0;
	}
	before = use(malloc(100), 100);
	window(steps, 1);
	inwin = use(malloc(200), 200);
	lost1 = use(malloc(300), 300);
	free(before);
	before = NULL;
	window(steps, 0);
	free(inwin);
	inwin = NULL;
	lost1 = NULL;
	if (!stop) {
		window(steps, 1);
		lost2 = use(malloc(400), 400);
		p = use(malloc(50), 50);
		free(p);
		lost2 = NULL;
	}
	prog_say(1, "deferred %s\n", stop ? "stop" : steps ? "steps" : "two windows");
	return 0;
}
