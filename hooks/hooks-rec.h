/* SPDX-License-Identifier: MIT */
/* hooks-rec.h: what the hooks of the malloc family (hooks.c) and of the
 * replacement allocators' functions of their own (jemalloc.c,
 * mimalloc.c) share: recording an allocation, a refusal, a free and a
 * resize, guard mode's reentrancy guard, and the recorder's own
 * allocations. Inline, or static where the hot path calls out of line. */
#ifndef MMS_HOOKS_REC_H
#define MMS_HOOKS_REC_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "enter.h"
#include "hooks-int.h"
#include "log.h"
#include "stamp.h"
#include "unwind.h"

/* hooks.c: whether a call is the recorder's own (the recorder started
 * first when the real function is not known yet); realloc() in guard
 * mode; the usable size of a block of the recorder's arena or of a
 * guarded block (1 with *n set, else 0). */
int mms__own_call(void *const *real_fn) MMS_HIDDEN __attribute__((cold));
void *mms__guard_realloc_hook(void *ptr, size_t size, uintptr_t ra) MMS_HIDDEN;
/* realloc() whose caller is ra (mi_realloc()'s too). */
void *mms__realloc_common(void *ptr, size_t size, uintptr_t ra) MMS_HIDDEN;
int mms__usable_ours(const void *ptr, size_t *n) MMS_HIDDEN;

/* The hooks keep frame pointers: the word above the hook's frame pointer
 * (fp) is its return address, in its caller. */
#define CALLER(fp) (((const uintptr_t *)(fp))[1])

/* The parts out of line are static, in each file that includes this: a
 * call of a function of the same file spares the hot path the registers
 * that function does not use (GCC's -fipa-ra): free() pushed one more
 * when they were not. */

/* An allocation while the thread collects an operator's outputs or is in
 * a runtime's scope (before main, in pthread_create), or the dynamic
 * loader's or the CUDA driver's. */
static __attribute__((noinline, cold)) void rec_alloc_slow(struct mms_thread *t, unsigned fn, void *ptr, size_t size,
							   uint32_t stack, uint64_t stamp, uintptr_t ra, uintptr_t fp)
{
	unsigned kind = mms__tls_runtime ? mms__runtime_kind(ra) : 0;

	/* In a module's import, what the loader or the CUDA driver
	 * allocates is theirs. */
	if (kind == MMS_RT_PYIMPORT && (mms__in_code(&mms__ldso_code, ra) || mms__in_cuda(ra)))
		kind = 0;
	/* After start-up, ld.so allocates for a library it loads (dlopen:
	 * its link map, scope and version data; its TLS blocks; a failed
	 * dlopen's message): the loader's state, kept while the library is
	 * loaded, whether the program or a library called dlopen. */
	if (!kind && mms__in_code(&mms__ldso_code, ra))
		kind = MMS_RT_LOADER;
	/* The CUDA driver's own state (contexts, modules, streams), which
	 * it keeps until the process ends. */
	else if (!kind && mms__in_cuda(ra))
		kind = MMS_RT_CUDA;
	/* ... or through a C library function (strdup, regcomp): with
	 * stacks, the replay reads that off the event's stack. */
	else if (!kind && !mms__stacks_on && mms__in_code(&mms__libc_code, ra) &&
		 __atomic_load_n(&mms__cuda_code, __ATOMIC_ACQUIRE)->hi && mms__driver_through_libc(t, fp))
		kind = MMS_RT_CUDA;

	if (kind)
		mms__rec_addr_event(t, MMS_ALLOC_TAG(MMS_TAG_ALLOC_RT, fn), stamp, (uintptr_t)ptr, 3, size, stack, kind,
				    0);
	else
		mms__rec_addr_event(t, MMS_ALLOC_TAG(MMS_TAG_ALLOC, fn), stamp, (uintptr_t)ptr, 2, size, stack, 0, 0);
	if (mms__tls_watch_collect)
		mms__watch_note((uintptr_t)ptr, size);
}

/* An allocation with its stack taken already; ra: the return address of
 * the program's call of the allocator, in its caller; fp: the hook's own
 * frame. In a process that loaded the CUDA driver, an allocation from the
 * driver's code, or without stacks from libc's, takes the slow path. */
static inline void rec_alloc_with(struct mms_thread *t, unsigned fn, void *ptr, size_t size, uint32_t stack,
				  uintptr_t ra, uintptr_t fp)
{
	uint64_t stamp = mms__stamp_obtain_addr((uintptr_t)ptr, t->index);
	const struct mms_code *cuda = __atomic_load_n(&mms__cuda_code, __ATOMIC_ACQUIRE);

	if (unlikely(mms__tls_alloc.any) || unlikely(mms__in_code(&mms__ldso_code, ra)) ||
	    unlikely(cuda->hi && (mms__in_code(cuda, ra) || (!mms__stacks_on && mms__in_code(&mms__libc_code, ra)))))
		rec_alloc_slow(t, fn, ptr, size, stack, stamp, ra, fp);
	else
		mms__rec_addr_event(t, MMS_ALLOC_TAG(MMS_TAG_ALLOC, fn), stamp, (uintptr_t)ptr, 2, size, stack, 0, 0);
}

/* The C++ operators (mms__tls_cxx): what a malloc, memalign,
 * aligned_alloc or posix_memalign of size bytes that returned a block
 * records as its function when the thread is inside an operator new or
 * new[] that asked for that size (libstdc++ rounds an aligned one's size
 * up to the alignment): the operator's. Any other call of the family is
 * the program's, and ends the operator's mark: an operator makes one
 * block, and one its runtime refused is not made (it threw, or its new
 * handler's retry made it). */
static __attribute__((noinline, cold)) unsigned cxx_alloc_fn_slow(unsigned fn, size_t size)
{
	struct mms_tls_cxx c = mms__tls_cxx;

	mms__tls_cxx.fn = 0;
	if ((c.fn == MMS_ALLOC_NEW || c.fn == MMS_ALLOC_NEW_ARRAY) &&
	    (fn == MMS_ALLOC_MALLOC || fn == MMS_ALLOC_MEMALIGN || fn == MMS_ALLOC_ALIGNED_ALLOC ||
	     fn == MMS_ALLOC_POSIX_MEMALIGN) &&
	    (size == c.arg || (c.align && size == ((c.arg + c.align - 1) & ~(c.align - 1)))))
		return c.fn;
	return fn;
}

static inline unsigned cxx_alloc_fn(unsigned fn, size_t size)
{
	return likely(!mms__tls_cxx.fn) ? fn : cxx_alloc_fn_slow(fn, size);
}

/* The same for a free of ptr: the operator delete's or delete[]'s that
 * released ptr (its runtime's free), else fn. */
static __attribute__((noinline, cold)) unsigned cxx_free_fn_slow(unsigned fn, const void *ptr)
{
	struct mms_tls_cxx c = mms__tls_cxx;

	mms__tls_cxx.fn = 0;
	if ((c.fn == MMS_FREE_DELETE || c.fn == MMS_FREE_DELETE_ARRAY) && c.arg == (uintptr_t)ptr &&
	    fn == MMS_FREE_FREE)
		return c.fn;
	return fn;
}

static inline unsigned cxx_free_fn(unsigned fn, const void *ptr)
{
	return likely(!mms__tls_cxx.fn) ? fn : cxx_free_fn_slow(fn, ptr);
}

/* rec_alloc() inside a C++ operator: out of line, so that a call outside
 * the operators only tests the mark. */
static __attribute__((noinline)) void rec_alloc_cxx(struct mms_thread *t, unsigned fn, void *ptr, size_t size,
						    uintptr_t fp)
{
	rec_alloc_with(t, cxx_alloc_fn_slow(fn, size), ptr, size, mms__capture_stack_at(t, fp), CALLER(fp), fp);
}

/* fp: the hook's own frame (see mms__capture_stack_at). */
static inline void rec_alloc(struct mms_thread *t, unsigned fn, void *ptr, size_t size, uintptr_t fp)
{
	if (unlikely(mms__tls_cxx.fn))
		rec_alloc_cxx(t, fn, ptr, size, fp);
	else
		rec_alloc_with(t, fn, ptr, size, mms__capture_stack_at(t, fp), CALLER(fp), fp);
}

/* An allocation the allocator refused (ALLOC_FAIL): size bytes asked for
 * (saturated), align the alignment asked for (0: the function's own); fp:
 * the hook's own frame. Cold and out of line: the hot path keeps only the
 * test it had. The program reads errno next (ENOMEM): kept as it was. */
static __attribute__((noinline, cold)) void rec_alloc_fail(struct mms_thread *t, unsigned fn, size_t size, size_t align,
							   uintptr_t fp)
{
	int saved = errno;
	uint32_t stack = mms__capture_stack_at(t, fp);

	mms__rec_refusal(t, (uint8_t)(MMS_TAG_ALLOC_FAIL | fn), mms__stamp_obtain(), size, stack, align);
	errno = saved;
}

/* A free with the stack of the call that freed (FREE_STACK); fp: the
 * hook's own frame. Out of line: the path without stacks stays as it was. */
static __attribute__((noinline)) void rec_free_stack(struct mms_thread *t, unsigned fn, void *ptr, uint64_t stamp,
						     uintptr_t fp)
{
	mms__rec_free_stack(t, fn, (uintptr_t)ptr, stamp, mms__capture_stack_slow(t, fp));
}

/* A free with its stack taken already (0 when stacks are off): a FREE
 * record where frees keep no stack (free_stack=0). */
static inline void rec_free_with(struct mms_thread *t, unsigned fn, void *ptr, uint64_t stamp, uint32_t stack)
{
	if (mms__free_stacks_on)
		mms__rec_free_stack(t, fn, (uintptr_t)ptr, stamp, stack);
	else
		mms__rec_addr_event(t, (uint8_t)(MMS_TAG_FREE | fn), stamp, (uintptr_t)ptr, 0, 0, 0, 0, 0);
}

/* With stacks off, one test of the configuration more than before. */
static inline void rec_free(struct mms_thread *t, unsigned fn, void *ptr, uint64_t stamp, uintptr_t fp)
{
	if (mms__free_stacks_on)
		rec_free_stack(t, fn, ptr, stamp, fp);
	else
		rec_free_with(t, fn, ptr, stamp, 0);
}

#define FRAME ((uintptr_t)__builtin_frame_address(0))
/* The caller of the hook (guard mode tells the loader's calls apart). */
#define RA ((uintptr_t)__builtin_return_address(0))

/* req: the bytes asked for, as a failure records them (calloc's product
 * saturated); align: the alignment asked for, 0 for the function's own;
 * refused: whether a NULL is a refusal (HOOK_ALLOC: with ENOMEM, not with
 * EINVAL, a bad alignment). */
#define HOOK_ALLOC_IF(fn, align, req, call, refused)                          \
	do {                                                                  \
		struct mms_thread *t = mms__enter();                          \
		void *r_ = (call);                                            \
		if (t) {                                                      \
			if (r_)                                               \
				rec_alloc(t, fn, r_, size_, FRAME);           \
			else if (refused)                                     \
				rec_alloc_fail(t, fn, (req), (align), FRAME); \
			mms__leave();                                         \
		}                                                             \
		return r_;                                                    \
	} while (0)
#define HOOK_ALLOC(fn, align, req, call) HOOK_ALLOC_IF(fn, align, req, call, errno == ENOMEM)

/* Takes the reentrancy guard for guard.c: 0 when the thread is inside a
 * hook already; else 1, with *t the recording thread or NULL. */
static inline int guard_enter(struct mms_thread **t, uintptr_t ra)
{
	if (mms__tls_busy)
		return 0;
	*t = mms__enter();
	mms__tls_busy = 1;
	/* The stacks guard.c captures start in its own frames: the hooked
	 * call's return address is told here (mms_thread.hook_ra). */
	if (*t)
		(*t)->hook_ra = ra;
	return 1;
}

static inline void guard_leave(struct mms_thread *t)
{
	if (t)
		t->hook_ra = 0;
	mms__leave();
}

#define GUARD_ALLOC(fn, family, align, size, zero)                                       \
	do {                                                                             \
		if (unlikely(mms__guard_on))                                             \
			return mms__guard_alloc_hook(fn, family, align, size, zero, RA); \
	} while (0)

#define OWN_CALL(fn) (unlikely(!mms__real.fn || mms__tls_busy == 2) && mms__own_call((void *const *)&mms__real.fn))

/* A block of the arena; from the real allocator only for a signal handler
 * that interrupted this thread inside the arena, or when the arena is
 * full. */
static inline void *own_alloc(size_t size, size_t align)
{
	void *p = mms__arena_alloc(size, align);

	if (!p && mms__real.memalign)
		p = mms__real.memalign(align, size);
	return p;
}

/* How a block is handed back to the real allocator: free(), or
 * jemalloc's dallocx() or sdallocx() with the program's size and flags. */
enum release { REL_FREE, REL_DALLOCX, REL_SDALLOCX };

/* free() past its arena and guard mode checks: ra, when not 0, is the
 * hooked call's return address (an operator delete's caller; inlined,
 * free() with 0 stores nothing for it); rel, size and flags: the real
 * call. */
static inline __attribute__((always_inline)) void free_recorded(void *ptr, uintptr_t ra, enum release rel, size_t size,
								int flags)
{
	struct mms_thread *t = mms__enter();

	if (t) {
		if (ra)
			t->hook_ra = ra;
		mms__note_release((uintptr_t)ptr, t->index);
		rec_free(t, cxx_free_fn(MMS_FREE_FREE, ptr), ptr, mms__stamp_release_heap(), FRAME);
		if (ra)
			t->hook_ra = 0;
		mms__leave();
	}
	mms__release_watched((uintptr_t)ptr, 0);
	if (rel == REL_SDALLOCX)
		mms__je.sdallocx(ptr, size, flags);
	else if (rel == REL_DALLOCX)
		mms__je.dallocx(ptr, flags);
	else
		mms__real.free(ptr);
}

/* jemalloc's flags (mallocx() and its family, below): the log2 of the
 * alignment in the low 6 bits (0: malloc's), MALLOCX_ZERO. */
#define JE_ZERO 0x40
#define JE_ALIGN(flags) ((flags)&0x3f ? (size_t)1 << ((flags)&0x3f) : 0)

/* How a block is resized: realloc(), jemalloc's rallocx() or xallocx()
 * (in place, or not at all: its result is the block's real size then,
 * below size when it could not grow there), or one of mimalloc's
 * functions (struct mi_call, below). */
enum resize { RS_REALLOC, RS_RALLOCX, RS_XALLOCX, RS_MI };

/* A call of one of mimalloc's functions: its index in mms__mi_real[]
 * and its arguments, in order (see mi_call()); whether it refused for
 * want of memory. */
struct mi_call {
	unsigned fn;
	const uintptr_t *v;
	int refused;
};
/* mimalloc.c: the call, told whether mimalloc refused for want of memory
 * (ENOMEM); whether the function resizes in place or fails, and whether
 * it frees the block when it fails. */
void *mms__mi_call_told(unsigned fn, const uintptr_t *v, int *refused) MMS_HIDDEN;
int mms__mi_in_place(unsigned fn) MMS_HIDDEN;
int mms__mi_frees_on_failure(unsigned fn) MMS_HIDDEN;

static inline __attribute__((always_inline)) void *resize_call(void *ptr, size_t size, enum resize op, size_t extra,
							       int flags, size_t *xsize, struct mi_call *mi)
{
	if (op == RS_XALLOCX) {
		*xsize = mms__je.xallocx(ptr, size, extra, flags);
		return *xsize >= size ? ptr : NULL;
	}
	if (op == RS_MI)
		return mms__mi_call_told(mi->fn, mi->v, &mi->refused);
	return op == RS_RALLOCX ? mms__je.rallocx(ptr, size, flags) : mms__real.realloc(ptr, size);
}

/* A resize past its arena and guard mode checks: the old block is stamped
 * released before the call, the new one obtained after it; both records
 * are written after the call, when its outcome is known (a failed realloc
 * released nothing; an xallocx() that resized in place records the block
 * at its address again, of the size asked for). The thread stays inside
 * the hook across the call, so nothing of its own lands between. */
static inline __attribute__((always_inline)) void *resize_recorded(void *ptr, size_t size, enum resize op, size_t extra,
								   int flags, size_t *xsize, struct mi_call *mi,
								   uintptr_t ra)
{
	struct mms_thread *t;
	uint64_t t1;
	void *r;

	/* The block may move: a watch on it ends here either way. */
	if (ptr)
		mms__release_watched((uintptr_t)ptr, 0);
	t = mms__enter();
	if (!t)
		return resize_call(ptr, size, op, extra, flags, xsize, mi);
	if (ptr)
		mms__note_release((uintptr_t)ptr, t->index);
	t1 = mms__stamp_release_heap();
	r = resize_call(ptr, size, op, extra, flags, xsize, mi);
	/* jemalloc's rallocx() sets no errno: its every NULL is a refusal;
	 * an xallocx() or mi_expand() that could not grow in place refused
	 * nothing. */
	if (unlikely(!r) && size &&
	    (op == RS_RALLOCX || (op == RS_REALLOC && errno == ENOMEM) ||
	     (op == RS_MI && !mms__mi_in_place(mi->fn) && mi->refused)))
		rec_alloc_fail(t, MMS_ALLOC_REALLOC, size, op == RS_RALLOCX ? JE_ALIGN(flags) : 0, FRAME);
	/* glibc's realloc(ptr, 0) freed ptr, as mi_reallocf() frees it when
	 * it fails. */
	if (r || (op == RS_REALLOC && ptr && size == 0) || (op == RS_MI && ptr && mms__mi_frees_on_failure(mi->fn))) {
		/* One walk serves both records: one call freed and allocated. */
		uint32_t stack = mms__capture_stack_at(t, FRAME);

		if (ptr)
			rec_free_with(t, MMS_FREE_REALLOC, ptr, t1, stack);
		if (r)
			rec_alloc_with(t, MMS_ALLOC_REALLOC, r, size, stack, ra, FRAME);
	}
	mms__leave();
	return r;
}

#endif /* MMS_HOOKS_REC_H */
