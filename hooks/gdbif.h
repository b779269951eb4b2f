/* SPDX-License-Identifier: MIT */
/* gdbif.h: the descriptor gdb and the preloaded hooks share, in the manner
 * of gdb's JIT interface: gdb writes what to watch and where to stop into
 * the program's memory; the hooks do the checking on their hot path, in
 * the program, and call msmemscope_gdb_stopped() (an empty function gdb
 * keeps a breakpoint on) only when gdb must stop. gdb never calls a
 * function of the program.
 *
 * The layout is fixed (explicit widths, no implicit padding) because gdb
 * reads it by offset: the installed hooks carry no debug information. The
 * Python side (gdb/memscope.py) mirrors it; change both together and bump
 * MMS_GDB_VERSION. */
#ifndef MMS_GDBIF_H
#define MMS_GDBIF_H

#include <stdint.h>

#define MMS_GDB_VERSION 4
#define MMS_GDB_WATCH_MAX 8
#define MMS_GDB_NAME_MAX 128

/* Why the hooks called msmemscope_gdb_stopped(). */
enum mms_gdb_reason {
	MMS_GDB_NONE = 0,
	MMS_GDB_WATCH = 1, /* a watched block changed; see hit_watch */
	MMS_GDB_OP = 2,    /* an operator named in break_op began */
	MMS_GDB_STEP = 3,  /* step break_step (or a later one) began */
	MMS_GDB_FREED = 4, /* the block of watch hit_watch is being freed or
	                      unmapped (free, realloc, munmap, mremap, before
	                      the call): the hooks compare it no more */
	MMS_GDB_GUARD = 5, /* guard mode found damage (a GUARD finding, in the
	                      log before the call); hit_watch is the finding's
	                      kind (enum mms_guard_kind). Called at every
	                      finding, whether gdb is there or not: findings
	                      are rare, and gdb decides whether to stop */
	MMS_GDB_OP_END = 6, /* launch break_end ends (at its msmemscope_op_end,
	                       after the watches were compared) */
};

/* One watched block. gdb writes addr, size and bumps generation to arm
 * (or re-arm) the slot; size 0 frees it. The hooks take a snapshot when
 * they see a new generation (or another addr or size) at a launch
 * boundary, without stopping; then they compare at every operator launch
 * boundary (op_begin and op_end), and on a change copy the old bytes to
 * `previous` and the new ones to `snapshot` before stopping. A block the
 * hooks cannot read when they take the first snapshot is left with
 * seen == generation and snapshot == previous == 0, and skipped until
 * gdb arms the slot again. */
struct mms_gdb_watch {
	uint64_t addr;           /* gdb */
	uint64_t size;           /* gdb; 0 = slot unused */
	uint64_t generation;     /* gdb: bumped to (re)arm */
	uint64_t seen;           /* hooks: the generation snapshotted */
	uint64_t snapshot;       /* hooks: address of the last bytes seen */
	uint64_t previous;       /* hooks: address of the bytes before the change */
	uint64_t capacity;       /* hooks: bytes allocated at snapshot/previous */
	uint64_t changes;        /* hooks: changes seen so far */
	uint64_t tracked;        /* hooks: bytes of the block in pages the kernel
	                            tracks (hooks/dirty.c), compared only when
	                            written; 0 = every byte compared at every
	                            boundary (version 4) */
};

struct msmemscope_gdb {
	uint32_t version;        /* MMS_GDB_VERSION, set by the hooks at start */
	uint32_t armed;          /* gdb: non-zero when any watch or break is set,
	                            so the hot path tests one word */
	struct mms_gdb_watch watch[MMS_GDB_WATCH_MAX];
	char break_op[MMS_GDB_NAME_MAX]; /* gdb: stop when an operator of one
	                                    of these names begins: names each
	                                    ended by a NUL, the list by an
	                                    empty name ("" = none); version 1
	                                    held one name */
	uint64_t break_step;     /* gdb: stop when this step or a later one
	                            begins (0 = none); gdb writes the next
	                            one it wants at each such stop */
	uint64_t break_end;      /* gdb: stop when the launch so numbered ends
	                            (0 = none; version 3) */

	/* Filled by the hooks before each call to msmemscope_gdb_stopped(). */
	uint32_t reason;         /* enum mms_gdb_reason */
	uint32_t hit_watch;      /* the slot that changed */
	uint64_t op_launch;      /* the launch that changed it (or began), from 1;
	                            0 = the change happened outside any launch */
	char op_name[MMS_GDB_NAME_MAX]; /* its operator's name; for op_launch 0,
	                            the last operator that ended on the thread
	                            ("" if none) */
	uint64_t step;           /* the step then, numbered as replay does (0
	                            between "step start" ranges) */
	uint64_t tid;            /* the thread that found it */

	/* Kept current by the hooks. */
	uint64_t launches;       /* operator launches so far (all threads) */
	char log_path[4096];     /* this process's log (absolute) */
};

#endif /* MMS_GDBIF_H */
