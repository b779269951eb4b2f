/* SPDX-License-Identifier: MIT */
/* aslimit.c: a program that limits its own address space, as sandboxes
 * and test harnesses do (setrlimit(RLIMIT_AS)), then allocates ALLOC MiB
 * in blocks of 16 MiB (glibc maps each), touching each, and prints
 * "allocated ALLOC MiB"; exit 1 with "malloc failed after N MiB" when its
 * allocator runs out. Whatever the recorder maps counts against the
 * limit: it must leave the program the room it has natively, but for a
 * few MiB.
 *
 * Usage: aslimit LIMIT_MIB ALLOC_MIB */
#include <sys/resource.h>

#include "progs.h"

int main(int argc, char **argv)
{
	struct rlimit r;
	unsigned long limit, alloc, done = 0;

	if (argc != 3)
		prog_die("usage: aslimit LIMIT_MIB ALLOC_MIB");
	limit = prog_arg(argv[1], "LIMIT_MIB");
	alloc = prog_arg(argv[2], "ALLOC_MIB");
	r.rlim_cur = r.rlim_max = (rlim_t)limit << 20;
	if (setrlimit(RLIMIT_AS, &r))
		prog_die("aslimit: setrlimit failed");
	for (; done + 16 <= alloc; done += 16) {
		char *p = malloc(16ul << 20);

		if (!p) {
			prog_say(1, "malloc failed after %lu MiB\n", done);
			return 1;
		}
		p[0] = 1;
		p[(16ul << 20) - 1] = 1;
	}
	prog_say(1, "allocated %lu MiB\n", done);
	return 0;
}
