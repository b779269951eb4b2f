/* SPDX-License-Identifier: MIT */
/* forkheap.c: forked children that free what they inherited. The parent
 * allocates 100 blocks of 1000 + i bytes (i = 0..99) under the owner
 * "parent" and frees the first 40, so 60 blocks of 64170 bytes are live
 * when it forks:
 *  - the child frees 30 of them (i = 40..69, 31635 bytes) in step 1, then
 *    in step 2 allocates 20 blocks of 300 bytes and frees 5 of those; it
 *    forks a grandchild and exits with 45 blocks, 37035 bytes live, 30 of
 *    them (32535 bytes) inherited;
 *  - the grandchild inherits those 45 blocks, frees 10 of the first
 *    parent's (i = 70..79, 10745 bytes) and 5 of the child's (1500 bytes),
 *    allocates 7 blocks of 50 bytes and exits with 37 blocks, 25140 bytes
 *    live, 30 of them (24790 bytes) inherited;
 *  - a second child execs /bin/true at once, with no event in between.
 * Output goes through write(2) only, to allocate nothing else. Prints
 * "child=PID", "grandchild=PID", "spawned=PID" and "parent=PID".
 *
 * forkheap steps [ranges]: steps numbered across a fork. The parent keeps
 * 100 * s bytes in each step s of 5 (msmemscope_step() marks, or "step
 * start" ranges) and forks in step 3, after its block; the child keeps
 * 7777 bytes in step 3, 400 in step 4 and exits inside step 5 having
 * allocated 55 bytes there, freed at once. Prints "child=PID". */
#include <string.h>
#include <sys/wait.h>

#include "msmemscope.h"
#include "progs.h"

static void *b[100], *c[20];

/* Forks a child that runs fn (which does not return), waits for it and
 * returns its pid. */
static pid_t fork_run(void (*fn)(void), const char *who)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		prog_die("forkheap: fork failed");
	if (pid == 0)
		fn();
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		prog_die("forkheap: the %s failed", who);
	return pid;
}

static void grandchild(void)
{
	for (int i = 70; i < 80; i++)
		free(b[i]);
	for (int i = 5; i < 10; i++)
		free(c[i]);
	for (int i = 0; i < 7; i++)
		if (!(c[i] = malloc(50)))
			prog_die("forkheap: malloc failed");
	exit(0);
}

static void child(void)
{
	for (int i = 40; i < 70; i++)
		free(b[i]);
	msmemscope_step();
	for (int i = 0; i < 20; i++) {
		if (!(c[i] = malloc(300)))
			prog_die("forkheap: malloc failed");
		memset(c[i], 0x5a, 300);
	}
	for (int i = 0; i < 5; i++)
		free(c[i]);
	msmemscope_step();
	prog_say(1, "grandchild=%ld\n", (long)fork_run(grandchild, "grandchild"));
	exit(0);
}

/* Execs /bin/true at once: the recorder leaves no log for this fork
 * child; /bin/true's own log is a spawned child's. */
static void exec_true(void)
{
	execl("/bin/true", "true", (char *)NULL);
	_exit(127);
}

static int by_ranges;
static uint64_t range;

static void step_begin(void)
{
	if (by_ranges)
		range = mstxRangeStartA("step start", NULL);
}

static void step_end(void)
{
	if (by_ranges)
		mstxRangeEnd(range);
	else
		msmemscope_step();
}

static void step_child(void)
{
	if (!(c[0] = malloc(7777)))
		prog_die("forkheap: malloc failed");
	step_end();
	step_begin();
	if (!(c[1] = malloc(400)))
		prog_die("forkheap: malloc failed");
	step_end();
	step_begin();
	if (!(c[2] = malloc(55)))
		prog_die("forkheap: malloc failed");
	memset(c[2], 1, 55);
	free(c[2]);
	exit(0);
}

static int steps(void)
{
	for (int s = 1; s <= 5; s++) {
		step_begin();
		if (!(b[s] = malloc(100 * (size_t)s)))
			prog_die("forkheap: malloc failed");
		if (s == 3)
			prog_say(1, "child=%ld\n", (long)fork_run(step_child, "child"));
		step_end();
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "steps")) {
		by_ranges = argc > 2 && !strcmp(argv[2], "ranges");
		return steps();
	}
	prog_say(1, "parent=%ld\n", (long)getpid());
	msmemscope_owner_push("parent");
	for (int i = 0; i < 100; i++) {
		if (!(b[i] = malloc(1000 + (size_t)i)))
			prog_die("forkheap: malloc failed");
		memset(b[i], 0x3c, 1000 + (size_t)i);
	}
	msmemscope_owner_pop();
	for (int i = 0; i < 40; i++)
		free(b[i]);
	prog_say(1, "child=%ld\n", (long)fork_run(child, "child"));
	prog_say(1, "spawned=%ld\n", (long)fork_run(exec_true, "spawned /bin/true"));
	return 0;
}
