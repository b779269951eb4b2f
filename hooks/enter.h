/* SPDX-License-Identifier: MIT */
/* enter.h: the way into a hook (hooks.c's malloc family, mapping.c's mmap
 * family): whether this call is recorded, and the thread that records it.
 * A call made while the thread is already inside a hook is passed
 * through: our own allocations (busy == 2) silently, a signal handler's
 * (busy == 1) counted as lost, and a replacement allocator's own calls
 * (jemalloc's mmap inside its malloc) silently: they are its internals,
 * under the blocks recorded. */
#ifndef MMS_ENTER_H
#define MMS_ENTER_H

#include "hooks-int.h"
#include "log.h"

/* How far the recorder has started (hooks.c). */
enum { MMS_INIT_NONE, MMS_INIT_RESOLVING, MMS_INIT_RESOLVED, MMS_INIT_STARTING, MMS_INIT_DONE };
extern int mms__init_state MMS_HIDDEN;
/* The real functions found (dlsym), nothing else: what a hook called
 * before the recorder started needs to pass its call on. */
void mms__init_resolve(void) MMS_HIDDEN;
/* Counts an event that arrived while this thread was inside a hook, ra
 * the hook's caller (hooks.c). */
void mms__lost_event(uintptr_t ra) MMS_HIDDEN __attribute__((cold));

/* Inlined always: the return address is the hook's caller's. */
static inline __attribute__((always_inline)) struct mms_thread *mms__enter(void)
{
	struct mms_thread *t;

	if (unlikely(mms__init_state != MMS_INIT_DONE)) {
		mms__init();
		if (mms__init_state != MMS_INIT_DONE)
			return NULL;
	}
	if (unlikely(mms__tls_busy)) {
		if (mms__tls_busy == 1)
			mms__lost_event((uintptr_t)__builtin_return_address(0));
		return NULL;
	}
	/* A fork child's log opens at its first collected event. */
	if (unlikely(!mms__recording || !mms__collecting) && !(mms__collecting && mms__log_open_pending()))
		return NULL;
	mms__tls_busy = 1;
	t = mms__thread();
	if (unlikely(!t))
		mms__tls_busy = 0;
	return t;
}

static inline void mms__leave(void)
{
	mms__tls_busy = 0;
}

/* mms__enter() for the mmap family, which never starts the recorder:
 * before it started, an allocator linked into the program may be calling
 * from its own start-up (see mms__init_resolve); nothing is recorded
 * then. */
static inline __attribute__((always_inline)) struct mms_thread *mms__enter_mapping(void)
{
	return likely(mms__init_state == MMS_INIT_DONE) ? mms__enter() : NULL;
}

#endif /* MMS_ENTER_H */
