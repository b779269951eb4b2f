/* SPDX-License-Identifier: MIT */
/* stderrfile.c: a program that closes stderr and opens a file of its own,
 * which gets descriptor 2, writes "data" to it, then allocates and frees
 * 300,000 blocks (enough to fill a log limited to 1 MiB: the recorder
 * then says on stderr that it stopped recording), waits 0.2 s and writes
 * "end". The file must hold what the program wrote and nothing of the
 * recorder's. Usage: stderrfile FILE */
#include <fcntl.h>

#include "progs.h"

int main(int argc, char **argv)
{
	int fd;

	if (argc != 2)
		return prog_say(1, "usage: stderrfile FILE\n"), 2;
	close(2);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd != 2)
		return prog_say(1, "the file got descriptor %d, not 2\n", fd), 1;
	if (write(fd, "data\n", 5) != 5)
		return 1;
	for (int i = 0; i < 300000; i++)
		free(prog_malloc(16 + (size_t)i % 200));
	/* The recorder's log thread may say it a little later. */
	usleep(200000);
	if (write(fd, "end\n", 4) != 4)
		return 1;
	prog_say(1, "done\n");
	return 0;
}
