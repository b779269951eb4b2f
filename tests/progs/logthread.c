/* SPDX-License-Identifier: MIT */
/* logthread.c: allocates and frees N blocks (enough of them make the
 * recorder's log large), then says whether a thread named msmemscope-log
 * runs in this process. With "fork", a child does the same after the
 * parent's churn and reports for itself first. With "unshare", it then
 * makes the calls that the kernel refuses to a process of more than one
 * thread (sandboxes rely on them), churning before each and saying how
 * each went: unshare(CLONE_SIGHAND), setns() into its own mount namespace
 * (EPERM without CAP_SYS_ADMIN), unshare(CLONE_NEWUSER).
 *
 * Usage: logthread N [fork|unshare]
 * Output: "log_thread=yes|no threads=T" per process (child first); with
 * unshare, first "unshare_sighand=", "setns_mnt=" and "unshare_newuser="
 * lines, each "ok" or the error. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>

#include "progs.h"

static void churn(unsigned long n)
{
	unsigned long long rng = 42;
	void *live[64] = { 0 };

	for (unsigned long i = 0; i < n; i++) {
		size_t slot = i % 64;
		free(live[slot]);
		live[slot] = malloc(16 + prog_rand(&rng) % 512);
		if (!live[slot])
			exit(1);
	}
	for (size_t i = 0; i < 64; i++)
		free(live[i]);
}

static void report(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int found = 0, threads = 0;

	if (!d)
		exit(2);
	while ((e = readdir(d))) {
		char path[300], name[32] = "";
		ssize_t n;
		int fd;

		if (e->d_name[0] == '.')
			continue;
		threads++;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, name, sizeof name - 1);
		close(fd);
		if (n > 0 && !strncmp(name, "msmemscope-log", 14))
			found = 1;
	}
	closedir(d);
	prog_say(1, "log_thread=%s threads=%d\n", found ? "yes" : "no", threads);
}

int main(int argc, char **argv)
{
	unsigned long n;
	pid_t pid;
	int status;

	if (argc < 2)
		return 2;
	n = strtoul(argv[1], NULL, 10);
	churn(n);
	if (argc > 2 && !strcmp(argv[2], "unshare")) {
		int r = unshare(CLONE_SIGHAND), fd;

		prog_say(1, "unshare_sighand=%s\n", r ? strerror(errno) : "ok");
		churn(n);
		fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
		r = fd < 0 ? -1 : setns(fd, CLONE_NEWNS);
		prog_say(1, "setns_mnt=%s\n", r ? strerror(errno) : "ok");
		if (fd >= 0)
			close(fd);
		churn(n);
		r = unshare(CLONE_NEWUSER);
		prog_say(1, "unshare_newuser=%s\n", r ? strerror(errno) : "ok");
		churn(n);
	}
	if (argc > 2 && !strcmp(argv[2], "fork")) {
		pid = fork();
		if (pid < 0)
			return 3;
		if (pid == 0) {
			churn(n);
			report();
			_exit(0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return 4;
	}
	report();
	return 0;
}
