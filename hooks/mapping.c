/* SPDX-License-Identifier: MIT */
/* mapping.c: interposes the mmap family (mmap, munmap, mprotect,
 * pkey_mprotect, mremap), records each call as an event, and keeps the
 * recorder's own memory out of the program's calls over it (own.c):
 * munmap, mprotect, madvise and mlockall leave it alone, mmap(MAP_FIXED)
 * and mremap refuse it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "enter.h"
#include "hooks-int.h"
#include "log.h"
#include "stamp.h"
#include "unwind.h"

/* An MMAP (word: prot << 32 | flags) or MPROTECT (word: prot) record,
 * with the caller's stack; an MMAP_RT of runtime kind rt when rt is not
 * 0. */
static void rec_mapping(struct mms_thread *t, uint8_t tag, void *addr, size_t len, uint64_t word, unsigned rt)
{
	uint32_t stack;
	uint64_t stamp;

	/* The caller may be an allocator holding its lock (PartitionAlloc,
	 * jemalloc, tcmalloc map and protect so): the capture calls no
	 * malloc (hooks-int.h). */
	t->alloc_barred = 1;
	stack = mms__capture_stack(t);
	t->alloc_barred = 0;
	stamp = mms__stamp_obtain();

	if (likely(!rt))
		mms__rec_addr_event(t, tag, stamp, (uintptr_t)addr, 3, len, word, stack, 0);
	else
		mms__rec_addr_event(t, MMS_TAG_MMAP_RT, stamp, (uintptr_t)addr, 4, len, word, stack, rt);
}

/* ra: the return address of the program's call of mmap. A mapping the
 * CUDA driver made for itself is marked its own (MMAP_RT). */
static void rec_mmap(struct mms_thread *t, void *addr, size_t len, int prot, int flags, uintptr_t ra)
{
	rec_mapping(t, MMS_TAG_MMAP, addr, len, ((uint64_t)(uint32_t)prot << 32) | (uint32_t)flags,
		    mms__in_cuda(ra) ? MMS_RT_CUDA : 0);
}

static void rec_munmap(struct mms_thread *t, void *addr, size_t len, uint64_t stamp)
{
	mms__rec_addr_event(t, MMS_TAG_MUNMAP, stamp, (uintptr_t)addr, 1, len, 0, 0, 0);
}

/* Whether return address ra lies in the code of a replacement allocator
 * (jemalloc, tcmalloc, mimalloc as the real malloc): the mappings it makes
 * outside the hooks (mimalloc's mi_heap_new() and its options, jemalloc's
 * background thread, a call of its own that is not redirected) are its
 * internals, under the blocks it hands out, as those it makes inside the
 * hooks are: passed through, not recorded. */
static inline int allocator_own(uintptr_t ra)
{
	return mms__in_code(&mms__alloc_code, ra);
}

/* ra: the return address of the program's call. */
static void *mmap_from(void *addr, size_t len, int prot, int flags, int fd, off_t off, uintptr_t ra)
{
	struct mms_thread *t;
	void *r;

	if (unlikely(!mms__real.mmap)) {
		mms__init_resolve();
		if (!mms__real.mmap) {
			errno = ENOSYS;
			return MAP_FAILED;
		}
	}
	/* Placed over the recorder's own memory: refused (own.c). */
	if ((flags & MAP_FIXED) && len && mms__own_overlaps((uintptr_t)addr, mms__page_end((uintptr_t)addr, len))) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	/* Bytes made unreadable are no longer compared by a watch. */
	if ((flags & MAP_FIXED) && !(prot & PROT_READ))
		mms__release_watched((uintptr_t)addr, (uintptr_t)addr + len);
	t = mms__enter_mapping();
	r = mms__real.mmap(addr, len, prot, flags, fd, off);
	if (t) {
		if (r != MAP_FAILED && !allocator_own(ra))
			rec_mmap(t, r, len, prot, flags, ra);
		mms__leave();
	}
	return r;
}

MMS_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap_from(addr, len, prot, flags, fd, off, (uintptr_t)__builtin_return_address(0));
}

MMS_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap_from(addr, len, prot, flags, fd, off, (uintptr_t)__builtin_return_address(0));
}

/* mms__own_spare's step for munmap and mprotect: 0 or an errno. */
static int unmap_piece(uintptr_t lo, uintptr_t hi, void *ctx)
{
	(void)ctx;
	return mms__real.munmap((void *)lo, hi - lo) ? errno : 0;
}

struct protect_piece {
	int prot, pkey, with_key;
};

static int protect_piece(uintptr_t lo, uintptr_t hi, void *ctx)
{
	const struct protect_piece *w = ctx;
	int r = w->with_key ? mms__real.pkey_mprotect((void *)lo, hi - lo, w->prot, w->pkey)
			    : mms__real.mprotect((void *)lo, hi - lo, w->prot);

	return r ? errno : 0;
}

MMS_EXPORT int munmap(void *addr, size_t len)
{
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	struct mms_thread *t;
	int r;

	if (unlikely(!mms__real.munmap)) {
		mms__init_resolve();
		if (!mms__real.munmap)
			return (int)syscall(SYS_munmap, addr, len);
	}
	t = mms__enter_mapping();

	/* libunwind freeing its per-thread cache at thread exit: it mapped
	 * it inside the recorder, unrecorded; a replacement allocator's own. */
	if (t && (mms__unwinder_code(ra) || allocator_own(ra))) {
		mms__leave();
		t = NULL;
	}
	if (t) {
		rec_munmap(t, addr, len, mms__stamp_release());
		mms__leave();
	}
	mms__release_watched((uintptr_t)addr, (uintptr_t)addr + len);
	/* A range over the recorder's own memory: the rest of it only. */
	if (mms__own_spare(addr, len, unmap_piece, NULL, &r))
		return r;
	return mms__real.munmap(addr, len);
}

/* What the program may access: a mapping reserved with PROT_NONE (a
 * JVM's or V8's heap, a sanitizer's shadow) becomes memory where mprotect
 * opens it, and stops being memory where mprotect closes it again.
 * pkey_mprotect (pkey < 0: none) is the same call with a protection key;
 * the key itself is not recorded. */
static int protect(void *addr, size_t len, int prot, int pkey, int with_key, uintptr_t ra)
{
	struct mms_thread *t;
	int r;

	if (unlikely(with_key ? !mms__real.pkey_mprotect : !mms__real.mprotect)) {
		mms__init_resolve();
		if (with_key && !mms__real.pkey_mprotect) {
#ifdef SYS_pkey_mprotect
			return (int)syscall(SYS_pkey_mprotect, addr, len, prot, pkey);
#else
			errno = ENOSYS;
			return -1;
#endif
		}
		if (!with_key && !mms__real.mprotect)
			return (int)syscall(SYS_mprotect, addr, len, prot);
	}
	if (!(prot & PROT_READ))
		mms__release_watched((uintptr_t)addr, (uintptr_t)addr + len);
	t = mms__enter_mapping();
	/* The recorder's own memory keeps its protection. */
	if (!mms__own_spare(addr, len, protect_piece, &(struct protect_piece){ prot, pkey, with_key }, &r))
		r = with_key ? mms__real.pkey_mprotect(addr, len, prot, pkey) : mms__real.mprotect(addr, len, prot);
	if (t) {
		if (!r && !allocator_own(ra))
			rec_mapping(t, MMS_TAG_MPROTECT, addr, len, (uint32_t)prot, 0);
		mms__leave();
	}
	return r;
}

MMS_EXPORT int mprotect(void *addr, size_t len, int prot)
{
	return protect(addr, len, prot, -1, 0, (uintptr_t)__builtin_return_address(0));
}

MMS_EXPORT int pkey_mprotect(void *addr, size_t len, int prot, int pkey)
{
	return protect(addr, len, prot, pkey, 1, (uintptr_t)__builtin_return_address(0));
}

static int advise_piece(uintptr_t lo, uintptr_t hi, void *ctx)
{
	return mms__real.madvise((void *)lo, hi - lo, *(const int *)ctx) ? errno : 0;
}

/* Advice over the recorder's own memory is not taken there: MADV_DONTNEED
 * or MADV_FREE would give it back zeroed, MADV_REMOVE punch a hole in the
 * log, MADV_DONTFORK or MADV_WIPEONFORK leave a fork child without it.
 * Nothing is recorded: the mappings stay as they were. */
MMS_EXPORT int madvise(void *addr, size_t len, int advice)
{
	int r;

	if (unlikely(!mms__real.madvise)) {
		mms__init_resolve();
		if (!mms__real.madvise)
			return (int)syscall(SYS_madvise, addr, len, advice);
	}
	if (mms__own_spare(addr, len, advise_piece, &advice, &r))
		return r;
	return mms__real.madvise(addr, len, advice);
}

/* mlockall(MCL_CURRENT) locks the program's mappings, not the recorder's
 * (own.c). */
MMS_EXPORT int mlockall(int flags)
{
	if (unlikely(!mms__real.mlockall || !mms__real.munlockall)) {
		mms__init_resolve();
		if (!mms__real.mlockall || !mms__real.munlockall)
			return (int)syscall(SYS_mlockall, flags);
	}
	return mms__own_mlockall(flags);
}

MMS_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	struct mms_thread *t;
	void *want = NULL, *r;
	uint64_t t1;

	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		want = va_arg(ap, void *);
		va_end(ap);
	}
	if (unlikely(!mms__real.mremap)) {
		mms__init_resolve();
		if (!mms__real.mremap)
			return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, want);
	}
	/* The recorder's own memory moves for no one (own.c). */
	if (mms__own_overlaps((uintptr_t)old, mms__page_end((uintptr_t)old, old_len ? old_len : 1))) {
		errno = EFAULT;
		return MAP_FAILED;
	}
	if ((flags & MREMAP_FIXED) && mms__own_overlaps((uintptr_t)want, mms__page_end((uintptr_t)want, new_len))) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	mms__release_watched((uintptr_t)old, (uintptr_t)old + old_len);
	t = mms__enter_mapping();
	t1 = t ? mms__stamp_release() : 0;
	r = mms__real.mremap(old, old_len, new_len, flags, want);
	if (t) {
		if (r != MAP_FAILED && !allocator_own((uintptr_t)__builtin_return_address(0))) {
			rec_munmap(t, old, old_len, t1);
			rec_mmap(t, r, new_len, (int)MMS_PROT_UNKNOWN, 0, (uintptr_t)__builtin_return_address(0));
		}
		mms__leave();
	}
	return r;
}
