/* SPDX-License-Identifier: MIT */
/* forkexec.c: a parent that allocates a known number of blocks, forks a
 * child that allocates its own known number, then execs itself, whose new
 * image allocates a third known number; so each process's log can be
 * checked. Output goes through write(2) only, to allocate nothing else.
 *
 * Usage: forkexec        run the whole scenario
 *        forkexec exec   the exec'd image's part
 * Blocks: parent PARENT_ALLOCS of PARENT_SIZE bytes, PARENT_FREES of them
 * freed; child CHILD_ALLOCS of CHILD_SIZE, CHILD_FREES freed; exec'd image
 * EXEC_ALLOCS of EXEC_SIZE, EXEC_FREES freed. Prints "child=PID" and
 * "parent=PID" so the test can find the logs. */
#include <string.h>
#include <sys/wait.h>

#include "progs.h"

#define PARENT_ALLOCS 100
#define PARENT_SIZE 1000
#define PARENT_FREES 40
#define CHILD_ALLOCS 200
#define CHILD_SIZE 300
#define CHILD_FREES 150
#define EXEC_ALLOCS 300
#define EXEC_SIZE 70
#define EXEC_FREES 299

static void *blocks[EXEC_ALLOCS > CHILD_ALLOCS ? EXEC_ALLOCS : CHILD_ALLOCS];

static void churn(unsigned allocs, size_t size, unsigned frees)
{
	for (unsigned i = 0; i < allocs; i++) {
		blocks[i] = malloc(size);
		if (!blocks[i])
			prog_die("forkexec: malloc failed");
		memset(blocks[i], 0x5a, size);
	}
	for (unsigned i = 0; i < frees; i++)
		free(blocks[i]);
}

int main(int argc, char **argv)
{
	pid_t child;
	int status;

	if (argc == 2 && !strcmp(argv[1], "exec")) {
		churn(EXEC_ALLOCS, EXEC_SIZE, EXEC_FREES);
		prog_say(1, "exec done\n");
		return 0;
	}
	prog_say(1, "parent=%ld\n", (long)getpid());
	churn(PARENT_ALLOCS, PARENT_SIZE, PARENT_FREES);
	child = fork();
	if (child < 0)
		prog_die("forkexec: fork failed");
	if (child == 0) {
		/* The parent's blocks are live in the child too: its replay
		 * starts from them, and it frees none of them. */
		churn(CHILD_ALLOCS, CHILD_SIZE, CHILD_FREES);
		exit(0);
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		prog_die("forkexec: child failed");
	prog_say(1, "child=%ld\n", (long)child);
	execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
	prog_die("forkexec: exec failed");
}
