/* SPDX-License-Identifier: MIT */
/* exits.c: allocates a known number of blocks, then leaves in a way that
 * skips part of the normal exit path, to check that the log still opens.
 *
 * Usage: exits MODE COUNT   with MODE exit, _exit or abort.
 * Allocates COUNT blocks of 48 bytes (kept live), prints "ready COUNT",
 * then calls exit(0), _exit(3) or abort(). */
#include <string.h>

#include "progs.h"

int main(int argc, char **argv)
{
	unsigned long count;
	void *volatile last = NULL;

	if (argc != 3)
		prog_die("usage: exits exit|_exit|abort COUNT");
	count = prog_arg(argv[2], "COUNT");
	for (unsigned long i = 0; i < count; i++) {
		void **p = malloc(48);

		if (!p)
			prog_die("exits: malloc failed");
		*p = last; /* a chain, so every block stays reachable */
		last = p;
	}
	prog_say(1, "ready %lu\n", count);
	if (!strcmp(argv[1], "_exit"))
		_exit(3);
	if (!strcmp(argv[1], "abort"))
		abort();
	if (!strcmp(argv[1], "exit"))
		exit(0);
	prog_die("exits: unknown mode '%s'", argv[1]);
}
