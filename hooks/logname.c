/* SPDX-License-Identifier: MIT */
/* logname.c: which file this process's log is (MSMEMSCOPE_LOG,
 * MSMEMSCOPE_LOG_DIR, a fork child's or an exec'd image's name beside its
 * ancestor's), and opening it without overwriting or following a link. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hooks-int.h"
#include "log.h"

void mms__proc_identity(uint64_t *start, uint64_t *pid_ns)
{
	struct stat st;
	long v;

	*start = mms__proc_stat_field(0, 22, &v) || v < 0 ? 0 : (uint64_t)v;
	*pid_ns = stat("/proc/self/ns/pid", &st) ? 0 : (uint64_t)st.st_ino;
}

/* True when the log at path has a valid header; sets *pid to its pid,
 * *start and *pid_ns to its process's start time and PID namespace. */
static int log_writer(const char *path, uint64_t *pid, uint64_t *start, uint64_t *pid_ns)
{
	struct mms_file_header h;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	ssize_t n = -1;

	if (fd < 0)
		return 0;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode))
		n = pread(fd, &h, sizeof h, 0);
	close(fd);
	if (n != (ssize_t)sizeof h || memcmp(h.magic, MMS_MAGIC, MMS_MAGIC_LEN))
		return 0;
	*pid = h.pid;
	*start = h.proc_start;
	*pid_ns = h.pid_ns;
	return 1;
}

static int log_owner(const char *path, uint64_t *pid)
{
	uint64_t start, pid_ns;

	return log_writer(path, pid, &start, &pid_ns);
}

/* True when the log at path was written by this process: then this image
 * was reached by exec from a recorded one. Our pid is not enough: a
 * process of another PID namespace (unshare -p, a sandbox's) may have
 * had the same number and written its log in the same folder; its start
 * time or namespace differs. */
static int log_is_ours(const char *path)
{
	uint64_t pid, start, pid_ns, my_start, my_ns;

	if (!log_writer(path, &pid, &start, &pid_ns) || pid != (uint64_t)getpid())
		return 0;
	mms__proc_identity(&my_start, &my_ns);
	return (!start || !my_start || start == my_start) && (!pid_ns || !my_ns || pid_ns == my_ns);
}

/* True when pid is an ancestor of this process (as for a child spawned by
 * a recorded process, which runs no fork handler). */
static int is_ancestor(uint64_t pid)
{
	long cur = (long)getppid();

	for (int depth = 0; cur > 1 && depth < 64; depth++) {
		if ((uint64_t)cur == pid)
			return 1;
		if (mms__proc_stat_field(cur, 4, &cur)) /* its parent */
			return 0;
	}
	return 0;
}

/* One line on stderr: the user named a log the recorder will not write. */
static void say_not_recording(const char *path, const char *why)
{
	/* Static, as stem below: the log is opened by one thread at a time
	 * (logfile.c), perhaps a fork child's thread whose stack is the
	 * smallest POSIX threads allow (16 KiB). */
	static char buf[PATH_MAX + 256];
	int n = snprintf(buf, sizeof buf, "msmemscope: not recording: MSMEMSCOPE_LOG=%s %s\n", path, why);

	mms__say(buf, n, sizeof buf);
}

/* Log naming, passing nothing through the environment but what the user
 * or the launcher set:
 *  - MSMEMSCOPE_LOG=P: the process started with it writes P (created, or
 *    replaced with MSMEMSCOPE_LOG_FORCE=1; never through a symlink); a descendant
 *    (a fork, or a spawned child: P was written by an ancestor) writes
 *    {P without .mms}.{pid}.mms;
 *  - MSMEMSCOPE_LOG_DIR=D (or the current folder): D/memscope_{pid}.mms;
 *  - where a process of another PID namespace with the same pid wrote
 *    that name, {name without .mms}-{k}.mms, k from 2;
 *  - an image reached by exec finds its pid's log already there and writes
 *    {that log without .mms}.exec{N}.mms beside it.
 * A file we name ourselves is created exclusively, never overwritten. */
int mms__logname_open(char log_path[PATH_MAX], int fork_child, int *execed, int *created)
{
	const char *named = getenv("MSMEMSCOPE_LOG");
	const char *dir = getenv("MSMEMSCOPE_LOG_DIR");
	int flags = O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW;
	/* Room in log_path for the stem and ".exec{N}.mms"; a longer path
	 * is refused rather than cut into the name of another file. */
	static char stem[PATH_MAX - 32];
	size_t n;

	*execed = 0;
	*created = 0;
	if (named && *named) {
		uint64_t owner;

		if ((size_t)snprintf(stem, sizeof stem, "%s", named) >= sizeof stem)
			goto too_long;
		n = strlen(stem);
		if (n > 4 && !strcmp(stem + n - 4, ".mms"))
			stem[n - 4] = 0;
		if (!fork_child && log_is_ours(named)) {
			*execed = 1;
		} else if (!fork_child && !(log_owner(named, &owner) && is_ancestor(owner))) {
			/* The process the user named the log for: a file that
			 * is there already is replaced only when asked to
			 * (MSMEMSCOPE_LOG_FORCE=1), and only a regular file,
			 * never through a symbolic link. */
			const char *force = getenv("MSMEMSCOPE_LOG_FORCE");
			struct stat st;
			int fd;

			snprintf(log_path, PATH_MAX, "%s", named);
			fd = mms__open_lifted(log_path, flags | O_EXCL, 0640);
			*created = fd >= 0;
			if (fd >= 0 || errno != EEXIST)
				return fd;
			if (lstat(log_path, &st) == 0 && S_ISLNK(st.st_mode)) {
				say_not_recording(named, "is a symbolic link, which the recorder does not follow");
				errno = 0; /* said */
				return -1;
			}
			if (!force || strcmp(force, "1")) {
				say_not_recording(named, "exists; set MSMEMSCOPE_LOG_FORCE=1 to replace it");
				errno = 0;
				return -1;
			}
			fd = mms__open_lifted(log_path, flags | O_NONBLOCK, 0640);
			if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode) || ftruncate(fd, 0))) {
				say_not_recording(named, "is not a regular file");
				close(fd);
				fd = -1;
				errno = 0;
			}
			return fd;
		} else {
			n = strlen(stem);
			if ((size_t)snprintf(stem + n, sizeof stem - n, ".%d", (int)getpid()) >= sizeof stem - n)
				goto too_long;
		}
	} else if ((size_t)snprintf(stem, sizeof stem, "%s/memscope_%d", dir && *dir ? dir : ".", (int)getpid()) >=
		   sizeof stem) {
		goto too_long;
	}
	/* STEM.mms, or, where a process of another PID namespace with our
	 * pid made that one, STEM-2.mms, STEM-3.mms...: the first that is
	 * ours (this image was reached by exec) or that we create. */
	n = strlen(stem);
	for (unsigned k = 1; !*execed; k++) {
		int fd;

		if (k > 1)
			snprintf(stem + n, sizeof stem - n, "-%u", k);
		snprintf(log_path, PATH_MAX, "%s.mms", stem);
		if (!fork_child && log_is_ours(log_path)) {
			*execed = 1;
			break;
		}
		fd = mms__open_lifted(log_path, flags | O_EXCL, 0640);
		if (fd >= 0 || errno != EEXIST || k == 999) {
			*created = fd >= 0;
			return fd;
		}
	}
	if (!mms__config.follow_exec) {
		errno = 0; /* --no-follow-exec: this image is not recorded */
		return -1;
	}
	for (unsigned k = 1; k < 100000; k++) {
		snprintf(log_path, PATH_MAX, "%s.exec%u.mms", stem, k);
		int fd = mms__open_lifted(log_path, flags | O_EXCL, 0640);
		if (fd >= 0 || errno != EEXIST) {
			*created = fd >= 0;
			return fd;
		}
	}
	errno = EEXIST;
	return -1;
too_long:
	snprintf(log_path, PATH_MAX, "%s...", stem);
	errno = ENAMETOOLONG;
	return -1;
}
