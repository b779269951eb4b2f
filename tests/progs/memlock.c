/* SPDX-License-Identifier: MIT */
/* memlock.c: a program that locks its memory with mlockall(), as
 * real-time programs and tools that hold secrets do, under a limit of its
 * own (RLIMIT_MEMLOCK, which binds a process without CAP_IPC_LOCK). The
 * recorder's mappings must not count against that limit, nor be locked
 * and filled: the call answers as it does natively, and what is locked
 * is the program's.
 *
 * Usage: memlock LIMIT_KIB FLAGS, FLAGS a list of current, future and
 * onfault. Prints "mlockall 0" or "mlockall ERRNO-NAME", then "locked N"
 * and "rss N" (VmLck and VmRSS of /proc/self/status, in KiB), then makes
 * 10,000 allocations and frees and prints "done". */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "progs.h"

#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4
#endif

/* The figure of a line "Name:\t N kB" of /proc/self/status. */
static unsigned long status_kib(const char *name)
{
	char buf[4096], *p;
	ssize_t n = 0, r;
	int fd = open("/proc/self/status", O_RDONLY);

	if (fd < 0)
		prog_die("memlock: cannot open /proc/self/status");
	while (n + 1 < (ssize_t)sizeof(buf) && (r = read(fd, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += r;
	close(fd);
	buf[n] = 0;
	p = strstr(buf, name);
	return p ? strtoul(p + strlen(name) + 1, NULL, 10) : 0;
}

int main(int argc, char **argv)
{
	struct rlimit r;
	int flags = 0, rc;

	if (argc != 3)
		prog_die("usage: memlock LIMIT_KIB FLAGS");
	r.rlim_cur = r.rlim_max = (rlim_t)prog_arg(argv[1], "LIMIT_KIB") << 10;
	if (setrlimit(RLIMIT_MEMLOCK, &r))
		prog_die("memlock: setrlimit failed");
	if (strstr(argv[2], "current"))
		flags |= MCL_CURRENT;
	if (strstr(argv[2], "future"))
		flags |= MCL_FUTURE;
	if (strstr(argv[2], "onfault"))
		flags |= MCL_ONFAULT;
	rc = mlockall(flags);
	prog_say(1, "mlockall %s\n",
		 !rc               ? "0"
		 : errno == ENOMEM ? "ENOMEM"
		 : errno == EPERM  ? "EPERM"
				   : strerror(errno));
	prog_say(1, "locked %lu\n", status_kib("VmLck:"));
	prog_say(1, "rss %lu\n", status_kib("VmRSS:"));
	for (int i = 0; i < 10000; i++)
		free(prog_malloc(16 + (size_t)i % 256));
	prog_say(1, "done\n");
	return 0;
}
