/* SPDX-License-Identifier: MIT */
/* own.c: the address ranges the recorder mapped for itself (its arena, the
 * log's chunks, its tables), so that a program that unmaps, remaps,
 * protects or maps over memory it does not own (a wild munmap of a range
 * past its own mapping) cannot take the recorder's from under it: the
 * hooks of munmap and mprotect leave those ranges alone and apply the
 * call to the rest, those of mmap(MAP_FIXED) and mremap refuse a range
 * that covers one (ENOMEM, EFAULT). A correct program never sees the
 * difference; natively such a call hits whatever lies there.
 *
 * A sorted array of ranges under a spin lock; a thread that holds it (a
 * signal handler interrupted it) finds every range unprotected rather
 * than waiting on itself. Full (OWN_MAX ranges), a range is left out. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hooks-int.h"

#define OWN_MAX 4096

static struct own_range {
	uintptr_t lo, hi;
} own[OWN_MAX];
static size_t nown;
static int own_lock;
static __thread int tls_own_locked;

static int lock_own(void)
{
	if (tls_own_locked)
		return 0;
	mms__spin_lock(&own_lock);
	tls_own_locked = 1;
	return 1;
}

static void unlock_own(void)
{
	tls_own_locked = 0;
	mms__spin_unlock(&own_lock);
}

/* The first range whose end is above a. */
static size_t first_above(uintptr_t a)
{
	size_t lo = 0, hi = nown;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (own[mid].hi <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uintptr_t page_size(void)
{
	static uintptr_t page;

	if (!page)
		page = (uintptr_t)sysconf(_SC_PAGESIZE);
	return page;
}

/* The end of [lo, lo + len) rounded up to a page, as the kernel takes it. */
uintptr_t mms__page_end(uintptr_t lo, size_t len)
{
	uintptr_t page = page_size(), hi = lo + len;

	if (hi < lo || hi > UINTPTR_MAX - page)
		return UINTPTR_MAX;
	return (hi + page - 1) & ~(page - 1);
}

void mms__own_add(const void *p, size_t len)
{
	uintptr_t lo = (uintptr_t)p, hi = mms__page_end(lo, len);
	size_t i;

	if (!len || hi <= lo || !lock_own())
		return;
	/* The kernel gave us [lo, hi): a range noted there before is gone
	 * (the array stays sorted and without overlaps). */
	i = first_above(lo);
	if (i < nown && own[i].lo < hi) {
		size_t j = i, w = i;

		for (; j < nown && own[j].lo < hi; j++)
			if (own[j].lo < lo)
				own[w++] = (struct own_range){ own[j].lo, lo };
		memmove(&own[w], &own[j], (nown - j) * sizeof(own[0]));
		nown -= j - w;
	}
	if (nown < OWN_MAX) {
		i = first_above(lo);
		memmove(&own[i + 1], &own[i], (nown - i) * sizeof(own[0]));
		own[i].lo = lo;
		own[i].hi = hi;
		nown++;
	}
	unlock_own();
}

/* Forgets [p, p + len) (the recorder unmaps it): the ranges inside go,
 * one that reaches past either end keeps what lies outside. */
static void own_del(const void *p, size_t len)
{
	uintptr_t lo = (uintptr_t)p, hi = mms__page_end(lo, len);
	struct own_range keep[2];
	size_t w = 0, nkeep = 0;

	if (!len || !lock_own())
		return;
	for (size_t r = 0; r < nown; r++) {
		struct own_range x = own[r];

		if (x.hi <= lo || x.lo >= hi) {
			own[w++] = x;
			continue;
		}
		/* At most two pieces survive, of the first and last ranges
		 * met: kept apart and put back in order below. */
		if (x.lo < lo && nkeep < 2)
			keep[nkeep++] = (struct own_range){ x.lo, lo };
		if (x.hi > hi && nkeep < 2)
			keep[nkeep++] = (struct own_range){ hi, x.hi };
	}
	nown = w;
	unlock_own();
	for (size_t k = 0; k < nkeep; k++)
		mms__own_add((const void *)keep[k].lo, keep[k].hi - keep[k].lo);
}

int mms__unmap_own(void *p, size_t len)
{
	own_del(p, len);
	return mms__real.munmap(p, len);
}

int mms__own_overlaps(uintptr_t lo, uintptr_t hi)
{
	int r;

	if (hi <= lo || !lock_own())
		return 0;
	r = first_above(lo) < nown && own[first_above(lo)].lo < hi;
	unlock_own();
	return r;
}

/* Calls fn on each piece of [lo, hi) outside the recorder's ranges, in
 * order; returns the first nonzero value fn returned, else 0. */
static int each_outside(uintptr_t lo, uintptr_t hi, int (*fn)(uintptr_t lo, uintptr_t hi, void *ctx), void *ctx)
{
	struct own_range in[64];
	size_t n, i;
	uintptr_t at = lo;
	int rc = 0, r;

	if (hi <= lo)
		return 0;
	do {
		/* The next ranges inside, copied: fn runs without the lock. */
		n = 0;
		if (lock_own()) {
			for (i = first_above(at); i < nown && own[i].lo < hi && n < 64; i++)
				in[n++] = own[i];
			unlock_own();
		}
		for (i = 0; i < n; i++) {
			if (in[i].lo > at && (r = fn(at, in[i].lo, ctx)) && !rc)
				rc = r;
			if (in[i].hi > at)
				at = in[i].hi;
		}
	} while (n == 64 && at < hi);
	if (at < hi && (r = fn(at, hi, ctx)) && !rc)
		rc = r;
	return rc;
}

int mms__own_outside(uintptr_t lo, uintptr_t hi, int (*fn)(uintptr_t lo, uintptr_t hi, void *ctx), void *ctx)
{
	return each_outside(lo, hi, fn, ctx);
}

int mms__own_spare(void *addr, size_t len, int (*fn)(uintptr_t lo, uintptr_t hi, void *ctx), void *ctx, int *ret)
{
	uintptr_t lo = (uintptr_t)addr, hi;

	/* An unaligned address or no length: the kernel's answer. */
	if (!len || (lo & (page_size() - 1)))
		return 0;
	hi = mms__page_end(lo, len);
	if (!mms__own_overlaps(lo, hi))
		return 0;
	*ret = each_outside(lo, hi, fn, ctx);
	if (*ret) {
		errno = *ret;
		*ret = -1;
	}
	return 1;
}

/* ---- mlockall ----
 * mlockall(MCL_CURRENT) locks and fills every mapping of the process: the
 * recorder's too (some 50 MiB of address space, most of it reserved and
 * never touched), which then count against RLIMIT_MEMLOCK (8 MiB for a
 * user by default: a small program's mlockall failed recorded and not
 * natively) and fill with pages the recorder never needed. The kernel's
 * call is made here for the program's mappings only: its limit on their
 * size, its errors, then mlock() of each outside the recorder's ranges
 * (what a mapping cannot fill is passed over, as mlockall does). Only a
 * mapping made concurrently by another thread may be missed. */

struct lock_walk {
	int lock;    /* 0: count the bytes, 1: lock */
	int onfault; /* MCL_ONFAULT */
	uintptr_t bytes;
};

static int lock_piece(uintptr_t lo, uintptr_t hi, void *ctx)
{
	struct lock_walk *w = ctx;

	if (!w->lock)
		w->bytes += hi - lo;
	else if (w->onfault)
		syscall(SYS_mlock2, lo, hi - lo, MLOCK_ONFAULT);
	else
		syscall(SYS_mlock, lo, hi - lo);
	return 0;
}

static int lock_line(char *line, void *ctx)
{
	char *e;
	uintptr_t lo = strtoul(line, &e, 16), hi;

	if (*e != '-')
		return 0;
	hi = strtoul(e + 1, &e, 16);
	/* The vsyscall page is no mapping of the process's: not counted,
	 * and mlock() refuses it. */
	if (hi > lo && !strstr(e, "[vsyscall]"))
		each_outside(lo, hi, lock_piece, ctx);
	return 0;
}

/* Whether the process may lock memory past its limit: CAP_IPC_LOCK in the
 * first user namespace, as the kernel asks (in another one, capget()
 * tells of that namespace's). */
static int lock_unlimited(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	char map[128], *e;
	unsigned long inside, outside;

	if (syscall(SYS_capget, &h, d) || !((d[CAP_IPC_LOCK / 32].effective >> (CAP_IPC_LOCK % 32)) & 1))
		return 0;
	/* The first namespace maps every id to itself: "0 0 4294967295". */
	if (mms__proc_read("/proc/self/uid_map", map, sizeof map) <= 0)
		return 0;
	inside = strtoul(map, &e, 10);
	outside = strtoul(e, &e, 10);
	return !inside && !outside && strtoul(e, NULL, 10) == UINT32_MAX;
}

int mms__own_mlockall(int flags)
{
	struct lock_walk w = { .onfault = !!(flags & MCL_ONFAULT) };
	struct rlimit lim;
	int unlimited, saved_errno = errno;

	/* Without MCL_CURRENT (or with bad flags) no mapping of now is
	 * touched: the kernel's answer. So with a sandbox that forbids
	 * the calls below. */
	if (!(flags & MCL_CURRENT) || (flags & ~(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)) || mms__hands_off_now())
		return mms__real.mlockall(flags);
	if (getrlimit(RLIMIT_MEMLOCK, &lim))
		return mms__real.mlockall(flags);
	unlimited = lock_unlimited();
	if (!lim.rlim_cur && !unlimited) {
		errno = EPERM;
		return -1;
	}
	if (lim.rlim_cur != RLIM_INFINITY && !unlimited) {
		if (mms__proc_lines("/proc/self/maps", lock_line, &w) < 0)
			return mms__real.mlockall(flags);
		if (w.bytes / (uintptr_t)page_size() > lim.rlim_cur / page_size()) {
			errno = ENOMEM;
			return -1;
		}
	}
	/* Mappings made from now on: locked with MCL_FUTURE (the recorder's
	 * too, the kernel knows no other way), not without (munlockall()
	 * ends an earlier MCL_FUTURE, and what was locked is locked again
	 * below). */
	if (flags & MCL_FUTURE ? mms__real.mlockall(flags & ~MCL_CURRENT) : mms__real.munlockall())
		return -1;
	w.lock = 1;
	mms__proc_lines("/proc/self/maps", lock_line, &w);
	errno = saved_errno; /* a piece mlock() passed over is no error */
	return 0;
}

/* Held across fork (process.c), so that the child's copy is whole. */
void mms__own_before_fork(void)
{
	lock_own();
}

void mms__own_after_fork(void)
{
	if (tls_own_locked)
		unlock_own();
}
