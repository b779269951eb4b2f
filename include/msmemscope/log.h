/* SPDX-License-Identifier: MIT */
/* msmemscope/log.h: open a .mms log, read its metadata and iterate its
 * events in their recorded order. */
#ifndef MSMEMSCOPE_API_LOG_H
#define MSMEMSCOPE_API_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Who keeps a block by design, when it is not the program (its blocks
 * live at exit are not leaks): mms_event_t.runtime of a MALLOC,
 * mms_block_t.runtime. */
enum mms_runtime {
	MMS_RUNTIME_NONE = 0,       /* the program */
	MMS_RUNTIME_LIBC = 1,       /* glibc or ld.so (or the library of an allocator that
	                               replaces malloc: tcmalloc, jemalloc), for itself,
	                               before main */
	MMS_RUNTIME_LIBCXX = 2,     /* libstdc++ or libgcc, for itself, before main */
	MMS_RUNTIME_TLS = 3,        /* a thread's TLS vector, allocated by pthread_create */
	MMS_RUNTIME_STDIO = 4,      /* the buffer of stdin, stdout or stderr */
	MMS_RUNTIME_PYTHON = 5,     /* live at exit in a CPython interpreter, allocated by
	                           the interpreter (not by an extension module, as far
	                           as the recorded stack shows): its state, which it
	                           does not free at exit by design */
	MMS_RUNTIME_MSMEMSCOPE = 6, /* msmemscope's own Python package allocated it while
	                           it worked (msmemscope.torch tagging tensors): it
	                           exists because the program was recorded */
	MMS_RUNTIME_TORCH_CUDA = 7, /* DEVICE memory live at exit in a process with
	                           PyTorch's CUDA libraries (libc10_cuda, libtorch_cuda),
	                           allocated by them (themselves or through cuBLAS,
	                           cuDNN, ...) as far as the recorded stack shows: the
	                           segments its caching allocator and the workspaces its
	                           handle pools keep for reuse by design, which the CUDA
	                           context frees at exit; and POOL blocks of PyTorch's
	                           caching allocator ("PyTorch cuda:N"): tensors still
	                           held at exit (no record is of this kind: readers
	                           tell it at the end) */
	MMS_RUNTIME_LOADER = 8,     /* a HOST block the dynamic loader allocated after
	                           start-up (the recorder saw ld.so call the
	                           allocator; in older logs, told at the end by the
	                           innermost frame of its recorded stack): its state
	                           for a library loaded with dlopen() and still
	                           loaded (link map, version and scope data), which
	                           dlclose() frees, its TLS blocks */
	MMS_RUNTIME_PERL = 9,       /* live at exit in a perl interpreter (the perl
	                           executable), allocated by the interpreter (not by
	                           another library calling the allocator itself, an XS
	                           module's malloc, as far as the recorded stack shows):
	                           its state, which perl frees at exit only in a build
	                           for debugging (PERL_DESTRUCT_LEVEL) */
	MMS_RUNTIME_CUDA = 10,      /* a HOST block or a mapping the CUDA driver (libcuda)
	                           allocated for itself (the recorder saw the driver
	                           call the allocator or mmap; told at the end by the
	                           recorded stack too, for what it allocated through a
	                           C library function): its contexts, modules and
	                           streams, which it keeps until the process ends
	                           (cudaDeviceReset or cuCtxDestroy frees a context's) */
	MMS_RUNTIME_PYIMPORT = 11,  /* (format 11) an event's only (mms_event_t.runtime of a
	                           MALLOC): allocated while CPython loaded a module; the
	                           program's block during the run, CPython's
	                           (MMS_RUNTIME_PYTHON) when live at exit */
	MMS_RUNTIME_NODE = 12,      /* live at exit in Node.js (the node executable),
	                           allocated by node or the libraries it brings (libuv,
	                           ICU, OpenSSL, ...; not by a native addon, as far as
	                           the recorded stack shows): V8's heap and isolate,
	                           which node does not free when it exits */
	MMS_RUNTIME_JVM = 13,       /* live at exit in a process with a Java virtual
	                           machine, allocated by the JVM's libraries (in a Java
	                           launcher, also what was recorded without stacks; not
	                           by a JNI library's own code): its heap, code cache
	                           and metaspace, which it does not free when it exits */
	MMS_RUNTIME_COUNT
};

/* The runtime that keeps a block by design: a short name ("c", "cxx",
 * "thread", "stdio", "python", "msmemscope", "torch-cuda", "loader", "perl", "cuda",
 * "python-import", "node", "jvm") and a
 * phrase; NULL for MMS_RUNTIME_NONE (the
 * program's) and unknown kinds. */
const char *mms_runtime_name(unsigned kind);
const char *mms_runtime_what(unsigned kind);
/* The phrase for a block live where the process had not exited (the end
 * of a log cut short, a running process): mms_runtime_what()'s without
 * what the runtime does at exit, which had not come. */
const char *mms_runtime_what_live(unsigned kind);

/* What a heap block live at the end of a log was to the program when it
 * exited, from the recorder's scan of its memory then (format 12; see
 * doc/analyses.md, "Leaked or still reachable"), as valgrind's leak check
 * tells them. */
enum mms_reach {
	MMS_REACH_UNKNOWN = 0,    /* not told: no scan (recorded with reach=0, a log
	                             before format 12, a process that left by _exit,
	                             was killed or exec'd, a cut or damaged log), not a
	                             heap block, or not at the end of the log */
	MMS_REACH_LEAKED = 1,     /* no pointer to it was left: leaked (valgrind's
	                             "definitely lost") */
	MMS_REACH_INDIRECT = 2,   /* pointed to only from leaked blocks: leaked with them
	                             ("indirectly lost") */
	MMS_REACH_POSSIBLE = 3,   /* reached only through pointers into its middle
	                             ("possibly lost") */
	MMS_REACH_REACHABLE = 4,  /* reached from the program's globals, stacks or
	                             thread-local storage through pointers to blocks'
	                             starts: not a leak ("still reachable") */
	MMS_REACH_UNRECORDED = 5, /* allocated before recording last stopped
	                             (msmemscope_stop() or the end of a step --steps
	                             recorded: a COLLECT stop event) and
	                             not still reachable: the program may have freed
	                             it while nothing was recorded, which the log does
	                             not show; not a leak it can tell (any memory kind) */
	MMS_REACH_COUNT
};

/* "unknown", "leaked", "indirect", "possible", "reachable"; NULL for an
 * unknown value. */
const char *mms_reach_name(unsigned reach);

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
	MMS_EV_KERNEL_LAUNCH, /* name the kernel's; a CUDA kernel's launch (format 11):
	                         mem DEVICE and device the ordinal of the launching
	                         thread's context (else mem HOST: msmemscope_kernel_launch()) */
	MMS_EV_MSTX,
	MMS_EV_STEP,
	MMS_EV_OWNER,
	MMS_EV_WATCH,
	MMS_EV_COLLECT,
	MMS_EV_GUARD,      /* guard mode's checks and findings (format 4) */
	MMS_EV_ALLOC_FAIL, /* an allocation the allocator refused (format 7): sub
	                      the function (enum mms_alloc_func), size the bytes
	                      asked for, flags the alignment asked for (0: the
	                      function's own), stack; mem HOST. Or (format 8)
	                      CUDA memory the driver refused: mem DEVICE, sub
	                      enum mms_device_sub, device the ordinal */
	MMS_EV_KIND_COUNT
};

/* Memory kinds of MALLOC and FREE events (Event Type column). */
enum mms_mem_kind {
	MMS_MEM_HOST = 0, /* the malloc family */
	MMS_MEM_MMAP = 1, /* mmap, munmap, mremap */
	MMS_MEM_POOL = 2, /* custom allocators reporting through the API */
	MMS_MEM_DEVICE = 3, /* CUDA memory from the driver (format 6): the event's
	                       `sub` is enum mms_device_sub, `device` the ordinal */
	MMS_MEM_KIND_COUNT
};

/* The kind's name in reports: "HOST", "MMAP", "POOL", "DEVICE"; NULL for
 * an unknown kind. */
const char *mms_mem_kind_name(unsigned kind);

/* MALLOC of DEVICE memory: how the driver handed it out; FREE of DEVICE
 * memory: the call that gave it back (MMS_DEVICE_MEMORY for cuMemFree,
 * whatever the block's kind). */
enum mms_device_sub {
	MMS_DEVICE_MEMORY = 0,  /* cuMemAlloc, cuMemAllocPitch (cudaMalloc) */
	MMS_DEVICE_ASYNC = 1,   /* stream-ordered: cuMemAllocAsync, cuMemAllocFromPoolAsync
	                           (cudaMallocAsync); cuMemFreeAsync */
	MMS_DEVICE_MANAGED = 2, /* cuMemAllocManaged (cudaMallocManaged) */
	MMS_DEVICE_PINNED = 3,  /* pinned host memory: cuMemAllocHost, cuMemHostAlloc
	                           (cudaMallocHost, cudaHostAlloc); cuMemFreeHost */
	MMS_DEVICE_ARRAY = 4,   /* CUDA arrays (cudaMallocArray, cudaMalloc3DArray,
	                           cudaMallocMipmappedArray): a block at the array's
	                           handle, of its elements' bytes; cuArrayDestroy,
	                           cuMipmappedArrayDestroy (log version 15) */
	MMS_DEVICE_VMM = 5,     /* virtual memory management: a cuMemMap of cuMemCreate
	                           memory (PyTorch's expandable segments); cuMemUnmap */
	MMS_DEVICE_SUB_COUNT    /* one past the last */
};

/* The sub-kind's name: "device", "async", "managed", "pinned", "array",
 * "vmm"; NULL for an unknown one. */
const char *mms_device_sub_name(unsigned sub);

/* MALLOC and FREE of MMAP memory: the call. A mapping counts where the
 * program may access it: a version 9 log follows mprotect, and a mapping
 * made with PROT_NONE is address space reserved, not memory (a JVM's or
 * V8's heap before it is committed). */
enum mms_map_sub {
	MMS_MAP_MMAP = 0,    /* MALLOC: mmap, mremap's new place; FREE: munmap, mremap's old place */
	MMS_MAP_PROTECT = 1, /* MALLOC: mprotect gave access (a block of its range when some
	                        bytes had none, else nothing); FREE: mprotect(PROT_NONE) */
	MMS_MAP_RESERVE = 2, /* FREE: mmap with PROT_NONE: what it covers is no longer memory */
};

/* Subtypes (mms_event_t.sub) per kind. SYSTEM: enum mms_system_sub (a
 * FORK's `total` is the fork's number in the process, from 1: see
 * mms_log_fork()). MALLOC and FREE of HOST memory: the allocator function,
 * enum mms_alloc_func and enum mms_free_func; for MALLOC, `flags` is an
 * enum mms_runtime when a runtime allocated the block for itself (0: the
 * program). ACCESS: enum mms_access_sub. OP_LAUNCH: enum mms_op_sub.
 * MSTX: enum mms_mstx_sub. OWNER: enum mms_owner_sub. COLLECT: enum
 * mms_collect_sub, `flags` 1 when the --steps filter turned collection
 * off or on at a step's edge (format 17), 0 the program's
 * msmemscope_stop() or msmemscope_start(). WATCH: enum mms_watch_sub;
 * MMS_WATCH_API has addr, size and name; a sum has addr, size, name,
 * `used` the output number of the --watch start operator (0 for an API
 * watch), `total` the launch (from 1) and `flags` the CRC-64/XZ of the
 * block's bytes. GUARD (guard
 * mode): 0 a full check began; the others are findings (enum
 * mms_guard_finding_kind of msmemscope/analysis.h): addr and size the
 * block (size 0: no block), stack its allocation stack, range_id its free
 * stack (0: none) | the stack of the call that made the check << 32,
 * `flags` enum mms_guard_alloc_family | enum mms_guard_window << 4 | allocation
 * function << 8 | damaged length << 16, `total` the damaged bytes' offset
 * from addr (an int64_t), `used` their first bytes (up to 8,
 * little-endian). mms_guard_run() reads them for you. */
enum mms_system_sub {
	MMS_SYS_INIT = 0,
	MMS_SYS_FINI = 1,
	MMS_SYS_FORK = 2,        /* the process forked a recorded child here */
	MMS_SYS_SWEEP_BEGIN = 3, /* (format 14) the Python package's sweep at exit began */
	MMS_SYS_SWEEP_END = 4,   /* and ended: what its thread freed in between, the
	                            program had let go of (garbage of reference cycles,
	                            CPython's and PyTorch's caches) */
};

enum mms_alloc_func {
	MMS_FN_MALLOC = 0,
	MMS_FN_CALLOC = 1,
	MMS_FN_REALLOC = 2, /* the new block of a realloc or reallocarray */
	MMS_FN_POSIX_MEMALIGN = 3,
	MMS_FN_ALIGNED_ALLOC = 4,
	MMS_FN_MEMALIGN = 5,
	MMS_FN_VALLOC = 6,
	MMS_FN_PVALLOC = 7,
	MMS_FN_NEW = 8,       /* C++ operator new (format 16), all its forms */
	MMS_FN_NEW_ARRAY = 9, /* operator new[] (format 16) */
};

enum mms_free_func {
	MMS_FN_FREE = 0,
	MMS_FN_REALLOC_FREE = 1, /* the old block of a realloc that moved or shrank to 0 */
	MMS_FN_DELETE = 2,       /* C++ operator delete (format 16), all its forms */
	MMS_FN_DELETE_ARRAY = 3, /* operator delete[] (format 16) */
};

/* A function of the malloc family or a C++ operator by name: "malloc",
 * "calloc", ..., "new", "new[]" (enum mms_alloc_func; the operators in
 * all their forms: aligned, nothrow); "free", "realloc", "delete",
 * "delete[]" (enum mms_free_func; sized ones too). NULL for an unknown
 * one. */
const char *mms_alloc_func_name(unsigned fn);
const char *mms_free_func_name(unsigned fn);

enum mms_access_sub { MMS_ACC_UNKNOWN = 0, MMS_ACC_READ = 1, MMS_ACC_WRITE = 2 };
enum mms_op_sub { MMS_OP_START = 0, MMS_OP_END = 1 };
enum mms_mstx_sub { MMS_MSTX_MARK = 0, MMS_MSTX_RANGE_START = 1, MMS_MSTX_RANGE_END = 2 };
/* MMS_OWNER_TAG (format 5, msmemscope_owner_tag()): addr and name: the
 * live block containing addr belongs to owner `name` from its allocation
 * on; the heap state renames it, and decompose files it (at the peak too,
 * when it was live there) under that owner. */
enum mms_owner_sub { MMS_OWNER_PUSH = 0, MMS_OWNER_POP = 1, MMS_OWNER_TAG = 2 };
enum mms_collect_sub { MMS_COLLECT_STOP = 0, MMS_COLLECT_START = 1 };
/* STEP: who ended the step (format 13). A step the recorder inferred
 * counts only in a log whose program marks no steps itself
 * (mms_log_info_t.steps_inferred); elsewhere the heap state, the passes
 * and the analyses leave it out, and so should a reader of the events. */
enum mms_step_sub {
	MMS_STEP_MARKED = 0,   /* the program: msmemscope_step(), msmemscope.step() */
	MMS_STEP_OPTIMIZER = 1 /* the end of a PyTorch optimizer step (--level=op) */
};

enum mms_watch_sub {
	MMS_WATCH_API = 0,        /* msmemscope_watch() */
	MMS_WATCH_SUM_BEFORE = 1, /* a watched block's checksum before an operator launch */
	MMS_WATCH_SUM_AFTER = 2,  /* and after it */
};

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
	uint16_t device;    /* DEVICE memory: the CUDA device ordinal (0 otherwise) */
	uint64_t addr;      /* MALLOC, FREE, ACCESS, WATCH, OWNER tag */
	uint64_t size;      /* MALLOC, ACCESS, WATCH, and FREE where the record has it */
	uint32_t stack;     /* allocation stack id, 0 = none */
	uint32_t runtime;   /* MALLOC: the runtime that keeps the block (enum mms_runtime),
	                       0 = the program */
	uint64_t total;     /* POOL: bytes the pool reserved; WATCH sums: the launch */
	uint64_t used;      /* POOL: bytes the pool handed out; WATCH sums: the output */
	uint64_t range_id;  /* MSTX ranges */
	const char *name;   /* operator, kernel, mark, owner tag, pool or watch name; NULL if none */
	uint64_t file_offset; /* where the record lies in the file (for messages) */
	uint64_t flags;     /* MMAP: prot << 32 | mmap flags, as recorded (mprotect: prot << 32);
	                       WATCH sums: the checksum */
} mms_event_t;

typedef struct mms_log mms_log_t;

/* Static facts about a log, valid until mms_log_close() (the strings are
 * the log's). Read-only: mms_log_get_info() fills it. */
typedef struct mms_log_info {
	uint32_t version;
	uint64_t pid;
	uint64_t ppid;
	const char *exe;         /* executable path, "" if unknown */
	uint32_t clock;          /* 1 = TSC, 2 = counter */
	uint32_t flags;          /* private: the header's flags as the format stores
	                            them, for diagnostics; read complete and cut */
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
	uint64_t segments;       /* private: per-thread runs of records (diagnostics) */
	uint64_t last_realtime_ns; /* CLOCK_REALTIME at the last refresh or exit */
	int exec_away;           /* the process exec'd another program: the log ends there */
	uint64_t bad_stacks;     /* walks of stack ids so far (mms_log_stack(), exports,
	                            transforms, analyses) that did not resolve: damaged
	                            stack records; reports show those stacks without frames */
	int stacks_full;         /* the recorder's table of stack frames filled up: the
	                            stacks of later events are cut short (innermost frames
	                            missing) or absent */
	int strings_full;        /* its table of names filled up: later names (operators,
	                            marks, owners, pools) are missing */
	const char *own_malloc;  /* the file that defines malloc ahead of the recorder (an
	                            allocator linked into the program): the calls of its
	                            malloc family are not in the log; NULL when they are */
	const char *own_cxx;     /* the file that defines a C++ allocation operator ahead
	                            of the recorder (the program's own operator new or
	                            delete): new and delete are recorded as the malloc
	                            and free they call, so no mismatched free is told;
	                            NULL when every operator called was the recorder's */
	const char *own_cxx_op;  /* that operator, as C++ names it ("operator
	                            new(std::size_t)"); NULL with own_cxx */
	/* At the end of exit the recorder had glibc and libstdc++ free their
	 * internal memory (freeres), or says why not: */
	int freeres;              /* 1: it ran (the frees from then on are theirs) */
	int freeres_skipped;      /* enum mms_freeres_skip; 0 when it ran or nobody said
	                            (the process did not end through exit or _exit,
	                            or an older recorder wrote the log) */
	uint64_t freeres_threads; /* MMS_FREERES_SKIP_THREADS: the other threads that ran */
	/* The recorder's scan of the process's memory at exit, which tells
	 * leaked blocks from still reachable ones (format 12; enum mms_reach): */
	int reach_scan;          /* enum mms_reach_scan_state */
	uint64_t reach_pointers; /* words that pointed into anonymous memory, written */
	uint64_t reach_bytes;    /* bytes of memory read */
	uint64_t reach_ns;       /* how long the scan took, nanoseconds */
	uint64_t reach_threads;  /* other threads that ran during the scan */
	/* Format 13: the log's steps are those the recorder inferred (STEP
	 * events of sub MMS_STEP_OPTIMIZER): it holds some, and the program
	 * marked none itself (no msmemscope_step(), no MSTX range). */
	int steps_inferred;
} mms_log_info_t;

/* What became of the recorder's scan at exit (mms_log_info_t.reach_scan). */
enum mms_reach_scan_state {
	/* None: recorded with reach=0 (--no-reach-scan), by a recorder before
	 * format 12, or the process did not end through exit or _exit
	 * (killed, exec; a fork child's _exit). */
	MMS_REACH_SCAN_NONE = 0,
	/* Every resident page was read and every record is in the log:
	 * blocks have verdicts (mms_block_t.reach). */
	MMS_REACH_SCAN_WHOLE = 1,
	/* Stopped at its limits (16 Mi pointers, 4 GiB read, 65536
	 * mappings): no verdicts. */
	MMS_REACH_SCAN_LIMIT = 2,
	/* The process could not read its memory (a seccomp filter): no
	 * verdicts. */
	MMS_REACH_SCAN_NOREAD = 3,
	/* Records of the scan are missing (a cut log, a lost chunk): no
	 * verdicts. */
	MMS_REACH_SCAN_LOST = 4,
	/* Not made: the program's malloc is a library's that replaces
	 * glibc's (jemalloc keeps pointers to blocks in its caches and
	 * metadata): no verdicts. */
	MMS_REACH_SCAN_ALLOCATOR = 5,
};

/* Why freeres did not run at the end of exit (mms_log_info_t). */
enum mms_freeres_skip {
	MMS_FREERES_SKIP_NONE = 0,      /* it ran, or nobody said */
	MMS_FREERES_SKIP_OFF = 1,       /* recorded with freeres=0 (--no-freeres) */
	MMS_FREERES_SKIP_THREADS = 2,   /* other threads were still running */
	MMS_FREERES_SKIP_UNCOUNTED = 3, /* the recorder could not count the threads
	                                   (no descriptor free for /proc, no /proc) */
	MMS_FREERES_SKIP_EXIT = 4,      /* the process left with _exit (no exit handler
	                                   runs) */
};

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
/* What the log at path says of itself, as mms_log_get_info() after
 * mms_log_open_ex() gives it, without reading a fork child's parent's log:
 * cheap where opening the log replays the parent's up to the fork (the
 * launcher's count of a run's other logs). The info's strings (exe,
 * cut_what, damage) are NULL, the executable's path is copied into exe
 * (exe_cap bytes, NUL-terminated, cut to fit; exe may be NULL). Returns 0
 * or a negative code, as mms_log_open_ex(). */
int mms_log_peek(const char *path, mms_log_info_t *info, char *exe, size_t exe_cap);

/* Following a log while its program writes it (the launcher's report
 * while the program runs). mms_log_follow() opens the log at path like
 * mms_log_open_ex(), with the records written so far (at least a whole
 * header: MMS_ETRUNCATED before); mms_log_follow_refresh() then reads the
 * records written since, and returns 1 when it found events, 0 when not,
 * or a negative code: the log is cut or damaged (MMS_ECORRUPT,
 * MMS_EORDER), or -ENOMEM; a log that cannot be followed further (each
 * later call returns the same code) is closed and read again, whole, with
 * mms_log_open_ex() once written. Once
 * the program has exited, mms_log_follow_end() takes the last look, after
 * which the log reads as mms_log_open_ex() reads it (cut or damaged
 * included): 0 or -ENOMEM. The info (mms_log_get_info()) is that of the
 * last look. Feed a pass with it through mms_pass_feed(). The strings
 * handed out stay valid until mms_log_close(). */
int mms_log_follow(const char *path, mms_log_t **out, mms_open_error_t *err);
int mms_log_follow_refresh(mms_log_t *log);
int mms_log_follow_end(mms_log_t *log);

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
	/* INHERITED: the steps the parent had begun at the fork (0: none),
	 * which this log's continue: steps 1 to fork_step are the parent's,
	 * in its log; where fork_in_step is 1 the fork came inside step
	 * fork_step, whose rest is in this log too. */
	uint64_t fork_step;
	int fork_in_step;
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

/* Whether a module of the log (the executable, or a library: one linked
 * with the C++ runtime built in, g++ -static-libstdc++) calls its own copy
 * of a C++ allocation operator instead of the global one the recorder
 * defines: its new and delete were recorded as the malloc and free they
 * call, so a block it makes with new and another module releases with
 * delete (or the reverse) looks like a mismatched free that was not one.
 * The replay counts such frees apart (unchecked_frees in the summary).
 * Reads the recorded modules' files (their symbol tables; a file whose
 * build-id differs from the recorded one is passed over) at the first
 * call. Returns 1 with *module (its path in the log) and *op (the
 * operator's name in C++, "operator new[](std::size_t)", or NULL for a
 * stripped module that holds a copy of the C++ runtime), 0 when none
 * does, or MMS_EUSAGE. module and op may be NULL. The log keeps what it
 * found (a log is read by one thread at a time). */
int mms_log_own_operators(const mms_log_t *log, const char **module, const char **op);

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

#ifdef __cplusplus
}
#endif

#endif /* MSMEMSCOPE_API_LOG_H */
