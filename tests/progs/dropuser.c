/* SPDX-License-Identifier: MIT */
/* dropuser.c: forks a child that takes another user's identity (uid and
 * gid 65534, as a server's workers, su and a service's privilege drop
 * do) before its first allocation, which it keeps; prints "done" when the
 * child exited 0. Run by root (the child exits 3 when it cannot change
 * its user). logname.sh says what the recorder must do with it.
 *
 * Usage: dropuser */
#define _GNU_SOURCE
#include <grp.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

int main(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		prog_die("fork failed");
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(3);
		free(prog_malloc(100));
		if (!prog_malloc(200)) /* kept: the child's leak */
			_exit(4);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		prog_die("the child did not exit");
	if (WEXITSTATUS(status))
		prog_die("the child exited %d", WEXITSTATUS(status));
	prog_say(1, "done\n");
	return 0;
}
