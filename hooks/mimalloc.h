/* SPDX-License-Identifier: MIT */
/* mimalloc.h: mimalloc's functions of its own, as redirect.c finds them
 * and mimalloc.c records them (process.c holds their lock across fork). */
#ifndef MMS_MIMALLOC_H
#define MMS_MIMALLOC_H

#include <stddef.h>

#include "hooks-int.h"

/* mimalloc's functions of its own that the recorder calls in its place
 * (mimalloc.c), found by redirect.c where mimalloc is the allocator the hooks
 * forward to: their order in mms__mi_fns[] and mms__mi_real[]. Those that
 * are the malloc family under another name (mi_malloc, mi_free) go to
 * the hooks of the functions they are, as tcmalloc's tc_ functions do. */
enum mms_mi_index {
	/* Allocations: (heap,) (count,) size, (alignment, (offset)). */
	MMS_MI_ZALLOC,
	MMS_MI_ZALLOC_SMALL,
	MMS_MI_MALLOCN,
	MMS_MI_MALLOC_ALIGNED,
	MMS_MI_MALLOC_ALIGNED_AT,
	MMS_MI_ZALLOC_ALIGNED,
	MMS_MI_ZALLOC_ALIGNED_AT,
	MMS_MI_CALLOC_ALIGNED,
	MMS_MI_CALLOC_ALIGNED_AT,
	MMS_MI_HEAP_MALLOC,
	MMS_MI_HEAP_MALLOC_SMALL,
	MMS_MI_HEAP_ZALLOC,
	MMS_MI_HEAP_CALLOC,
	MMS_MI_HEAP_MALLOCN,
	MMS_MI_HEAP_MALLOC_ALIGNED,
	MMS_MI_HEAP_MALLOC_ALIGNED_AT,
	MMS_MI_HEAP_ZALLOC_ALIGNED,
	MMS_MI_HEAP_ZALLOC_ALIGNED_AT,
	MMS_MI_HEAP_CALLOC_ALIGNED,
	MMS_MI_HEAP_CALLOC_ALIGNED_AT,
	/* Copies: (heap,) string (, length or buffer). */
	MMS_MI_STRDUP,
	MMS_MI_STRNDUP,
	MMS_MI_REALPATH,
	MMS_MI_HEAP_STRDUP,
	MMS_MI_HEAP_STRNDUP,
	MMS_MI_HEAP_REALPATH,
	/* Resizes: (heap,) block, (count,) size, (alignment, (offset)). */
	MMS_MI_REALLOCN,
	MMS_MI_REALLOCF,
	MMS_MI_REZALLOC,
	MMS_MI_RECALLOC,
	MMS_MI_REALLOC_ALIGNED,
	MMS_MI_REALLOC_ALIGNED_AT,
	MMS_MI_REZALLOC_ALIGNED,
	MMS_MI_REZALLOC_ALIGNED_AT,
	MMS_MI_RECALLOC_ALIGNED,
	MMS_MI_RECALLOC_ALIGNED_AT,
	MMS_MI_EXPAND,
	MMS_MI_HEAP_REALLOC,
	MMS_MI_HEAP_REALLOCN,
	MMS_MI_HEAP_REALLOCF,
	MMS_MI_HEAP_REZALLOC,
	MMS_MI_HEAP_RECALLOC,
	MMS_MI_HEAP_REALLOC_ALIGNED,
	MMS_MI_HEAP_REALLOC_ALIGNED_AT,
	MMS_MI_HEAP_REZALLOC_ALIGNED,
	MMS_MI_HEAP_REZALLOC_ALIGNED_AT,
	MMS_MI_HEAP_RECALLOC_ALIGNED,
	MMS_MI_HEAP_RECALLOC_ALIGNED_AT,
	/* A heap destroyed with its blocks; their visit and whether a
	 * heap holds a block (called, not redirected). */
	MMS_MI_HEAP_DESTROY,
	MMS_MI_HEAP_VISIT_BLOCKS,
	MMS_MI_HEAP_CONTAINS_BLOCK,
	MMS_MI_COUNT
};
/* mi_free (mi_cfree, mi_free_size and the aligned ones) and mi_realloc:
 * free and realloc that also forget an aligned block of a heap (mimalloc.c). */
void mms__mi_free(void *p) MMS_HIDDEN;
void *mms__mi_realloc(void *p, size_t size) MMS_HIDDEN;
/* The lock of the aligned blocks of heaps, held across a fork. */
void mms__mi_before_fork(void) MMS_HIDDEN;
void mms__mi_after_fork(void) MMS_HIDDEN;
/* Each function's name and the recorder's in its place (NULL: none). */
struct mms_mi_fn {
	const char *name;
	void *to;
};
extern const struct mms_mi_fn mms__mi_fns[MMS_MI_COUNT] MMS_HIDDEN;
/* mimalloc's own, set by redirect.c before any call is redirected. */
extern void *mms__mi_real[MMS_MI_COUNT] MMS_HIDDEN;

#endif /* MMS_MIMALLOC_H */
