/* SPDX-License-Identifier: MIT */
/* outfile.c: the files the replay library writes (exports, the index):
 * created under a temporary name beside their path with mode 0640 and
 * without following a symlink, moved into place whole at the end, never
 * over a file the caller did not agree to replace. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "msmemscope/error.h"
#include "outfile-int.h"

int mms__write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	ssize_t w;

	while (n) {
		w = write(fd, c, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}


int mms__outfile_create(struct mms__outfile *f, const char *path, int overwrite)
{
	struct stat st;
	size_t n;
	int fd, i;

	memset(f, 0, sizeof(*f));
	if (!path || !*path)
		return MMS_EUSAGE;
	/* lstat: a symlink at path, even a dangling one, is something the
	 * user did not ask us to replace. */
	if (!overwrite && lstat(path, &st) == 0)
		return -EEXIST;
	n = strlen(path) + 32;
	/* The temporary name, then a copy of path: the file outlives the
	 * caller's string (an export added to a pass is written later). */
	f->tmp = malloc(2 * n);
	if (!f->tmp)
		return -ENOMEM;
	f->path = memcpy(f->tmp + n, path, strlen(path) + 1);
	f->overwrite = overwrite;
	for (i = 0;; i++) {
		snprintf(f->tmp, n, "%s.%ld.%d.tmp", path, (long)getpid(), i);
		fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST || i == 99)
			break;
	}
	fd = -errno;
	free(f->tmp);
	f->tmp = NULL;
	return fd;
}

static int unsupported(int e)
{
	return e == EINVAL || e == ENOSYS || e == ENOTSUP || e == EOPNOTSUPP || e == EPERM;
}

/* Moves tmp to path unless path exists, even one that appeared while we
 * wrote: no file is replaced that was not ours. renameat2(NOREPLACE), or
 * link() where the file system has no such rename, or a check then
 * rename() where it has no hard links either. */
static int move_noreplace(const char *tmp, const char *path, int *linked)
{
	struct stat st;

	*linked = 0;
#ifdef RENAME_NOREPLACE
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
		return 0;
	if (!unsupported(errno))
		return -errno;
#endif
	if (link(tmp, path) == 0) {
		*linked = 1;
		return 0;
	}
	if (!unsupported(errno))
		return -errno;
	if (lstat(path, &st) == 0)
		return -EEXIST;
	return rename(tmp, path) ? -errno : 0;
}

int mms__outfile_commit(struct mms__outfile *f)
{
	int rc = 0, linked = 0;

	if (!f->tmp)
		return MMS_EUSAGE;
	if (f->overwrite) {
		/* rename() replaces a symlink at path, never what it points to. */
		if (rename(f->tmp, f->path))
			rc = -errno;
	} else {
		rc = move_noreplace(f->tmp, f->path, &linked);
	}
	if (rc || linked) {
		mms__outfile_abort(f);
	} else {
		/* Renamed: the temporary name is gone. */
		free(f->tmp);
		f->tmp = NULL;
	}
	return rc;
}

void mms__outfile_abort(struct mms__outfile *f)
{
	if (!f->tmp)
		return;
	unlink(f->tmp);
	free(f->tmp);
	f->tmp = NULL;
}
