/* SPDX-License-Identifier: MIT */
/* msmemscope-replay.h: the replay library's public API: open a .mms log,
 * iterate its events in their recorded order, and summarize it.
 *
 * Functions return 0 (or a count) on success and a negative error code on
 * failure: -errno for system errors, or one of the MMS_E* codes below.
 * mms_strerror() explains any of them. The library never prints or exits. */
#ifndef MSMEMSCOPE_REPLAY_H
#define MSMEMSCOPE_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope-config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Format errors, outside the errno range. */
enum mms_error {
	MMS_EBADMAGIC = -10001,   /* not a msmemscope log */
	MMS_EVERSION = -10002,    /* a log of another format version */
	MMS_ETRUNCATED = -10003,  /* the file ends inside its header or a chunk */
	MMS_ECORRUPT = -10004,    /* bytes that do not decode */
	MMS_EORDER = -10005,      /* events out of order or an address handed out twice */
	MMS_EUSAGE = -10006,      /* an argument the function does not accept */
};

/* Explains an error code returned by this library. Never NULL. */
const char *mms_strerror(int err);

/* Who keeps a heap block by design, when it is not the program (its
 * blocks live at exit are not leaks): mms_event_t.flags of a HOST MALLOC,
 * mms_block_t.runtime. */
enum mms_runtime {
	MMS_RUNTIME_NONE = 0,   /* the program */
	MMS_RUNTIME_LIBC = 1,   /* glibc or ld.so, for itself, before main */
	MMS_RUNTIME_LIBCXX = 2, /* libstdc++ or libgcc, for itself, before main */
	MMS_RUNTIME_TLS = 3,    /* a thread's TLS vector, allocated by pthread_create */
	MMS_RUNTIME_STDIO = 4,  /* the buffer of stdin, stdout or stderr */
	MMS_RUNTIME_PYTHON = 5, /* live at exit in a CPython interpreter, allocated by
	                           the interpreter (not by an extension module, as far
	                           as the recorded stack shows): its state, which it
	                           does not free at exit by design */
	MMS_RUNTIME_COUNT
};

/* The runtime that keeps a block by design: a short name ("c", "cxx",
 * "thread", "stdio", "python") and a phrase; NULL for MMS_RUNTIME_NONE (the
 * program's) and unknown kinds. */
const char *mms_runtime_name(unsigned kind);
const char *mms_runtime_what(unsigned kind);

/* Says why recording stopped, from mms_log_info_t.cut_errno (an errno
 * value or a recorder's own reason). Never NULL. */
const char *mms_cut_reason(int cut_errno);

/* Event kinds, as msMemScope names them in its dump (Event column). */
enum mms_event_kind {
	MMS_EV_SYSTEM = 1,
	MMS_EV_MALLOC,
	MMS_EV_FREE,
	MMS_EV_ACCESS,
	MMS_EV_OP_LAUNCH,
	MMS_EV_KERNEL_LAUNCH,
	MMS_EV_MSTX,
	MMS_EV_STEP,
	MMS_EV_OWNER,
	MMS_EV_WATCH,
	MMS_EV_COLLECT,
	MMS_EV_GUARD, /* guard mode's checks and findings (format 4) */
	MMS_EV_KIND_COUNT
};

/* Memory kinds of MALLOC and FREE events (Event Type column). */
enum mms_mem_kind {
	MMS_MEM_HOST = 0, /* the malloc family */
	MMS_MEM_MMAP = 1, /* mmap, munmap, mremap */
	MMS_MEM_POOL = 2, /* custom allocators reporting through the API */
	MMS_MEM_KIND_COUNT
};

/* Subtypes (the `sub` field) per kind:
 *  SYSTEM: 0 init, 1 fini, 2 fork (the process forked a recorded child
 *  here; `total` is the fork's number in the process, from 1: see
 *  mms_log_fork()).  MALLOC/FREE (HOST): the allocator function,
 *  enum mms_alloc_fn / mms_free_fn of replay/format.h; for MALLOC, `flags`
 *  is an enum mms_runtime_kind when a runtime allocated the block for
 *  itself (0: the program).  ACCESS: 0 unknown,
 *  1 read, 2 write.  OP_LAUNCH: 0 start, 1 end.  MSTX: 0 mark, 1 range
 *  start, 2 range end.  OWNER: 0 push, 1 pop.  COLLECT: 0 stop, 1 start.
 *  WATCH: 0 msmemscope_watch() (addr, size, name), 1 and 2 a watched
 *  block's checksum before and after an operator launch (enum
 *  mms_watch_phase of replay/format.h): addr, size, name, `used` the
 *  output number of the --watch start operator (0 for an API watch),
 *  `total` the launch (from 1) and `flags` the CRC-64/XZ of the block's
 *  bytes.
 *  GUARD (guard mode, enum mms_guard_kind of replay/format.h): 0 a full
 *  check began; the others are findings: addr and size the block (size 0:
 *  no block), stack its allocation stack, range_id its free stack (0:
 *  none) | the stack of the call that made the check << 32, `flags`
 *  enum mms_guard_family | enum mms_guard_since << 4 | allocation
 *  function << 8 | damaged length << 16, `total` the damaged
 *  bytes' offset from addr (an int64_t), `used` their first bytes (up to
 *  8, little-endian). mms_guard_run() reads them for you. */

/* One event, as the iterator yields it. Strings (name) belong to the log
 * and live until mms_log_close(). */
typedef struct mms_event {
	uint64_t id;        /* position in the replay order, from 0 */
	uint64_t stamp;     /* the raw order stamp */
	uint64_t time_ns;   /* CLOCK_REALTIME nanoseconds derived from the stamp */
	uint32_t thread;    /* thread number in the log, below info.threads; see mms_log_thread() */
	uint16_t kind;      /* enum mms_event_kind */
	uint16_t sub;       /* subtype, see above */
	uint16_t mem;       /* enum mms_mem_kind, for MALLOC and FREE */
	uint64_t addr;      /* MALLOC, FREE, ACCESS, WATCH */
	uint64_t size;      /* MALLOC, ACCESS, WATCH, and FREE where the record has it */
	uint32_t stack;     /* allocation stack id, 0 = none */
	uint64_t total;     /* POOL: bytes the pool reserved; WATCH sums: the launch */
	uint64_t used;      /* POOL: bytes the pool handed out; WATCH sums: the output */
	uint64_t range_id;  /* MSTX ranges */
	const char *name;   /* operator, kernel, mark, owner tag, pool or watch name; NULL if none */
	uint64_t file_offset; /* where the record lies in the file (for messages) */
	uint64_t flags;     /* MMAP: prot << 32 | mmap flags, as recorded; WATCH sums: the checksum;
	                       MALLOC (HOST): the runtime that keeps the block, 0 = the program */
} mms_event_t;

typedef struct mms_log mms_log_t;

/* Static facts about a log, valid until mms_log_close() (the strings are
 * the log's). */
typedef struct mms_log_info {
	uint32_t version;
	uint64_t pid;
	uint64_t ppid;
	const char *exe;         /* executable path, "" if unknown */
	uint32_t clock;          /* 1 = TSC, 2 = counter */
	uint32_t flags;          /* header flags (complete, cut, ...) */
	int cut_errno;           /* when cut: the error that stopped recording */
	uint64_t start_realtime_ns;
	uint64_t lost_events;
	uint32_t call_stack_depth;
	uint32_t threads;        /* threads seen */
	uint64_t nchunks;
	uint64_t file_size;
	int complete;            /* the process reached exit, and the log holds it all */
	int cut;                 /* the log ends before the process did: recording stopped
	                            early (a full disk: cut_errno says why), or the file lost
	                            its end (cut_what says what is missing) */
	uint64_t cut_offset;     /* when cut: the byte where the file ends (its size) */
	const char *cut_what;    /* when the file lost its end, what is missing ("the file
	                            ends after 10 of the 47 chunks its header counts");
	                            NULL when the writer stopped recording or nothing is */
	int stopped;             /* the replay stops before the process's last records: at
	                            the cut, or where damage may have lost records of some
	                            thread; `events` counts the events before */
	int damaged;             /* the reader found damage; see damage_* */
	uint64_t damage_offset;  /* file offset of the first damage */
	const char *damage;      /* what was wrong there, or NULL */
	int damage_error;        /* MMS_ECORRUPT, MMS_ETRUNCATED or MMS_EORDER; 0 if none */
	uint64_t damage_count;   /* places the reader found damage (chunks, order) */
	uint64_t events;         /* events in the log, as mms_iter_next() yields them: up to
	                            the cut or the damage when stopped */
	uint64_t segments;       /* per-thread runs of records (diagnostics) */
	uint64_t last_realtime_ns; /* CLOCK_REALTIME at the last refresh or exit */
	int exec_away;           /* the process exec'd another program: the log ends there */
	uint64_t bad_stacks;     /* walks of stack ids so far (mms_log_stack(), exports,
	                            transforms, analyses) that did not resolve: damaged
	                            stack records; reports show those stacks without frames */
} mms_log_info_t;

/* Why mms_log_open_ex() failed on a file that is not a readable log. */
typedef struct mms_open_error {
	uint64_t offset;         /* file offset of the problem */
	char what[160];          /* e.g. "format version 7; this reader reads versions 1 to 2" */
} mms_open_error_t;

/* Opens the log at path, validates its header and chunks and reads its
 * metadata (threads, strings, stacks, modules). A log still being written
 * or cut by SIGKILL opens fine: the reader stops at the last whole record
 * and records damage it finds in the info (damaged, damage_offset, damage)
 * instead of failing. Returns 0 and sets *out, or a negative code (no
 * log). Free with mms_log_close(). */
int mms_log_open(const char *path, mms_log_t **out);
/* Like mms_log_open(), and on a format error (MMS_EBADMAGIC, MMS_EVERSION,
 * MMS_ETRUNCATED, MMS_ECORRUPT in the header) says where and what in *err
 * when err is not NULL. */
int mms_log_open_ex(const char *path, mms_log_t **out, mms_open_error_t *err);
void mms_log_close(mms_log_t *log);
void mms_log_get_info(const mms_log_t *log, mms_log_info_t *info);

/* Value of a META record the writer emitted ("exe", "argv" with NUL
 * separators, "config"). Returns 0 and sets *value (NUL-terminated, owned by
 * the log) and *len, or MMS_EUSAGE when the log has no such key. */
int mms_log_meta(const mms_log_t *log, const char *key, const char **value, size_t *len);

/* Where a forked child's heap came from. A fork child's log names its
 * parent's log and the FORK event the parent wrote just before the fork;
 * mms_log_open() opens the parent's log (and its parent's, for a child of
 * a child), seeks its replay to that event, and every replay of the
 * child then starts from the blocks live there: a free of one of them is
 * matched, and those never freed are live at the child's exit. Inherited
 * blocks are numbered first (alloc_id 1 to blocks, in the order they were
 * allocated), so the child's own allocations begin at blocks + 1; see
 * mms_block_t.inherited. When the parent's log cannot be had, replays
 * start empty as for any other log, and why says so. */
enum mms_fork_state {
	MMS_FORK_NONE = 0,        /* not a fork child: replays start empty */
	MMS_FORK_INHERITED = 1,   /* replays start from the parent's heap at the fork */
	MMS_FORK_UNKNOWN = 2,     /* a fork child whose inherited blocks are unknown:
	                             replays start empty, and its frees of them count
	                             as unmatched */
};

typedef struct mms_log_fork {
	int state;                /* enum mms_fork_state */
	uint64_t parent_pid;      /* the parent, 0 when the log does not say */
	const char *parent_log;   /* the parent's log as the child named it, or NULL */
	uint64_t fork_event;      /* INHERITED: the FORK event's id in the parent's log */
	uint64_t blocks[MMS_MEM_KIND_COUNT]; /* INHERITED: blocks live in the parent then, */
	uint64_t bytes[MMS_MEM_KIND_COUNT];  /* and their bytes, per memory kind */
	const char *why;          /* UNKNOWN: why, e.g. "parent log /run/x.mms not found" */
} mms_log_fork_t;

/* Fills *out (strings owned by the log). Returns 0 or MMS_EUSAGE. */
int mms_log_fork(const mms_log_t *log, mms_log_fork_t *out);

/* Walks stack id from the innermost frame outwards and stores at most max
 * instruction pointers in ips. Returns the full depth of the stack (which
 * may exceed max), 0 for id 0, or MMS_ECORRUPT for an unknown id or a
 * cycle (counted in mms_log_info_t.bad_stacks). */
int mms_log_stack(const mms_log_t *log, uint32_t id, uint64_t *ips, size_t max);

/* A loaded module as recorded (for symbolization). */
typedef struct mms_module {
	uint64_t base, lo, hi;   /* load bias and address range */
	const char *path;
	const uint8_t *build_id; /* raw bytes, build_id_len of them */
	size_t build_id_len;
} mms_module_t;

/* Module i, 0 <= i < count. Returns the number of modules when mod is NULL,
 * 0 after filling *mod, or MMS_EUSAGE for an index out of range. */
int mms_log_module(const mms_log_t *log, size_t i, mms_module_t *mod);

/* Thread number (0 <= thread < info.threads, as events carry it) -> OS
 * thread id and name (NULL if never named). Returns 0 or MMS_EUSAGE for a
 * number not in the log. Threads are numbered in the order the recorder
 * numbered them. */
int mms_log_thread(const mms_log_t *log, uint32_t thread, uint64_t *tid, const char **name);

/* Ordered iteration. mms_iter_next() returns 1 with *ev filled, 0 at the
 * end, or a negative code (MMS_ECORRUPT, MMS_EORDER) that stops the
 * iteration; the events before it were valid. */
typedef struct mms_iter mms_iter_t;
int mms_iter_open(mms_log_t *log, mms_iter_t **out);
int mms_iter_next(mms_iter_t *it, mms_event_t *ev);
void mms_iter_close(mms_iter_t *it);

/* Counts for the memory of one kind. */
typedef struct mms_kind_summary {
	uint64_t allocs;          /* MALLOC events (a realloc counts as one) */
	uint64_t frees;           /* FREE events (a realloc counts as one, moved or not) */
	uint64_t bytes_allocated; /* sum of MALLOC sizes */
	uint64_t peak_bytes;      /* highest live bytes */
	uint64_t live_blocks;     /* at the end of the log */
	uint64_t live_bytes;
} mms_kind_summary_t;

/* A free that freed no live block: a double free (the block was freed
 * before, at freed_event), or a free of an address that is no live block
 * as far as the log shows (the earlier free, if any, is not known: the
 * reader remembers the last few thousand frees only). */
typedef struct mms_bad_free {
	uint64_t event;           /* the FREE event */
	uint64_t addr;
	uint32_t thread;          /* the thread that freed */
	uint16_t mem;             /* enum mms_mem_kind: HOST or POOL */
	const char *pool;         /* POOL: the pool's name (the log's, valid until
	                             mms_log_close()), or NULL */
	uint64_t freed_event;     /* a double free: the FREE event that freed the block
	                             first; UINT64_MAX for any other bad free */
	uint64_t alloc_event;     /* a double free: the block's MALLOC event */
	uint64_t size;            /* a double free: the block's size */
	uint32_t stack;           /* a double free: the block's allocation stack */
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
	mms_bad_free_t bad_frees[MMS_BAD_FREES_KEPT]; /* the first of both, in log order */
	size_t nbad_frees;
	/* Blocks live at the end that the runtimes (C, C++, CPython) keep
	 * for themselves (counted in mem[].live_blocks and live_bytes too):
	 * not leaks. Per enum mms_runtime, all memory kinds, [MMS_RUNTIME_NONE]
	 * being their sum; and per memory kind, all runtimes. */
	uint64_t runtime_live_blocks[MMS_RUNTIME_COUNT];
	uint64_t runtime_live_bytes[MMS_RUNTIME_COUNT];
	uint64_t runtime_mem_blocks[MMS_MEM_KIND_COUNT];
	uint64_t runtime_mem_bytes[MMS_MEM_KIND_COUNT];
	int freeres;              /* the recorder had glibc and libstdc++ free their
	                             internal memory at the end of exit */
} mms_summary_t;

/* Replays the whole log and fills *out: mms_pass_summary() of a pass of
 * its own. Returns 0 or a negative code; on MMS_ECORRUPT the summary covers
 * the events before the damage. */
int mms_summarize(mms_log_t *log, mms_summary_t *out);

/* --- one pass over a log (pass.c) ----------------------------------------
 * A pass reads the log once, in replay order, through one heap state, and
 * feeds every event to the analyses, exports and reports added to it
 * (each mms_<name>_add()), so any set of them costs one read of the log.
 * An analysis that needs a second look (decompose at a peak it could not
 * follow on the way, an export tagged by an analysis of the same pass)
 * gets it from the pass: a later read, only then. Damage met on the way
 * ends the pass where it is, for all of them alike: what came before
 * stands (mms_pass_info_t.stop_rc). */
typedef struct mms_pass mms_pass_t;

/* Options of mms_pass_open(); zero means the default. */
typedef struct mms_pass_options {
	/* Called now and then (done <= total events read and to read, over
	 * every read of the log); returning non-zero cancels the pass with
	 * -ECANCELED. */
	int (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
} mms_pass_options_t;

/* How a pass went (read-only). */
typedef struct mms_pass_info {
	uint64_t events;          /* events the pass applied: all, or up to the damage */
	uint64_t reads;           /* reads of the log: 1, or more when an analysis asked */
	int stop_rc;              /* the damage that ended the pass early, or 0 */
	int stopped;              /* the pass ends before the process did: the log is cut
	                             or damaged (mms_log_info_t.stopped), or stop_rc */
} mms_pass_info_t;

/* Opens a pass over log (which must outlive it). Returns 0 and sets *out,
 * or a negative code. Free with mms_pass_close(). */
int mms_pass_open(mms_log_t *log, const mms_pass_options_t *opt, mms_pass_t **out);
/* Reads the log, feeding everything added. Returns 0 when the log was
 * read (up to damage, see mms_pass_info_t), or a negative code: -ENOMEM,
 * -ECANCELED, MMS_EUSAGE for a pass that already ran. An analysis that
 * failed on its own (a file it could not write) says so in its result's
 * status; the others are not stopped by it. Runs once. */
int mms_pass_run(mms_pass_t *p);
/* Frees the pass. Results of the analyses added stay valid: they are the
 * caller's (each freed with its mms_<name>_free()). */
void mms_pass_close(mms_pass_t *p);
void mms_pass_get_info(const mms_pass_t *p, mms_pass_info_t *info);
/* The log's summary, from a pass that ran: every pass computes it.
 * Returns 0, or MMS_EUSAGE before mms_pass_run(). */
int mms_pass_summary(const mms_pass_t *p, mms_summary_t *out);

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
	uint16_t fn;              /* allocator function (enum mms_alloc_fn) for HOST */
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
	const char *pool;         /* POOL: the pool's name, or NULL */
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
	 * program's); mms_runtime_name() names it. */
	uint32_t runtime;
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
	uint64_t peak_bytes;      /* highest live bytes of all kinds together so far */
	uint64_t unmatched_frees;
	uint64_t double_allocs;
	uint64_t double_frees, invalid_frees; /* unmatched_frees, told apart */
} mms_where_t;

/* Options of mms_replay_open_ex(); zero means the default. */
typedef struct mms_replay_options {
	const char *index_path;   /* default: the log's path + ".idx" */
	int no_index_file;        /* 1: keep the checkpoints in memory only */
	uint64_t checkpoint_every; /* events between checkpoints (default 1 << 20) */
	int forward_only;         /* 1: no index at all (no steps, no seeking back); for
	                             one pass over the log, as exporters make */
	/* Called now and then while the index is built (done <= total events);
	 * returning non-zero cancels the open with -ECANCELED. */
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
 * (MMS_EUSAGE for a position past the end). */
int mms_replay_seek(mms_replay_t *r, uint64_t pos);
void mms_replay_where(const mms_replay_t *r, mms_where_t *w);

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

/* Live blocks that share an allocation stack. */
typedef struct mms_stack_group {
	uint32_t stack;           /* allocation stack id, 0 = none recorded */
	uint64_t blocks, bytes;
	uint64_t addr;            /* the largest block of the group: its address, */
	uint64_t size;            /* size, */
	uint64_t step;            /* step */
	const char *op;           /* and operator (NULL: none) */
} mms_stack_group_t;

/* Groups the live blocks allocated in steps step_lo..step_hi (0..UINT64_MAX
 * for all) by allocation stack, largest bytes first (then by stack id).
 * Returns 0 and sets *out (free() it) and *n, or a negative code. */
int mms_replay_group_live(const mms_replay_t *r, uint64_t step_lo, uint64_t step_hi, mms_stack_group_t **out,
			  size_t *n);

/* One operator launch. Memory figures count the events of its thread
 * while it ran, nested launches included. */
typedef struct mms_launch {
	uint64_t launch;          /* launch index, from 1 */
	const char *name;
	uint32_t thread;
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

typedef struct mms_step_report {
	uint64_t step;
	uint64_t begin, end;      /* positions, see mms_replay_step_range() */
	mms_where_t at_end;       /* the state at the end of the step */
	uint64_t peak_bytes;      /* highest live bytes (all kinds) within the step */
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
} mms_decompose_options_t;

/* The live blocks of a log at its end and at its peak (the first position
 * where the live bytes of all kinds together were highest). */
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

/* --- symbolization (symbolize.c) ---------------------------------------
 * Turns the instruction pointers of recorded C stacks into function, file
 * and line with libdw, over the module map recorded in the log (so it is
 * right for PIE executables and dlopen'ed libraries), including inlined
 * frames. Debug information comes from the module's file or from the
 * standard places (/usr/lib/debug/.build-id, .gnu_debuglink). Without it a
 * frame still names the ELF symbol, its module and the offset in it; a
 * file whose build-id differs from the recorded one (rebuilt since) is not
 * read at all, so names never come from the wrong build. Results are
 * cached per address. A symbolizer is used by one thread at a time. */
typedef struct mms_symbolizer mms_symbolizer_t;

typedef struct mms_frame {
	uint64_t ip;            /* the address as recorded (a return address) */
	const char *function;   /* demangled name, or NULL when unknown */
	const char *file;       /* source file as DWARF names it (a relative
	                           name is relative to the compilation
	                           directory), or NULL */
	uint32_t line;          /* source line, 0 when unknown */
	const char *module;     /* path of the module holding ip as recorded,
	                           or NULL (no module, or one without a path) */
	uint64_t module_offset; /* ip - the module's load bias */
	int inlined;            /* 1: inlined into the frame that follows */
} mms_frame_t;

/* Opens a symbolizer over log's modules; module files are opened only when
 * an address in them is first symbolized. Where recorded modules overlap
 * (a library unloaded and another loaded at its addresses) the one
 * recorded later is used. Returns 0 and sets *out, or a negative code. The
 * log must outlive it. Free with mms_symbolizer_close(). */
int mms_symbolizer_open(const mms_log_t *log, mms_symbolizer_t **out);
void mms_symbolizer_close(mms_symbolizer_t *sym);
/* Symbolizes one recorded ip into at most max frames, innermost inlined
 * function first and the function that contains them last; the source
 * position is that of the call before the return address. Returns the
 * number of frames filled (at least 1 when max >= 1: an unknown address
 * gets a frame with only ip, and module when known; 0 when max is 0), or
 * a negative code (-ENOMEM, MMS_EUSAGE). Strings belong to the symbolizer
 * and live until it is closed. */
int mms_symbolize(mms_symbolizer_t *sym, uint64_t ip, mms_frame_t *frames, size_t max);
/* Writes one frame as text into buf (always NUL-terminated when len > 0):
 * "function (file:line)", "function (module+0xoff)" or "module+0xoff"
 * (module as its file name), "function (0xip)", or "0xip" when nothing is
 * known. Returns the length it needed, like snprintf, or MMS_EUSAGE. */
int mms_frame_format(const mms_frame_t *frame, char *buf, size_t len);

/* --- output files ---------------------------------------------------------
 * How every function that writes a file writes it. Files are created with
 * mode 0640 without following a symlink, under a temporary name moved into
 * place at the end, so no partial file is ever left. Zero (or NULL) means
 * the default. */
typedef struct mms_output_options {
	int overwrite;            /* 1: replace an existing file; else refuse (-EEXIST) */
	mms_symbolizer_t *sym;    /* names the frames of the stacks written; NULL: raw
	                             addresses (where the file has stacks) */
} mms_output_options_t;

/* --- leaks (leaks.c, suppress.c) ------------------------------------------
 * msMemScope's leak rules in one forward pass over a log, with memory
 * proportional to the live blocks. Per step: a block allocated in step
 * N >= 2 (step 1 is warm-up) and still live at the end of step N + 1 is a
 * leak, found once, at that step end. At the end of the log: every block
 * still live. Besides, per step, the lowest and highest live bytes of
 * each memory kind and what the step allocated (msMemScope's "gap"
 * table). */
typedef struct mms_leak {
	mms_block_t b;            /* the block (a piece of a mapping that munmap cut
	                             is its own block); b.step: where it was allocated */
	uint64_t found_step;      /* the step at whose end the per-step rule found
	                             it (b.step + 1); 0 for a block live at the end */
	size_t suppression;       /* 1 + index of the suppression that matched it
	                             (mms_leaks_options_t), 0 for none */
} mms_leak_t;

typedef struct mms_leak_step {
	uint64_t step;            /* from 1 */
	uint64_t allocs;          /* MALLOC events in the step, all kinds */
	uint64_t bytes_allocated;
	uint64_t min_bytes[MMS_MEM_KIND_COUNT]; /* live bytes of each kind: lowest */
	uint64_t max_bytes[MMS_MEM_KIND_COUNT]; /* and highest within the step */
} mms_leak_step_t;

typedef struct mms_leaks {
	mms_leak_t *step_leaks;   /* per-step rule, in the order found */
	size_t nstep_leaks;
	mms_leak_t *exit_leaks;   /* live at the end of the log, by allocation order */
	size_t nexit_leaks;
	mms_leak_t *runtime_kept; /* live at the end too, but kept by the C or C++
	                             runtime by design (b.runtime): not leaks; never in
	                             step_leaks either */
	size_t nruntime_kept;
	mms_leak_step_t *steps;   /* every step of the log, in order */
	size_t nsteps;
	uint64_t double_frees, invalid_frees; /* frees of no live block, as in the summary */
	mms_bad_free_t bad_frees[MMS_BAD_FREES_KEPT]; /* the first of them, in log order */
	size_t nbad_frees;
	uint64_t events;          /* events replayed */
	int stop_rc;              /* the damage that ended the replay early, or 0 */
	int status;               /* 0, or the error that stopped this analysis */
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
};
/* Groups the leaks that no suppression matched by allocation stack,
 * largest bytes first. Returns 0 and sets *out (free() it) and *n, or
 * -ENOMEM. */
int mms_leaks_group(const mms_leak_t *leaks, size_t n, mms_stack_group_t **out, size_t *ngroups);

/* --- exports (export-csv.c, export-db.c) ----------------------------------
 * msMemScope's dump of every event, as CSV (memscope_dump_{timestamp}.csv)
 * or as SQLite (table memscope_dump with the same columns, plus
 * normalized tables; see doc/export.md). */
enum mms_export_format {
	MMS_EXPORT_CSV = 1,
	MMS_EXPORT_DB = 2,
};

typedef struct mms_export_options {
	int format;               /* enum mms_export_format */
	const char *path;         /* the file; created with mode 0640 without following a
	                             symlink, whole or not at all */
	mms_output_options_t out; /* replace a file there; symbolize the C stacks */
	/* When not NULL (an inefficient result with tags = 1), the MALLOC row
	 * of each block it found gets inefficient_type:TYPE in its Attr
	 * (several types joined by '+'). A result the same pass fills makes
	 * the export read the log again once the analysis ended. */
	const struct mms_inefficient *inefficient;
} mms_export_options_t;

/* What an export wrote (read-only). */
typedef struct mms_export {
	uint64_t rows;            /* rows of memscope_dump */
	int status;               /* 0, or the error that stopped it (no file is left) */
} mms_export_t;

/* Writes the dump of the log the pass reads. Creates the file at once
 * (-EEXIST when it exists and overwrite is 0): on failure no partial file
 * is left. Returns 0 and sets *out, filled once mms_pass_run() returned
 * (free it with mms_export_free()), or a negative code. */
int mms_export_add(mms_pass_t *p, const mms_export_options_t *opt, mms_export_t **out);
/* The same in a pass of its own. */
int mms_export_run(mms_log_t *log, const mms_export_options_t *opt, mms_export_t **out);
void mms_export_free(mms_export_t *res);
/* The file name msMemScope gives a dump of this log, from the time the
 * recording began: "memscope_dump_{YYYYmmddHHMMSS}.{ext}" (local time).
 * Returns the length like snprintf. */
int mms_export_name(const mms_log_t *log, const char *ext, char *buf, size_t len);

/* --- memray-style transforms (transform.c, flamegraph.c) ------------------
 * One forward pass selects allocations, groups them by (allocation stack,
 * thread, allocator) and writes them as CSV (memray's columns), as
 * gprof2dot's JSON profile, or as a self-contained interactive SVG flame
 * graph. See doc/transform.md for the exact rules. */
enum mms_transform_format {
	MMS_TRANSFORM_CSV = 1,    /* allocator,num_allocations,size,tid,thread_name,stack_trace */
	MMS_TRANSFORM_GPROF2DOT,  /* gprof2dot's JSON input format */
	MMS_TRANSFORM_FLAMEGRAPH, /* SVG, bytes per frame, hover and click to zoom */
};

enum mms_transform_selection {
	MMS_TRANSFORM_PEAK = 0,   /* live at the high-water mark of all memory kinds */
	MMS_TRANSFORM_LEAKS,      /* live at the end of the log */
	MMS_TRANSFORM_TEMPORARY,  /* freed by their thread after at most threshold
	                             other allocations of that thread */
};

typedef struct mms_transform_options {
	int format;               /* enum mms_transform_format */
	const char *path;         /* the file (see mms_output_options_t) */
	int selection;            /* enum mms_transform_selection */
	uint64_t threshold;       /* TEMPORARY: other allocations allowed (memray's N) */
	const char *title;        /* FLAMEGRAPH: the title line; NULL: from the selection */
	mms_output_options_t out; /* replace a file there; name the frames (NULL: raw
	                             addresses) */
} mms_transform_options_t;

/* What a transform wrote (read-only). */
typedef struct mms_transform {
	uint64_t groups;          /* what the file holds: rows (CSV), events (gprof2dot),
	                             boxes (flame graph) */
	uint64_t allocations;     /* allocations selected */
	uint64_t bytes;           /* their bytes */
	uint64_t peak_bytes;      /* the log's high-water mark, all kinds together */
	int status;               /* 0, or the error that stopped it (no file is left) */
} mms_transform_t;

/* Writes the selected allocations of the log the pass reads. Creates the
 * file at once (-EEXIST when it exists and overwrite is 0; MMS_EUSAGE for
 * a format or selection out of range): on failure no partial file is
 * left. Returns 0 and sets *out, filled once mms_pass_run() returned (free
 * it with mms_transform_free()), or a negative code. */
int mms_transform_add(mms_pass_t *p, const mms_transform_options_t *opt, mms_transform_t **out);
/* The same in a pass of its own. */
int mms_transform_run(mms_log_t *log, const mms_transform_options_t *opt, mms_transform_t **out);
void mms_transform_free(mms_transform_t *res);
/* The default output name, as memray names its transforms: the log's
 * folder, then "memscope-FORMAT-" and the log's file name with its suffix
 * (.mms) replaced by the format's (.csv, .json, .svg) and a leading
 * "memscope-" dropped. Returns the length like snprintf, or MMS_EUSAGE. */
int mms_transform_name(const char *log_path, int format, char *buf, size_t len);
/* The format's name ("csv", "gprof2dot", "flamegraph"), or NULL. */
const char *mms_transform_format_name(int format);

/* --- compare (compare.c) ---------------------------------------------------
 * msMemScope's compare: the operator launches (or kernel launches) of two
 * sides, base and compare, each with the net bytes allocated during it,
 * aligned by name with a Myers diff (an optimal alignment when the sides
 * differ by fewer than about 4000 launches; a good one, in bounded time,
 * beyond). A side is a whole log, a step of one, or a dump CSV as
 * mms_export_csv() writes it. An operator launch's bytes are those its
 * thread allocated minus those it freed between the launch's begin and
 * end (nested launches included); launches are listed in the order they
 * end, as msMemScope lists them. A kernel launch's bytes are those its
 * thread moved from the launch to the thread's next kernel launch or the
 * end of the operator it was launched in. See doc/analyses.md. */
typedef struct mms_compare mms_compare_t;

enum mms_compare_level {
	MMS_COMPARE_OP = 0,      /* OP_LAUNCH: operator launches */
	MMS_COMPARE_KERNEL = 1,  /* KERNEL_LAUNCH: msmemscope_kernel_launch() */
};

/* One row of the comparison: a launch on one side or both. */
typedef struct mms_compare_row {
	const char *name;         /* valid until the next add or align, or close */
	uint64_t base_launch;     /* its place in base's launches, from 1; 0: not in base */
	uint64_t compare_launch;  /* the same in compare */
	int64_t base, compare;    /* net bytes allocated; 0 on the side without it */
	int64_t diff;             /* compare - base */
} mms_compare_row_t;

typedef struct mms_compare_stats {
	uint64_t launches[2];     /* launches of base, of compare */
	int64_t bytes[2];         /* their net bytes, summed */
	uint64_t paired;          /* rows with a launch on both sides */
	uint64_t only[2];         /* rows with a launch only in base, only in compare */
} mms_compare_stats_t;

/* Where a dump CSV is malformed. */
typedef struct mms_compare_error {
	uint64_t line;            /* line of the file, from 1 (0: none) */
	char what[160];
} mms_compare_error_t;

/* Opens an empty comparison at level (enum mms_compare_level). Returns 0
 * and sets *out, or MMS_EUSAGE, -ENOMEM. Free with mms_compare_close(). */
int mms_compare_open(int level, mms_compare_t **out);
void mms_compare_close(mms_compare_t *c);
/* The operator launches (or kernel launches) of a log, or of one step of
 * it, as a side of a comparison reads them: at op level the launches that
 * ended, in the order they end, each with the memory its thread moved
 * while it ran (nested launches included); at kernel level every kernel
 * launch (launch: its number, from 1; begin_event: its event), with the
 * memory its thread moved up to its next kernel launch or the end of the
 * operator it was launched in. A launch belongs to the step it began in. */
typedef struct mms_launches_options {
	int level;                /* enum mms_compare_level */
	uint64_t step;            /* 0: the whole log; N: the launches begun in step N */
} mms_launches_options_t;

typedef struct mms_launches {
	mms_launch_t *launches;   /* names are the log's (valid until mms_log_close()) */
	size_t n;
	uint64_t steps;           /* the log's steps (as far as it is readable) */
	int status;               /* 0; MMS_EUSAGE when the log has no step `step`; or the
	                             error that stopped this analysis */
} mms_launches_t;

/* Follows the launches of the log the pass reads (memory: the launch
 * list). Returns 0 and sets *out, filled once mms_pass_run() returned
 * (free it with mms_launches_free()), or a negative code. Two of them in
 * one pass read two steps of a log at once. */
int mms_launches_add(mms_pass_t *p, const mms_launches_options_t *opt, mms_launches_t **out);
/* The same in a pass of its own. */
int mms_launches_run(mms_log_t *log, const mms_launches_options_t *opt, mms_launches_t **out);
void mms_launches_free(mms_launches_t *l);

/* Makes the launches l (at the comparison's level) side (0 base, 1
 * compare). Returns 0, MMS_EUSAGE when that side is already read or l
 * failed, or -ENOMEM. */
int mms_compare_set(mms_compare_t *c, int side, const mms_launches_t *l);
/* Reads side from a memscope_dump CSV in event order (OP_LAUNCH,
 * KERNEL_LAUNCH, MALLOC and FREE rows; quoted fields as RFC 4180). Returns
 * 0, -errno when it cannot be read, or MMS_ECORRUPT with the line and the
 * reason in *err (when not NULL). */
int mms_compare_add_csv(mms_compare_t *c, int side, const char *path, mms_compare_error_t *err);
/* Launches read so far on side. */
size_t mms_compare_launches(const mms_compare_t *c, int side);
/* Aligns the two sides: *rows (owned by c, valid until the next align or
 * close) gets one row per launch pair or unpaired launch, in the order of
 * both sides, and *stats (when not NULL) the totals. Returns 0, MMS_EUSAGE
 * when a side is missing, or -ENOMEM. */
int mms_compare_align(mms_compare_t *c, const mms_compare_row_t **rows, size_t *nrows, mms_compare_stats_t *stats);
/* Writes the aligned rows as msMemScope's memory_compare CSV (two header
 * lines, N/A for a launch missing on a side, Device Id "host"), created
 * as every output file is (see mms_output_options_t). Returns 0 or a
 * negative code. */
int mms_compare_write_csv(const mms_compare_t *c, const char *path, const mms_output_options_t *out);
/* msMemScope's name for the file, from the current local time:
 * "memory_compare_{YYYYmmddHHMMSS}.csv". Returns the length like snprintf. */
int mms_compare_name(char *buf, size_t len);

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
	mms_output_options_t out; /* replace an existing usage_path */
	uint64_t buckets;        /* that file's points: 0 = one per change of
	                            live bytes; N = the highest of each of N
	                            equal time buckets, so the peak survives */
	uint64_t plot_buckets;   /* also keep a timeline of this many buckets in
	                            memory, with the launches per bucket (0: none) */
	unsigned kinds;          /* memory kinds counted: bits 1 << enum mms_mem_kind;
	                            0 = all (blocks of other kinds are left out) */
} mms_trace_options_t;

typedef struct mms_trace {
	uint64_t events;         /* events read */
	uint64_t changes;        /* events that changed the live bytes */
	uint64_t first_ns, last_ns; /* the span of the log: the start of the recording,
	                            the last event (or later) */
	uint64_t end_ns;         /* the last event's time */
	int stop_rc;             /* damage that ended the pass early, or 0 */
	uint64_t peak_bytes;     /* the high-water mark of live bytes (all kinds) */
	uint64_t peak_event;     /* the event that first reached it (0, with peak_ns
	                            the start, when a fork child's inherited heap
	                            was the peak) */
	uint64_t peak_ns;        /* and its time */
	mms_trace_block_t *peak; /* blocks live at that moment, largest first */
	size_t npeak;
	uint64_t end_bytes;      /* live at the end */
	mms_trace_block_t *end;  /* blocks live at the end, largest first */
	size_t nend;
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
 * negative code (-EEXIST: usage_path exists and overwrite is 0). Damage
 * in the log ends the pass early without failing it (stop_rc says so). */
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

/* Writes len bytes to a new file at path (see mms_output_options_t).
 * Returns 0 or a negative code. */
int mms_file_write(const char *path, const void *buf, size_t len, const mms_output_options_t *out);

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

/* ---- guard: guard mode's findings (replay/guard.c) ----
 * What the recorder's checks found in a log recorded with guard=1
 * (msmemscope --guard, doc/guard.md): one finding per damaged block, bad
 * free or mismatched release, in log order. */

typedef struct mms_guard_finding {
	unsigned kind;          /* enum mms_guard_kind of replay/format.h, 1 to 6 */
	uint64_t event;         /* the finding's event: the check that found it */
	uint32_t thread;        /* the thread that made the check */
	uint64_t addr;          /* the block, or the address freed (no block) */
	uint64_t size;          /* its requested size; 0: no block */
	unsigned family;        /* enum mms_guard_family: how it was allocated */
	unsigned alloc_fn;      /* enum mms_alloc_fn */
	uint32_t alloc_stack;   /* 0: none recorded */
	uint32_t free_stack;    /* 0: none (live, or no stacks) */
	uint32_t at_stack;      /* the call that made the check (free, realloc,
	                           delete); 0: a full check, or no stacks */
	uint64_t alloc_event;   /* the block's MALLOC event; UINT64_MAX: unknown */
	uint64_t free_event;    /* its FREE event (write after free, double free);
	                           UINT64_MAX: none or unknown */
	/* The window: the damage happened after event `since_event` (the
	 * allocation, the free, or the last full check that found the bytes
	 * intact: since, enum mms_guard_since) and before `event`.
	 * UINT64_MAX: no window (a bad free) or unknown. */
	unsigned since;
	uint64_t since_event;
	uint64_t steps_in_window; /* STEP events and "step start" ranges in it */
	uint64_t launches_in_window; /* operator launches begun in it */
	int64_t offset;         /* the first damaged byte, from addr (< 0: before it) */
	uint64_t length;        /* bytes from the first to the last damaged one */
	uint8_t bytes[8];       /* the first damaged bytes' values */
	unsigned nbytes;        /* how many of bytes[] are set */
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

#endif /* MSMEMSCOPE_REPLAY_H */
