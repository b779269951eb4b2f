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
#include "hooks-rec.h"
#include "log.h"
#include "objects.h"
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
	mms__cxx_own_init();
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
			mms__dlsym_watch_set(MMS_DLSYM_WATCH_MODULES);
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

/* --- guard mode (guard.c) ---------------------------------------------------
 * With guard=1 every allocation and free of the program goes through
 * guard.c, recorded or not; a call made inside a hook (a signal handler's)
 * is passed through unguarded. */

void mms__guard_rec_alloc(struct mms_thread *t, unsigned fn, void *ptr, size_t size, uintptr_t ra)
{
	rec_alloc_with(t, fn, ptr, size, mms__capture_stack_at(t, FRAME), ra, FRAME);
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

__attribute__((noinline)) void *mms__guard_realloc_hook(void *ptr, size_t size, uintptr_t ra)
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

/* --- the recorder's own allocations ----------------------------------------
 * What a thread allocates while it is inside the recorder (busy == 2: our
 * code, or glibc working for it), or before the real allocator is known
 * (dlsym's own allocations at start-up), comes from the recorder's arena
 * (arena.c), never from the program's heap. free() and realloc() know
 * these blocks by their address. */

/* True when this call is the recorder's own: starts the recorder first
 * when the real function is not known yet. */
__attribute__((noinline, cold)) int mms__own_call(void *const *real_fn)
{
	if (!*real_fn)
		mms__init(); /* returns at once while under way in this thread */
	return !*real_fn || mms__tls_busy == 2;
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
			rec_alloc_with(t, cxx_alloc_fn(align > 16 ? MMS_ALLOC_MEMALIGN : MMS_ALLOC_MALLOC, size), r,
				       size, mms__capture_stack_at(t, FRAME), ra, FRAME);
		t->hook_ra = 0;
		mms__leave();
	}
	return r;
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

/* A thread's vector of thread-local storage, which the loader allocates
 * in pthread_create (n entries of 16 bytes): the vector in the arena, a
 * stand-in of the native length in the program's heap, recorded as the
 * loader's calloc (dtv.c). NULL when the arena has no room: the caller
 * then allocates it as any other. */
static __attribute__((noinline, cold)) void *dtv_calloc(size_t n, uintptr_t fp)
{
	struct mms_thread *t;
	size_t native = n - mms__dtv_extra;
	void *d = mms__dtv_new(n * 16), *stand;

	if (!d)
		return NULL;
	t = mms__enter();
	stand = mms__real.calloc(native, 16);
	if (t) {
		if (stand)
			rec_alloc(t, MMS_ALLOC_CALLOC, stand, native * 16, fp);
		mms__leave();
	}
	if (!stand) {
		mms__dtv_release(d);
		errno = ENOMEM;
		return (void *)-1;
	}
	mms__dtv_set_stand(d, stand);
	return d;
}

/* A vector the loader resizes (a module with thread-local storage loaded
 * since the thread began): the stand-in is resized as natively. */
static __attribute__((noinline, cold)) void *dtv_realloc(void *d, size_t size, uintptr_t ra)
{
	size_t less = mms__dtv_extra * 16, room = mms__dtv_room(d);
	void *nd = mms__dtv_new(size), *stand;

	if (!nd)
		return NULL;
	stand = resize_recorded(mms__dtv_stand(d), size > less ? size - less : size, RS_REALLOC, 0, 0, NULL, NULL, ra);
	if (!stand) {
		mms__dtv_release(nd);
		return NULL;
	}
	memcpy(nd, d, room < size ? room : size);
	mms__dtv_set_stand(nd, stand);
	mms__dtv_release(d);
	return nd;
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
	if (unlikely(size == 16) && unlikely(mms__tls_runtime == MMS_RT_THREAD) && mms__dtv_extra &&
	    n > mms__dtv_extra && n < SIZE_MAX / 32 && mms__in_code(&mms__ldso_code, RA)) {
		void *d = dtv_calloc(n, FRAME);

		if (d)
			return d == (void *)-1 ? NULL : d;
	}
	HOOK_ALLOC(MMS_ALLOC_CALLOC, 0, size && n > SIZE_MAX / size ? SIZE_MAX : size_, mms__real.calloc(n, size));
}

MMS_EXPORT void free(void *ptr)
{
	if (unlikely(!ptr))
		return;
	if (unlikely(mms__arena_owns(ptr))) {
		if (unlikely(mms__dtv_is(ptr))) {
			void *stand = mms__dtv_stand(ptr);

			mms__dtv_release(ptr);
			free_recorded(stand, 0, REL_FREE, 0, 0);
			return;
		}
		mms__arena_free(ptr);
		return;
	}
	if (unlikely(mms__guard_on)) {
		mms__guard_free_hook(ptr, MMS_GUARD_FAMILY_MALLOC, RA);
		return;
	}
	free_recorded(ptr, 0, REL_FREE, 0, 0);
}

void *mms__realloc_common(void *ptr, size_t size, uintptr_t ra)
{
	/* A block of the arena stays there, whoever resizes it. */
	if (unlikely(ptr && mms__arena_owns(ptr)))
		return mms__dtv_is(ptr) ? dtv_realloc(ptr, size, ra) : mms__arena_realloc(ptr, size);
	if (!ptr && OWN_CALL(realloc))
		return own_alloc(size, 16);
	if (unlikely(!mms__real.realloc))
		return NULL;
	if (unlikely(mms__guard_on))
		return mms__guard_realloc_hook(ptr, size, ra);
	return resize_recorded(ptr, size, RS_REALLOC, 0, 0, NULL, NULL, ra);
}

MMS_EXPORT void *realloc(void *ptr, size_t size)
{
	return mms__realloc_common(ptr, size, RA);
}

/* Not forwarded to the real reallocarray: glibc's calls realloc through
 * the PLT, which would enter this hook a second time. */
MMS_EXPORT void *reallocarray(void *ptr, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	return mms__realloc_common(ptr, n * size, RA);
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
int mms__usable_ours(const void *ptr, size_t *n)
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
	if (mms__usable_ours(ptr, &n))
		return n;
	if (!mms__real.malloc_usable_size)
		mms__init();
	return mms__real.malloc_usable_size ? mms__real.malloc_usable_size(ptr) : 0;
}
