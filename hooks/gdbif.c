/* SPDX-License-Identifier: MIT */
/* gdbif.c: the program's half of the gdb interface (gdbif.h): the
 * descriptor gdb writes, the checks at operator launch boundaries and step
 * starts, and the empty function gdb breaks on.
 *
 * Cost when gdb has armed nothing: at each msmemscope_op_begin one relaxed
 * atomic add (the launch count gdb reads) and a push of (launch, name) on
 * the thread's operator stack, at each op_end a pop, and one relaxed load
 * of `armed` at each boundary and step start. The stack is kept always,
 * armed or not, so a watch armed in the middle of a launch still names the
 * right launch when it ends. The allocator paths are not touched at all.
 *
 * When armed, each boundary compares every armed watch with its snapshot
 * (memcmp) and calls msmemscope_gdb_stopped() once per block that changed.
 * Attribution:
 *  - at op_end, to the launch that is ending;
 *  - at op_begin, to the launch that encloses the new one on this thread
 *    (launches nest), or, at the outermost level, to no launch
 *    (op_launch 0) with op_name the last operator that ended on this
 *    thread ("" when none): the change happened between two launches.
 * A change made by another thread is found by the first thread that
 * crosses a boundary after it, and attributed with that thread's stack.
 *
 * Threads: a slot is compared by one thread at a time (a per-slot busy
 * flag taken with an atomic exchange); a thread that finds it taken waits,
 * yielding, rather than skip it: every thread then compares at each of its
 * own boundaries, so a change is found by the launch that made it even
 * when another thread was preempted while comparing. Stops are
 * serialized (the descriptor's report fields are shared): while one
 * thread is in a stop, every other thread that reaches a launch boundary
 * waits there, yielding, until the stop returned. Without that wait, the
 * others would run on for the milliseconds gdb takes to stop them, and
 * changes they made in that time would be reported as one, later. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "gdbif.h"
#include "hooks-int.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

MMS_EXPORT struct msmemscope_gdb msmemscope_gdb;

/* gdb keeps a breakpoint here. The barrier makes the descriptor's fields
 * written before the call, and the call itself, never optimized away. */
MMS_EXPORT __attribute__((noinline, used)) void msmemscope_gdb_stopped(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/* --- the thread's operator stack ------------------------------------------
 * In memory of our own, one page per thread that launches operators,
 * recycled when threads exit. Launches nested deeper than GDB_DEPTH are
 * counted; a change in one of them is attributed to the deepest launch
 * kept. */
#define GDB_DEPTH 24

struct gdb_frame {
	uint64_t launch;
	char name[MMS_GDB_NAME_MAX];
};

struct gdb_thread {
	uint32_t depth;          /* open launches, kept or not */
	struct gdb_thread *next_free;
	/* frame[depth] (when depth < GDB_DEPTH) is the last launch that
	 * ended at that level: at level 0, the last that ended on the thread. */
	struct gdb_frame frame[GDB_DEPTH];
};

static __thread struct gdb_thread *gdb_tls;
static pthread_key_t gdb_key;
static int gdb_key_ok;
static pthread_mutex_t gdb_free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gdb_thread *gdb_free;

/* Watch slots: one thread compares a slot at a time; the size and mapping
 * the block the snapshot was taken of (gdb may change the address or size
 * without a new generation: that re-arms too). */
static int slot_busy[MMS_GDB_WATCH_MAX];
static uint64_t slot_addr[MMS_GDB_WATCH_MAX], slot_size[MMS_GDB_WATCH_MAX];
static uint8_t *slot_map[MMS_GDB_WATCH_MAX]; /* snapshot, then previous */
static size_t slot_half[MMS_GDB_WATCH_MAX];   /* capacity of each */
static int slot_ok[MMS_GDB_WATCH_MAX];        /* the snapshot is valid */
/* The pages of the block the kernel tells written (dirty.c), and how many
 * it told over the last DIRTY_SPAN looks. */
static struct mms_dirty slot_dirty[MMS_GDB_WATCH_MAX];
static uint32_t slot_looks[MMS_GDB_WATCH_MAX];
static uint64_t slot_written[MMS_GDB_WATCH_MAX]; /* bytes of the pages written */
static uint32_t slot_edge[MMS_GDB_WATCH_MAX][2]; /* looks that found the first, last page written */
static int stop_busy;

static void gdb_thread_exit(void *arg)
{
	struct gdb_thread *g = arg;

	if (!g)
		return;
	gdb_tls = NULL;
	pthread_mutex_lock(&gdb_free_lock);
	g->next_free = gdb_free;
	gdb_free = g;
	pthread_mutex_unlock(&gdb_free_lock);
}

/* The calling thread's stack, made on its first launch (the slow path: a
 * lock, maybe an mmap). NULL when no memory can be had. */
static __attribute__((noinline)) struct gdb_thread *gdb_thread_new(void)
{
	int saved_errno = errno;
	struct gdb_thread *g;

	if (!mms__real.mmap)
		return NULL;
	pthread_mutex_lock(&gdb_free_lock);
	g = gdb_free;
	if (g)
		gdb_free = g->next_free;
	pthread_mutex_unlock(&gdb_free_lock);
	if (!g && !(g = mms__map_anon(sizeof *g))) {
		errno = saved_errno;
		return NULL;
	}
	memset(g, 0, sizeof *g);
	gdb_tls = g;
	if (gdb_key_ok)
		pthread_setspecific(gdb_key, g);
	errno = saved_errno;
	return g;
}

static void copy_name(char *dst, const char *name)
{
	size_t n = name ? strnlen(name, MMS_GDB_NAME_MAX - 1) : 0;

	memcpy(dst, name ? name : "", n);
	dst[n] = 0;
}

/* The launch a change found now belongs to, with its name; at op_begin
 * before the push, at op_end before the pop. */
static void attribution(const struct gdb_thread *g, uint64_t *launch, const char **name)
{
	*launch = 0;
	*name = "";
	if (!g)
		return;
	if (g->depth) {
		const struct gdb_frame *f = &g->frame[(g->depth < GDB_DEPTH ? g->depth : GDB_DEPTH) - 1];
		*launch = f->launch;
		*name = f->name;
	} else {
		*name = g->frame[0].name; /* the last launch that ended here */
	}
}

int mms__gdb_current(uint64_t *launch, const char **name)
{
	const struct gdb_thread *g = gdb_tls;

	if (!g || !g->depth)
		return 0;
	attribution(g, launch, name);
	return 1;
}

/* Whether name is one of the names of list: NUL-terminated names one
 * after the other, ended by an empty one or by the end of the field
 * (gdb's break_op; see gdbif.h). A name cut by the end of the field
 * matches nothing. */
static int op_listed(const char *list, const char *name)
{
	size_t at = 0;

	while (at < MMS_GDB_NAME_MAX && list[at]) {
		size_t n = strnlen(list + at, MMS_GDB_NAME_MAX - at);

		if (at + n < MMS_GDB_NAME_MAX && !strcmp(list + at, name))
			return 1;
		at += n + 1;
	}
	return 0;
}

/* --- stops ------------------------------------------------------------------ */

static void stop(uint32_t reason, uint32_t slot, uint64_t launch, const char *name)
{
	struct msmemscope_gdb *d = &msmemscope_gdb;

	mms__spin_lock(&stop_busy);
	d->reason = reason;
	d->hit_watch = slot;
	d->op_launch = launch;
	copy_name(d->op_name, name);
	d->step = mms__step_now();
	d->tid = (uint64_t)gettid();
	msmemscope_gdb_stopped();
	mms__spin_unlock(&stop_busy);
}

/* --- watches ---------------------------------------------------------------- */

/* Copies size bytes at addr into dst. Where the kernel cannot tell
 * whether the range is readable, it is read directly: gdb checked it when
 * it armed the watch. Returns 0 or -1. */
static int read_checked(void *dst, uint64_t addr, uint64_t size)
{
	int r = mms__peek(dst, (uintptr_t)addr, (size_t)size);

	if (r == -2) {
		memcpy(dst, (const void *)(uintptr_t)addr, (size_t)size);
		return 0;
	}
	return r;
}

/* --- equal or not -----------------------------------------------------------
 * Each boundary compares every armed watch with its snapshot, and nearly
 * always finds them equal: what costs is reading both, not finding where
 * they differ. With AVX2, 128 bytes a round are XORed and ORed into four
 * registers, tested once at the end: about 15% less time than memcmp()
 * for 64 KiB (its test after each round is what the loop leaves out).
 * Exact: any differing byte leaves a bit set. */
#if defined(__x86_64__)
#define DIFF_ROUND 128

__attribute__((target("avx2"))) static int differs_avx2(const uint8_t *a, const uint8_t *b, size_t n)
{
	__m256i x0 = _mm256_setzero_si256(), x1 = x0, x2 = x0, x3 = x0;
	size_t i = 0;

#define DIFF_XOR(o) _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(a + i + (o))), \
	                              _mm256_loadu_si256((const __m256i *)(b + i + (o))))
	for (; i + DIFF_ROUND <= n; i += DIFF_ROUND) {
		x0 = _mm256_or_si256(x0, DIFF_XOR(0));
		x1 = _mm256_or_si256(x1, DIFF_XOR(32));
		x2 = _mm256_or_si256(x2, DIFF_XOR(64));
		x3 = _mm256_or_si256(x3, DIFF_XOR(96));
	}
#undef DIFF_XOR
	x0 = _mm256_or_si256(_mm256_or_si256(x0, x1), _mm256_or_si256(x2, x3));
	if (!_mm256_testz_si256(x0, x0))
		return 1;
	return i < n && memcmp(a + i, b + i, n - i) != 0;
}

/* AVX2 in the CPU, and its registers saved by the kernel (XCR0). */
static int have_avx2(void)
{
	unsigned a, b, c, d, lo, hi;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX))
		return 0;
	__asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	if ((lo & 6) != 6)
		return 0;
	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2);
}
#endif

static int diff_avx2 = -1; /* unknown yet; set once, the same by any thread */

static int differs(const void *a, const void *b, size_t n)
{
#if defined(__x86_64__)
	int v = __atomic_load_n(&diff_avx2, __ATOMIC_RELAXED);

	if (unlikely(v < 0))
		__atomic_store_n(&diff_avx2, v = have_avx2(), __ATOMIC_RELAXED);
	if (v && n >= DIFF_ROUND)
		return differs_avx2(a, b, n);
#endif
	return memcmp(a, b, n) != 0;
}

/* --- written or not ---------------------------------------------------------
 * Where the kernel tracks the block's whole pages (dirty.c), a look asks
 * it which were written since the last and compares only those, and the
 * bytes before and after the tracked pages: about 0.3 us for 64 KiB, 0.18
 * ms for 1 GiB, where comparing takes 0.8 us and 130 ms. The first write to
 * a page after a look costs the program a page fault (about 2.3 us, the
 * cost of comparing some 150 KiB): a block with more than one byte in
 * DIRTY_SHARE of its tracked pages written at each look, over DIRTY_SPAN
 * looks, is compared instead from then on. */
/* Tells gdb how much of slot i's block the kernel tracks. */
static void publish_tracked(unsigned i)
{
	const struct mms_dirty *d = &slot_dirty[i];
	uint64_t lo = d->lo > slot_addr[i] ? d->lo : slot_addr[i];
	uint64_t hi = d->hi < slot_addr[i] + slot_size[i] ? d->hi : slot_addr[i] + slot_size[i];

	__atomic_store_n(&msmemscope_gdb.watch[i].tracked, d->hi && lo < hi ? hi - lo : 0, __ATOMIC_RELAXED);
}

/* Whether watch slot i's block (cur, size bytes) differs from its
 * snapshot. */
static int slot_changed(unsigned i, const uint8_t *cur, const uint8_t *snap, size_t size)
{
	struct mms_dirty *d = &slot_dirty[i];
	struct mms_dirty_run runs[DIRTY_RUNS];
	uintptr_t base = (uintptr_t)cur, end = base + size, page = (uintptr_t)getpagesize();
	int n, found;

	if (!d->hi)
		return differs(cur, snap, size);
	n = mms__dirty_scan(d, runs, DIRTY_RUNS);
	if (n < 0) {
		/* -2: more runs than room; -1: tracking lost. */
		found = differs(cur, snap, size);
		if (!d->hi) {
			publish_tracked(i);
			return found;
		}
		slot_written[i] += d->hi - d->lo;
	} else {
		/* The block's bytes outside the tracked pages, then its
		 * bytes in the pages written. */
		found = (d->lo > base && differs(cur, snap, d->lo - base)) ||
			(d->hi < end && differs(cur + (d->hi - base), snap + (d->hi - base), end - d->hi));
		for (int k = 0; k < n; k++) {
			uintptr_t lo = runs[k].start > base ? runs[k].start : base;
			uintptr_t hi = runs[k].end < end ? runs[k].end : end;

			slot_written[i] += runs[k].end - runs[k].start;
			/* The first or last page, shared with other data. */
			slot_edge[i][0] += d->lo < base && runs[k].start == d->lo;
			slot_edge[i][1] += d->hi > end && runs[k].end == d->hi;
			if (!found && lo < hi)
				found = differs(cur + (lo - base), snap + (lo - base), hi - lo);
		}
	}
	if (++slot_looks[i] == DIRTY_SPAN) {
		uintptr_t lo = d->lo, hi = d->hi;

		if (slot_written[i] * DIRTY_SHARE > DIRTY_SPAN * (uint64_t)(d->hi - d->lo)) {
			mms__dirty_untrack(d);
		} else {
			/* A shared page the neighbours keep writing is compared
			 * instead: each of their writes would cost a fault. */
			if (slot_edge[i][0] * DIRTY_SHARE > DIRTY_SPAN)
				lo += page;
			if (slot_edge[i][1] * DIRTY_SHARE > DIRTY_SPAN)
				hi -= page;
			if (lo != d->lo || hi != d->hi)
				mms__dirty_shrink(d, lo, hi);
		}
		publish_tracked(i);
		slot_looks[i] = 0;
		slot_written[i] = 0;
		slot_edge[i][0] = slot_edge[i][1] = 0;
	}
	return found;
}

/* A new generation (or block): take the first snapshot, no stop. The
 * snapshot and the previous bytes share one mapping of our own, each half
 * `capacity` bytes, kept while the size fits (the hooks use their private
 * copy of these fields, not what gdb could have written). An unreadable
 * block is published as snapshot = previous = 0 with seen = generation:
 * the slot is then skipped until gdb arms it again. */
static void watch_arm(struct mms_gdb_watch *w, unsigned i, uint64_t gen, uint64_t addr, uint64_t size)
{
	int saved_errno = errno; /* the program's, across our system calls */
	uint8_t *snap;

	slot_ok[i] = 0;
	mms__dirty_untrack(&slot_dirty[i]);
	slot_looks[i] = 0;
	slot_written[i] = 0;
	slot_edge[i][0] = slot_edge[i][1] = 0;
	if (!slot_map[i] || size > slot_half[i]) {
		uint64_t half = (size + 4095) & ~(uint64_t)4095;

		if (slot_map[i])
			mms__unmap_own(slot_map[i], 2 * slot_half[i]);
		slot_map[i] = NULL;
		slot_half[i] = 0;
		if (size <= SIZE_MAX / 4 && (slot_map[i] = mms__map_anon((size_t)(2 * half))))
			slot_half[i] = (size_t)half;
	}
	w->capacity = slot_half[i];
	w->snapshot = w->previous = 0;
	slot_addr[i] = addr;
	slot_size[i] = size;
	snap = slot_map[i];
	/* Tracked before the snapshot: a write while it is taken is seen. */
	if (snap)
		mms__dirty_track(&slot_dirty[i], (uintptr_t)addr, (size_t)size);
	if (snap && read_checked(snap, addr, size) == 0) {
		memcpy(snap + slot_half[i], snap, (size_t)size);
		w->previous = (uintptr_t)(snap + slot_half[i]);
		w->snapshot = (uintptr_t)snap;
		slot_ok[i] = 1;
	} else {
		mms__dirty_untrack(&slot_dirty[i]);
	}
	publish_tracked(i);
	__atomic_store_n(&w->seen, gen, __ATOMIC_RELEASE);
	errno = saved_errno;
}

/* Compares every armed watch, stopping once per block that changed. While
 * another thread is stopped (or on its way: gdb takes some milliseconds
 * to stop every thread), this one waits here first, so that what it does
 * next is not merged into one change with what the other thread found. */
static void watches_check(uint64_t launch, const char *name)
{
	struct msmemscope_gdb *d = &msmemscope_gdb;

	while (unlikely(__atomic_load_n(&stop_busy, __ATOMIC_ACQUIRE)))
		sched_yield();

	for (unsigned i = 0; i < MMS_GDB_WATCH_MAX; i++) {
		struct mms_gdb_watch *w = &d->watch[i];
		uint64_t gen, addr, size;
		const void *cur;
		uint8_t *snap;

		if (!__atomic_load_n(&w->size, __ATOMIC_RELAXED)) {
			/* Disarmed: its pages are left alone. */
			if (unlikely(slot_dirty[i].hi)) {
				mms__spin_lock(&slot_busy[i]);
				mms__dirty_untrack(&slot_dirty[i]);
				publish_tracked(i);
				mms__spin_unlock(&slot_busy[i]);
			}
			continue;
		}
		mms__spin_lock(&slot_busy[i]);
		gen = __atomic_load_n(&w->generation, __ATOMIC_ACQUIRE);
		addr = w->addr;
		size = w->size;
		if (!size)
			goto next;
		if (gen != w->seen || addr != slot_addr[i] || size != slot_size[i]) {
			watch_arm(w, i, gen, addr, size);
			goto next;
		}
		snap = slot_map[i];
		cur = (const void *)(uintptr_t)addr;
		if (!slot_ok[i] || !slot_changed(i, cur, snap, (size_t)size))
			goto next;
		memcpy(snap + slot_half[i], snap, (size_t)size);
		memcpy(snap, cur, (size_t)size);
		w->changes++;
		stop(MMS_GDB_WATCH, i, launch, name);
	next:
		mms__spin_unlock(&slot_busy[i]);
	}
}

static inline int armed(void)
{
	return unlikely(__atomic_load_n(&msmemscope_gdb.armed, __ATOMIC_RELAXED) != 0);
}

/* Memory [lo, hi) is about to be released (hi 0: lo is a malloc'd block).
 * A watched block in it stops being compared (reading it after the
 * release could fault: glibc unmaps large blocks), and gdb is told, so
 * the user sees who frees the block they watch. */
void mms__gdb_release_slow(uintptr_t lo, uintptr_t hi)
{
	struct msmemscope_gdb *d = &msmemscope_gdb;
	int saved_errno = errno;

	if (!hi && !(hi = mms__block_end(lo)))
		goto out; /* not a block: libc will say what it thinks of it */
	for (unsigned i = 0; i < MMS_GDB_WATCH_MAX; i++) {
		struct mms_gdb_watch *w = &d->watch[i];
		uint64_t size = __atomic_load_n(&w->size, __ATOMIC_RELAXED), at;
		const char *at_name;

		if (!size || w->addr >= hi || lo >= w->addr + size)
			continue;
		mms__spin_lock(&slot_busy[i]);
		slot_ok[i] = 0;
		mms__dirty_untrack(&slot_dirty[i]);
		publish_tracked(i);
		mms__spin_unlock(&slot_busy[i]);
		attribution(gdb_tls, &at, &at_name);
		stop(MMS_GDB_FREED, i, at, at_name);
	}
out:
	errno = saved_errno;
}

/* --- the boundaries (called inside the reentrancy guard) ------------------- */

void mms__gdb_op_begin(const char *name)
{
	uint64_t launch = __atomic_add_fetch(&msmemscope_gdb.launches, 1, __ATOMIC_RELAXED);
	struct gdb_thread *g = gdb_tls;
	struct gdb_frame *f = NULL;
	int on = armed();

	if (unlikely(!g))
		g = gdb_thread_new();
	if (on) {
		uint64_t at;
		const char *at_name;

		attribution(g, &at, &at_name);
		watches_check(at, at_name);
	}
	if (likely(g != NULL)) {
		if (likely(g->depth < GDB_DEPTH)) {
			f = &g->frame[g->depth];
			f->launch = launch;
			copy_name(f->name, name);
		}
		g->depth++;
	}
	if (on) {
		struct msmemscope_gdb *d = &msmemscope_gdb;
		char buf[MMS_GDB_NAME_MAX];

		if (!f) {
			copy_name(buf, name);
			name = buf;
		} else {
			name = f->name;
		}
		if (d->break_op[0] && op_listed(d->break_op, name))
			stop(MMS_GDB_OP, 0, launch, name);
	}
}

void mms__gdb_op_end(void)
{
	struct gdb_thread *g = gdb_tls;

	if (armed()) {
		uint64_t at, end = __atomic_load_n(&msmemscope_gdb.break_end, __ATOMIC_RELAXED);
		const char *at_name;

		attribution(g, &at, &at_name);
		watches_check(at, at_name);
		/* A launch nested deeper than GDB_DEPTH has no frame: its end
		 * is not seen (gdb says so when the program ends first). */
		if (end && g && g->depth && g->depth <= GDB_DEPTH && g->frame[g->depth - 1].launch == end)
			stop(MMS_GDB_OP_END, 0, end, g->frame[g->depth - 1].name);
	}
	if (g && g->depth)
		g->depth--;
}

void mms__gdb_step_begins(uint32_t step)
{
	uint64_t want;

	if (!armed())
		return;
	/* A step at or past the one gdb waits for: gdb then arms the next
	 * one it wants, so a step it armed that already began (step 1 of
	 * msmemscope_step(), which begins with the program) costs one
	 * stop, not the later ones. */
	want = __atomic_load_n(&msmemscope_gdb.break_step, __ATOMIC_RELAXED);
	if (want && step >= want) {
		uint64_t at;
		const char *at_name;

		attribution(gdb_tls, &at, &at_name);
		stop(MMS_GDB_STEP, 0, at, at_name);
	}
}

void mms__gdb_guard_found(unsigned kind)
{
	uint64_t at;
	const char *at_name;

	attribution(gdb_tls, &at, &at_name);
	stop(MMS_GDB_GUARD, kind, at, at_name);
}

/* --- life of the process ---------------------------------------------------- */

void mms__gdb_init(void)
{
	gdb_key_ok = pthread_key_create(&gdb_key, gdb_thread_exit) == 0;
	__atomic_store_n(&msmemscope_gdb.version, MMS_GDB_VERSION, __ATOMIC_RELEASE);
}

/* The log's absolute path (path may be relative to the current folder),
 * or "" for none. Called where the log is opened, before the program's
 * code runs (or in a fork child, where only the forking thread lives). */
void mms__gdb_set_log(const char *path)
{
	char *out = msmemscope_gdb.log_path;
	size_t cap = sizeof msmemscope_gdb.log_path, n = 0;

	out[0] = 0;
	if (!path || !*path)
		return;
	if (path[0] != '/') {
		if (!getcwd(out, cap))
			return;
		n = strlen(out);
		if (n > 1 && n + 1 < cap)
			out[n++] = '/';
		while (path[0] == '.' && path[1] == '/')
			path += 2;
	}
	if (n + strlen(path) + 1 > cap) {
		out[0] = 0;
		return;
	}
	memcpy(out + n, path, strlen(path) + 1);
}

/* In a fork child: its log numbers launches from 1 again and holds none
 * of the launches open in the parent; locks and busy flags held by
 * threads that did not survive the fork are released. */
void mms__gdb_after_fork_child(void)
{
	msmemscope_gdb.launches = 0;
	if (gdb_tls)
		gdb_tls->depth = 0;
	pthread_mutex_init(&gdb_free_lock, NULL);
	for (unsigned i = 0; i < MMS_GDB_WATCH_MAX; i++) {
		slot_busy[i] = 0;
		slot_dirty[i].lo = slot_dirty[i].hi = 0;
		msmemscope_gdb.watch[i].tracked = 0;
	}
	mms__dirty_after_fork_child();
	stop_busy = 0;
}
