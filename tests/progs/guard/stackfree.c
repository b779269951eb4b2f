/* SPDX-License-Identifier: MIT */
/* stackfree.c: free of a stack address (guard: invalid free, no block).
 * With an argument "killed", the program then dies of SIGTERM. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int local = 42;
	int *volatile p = &local;

	printf("local %d\n", local);
	fflush(stdout);
	free(p);
	if (argc > 1 && !strcmp(argv[1], "killed"))
		raise(SIGTERM);
	return 0;
}
