/* SPDX-License-Identifier: MIT */
/* forklock.c: forks while another thread changes a page's protection
 * holding the allocator's lock, with an allocator (ownalloc.c with
 * OWNALLOC_FORK) that holds that lock across fork and protects the page in
 * its child handler, as chromium's PartitionAlloc does. Two ways the
 * recorder hung such a program (chromium --headless, recorded with C
 * stacks):
 *  - forklock, whose allocator is its own (glibc's stdio allocates with
 *    it): the child's first stack capture, in that handler, asked
 *    pthread_getattr_np() for the stack, which allocates (the main
 *    thread's /proc/self/maps, read with stdio): the lock was held,
 *    forever;
 *  - forklock-plug, whose allocator is forklock.so's, preloaded after the
 *    recorder, with its handlers registered before the recorder's: the
 *    recorder's prepare handler ran first and held the recorder's locks
 *    while the allocator's waited for its lock, held by the other
 *    thread, whose mprotect waited in the recorder's hook for them.
 * Each child allocates and exits 0. Prints "done FORKS".
 *
 * Usage: forklock [FORKS]
 *        LD_PRELOAD=".../forklock.so" forklock-plug [FORKS] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "progs.h"

static void (*protect)(void);
static volatile int stop;

static void *spin(void *arg)
{
	(void)arg;
	while (!stop) {
		protect();
		free(prog_malloc(100));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 50;
	pthread_t th;

	*(void **)&protect = dlsym(RTLD_DEFAULT, "ownalloc_protect");
	if (!protect)
		prog_die("ownalloc_protect not found: forklock-plug needs tests/progs/forklock.so preloaded");
	if (n < 1)
		prog_die("usage: forklock [FORKS]");
	if (pthread_create(&th, NULL, spin, NULL))
		prog_die("pthread_create failed");
	for (int i = 0; i < n; i++) {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			prog_die("fork failed");
		if (pid == 0) {
			free(prog_malloc(40));
			_exit(0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			prog_die("a child failed");
	}
	stop = 1;
	pthread_join(th, NULL);
	prog_say(1, "done %d\n", n);
	return 0;
}
