/* SPDX-License-Identifier: MIT */
/* unwind-libunwind.c: libunwind, started lazily: the walker's fallback
 * and an unwinder of its own (MSMEMSCOPE_UNWIND=libunwind). */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <stdint.h>
#include <string.h>

#include "unwind.h"

/* libunwind's code: it maps its per-thread caches inside unw_backtrace()
 * (not recorded) and unmaps them in a thread-exit destructor of its own,
 * through munmap(), which must not be recorded either. */
static uintptr_t unw_lo, unw_hi;

int mms__unwinder_code(uintptr_t ip)
{
	return ip >= unw_lo && ip < unw_hi;
}

void mms__libunwind_init(void)
{
	mms__code_range((uintptr_t)&unw_backtrace, &unw_lo, &unw_hi);
}

/* libunwind is started by the first stack that needs it, not before: its
 * start-up makes a pipe (fds.c puts it at the top of the descriptor
 * range), and most programs never need it. 0 not started, 1 started,
 * 2 given up (see mms__unwind_lost_fd). */
static int unw_state;

static int unw_ready(void)
{
	int s = __atomic_load_n(&unw_state, __ATOMIC_ACQUIRE), expect = 0;

	if (likely(s == 1)) {
		/* Its pipe may have been closed behind our back and its number
		 * given to a file of the program's, which libunwind would then
		 * write into. */
		if (likely(mms__fds_unwinder_ok()))
			return 1;
		mms__unwind_lost_fd();
		return 0;
	}
	if (s == 0 && __atomic_compare_exchange_n(&unw_state, &expect, 3, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* One cache of unwinding info per thread: no lock on the hot
		 * path (the default cache is global and locked). */
		unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
		/* Its pipe could not be placed out of the program's way: it
		 * was given up (2) meanwhile. */
		expect = 3;
		return __atomic_compare_exchange_n(&unw_state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	}
	/* Another thread is starting it (3), or it was given up (2). */
	return 0;
}

void mms__libunwind_start(void)
{
	int busy = mms__tls_busy;

	mms__tls_busy = 2; /* libunwind may allocate: not the program's */
	(void)unw_ready();
	mms__tls_busy = busy;
}

/* The program put a descriptor of its own at the number of libunwind's
 * pipe (dup2 onto it): libunwind writes into that pipe, so it is never
 * called again; the stacks it would have taken end where the walker
 * stopped. */
void mms__unwind_lost_fd(void)
{
	__atomic_store_n(&unw_state, 2, __ATOMIC_RELEASE);
}

/* unw_backtrace() without its fast path: frame by frame with unw_step(). */
static __attribute__((noinline)) int backtrace_steps(void **buf, int size)
{
	unw_cursor_t cursor;
	unw_context_t uc;
	unw_word_t ip;
	int n = 0;

	if (unw_getcontext(&uc) < 0 || unw_init_local(&cursor, &uc) < 0)
		return 0;
	while (n < size && unw_get_reg(&cursor, UNW_REG_IP, &ip) >= 0) {
		buf[n++] = (void *)(uintptr_t)ip;
		if (unw_step(&cursor) <= 0)
			break;
	}
	return n;
}

int mms__libunwind_frames(uintptr_t *out, int depth)
{
	static uint32_t flushed_gen = 1;
	void **buf = (void **)out;
	int n, skip = 0, busy = mms__tls_busy;
	uint32_t gen = __atomic_load_n(&mms__cfi_gen, __ATOMIC_ACQUIRE);

	mms__tls_busy = 2; /* libunwind may allocate: not the program's */
	if (!unw_ready()) {
		mms__tls_busy = busy;
		return 0;
	}
	if (likely(gen == 1)) {
		n = unw_backtrace(buf, depth + 8);
	} else {
		/* A module was unloaded. unw_backtrace()'s per-thread cache of
		 * frames by address is never flushed: it would step the code
		 * of a module loaded in its place with the old one's rules.
		 * unw_step() uses caches that unw_flush_cache() flushes. */
		if (__atomic_load_n(&flushed_gen, __ATOMIC_ACQUIRE) != gen) {
			unw_flush_cache(unw_local_addr_space, 0, 0);
			__atomic_store_n(&flushed_gen, gen, __ATOMIC_RELEASE);
		}
		n = backtrace_steps(buf, depth + 8);
	}
	mms__tls_busy = busy;
	while (skip < n && (uintptr_t)buf[skip] >= mms__self_lo && (uintptr_t)buf[skip] < mms__self_hi)
		skip++;
	n -= skip;
	if (n > depth)
		n = depth;
	if (n > 0 && skip)
		memmove(out, out + skip, (size_t)n * sizeof(*out));
	return n > 0 ? n : 0;
}

/* --- the backend ----------------------------------------------------------- */

static void libunwind_thread_start(struct mms_thread *t)
{
	/* libunwind finds the stack itself; the bounds tell a signal stack
	 * (mms__libunwind_room). */
	mms__stack_bounds(t);
}

static uint32_t libunwind_walk(struct mms_thread *t, uintptr_t fp, int depth)
{
	(void)fp;
	if (!mms__libunwind_room(t) || mms__libunwind_barred(t))
		return 0;
	return mms__unwind_intern(t, t->frames, mms__libunwind_frames(t->frames, depth));
}

static void libunwind_nothing(void)
{
}

const struct mms_unwinder mms__unwind_libunwind = {
	.name = "libunwind",
	.init = mms__libunwind_init,
	.thread_start = libunwind_thread_start,
	.walk = libunwind_walk,
	.after_fork_child = libunwind_nothing,
	.report = libunwind_nothing,
};
