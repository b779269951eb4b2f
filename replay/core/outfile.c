/* SPDX-License-Identifier: MIT */
/* outfile.c: the files the replay library writes (exports, the index):
 * created under a temporary name beside their path with mode 0640 and
 * without following a symlink, moved into place whole at the end, never
 * over a file the caller did not agree to replace nor over a log being
 * read; a device or a FIFO written in place; and a buffered writer over
 * one (the analyses' TSVs, mms_file_write()). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "msmemscope/error.h"
#include "msmemscope/output.h"
#include "base-int.h"
#include "decimal-int.h"
#include "log-int.h"
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

/* Whether a path of this type is written in place. */
static int in_place(mode_t mode)
{
	return S_ISCHR(mode) || S_ISFIFO(mode);
}

/* Opens the device or FIFO at path for writing, as "> path" would (a
 * FIFO waits for its reader). Returns a descriptor or a negative code. */
static int open_in_place(struct mms__outfile *f, const char *path)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	/* Replaced by a file between the two looks: not written over. */
	if (fstat(fd, &st) || !in_place(st.st_mode)) {
		close(fd);
		return MMS_ENOTFILE;
	}
	f->direct = 1;
	return fd;
}

/* The descriptor of this process that path names, itself or at the end
 * of its symlinks (/dev/stdout, /dev/fd/N, /proc/self/fd/N), or -1. */
static int own_fd(const char *path)
{
	char p[PATH_MAX], link[PATH_MAX], tail;
	const char *slash;
	ssize_t n;
	int fd, hops, len;

	if (strlen(path) >= sizeof(p))
		return -1;
	strcpy(p, path);
	for (hops = 0; hops < 16; hops++) {
		if (sscanf(p, "/dev/fd/%d%c", &fd, &tail) == 1 || sscanf(p, "/proc/self/fd/%d%c", &fd, &tail) == 1 ||
		    sscanf(p, "/proc/thread-self/fd/%d%c", &fd, &tail) == 1)
			return fd >= 0 ? fd : -1;
		n = readlink(p, link, sizeof(link) - 1);
		if (n <= 0)
			return -1;
		link[n] = '\0';
		if (link[0] == '/') {
			memcpy(p, link, (size_t)n + 1);
			continue;
		}
		/* Relative to the link's folder. */
		slash = strrchr(p, '/');
		len = slash ? (int)(slash - p) + 1 : 0;
		if ((size_t)len + (size_t)n >= sizeof(p))
			return -1;
		memcpy(p + len, link, (size_t)n + 1);
	}
	return -1;
}

int mms__outfile_create(struct mms__outfile *f, const char *path, unsigned flags)
{
	struct stat st;
	size_t n;
	int fd, i, overwrite = (flags & MMS__OUT_OVERWRITE) != 0;

	memset(f, 0, sizeof(*f));
	if (!path || !*path)
		return MMS_EUSAGE;
	/* One of our own descriptors (-o /dev/stdout): written through a
	 * copy of it, at its offset, as "2>&1" shares one. */
	fd = own_fd(path);
	if (fd >= 0) {
		if (flags & MMS__OUT_REGULAR)
			return MMS_ENOTFILE;
		fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		f->direct = 1;
		return fd;
	}
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		if ((flags & MMS__OUT_REGULAR) || !in_place(st.st_mode))
			return MMS_ENOTFILE;
		return open_in_place(f, path);
	}
	/* lstat: a symlink at path, even a dangling one, is something the
	 * user did not ask us to replace; the link, not its file, is
	 * replaced, so only a log at path itself is in the way. */
	if (lstat(path, &st) == 0) {
		if (S_ISREG(st.st_mode) && mms__log_file_open_here((uint64_t)st.st_dev, (uint64_t)st.st_ino))
			return MMS_EOVERLOG;
		if (!overwrite)
			return -EEXIST;
	}
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

/* Moves tmp to path, replacing what is there (a symlink itself, never
 * what it points to). ext4 writes a file's data out when rename() puts it
 * over another (auto_da_alloc), which held a 125 MB TSV's writer 70 ms:
 * where path exists, the two names are exchanged instead (a reader sees
 * one file or the other) and the old file, now under the temporary name,
 * is removed. rename() where the file system cannot exchange. */
static int move_replace(const char *tmp, const char *path)
{
#if defined(RENAME_NOREPLACE) && defined(RENAME_EXCHANGE)
	struct stat st;
	int e;

	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno == EEXIST && lstat(path, &st) == 0 && !S_ISDIR(st.st_mode) &&
	    renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
		if (unlink(tmp) == 0)
			return 0;
		/* A directory came in between: it goes back. */
		e = errno;
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE))
			return -errno;
		return -e;
	}
	/* Anything else (no such calls here, a file system that refuses
	 * them, a directory at path): rename() does it or says why not. */
#endif
	return rename(tmp, path) ? -errno : 0;
}

int mms__outfile_commit(struct mms__outfile *f)
{
	int rc = 0, linked = 0;

	if (f->direct)
		return 0;
	if (!f->tmp)
		return MMS_EUSAGE;
	if (f->overwrite) {
		rc = move_replace(f->tmp, f->path);
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

/* --- a buffered writer over an output file ------------------------------------ */

/* The writer thread of a large file: a ring of WQ_BUFS buffers, filled in
 * turn by the file's maker and written in turn by the thread. Up to
 * WQ_BUFS - 1 filled ones wait for the thread while the maker fills the
 * next; the maker waits only when the disk is slower than it, and memory
 * stays at WQ_BUFS buffers. */
#define WQ_BUFS 4
#define WQ_BUF (1u << 18)
/* First-buffer flushes after which a file gets its writer: a file of a
 * few rows is written without a thread. */
#define WQ_AFTER 8

struct mms__wq {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a buffer filled, written, or the end */
	int fd;
	char *buf[WQ_BUFS];
	size_t len[WQ_BUFS];
	unsigned head, nfull; /* the next to write, buffers filled and not yet written */
	int end;              /* no more buffers come */
	int err;              /* the first write error */
};

static void *wq_main(void *arg)
{
	struct mms__wq *q = arg;
	unsigned i;
	int rc;

	pthread_mutex_lock(&q->mu);
	for (;;) {
		while (!q->nfull && !q->end)
			pthread_cond_wait(&q->cv, &q->mu);
		if (!q->nfull)
			break;
		i = q->head;
		pthread_mutex_unlock(&q->mu);
		rc = q->err ? 0 : mms__write_all(q->fd, q->buf[i], q->len[i]);
		pthread_mutex_lock(&q->mu);
		if (rc && !q->err)
			q->err = rc;
		q->head = (i + 1) % WQ_BUFS;
		q->nfull--;
		pthread_cond_broadcast(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

/* Starts w's writer (w's buffer empty). Without memory or a thread, w
 * goes on writing itself. */
static void wq_start(struct mms__wfile *w)
{
	struct mms__wq *q = calloc(1, sizeof(*q));
	sigset_t all, old;
	int i, rc;

	if (!q)
		return;
	for (i = 0; i < WQ_BUFS; i++)
		if (!(q->buf[i] = malloc(WQ_BUF)))
			goto fail;
	q->fd = w->fd;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	/* The thread takes no signal: the caller's handlers stay on the
	 * threads they were meant for. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&q->thread, NULL, wq_main, q);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pthread_cond_destroy(&q->cv);
		pthread_mutex_destroy(&q->mu);
		goto fail;
	}
	w->q = q;
	w->buf = q->buf[0];
	w->cap = WQ_BUF;
	return;
fail:
	for (i = 0; i < WQ_BUFS; i++)
		free(q->buf[i]);
	free(q);
}

/* Hands the buffer being filled to the writer and takes the next one,
 * once the writer has written it. */
static void wq_put(struct mms__wfile *w)
{
	struct mms__wq *q = w->q;
	unsigned i;

	pthread_mutex_lock(&q->mu);
	i = (q->head + q->nfull) % WQ_BUFS;
	q->len[i] = w->len;
	q->nfull++;
	pthread_cond_broadcast(&q->cv);
	while (q->nfull == WQ_BUFS)
		pthread_cond_wait(&q->cv, &q->mu);
	w->buf = q->buf[(i + 1) % WQ_BUFS];
	pthread_mutex_unlock(&q->mu);
}

/* Ends w's writer once every buffer is written; its error becomes w's. */
static void wq_stop(struct mms__wfile *w)
{
	struct mms__wq *q = w->q;
	int i;

	pthread_mutex_lock(&q->mu);
	q->end = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	pthread_join(q->thread, NULL);
	if (q->err && !w->err)
		w->err = q->err;
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	for (i = 0; i < WQ_BUFS; i++)
		free(q->buf[i]);
	free(q);
	w->q = NULL;
	w->buf = w->first;
	w->cap = sizeof(w->first);
}

void mms__wfile_flush(struct mms__wfile *w)
{
	int rc;

	if (!w->len)
		return;
	if (w->q) {
		wq_put(w);
	} else if (!w->err) {
		rc = mms__write_all(w->fd, w->buf, w->len);
		if (rc)
			w->err = rc;
		else if (++w->flushes == WQ_AFTER)
			wq_start(w);
	}
	w->len = 0;
}

void mms__wfile_mem(struct mms__wfile *w, const void *p, size_t n)
{
	const char *c = p;
	size_t k;

	while (n) {
		if (w->len == w->cap)
			mms__wfile_flush(w);
		k = w->cap - w->len < n ? w->cap - w->len : n;
		memcpy(w->buf + w->len, c, k);
		w->len += k;
		c += k;
		n -= k;
	}
}

void mms__wfile_str(struct mms__wfile *w, const char *s)
{
	mms__wfile_mem(w, s, strlen(s));
}

void mms__wfile_hex(struct mms__wfile *w, uint64_t v, char end)
{
	char *o = mms__wfile_room(w, 20);

	o += mms__hex(o, v);
	*o++ = end;
	mms__wfile_end(w, o);
}

struct mms__wfile *mms__wfile_open(const char *path, unsigned flags, int *rc)
{
	struct mms__wfile *w = malloc(sizeof(*w));

	if (!w) {
		*rc = -ENOMEM;
		return NULL;
	}
	w->fd = mms__outfile_create(&w->f, path, flags);
	if (w->fd < 0) {
		*rc = w->fd;
		free(w);
		return NULL;
	}
	w->err = 0;
	w->len = 0;
	w->hi = 0;
	w->buf = w->first;
	w->cap = sizeof(w->first);
	w->flushes = 0;
	w->q = NULL;
	return w;
}

/* Finishes the file (commit) or, with rc non-zero or a write error,
 * removes it. Returns rc, the write error, or the commit's code. */
int mms__wfile_close(struct mms__wfile *w, int rc)
{
	if (!w)
		return rc;
	mms__wfile_flush(w);
	if (w->q)
		wq_stop(w);
	if (close(w->fd) && !w->err)
		w->err = -errno;
	if (!rc)
		rc = w->err;
	if (!rc)
		rc = mms__outfile_commit(&w->f);
	else
		mms__outfile_abort(&w->f);
	free(w);
	return rc;
}

MMS__EXPORT int mms_file_write(const char *path, const void *buf, size_t len, const mms_output_options_t *out)
{
	int rc = 0;
	struct mms__wfile *w;

	if (!path || (!buf && len))
		return MMS_EUSAGE;
	w = mms__wfile_open(path, mms__out_flags(out), &rc);
	if (!w)
		return rc;
	mms__wfile_mem(w, buf, len);
	return mms__wfile_close(w, 0);
}
