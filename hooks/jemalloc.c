/* SPDX-License-Identifier: MIT */
/* jemalloc.c: jemalloc's functions of its own (mallocx() and its family),
 * where jemalloc is the allocator: recorded as the malloc family is. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hooks-int.h"
#include "hooks-rec.h"

/* --- jemalloc's functions of its own (redirect.c) ----------------------------
 * A program linked with jemalloc may allocate with mallocx() and its
 * family beside the malloc family: redirect.c points its calls here. Each
 * calls jemalloc's with the program's flags (its tcache and arena bits
 * too) and is recorded as the malloc family's are: mallocx as malloc (as
 * aligned_alloc with an alignment, as calloc with MALLOCX_ZERO), rallocx
 * and xallocx as realloc, dallocx and sdallocx as free. In guard mode they
 * make and release guarded blocks, as the malloc family's hooks do. */
struct mms_je mms__je;

static unsigned je_fn(int flags)
{
	return JE_ALIGN(flags) ? MMS_ALLOC_ALIGNED_ALLOC : flags & JE_ZERO ? MMS_ALLOC_CALLOC : MMS_ALLOC_MALLOC;
}

/* A block of the recorder's arena (or, in guard mode, a guarded block)
 * for a mallocx() or rallocx() of flags. */
static void *je_own_alloc(size_t size, int flags)
{
	size_t align = JE_ALIGN(flags);
	void *p = own_alloc(size, align > 16 ? align : 16);

	if (p && flags & JE_ZERO)
		memset(p, 0, size);
	return p;
}

static void *je_guard_alloc(unsigned fn, size_t size, int flags, uintptr_t ra)
{
	size_t align = JE_ALIGN(flags);

	return mms__guard_alloc_hook(fn, align ? MMS_GUARD_FAMILY_MEMALIGN : MMS_GUARD_FAMILY_MALLOC,
				     align > 16 ? align : 16, size, flags & JE_ZERO, ra);
}

void *mms__je_mallocx(size_t size, int flags)
{
	size_t size_ = size;

	if (OWN_CALL(malloc))
		return je_own_alloc(size, flags);
	if (unlikely(mms__guard_on))
		return je_guard_alloc(je_fn(flags), size, flags, RA);
	/* jemalloc's mallocx() sets no errno: its every NULL is a refusal. */
	HOOK_ALLOC_IF(je_fn(flags), JE_ALIGN(flags), size, mms__je.mallocx(size, flags), 1);
}

/* rallocx() of a guarded block with an alignment or MALLOCX_ZERO, which
 * guard.c's realloc does not keep: a new guarded block, the bytes copied. */
static __attribute__((noinline)) void *je_guard_rallocx(void *ptr, size_t size, int flags, uintptr_t ra)
{
	size_t old;
	void *r;

	if (!mms__usable_ours(ptr, &old))
		return mms__guard_realloc_hook(ptr, size, ra); /* not guarded: as realloc() */
	r = je_guard_alloc(MMS_ALLOC_REALLOC, size, flags, ra);
	if (r) {
		memcpy(r, ptr, old < size ? old : size);
		mms__guard_free_hook(ptr, MMS_GUARD_FAMILY_MALLOC, ra);
	}
	return r;
}

void *mms__je_rallocx(void *ptr, size_t size, int flags)
{
	/* A block of the arena (of the recorder's start) stays there. */
	if (unlikely(mms__arena_owns(ptr))) {
		size_t old = mms__arena_usable(ptr);
		void *r = je_own_alloc(size, flags);

		if (r) {
			memcpy(r, ptr, old < size ? old : size);
			mms__arena_free(ptr);
		}
		return r;
	}
	if (unlikely(mms__guard_on))
		return JE_ALIGN(flags) > 16 || flags & JE_ZERO ? je_guard_rallocx(ptr, size, flags, RA)
							       : mms__guard_realloc_hook(ptr, size, RA);
	return resize_recorded(ptr, size, RS_RALLOCX, 0, flags, NULL, NULL, RA);
}

size_t mms__je_xallocx(void *ptr, size_t size, size_t extra, int flags)
{
	size_t n;

	/* The arena's blocks and guarded ones never grow in place. */
	if (mms__usable_ours(ptr, &n))
		return n;
	resize_recorded(ptr, size, RS_XALLOCX, extra, flags, &n, NULL, RA);
	return n;
}

size_t mms__je_sallocx(const void *ptr, int flags)
{
	size_t n;

	return mms__usable_ours(ptr, &n) ? n : mms__je.sallocx(ptr, flags);
}

/* dallocx() and sdallocx(): free()'s checks, then jemalloc's call (a NULL,
 * which jemalloc does not take, goes to it as it came). */
#define JE_RELEASE(ptr, rel, size, flags)                                       \
	do {                                                                    \
		if (unlikely(!ptr || mms__arena_owns(ptr))) {                   \
			if (ptr)                                                \
				mms__arena_free(ptr);                           \
			else if (rel == REL_SDALLOCX)                           \
				mms__je.sdallocx(ptr, size, flags);             \
			else                                                    \
				mms__je.dallocx(ptr, flags);                    \
			return;                                                 \
		}                                                               \
		if (unlikely(mms__guard_on)) {                                  \
			mms__guard_free_hook(ptr, MMS_GUARD_FAMILY_MALLOC, RA); \
			return;                                                 \
		}                                                               \
		free_recorded(ptr, 0, rel, size, flags);                        \
	} while (0)

void mms__je_dallocx(void *ptr, int flags)
{
	JE_RELEASE(ptr, REL_DALLOCX, 0, flags);
}

void mms__je_sdallocx(void *ptr, size_t size, int flags)
{
	JE_RELEASE(ptr, REL_SDALLOCX, size, flags);
}
