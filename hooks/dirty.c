/* SPDX-License-Identifier: MIT */
/* dirty.c: which pages of a watched range the program wrote since the last
 * look, told by the kernel instead of found by comparing every byte.
 *
 * The range's whole pages are registered with a userfaultfd of ours in its
 * asynchronous write-protect mode (UFFD_FEATURE_WP_ASYNC, Linux 6.7): a
 * write to a protected page is resolved by the kernel itself, at once (no
 * thread of ours, no signal, writes by the kernel for the program too), and
 * the page is marked written; the pagemap's PAGEMAP_SCAN ioctl lists the
 * written pages and protects them again, in one call. Measured on an Intel
 * Xeon under Linux 6.18: a look takes about 0.3 us for 64 KiB and 0.18 ms
 * for 1 GiB, against 0.8 us and 130 ms to compare them with a snapshot; a
 * page's first write after a look costs a page fault, about 2.3 us.
 * gdbif.c uses it for `memscope watch`, watch.c for --watch and
 * msmemscope_watch() (a checksum kept while nothing was written), on
 * ranges of DIRTY_MIN_PAGES pages or more; both give it up for a range
 * written at most looks (reading it is then cheaper than the faults).
 *
 * Only the program's private memory is tracked (the heap, anonymous
 * mappings, and the pages of a file's private writable mapping, its data
 * and .bss, that the program has written, so that they are copies of its
 * own): a shared mapping, or a file's page not copied yet, can change
 * through another mapping of the same memory, which writes no page of
 * ours. Nothing
 * is tracked in a process under a seccomp filter (one may kill on
 * userfaultfd) nor where the kernel lacks any part of this: the caller
 * then compares every byte, as before.
 *
 * What tracking changes in the process: two descriptors of ours (fds.c
 * keeps them out of the program's way), the tracked range split off its
 * mapping in /proc/self/maps, and the program's own userfaultfd cannot
 * register that range (EBUSY) until it is untracked. Not seen: a page the
 * program discards with madvise(MADV_DONTNEED) reads back as zeros
 * without a write. A fork child tracks nothing it inherited (its mappings
 * leave the parent's userfaultfd, and the pagemap descriptor reads the
 * parent). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hooks-int.h"
#include "log.h"
#include "stamp.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

/* Linux 6.7's interface, newer than some distributions' headers (Debian
 * 12's). */
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

#define PM_PAGE_IS_WRITTEN (1 << 1)
#define PM_PAGE_IS_FILE (1 << 2)
#define PM_PAGE_IS_PRESENT (1 << 3)
#define PM_SCAN_WP_MATCHING (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)

struct pm_scan {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PM_SCAN_IOCTL _IOWR('f', 16, struct pm_scan)

/* The descriptors, used under dirty_lock (fds.c moves them under it too);
 * set_up_lock orders the set-up, which must not hold dirty_lock (fds.c
 * takes its own lock, then ours). */
static pthread_mutex_t dirty_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t set_up_lock = PTHREAD_MUTEX_INITIALIZER;
static int uffd = -1, pagemap = -1;
static int ready; /* 0: not tried yet, 1: set up, -1: not available */
/* Bumped in a fork child: what was tracked before is not any more. */
static unsigned epoch = 1;
/* Skipping looks (see "Skipped looks" below): per CPU (TSC_AUX's low 12
 * bits, which Linux sets to the CPU's number), half the least time in TSC
 * ticks a write to a protected page took there; 0 not measured yet,
 * UINT32_MAX not measurable. NULL: looks are never skipped. */
#define CPU_MAX 4096
static uint32_t *cpu_ticks;
static volatile char *cal_page; /* ours, registered, for measuring */
static size_t page_size;
/* Set by pthread_create (runtime.c) when the program starts a thread (not
 * when the recorder starts its log thread): it may have other threads. */
uint32_t mms__threads_made;

/* The ranges tracked now (under dirty_lock). No two share a page: a look
 * protects again the pages it lists, so a second tracker of a page would
 * never see the writes the first one listed; and unregistering one would
 * stop the other. A range that would overlap one is not tracked (its
 * owner compares). */
#define TRACKED_MAX 128
static struct {
	uintptr_t lo, hi;
} tracked[TRACKED_MAX];
static unsigned ntracked;

/* Adds [lo, hi) to the tracked ranges unless it overlaps one (under
 * dirty_lock). Returns 0 or -1. */
static int tracked_add(uintptr_t lo, uintptr_t hi)
{
	if (ntracked == TRACKED_MAX)
		return -1;
	for (unsigned i = 0; i < ntracked; i++)
		if (tracked[i].lo < hi && lo < tracked[i].hi)
			return -1;
	tracked[ntracked].lo = lo;
	tracked[ntracked].hi = hi;
	ntracked++;
	return 0;
}

/* Replaces [lo, hi) by [nlo, nhi) (nlo == nhi: removes it), under
 * dirty_lock. */
static void tracked_set(uintptr_t lo, uintptr_t hi, uintptr_t nlo, uintptr_t nhi)
{
	for (unsigned i = 0; i < ntracked; i++)
		if (tracked[i].lo == lo && tracked[i].hi == hi) {
			if (nlo < nhi) {
				tracked[i].lo = nlo;
				tracked[i].hi = nhi;
			} else {
				tracked[i] = tracked[--ntracked];
			}
			return;
		}
}

static int raw_open(const char *path, int flags)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC);
}

static void raw_close(int fd)
{
	syscall(SYS_close, fd);
}

/* Whether the process runs under no seccomp filter ("Seccomp:\t0"). */
static int no_seccomp(void)
{
	static char buf[4096]; /* once, under set_up_lock: not on a small stack */
	const char *s;

	if (mms__proc_read("/proc/self/status", buf, sizeof buf) < 0 || !(s = strstr(buf, "\nSeccomp:")))
		return 0;
	s += sizeof "\nSeccomp:" - 1;
	while (*s == ' ' || *s == '\t')
		s++;
	return *s == '0';
}

/* --- Skipped looks ------------------------------------------------------------
 * A write to a protected page stops the writing thread for a page fault.
 * So while the process has one thread, a look at a range all of whose
 * pages were protected at the last look can be skipped when less time has
 * passed since than the least time such a fault takes: the thread cannot
 * have written any of them, and the pages are as protected now (the
 * skipped look stands for the next interval's start, as a made one
 * would: any fault lies wholly inside one interval, the readings being
 * the thread's own, in order). That least time is measured on each CPU where
 * it is needed (writes to a page of our own, once), halved for a faster
 * clock later; a thread moved to another CPU has been off a CPU for far
 * longer. Where the TSC is not the clock, or RDTSCP does not give the CPU,
 * or other threads may run, every look is made. A thread the recorder does
 * not see start (one libc starts for itself, for aio_read or a timer)
 * faults on its own time, not on this thread's: so that its writes are
 * found soon, a look is made at least every CHAIN_FAULTS times the
 * measured time (about 60 us here). */
#define CHAIN_FAULTS 128

/* The TSC, and the CPU it was read on. Read without fences: a reading
 * taken early (before the instructions ahead of it finish) only makes an
 * interval look longer, and a fault ahead of it drains the pipeline first,
 * so its time is always in the reading. */
static inline uint64_t tsc_cpu(unsigned *cpu)
{
#if defined(__x86_64__)
	unsigned aux;
	uint64_t t;

	/* The program turned its TSC off (process.c): looks are never
	 * skipped then. */
	if (mms__hands_off_now()) {
		*cpu = 0;
		return 0;
	}
	t = __rdtscp(&aux);

	*cpu = aux & (CPU_MAX - 1);
	return t;
#else
	*cpu = 0;
	return 0;
#endif
}

/* Whether RDTSCP is there (and with it the CPU number in TSC_AUX). */
static int have_rdtscp(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;

	return __get_cpuid(0x80000001, &a, &b, &c, &d) && (d & (1u << 27));
#else
	return 0;
#endif
}

/* Registers a page of our own for measuring faults (under set_up_lock,
 * with the userfaultfd u). */
static void set_up_skipping(int u)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_WP };
	long page = sysconf(_SC_PAGESIZE);
	uint32_t *ticks;
	volatile char *p;

	if (!mms__clock_tsc || !have_rdtscp() || page <= 0)
		return;
	if (!(ticks = mms__map_anon(CPU_MAX * sizeof *ticks)))
		return;
	if (!(p = mms__map_anon((size_t)page))) {
		mms__unmap_own(ticks, CPU_MAX * sizeof *ticks);
		return;
	}
	p[0] = 1; /* populated: each write measured is a write-protect fault only */
	reg.range.start = (uintptr_t)p;
	reg.range.len = (uint64_t)page;
	if (ioctl(u, UFFDIO_REGISTER, &reg)) {
		mms__unmap_own((void *)p, (size_t)page);
		mms__unmap_own(ticks, CPU_MAX * sizeof *ticks);
		return;
	}
	page_size = (size_t)page;
	cal_page = p;
	__atomic_store_n(&cpu_ticks, ticks, __ATOMIC_RELEASE);
}

/* Measures this CPU: the least of a few writes to our protected page,
 * halved; trusted when most writes took about as long (an interrupt or a
 * preemption in one makes it longer, never shorter), else this CPU never
 * skips. Called after a look, holding nothing. */
#define MEASURES 16
static void measure_cpu(unsigned cpu)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = (uintptr_t)cal_page, .len = page_size },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};
	uint64_t best = UINT64_MAX, took[MEASURES];
	int n = 0, near = 0;

	for (int k = 0; k < MEASURES; k++) {
		unsigned c0, c1;
		uint64_t t0, t1;
		int r = -1;

		pthread_mutex_lock(&dirty_lock);
		if (uffd >= 0)
			r = ioctl(uffd, UFFDIO_WRITEPROTECT, &wp);
		pthread_mutex_unlock(&dirty_lock);
		if (r)
			break;
#if defined(__x86_64__)
		t0 = tsc_cpu(&c0);
		_mm_lfence(); /* the write starts after the reading */
		cal_page[0] = (char)k;
		t1 = tsc_cpu(&c1); /* RDTSCP waits for the write */
#else
		t0 = t1 = 0;
		c0 = c1 = 0;
#endif
		if (c0 != cpu || c1 != cpu || t1 <= t0)
			continue;
		took[n++] = t1 - t0;
		if (t1 - t0 < best)
			best = t1 - t0;
	}
	for (int k = 0; k < n; k++)
		near += took[k] * 2 <= best * 3;
	if (near < MEASURES / 2 || best / 2 >= UINT32_MAX)
		best = UINT32_MAX; /* not measurable */
	else
		best /= 2;
	__atomic_store_n(&cpu_ticks[cpu], (uint32_t)best, __ATOMIC_RELAXED);
}

/* Opens the userfaultfd and the pagemap, once (under set_up_lock).
 * Returns 1 when both are there. */
static int set_up(void)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED,
	};
	int u, p;

	if (ready)
		return ready > 0;
	ready = -1;
	if (!no_seccomp())
		return 0;
	/* User mode only: allowed without privilege; writes the kernel makes
	 * for the program are resolved the same, in the write-protect fault. */
	u = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (u < 0)
		return 0;
	if (ioctl(u, UFFDIO_API, &api) || (api.features & UFFD_FEATURE_WP_ASYNC) == 0 ||
	    (api.features & UFFD_FEATURE_WP_UNPOPULATED) == 0) {
		raw_close(u);
		return 0;
	}
	p = raw_open("/proc/self/pagemap", O_RDONLY);
	if (p < 0) {
		raw_close(u);
		return 0;
	}
	set_up_skipping(u);
	/* Out of the program's way; fds.c closes what it cannot adopt. */
	if (mms__fd_adopt(u, &uffd, &dirty_lock) < 0) {
		raw_close(p);
		return 0;
	}
	if (mms__fd_adopt(p, &pagemap, &dirty_lock) < 0) {
		mms__fd_release(uffd);
		uffd = -1;
		return 0;
	}
	ready = 1;
	return 1;
}

/* Whether a page of [lo, hi) is the file's (not copied for the program
 * yet) or not present: such a page can change through the file. */
static int file_pages(uintptr_t lo, uintptr_t hi)
{
	struct mms_dirty_run run;
	struct pm_scan a = {
		.size = sizeof a,
		.start = lo,
		.end = hi,
		.vec = (uintptr_t)&run,
		.vec_len = 1,
		.category_inverted = PM_PAGE_IS_PRESENT,
		.category_anyof_mask = PM_PAGE_IS_FILE | PM_PAGE_IS_PRESENT,
		.return_mask = PM_PAGE_IS_FILE | PM_PAGE_IS_PRESENT,
	};
	long r = -1;

	pthread_mutex_lock(&dirty_lock);
	if (pagemap >= 0)
		r = ioctl(pagemap, PM_SCAN_IOCTL, &a);
	pthread_mutex_unlock(&dirty_lock);
	return r != 0;
}

/* private_part's walk: the run of trackable mappings it is in, and the
 * largest met. */
struct private_walk {
	uintptr_t lo, hi;         /* the range asked about */
	uintptr_t run_lo, run_hi; /* the current run of trackable mappings */
	uintptr_t best_lo, best_hi;
};

static int private_step(char *line, void *ctx)
{
	struct private_walk *w = ctx;
	uintptr_t start, end;
	/* Private anonymous memory one may write (nameless, the heap, or
	 * named by prctl; not the stack, which grows down, nor the
	 * kernel's special mappings), or a private writable mapping of a
	 * file (a program's or library's data and .bss), trackable where
	 * every page is the program's own copy. */
	int kind = mms__maps_line(line, &start, &end);

	if (start < w->lo)
		start = w->lo;
	if (end > w->hi)
		end = w->hi;
	if (start >= end)
		return 0;
	if (kind == MMS_MAPS_STACK || (kind == MMS_MAPS_FILE && file_pages(start, end)))
		kind = MMS_MAPS_OTHER;
	if (!kind) {
		w->run_lo = w->run_hi = 0;
		return 0;
	}
	if (start != w->run_hi)
		w->run_lo = start; /* not next to the run: a new one */
	w->run_hi = end;
	if (w->run_hi - w->run_lo > w->best_hi - w->best_lo) {
		w->best_lo = w->run_lo;
		w->best_hi = w->run_hi;
	}
	return 0;
}

/* The largest part of [lo, hi) in contiguous private mappings that can be
 * tracked, from /proc/self/maps: sets *plo, *phi (equal when none). Only
 * a line's head counts (the path is looked at for its first characters). */
static void private_part(uintptr_t lo, uintptr_t hi, uintptr_t *plo, uintptr_t *phi)
{
	struct private_walk w = { .lo = lo, .hi = hi };

	mms__proc_lines("/proc/self/maps", private_step, &w);
	*plo = w.best_lo;
	*phi = w.best_hi;
}

int mms__dirty_track(struct mms_dirty *d, uintptr_t addr, size_t size)
{
	int saved_errno = errno;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = addr & ~(page - 1), hi = (addr + size + page - 1) & ~(page - 1);
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_WP };
	struct uffdio_writeprotect wp = { .mode = UFFDIO_WRITEPROTECT_MODE_WP };
	unsigned cpu;
	int ok = 0;

	if (mms__hands_off_now())
		return -1; /* no system call of ours any more (process.c) */

	d->lo = d->hi = 0;
	if (addr + size < addr || hi < addr || hi <= lo || (hi - lo) / page < DIRTY_MIN_PAGES)
		goto out;
	pthread_mutex_lock(&set_up_lock);
	ok = set_up();
	pthread_mutex_unlock(&set_up_lock);
	if (!ok)
		goto out;
	private_part(lo, hi, &lo, &hi);
	if (hi <= lo || (hi - lo) / page < DIRTY_MIN_PAGES)
		goto out;
	reg.range.start = wp.range.start = lo;
	reg.range.len = wp.range.len = hi - lo;
	pthread_mutex_lock(&dirty_lock);
	ok = uffd >= 0 && tracked_add(lo, hi) == 0;
	if (ok && ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		tracked_set(lo, hi, 0, 0);
		ok = 0;
	}
	/* Read before the pages are protected (see mms__dirty_scan). */
	d->looked = d->made = tsc_cpu(&cpu);
	if (ok && ioctl(uffd, UFFDIO_WRITEPROTECT, &wp)) {
		ioctl(uffd, UFFDIO_UNREGISTER, &reg.range);
		tracked_set(lo, hi, 0, 0);
		ok = 0;
	}
	if (ok) {
		d->lo = lo;
		d->hi = hi;
		d->epoch = epoch;
		/* One thread of the program's: the log thread never writes
		 * the program's memory. */
		d->alone = cpu_ticks && mms__threads_now() - (mms__log_thread_running() ? 1 : 0) == 1;
	}
	pthread_mutex_unlock(&dirty_lock);
out:
	errno = saved_errno;
	return d->hi ? 0 : -1;
}

int mms__dirty_scan(struct mms_dirty *d, struct mms_dirty_run *runs, unsigned max)
{
	struct pm_scan a = {
		.size = sizeof a,
		.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
		.start = d->lo,
		.end = d->hi,
		.vec = (uintptr_t)runs,
		.vec_len = max,
		.category_mask = PM_PAGE_IS_WRITTEN,
		.return_mask = PM_PAGE_IS_WRITTEN,
	};
	int saved_errno = errno,
	    alone = d->alone && !__atomic_load_n(&mms__threads_made, __ATOMIC_RELAXED) && !mms__hands_off_now();
	unsigned cpu = 0;
	uint64_t now = 0;
	uint32_t ticks;
	long r = -1;

	_Static_assert(sizeof *runs == 24, "struct mms_dirty_run is the kernel's struct page_region");
	/* Alone in the process, since less time than a write to a protected
	 * page takes: every page is as protected as at the last look, and
	 * this one can stand for a look made now. */
	if (alone) {
		now = tsc_cpu(&cpu);
		ticks = __atomic_load_n(&cpu_ticks[cpu], __ATOMIC_RELAXED);
		if (ticks && ticks != UINT32_MAX && now - d->looked < ticks &&
		    now - d->made < (uint64_t)CHAIN_FAULTS * ticks) {
			d->looked = now;
			return 0;
		}
	}
	pthread_mutex_lock(&dirty_lock);
	/* The program forbade our system calls (process.c): every byte is
	 * compared from now on (-1 below). */
	if (d->epoch == epoch && pagemap >= 0 && !mms__hands_off_now())
		r = ioctl(pagemap, PM_SCAN_IOCTL, &a);
	pthread_mutex_unlock(&dirty_lock);
	if (alone && r >= 0) {
		unsigned cpu2;
		uint64_t after = tsc_cpu(&cpu2);

		/* The next interval starts before the pages were protected
		 * again, so that a signal handler run as the call returns is
		 * inside it; or after the call, when the call took less than
		 * a fault: no handler wrote a page in between. */
		ticks = __atomic_load_n(&cpu_ticks[cpu], __ATOMIC_RELAXED);
		d->looked = d->made = now;
		if (cpu2 == cpu && ticks && ticks != UINT32_MAX && after - now < ticks)
			d->looked = d->made = after;
		if (!ticks)
			measure_cpu(cpu);
	}
	errno = saved_errno;
	if (r < 0) {
		/* The mapping went (the program unmapped or moved it), or the
		 * descriptor is no longer ours: compare every byte from now. */
		mms__dirty_untrack(d);
		return -1;
	}
	if ((unsigned long)r == max && a.walk_end < d->hi) {
		/* More than max runs: the pages past walk_end are still
		 * marked, open to writes: the next look is made. */
		d->looked = d->made = 0;
		return -2;
	}
	return (int)r;
}

void mms__dirty_shrink(struct mms_dirty *d, uintptr_t lo, uintptr_t hi)
{
	struct uffdio_range head = { .start = d->lo, .len = lo - d->lo };
	struct uffdio_range tail = { .start = hi, .len = d->hi - hi };
	int saved_errno = errno;

	if (!d->hi || lo < d->lo || hi > d->hi || lo >= hi) {
		mms__dirty_untrack(d);
		return;
	}
	pthread_mutex_lock(&dirty_lock);
	if (d->epoch == epoch && uffd >= 0 && !mms__hands_off_now()) {
		if (head.len)
			ioctl(uffd, UFFDIO_UNREGISTER, &head);
		if (tail.len)
			ioctl(uffd, UFFDIO_UNREGISTER, &tail);
		tracked_set(d->lo, d->hi, lo, hi);
	}
	pthread_mutex_unlock(&dirty_lock);
	d->lo = lo;
	d->hi = hi;
	errno = saved_errno;
}

void mms__dirty_untrack(struct mms_dirty *d)
{
	struct uffdio_range range = { .start = d->lo, .len = d->hi - d->lo };
	int saved_errno = errno;

	if (!d->hi)
		return;
	pthread_mutex_lock(&dirty_lock);
	if (d->epoch == epoch && uffd >= 0) {
		if (!mms__hands_off_now())
			ioctl(uffd, UFFDIO_UNREGISTER, &range);
		tracked_set(d->lo, d->hi, 0, 0);
	}
	pthread_mutex_unlock(&dirty_lock);
	d->lo = d->hi = 0;
	errno = saved_errno;
}

/* In a fork child (after fds.c's): the child's mappings left our
 * userfaultfd, and the pagemap descriptor reads the parent's. Both are
 * closed in the child (the parent's stay open) and set up again if a watch
 * is armed there. */
void mms__dirty_after_fork_child(void)
{
	pthread_mutex_init(&dirty_lock, NULL);
	pthread_mutex_init(&set_up_lock, NULL);
	epoch++;
	ntracked = 0;
	if (pagemap >= 0)
		mms__fd_release(pagemap);
	if (uffd >= 0)
		mms__fd_release(uffd);
	pagemap = uffd = -1;
	if (cal_page)
		mms__unmap_own((void *)cal_page, page_size);
	if (cpu_ticks)
		mms__unmap_own(cpu_ticks, CPU_MAX * sizeof *cpu_ticks);
	cal_page = NULL;
	cpu_ticks = NULL;
	if (ready > 0)
		ready = 0;
}
