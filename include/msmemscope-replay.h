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
 *  SYSTEM: 0 init, 1 fini.  MALLOC/FREE (HOST): the allocator function,
 *  enum mms_alloc_fn / mms_free_fn of replay/format.h.  ACCESS: 0 unknown,
 *  1 read, 2 write.  OP_LAUNCH: 0 start, 1 end.  MSTX: 0 mark, 1 range
 *  start, 2 range end.  OWNER: 0 push, 1 pop.  COLLECT: 0 stop, 1 start. */

/* One event, as the iterator yields it. Strings (name) belong to the log
 * and live until mms_log_close(). */
typedef struct mms_event {
	uint64_t id;        /* position in the replay order, from 0 */
	uint64_t stamp;     /* the raw order stamp */
	uint64_t time_ns;   /* CLOCK_REALTIME nanoseconds derived from the stamp */
	uint32_t thread;    /* thread index in the log, see mms_log_thread() */
	uint16_t kind;      /* enum mms_event_kind */
	uint16_t sub;       /* subtype, see above */
	uint16_t mem;       /* enum mms_mem_kind, for MALLOC and FREE */
	uint64_t addr;      /* MALLOC, FREE, ACCESS, WATCH */
	uint64_t size;      /* MALLOC, ACCESS, WATCH, and FREE where the record has it */
	uint32_t stack;     /* allocation stack id, 0 = none */
	uint64_t total;     /* POOL: bytes the pool reserved */
	uint64_t used;      /* POOL: bytes the pool handed out */
	uint64_t range_id;  /* MSTX ranges */
	const char *name;   /* operator, kernel, mark, owner tag, pool or watch name; NULL if none */
	uint64_t file_offset; /* where the record lies in the file (for messages) */
	uint64_t flags;     /* MMAP: prot << 32 | mmap flags, as recorded */
} mms_event_t;

typedef struct mms_log mms_log_t;

/* Static facts about a log, valid until mms_log_close(). */
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
	int complete;            /* the process reached exit */
	int cut;                 /* recording stopped early (disk full, ...) */
	int damaged;             /* the reader stopped at damage; see damage_* */
	uint64_t damage_offset;  /* file offset of the first damage */
	const char *damage;      /* what was wrong there, or NULL */
	int damage_error;        /* MMS_ECORRUPT, MMS_ETRUNCATED or MMS_EORDER; 0 if none */
	uint64_t damage_count;   /* places the reader found damage (chunks, order) */
	uint64_t events;         /* events in the log, as mms_iter_next() yields them */
	uint64_t segments;       /* per-thread runs of records (diagnostics) */
	uint64_t last_realtime_ns; /* CLOCK_REALTIME at the last refresh or exit */
	int exec_away;           /* the process exec'd another program: the log ends there */
} mms_log_info_t;

/* Why mms_log_open_ex() failed on a file that is not a readable log. */
typedef struct mms_open_error {
	uint64_t offset;         /* file offset of the problem */
	char what[160];          /* e.g. "format version 7; this reader reads version 1" */
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

/* Walks stack id from the innermost frame outwards and stores at most max
 * instruction pointers in ips. Returns the full depth of the stack (which
 * may exceed max), 0 for id 0, or MMS_ECORRUPT for an unknown id or a
 * cycle. */
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

/* Thread index -> OS thread id and name (NULL if never named). Returns 0 or
 * MMS_EUSAGE for an index not in the log. */
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
	uint64_t frees;           /* FREE events (a realloc that moved counts as one) */
	uint64_t bytes_allocated; /* sum of MALLOC sizes */
	uint64_t peak_bytes;      /* highest live bytes */
	uint64_t live_blocks;     /* at the end of the log */
	uint64_t live_bytes;
} mms_kind_summary_t;

typedef struct mms_summary {
	uint64_t events;                          /* all events */
	uint64_t by_kind[MMS_EV_KIND_COUNT];      /* events per enum mms_event_kind */
	mms_kind_summary_t mem[MMS_MEM_KIND_COUNT]; /* HOST is the malloc family */
	uint64_t threads;
	uint64_t steps;                           /* steps run: STEP events (+1 if anything happened
	                                             after the last), or "step start" ranges; 0 if
	                                             never marked */
	uint64_t unmatched_frees;                 /* frees of no live block */
	uint64_t double_allocs;                   /* an address handed out while live */
} mms_summary_t;

/* Replays the whole log and fills *out. Returns 0 or a negative code; on
 * MMS_ECORRUPT the summary covers the events before the damage. */
int mms_summarize(mms_log_t *log, mms_summary_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MSMEMSCOPE_REPLAY_H */
