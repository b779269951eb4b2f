/* SPDX-License-Identifier: MIT */
/* fdsafe.c: a program that treats its descriptors as its own. It closes
 * every inherited descriptor (argv[1]: closefrom, close_range, a close
 * loop, or raw close system calls the recorder cannot see), opens 1000
 * files in argv[2] and writes known contents into them, allocates heavily
 * while they are open (the log grows many times), probes the top of the
 * descriptor range with close, dup and fcntl, dup2s a file onto it and
 * writes through it, and then checks every file byte for byte. What it
 * prints is what it saw: the same natively and under the recorder.
 *
 * In the raw mode it closes everything with raw system calls and opens
 * files until one gets the number at the top of the range (its limit is
 * 4096 for both soft and hard: the recorder moved its log to 4095 when
 * the program set it), then allocates again: the recorder must notice
 * that the number is not its file any more and stop, never writing into
 * the program's file. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

#define NFILES 1000
#define TOP 4095

static int fds[NFILES + TOP];
static int nfds;

static void content(int i, char *buf, size_t n)
{
	snprintf(buf, n, "file %04d: known contents\n", i);
}

static int open_file(const char *dir, int i)
{
	char path[4096], buf[64];
	int fd;

	snprintf(path, sizeof path, "%s/f%04d", dir, i);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		prog_say(2, "fdsafe: open %s: %s\n", path, strerror(errno));
		exit(2);
	}
	content(i, buf, sizeof buf);
	if (write(fd, buf, strlen(buf)) != (ssize_t)strlen(buf))
		exit(2);
	return fd;
}

/* Enough malloc traffic for several megabytes of log. */
static unsigned long churn(unsigned long long seed)
{
	void *live[512] = { 0 };
	unsigned long sum = 0;

	for (int i = 0; i < 400000; i++) {
		unsigned k = (unsigned)(prog_rand(&seed) % 512);
		free(live[k]);
		live[k] = malloc(16 + prog_rand(&seed) % 200);
		if (!live[k])
			exit(2);
		memset(live[k], i, 8);
		sum += ((unsigned char *)live[k])[0];
	}
	for (int k = 0; k < 512; k++)
		free(live[k]);
	return sum;
}

/* Checks file i: the contents it wrote (and, for the file dup2'd to the
 * top, the line written through there), nothing more. Returns 0 when
 * intact. */
static int check_file(int i, int fd, const char *extra)
{
	char want[128], got[256];
	struct stat st;
	ssize_t n;

	content(i, want, sizeof want);
	strcat(want, extra);
	if (fstat(fd, &st) || st.st_size != (off_t)strlen(want)) {
		prog_say(1, "file %d: size %lld, expected %zu\n", i, (long long)st.st_size, strlen(want));
		return 1;
	}
	n = pread(fd, got, sizeof got, 0);
	if (n != (ssize_t)strlen(want) || memcmp(got, want, (size_t)n)) {
		prog_say(1, "file %d: contents differ\n", i);
		return 1;
	}
	return 0;
}

static void probe(const char *what, int r)
{
	prog_say(1, "%s = %d%s%s\n", what, r, r < 0 ? " " : "", r < 0 ? strerror(errno) : "");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "closefrom";
	const char *dir = argc > 2 ? argv[2] : ".";
	struct rlimit rl = { 4096, 4096 };
	unsigned long sum = 0;
	int bad = 0, seq = 0, first, top;

	/* emfile: as many files as the limit it was started with allows,
	 * counted (a server at its limit, a test of EMFILE). */
	if (!strcmp(mode, "emfile")) {
		int n = 0;

		pid_t pid;
		int st = 0;

		while (open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0)
			n++;
		prog_say(1, "opened %d files, then %s\n", n, strerror(errno));
		/* A worker forked at the limit allocates: recorded, its log
		 * is opened above the limit too, with no word on stderr. */
		pid = fork();
		if (pid == 0) {
			char *volatile b = malloc(100);

			if (b)
				strcpy(b, "worker");
			free(b);
			_exit(b ? 0 : 1);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			prog_die("fdsafe: fork or wait failed");
		prog_say(1, "worker at the limit: status %d\n", st);
		return 0;
	}
	/* The same limit natively and recorded, soft and hard one: the
	 * recorder moves its descriptors to the top of the range, 4095. */
	setrlimit(RLIMIT_NOFILE, &rl);
	if (!strcmp(mode, "closefrom")) {
		closefrom(3);
	} else if (!strcmp(mode, "close_range")) {
		probe("close_range(3, ~0)", close_range(3, ~0u, 0));
	} else if (!strcmp(mode, "loop")) {
		for (int fd = 3; fd < 4096; fd++)
			close(fd);
	} else if (!strcmp(mode, "raw")) {
		for (int fd = 3; fd < 4096; fd++)
			syscall(SYS_close, fd);
	} else {
		prog_say(2, "usage: fdsafe closefrom|close_range|loop|raw|emfile DIR\n");
		return 2;
	}

	if (!strcmp(mode, "raw")) {
		/* Files up to and including the number at the top. */
		while (nfds < TOP && (nfds == 0 || fds[nfds - 1] < TOP)) {
			fds[nfds] = open_file(dir, nfds);
			nfds++;
		}
		prog_say(1, "opened %d files, descriptors %d to %d\n", nfds, fds[0], fds[nfds - 1]);
		sum = churn(7);
		for (int i = 0; i < nfds; i++)
			bad += check_file(i, fds[i], "");
		prog_say(1, "churn %lu; %d of %d files damaged\n", sum, bad, nfds);
		return bad != 0;
	}

	for (nfds = 0; nfds < NFILES; nfds++)
		fds[nfds] = open_file(dir, nfds);
	first = fds[0];
	for (int i = 1; i < NFILES; i++)
		if (fds[i] != first + i)
			seq++;
	prog_say(1, "opened %d files, descriptors %d to %d, %d out of sequence\n", NFILES, first, fds[NFILES - 1],
		 seq);
	sum = churn(1);

	/* The top of the range: not open natively. */
	top = TOP;
	probe("fcntl(top, F_GETFD)", fcntl(top, F_GETFD));
	probe("close(top)", close(top));
	probe("dup(top)", dup(top));
	probe("dup2(top, 5000)", dup2(top, 5000));
	probe("dup2(file 0, top)", dup2(fds[0], top));
	if (write(top, "written at the top\n", 19) != 19)
		prog_say(1, "write(top) failed: %s\n", strerror(errno));
	probe("fcntl(top, F_GETFD)", fcntl(top, F_GETFD));
	probe("close(top)", close(top));
	sum += churn(2);

	for (int i = 0; i < NFILES; i++)
		bad += check_file(i, fds[i], i == 0 ? "written at the top\n" : "");
	prog_say(1, "churn %lu; %d of %d files damaged\n", sum, bad, NFILES);
	return bad != 0;
}
