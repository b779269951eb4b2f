/* SPDX-License-Identifier: MIT */
/* notsc.c: a program that turns its time stamp counter off, as
 * record-and-replay debuggers and some sandboxes do: `notsc prctl` with
 * prctl(PR_SET_TSC, PR_TSC_SIGSEGV), `notsc strict` with seccomp's strict
 * mode (which turns it off too, and allows only read, write, exit and
 * sigreturn). An rdtsc then raises SIGSEGV; the recorder reads the TSC at
 * its events and at exit, so it must stop recording first. Then 100,000
 * allocations and frees (served from glibc's thread cache: no system
 * call), "survived" on stdout, and exit (strict: the exit system call).
 * Prints "skip: ..." and exits 77 where there is no such control. */
#define _GNU_SOURCE
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "progs.h"

int main(int argc, char **argv)
{
	int strict = argc > 1 && !strcmp(argv[1], "strict");
	void *volatile warm;

#if defined(__x86_64__) && defined(PR_SET_TSC) && defined(PR_TSC_SIGSEGV)
	/* malloc's first call sets its thread cache up (with a getrandom
	 * that strict mode forbids): before. */
	warm = malloc(32);
	free(warm);
	if (strict ? prctl(PR_SET_SECCOMP, 1 /* SECCOMP_MODE_STRICT */, 0, 0, 0)
		   : prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0))
		return prog_say(1, "skip: prctl refused: %s\n", strerror(errno)), 77;
	for (int i = 0; i < 100000; i++) {
		warm = malloc(32 + (size_t)i % 64);
		free(warm);
	}
	if (write(1, "survived\n", 9) != 9)
		return 1;
	if (strict)
		syscall(SYS_exit, 0);
	return 0;
#else
	(void)strict;
	(void)warm;
	return prog_say(1, "skip: no per-process time stamp counter control on this machine\n"), 77;
#endif
}
