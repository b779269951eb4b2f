/* SPDX-License-Identifier: MIT */
/* hooks-int.h: what the recorder's modules share: the real allocator
 * functions, per-thread state, the configuration and each module's entry
 * points. Two concerns have headers of their own: stamp.h (the order
 * stamps) and log.h (the log file and the record writer); unwind.h is the
 * unwinders' interface. */
#ifndef MMS_HOOKS_INT_H
#define MMS_HOOKS_INT_H

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "format.h"
#include "gdbif.h"
#include "msmemscope/config.h"

#define MMS_HIDDEN __attribute__((visibility("hidden")))
#define MMS_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define MMS_MAX_DEPTH 1000 /* the largest call_stack of the configuration (common/conf.c) */
/* The room of a capture's frames: the deepest stack, and the recorder's
 * own frames above it. */
#define MMS_FRAMES_ROOM (MMS_MAX_DEPTH + 8)

/* The functions the hooks forward to, found with dlsym(RTLD_NEXT). */
struct mms_real {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	int (*mprotect)(void *, size_t, int);
	int (*pkey_mprotect)(void *, size_t, int, int);
	int (*madvise)(void *, size_t, int);
	int (*mlockall)(int);
	int (*munlockall)(void);
	int (*prctl)(int, unsigned long, unsigned long, unsigned long, unsigned long);
	void *(*mremap)(void *, size_t, size_t, int, ...);
	void *(*dlopen)(const char *, int);
	int (*dlclose)(void *);
	int (*pthread_setname_np)(pthread_t, const char *);
	int (*pthread_getattr_np)(pthread_t, pthread_attr_t *);
	/* glibc's __register_atfork (process.c) */
	int (*register_atfork)(void (*)(void), void (*)(void), void (*)(void), void *);
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	int (*unshare)(int);
	int (*setns)(int, int);
	int (*clock_gettime)(clockid_t, struct timespec *); /* libc's, not a program's own */
};
extern struct mms_real mms__real MMS_HIDDEN;

/* madvise() for the recorder's own memory: the hook (mapping.c) would spare
 * it. */
static inline int mms__advise(void *p, size_t len, int advice)
{
	return mms__real.madvise ? mms__real.madvise(p, len, advice) : (int)syscall(SYS_madvise, p, len, advice);
}

/* One recording thread. Lives in memory of our own (never the program's
 * heap), reached through a thread-local pointer. */
struct mms_thread {
	uint32_t index;          /* thread index in the log */
	pid_t tid;
	struct mms_chunk_header *chunk;
	uint8_t *cur, *end;      /* write position and end of the current chunk */
	uint64_t prev_stamp;     /* delta bases of the current segment */
	uint64_t prev_addr;
	struct mms_thread *next_free;
	/* The registry's list of the threads that have not exited
	 * (threads.c), for the scan at exit (reach.c). */
	struct mms_thread *live_next, **live_pprev;
	/* The thread's stack, found at its registration (mms__stack_note();
	 * bounds_hi 0: not known): the scan at exit reads another thread's
	 * from its stack pointer (reach.c). */
	uintptr_t bounds_lo, bounds_hi;
	/* The last captured stack (innermost first) and its interned node ids,
	 * so a new stack that shares outer frames re-interns only the rest. */
	uint32_t nframes;
	uint32_t stack_id;
	uintptr_t *ips;          /* MMS_MAX_DEPTH + 1 entries */
	uint32_t *ids;
	/* A capture's frames, MMS_FRAMES_ROOM entries: here, not on the
	 * stack of the thread, which may be as small as PTHREAD_STACK_MIN
	 * (16 KiB) and the program's. */
	uintptr_t *frames;
	/* A name built from the program's text (NVTX's wide strings, a
	 * domain's prefix): MMS_MAX_STRING + 1 bytes, here for the same
	 * reason. */
	char *name_room;
	/* The id the last capture returned: stack_id with the thread's
	 * Python frames above it (python_stack). */
	uint32_t last_stack;
	/* During a capture: the hook's caller is the dynamic loader, which
	 * may hold its lock of the module list (dlclose freeing a link map):
	 * libunwind, which takes a lock of its own around dl_iterate_phdr,
	 * is not called then (unwind.c). */
	int loader_call;
	/* During a capture: the hook is the mmap family's, which a program's
	 * own allocator calls holding its lock: nothing of ours may allocate
	 * with the program's malloc then (unwind.c's stack bounds). */
	int alloc_barred;
	/* Guard mode's hooks: the return address of the hooked call, in its
	 * caller (their captures start in guard.c's frames); 0: the capture
	 * reads it above the hook's frame. */
	uintptr_t hook_ra;
	/* The stack walker's: this thread's stack, found at its first capture
	 * (stack_hi 0: not yet), and its own memory (unwind-walker.c): the cache of
	 * frame rules and the last walk. */
	uintptr_t stack_lo, stack_hi;
	struct mms_unw *unw;
};

/* The recording configuration (msmemscope/config.h), read from the
 * environment at start-up (hooks.c) and fixed from then on. */
extern mms_config_t mms__config MMS_HIDDEN;

/* Nonzero while events are recorded; cleared when the log is cut, when a
 * deferred collection is stopped, or outside the selected steps. */
extern volatile int mms__recording MMS_HIDDEN;
/* Set once the log is open; never cleared except in a fork child. */
extern volatile int mms__active MMS_HIDDEN;
/* Nonzero while memory events are collected: off in a deferred collection
 * before msmemscope_start() and outside the steps of --steps. */
extern volatile int mms__collecting MMS_HIDDEN;

extern __thread struct mms_thread *mms__tls_thread MMS_HIDDEN;
/* Why this thread's allocations take the slow path: it collects an
 * operator's outputs (watch.c), or is in a runtime's scope (runtime.c).
 * One word, so that the hot path tests one load. */
union mms_tls_alloc {
	uint32_t any;
	struct {
		uint16_t watch_collect;
		uint16_t runtime;
	} s;
};
extern __thread union mms_tls_alloc mms__tls_alloc MMS_HIDDEN;
#define mms__tls_watch_collect (mms__tls_alloc.s.watch_collect)
#define mms__tls_runtime (mms__tls_alloc.s.runtime)
extern __thread int mms__tls_busy MMS_HIDDEN;
/* The C++ operator this thread is in (newdelete.c), for the malloc
 * family's hooks (hooks-rec.h: cxx_alloc_fn, cxx_free_fn), which tell
 * the block the operator's runtime allocates or frees for it from the
 * program's own calls: fn MMS_ALLOC_NEW or MMS_ALLOC_NEW_ARRAY with arg
 * the bytes asked for (at least 1) and align the alignment (0: the
 * operator's own); MMS_FREE_DELETE or MMS_FREE_DELETE_ARRAY with arg the
 * address released; 0: none. Set only while the thread records. */
struct mms_tls_cxx {
	uintptr_t arg;
	size_t align;
	unsigned fn;
};
extern __thread struct mms_tls_cxx mms__tls_cxx MMS_HIDDEN;
/* Nonzero while the thread is inside pthread_getattr_np() (unwind.c). */
extern __thread int mms__tls_getattr MMS_HIDDEN;

/* intern.c */
int mms__intern_init(void) MMS_HIDDEN;
/* Returns the string id of s (defining it in the log on first use), 0 for
 * NULL or when the table is full. */
uint32_t mms__intern_string(struct mms_thread *t, const char *s) MMS_HIDDEN;
/* Returns the node id of (parent, ip), defining it on first use. */
uint32_t mms__intern_frame(struct mms_thread *t, uint32_t parent, uintptr_t ip) MMS_HIDDEN;

/* unwind.c: the stack unwinders (unwind.h). */
/* Captures the caller's stack (up to mms__config.call_stack frames, which must
 * not be 0) and returns its interned id. fp is a frame of ours on this
 * stack (__builtin_frame_address(0) of a hook, say): the walk follows our
 * frame pointers from there to the program's innermost frame, so a hook
 * that passes its own frame saves the walk through those in between. */
uint32_t mms__capture_stack_slow(struct mms_thread *t, uintptr_t fp) MMS_HIDDEN;
/* unwind.c: whether the first frame past the C library of the call whose
 * hook's frame is fp is in the CUDA driver (strdup, regcomp called by the
 * driver): a short walk by the walker, for events that carry no stack;
 * 0 when the walker cannot tell. */
int mms__driver_through_libc(struct mms_thread *t, uintptr_t fp) MMS_HIDDEN;

/* Nonzero when events carry stacks: C frames (call_stack), Python frames
 * (python_stack) or both. Set at start-up. */
extern uint32_t mms__stacks_on MMS_HIDDEN;
/* Nonzero when frees carry theirs too (stacks on, free_stack not 0). */
extern uint32_t mms__free_stacks_on MMS_HIDDEN;

/* The stack id of the program's call that entered the recorder at or
 * below frame fp; 0 when stacks are off. */
static inline uint32_t mms__capture_stack_at(struct mms_thread *t, uintptr_t fp)
{
	return mms__stacks_on ? mms__capture_stack_slow(t, fp) : 0;
}

#define mms__capture_stack(t) mms__capture_stack_at((t), (uintptr_t)__builtin_frame_address(0))
/* Chooses the unwinder (once, at start-up) and starts it. */
void mms__unwind_init(void) MMS_HIDDEN;
/* At exit: what the unwinder has to say (the check mode's counts). */
void mms__unwind_report(void) MMS_HIDDEN;
void mms__unwind_after_fork_child(void) MMS_HIDDEN;
/* unwind-libunwind.c: 1 when ip lies in libunwind's code (its own
 * mappings are not the program's). */
int mms__unwinder_code(uintptr_t ip) MMS_HIDDEN;
/* libunwind's pipe was taken over by the program: never call it again. */
void mms__unwind_lost_fd(void) MMS_HIDDEN;

/* pystack.c: Python frames (python_stack=N), kept by the msmemscope
 * package's profile hook (see there). */
extern uint32_t mms__py_depth MMS_HIDDEN; /* python_stack once set up, 0: off */
/* Reads python_stack; sets mms__py_depth, mms__stacks_on and
 * mms__free_stacks_on. */
void mms__pystack_init(void) MMS_HIDDEN;
void mms__pystack_after_fork_child(void) MMS_HIDDEN;
/* The thread is leaving: its shadow stack goes back to the arena. */
void mms__pystack_thread_exit(void) MMS_HIDDEN;
/* The thread's innermost Python frames (up to python_stack) interned
 * above the C stack base: returns their innermost node, or base when the
 * thread runs no Python code. Never allocates, takes no lock. */
uint32_t mms__pystack_capture(struct mms_thread *t, uint32_t base) MMS_HIDDEN;
/* The package's entry points (found with dlsym, no header of theirs is
 * installed; pystack.c says what each does). */
MMS_EXPORT uint32_t msmemscope__py_setup(int (*line)(const void *frame), int (*lasti)(const void *frame),
					 int (*on_thread)(void));
MMS_EXPORT int msmemscope__py_push(const void *frame, const void *code, uintptr_t sp);
MMS_EXPORT void msmemscope__py_pop(const void *frame);
MMS_EXPORT void msmemscope__py_reset(void);
MMS_EXPORT uint32_t msmemscope__py_code(const void *code, const char *file, const char *name, int firstline);
struct mms_pyraw;
struct mms_pycode_desc;
MMS_EXPORT uint32_t msmemscope__py_walker(unsigned (*walk)(struct mms_pyraw *out, unsigned max),
					  int (*describe)(const void *code, struct mms_pycode_desc *d),
					  int (*line)(const void *code, int lasti));

/* cfi.c: frame rules from the DWARF call frame information (.eh_frame). */
struct mms_cfi_rule {
	int32_t cfa_off;         /* CFA = rsp (or rbp) + cfa_off */
	int16_t rbp_off;         /* with MMS_CFI_RBP_SAVED: caller's rbp at CFA + rbp_off */
	uint8_t flags;
	uint8_t pad;
};
#define MMS_CFI_CFA_RBP 0x01     /* the CFA is rbp + cfa_off, else rsp + cfa_off */
#define MMS_CFI_RBP_SAVED 0x02   /* the caller's rbp is saved at CFA + rbp_off */
#define MMS_CFI_RBP_UNDEF 0x04   /* the caller's rbp is lost */
#define MMS_CFI_LAST 0x08        /* no return address: the outermost frame */
#define MMS_CFI_UNSUPPORTED 0x10 /* not a frame the walker can step */
/* Bumped whenever a module was unloaded: frame rules cached before may be
 * stale. */
extern uint32_t mms__cfi_gen MMS_HIDDEN;
/* The rule of the frame whose return address is ra (looked up at ra - 1).
 * Returns 0; or -EAGAIN when another thread holds the module table (try
 * again later, do not cache), or another negative errno value when the
 * frame is not one the walker handles (*out is then MMS_CFI_UNSUPPORTED,
 * which may be cached). Never allocates. */
int mms__cfi_rule(uintptr_t ra, struct mms_cfi_rule *out) MMS_HIDDEN;
/* The loader's counts of objects added and removed, as a scan saw them. */
void mms__cfi_note_loader(unsigned long long adds, unsigned long long subs) MMS_HIDDEN;
/* A module may have been unloaded (after dlclose). */
void mms__cfi_modules_changed(void) MMS_HIDDEN;
void mms__cfi_after_fork_child(void) MMS_HIDDEN;

/* api.c: deferred collection and step filtering */
int mms__api_init(void) MMS_HIDDEN;
void mms__steps_update(void) MMS_HIDDEN;
/* In a fork child's log, at its start: where collection is off or on
 * (the program's msmemscope_start/stop, the --steps filter), which a
 * replay cannot tell from the configuration as it does at a program's
 * start. */
void mms__api_collect_note(struct mms_thread *t) MMS_HIDDEN;
/* The step now, as replay numbers it: 0 between "step start" ranges. */
uint32_t mms__step_now(void) MMS_HIDDEN;
/* Exported for msmemscope._torchops, not in msmemscope.h: the end of a
 * PyTorch optimizer step, a step inferred while the program marks none. */
void msmemscope__optimizer_step(void);
/* For the msmemscope package: the optimizer (its number) whose step ends
 * next on this thread. */
void msmemscope__optimizer_key(uint64_t key);
/* For the msmemscope package: its sweep at exit begins (end 0) or ends
 * (end 1) on this thread. */
void msmemscope__exit_sweep(uint64_t end);
/* The instrumentation API's events, for callers that hold the reentrancy
 * guard (mms__tls_busy) already: nvtx.c. Each records what its
 * msmemscope_* function records (msmemscope.h); range_start returns the
 * range's id, also when nothing is recorded. thread_name names the
 * calling thread, when tid is 0 or its own. */
void mms__api_op_begin(const char *name) MMS_HIDDEN;
void mms__api_op_end(void) MMS_HIDDEN;
void mms__api_mark(const char *name) MMS_HIDDEN;
uint64_t mms__api_range_start(const char *name) MMS_HIDDEN;
void mms__api_range_end(uint64_t id) MMS_HIDDEN;
void mms__api_thread_name(pid_t tid, const char *name) MMS_HIDDEN;
/* A kernel launch named name, recorded as msmemscope_kernel_launch()
 * records it. Outside the guard. */
void mms__api_kernel(const char *name) MMS_HIDDEN;
/* A CUDA kernel's launch on device (cuda.c). */
void mms__api_kernel_dev(const char *name, unsigned device) MMS_HIDDEN;
/* Takes the reentrancy guard and returns the calling thread when events
 * are recorded now; NULL (guard not taken) when not, or when the thread
 * is inside the recorder already. mms__api_leave() gives it back. */
struct mms_thread *mms__api_enter(void) MMS_HIDDEN;
void mms__api_leave(void) MMS_HIDDEN;

/* cuda.c: CUDA device memory and kernel launches at the driver's entry
 * points (see there). */
void mms__cuda_init(void) MMS_HIDDEN;
/* dlsym.c sends here the lookups of names beginning with "cu" in a real
 * handle: the real dlsym()'s answer, or our wrapper of it. */
void *mms__cuda_dlsym(void *handle, const char *name) MMS_HIDDEN;
/* Whether name is one of the entry points mms__cuda_dlsym() wraps (no
 * side effect: dlsym.c asks before it gives up the caller's place). */
int mms__cuda_wants(const char *name) MMS_HIDDEN;
/* Whether device's memory is recorded (the launcher's --device). */
int mms__cuda_device_wanted(unsigned device) MMS_HIDDEN;
/* The driver's entry points a program linked against libcuda calls
 * through its GOT (redirect.c): how many, the exported name of each (i
 * from 0), and the recorder's function for export i, libcuda's
 * definition at real (NULL when export i is bound to another definition
 * already). */
/* cuda-array.c: the bytes of a CUDA array of width x height x depth
 * elements (height and depth 0 count as 1) of format (CUarray_format) and
 * channels, with CUDA_ARRAY3D_* flags, over levels (0 counts as 1) of a
 * mipmapped array; 0 for a format not known. */
uint64_t mms__cuda_array_bytes(uint64_t width, uint64_t height, uint64_t depth, int format, unsigned channels,
			       unsigned flags, unsigned levels) MMS_HIDDEN;
int mms__cuda_export_count(void) MMS_HIDDEN;
const char *mms__cuda_export_name(int i) MMS_HIDDEN;
void *mms__cuda_export_wrapper(int i, void *real) MMS_HIDDEN;

/* vmm.c: the tables of CUDA virtual memory (see there). Every call but
 * the lock's own is made under mms__vmm_lock(). */
/* A live mapping (addr, size: its range) on device, mapped with stack; in
 * the table of handles, addr is the handle and size unused. */
struct mms_vmm_map {
	uint64_t addr, size;
	uint32_t device, stack;
};
void mms__vmm_lock(void) MMS_HIDDEN;
void mms__vmm_unlock(void) MMS_HIDDEN;
/* Remembers that handle's memory is on device: 0, or -1 without memory. */
int mms__vmm_handle_put(uint64_t handle, unsigned device) MMS_HIDDEN;
/* 1 with *device when handle is known, else 0. */
int mms__vmm_handle_device(uint64_t handle, unsigned *device) MMS_HIDDEN;
void mms__vmm_handle_drop(uint64_t handle) MMS_HIDDEN;
/* Pinned host blocks (cuMemAllocHost, cuMemHostAlloc), so that their free
 * drops a watch on them: put remembers addr's size (0, or -1 without
 * memory); take forgets it and returns it (0: unknown). */
int mms__vmm_pinned_put(uint64_t addr, uint64_t size) MMS_HIDDEN;
uint64_t mms__vmm_pinned_take(uint64_t addr) MMS_HIDDEN;
/* Adds a mapping: 0, or -1 without memory (it is then not known). */
int mms__vmm_map_add(const struct mms_vmm_map *m) MMS_HIDDEN;
/* The number of mappings that meet [lo, hi), in address order from
 * *first; valid until the table changes. */
size_t mms__vmm_find(uint64_t lo, uint64_t hi, const struct mms_vmm_map **first) MMS_HIDDEN;
/* Forgets the mappings that meet [lo, hi), unmapped, and keeps their parts
 * outside it: returns how many such pieces (0 to 2), now mappings of
 * their own, are in pieces. */
size_t mms__vmm_cut(uint64_t lo, uint64_t hi, struct mms_vmm_map pieces[2]) MMS_HIDDEN;

/* gdbif.c: the gdb interface (gdbif.h). The op and step functions are
 * called inside the reentrancy guard, whether the event is recorded or
 * not. */
extern struct msmemscope_gdb msmemscope_gdb MMS_EXPORT;
MMS_EXPORT void msmemscope_gdb_stopped(void);
void mms__gdb_init(void) MMS_HIDDEN;
void mms__gdb_set_log(const char *path) MMS_HIDDEN;
void mms__gdb_after_fork_child(void) MMS_HIDDEN;
void mms__gdb_op_begin(const char *name) MMS_HIDDEN;
void mms__gdb_release_slow(uintptr_t lo, uintptr_t hi) MMS_HIDDEN;

/* Before memory is released (hi 0: lo is a malloc'd block): one load while
 * gdb has armed nothing. */
static inline void mms__gdb_release(uintptr_t lo, uintptr_t hi)
{
	if (unlikely(__atomic_load_n(&msmemscope_gdb.armed, __ATOMIC_RELAXED)))
		mms__gdb_release_slow(lo, hi);
}
void mms__gdb_op_end(void) MMS_HIDDEN;
/* Guard mode wrote a finding of kind (enum mms_guard_kind): gdb may stop. */
void mms__gdb_guard_found(unsigned kind) MMS_HIDDEN;
/* The innermost launch open on this thread: returns 1 and sets its number
 * and name, or returns 0 when none is open. */
int mms__gdb_current(uint64_t *launch, const char **name) MMS_HIDDEN;
/* Step `step` has just begun (msmemscope_step or a "step start" range). */
void mms__gdb_step_begins(uint32_t step) MMS_HIDDEN;

/* dirty.c: the pages of a range the program wrote since the last look,
 * from the kernel (see there). */
#define DIRTY_MIN_PAGES 8 /* fewer whole pages: comparing them is cheaper */
#define DIRTY_RUNS 8      /* runs of written pages a look lists */
/* A range with pages written at more than one look in DIRTY_SHARE, over
 * DIRTY_SPAN looks, is read instead (the faults cost more). */
#define DIRTY_SPAN 64
#define DIRTY_SHARE 8
struct mms_dirty {
	uintptr_t lo, hi; /* the pages tracked; hi 0: none */
	unsigned epoch;
	int alone;       /* the process had one thread when tracking began */
	uint64_t looked; /* TSC at the last look, made or skipped */
	uint64_t made;   /* TSC at the last look made */
};
/* Set by pthread_create when the program calls it: it may have other
 * threads. */
extern uint32_t mms__threads_made MMS_HIDDEN;
/* A run of written pages [start, end): the kernel's struct page_region. */
struct mms_dirty_run {
	uint64_t start, end, categories;
};
/* Starts tracking the pages [addr, addr + size) touches that lie in the
 * program's private memory (the largest contiguous such part; the first
 * and last pages may hold other data too): returns 0 with d->lo, d->hi
 * set, or -1 when nothing is tracked (too small, not that kind of memory,
 * or the kernel cannot). errno is kept. */
int mms__dirty_track(struct mms_dirty *d, uintptr_t addr, size_t size) MMS_HIDDEN;
/* The runs of pages written since tracking began or the last scan, into
 * runs[0..max), and protects them again. Returns their number; -2 when
 * there were more than max (some stay marked: compare all this time); -1
 * when tracking was lost (d is untracked: compare all from now). */
int mms__dirty_scan(struct mms_dirty *d, struct mms_dirty_run *runs, unsigned max) MMS_HIDDEN;
/* Tracks only the pages [lo, hi) of those tracked now (untracks d when
 * that is not a part of them). */
void mms__dirty_shrink(struct mms_dirty *d, uintptr_t lo, uintptr_t hi) MMS_HIDDEN;
/* Stops tracking d (nothing when it is not tracked). */
void mms__dirty_untrack(struct mms_dirty *d) MMS_HIDDEN;
void mms__dirty_after_fork_child(void) MMS_HIDDEN;

/* watch.c: --watch and msmemscope_watch() (see there). The op functions
 * are called inside the reentrancy guard, t NULL when nothing is
 * recorded: op_begin after the OP_BEGIN record and mms__gdb_op_begin(),
 * op_end before the OP_END record and mms__gdb_op_end(). */
extern uint32_t mms__watch_live MMS_HIDDEN;
void mms__watch_init(void) MMS_HIDDEN;
void mms__watch_set_log(const char *abs_path) MMS_HIDDEN;
void mms__watch_op_begin(struct mms_thread *t, const char *name) MMS_HIDDEN;
void mms__watch_op_end(struct mms_thread *t) MMS_HIDDEN;
void mms__watch_note(uint64_t addr, uint64_t size) MMS_HIDDEN;
void mms__watch_api(const void *ptr, size_t size, const char *name) MMS_HIDDEN;
void mms__watch_release_slow(uintptr_t lo, uintptr_t hi) MMS_HIDDEN;
/* msmemscope_watch() of a range that cannot be read: says so once. */
void mms__watch_unreadable(const void *ptr, size_t size, const char *name) MMS_HIDDEN;
void mms__watch_after_fork_child(void) MMS_HIDDEN;

/* Before memory [lo, hi) is released (hi 0: lo is a malloc'd block): the
 * gdb watches and the watched set drop what lies in it. */
static inline void mms__release_watched(uintptr_t lo, uintptr_t hi)
{
	mms__gdb_release(lo, hi);
	if (unlikely(__atomic_load_n(&mms__watch_live, __ATOMIC_RELAXED) | (uint32_t)mms__tls_watch_collect))
		mms__watch_release_slow(lo, hi);
}

/* peek.c */
/* Copies size bytes at addr into dst without faulting. Returns 0; -1 when
 * the range is not readable; -2 when this cannot be told (the kernel
 * refuses process_vm_readv): the caller decides whether to trust addr. */
int mms__peek(void *dst, uintptr_t addr, size_t size) MMS_HIDDEN;
/* Whether every byte of [addr, addr + size) can be read, without reading
 * more than a byte a page: 0 yes (also for size 0); -1 no (or the range
 * wraps around); -2 cannot be told (as mms__peek). */
int mms__readable(uintptr_t addr, size_t size) MMS_HIDDEN;
/* The end of the program's live heap block at p, from its allocator's
 * header read with mms__peek (never from malloc_usable_size(), which
 * trusts p): 0 when p cannot be a block, which a free of p then does not
 * release any watched byte of. Not exact for another allocator than
 * glibc's: p + 1 (only what starts at p is in the block). */
uintptr_t mms__block_end(uintptr_t p) MMS_HIDDEN;

/* quiet.c: the recorder's writes and file growth raise no SIGPIPE or
 * SIGXFSZ in the program (see there). Between begin and end, both are
 * blocked in the calling thread; end takes back what became pending. */
struct mms_quiet {
	sigset_t old, before;
};
void mms__quiet_begin(struct mms_quiet *q) MMS_HIDDEN;
void mms__quiet_end(struct mms_quiet *q) MMS_HIDDEN;
/* Writes buf's n bytes (at most cap - 1: snprintf's result) to stderr,
 * quietly; n <= 0 writes nothing. */
void mms__say(const char *buf, int n, size_t cap) MMS_HIDDEN;
/* Notes which file stderr is, at start-up: mms__say writes only to it. */
void mms__say_init(void) MMS_HIDDEN;
/* The process's file size limit (RLIMIT_FSIZE's soft value), or
 * UINT64_MAX for none: the recorder grows no file past it. */
uint64_t mms__fsize_limit(void) MMS_HIDDEN;
/* Whether the process's address space is limited (RLIMIT_AS). */
int mms__as_limited(void) MMS_HIDDEN;

/* fds.c: the recorder's own descriptors (see there). */
void mms__fds_init(void) MMS_HIDDEN;
void mms__fds_after_fork_child(void) MMS_HIDDEN;
/* Moves fd to the top of the descriptor range and makes it the recorder's:
 * hidden from the program's close, dup and fcntl. slot (NULL: the number
 * cannot move) is where the caller keeps the number, lock what it holds
 * around each use: a dup2 onto the number moves the descriptor, updating
 * *slot under *lock. Returns the new number, or a negative errno value
 * (fd is closed either way). */
int mms__fd_adopt(int fd, int *slot, pthread_mutex_t *lock) MMS_HIDDEN;
/* open(path, flags, mode), and where every number below the soft limit is
 * the program's (EMFILE), once more with the soft limit lifted for the
 * call when the hard limit allows (a fork child of a program at its
 * limit still gets its log). The number is then above the program's. */
int mms__open_lifted(const char *path, int flags, mode_t mode) MMS_HIDDEN;
/* True while fd is still the file mms__fd_adopt() took; once it is not
 * (the program closed it with a raw system call), the number is the
 * program's: it is forgotten, and 0 returned from then on. */
int mms__fd_still_ours(int fd) MMS_HIDDEN;
/* True while libunwind's descriptors are still its own. */
int mms__fds_unwinder_ok(void) MMS_HIDDEN;
/* Gives fd up, closing it if it is still our file. */
void mms__fd_release(int fd) MMS_HIDDEN;
int mms__fd_is_own(int fd) MMS_HIDDEN;
/* After a call of the program's that set the RLIMIT_NOFILE of process pid
 * (0: this one) successfully: ours move out of the way of a raised soft
 * limit. Leaves errno as it was. */
void mms__fds_limit_set(long pid, long resource) MMS_HIDDEN;

/* arena.c: the recorder's own memory (see there). */
/* Maps size bytes of anonymous memory of our own (not the program's heap),
 * zeroed; NULL when the kernel refuses. */
void *mms__map_anon(size_t size) MMS_HIDDEN;

/* Set when the program turned its time stamp counter off (prctl
 * PR_SET_TSC, seccomp's strict mode) or installed a seccomp filter
 * (process.c): recording stopped, and nothing of the recorder's reads the
 * TSC or the clock, or makes a system call of its own, from then on. */
extern int mms__hands_off MMS_HIDDEN;
static inline int mms__hands_off_now(void)
{
	return __atomic_load_n(&mms__hands_off, __ATOMIC_SEQ_CST);
}

/* own.c: the ranges the recorder mapped for itself, which the program's
 * munmap, mprotect, mremap and mmap(MAP_FIXED) leave alone. mms__map_anon
 * and the log's mappings register theirs; the recorder unmaps its own
 * with mms__unmap_own. */
void mms__own_add(const void *p, size_t len) MMS_HIDDEN;
/* The end of [lo, lo + len) rounded up to a page (UINTPTR_MAX past the top). */
uintptr_t mms__page_end(uintptr_t lo, size_t len) MMS_HIDDEN;
int mms__unmap_own(void *p, size_t len) MMS_HIDDEN;
/* Whether [lo, hi) meets a range of the recorder's. */
int mms__own_overlaps(uintptr_t lo, uintptr_t hi) MMS_HIDDEN;
/* The program's munmap or mprotect of [addr, addr + len): when the range
 * meets one of the recorder's, calls fn on each piece outside them (fn
 * returns 0 or an errno), sets *ret (0, or -1 with errno) and returns 1;
 * else returns 0, and the caller makes the call itself. */
int mms__own_spare(void *addr, size_t len, int (*fn)(uintptr_t lo, uintptr_t hi, void *ctx), void *ctx,
		   int *ret) MMS_HIDDEN;
/* Calls fn on each piece of [lo, hi) outside the recorder's ranges, in
 * order; returns the first nonzero value fn returned, else 0. */
int mms__own_outside(uintptr_t lo, uintptr_t hi, int (*fn)(uintptr_t lo, uintptr_t hi, void *ctx),
		     void *ctx) MMS_HIDDEN;
/* The program's mlockall(flags) with MCL_CURRENT: what the kernel does
 * (the same limit, the same errors), but for the program's mappings
 * only. Returns 0, or -1 with errno. */
int mms__own_mlockall(int flags) MMS_HIDDEN;
void mms__own_before_fork(void) MMS_HIDDEN;
void mms__own_after_fork(void) MMS_HIDDEN;
/* dtv.c: the threads' vectors of thread-local storage in the arena, a
 * stand-in of the native size in the program's heap. */
extern size_t mms__dtv_extra MMS_HIDDEN;     /* the modules with TLS only the recorder brings */
void mms__dtv_count(void) MMS_HIDDEN;        /* sets mms__dtv_extra, once */
void *mms__dtv_new(size_t bytes) MMS_HIDDEN; /* a vector, zeroed, or NULL */
int mms__dtv_is(const void *ptr) MMS_HIDDEN; /* of a block of the arena */
void mms__dtv_set_stand(void *d, void *stand) MMS_HIDDEN;
void *mms__dtv_stand(const void *d) MMS_HIDDEN;
size_t mms__dtv_room(const void *d) MMS_HIDDEN; /* its length */
void mms__dtv_release(void *d) MMS_HIDDEN;
/* Calls fn with each live vector's span until it returns nonzero. */
int mms__dtv_each(int (*fn)(uintptr_t lo, uintptr_t hi, void *ctx), void *ctx) MMS_HIDDEN;
void mms__dtv_before_fork(void) MMS_HIDDEN;
void mms__dtv_after_fork(void) MMS_HIDDEN;
extern uintptr_t mms__arena_lo MMS_HIDDEN, mms__arena_len MMS_HIDDEN;
/* Returns a block of at least size bytes aligned to align (a power of two
 * up to 64 KiB), or NULL with errno ENOMEM: also when called from a signal
 * handler that interrupted this thread inside the arena. */
void *mms__arena_alloc(size_t size, size_t align) MMS_HIDDEN;
void mms__arena_free(void *ptr) MMS_HIDDEN;
void *mms__arena_realloc(void *ptr, size_t size) MMS_HIDDEN;
size_t mms__arena_usable(const void *ptr) MMS_HIDDEN;
void mms__arena_before_fork(void) MMS_HIDDEN;
void mms__arena_after_fork(void) MMS_HIDDEN;

/* A lock of the recorder's own, for short sections on the allocation
 * paths (the arena, guard mode's set and quarantine), where a pthread
 * mutex's call costs more than the section: an exchange, a few pauses
 * while another thread holds it, then yielding to it (also where a holder
 * may keep it long: gdbif.c's stop, held while gdb has the program
 * stopped). No futex, so it is taken the same way before the real
 * functions are known. */
static inline void mms__spin_lock(int *lock)
{
	unsigned spins = 0;

	while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(lock, __ATOMIC_RELAXED)) {
			if (spins < 64) {
				spins++;
#if defined(__x86_64__) || defined(__i386__)
				__builtin_ia32_pause();
#endif
			} else {
				sched_yield();
			}
		}
}

static inline void mms__spin_unlock(int *lock)
{
	__atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

/* True when ptr is a block of the arena. */
static inline int mms__arena_owns(const void *ptr)
{
	return (uintptr_t)ptr - mms__arena_lo < __atomic_load_n(&mms__arena_len, __ATOMIC_RELAXED);
}

/* unwind.c: sets [*lo, *hi) to the span of the executable segments of the
 * object that loads the address here (or whose base address it is);
 * 0, 0 when none does. */
void mms__code_range(uintptr_t here, uintptr_t *lo, uintptr_t *hi) MMS_HIDDEN;
struct dl_phdr_info;
/* The same, of the object info describes. */
void mms__code_span(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi) MMS_HIDDEN;

/* runtime.c: what the C and C++ runtimes keep for themselves (see there). */
/* The code of the dynamic loader and of the C library, [lo, hi) each (0, 0
 * when unknown), found by mms__runtime_code_init() at start-up. */
struct mms_code {
	uintptr_t lo, hi;
};
/* ld.so's code, libc's, and a replacement allocator's (empty for glibc's). */
extern struct mms_code mms__ldso_code MMS_HIDDEN, mms__libc_code MMS_HIDDEN, mms__alloc_code MMS_HIDDEN;
static inline int mms__in_code(const struct mms_code *c, uintptr_t ip)
{
	return ip - c->lo < c->hi - c->lo;
}
void mms__runtime_code_init(void) MMS_HIDDEN;
/* The CUDA driver's code (libcuda), once cuda.c's first look-up of one of
 * its entry points or a module scan found it loaded (an empty range
 * before): what it allocates or maps for itself is marked MMS_RT_CUDA.
 * Published whole, through the pointer, so that no thread reads half a
 * range. */
extern const struct mms_code *mms__cuda_code MMS_HIDDEN;
static inline int mms__in_cuda(uintptr_t ip)
{
	return mms__in_code(__atomic_load_n(&mms__cuda_code, __ATOMIC_ACQUIRE), ip);
}
/* The driver's code is at [lo, hi). Set, never cleared (0, 0 changes
 * nothing): a scan that began before a dlopen of the driver can end after
 * cuda.c found it, and the runtime never unloads the driver. */
void mms__cuda_code_set(uintptr_t lo, uintptr_t hi) MMS_HIDDEN;
/* Whether an object ahead of the recorder in the global scope (the
 * program, an allocator linked into it) defines malloc, so that the
 * malloc family's calls do not reach the hooks; its path in out. */
int mms__own_malloc(char *out, size_t cap) MMS_HIDDEN;
/* Nonzero while this thread is in a runtime's scope (mms__tls_runtime):
 * MMS_RT_THREAD in pthread_create, MMS_RUNTIME_STARTUP on the main thread
 * until main. */
#define MMS_RUNTIME_STARTUP 0x100
void mms__runtime_init(void) MMS_HIDDEN;
/* The enum mms_runtime_kind of an allocation made now whose caller's
 * return address is ra, 0 when it is the program's. */
unsigned mms__runtime_kind(uintptr_t ra) MMS_HIDDEN;
/* api.c: the msmemscope Python package's own work (not the public API):
 * what the thread allocates between the two is marked MMS_RT_SELF. */
unsigned msmemscope__own_begin(void);
void msmemscope__own_end(unsigned prev);
/* The same around importlib's loading of a module: MMS_RT_PYIMPORT. */
unsigned msmemscope__import_begin(void);
void msmemscope__import_end(unsigned prev);

/* hooks.c */
void mms__init(void) MMS_HIDDEN;
/* newdelete.c: a C++ runtime's symbol, in the global scope or in a
 * libstdc++ or libc++ loaded out of it (RTLD_LOCAL); NULL when none.
 * Leaves the thread's dlerror() state alone. */
void *mms__cxx_lookup(const char *name) MMS_HIDDEN;
/* At start-up: whether the program (or a library preloaded before the
 * recorder) defines a C++ allocation operator of its own. Then the
 * operators that reach the recorder's are not all of the program's, so
 * new and delete are recorded as the malloc and free they call (no
 * mismatched free can be told) and guard mode checks the malloc family
 * only. */
void mms__cxx_own_init(void) MMS_HIDDEN;
/* The file defining it and the operator's name (META own_cxx,
 * own_cxx_op), or NULL when there is none. */
const char *mms__cxx_own(const char **op) MMS_HIDDEN;

/* Guard mode's hooks, for the C++ operators (newdelete.c): an allocation
 * of enum mms_guard_family `family` (NULL with errno ENOMEM on failure),
 * and its release. */
void *mms__guard_alloc_hook(unsigned fn, unsigned family, size_t align, size_t size, int zero, uintptr_t ra) MMS_HIDDEN;
void mms__guard_free_hook(void *ptr, unsigned family, uintptr_t ra) MMS_HIDDEN;
/* The C++ operators of a replacement allocator (newdelete.c): tcmalloc's
 * and jemalloc's operator new and delete allocate without calling malloc
 * and free, so the operators take a block of the malloc family (aligned
 * to align when over 16) and release it as the malloc hooks do; ra, the
 * operator's caller, is the hooked call's return address. mms__hook_new
 * returns NULL on failure. */
void *mms__hook_new(size_t size, size_t align, uintptr_t ra) MMS_HIDDEN;
void mms__hook_delete(void *ptr, uintptr_t ra) MMS_HIDDEN;
/* The C++ operators the recorder defines (newdelete.c), by their mangled
 * names (Itanium C++ ABI, 64-bit size_t). */
void *_Znwm(size_t size);
void *_Znam(size_t size);
void *_ZnwmSt11align_val_t(size_t size, size_t align);
void *_ZnamSt11align_val_t(size_t size, size_t align);
void *_ZnwmRKSt9nothrow_t(size_t size, const void *nt);
void *_ZnamRKSt9nothrow_t(size_t size, const void *nt);
void _ZdlPv(void *p);
void _ZdaPv(void *p);
void _ZdlPvm(void *p, size_t n);
void _ZdaPvm(void *p, size_t n);
void _ZdlPvSt11align_val_t(void *p, size_t a);
void _ZdaPvSt11align_val_t(void *p, size_t a);
void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a);
void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a);
void _ZdlPvRKSt9nothrow_t(void *p, const void *nt);
void _ZdaPvRKSt9nothrow_t(void *p, const void *nt);
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt);
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt);
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *nt);
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *nt);
/* jemalloc's functions of its own, found by redirect.c where jemalloc is
 * loaded, and the recorder's in their place (jemalloc.c), to which redirect.c
 * points the program's calls of them. */
struct mms_je {
	void *(*mallocx)(size_t, int);
	void *(*rallocx)(void *, size_t, int);
	size_t (*xallocx)(void *, size_t, size_t, int);
	size_t (*sallocx)(const void *, int);
	void (*dallocx)(void *, int);
	void (*sdallocx)(void *, size_t, int);
};
extern struct mms_je mms__je MMS_HIDDEN;
void *mms__je_mallocx(size_t size, int flags) MMS_HIDDEN;
void *mms__je_rallocx(void *ptr, size_t size, int flags) MMS_HIDDEN;
size_t mms__je_xallocx(void *ptr, size_t size, size_t extra, int flags) MMS_HIDDEN;
size_t mms__je_sallocx(const void *ptr, int flags) MMS_HIDDEN;
void mms__je_dallocx(void *ptr, int flags) MMS_HIDDEN;
void mms__je_sdallocx(void *ptr, size_t size, int flags) MMS_HIDDEN;
/* A set of addresses in the recorder's own memory (addrset.c), under
 * its user's lock; zeroed, it is empty. add: 1 when key was not there, 0
 * when it was, -1 without room; take: 1 when key was there (it is not
 * now), else 0. */
struct mms_addrset {
	uintptr_t *tab;
	size_t cap, n;
};
int mms__addrset_add(struct mms_addrset *s, uintptr_t key) MMS_HIDDEN;
int mms__addrset_take(struct mms_addrset *s, uintptr_t key) MMS_HIDDEN;
void mms__addrset_clear(struct mms_addrset *s) MMS_HIDDEN;
/* Records the allocation of a guarded block (t->prev_stamp and
 * t->stack_id are then its stamp and stack); ra is the allocating call's
 * return address, in its caller (the runtimes' blocks are told by it). */
void mms__guard_rec_alloc(struct mms_thread *t, unsigned fn, void *ptr, size_t size, uintptr_t ra) MMS_HIDDEN;

/* guard.c: guard mode (see there). The functions run inside the
 * reentrancy guard; t is the recording thread, or NULL when nothing is
 * recorded (the checks still run). */
extern int mms__guard_on MMS_HIDDEN; /* set at start-up, never changed */
void mms__guard_init(void) MMS_HIDDEN;
/* True when return address ra lies in the code of the dynamic loader or
 * the C library: such calls get plain blocks (guard.c). */
int mms__guard_plain_caller(uintptr_t ra) MMS_HIDDEN;
/* A plain block (unguarded, but known): for the loader's and libc's calls. */
void *mms__guard_alloc_plain(struct mms_thread *t, unsigned fn, size_t size, int zero, uintptr_t ra) MMS_HIDDEN;
/* A guarded block of size bytes aligned to align (a power of two),
 * zeroed when zero; NULL (errno ENOMEM) when there is no memory. */
void *mms__guard_alloc(struct mms_thread *t, unsigned fn, unsigned family, size_t align, size_t size, int zero,
		       uintptr_t ra) MMS_HIDDEN;
/* Releases ptr by a call of family `family` (free_fn: enum mms_free_fn
 * as recorded, | MMS_GUARD_FREE_THEIRS for the loader's and libc's): a bad
 * free is written as a finding and goes no further, but for theirs, which
 * go to libc (blocks they had before the recorder started). */
#define MMS_GUARD_FREE_THEIRS 0x100
void mms__guard_free(struct mms_thread *t, void *ptr, unsigned family, unsigned free_fn) MMS_HIDDEN;
void *mms__guard_realloc(struct mms_thread *t, void *ptr, size_t size, uintptr_t ra) MMS_HIDDEN;
/* 1 with *size the requested size when ptr is a live guarded block, else 0. */
int mms__guard_usable(const void *ptr, size_t *size) MMS_HIDDEN;
/* For mimalloc's heaps (mimalloc.c): keep p (from mimalloc; NULL: its
 * failure, passed on) as a plain block, recorded when t is not NULL;
 * whether ptr is a block of the set (guarded or plain); take plain block
 * ptr out of the set, which its heap's destruction freed: 1, or 0 when it
 * is not a plain block of the set. */
void *mms__guard_keep_plain(struct mms_thread *t, unsigned fn, void *p, size_t size, uintptr_t ra) MMS_HIDDEN;
int mms__guard_knows(const void *ptr) MMS_HIDDEN;
int mms__guard_forget(const void *ptr) MMS_HIDDEN;
/* Checks every live guarded block and the quarantine, writing a CHECK
 * record and the findings. Returns how many findings it made. */
uint64_t mms__guard_check_all(struct mms_thread *t) MMS_HIDDEN;
void mms__guard_before_fork(void) MMS_HIDDEN;
void mms__guard_after_fork(void) MMS_HIDDEN;

/* process.c */
void mms__process_init(void) MMS_HIDDEN;
/* Field `field` (3 and up, numbered as in proc(5)) of /proc/PID/stat (PID
 * 0: this process), as a number. Returns 0, or -1 when it cannot be read. */
int mms__proc_stat_field(long pid, int field, long *out) MMS_HIDDEN;
/* This process's start time (clock ticks since boot) and PID namespace
 * (its inode), as the log header keeps them; 0 where unknown. */
void mms__proc_identity(uint64_t *start, uint64_t *pid_ns) MMS_HIDDEN;
/* The process's threads that still run its code, the log thread of ours
 * left out: a thread that exited (pthread_join returned) but is still
 * listed until the kernel lets it go is ending (PF_EXITING) or has given
 * its memory up (its vsize reads 0), or is gone before its stat is read;
 * none counts. */
long mms__threads_with_memory(void) MMS_HIDDEN;
/* The log thread's name (pager.c). */
#define MMS_LOG_THREAD_NAME "msmemscope-log"
/* Threads of the process now (field 20 of /proc/self/stat); 0 when it
 * cannot be read. */
long mms__threads_now(void) MMS_HIDDEN;
/* Reads the file at path (a /proc file: read until its end) into buf, at
 * most cap - 1 bytes, NUL ended. Returns the length, or -1. */
ssize_t mms__proc_read(const char *path, char *buf, size_t cap) MMS_HIDDEN;
/* Calls fn with the name (the thread id, in decimal) of each task of
 * /proc/self/task, until it returns nonzero; system calls of its own.
 * Returns -1 when the directory cannot be read, else 0. */
int mms__tasks_each(int (*fn)(const char *tid, void *ctx), void *ctx) MMS_HIDDEN;
/* The path of the process's executable into buf (cap bytes, NUL ended):
 * its length, 0 ("") when /proc/self/exe cannot be read. */
size_t mms__self_exe(char *buf, size_t cap) MMS_HIDDEN;
/* A loaded object's name for a warning, into out: path, or for NULL or
 * "" (the program, as the loader and dladdr name it) the executable's
 * path, or "the program" when that cannot be read. */
void mms__object_name(const char *path, char *out, size_t cap) MMS_HIDDEN;
/* Calls fn on each line of the file at path (a /proc file), its first 255
 * bytes NUL ended without the newline, until fn returns nonzero. Returns
 * that value, 0 at the end, or -1 when the file cannot be read. */
int mms__proc_lines(const char *path, int (*fn)(char *line, void *ctx), void *ctx) MMS_HIDDEN;
/* reach.c: at the end of exit, the process's writable memory scanned for
 * words that point into its anonymous memory, written to the log
 * (REACH_REGIONS, REACH_REFS, META "reach"), unless reach=0. t is the
 * exiting thread's state, others the threads still running, sp the frame
 * of the recorder's function the program (or exit) called: the exiting
 * thread's stack is read from there up, the recorder's own frames below
 * it (and the dead ones of freeres they overlay) left out. */
void mms__reach_scan(struct mms_thread *t, long others, uintptr_t sp) MMS_HIDDEN;
/* runtime.c: the scan for a process that leaves with _exit (a shell; not
 * a fork child, whose memory is mostly its parent's): no freeres runs,
 * the memory is as the program left it; sp as mms__reach_scan's. */
void mms__reach_at_exit(uintptr_t sp) MMS_HIDDEN;
/* What a line of /proc/self/maps (its head, as mms__proc_lines gives it)
 * maps, for its private writable mappings: anonymous memory (nameless,
 * or named by prctl), a file's (a program's or library's data and .bss),
 * the first thread's stack, or the heap malloc grows with brk;
 * MMS_MAPS_OTHER for the rest (read-only, shared, the kernel's special
 * mappings). Sets its extent. */
enum { MMS_MAPS_OTHER, MMS_MAPS_ANON, MMS_MAPS_FILE, MMS_MAPS_STACK, MMS_MAPS_HEAP };
int mms__maps_line(const char *s, uintptr_t *start, uintptr_t *end) MMS_HIDDEN;
/* Whether the line maps a file privately, readable, not a device's (what
 * a module's vtables and code are in): 1 with its extent and whether it
 * is executable, else 0. */
int mms__maps_file(const char *s, uintptr_t *start, uintptr_t *end, int *exec) MMS_HIDDEN;

#endif /* MMS_HOOKS_INT_H */
