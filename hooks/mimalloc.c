/* SPDX-License-Identifier: MIT */
/* mimalloc.c: mimalloc's functions of its own (mi_zalloc, the aligned
 * functions, a heap's, mi_heap_destroy() and the others), where mimalloc
 * is the allocator: recorded as the malloc family is. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hooks-int.h"
#include "mimalloc.h"
#include "hooks-rec.h"

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

int mms__mi_in_place(unsigned fn)
{
	return mi_flags[fn] & MI_INPLACE;
}

int mms__mi_frees_on_failure(unsigned fn)
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
	return mms__realloc_common(p, size, RA);
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
void *mms__mi_call_told(unsigned fn, const uintptr_t *v, int *refused)
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
	r = mms__mi_call_told(fn, v, &refused);
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
