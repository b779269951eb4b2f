/* SPDX-License-Identifier: MIT */
/* watch.c: the recording half of --watch and msmemscope_watch(): the set
 * of watched blocks, their checksums (WATCH BEFORE/AFTER records) at every
 * operator launch boundary, and with full-content their bytes in
 * {run folder}/watch_dump/.
 *
 * --watch=[START[:outN],]END[,full-content]: when a launch of START ends,
 * its outputs become watched: the blocks it allocated (recorded
 * allocations) and still holds, then the blocks it declared written with
 * msmemscope_access(ptr, size, MSMEMSCOPE_WRITE), in that order, numbered
 * from 0 (outN keeps output N only). They get an `after` sum at the end of
 * START, a `before` and an `after` sum around every later launch (any
 * operator, any thread), and a last `after` sum when a launch of END
 * ends; then they leave the set, and the next launch of START begins a new
 * range. Blocks registered with msmemscope_watch() are in the set from the
 * call until their memory is released, and are summed the same way at
 * every launch. A watched block that is freed (or unmapped) leaves the set
 * before its memory goes.
 *
 * Cost: at each operator boundary, a lock and a CRC of each watched block
 * (plus, with full-content, one file written per block); nothing when the
 * set is empty and no --watch is given. Where the kernel tells which pages
 * were written (dirty.c, Linux 6.7), a block of 8 pages or more keeps its
 * last CRC while none of its pages was written and its bytes outside them
 * are unchanged: a look (a system call, or none in a one-thread process
 * between launches sooner than a write-protect fault) instead of reading
 * the block. On the allocator paths, one
 * thread-local load (collecting START's outputs) and one relaxed load of
 * the set's size at each release. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc64-clmul.h"
#include "hooks-int.h"
#include "log.h"
#include "stamp.h"

#define WATCH_SET_MAX 64  /* watched blocks at once */
#define WATCH_OUTS_MAX 32 /* outputs one START launch collects */
#define WATCH_NAME_MAX MMS_WATCH_NAME_MAX

struct watch_block {
	uint64_t addr, size;
	uint32_t out; /* output number, 0 for an API watch */
	int api;      /* registered by msmemscope_watch() */
	char name[WATCH_NAME_MAX];
	/* Where the kernel tracks its pages (dirty.c): the last checksum,
	 * valid while no tracked page was written and the bytes outside the
	 * tracked pages (a copy in `edges`, of our own) are the same. */
	struct mms_dirty dirty;
	uint8_t *edges;
	uint64_t crc;
	int crc_ok;
	uint32_t looks, written; /* looks over the last DIRTY_SPAN, and those that found pages written */
};

/* --watch: the configuration's watch key. */
static const struct mms_config_watch *const spec = &mms__config.watch;
static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watch_block set[WATCH_SET_MAX];
static unsigned nset;
static int range_open;  /* START has ended, END has not */
static int dump_failed; /* a .bin could not be written: dumping stopped */
static int set_full_warned;
static char dump_dir[4096]; /* {run folder}/watch_dump, "" when unknown */
static uint64_t crc_table[8][256];
#if defined(__x86_64__)
static struct mms_crc64_clmul clmul;
#endif

/* The number of watched blocks, read without the lock on the release path. */
uint32_t mms__watch_live;

/* The outputs of the START launch this thread is in (depth: its level). */
struct watch_outs {
	uint32_t depth;      /* the thread's open launches */
	uint32_t collect_at; /* depth of the START launch being collected, 0 = none */
	uint32_t n;
	struct {
		uint64_t addr, size;
	} b[WATCH_OUTS_MAX];
};
static __thread struct watch_outs outs;

static void warn_once(const char *what, int err)
{
	char buf[512];
	int n = snprintf(buf, sizeof buf, "msmemscope: warning: %s: %s\n", what, strerror(err));

	mms__say(buf, n, sizeof buf);
}

static void copy_name(char *dst, const char *s, size_t len)
{
	if (len >= WATCH_NAME_MAX)
		len = WATCH_NAME_MAX - 1;
	memcpy(dst, s, len);
	dst[len] = 0;
}

void mms__watch_init(void)
{
	mms_crc64_table(crc_table);
#if defined(__x86_64__)
	mms_crc64_clmul_init(&clmul);
#endif
}

/* CRC-64/XZ of a watched block. */
static uint64_t block_crc(const struct watch_block *w)
{
	const void *p = (const void *)(uintptr_t)w->addr;

#if defined(__x86_64__)
	return mms_crc64_clmul(&clmul, (const uint64_t(*)[256])crc_table, 0, p, (size_t)w->size);
#else
	return mms_crc64((const uint64_t(*)[256])crc_table, 0, p, (size_t)w->size);
#endif
}

/* The bytes of w outside its tracked pages: before, then after them. */
static size_t edge_head(const struct watch_block *w)
{
	return (size_t)(w->dirty.lo > w->addr ? w->dirty.lo - w->addr : 0);
}

static size_t edge_tail(const struct watch_block *w)
{
	return (size_t)(w->dirty.hi < w->addr + w->size ? w->addr + w->size - w->dirty.hi : 0);
}

/* Starts tracking w's whole pages (a page it shares with other data is
 * left out: their writes would cost faults), where the bytes outside the
 * tracked pages fit in the two pages of ours that keep their copy. */
static void block_track(struct watch_block *w)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t lo = (w->addr + page - 1) & ~(page - 1), hi = (w->addr + w->size) & ~(page - 1);

	w->edges = NULL;
	w->crc_ok = 0;
	w->looks = w->written = 0;
	w->dirty.hi = 0;
	if (hi <= lo || mms__dirty_track(&w->dirty, (uintptr_t)lo, (size_t)(hi - lo)))
		return;
	if (edge_head(w) + edge_tail(w) > 2 * page || !(w->edges = mms__map_anon((size_t)(2 * page))))
		mms__dirty_untrack(&w->dirty);
}

static void block_untrack(struct watch_block *w)
{
	mms__dirty_untrack(&w->dirty);
	if (w->edges)
		mms__unmap_own(w->edges, (size_t)(2 * sysconf(_SC_PAGESIZE)));
	w->edges = NULL;
	w->crc_ok = 0;
}

/* The CRC of w: the last one while nothing of it changed. */
static uint64_t watched_crc(struct watch_block *w)
{
	struct mms_dirty_run runs[DIRTY_RUNS];
	const uint8_t *p = (const uint8_t *)(uintptr_t)w->addr;
	size_t head, tail;
	int n;

	if (!w->dirty.hi)
		return block_crc(w);
	n = mms__dirty_scan(&w->dirty, runs, DIRTY_RUNS);
	if (!w->dirty.hi) {
		block_untrack(w); /* tracking lost */
		return block_crc(w);
	}
	head = edge_head(w);
	tail = edge_tail(w);
	if (n == 0 && w->crc_ok && !memcmp(w->edges, p, head) && !memcmp(w->edges + head, p + w->size - tail, tail))
		return w->crc;
	w->written += n != 0;
	if (++w->looks == DIRTY_SPAN) {
		if (w->written * DIRTY_SHARE > DIRTY_SPAN) {
			block_untrack(w);
			return block_crc(w);
		}
		w->looks = w->written = 0;
	}
	/* The edges copied before the sum: a write between the two makes
	 * the next look sum again. */
	memcpy(w->edges, p, head);
	memcpy(w->edges + head, p + w->size - tail, tail);
	w->crc = block_crc(w);
	w->crc_ok = 1;
	return w->crc;
}

void mms__watch_set_log(const char *log_path)
{
	const char *slash = log_path ? strrchr(log_path, '/') : NULL;

	dump_dir[0] = 0;
	if (slash && (size_t)(slash - log_path) + sizeof "/watch_dump" < sizeof dump_dir) {
		memcpy(dump_dir, log_path, (size_t)(slash - log_path));
		memcpy(dump_dir + (slash - log_path), "/watch_dump", sizeof "/watch_dump");
	}
}

/* Adds a block to the set (under the lock). */
static void set_add(uint64_t addr, uint64_t size, const char *name, uint32_t out, int api)
{
	struct watch_block *w;

	if (!size)
		return;
	if (nset == WATCH_SET_MAX) {
		if (!set_full_warned++)
			warn_once("more than 64 watched blocks; the others are not watched", ENOSPC);
		return;
	}
	w = &set[nset++];
	w->addr = addr;
	w->size = size;
	w->out = out;
	w->api = api;
	copy_name(w->name, name ? name : "", name ? strlen(name) : 0);
	block_track(w);
	__atomic_store_n(&mms__watch_live, nset, __ATOMIC_RELAXED);
}

static void set_remove(unsigned i)
{
	block_untrack(&set[i]);
	memmove(&set[i], &set[i + 1], (nset - i - 1) * sizeof set[0]);
	nset--;
	__atomic_store_n(&mms__watch_live, nset, __ATOMIC_RELAXED);
}

/* A file name part (mms_file_char). */
static size_t put_safe(char *dst, size_t cap, const char *s)
{
	size_t n = 0;

	for (; *s && n + 1 < cap; s++, n++)
		dst[n] = mms_file_char(*s);
	dst[n] = 0;
	return n;
}

/* Writes the bytes of w to {dump_dir}/host_{tid}/{op}_{launch}-{name}_{out}_{phase}.bin.
 * The first failure stops all dumping, with one warning. */
static void dump_block(const struct watch_block *w, const char *op, uint64_t launch, int after)
{
	/* Static: under the set's lock, and 5 KiB the stack of a thread
	 * with a small one may not have. */
	static char path[4096 + 512], opn[WATCH_NAME_MAX], wn[WATCH_NAME_MAX];
	const uint8_t *p = (const uint8_t *)(uintptr_t)w->addr;
	uint64_t left = w->size;
	struct mms_quiet q;
	int n, fd, err = 0;

	if (dump_failed || !dump_dir[0])
		return;
	put_safe(opn, sizeof opn, op);
	put_safe(wn, sizeof wn, w->name);
	if (mkdir(dump_dir, 0750) < 0 && errno != EEXIST)
		err = errno;
	n = snprintf(path, sizeof path, "%s/host_%ld", dump_dir, (long)gettid());
	if (!err && mkdir(path, 0750) < 0 && errno != EEXIST)
		err = errno;
	snprintf(path + n, sizeof path - (size_t)n, "/%s_%llu-%s_%u_%s.bin", opn, (unsigned long long)launch, wn,
		 w->out, after ? "after" : "before");
	fd = err ? -1 : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0 && !err)
		err = errno;
	/* Quietly: past the program's file size limit, a write fails with
	 * EFBIG rather than kill it with SIGXFSZ. */
	mms__quiet_begin(&q);
	while (fd >= 0 && left) {
		ssize_t k = write(fd, p, left > (1u << 30) ? (1u << 30) : (size_t)left);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			err = k < 0 ? errno : ENOSPC;
			break;
		}
		p += k;
		left -= (uint64_t)k;
	}
	mms__quiet_end(&q);
	if (fd >= 0 && close(fd) < 0 && !err)
		err = errno;
	if (err) {
		dump_failed = 1;
		warn_once("--watch full-content: cannot write the watch_dump files, no more are written", err);
	}
}

/* Sums (and dumps) every watched block for the launch now open on this
 * thread; `after`: at its end. Under the lock. */
static void sum_all(struct mms_thread *t, int after)
{
	uint64_t launch;
	const char *op;

	if (!nset || (!t && !spec->full_content) || !mms__gdb_current(&launch, &op))
		return; /* nothing to record, or no launch open */
	for (unsigned i = 0; i < nset; i++) {
		struct watch_block *w = &set[i];
		uint64_t crc = watched_crc(w);
		uint8_t *p;

		if (t && (p = mms__rec_begin(t, 1 + 7 * 10))) {
			p = mms__rec_head(t, p, (uint8_t)(MMS_TAG_WATCH | (after ? MMS_WATCH_AFTER : MMS_WATCH_BEFORE)),
					  mms__stamp_obtain());
			p = mms__rec_addr(t, p, w->addr);
			p = mms_put_u(p, w->size);
			p = mms_put_u(p, mms__intern_string(t, w->name));
			p = mms_put_u(p, w->out);
			p = mms_put_u(p, launch);
			p = mms_put_u(p, crc);
			mms__rec_commit(t, p);
		}
		if (spec->full_content)
			dump_block(w, op, launch, after);
	}
}

static int is_op(const char *want, const char *name)
{
	return want[0] && name && !strncmp(want, name, WATCH_NAME_MAX - 1) && strlen(name) < WATCH_NAME_MAX;
}

/* After the OP_BEGIN record of `name` (inside the guard; t may be NULL
 * when nothing is recorded). */
void mms__watch_op_begin(struct mms_thread *t, const char *name)
{
	int saved_errno = errno;

	outs.depth++;
	if (spec->on && !outs.collect_at && is_op(spec->start, name)) {
		outs.collect_at = outs.depth;
		outs.n = 0;
		mms__tls_watch_collect = 1;
	}
	if (__atomic_load_n(&mms__watch_live, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&set_lock);
		sum_all(t, 0);
		pthread_mutex_unlock(&set_lock);
	}
	errno = saved_errno;
}

/* Before the OP_END record of the launch now ending. */
void mms__watch_op_end(struct mms_thread *t)
{
	int saved_errno = errno, starting = 0, ending;
	uint64_t launch;
	const char *op = NULL;

	if (!outs.depth)
		return;
	/* The lock only when START ends here or something is watched (an END
	 * that ends with nothing watched has nothing to clear). */
	if (outs.collect_at == outs.depth || __atomic_load_n(&mms__watch_live, __ATOMIC_RELAXED)) {
		if (!mms__gdb_current(&launch, &op))
			op = NULL;
		pthread_mutex_lock(&set_lock);
		if (outs.collect_at == outs.depth) {
			/* START ends: a new range begins with its outputs. */
			for (unsigned i = nset; i-- > 0;)
				if (!set[i].api)
					set_remove(i);
			for (uint32_t k = 0; k < outs.n; k++)
				if (spec->out < 0 || (uint32_t)spec->out == k)
					set_add(outs.b[k].addr, outs.b[k].size, spec->start, k, 0);
			range_open = 1;
			starting = 1;
			outs.collect_at = 0;
			mms__tls_watch_collect = 0;
		}
		ending = range_open && !starting && is_op(spec->end, op);
		sum_all(t, 1);
		if (ending) {
			for (unsigned i = nset; i-- > 0;)
				if (!set[i].api)
					set_remove(i);
			range_open = 0;
		}
		pthread_mutex_unlock(&set_lock);
	}
	outs.depth--;
	errno = saved_errno;
}

/* A block obtained, or declared written, inside a START launch. */
void mms__watch_note(uint64_t addr, uint64_t size)
{
	if (!outs.collect_at || !size)
		return;
	for (uint32_t k = 0; k < outs.n; k++)
		if (outs.b[k].addr == addr) {
			if (size > outs.b[k].size)
				outs.b[k].size = size;
			return;
		}
	if (outs.n < WATCH_OUTS_MAX) {
		outs.b[outs.n].addr = addr;
		outs.b[outs.n].size = size;
		outs.n++;
	}
}

/* msmemscope_watch() of a range it cannot read: said once. */
void mms__watch_unreadable(const void *ptr, size_t size, const char *name)
{
	static int said;
	char what[160];

	if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		return;
	snprintf(what, sizeof what, "msmemscope_watch(%p, %zu, \"%.40s\"): not watched, the range is not readable", ptr,
		 size, name ? name : "");
	warn_once(what, EFAULT);
}

/* msmemscope_watch(). */
void mms__watch_api(const void *ptr, size_t size, const char *name)
{
	pthread_mutex_lock(&set_lock);
	set_add((uintptr_t)ptr, size, name, 0, 1);
	pthread_mutex_unlock(&set_lock);
}

/* [lo, hi) is about to be released (hi 0: lo is a malloc'd block). */
void mms__watch_release_slow(uintptr_t lo, uintptr_t hi)
{
	int saved_errno = errno;

	if (!hi && !(hi = mms__block_end(lo)))
		goto out; /* not a block: libc will say what it thinks of it */
	if (outs.collect_at) {
		for (uint32_t k = outs.n; k-- > 0;)
			if (outs.b[k].addr < hi && lo < outs.b[k].addr + outs.b[k].size) {
				memmove(&outs.b[k], &outs.b[k + 1], (outs.n - k - 1) * sizeof outs.b[0]);
				outs.n--;
			}
	}
	if (__atomic_load_n(&mms__watch_live, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&set_lock);
		for (unsigned i = nset; i-- > 0;)
			if (set[i].addr < hi && lo < set[i].addr + set[i].size)
				set_remove(i);
		pthread_mutex_unlock(&set_lock);
	}
out:
	errno = saved_errno;
}

/* In a fork child: only the forking thread lives; its launches go on. */
void mms__watch_after_fork_child(void)
{
	pthread_mutex_init(&set_lock, NULL);
}
