/* SPDX-License-Identifier: MIT */
/* newdelete.c: the C++ allocation operators. Without guard mode each one
 * goes straight (a tail call: no frame of ours on the stack) to the C++
 * runtime's, which allocates through malloc and free as before, having
 * told the malloc family's hooks which operator the thread is in
 * (mms__tls_cxx), so that the block is recorded as new's or new[]'s and
 * its release as delete's or delete[]'s; where the
 * operator found is a replacement allocator's own (tcmalloc's, jemalloc's:
 * they allocate without calling malloc and free, which would leave every
 * new unrecorded), the operators allocate and release through the malloc
 * hooks instead (hooks.c: mms__hook_new, mms__hook_delete); in guard mode
 * (guard.c) new and new[] make guarded blocks of their own family, so
 * that delete of a malloc'd block or free of a new[]'d one is caught. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cxxops.h"
#include "hooks-int.h"
#include "objects.h"

typedef void *(*new_fn)(size_t);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void (*del_fn)(void *);

/* The runtime's operators, found at their first call (the C++ runtime may
 * be loaded after the recorder starts). */
struct real_cxx {
	new_fn nw, na;
	new_al_fn nw_al, na_al;
	new_nt_fn nw_nt, na_nt;
	new_al_nt_fn nw_al_nt, na_al_nt;
	del_fn dl, da;
};
static struct real_cxx cxx;

/* When no runtime was found: calls left before the next try. A program
 * whose C++ runtime is not loaded yet calls these operators, from C++
 * code of its own that replaced none of them, until it is; a failed lookup
 * reads every loaded object's table, so the next try waits twice as many
 * calls as the last, up to 65536. */
static unsigned miss_wait, miss_left;

/* A C++ runtime's library, by its file name. */
static int cxx_runtime(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "libstdc++.so", 12) || !strncmp(b, "libc++.so", 9);
}

/* A C++ runtime's symbol name: the next object's in the global scope (as
 * dlsym(RTLD_NEXT)), else that of a C++ runtime loaded later, also out of
 * the global scope (Python loads PyTorch's libraries, and libstdc++ with
 * them, RTLD_LOCAL). Read from the objects' tables (elfsym.c): dlsym()
 * would change the program's dlerror() state. libstdc++ is never unloaded
 * (its unique symbols make it so): what is found stays valid. */
void *mms__cxx_lookup(const char *name)
{
	return mms__elfsym_next(name, cxx_runtime);
}

static void *find(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	unsigned left;
	int busy;

	if (p)
		return p;
	left = __atomic_load_n(&miss_left, __ATOMIC_RELAXED);
	if (left) {
		/* Never below 0: a decrement another thread took first is
		 * simply not taken again here. */
		__atomic_compare_exchange_n(&miss_left, &left, left - 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		return NULL;
	}
	busy = mms__tls_busy;
	mms__tls_busy = 2; /* dl_iterate_phdr()'s allocations, if any, come from the arena */
	p = mms__cxx_lookup(name);
	mms__tls_busy = busy;
	if (p) {
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
		return p;
	}
	left = __atomic_load_n(&miss_wait, __ATOMIC_RELAXED);
	left = left ? (left < 65536 ? left * 2 : 65536) : 1;
	__atomic_store_n(&miss_wait, left, __ATOMIC_RELAXED);
	__atomic_store_n(&miss_left, left, __ATOMIC_RELAXED);
	return NULL;
}

#define REAL(field, name) ((__typeof__(cxx.field))find((void **)&cxx.field, name))

/* The operator's caller. */
#define RA ((uintptr_t)__builtin_return_address(0))

/* Whether operator f is the replacement allocator's own: in the code of
 * the library whose malloc is the real one (never the C++ runtime's when
 * that is glibc's). */
static inline int allocators_own(const void *f)
{
	return mms__in_code(&mms__alloc_code, (uintptr_t)f);
}

/* Without a C++ runtime to forward to, the C allocator, as the runtime's
 * operators would: the throwing forms abort where the runtime would throw
 * std::bad_alloc (there is no runtime to throw it), the nothrow ones
 * return NULL, the aligned ones keep their alignment. */
static void *no_runtime_new(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		abort();
	return p;
}

static void *no_runtime_new_aligned(size_t size, size_t align)
{
	void *p = NULL;

	if (align < sizeof(void *))
		align = sizeof(void *);
	if (posix_memalign(&p, align, size ? size : 1))
		abort();
	return p;
}

static void *no_runtime_new_nothrow(size_t size, const void *nt)
{
	(void)nt;
	return malloc(size ? size : 1);
}

static void *no_runtime_new_aligned_nothrow(size_t size, size_t align, const void *nt)
{
	void *p = NULL;

	(void)nt;
	if (align < sizeof(void *))
		align = sizeof(void *);
	return posix_memalign(&p, align, size ? size : 1) ? NULL : p;
}

/* Set at start-up (mms__cxx_own_init()): the program defines one of the
 * operators itself, mms_cxx_op_names[own_op] in own_path (-1: none). A
 * program that replaces operator new but not delete calls its own new
 * (malloc, for the recorder) and the recorder's delete: marks would
 * report every such pair as a mismatched free, as valgrind does. The
 * operators then mark nothing, and guard mode's blocks are all of the
 * malloc family. */
static int own_op = -1;
static char own_path[4096];

void mms__cxx_own_init(void)
{
	own_op = mms__elfsym_ahead(mms_cxx_op_symbols, MMS_CXX_OPS, own_path, sizeof own_path);
}

const char *mms__cxx_own(const char **op)
{
	if (own_op < 0)
		return NULL;
	*op = mms_cxx_op_names[own_op];
	return own_path;
}

/* guard mode's family for the blocks of an operator of family f. */
static inline unsigned guard_family(unsigned f)
{
	return own_op >= 0 ? MMS_GUARD_FAMILY_MALLOC : f;
}

/* Whether this thread records now (what mms__enter() will say, but for
 * a fork child's first event) and the operators are all the recorder's:
 * the operators mark only then, so that no mark waits through a time
 * without records. */
static inline int marking(void)
{
	return likely(!mms__tls_busy) && mms__recording && mms__collecting && own_op < 0;
}

/* Marks the thread inside operator new or new[] (fn) of size bytes
 * aligned to align (0: the operator's own). libstdc++'s and libc++'s
 * new[] call operator new (ours) for the same size, and their nothrow
 * forms the throwing ones: an inner call leaves the outer mark. */
static inline void mark_new(unsigned fn, size_t size, size_t align)
{
	struct mms_tls_cxx *m = &mms__tls_cxx;

	if (!marking())
		return;
	size = size ? size : 1;
	if (m->fn == MMS_ALLOC_NEW_ARRAY && m->arg == size && m->align == align)
		return;
	m->arg = size;
	m->align = align;
	m->fn = fn;
}

/* The same for operator delete or delete[] (fn) of p: the runtimes'
 * delete[] calls operator delete (ours) for the same address. */
static inline void mark_delete(unsigned fn, void *p)
{
	struct mms_tls_cxx *m = &mms__tls_cxx;

	if (!p || !marking())
		return;
	if (m->fn == MMS_FREE_DELETE_ARRAY && m->arg == (uintptr_t)p)
		return;
	m->arg = (uintptr_t)p;
	m->fn = fn;
}

/* A replacement allocator's operator is called only when the malloc
 * family fails: its new-handler loop, and std::bad_alloc. fn: the
 * operator (MMS_ALLOC_NEW, MMS_ALLOC_NEW_ARRAY), align_arg its alignment
 * argument (0: none). */
#define FORWARD_NEW(field, name, fn, align_arg, align, fallback, ...)                                     \
	do {                                                                                              \
		__typeof__(cxx.field) f_;                                                                 \
		void *p_;                                                                                 \
		mark_new(fn, size, align_arg);                                                            \
		f_ = REAL(field, name);                                                                   \
		if (!f_)                                                                                  \
			return fallback(__VA_ARGS__);                                                     \
		if (allocators_own((const void *)f_) && (p_ = mms__hook_new(size ? size : 1, align, RA))) \
			return p_;                                                                        \
		return f_(__VA_ARGS__);                                                                   \
	} while (0)

/* A guarded block for operator new; on failure, the runtime's operator
 * (its new-handler loop, and std::bad_alloc when that gives up). */
static void *guard_new(unsigned family, size_t align, size_t size, uintptr_t ra)
{
	return mms__guard_alloc_hook(MMS_ALLOC_MALLOC, guard_family(family), align, size ? size : 1, 0, ra);
}

MMS_EXPORT void *_Znwm(size_t size)
{
	void *p;

	if (unlikely(mms__guard_on) && (p = guard_new(MMS_GUARD_FAMILY_NEW, 16, size, RA)))
		return p;
	FORWARD_NEW(nw, "_Znwm", MMS_ALLOC_NEW, 0, 16, no_runtime_new, size);
}

MMS_EXPORT void *_Znam(size_t size)
{
	void *p;

	if (unlikely(mms__guard_on) && (p = guard_new(MMS_GUARD_FAMILY_NEW_ARRAY, 16, size, RA)))
		return p;
	FORWARD_NEW(na, "_Znam", MMS_ALLOC_NEW_ARRAY, 0, 16, no_runtime_new, size);
}

MMS_EXPORT void *_ZnwmSt11align_val_t(size_t size, size_t align)
{
	void *p;

	if (unlikely(mms__guard_on) && (p = guard_new(MMS_GUARD_FAMILY_NEW, align, size, RA)))
		return p;
	FORWARD_NEW(nw_al, "_ZnwmSt11align_val_t", MMS_ALLOC_NEW, align, align, no_runtime_new_aligned, size, align);
}

MMS_EXPORT void *_ZnamSt11align_val_t(size_t size, size_t align)
{
	void *p;

	if (unlikely(mms__guard_on) && (p = guard_new(MMS_GUARD_FAMILY_NEW_ARRAY, align, size, RA)))
		return p;
	FORWARD_NEW(na_al, "_ZnamSt11align_val_t", MMS_ALLOC_NEW_ARRAY, align, align, no_runtime_new_aligned, size,
		    align);
}

/* The nothrow forms return NULL where the others throw; the runtime's
 * call the throwing ones, which are ours. */
MMS_EXPORT void *_ZnwmRKSt9nothrow_t(size_t size, const void *nt)
{
	if (unlikely(mms__guard_on))
		return guard_new(MMS_GUARD_FAMILY_NEW, 16, size, RA);
	FORWARD_NEW(nw_nt, "_ZnwmRKSt9nothrow_t", MMS_ALLOC_NEW, 0, 16, no_runtime_new_nothrow, size, nt);
}

MMS_EXPORT void *_ZnamRKSt9nothrow_t(size_t size, const void *nt)
{
	if (unlikely(mms__guard_on))
		return guard_new(MMS_GUARD_FAMILY_NEW_ARRAY, 16, size, RA);
	FORWARD_NEW(na_nt, "_ZnamRKSt9nothrow_t", MMS_ALLOC_NEW_ARRAY, 0, 16, no_runtime_new_nothrow, size, nt);
}

/* The aligned nothrow forms: libstdc++'s call the aligned ones, which are
 * ours; jemalloc's and tcmalloc's allocate themselves (before, their
 * blocks were unrecorded, and their deletes, ours, bad frees). */
MMS_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt)
{
	if (unlikely(mms__guard_on))
		return guard_new(MMS_GUARD_FAMILY_NEW, align, size, RA);
	FORWARD_NEW(nw_al_nt, "_ZnwmSt11align_val_tRKSt9nothrow_t", MMS_ALLOC_NEW, align, align,
		    no_runtime_new_aligned_nothrow, size, align, nt);
}

MMS_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt)
{
	if (unlikely(mms__guard_on))
		return guard_new(MMS_GUARD_FAMILY_NEW_ARRAY, align, size, RA);
	FORWARD_NEW(na_al_nt, "_ZnamSt11align_val_tRKSt9nothrow_t", MMS_ALLOC_NEW_ARRAY, align, align,
		    no_runtime_new_aligned_nothrow, size, align, nt);
}

/* A delete: in guard mode, a release of family `family`; else the
 * runtime's operator (a tail call), or the free hook where that is the
 * replacement allocator's own. Inlined into each operator, whose caller
 * is ra. */
static inline __attribute__((always_inline)) void delete_as(void *p, unsigned family, uintptr_t ra)
{
	del_fn f_;

	if (unlikely(mms__guard_on)) {
		if (p && !mms__arena_owns(p))
			mms__guard_free_hook(p, guard_family(family), ra);
		return;
	}
	mark_delete(family == MMS_GUARD_FAMILY_NEW_ARRAY ? MMS_FREE_DELETE_ARRAY : MMS_FREE_DELETE, p);
	f_ = family == MMS_GUARD_FAMILY_NEW_ARRAY ? REAL(da, "_ZdaPv") : REAL(dl, "_ZdlPv");
	if (!f_)
		free(p);
	else if (allocators_own((const void *)f_))
		mms__hook_delete(p, ra);
	else
		f_(p);
}

/* The sized, aligned and nothrow deletes release as the plain ones. */
#define DELETE(name, family, ...)                    \
	MMS_EXPORT void name(void *p, ##__VA_ARGS__) \
	{                                            \
		delete_as(p, family, RA);            \
	}

DELETE(_ZdlPv, MMS_GUARD_FAMILY_NEW)
DELETE(_ZdaPv, MMS_GUARD_FAMILY_NEW_ARRAY)
DELETE(_ZdlPvm, MMS_GUARD_FAMILY_NEW, size_t n)
DELETE(_ZdaPvm, MMS_GUARD_FAMILY_NEW_ARRAY, size_t n)
DELETE(_ZdlPvSt11align_val_t, MMS_GUARD_FAMILY_NEW, size_t a)
DELETE(_ZdaPvSt11align_val_t, MMS_GUARD_FAMILY_NEW_ARRAY, size_t a)
DELETE(_ZdlPvmSt11align_val_t, MMS_GUARD_FAMILY_NEW, size_t n, size_t a)
DELETE(_ZdaPvmSt11align_val_t, MMS_GUARD_FAMILY_NEW_ARRAY, size_t n, size_t a)
DELETE(_ZdlPvRKSt9nothrow_t, MMS_GUARD_FAMILY_NEW, const void *nt)
DELETE(_ZdaPvRKSt9nothrow_t, MMS_GUARD_FAMILY_NEW_ARRAY, const void *nt)
DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, MMS_GUARD_FAMILY_NEW, size_t a, const void *nt)
DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, MMS_GUARD_FAMILY_NEW_ARRAY, size_t a, const void *nt)
