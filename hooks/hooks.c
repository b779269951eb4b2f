/* SPDX-License-Identifier: MIT */
/* hooks.c: starts the recorder, and interposes the malloc family: records
 * each call as an event stamped by the ordering rule (the mmap family:
 * mapping.c). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "enter.h"
#include "hooks-int.h"
#include "log.h"
#include "stamp.h"
#include "unwind.h"

struct mms_real mms__real;
mms_config_t mms__config;
volatile int mms__recording;
__thread union mms_tls_alloc mms__tls_alloc;
volatile int mms__active;
/* Memory events are collected (deferred mode and --steps turn this off). */
volatile int mms__collecting = 1;


/* --- start-up ------------------------------------------------------------ */

int mms__init_state;

static void die_early(const char *what)
{
	static const char pre[] = "msmemscope: cannot find the real ";
	ssize_t r = write(2, pre, sizeof pre - 1);
	r = write(2, what, strlen(what));
	r = write(2, "; the recorder cannot run in this process\n", 42);
	(void)r;
	syscall(SYS_exit_group, 127);
}

#define RESOLVE(name)                                                                                              \
	do {                                                                                                       \
		*(void **)&mms__real.name = dlsym(RTLD_NEXT, #name);                                               \
	} while (0)

static void resolve_real(void)
{
	RESOLVE(calloc);
	RESOLVE(malloc);
	RESOLVE(free);
	RESOLVE(realloc);
	RESOLVE(posix_memalign);
	RESOLVE(aligned_alloc);
	RESOLVE(memalign);
	RESOLVE(valloc);
	RESOLVE(pvalloc);
	RESOLVE(malloc_usable_size);
	RESOLVE(mmap);
	RESOLVE(munmap);
	RESOLVE(mprotect);
	RESOLVE(pkey_mprotect);
	RESOLVE(madvise);
	RESOLVE(mlockall);
	RESOLVE(munlockall);
	RESOLVE(prctl);
	RESOLVE(mremap);
	RESOLVE(dlclose);
	RESOLVE(pthread_setname_np);
	RESOLVE(pthread_getattr_np);
	RESOLVE(execve);
	RESOLVE(execv);
	RESOLVE(execvp);
	RESOLVE(execvpe);
	RESOLVE(fexecve);
	RESOLVE(unshare);
	RESOLVE(setns);
	RESOLVE(clock_gettime);
	*(void **)&mms__real.register_atfork = dlsym(RTLD_NEXT, "__register_atfork");
	if (!mms__real.malloc || !mms__real.free || !mms__real.calloc || !mms__real.realloc)
		die_early("malloc");
	if (!mms__real.mmap || !mms__real.munmap)
		die_early("mmap");
}

/* Reads the recording configuration: MSMEMSCOPE_CONFIG and the variables
 * of single keys (common/conf.c). What it cannot use is skipped, and said
 * on stderr unless log_level=error: the launcher checked what it wrote,
 * but a configuration set by hand (gdb's `set environment', a script)
 * was checked by nobody. */
static void config_read(void)
{
	mms_config_error_t err = { .expected = "" };
	char line[512];
	int n = 0;

	mms_config_getenv(&mms__config, NULL, &err);
	if (mms__config.log_level == MMS_CONFIG_LOG_ERROR || (!mms__config.bad && !mms__config.unknown))
		return;
	if (mms__config.bad)
		n = snprintf(line, sizeof line, "msmemscope: warning: %s%s%s=%s: expected %s; ignored\n", err.source,
			     strcmp(err.source, "MSMEMSCOPE_CONFIG") ? "" : ": ",
			     strcmp(err.source, "MSMEMSCOPE_CONFIG") ? "" : err.key, err.value, err.expected);
	if (mms__config.unknown && n >= 0 && (size_t)n < sizeof line)
		n += snprintf(line + n, sizeof line - (size_t)n,
			      "msmemscope: warning: MSMEMSCOPE_CONFIG: %s%s: not a key of this recorder; ignored\n",
			      err.unknown, mms__config.unknown > 1 ? " and others" : "");
	mms__say(line, n, sizeof line);
}

/* The first half of the start: the real functions, nothing else (dlsym
 * allocates only on failure). Enough for the mmap family, which an
 * allocator linked into the program calls from its own start-up, under
 * its own lock: the rest of the start allocates (fopen), which would call
 * that allocator again and wait for the lock forever. */
void mms__init_resolve(void)
{
	int expect = MMS_INIT_NONE, busy = mms__tls_busy;

	if (!__atomic_compare_exchange_n(&mms__init_state, &expect, MMS_INIT_RESOLVING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return; /* done, or under way in this thread (dlsym), or another's */
	mms__tls_busy = 2;
	resolve_real();
	mms__say_init();
	mms__fds_init();
	__atomic_store_n(&mms__init_state, MMS_INIT_RESOLVED, __ATOMIC_RELEASE);
	mms__tls_busy = busy;
}

void mms__init(void)
{
	int expect = MMS_INIT_RESOLVED;

	mms__init_resolve();
	if (!__atomic_compare_exchange_n(&mms__init_state, &expect, MMS_INIT_STARTING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return; /* under way in this thread (dlsym), or another's */
	mms__tls_busy = 2;
	mms__runtime_code_init();
	mms__elfsym_init();
	mms__redirect_init();
	mms__gdb_init();
	config_read();
	mms__pystack_init();
	mms__watch_init();
	mms__guard_init();
	mms__clock_init(mms__config.clock);
	mms__unwind_init();
	mms__pager_init();
	if (mms__threads_init() == 0 && mms__intern_init() == 0) {
		mms__api_init();
		mms__process_init();
		mms__runtime_init();
		mms__cuda_init();
		if (mms__log_open() == 0) {
			struct mms_thread *t = mms__thread();
			uint8_t *p = t ? mms__rec_begin(t, 16) : NULL;
			if (p)
				mms__rec_commit(t, mms__rec_head(t, p, MMS_TAG_SYSTEM | MMS_SYSTEM_INIT,
								 mms__stamp_obtain()));
		}
	}
	__atomic_store_n(&mms__init_state, MMS_INIT_DONE, __ATOMIC_RELEASE);
	mms__tls_busy = 0;
}

__attribute__((constructor)) static void hooks_constructor(void)
{
	mms__init();
}

/* --- the hot path ------------------------------------------------------ */

/* An event that arrived while this thread was inside a hook: a signal
 * handler's, or the real allocator's own: ra, the hook's caller, in its
 * code (never glibc's, whose malloc calls its mmap directly), or in ours
 * (the real function a hook called jumped to another of the family: a
 * memalign that ends in aligned_alloc). A handler's cannot be written
 * without tearing the record under way, so it is counted in the header,
 * which the replay reports. */
void mms__lost_event(uintptr_t ra)
{
	if (mms__recording && mms__collecting && !mms__in_code(&mms__alloc_code, ra) &&
	    !(ra - mms__self_lo < mms__self_hi - mms__self_lo))
		__atomic_fetch_add(&mms__header->lost_events, 1, __ATOMIC_RELAXED);
}

/* The hooks keep frame pointers: the word above the hook's frame pointer
 * (fp) is its return address, in its caller. */
#define CALLER(fp) (((const uintptr_t *)(fp))[1])

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
		mms__rec_addr_event(t, (uint8_t)(MMS_TAG_ALLOC_RT | fn), stamp, (uintptr_t)ptr, 3, size, stack, kind,
				    0);
	else
		mms__rec_addr_event(t, (uint8_t)(MMS_TAG_ALLOC | fn), stamp, (uintptr_t)ptr, 2, size, stack, 0, 0);
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
		mms__rec_addr_event(t, (uint8_t)(MMS_TAG_ALLOC | fn), stamp, (uintptr_t)ptr, 2, size, stack, 0, 0);
}

/* fp: the hook's own frame (see mms__capture_stack_at). */
static void rec_alloc(struct mms_thread *t, unsigned fn, void *ptr, size_t size, uintptr_t fp)
{
	rec_alloc_with(t, fn, ptr, size, mms__capture_stack_at(t, fp), CALLER(fp), fp);
}

/* An allocation the allocator refused (ALLOC_FAIL): size bytes asked for
 * (saturated), align the alignment asked for (0: the function's own); fp:
 * the hook's own frame. Cold and out of line: the hot path keeps only the
 * test it had. The program reads errno next (ENOMEM): kept as it was. */
static __attribute__((noinline, cold)) void rec_alloc_fail(struct mms_thread *t, unsigned fn, size_t size,
							  size_t align, uintptr_t fp)
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

/* --- guard mode (guard.c) ---------------------------------------------------
 * With guard=1 every allocation and free of the program goes through
 * guard.c, recorded or not; a call made inside a hook (a signal handler's)
 * is passed through unguarded. */

void mms__guard_rec_alloc(struct mms_thread *t, unsigned fn, void *ptr, size_t size, uintptr_t ra)
{
	rec_alloc_with(t, fn, ptr, size, mms__capture_stack_at(t, FRAME), ra, FRAME);
}

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

void *mms__guard_alloc_hook(unsigned fn, unsigned family, size_t align, size_t size, int zero, uintptr_t ra)
{
	struct mms_thread *t;
	void *r;

	if (!guard_enter(&t, ra))
		return zero ? mms__real.calloc(1, size)
			    : align > 16 ? mms__real.memalign(align, size) : mms__real.malloc(size);
	if (unlikely(mms__guard_plain_caller(ra)))
		r = mms__guard_alloc_plain(t, fn, size, zero, ra);
	else
		r = mms__guard_alloc(t, fn, family, align, size, zero, ra);
	guard_leave(t);
	return r;
}

void mms__guard_free_hook(void *ptr, unsigned family, uintptr_t ra)
{
	struct mms_thread *t;

	if (!guard_enter(&t, ra)) {
		mms__real.free(ptr);
		return;
	}
	mms__guard_free(t, ptr, family, MMS_FREE_FREE | (mms__guard_plain_caller(ra) ? MMS_GUARD_FREE_THEIRS : 0));
	guard_leave(t);
}

static __attribute__((noinline)) void *guard_realloc_hook(void *ptr, size_t size, uintptr_t ra)
{
	struct mms_thread *t;
	void *r;

	if (!guard_enter(&t, ra))
		return mms__real.realloc(ptr, size);
	if (!ptr && unlikely(mms__guard_plain_caller(ra)))
		r = mms__guard_alloc_plain(t, MMS_ALLOC_REALLOC, size, 0, ra);
	else
		r = mms__guard_realloc(t, ptr, size, ra);
	guard_leave(t);
	return r;
}

#define GUARD_ALLOC(fn, family, align, size, zero)                                                                 \
	do {                                                                                                       \
		if (unlikely(mms__guard_on))                                                                       \
			return mms__guard_alloc_hook(fn, family, align, size, zero, RA);                                 \
	} while (0)

/* --- the recorder's own allocations ----------------------------------------
 * What a thread allocates while it is inside the recorder (busy == 2: our
 * code, or glibc working for it), or before the real allocator is known
 * (dlsym's own allocations at start-up), comes from the recorder's arena
 * (arena.c), never from the program's heap. free() and realloc() know
 * these blocks by their address. */

/* True when this call is the recorder's own: starts the recorder first
 * when the real function is not known yet. */
static __attribute__((noinline, cold)) int own_call(void *const *real_fn)
{
	if (!*real_fn)
		mms__init(); /* returns at once while under way in this thread */
	return !*real_fn || mms__tls_busy == 2;
}

#define OWN_CALL(fn) (unlikely(!mms__real.fn || mms__tls_busy == 2) && own_call((void *const *)&mms__real.fn))

/* A block of the arena; from the real allocator only for a signal handler
 * that interrupted this thread inside the arena, or when the arena is
 * full. */
static void *own_alloc(size_t size, size_t align)
{
	void *p = mms__arena_alloc(size, align);

	if (!p && mms__real.memalign)
		p = mms__real.memalign(align, size);
	return p;
}

/* --- a replacement allocator's C++ operators (newdelete.c) -----------------
 * What the malloc and free hooks do, for an operator new or delete whose
 * caller (ra) is the hooked call's: the stack starts there, and the
 * runtimes' blocks are told by it (the allocator's own state, allocated
 * by its constructors, is its own). */

void *mms__hook_new(size_t size, size_t align, uintptr_t ra)
{
	struct mms_thread *t;
	void *r;

	if (OWN_CALL(malloc))
		return own_alloc(size, align > 16 ? align : 16);
	t = mms__enter();
	if (t)
		t->hook_ra = ra;
	r = align > 16 ? mms__real.memalign(align, size) : mms__real.malloc(size);
	if (t) {
		if (r)
			rec_alloc_with(t, MMS_ALLOC_MALLOC, r, size, mms__capture_stack_at(t, FRAME), ra, FRAME);
		t->hook_ra = 0;
		mms__leave();
	}
	return r;
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
		rec_free(t, MMS_FREE_FREE, ptr, mms__stamp_release_heap(), FRAME);
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

void mms__hook_delete(void *ptr, uintptr_t ra)
{
	if (unlikely(!ptr))
		return;
	if (unlikely(mms__arena_owns(ptr))) {
		mms__arena_free(ptr);
		return;
	}
	free_recorded(ptr, ra, REL_FREE, 0, 0);
}

MMS_EXPORT void *malloc(size_t size)
{
	size_t size_ = size;

	if (OWN_CALL(malloc))
		return own_alloc(size, 16);
	GUARD_ALLOC(MMS_ALLOC_MALLOC, MMS_GUARD_FAMILY_MALLOC, 16, size, 0);
	HOOK_ALLOC(MMS_ALLOC_MALLOC, 0, size, mms__real.malloc(size));
}

MMS_EXPORT void *calloc(size_t n, size_t size)
{
	size_t size_ = n * size;

	if (OWN_CALL(calloc)) {
		void *p;

		if (size && n > SIZE_MAX / size) {
			errno = ENOMEM;
			return NULL;
		}
		p = own_alloc(size_, 16);
		if (p)
			memset(p, 0, size_);
		return p;
	}
	if (unlikely(mms__guard_on)) {
		if (size && n > SIZE_MAX / size) {
			errno = ENOMEM;
			return NULL;
		}
		return mms__guard_alloc_hook(MMS_ALLOC_CALLOC, MMS_GUARD_FAMILY_MALLOC, 16, size_, 1, RA);
	}
	HOOK_ALLOC(MMS_ALLOC_CALLOC, 0, size && n > SIZE_MAX / size ? SIZE_MAX : size_, mms__real.calloc(n, size));
}

MMS_EXPORT void free(void *ptr)
{
	if (unlikely(!ptr))
		return;
	if (unlikely(mms__arena_owns(ptr))) {
		mms__arena_free(ptr);
		return;
	}
	if (unlikely(mms__guard_on)) {
		mms__guard_free_hook(ptr, MMS_GUARD_FAMILY_MALLOC, RA);
		return;
	}
	free_recorded(ptr, 0, REL_FREE, 0, 0);
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
static void *mi_call(unsigned fn, const uintptr_t *v);
static void *mi_call_told(unsigned fn, const uintptr_t *v, int *refused);
static int mi_in_place(unsigned fn);
static int mi_frees_on_failure(unsigned fn);

static inline __attribute__((always_inline)) void *resize_call(void *ptr, size_t size, enum resize op, size_t extra,
							       int flags, size_t *xsize, struct mi_call *mi)
{
	if (op == RS_XALLOCX) {
		*xsize = mms__je.xallocx(ptr, size, extra, flags);
		return *xsize >= size ? ptr : NULL;
	}
	if (op == RS_MI)
		return mi_call_told(mi->fn, mi->v, &mi->refused);
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
	     (op == RS_MI && !mi_in_place(mi->fn) && mi->refused)))
		rec_alloc_fail(t, MMS_ALLOC_REALLOC, size, op == RS_RALLOCX ? JE_ALIGN(flags) : 0, FRAME);
	/* glibc's realloc(ptr, 0) freed ptr, as mi_reallocf() frees it when
	 * it fails. */
	if (r || (op == RS_REALLOC && ptr && size == 0) || (op == RS_MI && ptr && mi_frees_on_failure(mi->fn))) {
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

static void *realloc_common(void *ptr, size_t size, uintptr_t ra)
{
	/* A block of the arena stays there, whoever resizes it. */
	if (unlikely(ptr && mms__arena_owns(ptr)))
		return mms__arena_realloc(ptr, size);
	if (!ptr && OWN_CALL(realloc))
		return own_alloc(size, 16);
	if (unlikely(!mms__real.realloc))
		return NULL;
	if (unlikely(mms__guard_on))
		return guard_realloc_hook(ptr, size, ra);
	return resize_recorded(ptr, size, RS_REALLOC, 0, 0, NULL, NULL, ra);
}

MMS_EXPORT void *realloc(void *ptr, size_t size)
{
	return realloc_common(ptr, size, RA);
}

/* Not forwarded to the real reallocarray: glibc's calls realloc through
 * the PLT, which would enter this hook a second time. */
MMS_EXPORT void *reallocarray(void *ptr, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc_common(ptr, n * size, RA);
}

MMS_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	struct mms_thread *t;
	int r;

	if (OWN_CALL(posix_memalign)) {
		void *p;

		if (align < sizeof(void *) || (align & (align - 1)))
			return EINVAL;
		p = own_alloc(size, align);
		if (!p)
			return ENOMEM;
		*out = p;
		return 0;
	}
	if (unlikely(mms__guard_on)) {
		void *p;

		if (align < sizeof(void *) || (align & (align - 1)))
			return EINVAL;
		p = mms__guard_alloc_hook(MMS_ALLOC_POSIX_MEMALIGN, MMS_GUARD_FAMILY_MEMALIGN, align, size, 0, 0);
		if (!p)
			return ENOMEM;
		*out = p;
		return 0;
	}
	t = mms__enter();
	r = mms__real.posix_memalign(out, align, size);
	if (t) {
		if (r == 0)
			rec_alloc(t, MMS_ALLOC_POSIX_MEMALIGN, *out, size, FRAME);
		else if (r == ENOMEM)
			rec_alloc_fail(t, MMS_ALLOC_POSIX_MEMALIGN, size, align, FRAME);
		mms__leave();
	}
	return r;
}

MMS_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	size_t size_ = size;

	if (OWN_CALL(aligned_alloc))
		return own_alloc(size, align < 16 ? 16 : align);
	if (unlikely(mms__guard_on)) {
		size_t a = align;

		if (!align || (align & (align - 1))) {
			/* C libraries differ on such an alignment (glibc before
			 * 2.38 rounds it up, as memalign does; later ones refuse
			 * it, EINVAL): the program gets what its own would give,
			 * which is asked with one byte. */
			void *probe = mms__real.aligned_alloc(align, 1);

			if (!probe)
				return NULL; /* with its errno */
			mms__real.free(probe);
			for (a = 16; a < align && a < ((size_t)1 << 62);)
				a <<= 1;
		}
		return mms__guard_alloc_hook(MMS_ALLOC_ALIGNED_ALLOC, MMS_GUARD_FAMILY_MEMALIGN, a, size, 0, 0);
	}
	HOOK_ALLOC(MMS_ALLOC_ALIGNED_ALLOC, align, size, mms__real.aligned_alloc(align, size));
}

MMS_EXPORT void *memalign(size_t align, size_t size)
{
	size_t size_ = size;

	if (OWN_CALL(memalign))
		return own_alloc(size, align < 16 ? 16 : align);
	if (unlikely(mms__guard_on)) {
		size_t a = 16;

		/* As glibc: the alignment rounded up to a power of two. */
		while (a < align && a < ((size_t)1 << 62))
			a <<= 1;
		return mms__guard_alloc_hook(MMS_ALLOC_MEMALIGN, MMS_GUARD_FAMILY_MEMALIGN, a, size, 0, 0);
	}
	HOOK_ALLOC(MMS_ALLOC_MEMALIGN, align, size, mms__real.memalign(align, size));
}

MMS_EXPORT void *valloc(size_t size)
{
	size_t size_ = size;

	if (OWN_CALL(valloc))
		return own_alloc(size, 4096);
	GUARD_ALLOC(MMS_ALLOC_VALLOC, MMS_GUARD_FAMILY_MALLOC, (size_t)sysconf(_SC_PAGESIZE), size, 0);
	HOOK_ALLOC(MMS_ALLOC_VALLOC, 0, size, mms__real.valloc(size));
}

MMS_EXPORT void *pvalloc(size_t size)
{
	/* pvalloc rounds up to whole pages; the block is that large. */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t size_ = size ? (size + page - 1) & ~(page - 1) : page;

	if (OWN_CALL(pvalloc))
		return own_alloc(size_, 4096);
	GUARD_ALLOC(MMS_ALLOC_PVALLOC, MMS_GUARD_FAMILY_MALLOC, page, size_, 0);
	HOOK_ALLOC(MMS_ALLOC_PVALLOC, 0, size, mms__real.pvalloc(size));
}

/* The usable size of a block of the recorder's arena, or of a guarded
 * block (guard mode moves the program's bytes inside a larger block: a
 * guarded block's is what was asked for): 1 with *n set, else 0. */
static int usable_ours(const void *ptr, size_t *n)
{
	int found = 0;

	if (mms__arena_owns(ptr)) {
		*n = mms__arena_usable(ptr);
		return 1;
	}
	if (unlikely(mms__guard_on) && !mms__tls_busy) {
		mms__tls_busy = 1;
		found = mms__guard_usable(ptr, n);
		mms__tls_busy = 0;
	}
	return found;
}

MMS_EXPORT size_t malloc_usable_size(void *ptr)
{
	size_t n;

	if (!ptr)
		return 0;
	if (usable_ours(ptr, &n))
		return n;
	if (!mms__real.malloc_usable_size)
		mms__init();
	return mms__real.malloc_usable_size ? mms__real.malloc_usable_size(ptr) : 0;
}

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

	if (!usable_ours(ptr, &old))
		return guard_realloc_hook(ptr, size, ra); /* not guarded: as realloc() */
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
							       : guard_realloc_hook(ptr, size, RA);
	return resize_recorded(ptr, size, RS_RALLOCX, 0, flags, NULL, NULL, RA);
}

size_t mms__je_xallocx(void *ptr, size_t size, size_t extra, int flags)
{
	size_t n;

	/* The arena's blocks and guarded ones never grow in place. */
	if (usable_ours(ptr, &n))
		return n;
	resize_recorded(ptr, size, RS_XALLOCX, extra, flags, &n, NULL, RA);
	return n;
}

size_t mms__je_sallocx(const void *ptr, int flags)
{
	size_t n;

	return usable_ours(ptr, &n) ? n : mms__je.sallocx(ptr, flags);
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

/* --- mimalloc's functions of its own (redirect.c) ----------------------------
 * Where mimalloc is the allocator the hooks forward to (a program linked
 * with -lmimalloc, or mimalloc preloaded after the recorder), a program may
 * also call its mi_ functions by name. Those that are the malloc family
 * under other names (mi_malloc, mi_free, mi_new) go to the family's hooks;
 * the others come here: each calls mimalloc's own with the program's
 * arguments and is recorded as the malloc family's are (an allocation as
 * malloc, as calloc when it zeroes, as aligned_alloc with an alignment; a
 * resize as realloc; mi_expand() as jemalloc's xallocx()). A heap's
 * functions (mi_heap_malloc and the others) allocate in that heap, and
 * mi_heap_destroy() frees its blocks without a call each: they are
 * visited first (mi_heap_visit_blocks()) and recorded freed. In guard mode
 * the functions without a heap make guarded blocks, as the family's hooks
 * do; a heap's blocks, and those aligned at an offset (which a guarded
 * block cannot be), stay mimalloc's, plain blocks of the guard's set. */
void *mms__mi_real[MMS_MI_COUNT];

/* What a function takes, in this order, and does. */
enum {
	MI_HEAP = 1 << 0,    /* a heap */
	MI_RESIZE = 1 << 1,  /* a block */
	MI_N = 1 << 2,       /* a count of elements of the size */
	MI_ALIGN = 1 << 3,   /* after the size, an alignment */
	MI_AT = 1 << 4,      /* and an offset, where the alignment holds */
	MI_ZERO = 1 << 5,    /* zeroes what it allocates */
	MI_FREEF = 1 << 6,   /* frees the block when it fails */
	MI_INPLACE = 1 << 7, /* resizes the block where it is, or fails */
	MI_COPY = 1 << 8,    /* a copy of a string (heap, string, ...) */
};

static const uint16_t mi_flags[MMS_MI_COUNT] = {
	[MMS_MI_ZALLOC] = MI_ZERO,
	[MMS_MI_ZALLOC_SMALL] = MI_ZERO,
	[MMS_MI_MALLOCN] = MI_N,
	[MMS_MI_MALLOC_ALIGNED] = MI_ALIGN,
	[MMS_MI_MALLOC_ALIGNED_AT] = MI_ALIGN | MI_AT,
	[MMS_MI_ZALLOC_ALIGNED] = MI_ZERO | MI_ALIGN,
	[MMS_MI_ZALLOC_ALIGNED_AT] = MI_ZERO | MI_ALIGN | MI_AT,
	[MMS_MI_CALLOC_ALIGNED] = MI_ZERO | MI_N | MI_ALIGN,
	[MMS_MI_CALLOC_ALIGNED_AT] = MI_ZERO | MI_N | MI_ALIGN | MI_AT,
	[MMS_MI_HEAP_MALLOC] = MI_HEAP,
	[MMS_MI_HEAP_MALLOC_SMALL] = MI_HEAP,
	[MMS_MI_HEAP_ZALLOC] = MI_HEAP | MI_ZERO,
	[MMS_MI_HEAP_CALLOC] = MI_HEAP | MI_ZERO | MI_N,
	[MMS_MI_HEAP_MALLOCN] = MI_HEAP | MI_N,
	[MMS_MI_HEAP_MALLOC_ALIGNED] = MI_HEAP | MI_ALIGN,
	[MMS_MI_HEAP_MALLOC_ALIGNED_AT] = MI_HEAP | MI_ALIGN | MI_AT,
	[MMS_MI_HEAP_ZALLOC_ALIGNED] = MI_HEAP | MI_ZERO | MI_ALIGN,
	[MMS_MI_HEAP_ZALLOC_ALIGNED_AT] = MI_HEAP | MI_ZERO | MI_ALIGN | MI_AT,
	[MMS_MI_HEAP_CALLOC_ALIGNED] = MI_HEAP | MI_ZERO | MI_N | MI_ALIGN,
	[MMS_MI_HEAP_CALLOC_ALIGNED_AT] = MI_HEAP | MI_ZERO | MI_N | MI_ALIGN | MI_AT,
	[MMS_MI_STRDUP] = MI_COPY,
	[MMS_MI_STRNDUP] = MI_COPY,
	[MMS_MI_REALPATH] = MI_COPY,
	[MMS_MI_HEAP_STRDUP] = MI_HEAP | MI_COPY,
	[MMS_MI_HEAP_STRNDUP] = MI_HEAP | MI_COPY,
	[MMS_MI_HEAP_REALPATH] = MI_HEAP | MI_COPY,
	[MMS_MI_REALLOCN] = MI_RESIZE | MI_N,
	[MMS_MI_REALLOCF] = MI_RESIZE | MI_FREEF,
	[MMS_MI_REZALLOC] = MI_RESIZE | MI_ZERO,
	[MMS_MI_RECALLOC] = MI_RESIZE | MI_ZERO | MI_N,
	[MMS_MI_REALLOC_ALIGNED] = MI_RESIZE | MI_ALIGN,
	[MMS_MI_REALLOC_ALIGNED_AT] = MI_RESIZE | MI_ALIGN | MI_AT,
	[MMS_MI_REZALLOC_ALIGNED] = MI_RESIZE | MI_ZERO | MI_ALIGN,
	[MMS_MI_REZALLOC_ALIGNED_AT] = MI_RESIZE | MI_ZERO | MI_ALIGN | MI_AT,
	[MMS_MI_RECALLOC_ALIGNED] = MI_RESIZE | MI_ZERO | MI_N | MI_ALIGN,
	[MMS_MI_RECALLOC_ALIGNED_AT] = MI_RESIZE | MI_ZERO | MI_N | MI_ALIGN | MI_AT,
	[MMS_MI_EXPAND] = MI_RESIZE | MI_INPLACE,
	[MMS_MI_HEAP_REALLOC] = MI_HEAP | MI_RESIZE,
	[MMS_MI_HEAP_REALLOCN] = MI_HEAP | MI_RESIZE | MI_N,
	[MMS_MI_HEAP_REALLOCF] = MI_HEAP | MI_RESIZE | MI_FREEF,
	[MMS_MI_HEAP_REZALLOC] = MI_HEAP | MI_RESIZE | MI_ZERO,
	[MMS_MI_HEAP_RECALLOC] = MI_HEAP | MI_RESIZE | MI_ZERO | MI_N,
	[MMS_MI_HEAP_REALLOC_ALIGNED] = MI_HEAP | MI_RESIZE | MI_ALIGN,
	[MMS_MI_HEAP_REALLOC_ALIGNED_AT] = MI_HEAP | MI_RESIZE | MI_ALIGN | MI_AT,
	[MMS_MI_HEAP_REZALLOC_ALIGNED] = MI_HEAP | MI_RESIZE | MI_ZERO | MI_ALIGN,
	[MMS_MI_HEAP_REZALLOC_ALIGNED_AT] = MI_HEAP | MI_RESIZE | MI_ZERO | MI_ALIGN | MI_AT,
	[MMS_MI_HEAP_RECALLOC_ALIGNED] = MI_HEAP | MI_RESIZE | MI_ZERO | MI_N | MI_ALIGN,
	[MMS_MI_HEAP_RECALLOC_ALIGNED_AT] = MI_HEAP | MI_RESIZE | MI_ZERO | MI_N | MI_ALIGN | MI_AT,
};

static int mi_in_place(unsigned fn)
{
	return mi_flags[fn] & MI_INPLACE;
}

static int mi_frees_on_failure(unsigned fn)
{
	return mi_flags[fn] & MI_FREEF;
}

/* The blocks of heaps that an aligned allocation handed out: mimalloc
 * may hand out an address inside its block then, which the visit of a
 * destroyed heap does not tell (it gives the block's start). Forgotten
 * when freed or resized through mi_ functions, or found at the
 * destruction of their heap. */
static int mi_aligned_lock;
static struct mms_addrset mi_aligned;

static int mi_aligned_fn(unsigned fn)
{
	return (mi_flags[fn] & (MI_HEAP | MI_ALIGN)) == (MI_HEAP | MI_ALIGN);
}

static void mi_aligned_note(void *r)
{
	mms__spin_lock(&mi_aligned_lock);
	(void)mms__addrset_add(&mi_aligned, (uintptr_t)r);
	mms__spin_unlock(&mi_aligned_lock);
}

static inline void mi_aligned_forget(const void *p)
{
	if (likely(!__atomic_load_n(&mi_aligned.n, __ATOMIC_RELAXED)) || !p)
		return;
	mms__spin_lock(&mi_aligned_lock);
	(void)mms__addrset_take(&mi_aligned, (uintptr_t)p);
	mms__spin_unlock(&mi_aligned_lock);
}

/* Held across a fork (process.c), so that the child's copy of the set is
 * whole and its lock free. */
void mms__mi_before_fork(void)
{
	mms__spin_lock(&mi_aligned_lock);
}

void mms__mi_after_fork(void)
{
	mms__spin_unlock(&mi_aligned_lock);
}

void mms__mi_free(void *p)
{
	mi_aligned_forget(p);
	free(p);
}

void *mms__mi_realloc(void *p, size_t size)
{
	mi_aligned_forget(p);
	return realloc_common(p, size, RA);
}

/* mimalloc's function fn with the program's arguments v. Each is a word
 * passed in a register by the x86-64 and aarch64 calling conventions (the
 * only ones redirect.c works on): a function of fewer reads the first of
 * them and no other. */
static void *mi_call(unsigned fn, const uintptr_t *v)
{
	void *(*f)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);
	void *real = mms__mi_real[fn];

	memcpy(&f, &real, sizeof(f));
	return f(v[0], v[1], v[2], v[3], v[4], v[5]);
}

/* mi_call(), and in *refused whether it failed for want of memory
 * (ENOMEM): mimalloc's NULL for a NULL string or a bad alignment may set
 * no errno, and the program's errno from before stays as it was. */
static void *mi_call_told(unsigned fn, const uintptr_t *v, int *refused)
{
	int saved = errno;
	void *r;

	errno = 0;
	r = mi_call(fn, v);
	*refused = !r && errno == ENOMEM;
	if (!errno)
		errno = saved;
	return r;
}

/* A call's arguments read: the block (at v[at]), the bytes asked for
 * (count times size, SIZE_MAX where that overflows; a copy's string and
 * its terminator, 0 for realpath's, known after the call), the alignment,
 * and the allocation function it is recorded as. */
struct mi_req {
	void *p;
	unsigned at;
	int overflow;
	size_t bytes, align;
	unsigned kind;
};

static void mi_read(unsigned fn, const uintptr_t *v, struct mi_req *q)
{
	unsigned f = mi_flags[fn], i = 0;
	size_t n = 1, size;
	const char *s;

	memset(q, 0, sizeof(*q));
	q->kind = MMS_ALLOC_MALLOC;
	if (f & MI_HEAP)
		i++;
	if (f & MI_COPY) {
		s = (const char *)v[i];
		if (s && (fn == MMS_MI_STRDUP || fn == MMS_MI_HEAP_STRDUP))
			q->bytes = strlen(s) + 1;
		else if (s && (fn == MMS_MI_STRNDUP || fn == MMS_MI_HEAP_STRNDUP))
			q->bytes = strnlen(s, (size_t)v[i + 1]) + 1;
		return;
	}
	if (f & MI_RESIZE) {
		q->at = i;
		q->p = (void *)v[i++];
		q->kind = MMS_ALLOC_REALLOC;
	}
	if (f & MI_N)
		n = (size_t)v[i++];
	size = (size_t)v[i++];
	if (f & MI_ALIGN)
		q->align = (size_t)v[i];
	q->overflow = size && n > SIZE_MAX / size;
	q->bytes = q->overflow ? SIZE_MAX : n * size;
	if (!(f & MI_RESIZE))
		q->kind = q->align ? MMS_ALLOC_ALIGNED_ALLOC : f & MI_ZERO ? MMS_ALLOC_CALLOC : MMS_ALLOC_MALLOC;
}

/* Whether fn's block can be a guarded one: no heap, no offset, an
 * alignment guard.c makes (a power of two up to a page; mimalloc refuses
 * the others, or its blocks of larger ones are left to it). */
static int mi_guardable(unsigned fn, const struct mi_req *q)
{
	unsigned f = mi_flags[fn];

	return !(f & (MI_HEAP | MI_AT | MI_COPY)) &&
	       (!(f & MI_ALIGN) || (q->align && !(q->align & (q->align - 1)) && q->align <= 4096));
}

/* In guard mode: mimalloc's block r of fn, kept plain (its bytes: q's, or
 * a copy's string's). */
static void *mi_keep(unsigned fn, const struct mi_req *q, struct mms_thread *t, void *r, uintptr_t ra)
{
	if (!r)
		return NULL;
	return mms__guard_keep_plain(t, q->kind, r, mi_flags[fn] & MI_COPY ? strlen(r) + 1 : q->bytes, ra);
}

/* In guard mode, an allocation: guarded where it can be, else mimalloc's
 * block kept plain. */
static __attribute__((noinline)) void *mi_guard_alloc(unsigned fn, const uintptr_t *v, const struct mi_req *q,
						      uintptr_t ra)
{
	struct mms_thread *t;
	void *r;

	/* Too many bytes: mimalloc's own failure, and errno as it leaves it. */
	if (q->overflow)
		return mi_call(fn, v);
	if (mi_guardable(fn, q)) {
		return mms__guard_alloc_hook(q->kind, q->align ? MMS_GUARD_FAMILY_MEMALIGN : MMS_GUARD_FAMILY_MALLOC,
					     q->align > 16 ? q->align : 16, q->bytes, !!(mi_flags[fn] & MI_ZERO), ra);
	}
	if (!guard_enter(&t, ra))
		return mi_call(fn, v);
	r = mi_keep(fn, q, t, mi_call(fn, v), ra);
	guard_leave(t);
	if (r && mi_aligned_fn(fn))
		mi_aligned_note(r);
	return r;
}

static __attribute__((noinline)) void *mi_alloc(unsigned fn, const uintptr_t *v, uintptr_t ra)
{
	struct mms_thread *t;
	struct mi_req q;
	int refused;
	void *r;

	/* realpath into the caller's buffer allocates nothing. */
	if ((fn == MMS_MI_REALPATH && v[1]) || (fn == MMS_MI_HEAP_REALPATH && v[2]))
		return mi_call(fn, v);
	mi_read(fn, v, &q);
	if (unlikely(mms__guard_on))
		return mi_guard_alloc(fn, v, &q, ra);
	t = mms__enter();
	r = mi_call_told(fn, v, &refused);
	if (t) {
		if (r)
			rec_alloc_with(t, q.kind, r, mi_flags[fn] & MI_COPY ? strlen(r) + 1 : q.bytes,
				       mms__capture_stack_at(t, FRAME), ra, FRAME);
		else if (refused)
			rec_alloc_fail(t, q.kind, q.bytes, q.align, FRAME);
		mms__leave();
	}
	if (r && mi_aligned_fn(fn))
		mi_aligned_note(r);
	return r;
}

/* A resize of a block of the recorder's arena, or in guard mode: the
 * block moves to a new one (guarded where it can be, else mimalloc's, in
 * the call's heap), which the same call without the block makes; the
 * bytes are copied and the block released. A block guard mode does not
 * know (one mimalloc handed out before the recorder started) is left to
 * mimalloc, its successor kept plain. */
static __attribute__((noinline)) void *mi_move(unsigned fn, const uintptr_t *v, const struct mi_req *q, uintptr_t ra)
{
	void *ptr = q->p, *r;
	int arena = ptr && mms__arena_owns(ptr);
	struct mms_thread *t;
	uintptr_t w[6];
	size_t old;

	if (ptr && !arena && !mms__guard_knows(ptr)) {
		if (!guard_enter(&t, ra))
			return mi_call(fn, v);
		r = mi_call(fn, v);
		if (r && r != ptr)
			r = mi_keep(fn, q, t, r, ra);
		guard_leave(t);
		return r;
	}
	/* The arena's blocks and guard mode's never grow in place. */
	if (ptr && mi_flags[fn] & MI_INPLACE)
		return NULL;
	/* The new block: the same call without the block, an allocation. */
	memcpy(w, v, sizeof(w));
	w[q->at] = 0;
	r = mi_alloc(fn, w, ra);
	if (!ptr || (!r && !(mi_flags[fn] & MI_FREEF)))
		return r;
	if (r) {
		if (arena)
			old = mms__arena_usable(ptr);
		else if (!mms__guard_usable(ptr, &old))
			old = mms__real.malloc_usable_size(ptr); /* a plain block: mimalloc's */
		memcpy(r, ptr, old < q->bytes ? old : q->bytes);
	}
	if (arena)
		mms__arena_free(ptr);
	else
		mms__guard_free_hook(ptr, MMS_GUARD_FAMILY_MALLOC, ra);
	return r;
}

static __attribute__((noinline)) void *mi_resize(unsigned fn, const uintptr_t *v, uintptr_t ra)
{
	struct mi_call call = { fn, v, 0 };
	struct mi_req q;
	void *r;

	mi_read(fn, v, &q);
	/* mi_expand(NULL, size) resizes nothing. */
	if (!q.p && mi_flags[fn] & MI_INPLACE)
		return mi_call(fn, v);
	if (unlikely(mms__guard_on) || unlikely(q.p && mms__arena_owns(q.p)))
		r = mi_move(fn, v, &q, ra);
	else
		r = resize_recorded(q.p, q.bytes, RS_MI, 0, 0, NULL, &call, ra);
	/* The block moved, or is gone; resized where it is, it stays. */
	if (q.p && ((r && r != q.p) || (!r && mi_flags[fn] & MI_FREEF)))
		mi_aligned_forget(q.p);
	if (r && mi_aligned_fn(fn))
		mi_aligned_note(r);
	return r;
}

/* The blocks of a heap being destroyed, each recorded freed (in guard
 * mode, those of the guard's set): at the address handed out, which for
 * an aligned one may lie inside the block (in[], ascending). */
struct mi_visit {
	struct mms_thread *t;
	uint32_t stack;
	uintptr_t *in;
	size_t nin, room; /* room: the bytes of in */
};

static _Bool mi_visit_block(const void *heap, const void *area, void *block, size_t size, void *arg)
{
	const struct mi_visit *c = arg;
	uintptr_t a = (uintptr_t)block;
	size_t lo = 0, hi = c->nin, mid;

	(void)heap;
	(void)area;
	if (!block)
		return 1;
	/* The first aligned one at or after the block's start. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (c->in[mid] < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < c->nin && c->in[lo] - a < size)
		a = c->in[lo];
	if (mms__guard_on && !mms__guard_forget((void *)a))
		return 1;
	mms__release_watched(a, 0);
	if (c->t) {
		mms__note_release(a, c->t->index);
		rec_free_with(c->t, MMS_FREE_FREE, (void *)a, mms__stamp_release_heap(), c->stack);
	}
	return 1;
}

/* The aligned blocks of heap into c->in (recorder memory, c->nin of
 * them, ascending), forgotten. */
static void mi_aligned_take(void *heap, struct mi_visit *c)
{
	_Bool (*contains)(const void *, const void *);
	size_t k, n = 0, i;
	uintptr_t x;

	memcpy(&contains, &mms__mi_real[MMS_MI_HEAP_CONTAINS_BLOCK], sizeof(contains));
	if (!contains || !__atomic_load_n(&mi_aligned.n, __ATOMIC_RELAXED))
		return;
	mms__spin_lock(&mi_aligned_lock);
	c->room = mi_aligned.n * sizeof(*c->in);
	c->in = c->room ? mms__map_anon(c->room) : NULL;
	for (k = 0; c->in && k < mi_aligned.cap; k++)
		if (mi_aligned.tab[k] && contains(heap, (const void *)(mi_aligned.tab[k] - 1)))
			c->in[n++] = mi_aligned.tab[k] - 1;
	for (i = 0; i < n; i++)
		(void)mms__addrset_take(&mi_aligned, c->in[i]);
	mms__spin_unlock(&mi_aligned_lock);
	/* Few: by insertion. */
	for (i = 1; i < n; i++) {
		x = c->in[i];
		for (k = i; k > 0 && c->in[k - 1] > x; k--)
			c->in[k] = c->in[k - 1];
		c->in[k] = x;
	}
	c->nin = n;
}

void mms__mi_heap_destroy(void *heap);
void mms__mi_heap_destroy(void *heap)
{
	_Bool (*visit)(void *, _Bool, _Bool (*)(const void *, const void *, void *, size_t, void *), void *);
	void (*destroy)(void *);
	struct mi_visit c = { NULL, 0, NULL, 0, 0 };
	int in;

	memcpy(&visit, &mms__mi_real[MMS_MI_HEAP_VISIT_BLOCKS], sizeof(visit));
	memcpy(&destroy, &mms__mi_real[MMS_MI_HEAP_DESTROY], sizeof(destroy));
	if (!heap || !visit) {
		destroy(heap);
		return;
	}
	if (mms__guard_on) {
		in = guard_enter(&c.t, RA);
	} else {
		c.t = mms__enter();
		in = c.t != NULL;
	}
	if (in) {
		c.stack = c.t && mms__free_stacks_on ? mms__capture_stack_at(c.t, FRAME) : 0;
		mi_aligned_take(heap, &c);
		visit(heap, 1, mi_visit_block, &c);
		if (c.in)
			mms__unmap_own(c.in, c.room);
	}
	destroy(heap);
	if (mms__guard_on && in)
		guard_leave(c.t);
	else if (in)
		mms__leave();
}

/* The functions in mimalloc's place: name, mimalloc's, the parameters,
 * and the arguments as words, in order. */
#define W(x) ((uintptr_t)(x))
#define MI_ENTRY(call, name, fn, params, ...)                             \
	void *name params;                                                \
	void *name params                                                 \
	{                                                                 \
		return call(fn, (const uintptr_t[6]){ __VA_ARGS__ }, RA); \
	}
#define MI_ALLOC(name, fn, params, ...) MI_ENTRY(mi_alloc, name, fn, params, __VA_ARGS__)
#define MI_RESIZE(name, fn, params, ...) MI_ENTRY(mi_resize, name, fn, params, __VA_ARGS__)

MI_ALLOC(mms__mi_zalloc, MMS_MI_ZALLOC, (size_t size), size)
MI_ALLOC(mms__mi_zalloc_small, MMS_MI_ZALLOC_SMALL, (size_t size), size)
MI_ALLOC(mms__mi_mallocn, MMS_MI_MALLOCN, (size_t n, size_t size), n, size)
MI_ALLOC(mms__mi_malloc_aligned, MMS_MI_MALLOC_ALIGNED, (size_t size, size_t al), size, al)
MI_ALLOC(mms__mi_malloc_aligned_at, MMS_MI_MALLOC_ALIGNED_AT, (size_t size, size_t al, size_t off), size, al, off)
MI_ALLOC(mms__mi_zalloc_aligned, MMS_MI_ZALLOC_ALIGNED, (size_t size, size_t al), size, al)
MI_ALLOC(mms__mi_zalloc_aligned_at, MMS_MI_ZALLOC_ALIGNED_AT, (size_t size, size_t al, size_t off), size, al, off)
MI_ALLOC(mms__mi_calloc_aligned, MMS_MI_CALLOC_ALIGNED, (size_t n, size_t size, size_t al), n, size, al)
MI_ALLOC(mms__mi_calloc_aligned_at, MMS_MI_CALLOC_ALIGNED_AT, (size_t n, size_t size, size_t al, size_t off), n, size,
	 al, off)
MI_ALLOC(mms__mi_heap_malloc, MMS_MI_HEAP_MALLOC, (void *h, size_t size), W(h), size)
MI_ALLOC(mms__mi_heap_malloc_small, MMS_MI_HEAP_MALLOC_SMALL, (void *h, size_t size), W(h), size)
MI_ALLOC(mms__mi_heap_zalloc, MMS_MI_HEAP_ZALLOC, (void *h, size_t size), W(h), size)
MI_ALLOC(mms__mi_heap_calloc, MMS_MI_HEAP_CALLOC, (void *h, size_t n, size_t size), W(h), n, size)
MI_ALLOC(mms__mi_heap_mallocn, MMS_MI_HEAP_MALLOCN, (void *h, size_t n, size_t size), W(h), n, size)
MI_ALLOC(mms__mi_heap_malloc_aligned, MMS_MI_HEAP_MALLOC_ALIGNED, (void *h, size_t size, size_t al), W(h), size, al)
MI_ALLOC(mms__mi_heap_malloc_aligned_at, MMS_MI_HEAP_MALLOC_ALIGNED_AT, (void *h, size_t size, size_t al, size_t off),
	 W(h), size, al, off)
MI_ALLOC(mms__mi_heap_zalloc_aligned, MMS_MI_HEAP_ZALLOC_ALIGNED, (void *h, size_t size, size_t al), W(h), size, al)
MI_ALLOC(mms__mi_heap_zalloc_aligned_at, MMS_MI_HEAP_ZALLOC_ALIGNED_AT, (void *h, size_t size, size_t al, size_t off),
	 W(h), size, al, off)
MI_ALLOC(mms__mi_heap_calloc_aligned, MMS_MI_HEAP_CALLOC_ALIGNED, (void *h, size_t n, size_t size, size_t al), W(h), n,
	 size, al)
MI_ALLOC(mms__mi_heap_calloc_aligned_at, MMS_MI_HEAP_CALLOC_ALIGNED_AT,
	 (void *h, size_t n, size_t size, size_t al, size_t off), W(h), n, size, al, off)
MI_ALLOC(mms__mi_strdup, MMS_MI_STRDUP, (const char *s), W(s))
MI_ALLOC(mms__mi_strndup, MMS_MI_STRNDUP, (const char *s, size_t n), W(s), n)
MI_ALLOC(mms__mi_realpath, MMS_MI_REALPATH, (const char *f, char *out), W(f), W(out))
MI_ALLOC(mms__mi_heap_strdup, MMS_MI_HEAP_STRDUP, (void *h, const char *s), W(h), W(s))
MI_ALLOC(mms__mi_heap_strndup, MMS_MI_HEAP_STRNDUP, (void *h, const char *s, size_t n), W(h), W(s), n)
MI_ALLOC(mms__mi_heap_realpath, MMS_MI_HEAP_REALPATH, (void *h, const char *f, char *out), W(h), W(f), W(out))
MI_RESIZE(mms__mi_reallocn, MMS_MI_REALLOCN, (void *p, size_t n, size_t size), W(p), n, size)
MI_RESIZE(mms__mi_reallocf, MMS_MI_REALLOCF, (void *p, size_t size), W(p), size)
MI_RESIZE(mms__mi_rezalloc, MMS_MI_REZALLOC, (void *p, size_t size), W(p), size)
MI_RESIZE(mms__mi_recalloc, MMS_MI_RECALLOC, (void *p, size_t n, size_t size), W(p), n, size)
MI_RESIZE(mms__mi_realloc_aligned, MMS_MI_REALLOC_ALIGNED, (void *p, size_t size, size_t al), W(p), size, al)
MI_RESIZE(mms__mi_realloc_aligned_at, MMS_MI_REALLOC_ALIGNED_AT, (void *p, size_t size, size_t al, size_t off), W(p),
	  size, al, off)
MI_RESIZE(mms__mi_rezalloc_aligned, MMS_MI_REZALLOC_ALIGNED, (void *p, size_t size, size_t al), W(p), size, al)
MI_RESIZE(mms__mi_rezalloc_aligned_at, MMS_MI_REZALLOC_ALIGNED_AT, (void *p, size_t size, size_t al, size_t off), W(p),
	  size, al, off)
MI_RESIZE(mms__mi_recalloc_aligned, MMS_MI_RECALLOC_ALIGNED, (void *p, size_t n, size_t size, size_t al), W(p), n, size,
	  al)
MI_RESIZE(mms__mi_recalloc_aligned_at, MMS_MI_RECALLOC_ALIGNED_AT,
	  (void *p, size_t n, size_t size, size_t al, size_t off), W(p), n, size, al, off)
MI_RESIZE(mms__mi_expand, MMS_MI_EXPAND, (void *p, size_t size), W(p), size)
MI_RESIZE(mms__mi_heap_realloc, MMS_MI_HEAP_REALLOC, (void *h, void *p, size_t size), W(h), W(p), size)
MI_RESIZE(mms__mi_heap_reallocn, MMS_MI_HEAP_REALLOCN, (void *h, void *p, size_t n, size_t size), W(h), W(p), n, size)
MI_RESIZE(mms__mi_heap_reallocf, MMS_MI_HEAP_REALLOCF, (void *h, void *p, size_t size), W(h), W(p), size)
MI_RESIZE(mms__mi_heap_rezalloc, MMS_MI_HEAP_REZALLOC, (void *h, void *p, size_t size), W(h), W(p), size)
MI_RESIZE(mms__mi_heap_recalloc, MMS_MI_HEAP_RECALLOC, (void *h, void *p, size_t n, size_t size), W(h), W(p), n, size)
MI_RESIZE(mms__mi_heap_realloc_aligned, MMS_MI_HEAP_REALLOC_ALIGNED, (void *h, void *p, size_t size, size_t al), W(h),
	  W(p), size, al)
MI_RESIZE(mms__mi_heap_realloc_aligned_at, MMS_MI_HEAP_REALLOC_ALIGNED_AT,
	  (void *h, void *p, size_t size, size_t al, size_t off), W(h), W(p), size, al, off)
MI_RESIZE(mms__mi_heap_rezalloc_aligned, MMS_MI_HEAP_REZALLOC_ALIGNED, (void *h, void *p, size_t size, size_t al), W(h),
	  W(p), size, al)
MI_RESIZE(mms__mi_heap_rezalloc_aligned_at, MMS_MI_HEAP_REZALLOC_ALIGNED_AT,
	  (void *h, void *p, size_t size, size_t al, size_t off), W(h), W(p), size, al, off)
MI_RESIZE(mms__mi_heap_recalloc_aligned, MMS_MI_HEAP_RECALLOC_ALIGNED,
	  (void *h, void *p, size_t n, size_t size, size_t al), W(h), W(p), n, size, al)
MI_RESIZE(mms__mi_heap_recalloc_aligned_at, MMS_MI_HEAP_RECALLOC_ALIGNED_AT,
	  (void *h, void *p, size_t n, size_t size, size_t al, size_t off), W(h), W(p), n, size, al, off)

#define MI_FN(fn, name) [MMS_MI_##fn] = { #name, (void *)mms__##name }

const struct mms_mi_fn mms__mi_fns[MMS_MI_COUNT] = {
	MI_FN(ZALLOC, mi_zalloc),
	MI_FN(ZALLOC_SMALL, mi_zalloc_small),
	MI_FN(MALLOCN, mi_mallocn),
	MI_FN(MALLOC_ALIGNED, mi_malloc_aligned),
	MI_FN(MALLOC_ALIGNED_AT, mi_malloc_aligned_at),
	MI_FN(ZALLOC_ALIGNED, mi_zalloc_aligned),
	MI_FN(ZALLOC_ALIGNED_AT, mi_zalloc_aligned_at),
	MI_FN(CALLOC_ALIGNED, mi_calloc_aligned),
	MI_FN(CALLOC_ALIGNED_AT, mi_calloc_aligned_at),
	MI_FN(HEAP_MALLOC, mi_heap_malloc),
	MI_FN(HEAP_MALLOC_SMALL, mi_heap_malloc_small),
	MI_FN(HEAP_ZALLOC, mi_heap_zalloc),
	MI_FN(HEAP_CALLOC, mi_heap_calloc),
	MI_FN(HEAP_MALLOCN, mi_heap_mallocn),
	MI_FN(HEAP_MALLOC_ALIGNED, mi_heap_malloc_aligned),
	MI_FN(HEAP_MALLOC_ALIGNED_AT, mi_heap_malloc_aligned_at),
	MI_FN(HEAP_ZALLOC_ALIGNED, mi_heap_zalloc_aligned),
	MI_FN(HEAP_ZALLOC_ALIGNED_AT, mi_heap_zalloc_aligned_at),
	MI_FN(HEAP_CALLOC_ALIGNED, mi_heap_calloc_aligned),
	MI_FN(HEAP_CALLOC_ALIGNED_AT, mi_heap_calloc_aligned_at),
	MI_FN(STRDUP, mi_strdup),
	MI_FN(STRNDUP, mi_strndup),
	MI_FN(REALPATH, mi_realpath),
	MI_FN(HEAP_STRDUP, mi_heap_strdup),
	MI_FN(HEAP_STRNDUP, mi_heap_strndup),
	MI_FN(HEAP_REALPATH, mi_heap_realpath),
	MI_FN(REALLOCN, mi_reallocn),
	MI_FN(REALLOCF, mi_reallocf),
	MI_FN(REZALLOC, mi_rezalloc),
	MI_FN(RECALLOC, mi_recalloc),
	MI_FN(REALLOC_ALIGNED, mi_realloc_aligned),
	MI_FN(REALLOC_ALIGNED_AT, mi_realloc_aligned_at),
	MI_FN(REZALLOC_ALIGNED, mi_rezalloc_aligned),
	MI_FN(REZALLOC_ALIGNED_AT, mi_rezalloc_aligned_at),
	MI_FN(RECALLOC_ALIGNED, mi_recalloc_aligned),
	MI_FN(RECALLOC_ALIGNED_AT, mi_recalloc_aligned_at),
	MI_FN(EXPAND, mi_expand),
	MI_FN(HEAP_REALLOC, mi_heap_realloc),
	MI_FN(HEAP_REALLOCN, mi_heap_reallocn),
	MI_FN(HEAP_REALLOCF, mi_heap_reallocf),
	MI_FN(HEAP_REZALLOC, mi_heap_rezalloc),
	MI_FN(HEAP_RECALLOC, mi_heap_recalloc),
	MI_FN(HEAP_REALLOC_ALIGNED, mi_heap_realloc_aligned),
	MI_FN(HEAP_REALLOC_ALIGNED_AT, mi_heap_realloc_aligned_at),
	MI_FN(HEAP_REZALLOC_ALIGNED, mi_heap_rezalloc_aligned),
	MI_FN(HEAP_REZALLOC_ALIGNED_AT, mi_heap_rezalloc_aligned_at),
	MI_FN(HEAP_RECALLOC_ALIGNED, mi_heap_recalloc_aligned),
	MI_FN(HEAP_RECALLOC_ALIGNED_AT, mi_heap_recalloc_aligned_at),
	MI_FN(HEAP_DESTROY, mi_heap_destroy),
	[MMS_MI_HEAP_VISIT_BLOCKS] = { "mi_heap_visit_blocks", NULL },
	[MMS_MI_HEAP_CONTAINS_BLOCK] = { "mi_heap_contains_block", NULL },
};
