/* SPDX-License-Identifier: MIT */
/* msmemscope/summary.h: the figures of a whole log (mms_summarize()), as
 * every pass computes them. */
#ifndef MSMEMSCOPE_API_SUMMARY_H
#define MSMEMSCOPE_API_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope/log.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Counts for the memory of one kind. */
typedef struct mms_kind_summary {
	uint64_t allocs;          /* MALLOC events (a realloc counts as one) */
	uint64_t frees;           /* FREE events (a realloc counts as one, moved or not) */
	uint64_t bytes_allocated; /* sum of MALLOC sizes */
	uint64_t peak_bytes;      /* highest live bytes */
	uint64_t live_blocks;     /* at the end of the log */
	uint64_t live_bytes;
} mms_kind_summary_t;

/* What a bad free was. */
enum mms_bad_free_kind {
	MMS_BAD_FREE_DOUBLE = 1,     /* of a block freed before */
	MMS_BAD_FREE_INVALID = 2,    /* of an address that is no live block */
	MMS_BAD_FREE_MISMATCHED = 3, /* of a live heap block, by a function of another
	                                family than its allocation's (format 16: delete
	                                of a block of new[] or malloc, free or realloc of
	                                one of new, delete[] of one of new, ...) */
};

/* A free that freed no live block: a double free (the block was freed
 * before, at freed_event), or a free of an address that is no live block
 * as far as the log shows (the earlier free, if any, is not known: the
 * reader remembers the last few thousand frees only); or a free of a
 * live heap block by the wrong family's function (the block is freed). */
typedef struct mms_bad_free {
	uint64_t event;           /* the FREE event */
	uint64_t addr;
	uint32_t thread;          /* the thread that freed */
	uint16_t mem;             /* enum mms_mem_kind: HOST or POOL */
	const char *pool;         /* POOL: the pool's name (the log's, valid until
	                             mms_log_close()), or NULL */
	uint64_t freed_event;     /* a double free: the FREE event that freed the block
	                             first; UINT64_MAX for any other bad free */
	uint64_t alloc_event;     /* a double or mismatched free: the block's MALLOC event */
	uint64_t size;            /* a double or mismatched free: the block's size */
	uint32_t stack;           /* a double or mismatched free: the block's allocation stack */
	unsigned kind;            /* enum mms_bad_free_kind */
	unsigned alloc_fn;        /* a mismatched free: the block's allocating function
	                             (enum mms_alloc_func) */
	unsigned free_fn;         /* and the releasing one (enum mms_free_func) */
	uint32_t free_stack;      /* the stack of the bad free's call (0: none recorded) */
	uint32_t freed_stack;     /* a double free: the stack of the free at freed_event
	                             (0: none recorded) */
} mms_bad_free_t;

/* Bad frees a summary or a leaks report keeps, the first in log order;
 * the counts count them all. */
#define MMS_BAD_FREES_KEPT 16

typedef struct mms_summary {
	uint64_t events;                          /* all events */
	uint64_t by_kind[MMS_EV_KIND_COUNT];      /* events per enum mms_event_kind */
	mms_kind_summary_t mem[MMS_MEM_KIND_COUNT]; /* HOST is the malloc family */
	uint64_t threads;
	uint64_t steps;                           /* steps run: STEP events (+1 if anything happened
	                                             after the last), or "step start" ranges; 0 if
	                                             never marked */
	uint64_t unmatched_frees;                 /* frees of no live block: double_frees +
	                                             invalid_frees */
	uint64_t double_allocs;                   /* an address handed out while live */
	/* A fork child's (mms_log_fork()): the blocks it inherited still
	 * live at the end, and their bytes, per memory kind (counted in
	 * mem[].live_blocks and live_bytes too). */
	uint64_t inherited_live_blocks[MMS_MEM_KIND_COUNT];
	uint64_t inherited_live_bytes[MMS_MEM_KIND_COUNT];
	uint64_t double_frees;                    /* frees of a block freed before */
	uint64_t invalid_frees;                   /* frees of an address that is no live block
	                                             (nor a block freed lately) */
	uint64_t mismatched_frees;                /* heap blocks released by another family's
	                                             function (format 16; not in
	                                             unmatched_frees: the block is freed) */
	mms_bad_free_t bad_frees[MMS_BAD_FREES_KEPT]; /* the first of the three, in log order */
	size_t nbad_frees;
	/* Blocks live at the end that the runtimes (C, C++, CPython, perl, Node.js, the JVM, CUDA) keep
	 * for themselves (counted in mem[].live_blocks and live_bytes too):
	 * not leaks. Per enum mms_runtime and memory kind, [MMS_RUNTIME_NONE]
	 * being all runtimes': [MMS_RUNTIME_NONE][MMS_MEM_HOST] are the heap
	 * blocks the runtimes keep, [k][MMS_MEM_MMAP] runtime k's mappings. */
	uint64_t runtime_blocks[MMS_RUNTIME_COUNT][MMS_MEM_KIND_COUNT];
	uint64_t runtime_bytes[MMS_RUNTIME_COUNT][MMS_MEM_KIND_COUNT];
	int freeres;              /* the recorder had glibc and libstdc++ free their
	                             internal memory at the end of exit */
	/* The program's heap blocks live at the end of a log that reached
	 * exit (not the runtimes'), by what they were to it then (enum
	 * mms_reach, format 12: the recorder's scan of its memory at exit);
	 * reach_known 0 when the log cannot tell (all are then
	 * [MMS_REACH_UNKNOWN]). */
	int reach_known;
	uint64_t reach_blocks[MMS_REACH_COUNT];
	uint64_t reach_bytes[MMS_REACH_COUNT];
	/* Releases between the malloc family and a C++ one (delete of a
	 * malloc'd block, free of a new'd one) in a log where a module calls
	 * its own copy of the C++ operators (mms_log_own_operators()): that
	 * module's new is recorded as malloc, so these are not told
	 * mismatched; not in mismatched_frees. */
	uint64_t unchecked_frees;
	/* Frees of no live block in a log recorded in parts (collect=deferred,
	 * --steps, msmemscope_stop()): of blocks allocated while nothing was
	 * recorded, so neither double nor invalid frees (in unmatched_frees,
	 * not in double_frees or invalid_frees, not in bad_frees). */
	uint64_t unrecorded_frees;
	/* The id + 1 of the last event at which recording stopped
	 * (msmemscope_stop(), also in immediate mode; the end of a step
	 * recorded under --steps); 0: it never stopped. Where not 0, what
	 * the program did while nothing was recorded is not in the log. */
	uint64_t gap_event;
} mms_summary_t;

/* Replays the whole log and fills *out: mms_pass_summary() of a pass of
 * its own. Returns 0 or a negative code; on MMS_ECORRUPT the summary covers
 * the events before the damage. */
int mms_summarize(mms_log_t *log, mms_summary_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MSMEMSCOPE_API_SUMMARY_H */
