/* SPDX-License-Identifier: MIT */
/* notsc.c: a program that turns its time stamp counter off, as
 * record-and-replay debuggers and some sandboxes do: `notsc prctl` with
 * prctl(PR_SET_TSC, PR_TSC_SIGSEGV), `notsc strict` with seccomp's strict
 * mode (which turns it off too, and allows only read, write, exit and
 * sigreturn); an rdtsc then raises SIGSEGV, and the recorder reads the TSC
 * at its events and at exit. Or a sandbox's seccomp filter that kills the
 * process at fallocate and ftruncate, which the recorder uses to grow its
 * log: `notsc filter` through prctl, `notsc filter-syscall` through
 * syscall(SYS_seccomp), as libseccomp installs one. The recorder must stop
 * recording first. Or `notsc probe`: the calls with which libseccomp
 * probes the kernel at its start (man-db's sandbox, file(1)), none of
 * which installs anything (strict mode with a flag, filters with a null
 * program, one without no_new_privs where the capability is missing):
 * the recorder must go on. Or `notsc filter-exec`: the filter, then an
 * exec of itself (`after-exec`), which inherits the filter: the new image
 * must run on as natively (the recorder, preloaded there, died of its log's
 * ftruncate). Then 100,000 allocations and frees (served from
 * glibc's thread cache: no system call), "survived" on stdout, and exit
 * (strict: the exit system call). Prints "skip: ..." and exits 77 where
 * there is no such control. */
#define _GNU_SOURCE
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "progs.h"

/* Kills the process at fallocate or ftruncate; allows the rest.
 * through_syscall: 1 through syscall(), 0 through prctl, -1 through
 * syscall() without setting no_new_privs first. */
static int install_filter(int through_syscall)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fallocate, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ftruncate, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof f / sizeof f[0], f };

	/* -1: through syscall(), without no_new_privs. */
	if (through_syscall >= 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return through_syscall ? (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)
			       : prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

/* Takes CAP_SYS_ADMIN out of the effective set. */
static int drop_sys_admin(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	return (int)syscall(SYS_capset, &h, d);
}

/* libseccomp's probes: each fails, installing nothing. */
static int probe(void)
{
	static const unsigned long flags[] = { 1 /* TSYNC */, 2 /* LOG */, 4 /* SPEC_ALLOW */, 8 /* NEW_LISTENER */,
					       16 /* TSYNC_ESRCH */ };

	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_STRICT, 1, NULL) != -1 || errno != EINVAL)
		return -1;
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags[i], NULL) != -1)
			return -1;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, NULL, 0, 0) != -1)
		return -1;
	/* A whole filter, without no_new_privs nor CAP_SYS_ADMIN in effect
	 * (dropped where the process has it): EACCES. Not where
	 * no_new_privs is set already (a container's). */
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0 &&
	    (drop_sys_admin() || install_filter(-1) != -1 || errno != EACCES))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "prctl";
	int strict = !strcmp(mode, "strict"), filter = !strncmp(mode, "filter", 6), probing = !strcmp(mode, "probe");
	int after = !strcmp(mode, "after-exec");
	void *volatile warm;

#if defined(__x86_64__) && defined(PR_SET_TSC) && defined(PR_TSC_SIGSEGV)
	/* malloc's first call sets its thread cache up (with a getrandom
	 * that strict mode forbids): before. */
	warm = malloc(32);
	free(warm);
	if (after) {
		/* The image filter-exec runs: under its filter already. */
	} else if (probing) {
		if (probe())
			return prog_say(1, "skip: this kernel answers seccomp's probes otherwise\n"), 77;
	} else if (filter   ? install_filter(!strcmp(mode, "filter-syscall"))
		   : strict ? prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0)
			    : prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0)) {
		return prog_say(1, "skip: %s refused: %s\n", mode, strerror(errno)), 77;
	}
	if (!strcmp(mode, "filter-exec")) {
		execl("/proc/self/exe", argv[0], "after-exec", (char *)NULL);
		return prog_say(1, "skip: cannot exec /proc/self/exe: %s\n", strerror(errno)), 77;
	}
	/* Enough for the recorder's log to grow (by fallocate) past its
	 * first megabytes, had it gone on. */
	for (int i = 0; i < (filter || probing || after ? 2000000 : 100000); i++) {
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
	(void)filter;
	(void)probing;
	(void)after;
	(void)warm;
	return prog_say(1, "skip: no per-process time stamp counter control on this machine\n"), 77;
#endif
}
