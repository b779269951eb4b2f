/* SPDX-License-Identifier: MIT */
/* smallstack.c: threads with the smallest stack POSIX threads allow
 * (PTHREAD_STACK_MIN: 16 KiB on x86-64), as servers with many threads
 * choose, that allocate and free at the bottom of a recursion of 40
 * frames, load and unload a library and fork a child that allocates, ten
 * times each, at once (a fork while another thread was in the loader left
 * the child waiting forever for the loader's lock, recorded); and
 * a signal handler on an alternate signal stack of 8 KiB (SIGSTKSZ) that
 * allocates. The recorder's hooks run on those stacks: they must not take
 * much more of them than the allocator does (a capture kept a buffer of
 * 1008 return addresses, 8 KiB, on the stack, the scan of the loaded
 * modules after a dlclose 12 KiB, libunwind's walk from a signal stack 5
 * KiB, and such a program died of SIGSEGV recorded, never natively).
 * Prints "done THREADS ALLOCATIONS HANDLED".
 *
 * Usage: smallstack [THREADS] */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "progs.h"

#define DEPTH 40
#define ROUNDS 200
#define BLOCKS 32

static __attribute__((noinline)) unsigned long deep(int n)
{
	void *v[BLOCKS];
	unsigned long k = 0;

	if (n > 0)
		return deep(n - 1) + (unsigned long)n % 2;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < BLOCKS; i++)
			v[i] = prog_malloc(16 + (size_t)i * 24);
		for (int i = 0; i < BLOCKS; i++)
			free(v[i]);
		k += BLOCKS;
	}
	return k;
}

#define FORKS 10
#define ALTSTACK 8192
#define SIGNALS 100

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
	(void)sig;
	free(prog_malloc(64)); /* not async-signal-safe: programs do it */
	handled++;
}

static void *work(void *arg)
{
	unsigned long *n = arg;

	*n = deep(DEPTH) - DEPTH / 2;
	/* The threads load, unload and fork at once: a fork while another
	 * thread is inside the loader leaves its lock held in the child,
	 * where the recorder must not wait for it. */
	for (int k = 0; k < FORKS; k++) {
		void *lib = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
		int status;
		pid_t child;

		if (!lib)
			prog_die("smallstack: dlopen(libm.so.6) failed");
		dlclose(lib);
		child = fork();
		if (child == 0) {
			free(prog_malloc(100));
			_exit(0);
		}
		if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
			prog_die("smallstack: the child did not exit 0");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long nthreads = argc > 1 ? prog_arg(argv[1], "THREADS") : 4, total = 0, done[64];
	pthread_t th[64];
	pthread_attr_t attr;

	if (nthreads < 1 || nthreads > 64)
		prog_die("smallstack: THREADS from 1 to 64");
	if (pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN))
		prog_die("smallstack: cannot ask for stacks of PTHREAD_STACK_MIN bytes");
	for (unsigned long i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], &attr, work, &done[i]))
			prog_die("smallstack: pthread_create failed");
	for (unsigned long i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		total += done[i];
	}
	{
		static char altstack[ALTSTACK];
		stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sa.sa_flags = SA_ONSTACK;
		if (sigaltstack(&ss, NULL) || sigaction(SIGUSR1, &sa, NULL))
			prog_die("smallstack: cannot set up the signal stack");
		for (int i = 0; i < SIGNALS; i++)
			raise(SIGUSR1);
	}
	prog_say(1, "done %lu %lu %d\n", nthreads, total, (int)handled);
	return 0;
}
