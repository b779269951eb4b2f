/* SPDX-License-Identifier: MIT */
/* log-int.h: the open log: its tables, its segments and a fork child's
 * inherited blocks (log.c, meta.c, inherit.c). */
#ifndef MMS_LOG_INT_H
#define MMS_LOG_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "format.h"
#include "msmemscope/log.h"
#include "map-int.h"
#include "decode-int.h"

/* --- the open log (log.c) ----------------------------------------------- */

struct mms__segment {
	uint64_t begin;      /* file offset of the first record after SEGMENT */
	uint64_t end;        /* file offset past its last whole record */
	uint64_t first;      /* the SEGMENT record's absolute stamp */
	uint64_t last;       /* stamp of its last record */
	uint64_t events;     /* event records in [begin, end) */
	uint32_t thread;
	uint8_t lost_after;  /* its thread's records after it are lost: damage, or the file's end */
	uint8_t full_end;    /* it fills its chunk: its thread, if it went on, went on elsewhere */
};

/* How far the open pass walked one chunk, for a followed log's next look
 * (mms_log_follow_refresh()) to go on from there. */
struct mms__cwalk {
	uint64_t walked;     /* bytes of its records walked */
	size_t seg;          /* 1 + index in wsegs of the segment it is in, 0: none yet */
	uint64_t stamp, prev_addr; /* the cursor's delta state there */
	uint32_t thread;
	int seen_event;      /* its first event was read */
};

enum { MMS__FOLLOW_LIVE = 1, MMS__FOLLOW_END = 2 };

struct mms__thread {
	uint32_t index;
	uint64_t tid;
	uint64_t name_id;    /* string id, 0 = unnamed */
	/* Following the log (log.c): where the thread's hook guard is in the
	 * process (META "tls_busy"), and a stamp it will write nothing
	 * before, as the last look found it outside its hooks (0: none). */
	uint64_t busy_addr;
	uint64_t idle_stamp;
};

struct mms__module {
	uint64_t base, lo, hi;
	size_t path, build_id;     /* arena offsets */
	uint64_t build_id_len;
};

/* A Python code object (PYCODE record, version 5). */
struct mms__pycode {
	size_t file, name;         /* arena offsets */
	uint64_t firstline;
};

struct mms__meta {
	size_t key, value;         /* arena offsets */
	uint64_t value_len;
};

/* A forked child's inherited blocks (inherit.c): the parent's live blocks
 * at its FORK event, which every replay of the child starts from. */
struct mms__iblk {
	uint64_t addr, size;
	uint64_t origin_pid, origin_event; /* the log that allocated it, its MALLOC */
	size_t owner, pool;        /* 1 + offset in strs, 0 = NULL */
	uint32_t stack;            /* a stack id of the child's log (imported) */
	uint16_t mem;
	uint8_t fn, runtime;
};

struct mms__inherit {
	int state;                 /* enum mms_fork_state */
	uint64_t parent_pid, fork_event;
	char *parent_log;          /* NULL when the log names none */
	char *why;                 /* MMS_FORK_UNKNOWN: why */
	struct mms__iblk *blks;    /* in the order they were allocated */
	size_t n, cap;
	uint64_t blocks[MMS_MEM_KIND_COUNT], bytes[MMS_MEM_KIND_COUNT];
	/* The parent's steps at the fork, which the child's continue (its
	 * state's step counters start from them: mms__state_seed()). */
	int step_kind, in_range;
	uint64_t steps_seen, ranges_seen, step_range_id;
	char *strs;                /* the blocks' owner and pool names */
	size_t strs_len, strs_cap;
};

struct mms_log {
	const uint8_t *map;        /* the file, mapped read-only (NULL if empty) */
	size_t size;
	int unmap;                 /* map came from mmap() and must be unmapped */
	struct mms_file_header hdr;
	mms_log_info_t info;
	char damage[192];

	char *arena;               /* NUL-terminated copies of strings */
	size_t arena_len, arena_cap;
	struct mms__map strings;   /* string id -> arena offset */
	uint32_t *stack_direct;    /* stack id -> 1 + index in stack_nodes (0: none), for
	                              ids up to MMS__STACK_DIRECT_MAX, the recorder's: a
	                              table as long as the largest id seen */
	size_t stack_direct_n;
	struct mms__map stacks;    /* other stack ids (a forked child's copies of its
	                              parent's, a foreign writer's) -> index in stack_nodes */
	uint64_t (*stack_nodes)[2]; /* parent, ip */
	size_t nstacks, stacks_cap;
	struct mms__map thread_ix; /* thread index -> index in threads */
	struct mms__thread *threads;
	size_t nthreads, threads_cap;
	struct mms__module *modules;
	size_t nmodules, modules_cap;
	/* ownops.c: the modules looked at so far for their own copy of a C++
	 * allocation operator (at the first free between the malloc and a
	 * C++ family), and the first found: own_ops_how 0 none yet, else its
	 * enum own_how, with its module index and operator (-1: not known). */
	size_t own_ops_seen, own_ops_module;
	int own_ops_op;
	uint8_t own_ops_how;
	/* The dynamic loader's code, [loader_lo, loader_hi) (0, 0: no such
	 * module, mms__loader_module): runtime.c tells its blocks by it. */
	uint64_t loader_lo, loader_hi;
	/* Modules named libpython* and libc10_cuda* (meta.c, as their
	 * records are read): runtime.c asks per block whether the process is
	 * CPython's, and whether PyTorch's CUDA allocator is in it. */
	uint32_t python_modules, torch_cuda_modules, cuda_modules, jvm_modules;
	/* The executable is a CPython or a perl interpreter's, Node.js or a
	 * Java launcher (runtime.c, from the META record exe when the log
	 * opens). */
	uint8_t python_exe, perl_exe, node_exe, jvm_exe;
	struct mms__meta *metas;
	size_t nmetas, metas_cap;
	struct mms__map pycode_ix; /* PYCODE id -> index in pycodes */
	struct mms__pycode *pycodes;
	size_t npycodes, pycodes_cap;
	/* The recorder's scan of the process's memory at exit (format 12,
	 * reach.c): its REACH_REGIONS and REACH_REFS values, each as (u tag,
	 * u length, bytes), as read, and how many of each; the verdicts
	 * built from them over the blocks live at the end, on the first
	 * question (reach_built). */
	uint8_t *reach_recs;
	size_t reach_len, reach_cap;
	uint64_t reach_nrefs, reach_nregions;
	/* The scan's start (META "reach"'s eighth field), a stamp: heap
	 * blocks allocated at or after it have no verdict. reach_started 0:
	 * not written (a recorder before it). */
	uint64_t reach_start;
	int reach_started;
	struct mms__reach *reach;
	int reach_built;

	/* Segments, sorted by (thread, first stamp, offset): a thread's
	 * segments follow each other in time, so the iterator merges one
	 * cursor per thread. runs[i] indexes the first segment of the i-th
	 * thread's run; runs[nruns] is nsegs. */
	struct mms__segment *segs;
	size_t nsegs;
	/* The segments as the walk found them, threads named by the
	 * recorder's index: segs is built from them (build_runs). */
	struct mms__segment *wsegs;
	size_t nwsegs, wsegs_cap;
	size_t *runs;              /* start index of each thread's run in segs */
	size_t nruns;
	uint64_t events;           /* event records found by the open pass */
	double ns_per_stamp;       /* stamp to nanoseconds, see mms__log_time() */
	char *path;                /* as opened; NULL for a log in memory */
	uint64_t dev, ino, mtime_ns; /* the file's identity when opened */
	/* In the list of the logs open from files (log.c), which output
	 * files never replace (mms__log_file_open_here()). */
	struct mms_log *reading_next;
	struct mms__inherit inh;   /* a fork child's start (inherit.c) */

	/* Where the log is incomplete (log.c). Records stamped from stop on
	 * are left out: the first stamp the cut or the damage may have taken
	 * records from (UINT64_MAX: none). */
	uint64_t stop;
	uint64_t chunk_stamp_max;  /* the latest stamp a chunk read so far was taken after */
	int file_cut;              /* the file ends before the chunks it holds do */
	int chunks_lost;           /* a chunk is missing or cannot be read */
	int fini;                  /* an exit record (SYSTEM fini) was read */
	uint64_t owner_tags;       /* OWNER_TAG records read (format 5): exports then
	                              read the log twice (export-rows.c) */
	/* Malloc-family allocations less frees in the records read so far,
	 * chunk after chunk, and the highest it was: close to the most
	 * live blocks the replay will hold (exactly, for one thread, when
	 * every free was of a block recorded), which sizes the live-block
	 * table of a replay from the start at once (state.c). An estimate,
	 * used for nothing else. */
	int64_t live_est, live_peak_est;
	/* The program's STEP and any RANGE_START records read: without any,
	 * and without inferred steps, no step ever begins, and the passes
	 * keep no per-step figures (track.c, leaks.c). */
	uint64_t step_marks;
	/* STEP records the recorder inferred (enum mms_step_source): steps
	 * only in a log without step_marks (mms__log_steps_inferred). */
	uint64_t inferred_steps;
	char cut_what[160];
	uint64_t bad_stacks;       /* atomic: walks of stack ids that do not resolve */

	/* A log followed while its program writes it (mms_log_follow()):
	 * read as its writer goes on, then, at the last look, as any log. */
	int follow;                /* 0, MMS__FOLLOW_LIVE or MMS__FOLLOW_END */
	int follow_err;            /* the error that stopped following, or 0 */
	int fd;                    /* follow: the file, looked at again by each refresh */
	size_t map_len;            /* bytes mapped at map: past the file's end when following */
	struct mms__cwalk *walks;  /* follow: how far each chunk was walked */
	size_t nwalks;
	char **retired;            /* follow: arenas outgrown, kept for the strings handed out */
	uint64_t look_tsc;         /* follow: the TSC when the last look began */
	uint64_t look_cap;         /* follow: feed no further than this stamp (0: no cap) */
	uint64_t gap_cap;          /* follow, this look: the lowest last stamp of a thread
	                              before a gap in its records (UINT64_MAX: none) */
	size_t nretired;
};

/* The open pass's pieces that following a log shares (log.c). An open
 * error: sets err's offset and message when err is not NULL, returns
 * code. */
int mms__open_error(mms_open_error_t *err, int code, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A log over the len bytes at map, its tables empty; NULL without
 * memory. */
mms_log_t *mms__log_new(const void *map, size_t len);
/* Opens path for reading, a regular file, for a log to go to *out (set
 * to NULL); returns the descriptor (its status in *st), or a negative
 * code. */
int mms__log_open_regular(const char *path, mms_log_t **out, struct stat *st, mms_open_error_t *err);
/* Whether the file (dev, ino) is a log this process has open: an output
 * file is not put in its place (outfile.c). */
int mms__log_file_open_here(uint64_t dev, uint64_t ino);
/* Reads and checks the header from the mapping; returns 0 or a code. */
int mms__log_read_header(mms_log_t *log, mms_open_error_t *err);
/* Loads the header's fields the writer updates while the program runs,
 * atomically, as the format asks. */
void mms__log_header_reload(mms_log_t *log);
/* Walks the chunks (through fd when not -1), builds the threads' runs of
 * segments and the info. Returns 0 or -ENOMEM. */
int mms__log_scan(mms_log_t *log, int fd);

/* Opens the log file at path without looking for its parent's (log.c):
 * mms_log_open_ex() is this and mms__inherit_load(). */
int mms__log_open_file(const char *path, mms_log_t **out, mms_open_error_t *err);

/* Finds the blocks a fork child's log inherited (inherit.c), opening its
 * parent's log (depth: how many children down from the log first opened,
 * bounding a chain of parents). Returns 0, with log->inh filled in
 * (MMS_FORK_UNKNOWN and why when the parent's log cannot be had), or
 * -ENOMEM. */
int mms__inherit_load(mms_log_t *log, unsigned depth);
void mms__inherit_free(struct mms__inherit *inh);
/* The parent's step a fork child was forked in, from inh's step counters
 * (0: the parent had begun none); *in_step gets 1 when the fork came
 * inside it, 0 when after it (between two "step start" ranges). The
 * child's steps 1 to it (less the one it came inside) are the parent's
 * alone. mms_log_fork_t.fork_step, fork_in_step. */
static inline uint64_t mms__inherit_fork_step(const struct mms__inherit *inh, int *in_step)
{
	*in_step = inh->step_kind == 1 || inh->in_range;
	return inh->step_kind == 1 ? inh->steps_seen + 1 : inh->ranges_seen;
}
/* Whether step `step` of a fork child's log began in the parent, before
 * the fork. */
int mms__inherit_step_begun(const mms_log_t *log, uint64_t step);
/* The name at a 1 + offset reference of inh->strs, or NULL for 0. */
static inline const char *mms__inherit_str(const struct mms__inherit *inh, size_t ref)
{
	return ref ? inh->strs + ref - 1 : NULL;
}
/* Adds stack node (id: parent, ip) to the log's stack table (meta.c).
 * Returns 0 (also when id is already there: the first definition wins)
 * or -ENOMEM. */
int mms__log_stack_add(mms_log_t *log, uint32_t id, uint64_t parent, uint64_t ip);

/* reach.c: keeps a REACH_REGIONS or REACH_REFS record's value (0 or
 * -ENOMEM); frees what the log keeps of the scan. */
int mms__reach_note(mms_log_t *log, const struct mms__rec *r);
/* Fills the log's info about the scan (reach_*) from META "reach". */
void mms__reach_info(mms_log_t *log);
void mms__reach_free(mms_log_t *log);

/* Metadata tables (meta.c). mms__meta_record() stores a metadata record;
 * returns 0, -ENOMEM, or MMS_ECORRUPT for a field out of range. */
struct mms__thread *mms__thread_note(mms_log_t *log, uint32_t index);
int mms__meta_record(mms_log_t *log, const struct mms__rec *r);
void mms__meta_free(mms_log_t *log);

/* mms_log_stack() for the library's own reports: a stack id that does not
 * resolve (damaged stack records) has no frames, and is counted in the
 * log's info (bad_stacks). Returns the depth, 0 for such a stack. */
int mms__log_stack(const mms_log_t *log, uint32_t id, uint64_t *ips, size_t max);
/* runtime.c: whether the module at path is the dynamic loader
 * (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, ld.so, ...). */
int mms__loader_module(const char *path);
/* runtime.c: counts the module at path in the log's python_modules,
 * torch_cuda_modules or cuda_modules when it is one of those. */
void mms__runtime_module_seen(mms_log_t *log, const char *path);
/* runtime.c: notes whether the executable at path is an interpreter
 * whose state at exit is its own (python_exe, perl_exe). */
void mms__runtime_exe_seen(mms_log_t *log, const char *path);
/* ownops.c: whether a module of the log (of those recorded so far) calls
 * its own copy of a C++ allocation operator; reads the modules' files
 * once each, at the first call that needs them. */
int mms__log_own_operators(mms_log_t *log);
/* symbolize.c: a descriptor of the recorded module file at path, opened
 * for reading, or -1: not a regular file (a FIFO or a device where the
 * module was is not waited on), gone, no path ("[vdso]"), or relative
 * (to the recorded process's directory) without a build-id
 * (build_id_len 0) to confirm it. */
int mms__module_file_open(const char *path, size_t build_id_len);

/* Opens a log held in memory (the fuzz target's entry). The log does not
 * take ownership of buf, which must outlive it. */
int mms__log_open_buf(const void *buf, size_t len, mms_log_t **out, mms_open_error_t *err);
/* Name of a string id, or NULL when unknown or 0. */
const char *mms__log_string(const mms_log_t *log, uint64_t id);
/* The Python code object of PYCODE id: 0 and its file, qualified name and
 * first line (strings in the log's arena), or -1 when the log defines no
 * such id. */
int mms__log_pycode(const mms_log_t *log, uint32_t id, const char **file, const char **name, uint32_t *firstline);
/* The recorder's stack ids are slots of its two tables of frames
 * (hooks/intern.c): 1 to 2^22 + 2^24, dense where stacks are many. Those
 * are found in log->stack_direct without hashing; others in log->stacks. */
#define MMS__STACK_DIRECT_MAX ((1u << 22) + (1u << 24))

/* The index in stack_nodes of stack node id, or -1 when the log defines
 * no such node. */
/* Whether the steps the recorder inferred are the log's steps: it has
 * some, and the program marks none itself. */
static inline int mms__log_steps_inferred(const mms_log_t *log)
{
	return log->inferred_steps && !log->step_marks;
}

/* Whether the log has steps: marks of its own or inferred, or, for a fork
 * child, the parent's it goes on from. */
static inline int mms__log_has_steps(const mms_log_t *log)
{
	return log->step_marks || log->inferred_steps || log->inh.step_kind;
}

/* Whether a STEP event of this sub-code (enum mms_step_source) ends a
 * step: the program's always, an inferred one where the log's steps are
 * the inferred ones. */
static inline int mms__log_step_counts(const mms_log_t *log, unsigned sub)
{
	return sub == MMS_STEP_BY_PROGRAM || mms__log_steps_inferred(log);
}

static inline int64_t mms__log_stack_ix(const mms_log_t *log, uint64_t id)
{
	const uint64_t *v;

	if (id <= MMS__STACK_DIRECT_MAX)
		return id < log->stack_direct_n ? (int64_t)log->stack_direct[id] - 1 : -1;
	v = mms__map_get(&log->stacks, id);
	return v ? (int64_t)*v : -1;
}

/* Converts a stamp to CLOCK_REALTIME nanoseconds by the line log.c draws
 * through the log's two (stamp, realtime) pairs. Inline: every event
 * takes it. */
static inline uint64_t mms__log_time(const mms_log_t *log, uint64_t stamp)
{
	int64_t d = (int64_t)(stamp - log->hdr.start_stamp);
	double t;

	if (log->ns_per_stamp == 1.0)
		return log->hdr.start_realtime_ns + (uint64_t)d;
	/* Only a damaged header puts a stamp this far away; clamp it rather
	 * than convert an out-of-range double. */
	t = (double)d * log->ns_per_stamp;
	if (t > 9.0e18)
		t = 9.0e18;
	else if (t < -9.0e18)
		t = -9.0e18;
	return log->hdr.start_realtime_ns + (uint64_t)(int64_t)t;
}

/* The log's clock as a loop over many events keeps it (in registers: a
 * local whose address is not taken; the events' stores cannot alias it),
 * with what mms__log_time() tests for each stamp settled once: scaled, a
 * slope below 0.97 in magnitude (a TSC over 1.03 GHz), where no stamp's
 * product can reach the clamps (|d| <= 2^63 and 2^63 * 0.97 < 9.0e18);
 * else mms__log_time() itself. */
struct mms__clock {
	const mms_log_t *log;
	uint64_t start, start_ns;
	double ns_per_stamp;
	int scaled;
};

static inline void mms__log_clock(const mms_log_t *log, struct mms__clock *k)
{
	k->log = log;
	k->start = log->hdr.start_stamp;
	k->start_ns = log->hdr.start_realtime_ns;
	k->ns_per_stamp = log->ns_per_stamp;
	k->scaled = log->ns_per_stamp > -0.97 && log->ns_per_stamp < 0.97;
}

/* mms__log_time() by k: the same nanoseconds. */
static inline uint64_t mms__clock_time(const struct mms__clock *k, uint64_t stamp)
{
	if (k->scaled)
		return k->start_ns + (uint64_t)(int64_t)((double)(int64_t)(stamp - k->start) * k->ns_per_stamp);
	return mms__log_time(k->log, stamp);
}

#endif /* MMS_LOG_INT_H */
