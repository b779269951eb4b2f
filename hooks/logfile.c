/* SPDX-License-Identifier: MIT */
/* logfile.c: the log file: grown in extents, cut into per-thread chunks,
 * mapped shared a group of chunks at a time while threads write into them,
 * so records are stores into memory and never syscalls; its header and
 * the process's metadata, the cut when recording stops, and a fork child's
 * log.
 *
 * The log reserves no address space ahead: only its header and the groups
 * of the chunks in use (one per recording thread, and the few kept for the
 * next threads) are mapped, each group unmapped when its chunks are done
 * with. A program that limits its
 * address space (RLIMIT_AS: ulimit -v, or setrlimit at any time, as
 * sandboxes and test harnesses do) then finds the recorder using a few
 * MiB of it, not the log's size (a reservation of the whole log, 64 GiB by
 * default, made every allocation of a program that set a 2 GB limit
 * fail). */
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
#include "objects.h"
#include "stamp.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

struct mms_file_header *mms__header;

static int log_fd = -1;
static uint64_t log_grown;       /* atomic: bytes the file was grown to */
static void *log_head;           /* the header's mapping */
static uint32_t chunk_size = MMS_CHUNK_SIZE_DEFAULT;
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_trimmed;          /* trim_file ran: the file may end before
                                    chunks mapped earlier */
/* Atomic: the chunk numbers handed out. The header's nchunks counts only
 * those the file holds: a chunk is counted there once the file was grown
 * to hold it (under grow_lock), so a reader never finds one counted past
 * the file's end, not even when the process ends between the two (a
 * thread that took a chunk as the program exited: the file then read as
 * cut, "the file ends after 42 of the 44 chunks its header counts", 3 runs
 * in 12 of a program that exits while its threads allocate). */
static uint64_t chunks_taken;
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

/* Chunks are mapped a group at a time: GROUP_CHUNKS chunks of the file
 * (1 MiB), from an index that is a multiple of it, in one mapping, which
 * is unmapped once every chunk of it was handed out and dropped: one mmap
 * and one munmap per group, not per chunk (an munmap flushes the TLB of
 * every CPU the process runs on: the dear part). The groups mapped, under
 * grow_lock; a fork child unmaps its parent's. */
#define GROUP_CHUNKS 16u
struct chunk_group {
	uint64_t first;    /* its first chunk's index */
	uint8_t *base;     /* its mapping */
	uint32_t n;        /* chunks it maps (fewer than GROUP_CHUNKS at a limit) */
	uint32_t dropped;  /* chunks of it dropped */
	uint32_t pins;     /* the log thread is faulting its pages in */
};
static struct chunk_group *groups;
static size_t ngroups, groups_cap;

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

/* Why the log stopped (or could not start), in words. */
static const char *why_words(int err)
{
	const char *w = mms_cut_words(err);

	return w ? w : err == ENOSPC ? "the disk is full" : strerror(err);
}

/* One line on stderr, when recording stops (the log says so too), unless
 * the user asked for errors only. */
static void say_cut(int err)
{
	/* Static: said once (the caller's flag), and the thread may have a
	 * small stack with little of it left. */
	static char buf[PATH_MAX + 256];
	const char *why = why_words(err);
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

/* Makes the file at least `need` bytes long. Called with grow_lock held.
 * Returns 0, an errno value or MMS_CUT_FSIZE. */
static int grow_locked(uint64_t need)
{
	uint64_t mapped = __atomic_load_n(&log_grown, __ATOMIC_ACQUIRE);

	while (mapped < need) {
		/* Double the file each time, from 256 KiB: small processes
		 * get small logs, and a large log grows in few steps. */
		uint64_t step = mapped, fsize = mms__fsize_limit(), cap = mms__config.log_limit;
		int err, limit_err = EFBIG;
		struct mms_quiet q;

		if (step < (256u << 10) || log_trimmed)
			step = 256u << 10; /* after the trim: a few late events */
		if (step > (256u << 20))
			step = 256u << 20;
		/* The log stops at its own limit, and short of the program's
		 * file size limit: a file grown past it would get the program
		 * SIGXFSZ (in whole pages: the file is mapped). Short of need
		 * otherwise, it grows again: threads that took chunks at once
		 * may need more than one doubling. */
		if (fsize != UINT64_MAX && fsize < mms__config.log_limit) {
			uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

			cap = fsize / page * page;
			limit_err = MMS_CUT_FSIZE;
		}
		if (mapped + step > cap)
			step = cap > mapped ? cap - mapped : 0;
		if (!step)
			return limit_err;
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
		mapped += step;
		__atomic_store_n(&log_grown, mapped, __ATOMIC_RELEASE);
	}
	return 0;
}

/* Maps len bytes of the file at off, shared, with grow_lock held (the
 * descriptor may move under a dup2 of the program's, fds.c): NULL with
 * *err set when it cannot. An address space the program limited that has
 * no room left for it is MMS_CUT_ADDRSPACE. */
static void *map_locked(uint64_t off, size_t len, int flags, int *err)
{
	void *p;

	if (!mms__fd_still_ours(log_fd)) {
		*err = MMS_CUT_DESCRIPTOR;
		return NULL;
	}
	p = mms__real.mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | flags, log_fd, (off_t)off);
	if (p != MAP_FAILED) {
		mms__own_add(p, len);
		return p;
	}
	*err = errno == ENOMEM && mms__as_limited() ? MMS_CUT_ADDRSPACE : errno;
	return NULL;
}

/* A group that maps any of the n chunks from first (n = 1: the group of
 * chunk first), or NULL. With grow_lock held. */
static struct chunk_group *group_over(uint64_t first, uint64_t n)
{
	for (size_t i = ngroups; i-- > 0;)
		if (groups[i].first < first + n && first < groups[i].first + groups[i].n)
			return &groups[i];
	return NULL;
}

static struct chunk_group *group_of(uint64_t idx)
{
	return group_over(idx, 1);
}

/* Maps a group for chunk idx, the whole group when the file can be grown
 * to hold it, else idx's chunk alone. With grow_lock held; NULL with *err
 * set when it cannot. */
static struct chunk_group *group_map(uint64_t idx, int *err)
{
	uint64_t first = idx - idx % GROUP_CHUNKS, n = GROUP_CHUNKS;
	struct chunk_group *g;
	void *base;

	/* Part of idx's aligned group mapped already (a limit stopped it,
	 * and was lifted since): idx's chunk alone, so that no chunk is in
	 * two groups (one of them would never see it dropped). */
	if (group_over(first, n) || grow_locked(MMS_HEADER_SIZE + (first + n) * chunk_size)) {
		first = idx;
		n = 1;
		*err = grow_locked(MMS_HEADER_SIZE + (first + n) * chunk_size);
		if (*err)
			return NULL;
	}
	if (ngroups == groups_cap) {
		size_t cap = groups_cap ? 2 * groups_cap : 256;
		struct chunk_group *ng = mms__map_anon(cap * sizeof *ng);

		if (!ng) {
			*err = ENOMEM;
			return NULL;
		}
		if (ngroups)
			memcpy(ng, groups, ngroups * sizeof *ng);
		if (groups)
			mms__unmap_own(groups, groups_cap * sizeof *groups);
		groups = ng;
		groups_cap = cap;
	}
	base = map_locked(MMS_HEADER_SIZE + first * chunk_size, (size_t)(n * chunk_size), 0, err);
	if (!base)
		return NULL;
	g = &groups[ngroups++];
	g->first = first;
	g->base = base;
	g->n = (uint32_t)n;
	g->dropped = 0;
	g->pins = 0;
	return g;
}

/* Unmaps g when every chunk of it was dropped and nothing pins it. With
 * grow_lock held. */
static void group_done(struct chunk_group *g)
{
	if (g->dropped < g->n || g->pins)
		return;
	mms__unmap_own(g->base, (size_t)g->n * chunk_size);
	*g = groups[--ngroups];
}

/* A chunk no thread writes into any more, and not kept: its group goes
 * when it was the group's last. */
static void chunk_drop(struct mms_chunk_header *ch)
{
	uint8_t *p = (uint8_t *)ch;

	pthread_mutex_lock(&grow_lock);
	for (size_t i = ngroups; i-- > 0;) {
		struct chunk_group *g = &groups[i];

		if ((uint64_t)(p - g->base) < (uint64_t)g->n * chunk_size) {
			g->dropped++;
			group_done(g);
			break;
		}
	}
	pthread_mutex_unlock(&grow_lock);
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
	uint64_t end = off + len, idx;
	int rc = 0;

	/* The groups of the chunks to come are mapped here, ahead, and
	 * their pages faulted in outside the lock, each group pinned
	 * meanwhile: the program's threads wait for the mappings only. */
	if (off < MMS_HEADER_SIZE)
		off = MMS_HEADER_SIZE;
	for (idx = (off - MMS_HEADER_SIZE) / chunk_size; !rc && MMS_HEADER_SIZE + idx * chunk_size < end;) {
		struct chunk_group *g;
		uint64_t g_off, g_end, from, to, first = 0;
		uint8_t *base = NULL;
		int err = 0;

		pthread_mutex_lock(&grow_lock);
		g = log_trimmed ? NULL : group_of(idx);
		if (!g && !log_trimmed)
			g = group_map(idx, &err);
		if (g) {
			g->pins++;
			base = g->base;
			first = g->first;
			g_off = MMS_HEADER_SIZE + first * chunk_size;
			g_end = g_off + (uint64_t)g->n * chunk_size;
		}
		pthread_mutex_unlock(&grow_lock);
		if (!g)
			return -1;
		from = off > g_off ? off : g_off;
		to = end < g_end ? end : g_end;
		rc = mms__advise(base + (from - g_off), (size_t)(to - from), MADV_POPULATE_WRITE);
		pthread_mutex_lock(&grow_lock);
		/* Found again: the registry may have moved. */
		g = group_of(first);
		if (g) {
			g->pins--;
			group_done(g);
		}
		pthread_mutex_unlock(&grow_lock);
		idx = (g_end - MMS_HEADER_SIZE) / chunk_size;
	}
	return rc ? -1 : 0;
}

static struct mms_chunk_header *chunk_new(void)
{
	uint64_t idx = __atomic_fetch_add(&chunks_taken, 1, __ATOMIC_SEQ_CST);
	uint64_t off = MMS_HEADER_SIZE + idx * chunk_size;
	struct mms_chunk_header *ch = NULL;
	struct chunk_group *g;
	uint64_t grown;
	int err = 0;

	pthread_mutex_lock(&grow_lock);
	grown = log_grown;
	g = group_of(idx);
	if (!g)
		g = group_map(idx, &err);
	/* After the trim at exit, the file may end before a chunk mapped
	 * earlier: grown again. */
	if (g && (log_trimmed || off + chunk_size > log_grown))
		err = grow_locked(off + chunk_size);
	if (g && !err) {
		ch = (struct mms_chunk_header *)(g->base + (idx - g->first) * chunk_size);
		/* Counted now that the file holds it (chunks taken later by
		 * other threads may be counted first). */
		if (__atomic_load_n(&mms__header->nchunks, __ATOMIC_RELAXED) < idx + 1)
			__atomic_store_n(&mms__header->nchunks, idx + 1, __ATOMIC_SEQ_CST);
	}
	if (log_grown != grown)
		refresh_time_pair();
	pthread_mutex_unlock(&grow_lock);
	if (!ch) {
		mms__log_cut(err);
		return NULL;
	}
	/* Fault the chunk's pages in with one call here rather than one trap
	 * per page on the hot path (kernels before 5.14 refuse; no matter),
	 * unless the log thread did. */
	if (!mms__pager_ready(off + chunk_size))
		mms__advise(ch, chunk_size, MADV_POPULATE_WRITE);
	mms__pager_poke(off + chunk_size);
	ch->magic = MMS_CHUNK_MAGIC;
	return ch;
}

static struct mms_chunk_header *chunk_take(size_t len)
{
	struct mms_chunk_header *ch = NULL, *full;

	pthread_mutex_lock(&free_lock);
	while (nfree_chunks && !ch) {
		ch = free_chunks[--nfree_chunks];
		if (chunk_size - sizeof *ch - ch->used < len + 32) {
			/* Too full for this record: left, unmapped. */
			full = ch;
			ch = NULL;
			pthread_mutex_unlock(&free_lock);
			chunk_drop(full);
			pthread_mutex_lock(&free_lock);
		}
	}
	pthread_mutex_unlock(&free_lock);
	return ch ? ch : chunk_new();
}

void mms__chunk_leave(struct mms_thread *t)
{
	struct mms_chunk_header *drop = NULL;

	pthread_mutex_lock(&free_lock);
	if (t->chunk && t->end - t->cur >= 1024 && nfree_chunks < FREE_CHUNKS)
		free_chunks[nfree_chunks++] = t->chunk;
	else
		drop = t->chunk;
	t->chunk = NULL;
	pthread_mutex_unlock(&free_lock);
	if (drop)
		chunk_drop(drop);
}

static int chunk_switch(struct mms_thread *t, size_t len)
{
	struct mms_chunk_header *ch = chunk_take(len);
	uint8_t *p;

	if (!ch)
		return -1;
	/* The chunk it leaves is full: no one writes there again. */
	if (t->chunk)
		chunk_drop(t->chunk);
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
	uint8_t *p = mms__meta_begin(t, tag, len);

	if (!p)
		return;
	memcpy(p, buf, len);
	mms__rec_commit(t, p + len);
}

/* Encoded in place: no copy of a value of up to MMS_MAX_STRING bytes. */
static void write_meta_kv(struct mms_thread *t, const char *key, const void *val, size_t len)
{
	size_t klen = strlen(key);
	uint8_t *p = mms__meta_begin(t, MMS_TAG_META, 2 * 10 + klen + len);

	if (!p)
		return;
	p = mms_put_s(p, key, klen);
	p = mms_put_s(p, val, len);
	mms__rec_commit(t, p);
}

/* The process's executable, its arguments and the configuration the
 * recorder uses, as the one writer of common/conf.c writes it. */
static void write_process_meta(struct mms_thread *t)
{
	/* Static: one thread opens the log at a time (mms__log_open), and its
	 * stack may be a small thread's (a fork child's first event). */
	static char buf[MMS_MAX_STRING];
	ssize_t n = (ssize_t)mms__self_exe(buf, sizeof buf);
	const char *own, *op;
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
	if (mms__own_malloc(buf, sizeof buf))
		write_meta_kv(t, MMS_META_OWN_MALLOC, buf, strlen(buf));
	own = mms__cxx_own(&op);
	if (own) {
		write_meta_kv(t, MMS_META_OWN_CXX, own, strlen(own));
		write_meta_kv(t, MMS_META_OWN_CXX_OP, op, strlen(op));
	}
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

/* One line on stderr: this process's log could not be made (what, err,
 * and a hint), so it runs unrecorded, which no report would otherwise
 * mention. */
static void say_not_recording(const char *what, int err, const char *hint)
{
	static char buf[PATH_MAX + 512], exe[256]; /* as write_process_meta's */
	int n;

	if (mms__config.log_level == MMS_CONFIG_LOG_ERROR)
		return;
	n = snprintf(buf, sizeof buf, "msmemscope: not recording pid %d (%s): %s %s: %s%s\n", (int)getpid(),
		     mms__self_exe(exe, sizeof exe) ? exe : "?", what, log_path, why_words(err), hint);
	mms__say(buf, n, sizeof buf);
}

/* Most often a process that took another user's identity (a server's
 * workers, su) under a folder its new user may not write. */
static void say_not_created(int err)
{
	say_not_recording("cannot create", err,
			  err == EACCES || err == EPERM ? " (its user may not write that folder)" : "");
}

/* Opens the log and writes its header and the process's metadata. Called
 * once, inside the reentrancy guard. Returns 0, or -1 with recording off.
 * Its system calls may set errno: mms__log_open() keeps the program's. */
static int log_open(void)
{
	struct mms_file_header *h;
	struct mms_thread *t;
	int execed, err;

	/* The program sandboxed itself before the recorder started (a
	 * constructor's seccomp filter, process.c): no log, no system call. */
	if (mms__hands_off_now())
		return -1;
	mms__gdb_set_log(NULL);
	mms__watch_set_log(NULL);
	log_fd = mms__logname_open(log_path, fork_child, &execed, &log_created);
	if (log_fd < 0) {
		if (errno)
			say_not_created(errno);
		return -1;
	}
	/* Out of the program's way: the top of the descriptor range,
	 * unseen by its close and dup (fds.c). */
	if (mms__fd_adopt(log_fd, &log_fd, &grow_lock) < 0) {
		log_fd = -1;
		if (log_created)
			unlink(log_path);
		return -1;
	}
	log_grown = 0;
	chunks_taken = 0;
	pthread_mutex_lock(&grow_lock);
	err = grow_locked(MMS_HEADER_SIZE + chunk_size);
	log_head = err ? NULL : map_locked(0, MMS_HEADER_SIZE, 0, &err);
	pthread_mutex_unlock(&grow_lock);
	if (!log_head)
		goto fail;
	h = log_head;
	h->version = MMS_FORMAT_VERSION;
	h->header_size = MMS_HEADER_SIZE;
	h->chunk_size = chunk_size;
	h->clock = mms__clock_tsc ? MMS_CLOCK_TSC : MMS_CLOCK_COUNTER;
	h->flags = (execed ? MMS_FLAG_EXECED : 0) | (fork_child ? MMS_FLAG_FORKED : 0);
	h->pid = (uint64_t)getpid();
	/* A fork child's log may be opened after its parent is gone. */
	h->ppid = fork_child && fork_from.pid ? fork_from.pid : (uint64_t)getppid();
	mms__proc_identity(&h->proc_start, &h->pid_ns);
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
	if (fork_child)
		mms__api_collect_note(t);
	return 0;

fail:
	mms__fd_release(log_fd);
	if (log_created)
		unlink(log_path); /* ours and empty: leave nothing behind */
	log_fd = -1;
	say_not_recording("cannot set up its log", err, "");
	return -1;
}

int mms__log_open(void)
{
	int saved = errno, rc = log_open();

	errno = saved;
	return rc;
}

/* Gives back the space reserved past the last chunk, so a finished log is
 * no larger than what it holds. A chunk taken later (a free in a later
 * destructor, a thread still running) grows the file again: chunk_new sees
 * log_trimmed, and either its number was taken before this read
 * chunks_taken (the file keeps its room), or it takes the lock and finds
 * log_grown already lowered. */
static void trim_file(void)
{
	uint64_t end;

	__atomic_store_n(&log_trimmed, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&grow_lock);
	/* Every chunk handed out, counted or not yet: none being written is
	 * cut off. */
	end = MMS_HEADER_SIZE + __atomic_load_n(&chunks_taken, __ATOMIC_SEQ_CST) * chunk_size;
	if (end < log_grown && mms__fd_still_ours(log_fd) && ftruncate(log_fd, (off_t)end) == 0)
		__atomic_store_n(&log_grown, end, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&grow_lock);
}

void mms__log_trim(void)
{
	if (mms__active && mms__header && !mms__hands_off_now())
		trim_file();
}

void mms__log_finish(void)
{
	struct mms_thread *t;

	if (!mms__active || !mms__header || mms__hands_off_now())
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
		/* The parent's mappings: its header, and the chunks its
		 * threads (here, only this one is left) wrote into. */
		mms__unmap_own(log_head, MMS_HEADER_SIZE);
		for (size_t i = 0; i < ngroups; i++)
			mms__unmap_own(groups[i].base, (size_t)groups[i].n * chunk_size);
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
	ngroups = 0;
	log_head = NULL;
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
