/* SPDX-License-Identifier: MIT */
/* writer.c: the log file: a shared mapping grown in extents, cut into
 * per-thread chunks, so records are stores into memory and never syscalls. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hooks-int.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

struct mms_file_header *mms__header;
__thread struct mms_thread *mms__tls_thread;
__thread int mms__tls_busy;
static __thread uint32_t tls_index; /* thread index + 1, 0 = none yet */
/* The thread's last stamp when its exit destructor ran: a thread that
 * allocates again afterwards (in a later TLS destructor) resumes from it,
 * so its new segment does not start before its old records end. */
static __thread uint64_t tls_last_stamp;

static int log_fd = -1;
static uint8_t *log_base;        /* reserved range of config.limit bytes */
static uint64_t log_mapped;      /* atomic: bytes of the file mapped at log_base */
static uint32_t chunk_size = MMS_CHUNK_SIZE_DEFAULT;
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_trimmed;          /* trim_file ran: chunk_new must lock */
static uint32_t next_thread_index;
static pthread_key_t thread_key;
static char log_path[PATH_MAX];
static int fork_child;          /* this process is a fork of a recorded one */
static int log_created;         /* we created log_path (not a file the user named) */
/* A fork child's log is opened at its first event (mms__log_open_pending),
 * so one that execs at once leaves no empty log: 1 pending, 2 opening. */
static int fork_pending;
static pid_t fork_pending_pid;
/* Where a fork child's heap came from, for its log's META records: the
 * parent's log (absolute), its pid and the FORK event it wrote (number 0:
 * none). */
static struct {
	char log[sizeof msmemscope_gdb.log_path];
	uint64_t pid, number, stamp;
} fork_from;

/* Partly used chunks of exited threads, and their thread states, for the
 * next threads to take. Thread creation and exit are not the hot path. */
#define FREE_CHUNKS 256
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mms_chunk_header *free_chunks[FREE_CHUNKS];
static unsigned nfree_chunks;
static struct mms_thread *free_threads;

/* The log thread: once the log is past PAGER_START, a thread of ours grows
 * the file and faults its pages in ahead of the chunks the program's
 * threads take, so they find them ready instead of paying the page cache's
 * work themselves (the largest part of recording, after the hooks). It
 * runs only in processes that log that much (a thread changes what some
 * programs may do, e.g. unshare(CLONE_NEWUSER)), and not with
 * MSMEMSCOPE_LOG_THREAD=0. Everything it does is an optimization: a
 * chunk it has not reached is faulted in by its taker, as without it. */
#define PAGER_START (8u << 20)
#define PAGER_AHEAD (2u << 20)
static uint64_t pager_want;      /* atomic: fault pages in up to this offset */
static uint64_t pager_done;      /* atomic: pages are in up to this offset */
static uint32_t pager_seq;       /* futex word: bumped when pager_want moves */
static int pager_state;          /* 0 not started, 1 running, 2 not to be had */
/* The thread only helps where a CPU is free for it: while the process has
 * as many recording threads as it may use CPUs, the work would only move
 * between them, with switches on top, so the threads fault their chunks in
 * themselves. */
static uint32_t live_threads;    /* atomic: threads with a state (registered, not exited) */
static uint32_t pager_cpus = 1;  /* CPUs the process may run on */

void *mms__map_anon(size_t size)
{
	void *p = mms__real.mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				 -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void mms__log_cut_at(uint64_t stamp)
{
	uint64_t cur;

	if (!mms__header || !(__atomic_load_n(&mms__header->flags, __ATOMIC_ACQUIRE) & MMS_FLAG_CUT))
		return;
	cur = __atomic_load_n(&mms__header->cut_stamp, __ATOMIC_RELAXED);
	while ((!cur || stamp < cur) && !__atomic_compare_exchange_n(&mms__header->cut_stamp, &cur, stamp, 1,
								      __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
}

/* One line on stderr, when recording stops (the log says so too), unless
 * the user asked for errors only. */
static void say_cut(int err)
{
	char buf[PATH_MAX + 256];
	const char *why = err == ENOSPC			  ? "the disk is full"
			  : err == EFBIG		  ? "the log reached its size limit (MSMEMSCOPE_LOG_LIMIT)"
			  : err == MMS_CUT_DESCRIPTOR ? "the program closed the log's descriptor behind the "
							"recorder's back (it writes into no file of the program's)"
						      : strerror(err);
	int n;
	ssize_t r;

	if (mms__config.quiet)
		return;
	n = snprintf(buf, sizeof buf, "msmemscope: recording of pid %d stopped: %s; %s keeps what came before\n",
		     (int)getpid(), why, log_path);
	r = write(2, buf, n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
	(void)r;
}

/* Recording stops. Events of other threads still under way may land in
 * their chunks after this, and the frees that come after it are not
 * recorded: a block freed then and handed out again to a thread still
 * writing would look handed out twice. So the header keeps a stamp taken
 * before recording stops (and mms__log_cut_at() lowers it to the stamp of
 * an event that found no room); the reader drops every event stamped from
 * there on. */
void mms__log_cut(int err)
{
	uint64_t stamp = mms__header ? mms__stamp_obtain() : 0;

	if (mms__header) {
		if (!(__atomic_fetch_or(&mms__header->flags, MMS_FLAG_CUT, __ATOMIC_SEQ_CST) & MMS_FLAG_CUT)) {
			mms__header->cut_errno = err;
			say_cut(err);
		}
		mms__log_cut_at(stamp);
	}
	__atomic_store_n(&mms__recording, 0, __ATOMIC_SEQ_CST);
}

static void refresh_time_pair(void)
{
	uint64_t stamp = mms__stamp_obtain();
	uint64_t ns = mms__realtime_ns();

	__atomic_store_n(&mms__header->last_stamp, stamp, __ATOMIC_RELAXED);
	__atomic_store_n(&mms__header->last_realtime_ns, ns, __ATOMIC_RELAXED);
}

/* Makes the file at least `need` bytes long and mapped. Called with
 * grow_lock held. Returns 0 or an errno value. */
static int grow_locked(uint64_t need)
{
	uint64_t mapped = __atomic_load_n(&log_mapped, __ATOMIC_ACQUIRE);

	while (mapped < need) {
		/* Double the file each time, from 256 KiB: small processes
		 * get small logs, and a large log grows in few steps. */
		uint64_t step = mapped;
		int err;

		if (step < (256u << 10) || log_trimmed)
			step = 256u << 10; /* after the trim: a few late events */
		if (step > (256u << 20))
			step = 256u << 20;
		if (mapped + step > mms__config.limit)
			step = mms__config.limit - mapped;
		if (mapped + step < need)
			return EFBIG;
		/* The program may have closed our descriptor with a raw system
		 * call, and a file of its own may have its number now. */
		if (!mms__fd_still_ours(log_fd))
			return MMS_CUT_DESCRIPTOR;
		/* posix_fallocate, not ftruncate: blocks are reserved now, so a
		 * full disk is an error here rather than SIGBUS in a store. */
		err = posix_fallocate(log_fd, (off_t)mapped, (off_t)step);
		if (err)
			return err;
		if (mms__real.mmap(log_base + mapped, step, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, log_fd,
				   (off_t)mapped) == MAP_FAILED)
			return errno;
		mapped += step;
		__atomic_store_n(&log_mapped, mapped, __ATOMIC_RELEASE);
	}
	return 0;
}

/* The log thread's loop: waits for pager_want to move past pager_done,
 * grows the file that far and faults the pages in. It stops for good at
 * the first error (the program's own threads then meet it and cut the log)
 * and once the file was trimmed at exit. */
static void *pager_main(void *arg)
{
	(void)arg;
	mms__tls_busy = 2; /* nothing this thread does is the program's */
	for (;;) {
		uint32_t seq = __atomic_load_n(&pager_seq, __ATOMIC_ACQUIRE);
		uint64_t want = __atomic_load_n(&pager_want, __ATOMIC_ACQUIRE);
		uint64_t done = __atomic_load_n(&pager_done, __ATOMIC_ACQUIRE);
		int err;

		if (want <= done) {
			syscall(SYS_futex, &pager_seq, FUTEX_WAIT_PRIVATE, seq, NULL, NULL, 0);
			continue;
		}
		if (want > mms__config.limit)
			want = mms__config.limit;
		pthread_mutex_lock(&grow_lock);
		err = log_trimmed || want <= done ? -1 : grow_locked(want);
		if (!err)
			refresh_time_pair();
		pthread_mutex_unlock(&grow_lock);
		if (err)
			break;
		while (done < want) {
			uint64_t len = want - done < (256u << 10) ? want - done : (256u << 10);
			if (madvise(log_base + done, len, MADV_POPULATE_WRITE))
				goto out; /* trimmed under us, or a kernel without it */
			done += len;
			__atomic_store_n(&pager_done, done, __ATOMIC_RELEASE);
		}
	}
out:
	__atomic_store_n(&pager_state, 2, __ATOMIC_RELEASE);
	return NULL;
}

/* Starts the log thread, its signals blocked (they are the program's). */
static void pager_start(uint64_t from)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;
	int busy = mms__tls_busy, err;

	__atomic_store_n(&pager_done, from, __ATOMIC_RELEASE);
	mms__tls_busy = 2; /* pthread_create allocates: not the program's */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_attr_init(&attr);
	if (!err) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 64u << 10);
		err = pthread_create(&th, &attr, pager_main, NULL);
		pthread_attr_destroy(&attr);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err && mms__real.pthread_setname_np)
		mms__real.pthread_setname_np(th, "msmemscope-log");
	mms__tls_busy = busy;
	if (err)
		__atomic_store_n(&pager_state, 2, __ATOMIC_RELEASE);
}

int mms__log_thread_running(void)
{
	return __atomic_load_n(&pager_state, __ATOMIC_ACQUIRE) == 1;
}

/* A chunk ending at `end` was taken: asks the log thread (starting it the
 * first time the log is large enough) to keep PAGER_AHEAD bytes ready past
 * it. One futex wake every PAGER_AHEAD / 2 bytes of log. */
static void pager_poke(uint64_t end)
{
	uint64_t want = end + PAGER_AHEAD, cur;
	int state = __atomic_load_n(&pager_state, __ATOMIC_ACQUIRE);

	if (state == 2 || end < PAGER_START || !mms__config.log_thread ||
	    __atomic_load_n(&live_threads, __ATOMIC_RELAXED) >= pager_cpus)
		return;
	cur = __atomic_load_n(&pager_want, __ATOMIC_RELAXED);
	if (end + PAGER_AHEAD / 2 <= cur)
		return;
	while (cur < want &&
	       !__atomic_compare_exchange_n(&pager_want, &cur, want, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	if (state == 0) {
		int expect = 0;
		if (__atomic_compare_exchange_n(&pager_state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			pager_start(end);
		return;
	}
	__atomic_fetch_add(&pager_seq, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &pager_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static struct mms_chunk_header *chunk_new(void)
{
	uint64_t idx = __atomic_fetch_add(&mms__header->nchunks, 1, __ATOMIC_SEQ_CST);
	uint64_t off = MMS_HEADER_SIZE + idx * chunk_size;
	struct mms_chunk_header *ch;

	/* Once the file may have been trimmed (see trim_file), take the lock:
	 * the unlocked look at log_mapped could be older than the trim. */
	if (__atomic_load_n(&log_trimmed, __ATOMIC_SEQ_CST) ||
	    off + chunk_size > __atomic_load_n(&log_mapped, __ATOMIC_ACQUIRE)) {
		int err;

		pthread_mutex_lock(&grow_lock);
		err = grow_locked(off + chunk_size);
		if (!err)
			refresh_time_pair();
		pthread_mutex_unlock(&grow_lock);
		if (err) {
			mms__log_cut(err);
			return NULL;
		}
	}
	ch = (struct mms_chunk_header *)(log_base + off);
	/* Fault the chunk's pages in with one call here rather than one trap
	 * per page on the hot path (kernels before 5.14 refuse; no matter),
	 * unless the log thread did. */
	if (off + chunk_size > __atomic_load_n(&pager_done, __ATOMIC_ACQUIRE))
		madvise(ch, chunk_size, MADV_POPULATE_WRITE);
	pager_poke(off + chunk_size);
	ch->magic = MMS_CHUNK_MAGIC;
	return ch;
}

static struct mms_chunk_header *chunk_take(size_t len)
{
	struct mms_chunk_header *ch = NULL;

	pthread_mutex_lock(&free_lock);
	while (nfree_chunks && !ch) {
		ch = free_chunks[--nfree_chunks];
		if (chunk_size - sizeof *ch - ch->used < len + 32)
			ch = NULL; /* too full for this record: leave it */
	}
	pthread_mutex_unlock(&free_lock);
	return ch ? ch : chunk_new();
}

static int chunk_switch(struct mms_thread *t, size_t len)
{
	struct mms_chunk_header *ch = chunk_take(len);
	uint8_t *p;

	if (!ch)
		return -1;
	t->chunk = ch;
	t->cur = (uint8_t *)(ch + 1) + ch->used;
	t->end = (uint8_t *)ch + chunk_size;
	/* A segment's base stamp is the last stamp this thread used, so a
	 * stamp taken before this call still orders after it. */
	p = t->cur;
	*p++ = MMS_TAG_SEGMENT;
	p = mms_put_u(p, t->index);
	p = mms_put_u(p, t->prev_stamp);
	t->prev_addr = 0;
	mms__rec_commit(t, p);
	return 0;
}

int mms__reserve_slow(struct mms_thread *t, size_t len)
{
	if (!mms__recording || chunk_switch(t, len))
		return -1;
	/* New modules (dlopen) are noticed here, once per chunk; their
	 * records may fill this chunk, so look again. */
	mms__modules_scan(t);
	if ((size_t)(t->end - t->cur) < len && (!mms__recording || chunk_switch(t, len)))
		return -1;
	return 0;
}

/* Metadata records carry the thread's last stamp: their place in time does
 * not matter, and a fresh stamp could fall after that of an event whose
 * record is still to be written. */
void mms__write_meta(struct mms_thread *t, uint8_t tag, const uint8_t *buf, size_t len)
{
	uint8_t *p = mms__rec_begin(t, len + 11);

	if (!p)
		return;
	p = mms__rec_head(t, p, tag, t->prev_stamp);
	memcpy(p, buf, len);
	mms__rec_commit(t, p + len);
}

static void thread_key_destructor(void *arg)
{
	(void)arg;
	mms__thread_exit();
}

static void write_thread_records(struct mms_thread *t)
{
	uint8_t buf[64 + 16], *p = buf;
	char name[17] = "";

	p = mms_put_u(p, t->index);
	p = mms_put_u(p, (uint64_t)t->tid);
	mms__write_meta(t, MMS_TAG_THREAD, buf, (size_t)(p - buf));
	if (prctl(PR_GET_NAME, name) == 0 && name[0]) {
		uint32_t id = mms__intern_string(t, name);
		p = buf;
		p = mms_put_u(p, t->index);
		p = mms_put_u(p, id);
		mms__write_meta(t, MMS_TAG_THREAD_NAME, buf, (size_t)(p - buf));
	}
}

struct mms_thread *mms__thread_register(void)
{
	size_t size = sizeof(struct mms_thread) + (MMS_MAX_DEPTH + 1) * (sizeof(uintptr_t) + sizeof(uint32_t));
	struct mms_thread *t;
	int busy = mms__tls_busy;

	if (!mms__active || !mms__recording)
		return NULL;
	mms__tls_busy = 2;
	pthread_mutex_lock(&free_lock);
	t = free_threads;
	if (t)
		free_threads = t->next_free;
	pthread_mutex_unlock(&free_lock);
	if (!t) {
		t = mms__map_anon(size);
		if (!t) {
			mms__tls_busy = busy;
			return NULL;
		}
		t->ips = (uintptr_t *)(t + 1);
		t->ids = (uint32_t *)(t->ips + MMS_MAX_DEPTH + 1);
	}
	/* A thread that allocates after its exit destructor ran (in a later
	 * TLS destructor) comes back here: it keeps its index. */
	if (!tls_index)
		tls_index = __atomic_fetch_add(&next_thread_index, 1, __ATOMIC_RELAXED) + 1;
	t->index = tls_index - 1;
	__atomic_fetch_add(&live_threads, 1, __ATOMIC_RELAXED);
	t->tid = gettid();
	t->chunk = NULL;
	t->cur = t->end = NULL;
	t->prev_stamp = tls_last_stamp;
	t->prev_addr = 0;
	t->nframes = 0;
	t->stack_id = 0;
	t->stack_lo = t->stack_hi = 0; /* found again at the first capture */
	mms__tls_thread = t;
	pthread_setspecific(thread_key, t);
	write_thread_records(t);
	mms__tls_busy = busy;
	return t;
}

void mms__thread_exit(void)
{
	struct mms_thread *t = mms__tls_thread;

	if (!t)
		return;
	mms__tls_thread = NULL;
	__atomic_fetch_sub(&live_threads, 1, __ATOMIC_RELAXED);
	tls_last_stamp = t->prev_stamp;
	pthread_mutex_lock(&free_lock);
	if (t->chunk && t->end - t->cur >= 1024 && nfree_chunks < FREE_CHUNKS)
		free_chunks[nfree_chunks++] = t->chunk;
	t->chunk = NULL;
	t->next_free = free_threads;
	free_threads = t;
	pthread_mutex_unlock(&free_lock);
}

/* True when the log at path has a valid header; sets *pid to its pid. */
static int log_owner(const char *path, uint64_t *pid)
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
	return 1;
}

/* True when the log at path was written by a process with our pid: then
 * this image was reached by exec from a recorded one. */
static int log_is_ours(const char *path)
{
	uint64_t pid;

	return log_owner(path, &pid) && pid == (uint64_t)getpid();
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
	char buf[PATH_MAX + 256];
	int n = snprintf(buf, sizeof buf, "msmemscope: not recording: MSMEMSCOPE_LOG=%s %s\n", path, why);
	ssize_t r = write(2, buf, n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);

	(void)r;
}

/* Log naming, passing nothing through the environment but what the user
 * or the launcher set:
 *  - MSMEMSCOPE_LOG=P: the process started with it writes P (created, or
 *    replaced with MSMEMSCOPE_LOG_FORCE=1; never through a symlink); a descendant
 *    (a fork, or a spawned child: P was written by an ancestor) writes
 *    {P without .mms}.{pid}.mms;
 *  - MSMEMSCOPE_LOG_DIR=D (or the current folder): D/memscope_{pid}.mms;
 *  - an image reached by exec finds its pid's log already there and writes
 *    {that log without .mms}.exec{N}.mms beside it.
 * A file we name ourselves is created exclusively, never overwritten.
 * Sets *execed. Returns the open descriptor or -1. */
static int open_log_file(int *execed)
{
	const char *named = getenv("MSMEMSCOPE_LOG");
	const char *dir = getenv("MSMEMSCOPE_LOG_DIR");
	int flags = O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW;
	/* Room in log_path for the stem and ".exec{N}.mms"; a longer path
	 * is refused rather than cut into the name of another file. */
	char stem[PATH_MAX - 32];
	size_t n;

	*execed = 0;
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

			snprintf(log_path, sizeof log_path, "%s", named);
			fd = open(log_path, flags | O_EXCL, 0640);
			log_created = fd >= 0;
			if (fd >= 0 || errno != EEXIST)
				return fd;
			if (lstat(log_path, &st) == 0 && S_ISLNK(st.st_mode)) {
				say_not_recording(named, "is a symbolic link, which the recorder does not follow");
				return -1;
			}
			if (!force || strcmp(force, "1")) {
				say_not_recording(named, "exists; set MSMEMSCOPE_LOG_FORCE=1 to replace it");
				return -1;
			}
			fd = open(log_path, flags | O_NONBLOCK, 0640);
			if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode) || ftruncate(fd, 0))) {
				say_not_recording(named, "is not a regular file");
				close(fd);
				fd = -1;
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
	if (!*execed) {
		snprintf(log_path, sizeof log_path, "%s.mms", stem);
		if (fork_child || !log_is_ours(log_path)) {
			int fd = open(log_path, flags | O_EXCL, 0640);
			log_created = fd >= 0;
			return fd;
		}
		*execed = 1;
	}
	if (!mms__config.follow_exec)
		return -1; /* --no-follow-exec: this image is not recorded */
	for (unsigned k = 1; k < 100000; k++) {
		snprintf(log_path, sizeof log_path, "%s.exec%u.mms", stem, k);
		int fd = open(log_path, flags | O_EXCL, 0640);
		if (fd >= 0 || errno != EEXIST) {
			log_created = fd >= 0;
			return fd;
		}
	}
	return -1;
too_long:
	errno = ENAMETOOLONG;
	return -1;
}

static void write_meta_kv(struct mms_thread *t, const char *key, const void *val, size_t len)
{
	static uint8_t buf[MMS_MAX_RECORD];
	uint8_t *p = mms_put_s(buf, key, strlen(key));

	p = mms_put_s(p, val, len);
	mms__write_meta(t, MMS_TAG_META, buf, (size_t)(p - buf));
}

static void write_process_meta(struct mms_thread *t)
{
	char buf[MMS_MAX_STRING];
	const char *cfg = getenv("MSMEMSCOPE_CONFIG");
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf);
	int fd;

	if (n > 0)
		write_meta_kv(t, "exe", buf, (size_t)n);
	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof buf);
		if (n > 0)
			write_meta_kv(t, "argv", buf, (size_t)n);
		close(fd);
	}
	if (cfg)
		write_meta_kv(t, "config", cfg, strlen(cfg));
}

static void write_meta_u(struct mms_thread *t, const char *key, uint64_t v)
{
	char buf[24];
	int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);

	write_meta_kv(t, key, buf, (size_t)n);
}

/* A fork child's log names its parent's and the parent's FORK event. */
static void write_fork_meta(struct mms_thread *t)
{
	if (!fork_from.pid)
		return;
	write_meta_kv(t, MMS_META_PARENT_LOG, fork_from.log, strlen(fork_from.log));
	write_meta_u(t, MMS_META_PARENT_PID, fork_from.pid);
	if (!fork_from.number)
		return;
	write_meta_u(t, MMS_META_FORK_NUMBER, fork_from.number);
	write_meta_u(t, MMS_META_FORK_STAMP, fork_from.stamp);
}

/* Opens the log and writes its header and the process's metadata. Called
 * once, inside the reentrancy guard. Returns 0, or -1 with recording off. */
int mms__log_open(void)
{
	struct mms_file_header *h;
	struct mms_thread *t;
	int execed, err;

	log_created = 0;
	mms__gdb_set_log(NULL);
	mms__watch_set_log(NULL);
	log_fd = open_log_file(&execed);
	if (log_fd < 0)
		return -1;
	/* Out of the program's way: the top of the descriptor range,
	 * unseen by its close and dup (fds.c). */
	if (mms__fd_adopt(log_fd, &log_fd, &grow_lock) < 0) {
		log_fd = -1;
		if (log_created)
			unlink(log_path);
		return -1;
	}
	log_base = mms__real.mmap(NULL, mms__config.limit, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				  -1, 0);
	if (log_base == MAP_FAILED)
		goto fail_reserve;
	log_mapped = 0;
	err = grow_locked(MMS_HEADER_SIZE + chunk_size);
	if (err)
		goto fail_grow;
	h = (struct mms_file_header *)log_base;
	h->version = MMS_FORMAT_VERSION;
	h->header_size = MMS_HEADER_SIZE;
	h->chunk_size = chunk_size;
	h->clock = mms__clock_tsc ? MMS_CLOCK_TSC : MMS_CLOCK_COUNTER;
	h->flags = (execed ? MMS_FLAG_EXECED : 0) | (fork_child ? MMS_FLAG_FORKED : 0);
	h->pid = (uint64_t)getpid();
	/* A fork child's log may be opened after its parent is gone. */
	h->ppid = fork_child && fork_from.pid ? fork_from.pid : (uint64_t)getppid();
	h->start_stamp = mms__stamp_obtain();
	h->start_realtime_ns = mms__realtime_ns();
	h->last_stamp = h->start_stamp;
	h->last_realtime_ns = h->start_realtime_ns;
	h->call_stack_depth = mms__config.depth;
	h->events_mask = mms__config.events;
	h->file_limit = mms__config.limit;
	/* The magic goes last: a reader never sees a half-made header. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(h->magic, MMS_MAGIC, MMS_MAGIC_LEN);
	mms__header = h;

	mms__active = 1;
	mms__recording = 1;
	mms__gdb_set_log(log_path);
	mms__watch_set_log(msmemscope_gdb.log_path);
	t = mms__thread();
	if (!t)
		return -1;
	write_process_meta(t);
	if (fork_child)
		write_fork_meta(t);
	mms__modules_scan(t);
	return 0;

fail_grow:
	mms__real.munmap(log_base, mms__config.limit);
fail_reserve:
	mms__fd_release(log_fd);
	if (log_created)
		unlink(log_path); /* ours and empty: leave nothing behind */
	log_fd = -1;
	return -1;
}

/* Gives back the space reserved past the last chunk, so a finished log is
 * no larger than what it holds. A chunk taken later (a free in a later
 * destructor) grows the file again: chunk_new sees log_trimmed, and either
 * its chunk was counted here, or it takes the lock and finds log_mapped
 * already lowered. */
static void trim_file(void)
{
	uint64_t end;

	__atomic_store_n(&log_trimmed, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&grow_lock);
	end = MMS_HEADER_SIZE + __atomic_load_n(&mms__header->nchunks, __ATOMIC_SEQ_CST) * chunk_size;
	if (end < log_mapped && mms__fd_still_ours(log_fd) && ftruncate(log_fd, (off_t)end) == 0)
		__atomic_store_n(&log_mapped, end, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&grow_lock);
}

void mms__log_finish(void)
{
	struct mms_thread *t;

	if (!mms__active || !mms__header)
		return;
	t = mms__thread();
	if (t)
		mms__modules_scan(t);
	refresh_time_pair();
	trim_file();
	__atomic_fetch_or(&mms__header->flags, MMS_FLAG_COMPLETE, __ATOMIC_SEQ_CST);
	/* Recording goes on: frees in later destructors are events too. */
}

/* In a fork child: leave the parent's log alone; ours is opened at the
 * first event. */
void mms__log_after_fork_child(uint64_t fork_number, uint64_t fork_stamp)
{
	if (!mms__active && !fork_pending)
		return;
	fork_from.pid = 0;
	if (mms__active) {
		/* The parent's log path, absolute, as gdb's descriptor has it. */
		memcpy(fork_from.log, msmemscope_gdb.log_path, sizeof fork_from.log);
		fork_from.log[sizeof fork_from.log - 1] = 0;
		fork_from.pid = mms__header->pid;
		fork_from.number = fork_number;
		fork_from.stamp = fork_stamp;
		mms__real.munmap(log_base, mms__config.limit);
		mms__fd_release(log_fd);
	}
	/* else the parent's log was pending too: it never had one. */
	mms__active = 0;
	mms__recording = 0;
	log_fd = -1;
	mms__header = NULL;
	mms__gdb_set_log(NULL);
	mms__watch_set_log(NULL);
	pthread_mutex_init(&grow_lock, NULL);
	pthread_mutex_init(&free_lock, NULL);
	nfree_chunks = 0;
	free_threads = NULL;
	log_trimmed = 0;
	pager_state = 0; /* the parent's log thread is not in this process */
	pager_want = pager_done = 0;
	live_threads = 0;
	next_thread_index = 0;
	tls_index = 0;
	tls_last_stamp = 0;
	if (mms__tls_thread) {
		/* Only this thread survives; its state is ours to reuse. */
		mms__tls_thread->chunk = NULL;
		mms__tls_thread->cur = mms__tls_thread->end = NULL;
		mms__tls_thread = NULL;
	}
	mms__intern_init();
	mms__releasers_reset();
	mms__modules_reset();
	fork_child = 1;
	fork_pending_pid = getpid();
	__atomic_store_n(&fork_pending, 1, __ATOMIC_RELEASE);
}

int mms__log_open_pending(void)
{
	int expect = 1, busy;

	if (!__atomic_load_n(&fork_pending, __ATOMIC_ACQUIRE) || getpid() != fork_pending_pid)
		return 0;
	if (!__atomic_compare_exchange_n(&fork_pending, &expect, 2, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* Another thread of the child is opening it. */
		while (__atomic_load_n(&fork_pending, __ATOMIC_ACQUIRE) == 2)
			sched_yield();
		return mms__recording;
	}
	busy = mms__tls_busy;
	mms__tls_busy = 2;
	mms__log_open();
	mms__tls_busy = busy;
	__atomic_store_n(&fork_pending, 0, __ATOMIC_RELEASE);
	return mms__recording;
}

int mms__writer_init(void)
{
	cpu_set_t cpus;

	if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 0)
		pager_cpus = (uint32_t)CPU_COUNT(&cpus);
	return pthread_key_create(&thread_key, thread_key_destructor);
}
