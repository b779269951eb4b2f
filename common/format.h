/* SPDX-License-Identifier: MIT */
/* format.h: the one definition of the .mms on-disk format, shared by the
 * writer (hooks/) and the reader (replay/). doc/log-format.md explains it. */
#ifndef MMS_FORMAT_H
#define MMS_FORMAT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * File layout (all integers little-endian):
 *
 *   [0, MMS_HEADER_SIZE)                    struct mms_file_header
 *   [MMS_HEADER_SIZE + k * chunk_size, ...)  chunk k, k < header.nchunks
 *
 * A chunk is a struct mms_chunk_header followed by `used` bytes of records.
 * Its records form one or more segments; a segment is a SEGMENT record and
 * the records one thread wrote after it, with non-decreasing stamps. The
 * writer stores `used` (release) after each whole record, so a reader never
 * sees half a record, even from a process killed with SIGKILL.
 *
 * A record is a tag byte, then (for every tag but SEGMENT) the stamp as an
 * unsigned varint delta from the previous record of its segment, then the
 * payload fields listed beside each tag below. Addresses are zigzag varint
 * deltas from the previous address of the segment ("daddr"); other numbers
 * are unsigned LEB128 varints ("u"); strings are a length then bytes ("s").
 */

#define MMS_MAGIC "MMSLOG\x1a\n"
#define MMS_MAGIC_LEN 8
#define MMS_FORMAT_VERSION 17u     /* what the writer writes */
#define MMS_FORMAT_VERSION_MIN 1u  /* the oldest version readers read */
#define MMS_HEADER_SIZE 4096u
#define MMS_CHUNK_SIZE_DEFAULT 65536u
#define MMS_CHUNK_MAGIC 0x4b4e4843u /* "CHNK" */
#define MMS_MAX_STRING 4096u         /* longer strings are truncated */
/* COLLECT's `on` (version 17): the --steps filter, not the program's
 * msmemscope_start()/msmemscope_stop(), turned collection on or off at a
 * step's edge. Collection is on where the last record of each kind says
 * on; before the first, as the configuration says (collect=deferred:
 * off; --steps: on where step 1 is one of them). A fork child's log
 * begins with one record of each kind the configuration has, its state
 * at the fork. */
#define MMS_COLLECT_BY_STEPS 2u

/* header.clock: how stamps were taken. */
enum mms_clock {
	MMS_CLOCK_TSC = 1,     /* invariant TSC, rdtsc fenced */
	MMS_CLOCK_COUNTER = 2, /* one global atomic counter */
};

#if defined(__x86_64__) || defined(__i386__)
/* The TSC as MMS_CLOCK_TSC stamps read it (the writer fences around it
 * where the ordering rule needs; a reader of a live log compares its own
 * reading with them). */
#define MMS_HAVE_TSC 1
static inline uint64_t mms_tsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
#endif

/* header.flags, set with atomic OR by the writer. */
enum mms_header_flag {
	MMS_FLAG_COMPLETE = 1u << 0,         /* the process reached exit */
	MMS_FLAG_CUT = 1u << 1,              /* recording stopped early, see cut_errno */
	MMS_FLAG_STACKS_FULL = 1u << 2,      /* stack table full: later stacks truncated */
	MMS_FLAG_STRINGS_FULL = 1u << 3,     /* string table full: later strings are id 0 */
	MMS_FLAG_CLOCK_BACKWARDS = 1u << 4,  /* a stamp went backwards in a thread (clamped) */
	MMS_FLAG_EXECED = 1u << 5,           /* this image was reached by exec from a recorded one */
	MMS_FLAG_FORKED = 1u << 6,           /* this process is a recorded fork child (META parent_log) */
	MMS_FLAG_EXEC_AWAY = 1u << 7,        /* the process exec'd another program: its log ends there */
};

/* The fixed part of page 0. Fields marked "atomic" are updated while the
 * program runs; readers load them with __atomic_load_n. */
struct mms_file_header {
	char magic[MMS_MAGIC_LEN];
	uint32_t version;
	uint32_t header_size;       /* MMS_HEADER_SIZE */
	uint32_t chunk_size;        /* bytes per chunk, a multiple of 4096 */
	uint32_t clock;             /* enum mms_clock */
	uint32_t flags;             /* atomic; enum mms_header_flag */
	int32_t cut_errno;          /* why recording was cut, when MMS_FLAG_CUT: an
	                               errno value or an MMS_CUT_* code */
	uint64_t pid;
	uint64_t ppid;
	uint64_t start_stamp;       /* stamp and CLOCK_REALTIME (ns) taken together */
	uint64_t start_realtime_ns;
	uint64_t last_stamp;        /* atomic pair: refreshed as the log grows and at exit */
	uint64_t last_realtime_ns;  /* atomic */
	uint64_t nchunks;           /* atomic: chunks reserved so far */
	uint64_t lost_events;       /* atomic: events not recorded (signal inside a hook) */
	uint32_t call_stack_depth;  /* C frames recorded per event, 0 = none */
	uint32_t events_mask;       /* enum mms_events_mask: what was collected */
	uint64_t file_limit;        /* the largest size the writer would grow the file to */
	uint64_t cut_stamp;         /* atomic; with MMS_FLAG_CUT: no event stamped from here
	                               on is complete (0: unknown, logs before 0.1.0's cut fix) */
	uint64_t proc_start;        /* the process's start time (clock ticks since boot, /proc's
	                               stat field 22; 0: unknown): with pid and pid_ns, which
	                               process wrote the log, the same across its execs */
	uint64_t pid_ns;            /* the inode of its PID namespace (0: unknown) */
};

/* header.cut_errno values that are not errno values. */
#define MMS_CUT_DESCRIPTOR 0x10001 /* the program closed or replaced the log's descriptor */
#define MMS_CUT_FSIZE 0x10002      /* the process's file size limit (RLIMIT_FSIZE) */
#define MMS_CUT_ADDRSPACE 0x10003  /* no room left under the process's RLIMIT_AS */
#define MMS_CUT_NOTSC 0x10004      /* the program turned its time stamp counter off */
#define MMS_CUT_SECCOMP 0x10005    /* the program installed a seccomp filter */

/* Why recording stopped, in the words the recorder's stderr line and the
 * reader's warnings share, for the header.cut_errno values above and for
 * EFBIG (the log's own size limit); NULL for other errno values, which
 * strerror() names. */
static inline const char *mms_cut_words(int cut_errno)
{
	switch (cut_errno) {
	case EFBIG:
		return "the log reached its size limit (MSMEMSCOPE_LOG_LIMIT)";
	case MMS_CUT_DESCRIPTOR:
		return "the program closed the log's descriptor behind the recorder's back (a raw close, or a file "
		       "of its own at its number; the recorder writes into no file of the program's)";
	case MMS_CUT_FSIZE:
		return "the log reached the file size limit the program runs under (RLIMIT_FSIZE, ulimit -f), which "
		       "the recorder never passes";
	case MMS_CUT_ADDRSPACE:
		return "the address space the program limited itself to (RLIMIT_AS, ulimit -v) had no room left for "
		       "the log's next chunk";
	case MMS_CUT_NOTSC:
		return "the program turned off the time stamp counter for itself (prctl PR_SET_TSC, or seccomp's "
		       "strict mode), which the recorder reads to order and time events";
	case MMS_CUT_SECCOMP:
		return "the program installed a seccomp filter, which may forbid the system calls the recorder makes "
		       "(growing the log kills a process whose filter forbids fallocate)";
	default:
		return NULL;
	}
}

/* header.events_mask */
enum mms_events_mask {
	MMS_EVENTS_ALLOC = 1u << 0,
	MMS_EVENTS_FREE = 1u << 1,
	MMS_EVENTS_LAUNCH = 1u << 2,
	MMS_EVENTS_ACCESS = 1u << 3,
};

struct mms_chunk_header {
	uint32_t magic;    /* MMS_CHUNK_MAGIC once the chunk is in use */
	uint32_t reserved;
	uint64_t used;     /* atomic: bytes of whole records after this header */
};

/* Record tags. Low bits of some tags carry a sub-code (allocator function,
 * access mode, phase). */
enum mms_tag {
	/* Structure and metadata: not events of the program. */
	MMS_TAG_SEGMENT = 0x01,     /* u thread, u stamp (absolute); resets deltas */
	MMS_TAG_THREAD = 0x02,      /* u thread, u tid */
	MMS_TAG_THREAD_NAME = 0x03, /* u thread, u string-id */
	MMS_TAG_STRING = 0x04,      /* u id, s bytes */
	MMS_TAG_STACK = 0x05,       /* u id, u parent-id (0 = root), u ip */
	MMS_TAG_MODULE = 0x06,      /* u base, u lo, u hi, s path, s build-id */
	MMS_TAG_META = 0x07,        /* s key, s value */
	MMS_TAG_LOST = 0x08,        /* u count */
	MMS_TAG_PYCODE = 0x09,      /* (version 5) u id, s filename, s qualname, u first
	                               line: a Python code object (see MMS_PYFRAME) */
	MMS_TAG_REACH_REGIONS = 0x0a, /* (version 12) s: (u lo, u length, u enum
	                                 mms_reach_region) triples: memory the recorder
	                                 scanned at exit for pointers (META "reach") */
	MMS_TAG_REACH_REFS = 0x0b,    /* (version 12) s: (u (where - previous where) / 8,
	                                 zigzag (value - previous value)) pairs, both
	                                 previous 0 at the record's start: the words of
	                                 that memory that point into its anonymous part,
	                                 and those of the anonymous part that hold a
	                                 vtable's address (their values outside it) */

	/* Memory events. */
	MMS_TAG_ALLOC = 0x10,       /* | enum mms_alloc_fn: daddr, u size, u stack */
	MMS_TAG_FREE = 0x18,        /* | enum mms_free_fn: daddr */
	MMS_TAG_MMAP = 0x20,        /* daddr, u size, u prot<<32|flags, u stack; from
	                               version 9, prot MMS_PROT_UNKNOWN for an mremap's
	                               new place (its access is the old place's) */
	MMS_TAG_MUNMAP = 0x21,      /* daddr, u size */
	MMS_TAG_MPROTECT = 0x22,    /* (version 9) daddr, u size, u prot, u stack: an
	                               mprotect that succeeded */
	MMS_TAG_MMAP_RT = 0x23,     /* (version 10) daddr, u size, u prot<<32|flags, u stack,
	                               u enum mms_runtime_kind: a mapping a runtime made for
	                               itself (MMAP otherwise) */
	MMS_TAG_POOL_ALLOC = 0x28,  /* u pool-string, daddr, u size, u total, u used, u stack */
	MMS_TAG_POOL_FREE = 0x29,   /* u pool-string, daddr, u size, u total, u used */
	MMS_TAG_ACCESS = 0x30,      /* | enum mms_access_mode: daddr, u size */

	/* Program structure events, from the instrumentation API. */
	MMS_TAG_OP_BEGIN = 0x38,    /* u name */
	MMS_TAG_OP_END = 0x39,      /* (none) */
	MMS_TAG_KERNEL = 0x3a,      /* u name */
	MMS_TAG_KERNEL_DEV = 0x3b,  /* (version 11) u name, u device: a CUDA kernel launched
	                               on that device (the ordinal of the launching
	                               thread's context); KERNEL: the device is unknown */
	MMS_TAG_MARK = 0x40,        /* u name */
	MMS_TAG_RANGE_START = 0x41, /* u range-id, u name */
	MMS_TAG_RANGE_END = 0x42,   /* u range-id */
	MMS_TAG_STEP = 0x48,        /* | enum mms_step_source (version 13; before: 0 only):
	                               (none): ends step k, begins step k+1 */
	MMS_TAG_OWNER_PUSH = 0x50,  /* u tag-string */
	MMS_TAG_OWNER_POP = 0x51,   /* (none) */
	MMS_TAG_OWNER_TAG = 0x52,   /* (version 5) daddr, u tag-string: the live block
	                               containing the address belongs to that owner
	                               from now on (msmemscope_owner_tag) */
	MMS_TAG_WATCH = 0x58,       /* | enum mms_watch_phase: see there */
	MMS_TAG_COLLECT = 0x60,     /* u on (1 = start, 0 = stop) | MMS_COLLECT_BY_STEPS */
	MMS_TAG_SYSTEM = 0x68,      /* | enum mms_system_phase */
	MMS_TAG_ALLOC_RT = 0x70,    /* | enum mms_alloc_fn: daddr, u size, u stack, u enum
	                               mms_runtime_kind: an allocation a runtime made for
	                               itself (ALLOC otherwise) */
	MMS_TAG_GUARD = 0x78,       /* | enum mms_guard_kind (version 4): see there */
	MMS_TAG_FREE_STACK = 0x80,  /* | enum mms_free_fn (version 5): daddr, u stack: a FREE
	                               with the stack of the call that freed, written instead
	                               of FREE when stacks are on (call_stack > 0) */
	MMS_TAG_DEV_ALLOC = 0x88,   /* | enum mms_dev_fn (version 6): daddr, u size, u stack,
	                               u device: CUDA memory the driver handed out (hooks/cuda.c) */
	MMS_TAG_DEV_FREE = 0x90,    /* | enum mms_dev_fn (version 6): daddr, u device: CUDA
	                               memory given back, stamped before the driver's call */
	MMS_TAG_ALLOC_FAIL = 0x98,  /* | enum mms_alloc_fn (version 7): u size, u stack, u align:
	                               an allocation the allocator refused (NULL, ENOMEM);
	                               size saturates at 2^64 - 1 (calloc's product) */
	/* | enum mms_dev_fn (version 8): u size, u stack, u device: CUDA memory the
	 * driver refused (CUDA_ERROR_OUT_OF_MEMORY; hooks/cuda.c); the device as for
	 * DEV_ALLOC */
	MMS_TAG_DEV_ALLOC_FAIL = 0xa0,
	MMS_TAG_ALLOC_CXX = 0xa8,    /* | (fn & 7) for fn MMS_ALLOC_NEW, MMS_ALLOC_NEW_ARRAY
	                                (version 16): daddr, u size, u stack: ALLOC of a block
	                                a C++ operator new or new[] made */
	MMS_TAG_ALLOC_CXX_RT = 0xb8, /* | (fn & 7) (version 16): daddr, u size, u stack, u enum
	                                mms_runtime_kind: ALLOC_RT of such a block */
};

/* The tag of an ALLOC (base MMS_TAG_ALLOC) or ALLOC_RT (MMS_TAG_ALLOC_RT)
 * of allocation function fn (enum mms_alloc_fn): the C++ operators' have
 * tags of their own, whose low four bits are fn. */
#define MMS_ALLOC_TAG(base, fn)                                                                        \
	((uint8_t)((fn) < 8 ? (base) | (fn)                                                            \
			    : ((base) == MMS_TAG_ALLOC ? MMS_TAG_ALLOC_CXX : MMS_TAG_ALLOC_CXX_RT) | ((fn)&7)))

/* The sub-code of MMS_TAG_STEP (version 13): who ended the step. A step
 * the recorder inferred (the end of a PyTorch optimizer step, written by
 * msmemscope._torchops) counts only in a log whose program marks no steps
 * itself: readers ignore it where the log holds a STEP of the program's or
 * any RANGE_START (an MSTX range may be a "step start"). */
enum mms_step_source {
	MMS_STEP_BY_PROGRAM = 0,   /* msmemscope_step(), Python's msmemscope.step() */
	MMS_STEP_BY_OPTIMIZER = 1, /* the end of the outermost torch.optim optimizer step
	                           of a thread (its RecordFunction "Optimizer.step#...") */
	MMS_STEP_BY_COUNT
};

/* The prot of an MMAP record whose access the recorder does not know
 * (version 9: an mremap's new place). Readers take a mapping recorded with
 * prot PROT_NONE (0) in a version 9 log for address space reserved, not
 * memory, and follow MPROTECT records from there; in older logs every
 * mapping counts, whatever its prot (mremap wrote 0). */
#define MMS_PROT_UNKNOWN 0x80000000u

/* The sub-code of MMS_TAG_DEV_ALLOC and MMS_TAG_DEV_FREE (version 6): the
 * kind of CUDA memory and the driver call family. u device is the CUDA
 * device ordinal of the calling thread's current context (0 when it has
 * none). A FREE's sub-code names the call that freed (cuMemFree for
 * device and managed memory alike): the block's kind is its allocation's.
 * Addresses are unique across devices (unified addressing), so a reader
 * keys device blocks by address alone. */
enum mms_dev_fn {
	MMS_DEV_DEVICE = 0,  /* cuMemAlloc, cuMemAllocPitch; cuMemFree */
	MMS_DEV_ASYNC = 1,   /* cuMemAllocAsync, cuMemAllocFromPoolAsync; cuMemFreeAsync
	                        (stream-ordered: recorded at the call) */
	MMS_DEV_MANAGED = 2, /* cuMemAllocManaged */
	MMS_DEV_PINNED = 3,  /* cuMemAllocHost, cuMemHostAlloc; cuMemFreeHost */
	MMS_DEV_ARRAY = 4,   /* (version 15) CUDA arrays: cuArrayCreate, cuArray3DCreate,
	                        cuMipmappedArrayCreate, at the handle's value, of
	                        their elements' bytes; cuArrayDestroy,
	                        cuMipmappedArrayDestroy */
	MMS_DEV_VMM = 5,     /* cuMemMap of cuMemCreate memory: one block per mapping;
	                        cuMemUnmap (a mapping partly unmapped is freed, and
	                        what is left of it allocated again) */
	MMS_DEV_FN_COUNT
};

/* The sub-code of MMS_TAG_GUARD (version 4), written in guard mode
 * (guard=1, doc/guard.md).
 * CHECK: (none): a full check of every live guarded block and of the
 * quarantine begins here; what it finds follows as findings.
 * The others are findings: daddr (the block's address, or the address
 * freed), u size (the block's requested size, 0 when no block), u info
 * (enum mms_guard_family | enum mms_guard_since << 4 | enum mms_guard_by
 * << 6 | alloc fn << 8 | damaged length << 16), u zigzag offset of the first damaged byte from
 * the block's address, u its first bytes (up to 8, little-endian), u the
 * block's allocation stack | its free stack << 32 (0: none), u the stack
 * of the call that made the check (a free, realloc or delete; 0 for a
 * full check). The stamp is the check that found it. */
enum mms_guard_kind {
	MMS_GUARD_CHECK = 0,
	MMS_GUARD_OVERFLOW = 1,         /* the tail zone of a block was written */
	MMS_GUARD_UNDERFLOW = 2,        /* its head zone */
	MMS_GUARD_WRITE_AFTER_FREE = 3, /* a quarantined block's bytes or zones */
	MMS_GUARD_DOUBLE_FREE = 4,      /* a free of a quarantined block */
	MMS_GUARD_INVALID_FREE = 5,     /* a free of an address that is no guarded block */
	MMS_GUARD_MISMATCHED_FREE = 6,  /* free of new, delete of malloc, ... */
	MMS_GUARD_KIND_COUNT
};

/* How a guarded block was allocated, and so must be released. */
enum mms_guard_family {
	MMS_GUARD_FAMILY_MALLOC = 0,   /* malloc, calloc, realloc, valloc, pvalloc */
	MMS_GUARD_FAMILY_NEW = 1,      /* operator new */
	MMS_GUARD_FAMILY_NEW_ARRAY = 2, /* operator new[] */
	MMS_GUARD_FAMILY_MEMALIGN = 3, /* memalign, posix_memalign, aligned_alloc (free) */
	MMS_GUARD_FAMILY_PLAIN = 4,    /* the recorder's: an unguarded block (the loader's) */
};

/* Where a finding's window begins: the last moment the damaged bytes were
 * known intact. */
enum mms_guard_since {
	MMS_GUARD_SINCE_ALLOC = 0, /* the block's allocation */
	MMS_GUARD_SINCE_FREE = 1,  /* its free */
	MMS_GUARD_SINCE_CHECK = 2, /* the last full check (CHECK) before the finding */
	MMS_GUARD_SINCE_NONE = 3,  /* no window: a bad free */
};

/* Which check found it (info bits 6-7; 0 in logs written before these
 * bits were, which the readers call unknown). */
enum mms_guard_by {
	MMS_GUARD_BY_UNKNOWN = 0,
	MMS_GUARD_BY_CHECK = 1,      /* a full check */
	MMS_GUARD_BY_RELEASE = 2,    /* the free, realloc or delete of the block (or of the address) */
	MMS_GUARD_BY_QUARANTINE = 3, /* its leaving the quarantine, pushed out by a later free */
};

/* Python frames (version 5). With python_stack=N, a STACK node's ip may
 * be a Python frame rather than a return address: bit 63 set, bit 62 set
 * when the frame began a new run of the interpreter's eval loop (a C
 * frame of _PyEval_EvalFrameDefault holds it and the Python frames above
 * it up to the next such frame), bits 32-61 the id of its PYCODE record,
 * bits 0-31 the line it was at (0: unknown). An event's Python frames are
 * interned above its C frames: from the event's stack id outwards, its
 * Python frames come first (innermost first), then its C frames.
 *
 * From version 11, an event with both C and Python frames has a graft
 * node: parent its C stack, ip MMS_PYGRAFT | the id of its Python frames,
 * which are interned on their own (rooted at 0), so that a Python context
 * is defined once whatever C stacks it meets. A reader walks a graft node
 * as the Python chain it names followed by its parent's C chain; the
 * frames it gives are those a version 10 stack gave. Code id
 * MMS_PYCODE_MAX is no code object's. */
#define MMS_PYFRAME (1ull << 63)
#define MMS_PYFRAME_ENTRY (1ull << 62)
#define MMS_PYCODE_MAX ((1u << 30) - 1)

static inline uint64_t mms_pyframe(uint32_t code, uint32_t line, int entry)
{
	return MMS_PYFRAME | (entry ? MMS_PYFRAME_ENTRY : 0) | (uint64_t)(code & MMS_PYCODE_MAX) << 32 | line;
}
#define MMS_PYGRAFT (MMS_PYFRAME | (uint64_t)MMS_PYCODE_MAX << 32)

static inline int mms_is_pyframe(uint64_t ip)
{
	return (ip & MMS_PYFRAME) != 0;
}
/* A graft node's ip (version 11): the stack id of its Python frames. */
static inline int mms_is_pygraft(uint64_t ip)
{
	return ip >> 32 == MMS_PYGRAFT >> 32;
}
static inline uint32_t mms_pyframe_code(uint64_t ip)
{
	return (uint32_t)(ip >> 32) & MMS_PYCODE_MAX;
}
static inline uint32_t mms_pyframe_line(uint64_t ip)
{
	return (uint32_t)ip;
}

/* META records the recorder writes besides exe, argv and config:
 *  - "freeres": u stamp. After every destructor, with no other thread
 *    left, the recorder had glibc and libstdc++ free their internal memory
 *    (as valgrind does at exit); the frees stamped from here on are theirs.
 *  - "runtime_live": (u enum mms_runtime_kind, u address) pairs: blocks
 *    live at exit that a runtime keeps by design (when freeres could not
 *    run, in exit or _exit: the buffers of stdin, stdout and stderr).
 *  - "freeres_skipped": u enum mms_freeres_why, u how many other threads
 *    ran (MMS_FREERES_THREADS; else 0): why freeres did not run at the end
 *    of exit (none of the two keys: the process did not end through exit,
 *    or an older recorder wrote the log).
 * Who keeps a block by design (ALLOC_RT records, "runtime_live"): the C
 * or C++ runtime, not the program. */
enum mms_runtime_kind {
	MMS_RT_C = 1,      /* glibc or ld.so (or the library of an allocator that
	                      replaces malloc), for itself, before main */
	MMS_RT_CXX = 2,    /* libstdc++ or libgcc, for itself, before main */
	MMS_RT_THREAD = 3, /* a thread's TLS vector, allocated in pthread_create */
	MMS_RT_STDIO = 4,  /* the buffer of stdin, stdout or stderr */
	/* 5 is no record's: readers call CPython's state at exit so. */
	MMS_RT_SELF = 6, /* msmemscope's own Python package, while it worked
	                      (msmemscope.torch's tagging: msmemscope__own()) */
	/* 7 is no record's: readers call PyTorch's cached CUDA memory so. */
	MMS_RT_LOADER = 8, /* ld.so, after start-up: the state of a library it
	                      loaded (dlopen: link map, scope and version data),
	                      its TLS blocks, a failed dlopen's message */
			   /* 9 is no record's: readers call perl's state at exit so. */
	MMS_RT_CUDA = 10,  /* (version 10) the CUDA driver (libcuda) called the
	                      allocator or mmap itself: its contexts, modules and
	                      streams, kept until the process ends */
	MMS_RT_PYIMPORT = 11, /* (version 11) allocated while the thread's CPython
	                         loaded a module (the msmemscope package's scope
	                         around importlib's loading: the module's top-level
	                         code, an extension module's initialisation): the
	                         program's during the run; live at exit, the
	                         module's state, which CPython keeps (readers call
	                         it CPython's then) */
};

/* The pools of PyTorch's CUDA caching allocator, as the recorder writes
 * its blocks (POOL_ALLOC and POOL_FREE records; hooks/torch.c): this
 * prefix, then the device's ordinal ("PyTorch cuda:0"). Readers call
 * those live at the end of a whole log PyTorch's (MMS_RUNTIME_TORCH_CUDA):
 * tensors the interpreter still held. */
#define MMS_TORCH_POOL "PyTorch cuda:"

/* Why freeres did not run (META "freeres_skipped"). */
enum mms_freeres_why {
	MMS_FREERES_OFF = 1,       /* freeres=0 (--no-freeres) */
	MMS_FREERES_THREADS = 2,   /* other threads were still running */
	MMS_FREERES_UNCOUNTED = 3, /* the threads could not be counted (no
	                              descriptor free for /proc, no /proc) */
	MMS_FREERES_EXIT = 4,      /* the process left with _exit, which runs no exit
	                              handler (from the recorder of 2026-12 on: an
	                              older reader ignores it) */
};

/* What a REACH_REGIONS range is (bits; none: anonymous memory). */
enum mms_reach_region {
	MMS_RGN_FILE = 1u << 0,  /* a file's private writable mapping: a module's data
	                            and .bss */
	MMS_RGN_SP = 1u << 1,    /* the exiting thread's stack, from its stack pointer */
	MMS_RGN_STACK = 1u << 2, /* the first thread's stack ([stack]) */
	MMS_RGN_HEAP = 1u << 3,  /* malloc's: the heap ([heap], grown by brk) */
	MMS_RGN_ARENA = 1u << 4, /* malloc's: one of glibc's other arenas' heaps; with
	                            MMS_RGN_FILE, the main arena's state in libc's data */
};

/* META "reach" (version 12), written after the scan's records: u status,
 * u pairs (words written), u REACH_REFS records, u REACH_REGIONS records,
 * u bytes read, u other threads running at the scan, u nanoseconds the
 * scan took; then (any version 12 log may have it; readers ignore fields
 * they do not know) u the stamp taken as the scan began: the heap
 * blocks allocated from then on, by threads still running, have no
 * verdict. */
enum mms_reach_scan {
	MMS_SCAN_DONE = 0,   /* every resident page of the ranges was read */
	MMS_SCAN_LIMIT = 1,  /* stopped at MMS_REACH_MAX_PAIRS words or
	                        MMS_REACH_MAX_BYTES read */
	MMS_SCAN_NOREAD = 2, /* the process could not read its own memory
	                        (process_vm_readv refused: a seccomp filter) */
	MMS_SCAN_RANGES = 3, /* more mappings than the scan keeps (65536): none read */
	MMS_SCAN_ALLOCATOR = 4, /* none read: malloc is a library's that replaces
	                           glibc's (jemalloc, tcmalloc), whose caches and
	                           metadata keep pointers to blocks, live or not */
};
#define MMS_REACH_MAX_PAIRS (16u << 20)
#define MMS_REACH_MAX_BYTES (4ull << 30) /* read at most, then MMS_SCAN_LIMIT */

enum mms_alloc_fn {
	MMS_ALLOC_MALLOC = 0,
	MMS_ALLOC_CALLOC = 1,
	MMS_ALLOC_REALLOC = 2,   /* the new block of a realloc or reallocarray */
	MMS_ALLOC_POSIX_MEMALIGN = 3,
	MMS_ALLOC_ALIGNED_ALLOC = 4,
	MMS_ALLOC_MEMALIGN = 5,
	MMS_ALLOC_VALLOC = 6,
	MMS_ALLOC_PVALLOC = 7,
	MMS_ALLOC_NEW = 8,       /* (version 16) C++ operator new, all its forms: ALLOC_CXX */
	MMS_ALLOC_NEW_ARRAY = 9, /* (version 16) operator new[], all its forms */
};

enum mms_free_fn {
	MMS_FREE_FREE = 0,
	MMS_FREE_REALLOC = 1,    /* the old block of a realloc that moved or shrank to 0 */
	MMS_FREE_DELETE = 2,     /* (version 16) C++ operator delete, all its forms */
	MMS_FREE_DELETE_ARRAY = 3, /* (version 16) operator delete[], all its forms */
};

enum mms_access_mode {
	MMS_ACCESS_UNKNOWN = 0,
	MMS_ACCESS_READ = 1,
	MMS_ACCESS_WRITE = 2,
};

/* The sub-code of MMS_TAG_WATCH. */
enum mms_watch_phase {
	MMS_WATCH_REGISTER = 0, /* msmemscope_watch(): daddr, u size, u name */
	/* (version 2) A watched block's checksum, CRC-64/XZ of its bytes
	 * (mms_crc64), taken on the thread that launches an operator: BEFORE
	 * just after its OP_BEGIN record, AFTER just before its OP_END.
	 * daddr, u size, u name, u output number (0 for an API watch), u launch
	 * (numbered from 1 over the process, as gdbif.h counts), u crc. */
	MMS_WATCH_BEFORE = 1,
	MMS_WATCH_AFTER = 2,
};

/* Watched blocks: names (operators, blocks) are kept to this many bytes
 * less one, and written in file names (watch_dump/) with what is not
 * [A-Za-z0-9._-] as '_'. */
#define MMS_WATCH_NAME_MAX 64

static inline char mms_file_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
			       c == '-'
		       ? c
		       : '_';
}

enum mms_system_phase {
	MMS_SYSTEM_INIT = 0,
	MMS_SYSTEM_FINI = 1,
	/* (version 3) The process is about to fork: u fork number (from 1 over
	 * the process). Written by the forking thread in its pthread_atfork
	 * prepare handler; the child's log names it (MMS_META_FORK_*). */
	MMS_SYSTEM_FORK = 2,
	/* (version 14) The Python package's sweep at exit began (3) or ended
	 * (4), on the thread that writes them: after the program's own exit
	 * handlers, CPython's method cache and PyTorch's cache of shared
	 * storages emptied and, where nothing of the program's can run after
	 * it, a garbage collection. What that thread frees in between, the
	 * program had let go of before exit. */
	MMS_SYSTEM_SWEEP_BEGIN = 3,
	MMS_SYSTEM_SWEEP_END = 4,
};

/* META keys of a fork child's log (version 3), written with its first
 * records: where its heap came from. Values are text; numbers decimal. */
#define MMS_META_PARENT_LOG "parent_log"   /* the parent's log, an absolute path */
#define MMS_META_PARENT_PID "parent_pid"
#define MMS_META_FORK_NUMBER "fork_number" /* the parent's FORK event: its number */
#define MMS_META_FORK_STAMP "fork_stamp"   /* and its stamp (absent: none written) */

/* META key (any version): the file that defines malloc ahead of the
 * recorder in the process's global scope (an allocator linked into the
 * program itself): its malloc family's calls never reach the hooks. An
 * absolute path; absent when the recorder's malloc is the one called. */
#define MMS_META_OWN_MALLOC "own_malloc"

/* META keys (format 16): the file that defines a C++ allocation operator
 * ahead of the recorder (the program's own operator new or delete) and
 * the first such operator, as C++ names it. The C++ operators are then
 * recorded as the malloc and free they call: the log tells no mismatched
 * free. Absent when every operator called is the recorder's. */
#define MMS_META_OWN_CXX "own_cxx"
#define MMS_META_OWN_CXX_OP "own_cxx_op"

/* The largest record the writer emits: a tag, 8 varints and two strings. */
#define MMS_MAX_RECORD (1 + 8 * 10 + 2 * (10 + MMS_MAX_STRING))
/* The largest event record: a tag and 7 varints. The writer moves a thread
 * to a new chunk when the next record does not fit, so a chunk with fewer
 * bytes left than this is full (a long metadata record may leave more). */
#define MMS_MAX_EVENT_RECORD (1 + 7 * 10)

/* --- varint codec ------------------------------------------------------ */

static inline uint8_t *mms_put_u(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint64_t mms_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t mms_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline uint8_t *mms_put_s(uint8_t *p, const void *s, size_t len)
{
	if (len > MMS_MAX_STRING)
		len = MMS_MAX_STRING;
	p = mms_put_u(p, len);
	memcpy(p, s, len);
	return p + len;
}

/* Decodes one unsigned varint at *p, not reading at or past end. Returns 0
 * and advances *p, or -1 (leaving *p) when the varint is cut by end or
 * does not fit 64 bits (corrupt). */
static inline int mms_get_u(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	const uint8_t *q = *p;
	uint64_t v = 0;
	unsigned shift = 0;

	/* Most fields are deltas and sizes below 128: one byte. */
	if (q < end && *q < 0x80) {
		*out = *q;
		*p = q + 1;
		return 0;
	}
	while (q < end && shift < 64) {
		uint8_t b = *q++;
		if (shift == 63 && b > 1)
			return -1; /* more than 64 bits */
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*p = q;
			*out = v;
			return 0;
		}
		shift += 7;
	}
	return -1;
}

/* Decodes a string field: points *s at its bytes (not NUL-terminated) and
 * *len at its length, and advances *p. Returns 0, or -1 (leaving *p) when
 * it runs past end or is longer than MMS_MAX_STRING. */
static inline int mms_get_s(const uint8_t **p, const uint8_t *end, const char **s, uint64_t *len)
{
	const uint8_t *q = *p;
	uint64_t n;

	if (mms_get_u(&q, end, &n) || n > MMS_MAX_STRING || n > (uint64_t)(end - q))
		return -1;
	*s = (const char *)q;
	*len = n;
	*p = q + n;
	return 0;
}

/* --- CRC-64/XZ ------------------------------------------------------------
 * The checksum of watched blocks: CRC-64/XZ (also called CRC-64/GO-ECMA):
 * polynomial 0x42F0E1EBA9EA3693 reflected (0xC96C5795D7870F42), initial
 * value and final XOR all ones; "123456789" gives 0x995DC9BBDF1939FA, as
 * `xz --check=crc64` computes it. Slicing by 8: table[k][b] is the CRC of
 * byte b followed by k zero bytes. */

static inline void mms_crc64_table(uint64_t table[8][256])
{
	for (unsigned b = 0; b < 256; b++) {
		uint64_t c = b;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xC96C5795D7870F42ull : c >> 1;
		table[0][b] = c;
	}
	for (unsigned b = 0; b < 256; b++)
		for (int k = 1; k < 8; k++)
			table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xff];
}

/* Continues a CRC: start with crc = 0 (mms_crc64 applies the ones). */
static inline uint64_t mms_crc64(const uint64_t table[8][256], uint64_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;

	crc = ~crc;
	for (; len && ((uintptr_t)p & 7); len--)
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		w ^= crc; /* little-endian */
		crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
		      table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
		      table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
	}
	for (; len; len--)
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#endif /* MMS_FORMAT_H */
