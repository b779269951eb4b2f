/* SPDX-License-Identifier: MIT */
/* msmemscope/replay.h: replay a log into a heap state, seek, follow steps,
 * and report on a step. */
#ifndef MSMEMSCOPE_API_REPLAY_H
#define MSMEMSCOPE_API_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope/log.h"
#include "msmemscope/summary.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- replay: heap state, steps and seek (state.c, index.c, seek.c) -------
 * A replay applies the log's events in order to a heap state: the live
 * blocks of every memory kind, with where, when and by whom each was
 * allocated. Its position is the number of events applied: position 0 is
 * before the first event, position N + 1 is just after event N. Seeking
 * jumps to the nearest checkpoint of the state and replays from there;
 * the checkpoints live in an index file beside the log (LOG.idx), built
 * by mms_replay_open() on the first open and rebuilt when the log changed.
 * Memory follows the live blocks, not the length of the log. */
typedef struct mms_replay mms_replay_t;

/* A block, live or freed. Strings belong to the log or the replay and
 * stay valid until the replay is closed. */
typedef struct mms_block {
	uint64_t addr;
	uint64_t size;
	uint16_t mem;             /* enum mms_mem_kind */
	uint16_t fn;              /* allocator function (enum mms_alloc_func) for HOST,
	                             enum mms_device_sub for DEVICE */
	uint32_t thread;          /* thread index that allocated it */
	uint32_t stack;           /* allocation stack id, 0 = none */
	uint64_t alloc_id;        /* msMemScope's allocation_id: the block's MALLOC is the
	                             alloc_id-th allocation of the log, from 1 */
	uint64_t alloc_event;     /* id of the MALLOC event */
	uint64_t step;            /* step in which it was allocated, 0 = outside steps */
	uint64_t op_launch;       /* launch index (from 1) of the operator running on the
	                             allocating thread, 0 = none */
	const char *op;           /* that operator's name, or NULL */
	uint64_t kernel_launches; /* kernel launches before the allocation */
	const char *owner;        /* owner tags joined by '@', or NULL */
	const char *pool;         /* POOL: the pool's name; DEVICE: the device's, as
	                             PyTorch names it ("cuda:1"); NULL otherwise */
	uint64_t free_event;      /* id of the FREE event; UINT64_MAX while live */
	uint32_t free_thread;     /* thread that freed it, when freed */
	/* A forked child's block that its parent held at the fork (see
	 * mms_log_fork()): 1, with alloc_event 0 (before the log's first
	 * event), thread 0, no operator or step; origin_pid and origin_event
	 * say which process allocated it and its MALLOC's id in that
	 * process's log (the parent's, or an earlier ancestor's). */
	int inherited;
	uint64_t origin_pid, origin_event;
	/* HOST: a block the C or C++ runtime keeps for itself by design,
	 * not the program's (enum mms_runtime, MMS_RUNTIME_NONE: the
	 * program's); mms_runtime_name() names it. From mms_replay_blocks()
	 * at the end of the log, also what the leaks report counts as kept
	 * at exit (a CPython interpreter's state, its mappings too). */
	uint32_t runtime;
	/* When freed: the stack of the call that freed it (logs of version 5
	 * recorded with stacks on), 0 = none. */
	uint32_t free_stack;
	/* DEVICE memory (format 6): the CUDA device ordinal; 0 otherwise.
	 * Its `fn` is enum mms_device_sub. */
	uint32_t device;
	/* A heap block live at the end of a log that reached exit (format
	 * 12): enum mms_reach, whether the program still pointed to it. */
	uint32_t reach;
	/* A leaked block (MMS_REACH_LEAKED): the indirectly leaked blocks
	 * lost with it, those it was the first leaked block found to lead
	 * to (valgrind's "N (direct, indirect) bytes"): each indirectly
	 * leaked block is counted under one leaked block. 0 otherwise. */
	uint64_t indirect_blocks, indirect_bytes;
} mms_block_t;

/* Where a replay stands. */
typedef struct mms_where {
	uint64_t position;        /* events applied; the next event's id */
	uint64_t events;          /* events in the log */
	uint64_t step;            /* current step (see mms_replay_steps()), 0 = outside */
	int in_step;              /* "step start" ranges: inside one; STEP events: 1 */
	uint64_t op_launches;     /* operator launches so far */
	uint64_t kernel_launches;
	const char *op;           /* innermost operator running on the thread of the last
	                             event applied, or NULL */
	uint64_t op_launch;       /* its launch index */
	uint32_t thread;          /* thread of the last event applied */
	mms_kind_summary_t mem[MMS_MEM_KIND_COUNT]; /* figures up to here */
	uint64_t live_bytes;      /* all kinds */
	uint64_t peak_bytes;      /* highest live bytes of HOST, MMAP and POOL together so far
	                             (DEVICE: mem[MMS_MEM_DEVICE].peak_bytes) */
	uint64_t unmatched_frees;
	uint64_t double_allocs;
	uint64_t double_frees, invalid_frees; /* unmatched_frees, told apart */
	uint64_t mismatched_frees;            /* heap blocks released by another family's function
	                              (delete of new[], free of new, ...; format 16) */
	uint64_t unchecked_frees;             /* releases between the malloc and a C++ family
	                              not checked: a module calls its own operators
	                              (mms_log_own_operators()) */
	uint64_t gap_event;                   /* as mms_summary_t's: where recording last
	                              stopped (id + 1), 0: it has not so far */
} mms_where_t;

/* Options of mms_replay_open_ex(); zero means the default. */
typedef struct mms_replay_options {
	const char *index_path;   /* default: the log's path + ".idx" */
	int no_index_file;        /* 1: keep the checkpoints in memory only */
	uint64_t checkpoint_every; /* events between checkpoints (default 1 << 20) */
	int forward_only;         /* 1: no index at all (no steps, no seeking back); for
	                             one pass over the log, as exporters make */
	/* Called now and then while the index is built (done <= total events);
	 * returning non-zero cancels the open with -ECANCELED. The replay
	 * keeps it (ctx must outlive it): a step report calls it too while it
	 * replays the step, and a seek while it replays events (done of the
	 * total it has to replay), and are cancelled the same way (a seek's
	 * replay then stands where it stopped). */
	int (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
} mms_replay_options_t;

/* What mms_replay_open_ex() did about the index. */
enum mms_index_state {
	MMS_INDEX_LOADED = 1,     /* read from the index file */
	MMS_INDEX_BUILT = 2,      /* built and written to the index file */
	MMS_INDEX_MEMORY = 3,     /* built, kept in memory (file not writable or refused) */
};

/* Opens a replay of log at position 0, loading or building the index.
 * Returns 0 and sets *out, or a negative code. The log must outlive it.
 * Free with mms_replay_close(). */
int mms_replay_open(mms_log_t *log, mms_replay_t **out);
int mms_replay_open_ex(mms_log_t *log, const mms_replay_options_t *opt, mms_replay_t **out);
void mms_replay_close(mms_replay_t *r);
/* How the index was obtained (enum mms_index_state) and, when it could not
 * be written beside the log, why (-errno), else 0. */
int mms_replay_index_state(const mms_replay_t *r, int *write_error);

/* Applies the next event and returns 1 with *ev filled (ev may be NULL), 0
 * at the end of the log, or a negative code (the damage that stops it).
 * Unlike mms_iter_next(), an OP_LAUNCH end carries the name of the launch
 * it ends (NULL when it ends none). */
int mms_replay_next(mms_replay_t *r, mms_event_t *ev);
/* Moves to position pos (0 <= pos <= events): a checkpoint and a short
 * replay, backwards or forwards. Returns 0 or a negative code
 * (MMS_EUSAGE for a position past the end; -ECANCELED when the progress
 * callback cancelled the replay, which stands where it stopped). */
int mms_replay_seek(mms_replay_t *r, uint64_t pos);
void mms_replay_where(const mms_replay_t *r, mms_where_t *w);
/* A forward-only replay (forward_only) of a log followed while its
 * program writes it (mms_log_follow()): looks at the log again
 * (mms_log_follow_refresh()) and lets the replay go on into the records
 * written since, without replaying what it applied already: then seek
 * forward to the new end (mms_log_get_info()'s events), say at each stop
 * of a debugger. Every record is read, up to the last written: where
 * threads write concurrently a later look may find one stamped before
 * what was applied, and returns MMS_EORDER (as may a damaged or cut
 * log). Returns 1 when records were added, 0 when not, or a negative
 * code, after which the replay goes no further (mms_replay_next()
 * returns that code): open a new one. MMS_EUSAGE for a replay with an
 * index or over a log not followed. */
int mms_replay_follow_refresh(mms_replay_t *r);

/* Steps: msmemscope_step() ends step k and begins k + 1 (the first step
 * begins with the program), or "step start" ranges (step k is the k-th
 * range), whichever the log uses first. Returns the number of steps. */
uint64_t mms_replay_steps(const mms_replay_t *r);
/* Positions where step `step` (from 1) begins and ends: seeking to *end
 * gives the state at the end of the step. Returns 0 or MMS_EUSAGE. */
int mms_replay_step_range(const mms_replay_t *r, uint64_t step, uint64_t *begin, uint64_t *end);

/* The live block containing addr (any kind): returns 1 and fills *b, or 0. */
int mms_replay_block_at(const mms_replay_t *r, uint64_t addr, mms_block_t *b);
/* The most recent block containing addr that was freed before the current
 * position: returns 1 and fills *b, 0 when none, or a negative code.
 * Replays from earlier checkpoints; does not move the replay. */
int mms_replay_freed_block_at(mms_replay_t *r, uint64_t addr, mms_block_t *b);
/* Calls fn for each live block (in no set order) until fn returns
 * non-zero, which is then returned; else returns 0. */
int mms_replay_blocks(const mms_replay_t *r, int (*fn)(const mms_block_t *b, void *ctx), void *ctx);
/* The last event applied (id position - 1): returns 1 and fills *ev, or 0
 * at position 0. */
int mms_replay_last_event(const mms_replay_t *r, mms_event_t *ev);
/* The block the last event applied allocated or freed (free_event set),
 * or for ACCESS and WATCH the live block containing its address: returns 1
 * and fills *b, or 0 (other events, unknown address). */
int mms_replay_event_block(const mms_replay_t *r, mms_block_t *b);
/* The log the replay reads. */
mms_log_t *mms_replay_log(const mms_replay_t *r);

/* --- reports over a replay (report.c) ------------------------------------ */

/* Live blocks that share an allocation stack, and whose they are: the
 * blocks a runtime keeps for itself (mms_block_t.runtime) never share a
 * group with the program's. */
typedef struct mms_stack_group {
	uint32_t stack;           /* allocation stack id, 0 = none recorded */
	uint64_t blocks, bytes;
	uint64_t addr;            /* the largest block of the group: its address, */
	uint64_t size;            /* size, */
	uint64_t step;            /* step */
	const char *op;           /* and operator (NULL: none) */
	uint32_t runtime;         /* enum mms_runtime of its blocks; MMS_RUNTIME_NONE:
	                             the program's */
	uint32_t mem;             /* enum mms_mem_kind of its blocks: each kind groups
	                             apart (DEVICE per device) */
	uint32_t device;          /* DEVICE: the CUDA device ordinal */
	uint32_t reach;           /* enum mms_reach of its blocks (heap blocks at the end
	                             of a log with the scan at exit: each verdict groups
	                             apart); MMS_REACH_UNKNOWN otherwise */
	uint64_t indirect_blocks; /* MMS_REACH_LEAKED: the indirectly leaked blocks lost */
	uint64_t indirect_bytes;  /* with its blocks (mms_block_t's, summed) */
} mms_stack_group_t;

/* Groups the live blocks allocated in steps step_lo..step_hi (0..UINT64_MAX
 * for all) by allocation stack, largest bytes first (with the
 * indirectly leaked bytes lost with them; then by stack id).
 * Returns 0 and sets *out (free() it) and *n, or a negative code. */
int mms_replay_group_live(const mms_replay_t *r, uint64_t step_lo, uint64_t step_hi, mms_stack_group_t **out,
			  size_t *n);

/* One operator launch. Memory figures count the events of its thread
 * while it ran, nested launches included. */
typedef struct mms_launch {
	uint64_t launch;          /* launch index, from 1 */
	const char *name;
	uint32_t thread;
	int32_t device;           /* a CUDA kernel's launch: its device ordinal (format
	                             11); -1: none (an operator launch, a kernel launch of
	                             msmemscope_kernel_launch() or an older log) */
	uint64_t begin_event;
	uint64_t end_event;       /* UINT64_MAX when it had not ended */
	uint64_t allocs, frees;
	uint64_t bytes_allocated, bytes_freed;
	int64_t delta_bytes;      /* bytes_allocated - bytes_freed */
} mms_launch_t;

/* Live bytes per owner (tags joined by '@'; NULL for blocks with none). */
typedef struct mms_owner_group {
	const char *owner;
	uint64_t blocks, bytes;
} mms_owner_group_t;

/* How much of a step a log recorded (mms_step_report_t.recorded,
 * mms_leak_step_t.recorded): a program recorded with --steps or
 * collect=deferred has collection off for some steps or parts of them;
 * the figures of such a step count only what was recorded. */
typedef enum mms_step_recorded {
	MMS_STEP_RECORDED_ALL = 0,  /* collection was on through the whole step */
	MMS_STEP_RECORDED_PART = 1, /* on for part of it (msmemscope_start/stop) */
	MMS_STEP_RECORDED_NONE = 2  /* off through the whole step: only the step's
	                               structure (marks, launches) is in the log */
} mms_step_recorded_t;

typedef struct mms_step_report {
	uint64_t step;
	mms_step_recorded_t recorded;
	uint64_t begin, end;      /* positions, see mms_replay_step_range() */
	mms_where_t at_end;       /* the state at the end of the step */
	uint64_t peak_bytes;      /* highest live bytes (HOST, MMAP, POOL) within the step */
	uint64_t peak_event;      /* the event that reached it */
	uint64_t allocs, frees, bytes_allocated, bytes_freed;
	int64_t delta_bytes;      /* live bytes at the end minus at the beginning */
	uint64_t kept_blocks, kept_bytes; /* allocated in the step, live at its end */
	mms_stack_group_t *kept;  /* ... grouped by stack, largest first */
	size_t nkept;
	mms_launch_t *launches;   /* operator launches begun in the step, in order */
	size_t nlaunches;
	mms_owner_group_t *owners; /* live bytes at the end by owner, largest first */
	size_t nowners;
} mms_step_report_t;

/* Replays step `step` (from 1) and reports on it, leaving the replay at the
 * end of the step. Returns 0 and sets *out (free it with
 * mms_step_report_free()), MMS_EUSAGE for a step the log does not have,
 * or a negative code. */
int mms_replay_step_report(mms_replay_t *r, uint64_t step, mms_step_report_t **out);
void mms_step_report_free(mms_step_report_t *rep);
/* "all", "part" or "none" (as JSON and the SQLite export have it); NULL
 * for a value that is none of them. */
const char *mms_step_recorded_name(mms_step_recorded_t r);

#ifdef __cplusplus
}
#endif

#endif /* MSMEMSCOPE_API_REPLAY_H */
