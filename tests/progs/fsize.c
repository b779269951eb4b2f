/* SPDX-License-Identifier: MIT */
/* fsize.c: a program that runs under a file size limit it sets itself, as
 * sandboxed tools do (setrlimit(RLIMIT_FSIZE)), with SIGXFSZ left at its
 * default action (death): it allocates and frees COUNT blocks, writes
 * LINES lines into OUT (a file of its own, within the limit), and prints
 * "done COUNT LINES". The recorder's log must stop short of the limit
 * rather than get it killed.
 *
 * Usage: fsize LIMIT COUNT OUT LINES */
#include <fcntl.h>
#include <sys/resource.h>

#include "progs.h"

int main(int argc, char **argv)
{
	struct rlimit r;
	unsigned long long rng = 7;
	unsigned long limit, count, lines;
	int fd;

	if (argc != 5)
		prog_die("usage: fsize LIMIT COUNT OUT LINES");
	limit = prog_arg(argv[1], "LIMIT");
	count = prog_arg(argv[2], "COUNT");
	lines = prog_arg(argv[4], "LINES");
	r.rlim_cur = r.rlim_max = limit;
	if (setrlimit(RLIMIT_FSIZE, &r))
		prog_die("fsize: setrlimit failed");
	for (unsigned long i = 0; i < count; i++) {
		void *volatile p = malloc(16 + prog_rand(&rng) % 200);

		if (!p)
			prog_die("fsize: malloc failed");
		free(p);
	}
	fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		prog_die("fsize: cannot open OUT");
	for (unsigned long i = 0; i < lines; i++)
		if (prog_say(fd, "line %lu\n", i))
			prog_die("fsize: write failed");
	close(fd);
	prog_say(1, "done %lu %lu\n", count, lines);
	return 0;
}
