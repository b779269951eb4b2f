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
 * recorded), where the same rules hold.
 *
 * Usage: deferred [stop|steps] */
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

int main(int argc, char **argv)
{
	int stop = argc > 1 && !strcmp(argv[1], "stop");
	int steps = argc > 1 && !strcmp(argv[1], "steps");
	void *p;

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
