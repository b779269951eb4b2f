/* SPDX-License-Identifier: MIT */
/* logfile.c: the log file: a shared mapping grown in extents, cut into
 * per-thread chunks, so records are stores into memory and never syscalls;
 * its header and the process's metadata, the cut when recording stops, and
 * a fork child's log. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hooks-int.h"
#include "log.h"
#include "stamp.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

struct mms_file_header *mms__header;

static int log_fd = -1;
static uint8_t *log_base;        /* reserved range of config.limit bytes */
static uint64_t log_mapped;      /* atomic: bytes of the file mapped at log_base */
static uint32_t chunk_size = MMS_CHUNK_SIZE_DEFAULT;
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_trimmed;          /* trim_file ran: chunk_new must lock */
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

/* Partly used chunks of exited threads, for the next threads to take. */
#define FREE_CHUNKS 256
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mms_chunk_header *free_chunks[FREE_CHUNKS];
static unsigned nfree_chunks;

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
			  : err == MMS_CUT_FSIZE	  ? "the log reached the file size limit the program runs "
							"under (RLIMIT_FSIZE, ulimit -f), which the recorder never passes"
			  : err == MMS_CUT_DESCRIPTOR ? "the program closed the log's descriptor behind the "
							"recorder's back (it writes into no file of the program's)"
						      : strerror(err);
	int n;

	if (mms__config.log_level == MMS_CONFIG_LOG_ERROR)
		return;
	n = snprintf(buf, sizeof buf, "msmemscope: recording of pid %d stopped: %s; %s keeps what came before\n",
		     (int)getpid(), why, log_path);
	mms__say(buf, n, sizeof buf);
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
 * grow_lock held. Returns 0, an errno value or MMS_CUT_FSIZE. */
static int grow_locked(uint64_t need)
{
	uint64_t mapped = __atomic_load_n(&log_mapped, __ATOMIC_ACQUIRE);

	while (mapped < need) {
		/* Double the file each time, from 256 KiB: small processes
		 * get small logs, and a large log grows in few steps. */
		uint64_t step = mapped, fsize = mms__fsize_limit();
		struct mms_quiet q;
		int err;

		if (step < (256u << 10) || log_trimmed)
			step = 256u << 10; /* after the trim: a few late events */
		if (step > (256u << 20))
			step = 256u << 20;
		if (mapped + step > mms__config.log_limit)
			step = mms__config.log_limit - mapped;
		/* A file grown past the program's file size limit would get
		 * it SIGXFSZ: the log stops short of the limit (in whole
		 * pages, as it is mapped). */
		if (fsize != UINT64_MAX && mapped + step > fsize) {
			uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

			step = fsize > mapped ? (fsize - mapped) / page * page : 0;
			if (mapped + step < need)
				return MMS_CUT_FSIZE;
		}
		if (mapped + step < need)
			return EFBIG;
		/* The program may have closed our descriptor with a raw system
		 * call, and a file of its own may have its number now. */
		if (!mms__fd_still_ours(log_fd))
			return MMS_CUT_DESCRIPTOR;
		/* posix_fallocate, not ftruncate: blocks are reserved now, so a
		 * full disk is an error here rather than SIGBUS in a store.
		 * Quietly: the program may lower its limit at any time. */
		mms__quiet_begin(&q);
		err = posix_fallocate(log_fd, (off_t)mapped, (off_t)step);
		mms__quiet_end(&q);
		if (err == EFBIG)
			return MMS_CUT_FSIZE;
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

int mms__log_grow_ahead(uint64_t want)
{
	int err;

	pthread_mutex_lock(&grow_lock);
	err = log_trimmed ? -1 : grow_locked(want);
	if (!err)
		refresh_time_pair();
	pthread_mutex_unlock(&grow_lock);
	return err;
}

int mms__log_populate(uint64_t off, uint64_t len)
{
	return madvise(log_base + off, len, MADV_POPULATE_WRITE);
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
	if (!mms__pager_ready(off + chunk_size))
		madvise(ch, chunk_size, MADV_POPULATE_WRITE);
	mms__pager_poke(off + chunk_size);
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

void mms__chunk_leave(struct mms_thread *t)
{
	pthread_mutex_lock(&free_lock);
	if (t->chunk && t->end - t->cur >= 1024 && nfree_chunks < FREE_CHUNKS)
		free_chunks[nfree_chunks++] = t->chunk;
	t->chunk = NULL;
	pthread_mutex_unlock(&free_lock);
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

static void write_meta_kv(struct mms_thread *t, const char *key, const void *val, size_t len)
{
	static uint8_t buf[MMS_MAX_RECORD];
	uint8_t *p = mms_put_s(buf, key, strlen(key));

	p = mms_put_s(p, val, len);
	mms__write_meta(t, MMS_TAG_META, buf, (size_t)(p - buf));
}

/* The process's executable, its arguments and the configuration the
 * recorder uses, as the one writer of common/conf.c writes it. */
static void write_process_meta(struct mms_thread *t)
{
	char buf[MMS_MAX_STRING];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf);
	size_t len;
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
	len = mms_config_format(&mms__config, buf, sizeof buf);
	write_meta_kv(t, "config", buf, len < sizeof buf ? len : sizeof buf - 1);
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

	mms__gdb_set_log(NULL);
	mms__watch_set_log(NULL);
	log_fd = mms__logname_open(log_path, fork_child, &execed, &log_created);
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
	log_base = mms__real.mmap(NULL, mms__config.log_limit, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
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
	h->call_stack_depth = mms__config.call_stack;
	h->events_mask = mms__config.events;
	h->file_limit = mms__config.log_limit;
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
	mms__real.munmap(log_base, mms__config.log_limit);
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
		mms__real.munmap(log_base, mms__config.log_limit);
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
	log_trimmed = 0;
	mms__pager_after_fork_child();
	mms__threads_after_fork_child();
	mms__intern_init();
	mms__releasers_reset();
	mms__stamp_after_fork_child();
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
