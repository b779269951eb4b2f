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
#include <string.h>
#include <sys/mman.h>
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
