/* SPDX-License-Identifier: MIT */
/* unwind.h: the stack unwinders behind one table, as strace's
 * unwind_unwinder_t: the walker of our own (unwind-walker.c, with
 * libunwind for the stacks it cannot walk), libunwind alone
 * (unwind-libunwind.c) and the check mode, which captures every stack
 * both ways (unwind-check.c). unwind.c picks one at start-up and interns
 * what it walks. */
#ifndef MMS_UNWIND_H
#define MMS_UNWIND_H

#include "hooks-int.h"
#include "objects.h"

struct mms_unwinder {
	const char *name;
	/* Once, at start-up, before any walk. */
	void (*init)(void);
	/* A thread's first capture (t->stack_hi is 0): finds what its walks
	 * need, and leaves t->stack_hi nonzero. */
	void (*thread_start)(struct mms_thread *t);
	/* Walks the caller's stack from fp, a frame of ours on it (see
	 * mms__capture_stack_at), up to depth frames, and returns its
	 * interned id (mms__unwind_intern), 0 when it found no frame. */
	uint32_t (*walk)(struct mms_thread *t, uintptr_t fp, int depth);
	/* In a fork child, before its first walk. */
	void (*after_fork_child)(void);
	/* At exit: what the backend has to say on stderr (the check mode). */
	void (*report)(void);
};

extern const struct mms_unwinder mms__unwind_walker MMS_HIDDEN;
extern const struct mms_unwinder mms__unwind_libunwind MMS_HIDDEN;
extern const struct mms_unwinder mms__unwind_check MMS_HIDDEN;

/* unwind.c: our own code's address range: frames there are the hook, not
 * the program. */
extern uintptr_t mms__self_lo MMS_HIDDEN, mms__self_hi MMS_HIDDEN;
/* Interns the n frames at ips (innermost first) as a stack, reusing the
 * outer frames it shares with the thread's last stack: returns its id, 0
 * when n is 0. */
uint32_t mms__unwind_intern(struct mms_thread *t, const uintptr_t *ips, int n) MMS_HIDDEN;

/* unwind-libunwind.c: finds libunwind's code (mms__unwinder_code). */
void mms__libunwind_init(void) MMS_HIDDEN;
/* Starts libunwind now (it starts at its first use otherwise). */
void mms__libunwind_start(void) MMS_HIDDEN;
/* Whether libunwind may walk from here: not when this is an alternate
 * signal stack (sigaltstack) with under MMS_LIBUNWIND_ROOM bytes left, as
 * SIGSTKSZ's 8 KiB are after the kernel's signal frame (libunwind takes
 * some 5 KiB of stack where a malloc takes 0.5: a handler's allocation
 * would overflow it, natively none does). A system call, made only off
 * the thread's own stack (t's bounds). The event is then recorded with
 * no stack. */
#define MMS_LIBUNWIND_ROOM (16 * 1024)
int mms__libunwind_room(const struct mms_thread *t) MMS_HIDDEN;
/* Whether libunwind must not walk now (the event then has the walker's
 * stack or none): in a fork child whose loader lock may be held
 * (mms__phdr_unsafe), or for a call of the loader's own, made holding its
 * lock of the module list (t->loader_call): libunwind calls
 * dl_iterate_phdr holding a lock of its own, which another thread's walk
 * may hold while it waits for the loader's (dlclose's frees deadlocked so
 * with libunwind stacks). */
static inline int mms__libunwind_barred(const struct mms_thread *t)
{
	return t->loader_call || mms__phdr_unsafe();
}
/* Sets t's stack bounds (stack_lo, stack_hi; stack_hi 1: unknown). */
void mms__stack_bounds(struct mms_thread *t) MMS_HIDDEN;
/* The calling thread's stack into t->bounds_lo and bounds_hi (both 0
 * when it cannot be told), at its registration: the scan at exit reads
 * the part above its stack pointer (reach.c). */
void mms__stack_note(struct mms_thread *t) MMS_HIDDEN;
/* The caller's stack by libunwind, innermost first, without our frames,
 * into out, which has room for depth + 8 (libunwind writes our frames
 * there too): returns the number of frames (at most depth), 0 when
 * libunwind cannot be called. */
int mms__libunwind_frames(uintptr_t *out, int depth) MMS_HIDDEN;

/* unwind-walker.c: why the walker gave a stack to libunwind (counted in
 * the check mode). */
enum mms_walk_fallback {
	MMS_FB_NO_STACK,    /* the thread's stack is unknown, or we are not on it */
	MMS_FB_SELF,        /* our own frame-pointer chain is broken */
	MMS_FB_BUSY,        /* another thread was reading the module table */
	MMS_FB_NO_FDE,      /* no call frame information for a return address */
	MMS_FB_UNSUPPORTED, /* a rule the walker does not handle (PLT, signal frame) */
	MMS_FB_BOUNDS,      /* a step would leave the stack or not grow the CFA */
	MMS_FB_COUNT
};
extern const char *const mms__walk_fallback_names[MMS_FB_COUNT] MMS_HIDDEN;
/* The walker alone, for the check mode: writes up to depth return
 * addresses, innermost first and without our frames, to out and returns
 * their number; or returns -1 - enum mms_walk_fallback when libunwind must
 * take this stack. A stack that is a recent one whose node id is known
 * sets *id and returns its number of frames without writing them. */
int mms__walker_frames(struct mms_thread *t, uintptr_t *out, int depth, uint32_t *id, uintptr_t fp) MMS_HIDDEN;
/* The walker alone, for a look at the caller's first frames when events
 * carry no stacks (hooks.c: what the CUDA driver allocates through libc):
 * as mms__walker_frames, with the thread's walker memory set up at its
 * first use; never libunwind. */
int mms__walker_peek(struct mms_thread *t, uintptr_t *out, int depth, uintptr_t fp) MMS_HIDDEN;
/* The walker's room for a second stack of MMS_MAX_DEPTH + 8 frames (the
 * check mode's), NULL when the thread has no walker memory. */
uintptr_t *mms__walker_scratch(struct mms_thread *t) MMS_HIDDEN;
/* The last walk was interned as id: kept as a recent one when same (its
 * frames were the ones interned), else forgotten. */
void mms__walker_interned(struct mms_thread *t, uint32_t id, int same) MMS_HIDDEN;

#endif /* MMS_UNWIND_H */
