/* SPDX-License-Identifier: MIT */
/* msmemscope/analysis.h: the analyses of a log: decompose, inefficient
 * memory, leaks and suppressions, the GPU-trace scripts' reports
 * (watermark, usage, leakage), and the watch sums. */
#ifndef MSMEMSCOPE_API_ANALYSIS_H
#define MSMEMSCOPE_API_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope/log.h"
#include "msmemscope/output.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "msmemscope/summary.h"
#include "msmemscope/symbolize.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- decompose (decompose.c) ---------------------------------------------
 * Live bytes as a tree: the memory kind first ("HOST", "MMAP", or a pool's
 * name; "POOL" for an unnamed pool), then one level per '@'-separated tag
 * of the blocks' owner (msmemscope_owner_push), with "(no owner)" for
 * blocks that have none. */
typedef struct mms_decompose_node {
	const char *name;         /* kind, pool, owner tag, or "(no owner)" */
	unsigned depth;           /* 0: kind or pool; 1, 2, ...: owner levels */
	uint64_t bytes, blocks;   /* the node and everything below it */
	uint64_t self_bytes, self_blocks; /* blocks whose owner ends at this node */
} mms_decompose_node_t;

typedef struct mms_decompose_tree {
	uint64_t position;        /* events applied (see mms_where_t) */
	uint64_t bytes, blocks;   /* all live blocks */
	mms_decompose_node_t *nodes; /* in pre-order: each node, then its children,
	                             largest bytes first (then by name) */
	size_t n;
} mms_decompose_tree_t;

/* Decomposes the live blocks at the replay's position. Returns 0 and sets
 * *out (free it with mms_decompose_tree_free(); its strings are its own),
 * or a negative code. */
int mms_decompose_replay(const mms_replay_t *r, mms_decompose_tree_t **out);
void mms_decompose_tree_free(mms_decompose_tree_t *d);

/* Options of the decompose analysis; zero (or NULL) means the default. */
typedef struct mms_decompose_options {
	int end_only;             /* 1: the end only, no peak */
	unsigned kinds;           /* memory kinds: bits 1 << enum mms_mem_kind. 0: every
	                             kind in the trees, the peak of the process's
	                             memory (HOST, MMAP and POOL together); else only
	                             those kinds, at the peak of those together
	                             (1 << MMS_MEM_DEVICE: CUDA memory at its peak) */
} mms_decompose_options_t;

/* The live blocks of a log at its end and at its peak (the first position
 * where the live bytes of the kinds counted were highest). */
typedef struct mms_decompose {
	mms_decompose_tree_t *end;  /* a damaged log ends where its readable events end */
	mms_decompose_tree_t *peak; /* NULL with end_only */
	int status;               /* 0, or the error that stopped this analysis */
} mms_decompose_t;

/* Decomposes the log the pass reads. The groups are followed on the way:
 * memory follows the live blocks and the groups; a second read of the log
 * up to the peak happens only when an event before the peak replaced
 * blocks unseen (a mapping over others, an munmap, an address handed out
 * while live). Returns 0 and sets *out, filled once mms_pass_run()
 * returned (free it with mms_decompose_free()), or a negative code. */
int mms_decompose_add(mms_pass_t *p, const mms_decompose_options_t *opt, mms_decompose_t **out);
/* The same in a pass of its own. */
int mms_decompose_run(mms_log_t *log, const mms_decompose_options_t *opt, mms_decompose_t **out);
void mms_decompose_free(mms_decompose_t *d);

/* --- inefficient memory (inefficient.c) -----------------------------------
 * msMemScope's rules over operator-launch indices. A counter advances at
 * each operator launch (OP_LAUNCH begin, any thread); a MALLOC, FREE or
 * ACCESS on a thread running no operator advances it too, as an operator
 * of its own. An event's operator is the innermost launch running on its
 * thread. When a launch ends, it becomes lastMallocOp if it allocated, and
 * lastFreeOp if it freed (a lone memory event at once).
 *  - early_allocation: at the block's first access in another operator
 *    than its allocation's, mallocOp < lastFreeOp < that access's op.
 *  - late_deallocation: at its free, the block's last event was an access
 *    in another operator, and lastAccessOp < lastMallocOp < the free's op.
 *  - temporary_idleness: two consecutive accesses to the block more than
 *    idle_threshold operators apart, for blocks of min_size bytes or more.
 * Accesses come from msmemscope_access() (record with events=access). */
enum mms_inefficient_type {
	MMS_INEFF_EARLY_ALLOCATION = 1u << 0,
	MMS_INEFF_LATE_DEALLOCATION = 1u << 1,
	MMS_INEFF_TEMPORARY_IDLENESS = 1u << 2,
};
#define MMS_INEFF_TYPES 3

typedef struct mms_inefficient_options {
	uint64_t idle_threshold;  /* operators between two accesses; 0: 3000 */
	uint64_t min_size;        /* temporary_idleness: smallest block, bytes */
	size_t keep;              /* blocks kept in the result (the largest); 0: all */
	int tags;                 /* 1: also note every flagged block's types for
	                             mms_export_options_t.inefficient (four bits per
	                             allocation of the log) */
} mms_inefficient_options_t;

/* A block found inefficient, with the operator indices that made it so. */
typedef struct mms_inefficient_block {
	mms_block_t block;        /* free_event UINT64_MAX: live at the end */
	unsigned types;           /* enum mms_inefficient_type bits */
	uint64_t malloc_op;       /* operator of the allocation */
	uint64_t first_access_op; /* first access in another operator, 0 = none */
	uint64_t free_op;         /* operator of the free, 0 = live at the end */
	uint64_t early_free_op;   /* early_allocation: lastFreeOp then */
	uint64_t late_access_op, late_malloc_op; /* late_deallocation: lastAccessOp, lastMallocOp */
	uint64_t idle_from_op, idle_to_op; /* temporary_idleness: the two accesses */
} mms_inefficient_block_t;

typedef struct mms_inefficient {
	uint64_t ops;             /* the counter at the end */
	uint64_t launches;        /* operator launches among them (the rest: memory
	                             events outside any operator) */
	uint64_t accesses;        /* ACCESS events in the log */
	uint64_t idle_threshold, min_size; /* as applied */
	uint64_t flagged;         /* blocks of one type or more */
	uint64_t count[MMS_INEFF_TYPES]; /* blocks of each type, by bit number */
	uint64_t bytes[MMS_INEFF_TYPES]; /* their bytes */
	mms_inefficient_block_t *blocks; /* the flagged blocks kept (all, or the
	                             opt->keep largest): larger first, then in
	                             allocation order */
	size_t n;
	int status;               /* 0, or the error that stopped this analysis */
} mms_inefficient_t;

/* Runs the rules over the log the pass reads (opt may be NULL for the
 * defaults). Returns 0 and sets *out, filled once mms_pass_run() returned
 * (free it with mms_inefficient_free(); its strings live until then, the
 * log's until mms_log_close()), or a negative code. A damaged log is
 * judged up to its damage. */
int mms_inefficient_add(mms_pass_t *p, const mms_inefficient_options_t *opt, mms_inefficient_t **out);
/* The same in a pass of its own. */
int mms_inefficient_run(mms_log_t *log, const mms_inefficient_options_t *opt, mms_inefficient_t **out);
void mms_inefficient_free(mms_inefficient_t *res);
/* "early_allocation", "late_deallocation", "temporary_idleness" for one
 * enum mms_inefficient_type bit; NULL for anything else. */
const char *mms_inefficient_type_name(unsigned type);

/* --- leaks (leaks.c, suppress.c) ------------------------------------------
 * msMemScope's leak rules in one forward pass over a log, with memory
 * proportional to the live blocks. Per step: a block allocated in step
 * N >= 2 (step 1 is warm-up) and still live at the end of step N + 1 is a
 * leak, found once, at that step end. At the end of the log: every block
 * still live. When asked, between marks: a block allocated between two
 * marks of one name and still live at the next. Besides, per step, the lowest and highest live bytes of
 * each memory kind and what the step allocated (msMemScope's "gap"
 * table). */
typedef struct mms_leak {
	mms_block_t b;            /* the block (a piece of a mapping that munmap cut
	                             is its own block); b.step: where it was allocated */
	uint64_t found_step;      /* the step at whose end the per-step rule found
	                             it (b.step + 1); 0 for a block live at the end */
	uint64_t freed_step;      /* a block the per-step rule found that was freed
	                             later (a mapping's piece: its last page
	                             unmapped): the step of its free (0: live at
	                             the end) */
	uint64_t freed_event;     /* and that free's event */
	size_t suppression;       /* 1 + index of the suppression that matched it
	                             (mms_leaks_options_t), 0 for none */
} mms_leak_t;

typedef struct mms_leak_step {
	uint64_t step;            /* from 1 */
	mms_step_recorded_t recorded; /* how much of the step the log has (--steps,
	                             collect=deferred): the figures below count what
	                             was recorded */
	uint64_t allocs;          /* MALLOC events in the step, all kinds */
	uint64_t bytes_allocated;
	uint64_t min_bytes[MMS_MEM_KIND_COUNT]; /* live bytes of each kind: lowest */
	uint64_t max_bytes[MMS_MEM_KIND_COUNT]; /* and highest within the step */
	uint64_t end_bytes[MMS_MEM_KIND_COUNT]; /* and at its end (the last step's:
	                                           at the end of the log) */
} mms_leak_step_t;

typedef struct mms_leaks {
	mms_leak_t *step_leaks;   /* per-step rule, in the order found */
	size_t nstep_leaks;
	uint32_t warmup_steps; /* the rule's warm-up, as applied
	                             (mms_leaks_options_t.warmup_steps) */
	/* What the per-step rule found that the program freed before its last
	 * step ended (freed_step): held past the step after its own, then
	 * given back during the steps (a queue, prefetched input, a cache
	 * that turns over): not leaks, not in step_leaks, in the order
	 * found. The steps' own ends count, not the end of the log: what is
	 * freed only after the last step (at exit) stays a leak. */
	mms_leak_t *step_held;
	size_t nstep_held;
	mms_leak_t *exit_leaks;   /* live at the end of the log, by allocation order */
	size_t nexit_leaks;
	mms_leak_t *runtime_kept; /* live at the end too, but kept by the C or C++
	                             runtime by design (b.runtime): not leaks; never in
	                             step_leaks either */
	size_t nruntime_kept;
	/* Live at the end of a log that reached exit, the program's, and
	 * still pointed to from its globals, stacks or thread-local storage
	 * then (b.reach MMS_REACH_REACHABLE, format 12): not leaks, not in
	 * exit_leaks, by allocation order. reach_known: 1 when the log's
	 * scan told every heap block of exit_leaks apart (b.reach), 0 when
	 * it could not (exit_leaks is then every block live at the end). */
	mms_leak_t *reachable;
	size_t nreachable;
	int reach_known;
	mms_leak_step_t *steps;   /* every step of the log, in order */
	size_t nsteps;
	uint64_t double_frees, invalid_frees; /* frees of no live block, as in the summary */
	uint64_t mismatched_frees;            /* heap blocks released by another family's function */
	mms_bad_free_t bad_frees[MMS_BAD_FREES_KEPT]; /* the first of the three, in log order */
	size_t nbad_frees;
	uint64_t events;          /* events replayed */
	int stop_rc;              /* the damage that ended the replay early, or 0 */
	int status;               /* 0, or the error that stopped this analysis */
	/* The marks rule (mms_leaks_options_t.marks), in allocation order;
	 * found_step 0. Empty unless the third mark was reached. */
	mms_leak_t *mark_leaks;
	size_t nmark_leaks;
	uint64_t marks_seen;      /* marks of that name in the events replayed */
	uint64_t mark_events[3];  /* the three marks' events; UINT64_MAX: not reached */
	/* What the per-step rule found that the Python package's sweep at exit
	 * freed (format 14, MMS_SYS_SWEEP_BEGIN to MMS_SYS_SWEEP_END, on its
	 * thread), after the last step ended: memory the program had let go
	 * of, which CPython kept until then (garbage of reference cycles that
	 * no collection had reached yet, its method cache's attribute names,
	 * PyTorch's cache of dead shared storages): not leaks, not in
	 * step_leaks, in the order found. */
	mms_leak_t *step_swept;
	size_t nstep_swept;
	/* What the per-step rule found (and neither step_held nor step_swept
	 * holds) of an allocation stack whose blocks it found all came from
	 * one step, followed by at least 3 more steps that kept none (stack 0,
	 * none recorded, is one stack: every block of no stack came from that
	 * step): allocated once after the warm-up and kept, as a table or
	 * cache built lazily where a code path first ran (a first checkpoint,
	 * a first evaluation) is; not memory that grows from step to step.
	 * Not in step_leaks; in the order found. */
	mms_leak_t *step_once;
	size_t nstep_once;
	/* What the per-step rule found (and the lists above do not hold)
	 * that a cache or queue still held when the steps ended: of an
	 * allocation stack some of whose blocks are in step_held (stack 0,
	 * none recorded, is one stack), the blocks no older at the end of the
	 * last step than the longest that one of those lived before it was
	 * freed (b.step to freed_step). An LRU cache's entries, the last
	 * batch a loader prefetched. Not in step_leaks; in the order found. */
	mms_leak_t *step_cached;
	size_t nstep_cached;
	uint64_t unchecked_frees; /* releases not checked for their family, as in the summary */
	/* Live at the end, allocated before recording last stopped
	 * (msmemscope_stop(), the end of a step a --steps recording asked
	 * for) and not still reachable (b.reach MMS_REACH_UNRECORDED): the
	 * program may have freed them while nothing was recorded. Not leaks
	 * it can tell, not in exit_leaks; by allocation order. */
	mms_leak_t *unrecorded;
	size_t nunrecorded;
	uint64_t unrecorded_frees; /* frees of blocks allocated while nothing was
	                              recorded, as in the summary */
	/* What the per-step rule found that was allocated before recording
	 * stopped (at the end of a step a --steps recording asked for, or
	 * msmemscope_stop()) before the step after its own ended: the
	 * program may have freed it while nothing was recorded. Not per-step
	 * leaks the log can tell, not in step_leaks; in the order found. */
	mms_leak_t *step_unrecorded;
	size_t nstep_unrecorded;
} mms_leaks_t;

typedef struct mms_leaks_options mms_leaks_options_t;

/* Finds the leaks of the log the pass reads. A cut or damaged log is
 * reported up to where its replay stops (mms_pass_info_t.stopped), and
 * the step running there did not end: the per-step rule finds nothing at
 * its end. Returns 0 and sets *out, filled once mms_pass_run() returned
 * (free it with mms_leaks_free(); its strings live until then, the log's
 * until mms_log_close()), or a negative code. */
int mms_leaks_add(mms_pass_t *p, const mms_leaks_options_t *opt, mms_leaks_t **out);
/* The same in a pass of its own. Returns 0 and sets *out, or a negative
 * code (and *out NULL). */
int mms_leaks_run(mms_log_t *log, const mms_leaks_options_t *opt, mms_leaks_t **out);
void mms_leaks_free(mms_leaks_t *l);

/* LeakSanitizer's suppressions: "leak:PATTERN" lines, '#' comments and
 * blank lines; PATTERN may hold '*' (any run of characters) and matches a
 * frame's function name, source file or module path anywhere in it
 * (anchored with a leading '^' or a trailing '$', as in LSan). */
typedef struct mms_suppressions mms_suppressions_t;

/* Parses the text of a suppressions file (len bytes). Returns 0 and sets
 * *out (free with mms_suppressions_free()), -ENOMEM, or MMS_EUSAGE with
 * *bad_line set to the first line (from 1) that is not a suppression. */
int mms_suppressions_parse(const char *text, size_t len, mms_suppressions_t **out, unsigned *bad_line);
/* Reads and parses the file at path: as above, or -errno when it cannot be
 * read. */
int mms_suppressions_load(const char *path, mms_suppressions_t **out, unsigned *bad_line);
void mms_suppressions_free(mms_suppressions_t *s);
/* The number of suppressions, and the pattern of suppression i. */
size_t mms_suppressions_count(const mms_suppressions_t *s);
const char *mms_suppressions_pattern(const mms_suppressions_t *s, size_t i);
/* Options of the leaks analysis; zero (or NULL) means the default. */
struct mms_leaks_options {
	/* Marks (leak.suppression) every leak whose allocation stack has a
	 * frame that a suppression matches; NULL: none. */
	mms_suppressions_t *suppressions;
	mms_symbolizer_t *sym;    /* names those frames; NULL: only module paths match */
	/* The per-step rule's warm-up: blocks allocated in steps 1 to
	 * warmup_steps are never per-step leaks. 0 is 1, msMemScope's rule
	 * (step 1 is warm-up), in a log whose steps the program marks; 2 in
	 * one whose steps were inferred from a PyTorch optimizer
	 * (mms_log_info_t.steps_inferred): a training loop's caches, DDP's
	 * gradient buckets, the first run of an optimizer's branches appear
	 * in step 2. A training loop that marks its steps wants 2 too. */
	uint32_t warmup_steps;
	/* msMemScope's offline rule, beside the others: a block allocated
	 * between two marks named marks (MSTX marks: msmemscope_mark(),
	 * mstxMarkA(), nvtxMarkA(), msmemscope.mark() in Python) and still
	 * live at the mark of that name after them is a leak. The three marks
	 * are the mark_first-th of that name (from 1; 0 is 1) and the two
	 * after it. NULL: the rule is not applied. */
	const char *marks;
	uint64_t mark_first;
};
/* Groups the leaks that no suppression matched by allocation stack,
 * largest bytes first. Returns 0 and sets *out (free() it) and *n, or
 * -ENOMEM. */
int mms_leaks_group(const mms_leak_t *leaks, size_t n, mms_stack_group_t **out, size_t *ngroups);

/* --- oom (oom.c) ------------------------------------------------------------
 * msMemScope's OOM analysis in one forward pass: at each allocation the
 * allocator refused (a malloc-family call that returned NULL with ENOMEM,
 * posix_memalign's ENOMEM, a throwing operator new's malloc: ALLOC_FAIL
 * events, format 7), the request and what was live then, the k blocks
 * allocated last and the k largest (the process's memory; not CUDA's).
 * Memory follows the live blocks and k per failure. */
typedef struct mms_oom_options {
	size_t k;                 /* blocks of each list per failure (0: 10; at most 100000) */
	size_t max_failures;      /* failures given in full, the first in log order
	                             (0: 16); the others are counted */
} mms_oom_options_t;

typedef struct mms_oom_failure {
	uint64_t event;           /* the ALLOC_FAIL event */
	uint64_t time_ns;
	uint32_t thread;
	unsigned mem;             /* MMS_MEM_HOST: the malloc family refused; MMS_MEM_DEVICE
	                             (format 8): the CUDA driver (out of device memory) */
	unsigned fn;              /* HOST: enum mms_alloc_func; DEVICE: enum mms_device_sub */
	uint32_t device;          /* DEVICE: the CUDA device ordinal */
	uint64_t size;            /* bytes asked for (UINT64_MAX: calloc's product
	                             overflowed) */
	uint64_t align;           /* alignment asked for, 0: the function's own */
	uint32_t stack;           /* of the call refused */
	uint64_t step;            /* the step then, from 1 (0: none) */
	const char *op;           /* the operator running on the thread, or NULL */
	uint64_t op_launch;
	uint64_t live_blocks, live_bytes; /* live then of the memory refused: host, mmap
	                             and pool memory for a HOST refusal; for a DEVICE
	                             one, the device's memory on that device (pinned
	                             host memory for a pinned refusal) */
	mms_block_t *recent;      /* the k allocated last, newest first */
	size_t nrecent;
	mms_block_t *largest;     /* the k largest, largest first (then the older) */
	size_t nlargest;
} mms_oom_failure_t;

typedef struct mms_oom {
	uint64_t failures;        /* refused allocations in the events replayed */
	mms_oom_failure_t *list;  /* the first max_failures of them */
	size_t n;
	uint64_t events;          /* events replayed */
	int stop_rc;              /* the damage that ended the replay early, or 0 */
	int status;               /* 0, or the error that stopped this analysis */
} mms_oom_t;

/* Adds the analysis to the pass (opt may be NULL for the defaults).
 * Returns 0 and sets *out, filled once mms_pass_run() returned (free it
 * with mms_oom_free(); its strings live until then, the log's until
 * mms_log_close()), or a negative code. */
int mms_oom_add(mms_pass_t *p, const mms_oom_options_t *opt, mms_oom_t **out);
/* The same in a pass of its own. */
int mms_oom_run(mms_log_t *log, const mms_oom_options_t *opt, mms_oom_t **out);
void mms_oom_free(mms_oom_t *o);

/* --- the GPU-trace scripts' analyses (trace.c) ----------------------------
 * One forward pass over a log that computes what the GPU memory trace
 * scripts report: the blocks live at the high-water mark (watermark), the
 * live bytes through time (usage) and the blocks live at the end
 * (leakage). Live bytes count every memory kind together, as the replay's
 * peak does, or the kinds the options name. Memory follows the live blocks (and the blocks live at the
 * peak), never the length of the log. */

/* A block with the time it was allocated (CLOCK_REALTIME ns). */
typedef struct mms_trace_block {
	mms_block_t b;           /* a mapping cut by munmap shows as its pieces */
	uint64_t time_ns;
} mms_trace_block_t;

/* One point of a timeline: the highest live bytes from time_ns on. */
typedef struct mms_trace_point {
	uint64_t time_ns, bytes;
} mms_trace_point_t;

/* Operator launches begun in one bucket of the plotted timeline. */
typedef struct mms_trace_launches {
	uint64_t count;
	uint64_t time_ns;        /* the first one's */
	const char *name;        /* the first one's operator, or NULL */
} mms_trace_launches_t;

/* A step boundary: step `step` began at time_ns. */
typedef struct mms_trace_step {
	uint64_t time_ns, step;
} mms_trace_step_t;

typedef struct mms_trace_options {
	/* Write the usage timeline to this path as TSV (header
	 * "time_ns\tlive_bytes", then a row per point); NULL: none. */
	const char *usage_path;
	/* Write every block of the peak's list (watermark_path) and of the
	 * end's (leakage_path) to these paths at the end of the pass, in the
	 * lists' order, as mms_trace_write_tsv() writes them; NULL: none.
	 * Not with the MMS_TRACE_SKIP_* flag of the same list. The pass
	 * writes the rows from its own compact records, so a list's blocks
	 * need not all be made into mms_trace_block_t (see top). */
	const char *watermark_path;
	const char *leakage_path;
	mms_output_options_t out; /* replace an existing usage_path,
	                            watermark_path or leakage_path; the
	                            symbolizer of the last two's stacks */
	size_t top;              /* the records kept of each list: its first top
	                            blocks in peak and end (0 = all of them); the
	                            totals and the files cover every block */
	uint64_t buckets;        /* usage_path's points: 0 = one per change of
	                            live bytes; N = the highest of each of N
	                            equal time buckets, so the peak survives */
	uint64_t plot_buckets;   /* also keep a timeline of this many buckets in
	                            memory, with the launches per bucket (0: none) */
	unsigned kinds;          /* memory kinds counted: bits 1 << enum mms_mem_kind;
	                            0 = the process's (HOST, MMAP, POOL; not DEVICE,
	                            which is counted alone when asked for); blocks
	                            of other kinds are left out */
	unsigned skip;           /* lists not wanted: MMS_TRACE_SKIP_PEAK (peak,
	                            npeak and peak_blocks stay empty; peak_bytes,
	                            peak_event and peak_ns are still set),
	                            MMS_TRACE_SKIP_END (end, nend and end_blocks
	                            stay empty; end_bytes is still set) */
} mms_trace_options_t;

#define MMS_TRACE_SKIP_PEAK 1u /* the blocks live at the peak (watermark) */
#define MMS_TRACE_SKIP_END 2u  /* the blocks live at the end (leakage) */

typedef struct mms_trace {
	uint64_t events;         /* events read */
	uint64_t changes;        /* events that changed the live bytes */
	uint64_t first_ns, last_ns; /* the span of the log: the start of the recording,
	                            the last event (or later) */
	uint64_t end_ns;         /* the last event's time */
	int stop_rc;             /* damage that ended the pass early, or 0 */
	uint64_t peak_bytes;     /* the high-water mark of live bytes (the kinds counted) */
	uint64_t peak_event;     /* the event that first reached it (0, with peak_ns
	                            the start, when a fork child's inherited heap
	                            was the peak) */
	uint64_t peak_ns;        /* and its time */
	size_t peak_blocks;      /* the number of blocks live at that moment */
	mms_trace_block_t *peak; /* the first of them, largest first (then the
	                            oldest, then the lowest address): all, or the
	                            first options.top */
	size_t npeak;            /* the records in peak, at most peak_blocks */
	uint64_t end_bytes;      /* live at the end */
	size_t end_blocks;       /* the number of blocks live at the end */
	mms_trace_block_t *end;  /* the first of them, in the same order */
	size_t nend;             /* the records in end, at most end_blocks */
	int watermark_rc;        /* 0, or why watermark_path was not written
	                            (-EEXIST: it exists and out.overwrite is 0);
	                            the lists and figures stand without it */
	int leakage_rc;          /* the same for leakage_path */
	uint64_t usage_rows;     /* rows written to usage_path */
	uint64_t op_launches;
	mms_trace_point_t *points; /* plot_buckets points, or NULL */
	mms_trace_launches_t *launches; /* plot_buckets entries, or NULL */
	size_t npoints;
	mms_trace_step_t *steps; /* step boundaries, in order */
	size_t nsteps;
	int status;              /* 0, or the error that stopped this analysis */
} mms_trace_t;

/* Runs the three over the log the pass reads. Returns 0 and sets *out,
 * filled once mms_pass_run() returned (free it with mms_trace_free(); its
 * strings live until then, the log's until mms_log_close()), or a
 * negative code (-EEXIST: usage_path exists and overwrite is 0;
 * MMS_EUSAGE: a list's path with its skip flag). Damage in the log ends
 * the pass early without failing it (stop_rc says so). watermark_path
 * and leakage_path are written at the pass's end, both or, when the
 * analysis fails, neither; a file that cannot be written is said in
 * watermark_rc or leakage_rc, not in status. */
int mms_trace_add(mms_pass_t *p, const mms_trace_options_t *opt, mms_trace_t **out);
/* The same in a pass of its own. */
int mms_trace_run(mms_log_t *log, const mms_trace_options_t *opt, mms_trace_t **out);
void mms_trace_free(mms_trace_t *t);

/* Writes blocks as the GPU-trace scripts' TSV rows, without a header:
 * PID, address, start_time (ns), bytes, mem_kind (HOST, MMAP or POOL),
 * mem_op_type (ALLOCATION), var_name (owner tags or pool name), call_stack
 * ("function (module)" frames, innermost first, joined by "; ";
 * symbolized with out->sym). Returns 0 or a negative code. */
int mms_trace_write_tsv(mms_log_t *log, const mms_trace_block_t *blocks, size_t n, const char *path,
			const mms_output_options_t *out);
/* Formats a frame as the scripts do: "function (module)" with the module's
 * file name, or "0xip (module)"; "??" for an unknown module. Returns the
 * length like snprintf. */
int mms_trace_frame_text(const mms_frame_t *f, char *buf, size_t len);

/* --- the watch analysis (watch.c) --------------------------------------- */

/* A launch that changed a watched block. */
typedef struct mms_watch_change {
	uint64_t launch;          /* the launch (numbered from 1, as the recorder and
	                             gdb number them) whose after sum differs from its
	                             before sum; 0: the block changed between launches */
	const char *op;           /* its operator, NULL for launch 0 */
	uint64_t found_at;        /* launch 0: the launch at whose start it was found */
	uint64_t step;            /* the step then (0: outside steps) */
	uint32_t thread;          /* the thread of the launch */
	uint64_t before, after;   /* the checksums */
	uint64_t event;           /* id of the sum that showed the change */
} mms_watch_change_t;

/* One watched block: a run of sums of one address, size, name and output. */
typedef struct mms_watch_block {
	uint64_t addr, size;
	const char *name;         /* the --watch start operator, or the msmemscope_watch() name */
	uint32_t out;             /* output number (0 for msmemscope_watch() blocks) */
	uint32_t thread;          /* thread of its first sum */
	uint64_t first_launch;    /* launch of its first sum */
	uint64_t first_event;     /* id of its first sum */
	uint64_t first_crc, last_crc;
	uint64_t sums;
	mms_watch_change_t *changes; /* in log order; changes[0] with launch != 0 ... */
	size_t nchanges;
} mms_watch_block_t;

typedef struct mms_watch {
	mms_watch_block_t *blocks; /* in the order they were first summed */
	size_t nblocks;
	uint64_t sums;            /* WATCH before/after events */
	uint64_t events;          /* events read */
	int csv_written;          /* the CSV was written (there were checksums) */
	uint64_t start_launches;  /* launches of the operator options.start names */
	int status;               /* 0, or the error that stopped this analysis */
} mms_watch_t;

typedef struct mms_watch_options {
	/* Also writes the sums there as msMemScope's checksum CSV ("Tensor
	 * info,Check data sum", one row per sum in log order:
	 * mms_watch_tensor_info() and 16 hex digits), created as every output
	 * file is (mms_output_options_t); a log without sums gets no file.
	 * NULL: no file. */
	const char *csv_path;
	mms_output_options_t out;
	const char *start;        /* the --watch start operator: count its launches
	                             (start_launches); NULL: none */
} mms_watch_options_t;

/* Reads the watch sums of the log the pass reads. Returns 0 and sets
 * *out, filled once mms_pass_run() returned (free with mms_watch_free();
 * names are the log's), or a negative code (-EEXIST: csv_path exists). */
int mms_watch_add(mms_pass_t *p, const mms_watch_options_t *opt, mms_watch_t **out);
/* The same in a pass of its own. */
int mms_watch_run(mms_log_t *log, const mms_watch_options_t *opt, mms_watch_t **out);
void mms_watch_free(mms_watch_t *res);
/* The name of one sum, as the recorder names its watch_dump/ file (less
 * ".bin"): "host_{tid}/{op}_{launch}-{name}_{out}_{before|after}", names
 * made file-name safe. Returns what snprintf returns. */
int mms_watch_tensor_info(char *dst, size_t cap, uint64_t tid, const char *op, uint64_t launch, const char *name,
			  uint32_t out, int after);

/* ---- guard: guard mode's findings (replay/analyses/guard.c) ----
 * What the recorder's checks found in a log recorded with guard=1
 * (msmemscope --guard, doc/guard.md): one finding per damaged block, bad
 * free or mismatched release, in log order. */

/* What a finding is (mms_guard_finding_t.kind, a GUARD event's sub). */
enum mms_guard_finding_kind {
	MMS_GUARD_FOUND_OVERFLOW = 1,         /* the tail red zone of a block was written */
	MMS_GUARD_FOUND_UNDERFLOW = 2,        /* its head red zone */
	MMS_GUARD_FOUND_WRITE_AFTER_FREE = 3, /* a quarantined block's bytes or zones */
	MMS_GUARD_FOUND_DOUBLE_FREE = 4,      /* a free of a quarantined block */
	MMS_GUARD_FOUND_INVALID_FREE = 5,     /* a free of an address that is no guarded block */
	MMS_GUARD_FOUND_MISMATCHED_FREE = 6,  /* free of new, delete of malloc, ... */
};

/* How a guarded block was allocated, and so must be released. */
enum mms_guard_alloc_family {
	MMS_GUARD_FROM_MALLOC = 0,    /* malloc, calloc, realloc, valloc, pvalloc */
	MMS_GUARD_FROM_NEW = 1,       /* operator new */
	MMS_GUARD_FROM_NEW_ARRAY = 2, /* operator new[] */
	MMS_GUARD_FROM_MEMALIGN = 3,  /* memalign, posix_memalign, aligned_alloc (free) */
	MMS_GUARD_FROM_PLAIN = 4,     /* an unguarded block the recorder knows (the loader's) */
};

/* Where a finding's window begins: the last moment the damaged bytes were
 * known intact. */
enum mms_guard_window {
	MMS_GUARD_SINCE_ALLOCATION = 0, /* the block's allocation */
	MMS_GUARD_SINCE_FREEING = 1,    /* its free */
	MMS_GUARD_SINCE_LAST_CHECK = 2, /* the last full check before the finding */
	MMS_GUARD_NO_WINDOW = 3,        /* no window: a bad free */
};

/* Which check found it. */
enum mms_guard_found_by {
	MMS_GUARD_FOUND_UNKNOWN = 0,    /* a log written before the recorder said */
	MMS_GUARD_FOUND_BY_CHECK = 1,   /* a full check (step boundary, exit, msmemscope_guard_check()) */
	MMS_GUARD_FOUND_BY_RELEASE = 2, /* the free, realloc or delete of the block (or of the address) */
	MMS_GUARD_FOUND_BY_QUARANTINE = 3, /* the block leaving the quarantine, pushed out by a later
	                                      free (at_stack: that free's) */
};

typedef struct mms_guard_finding {
	unsigned kind;          /* enum mms_guard_finding_kind */
	uint64_t event;         /* the finding's event: the check that found it */
	uint32_t thread;        /* the thread that made the check */
	uint64_t addr;          /* the block, or the address freed (no block) */
	uint64_t size;          /* its requested size; 0: no block */
	unsigned family;        /* enum mms_guard_alloc_family: how it was allocated */
	unsigned alloc_fn;      /* enum mms_alloc_func */
	uint32_t alloc_stack;   /* 0: none recorded */
	uint32_t free_stack;    /* 0: none (live, or no stacks) */
	uint32_t at_stack;      /* the call that made the check (free, realloc,
	                           delete, or the free that pushed the block out
	                           of the quarantine); 0: a full check, or no
	                           stacks (found_by says which) */
	uint64_t alloc_event;   /* the block's MALLOC event; UINT64_MAX: unknown */
	uint64_t free_event;    /* its FREE event (write after free, double free);
	                           UINT64_MAX: none or unknown */
	/* The window: the damage happened after event `since_event` (the
	 * allocation, the free, or the last full check that found the bytes
	 * intact: since, enum mms_guard_window) and before `event`.
	 * UINT64_MAX: no window (a bad free) or unknown. */
	unsigned since;
	uint64_t since_event;
	uint64_t steps_in_window; /* STEP events and "step start" ranges in it */
	uint64_t launches_in_window; /* operator launches begun in it */
	int64_t offset;         /* the first damaged byte, from addr (< 0: before it) */
	uint64_t length;        /* bytes from the first to the last damaged one */
	uint8_t bytes[8];       /* the first damaged bytes' values */
	unsigned nbytes;        /* how many of bytes[] are set */
	/* The last operator launch begun in the window: its number (from 1,
	 * in the log's order) and name; 0 and NULL when none began in it.
	 * With checks at each launch's end (guard=2, --guard=ops) and one
	 * launch in the window, the damage was done by that launch or just
	 * before it began. */
	uint64_t last_launch;
	const char *last_op;
	unsigned found_by;      /* enum mms_guard_found_by */
} mms_guard_finding_t;

typedef struct mms_guard {
	mms_guard_finding_t *findings; /* in log order */
	size_t nfindings;
	uint64_t by_kind[8];    /* findings per kind */
	uint64_t checks;        /* full checks the recorder made */
	int guard_on;           /* the log was recorded in guard mode */
	int status;             /* 0, or the error that stopped this analysis */
} mms_guard_t;

typedef struct mms_guard_options {
	int reserved;
} mms_guard_options_t;

/* "overflow", "underflow", "write_after_free", "double_free",
 * "invalid_free", "mismatched_free"; NULL for other values. */
const char *mms_guard_kind_name(unsigned kind);
/* "malloc", "new", "new[]", "memalign"; NULL for other values. */
const char *mms_guard_family_name(unsigned family);
/* Reads the findings of the log the pass reads. Returns 0 and sets *out,
 * filled once mms_pass_run() returned (free with mms_guard_free()), or a
 * negative code. */
int mms_guard_add(mms_pass_t *p, const mms_guard_options_t *opt, mms_guard_t **out);
/* The same in a pass of its own. */
int mms_guard_run(mms_log_t *log, const mms_guard_options_t *opt, mms_guard_t **out);
void mms_guard_free(mms_guard_t *res);

#ifdef __cplusplus
}
#endif

#endif /* MSMEMSCOPE_API_ANALYSIS_H */
