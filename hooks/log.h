/* SPDX-License-Identifier: MIT */
/* log.h: the log: its file, chunks and metadata (logfile.c), its name
 * (logname.c), the log thread (pager.c), the registry of recording threads
 * (threads.c), and the inline writer of records into a thread's chunk. */
#ifndef MMS_LOG_H
#define MMS_LOG_H

#include "hooks-int.h"

/* logfile.c: the log file, its chunks and its metadata. */
int mms__log_open(void) MMS_HIDDEN;
void mms__log_finish(void) MMS_HIDDEN;
/* Gives back the file's space reserved past the last chunk (before an
 * exec); recording goes on. */
void mms__log_trim(void) MMS_HIDDEN;
void mms__log_cut(int err) MMS_HIDDEN;
/* With the log cut: no event stamped `stamp` or later is complete (an
 * event with that stamp found no room). */
void mms__log_cut_at(uint64_t stamp) MMS_HIDDEN;
/* In a fork child: leaves the parent's log and makes this process's log
 * pending (opened at its first event: a child that execs at once leaves
 * none). fork_number and fork_stamp name the FORK event the parent wrote
 * (0: none), which the child's log records with the parent's log. */
void mms__log_after_fork_child(uint64_t fork_number, uint64_t fork_stamp) MMS_HIDDEN;
/* Opens a fork child's pending log, in the child itself (not in a vfork
 * child sharing its memory). Returns mms__recording afterwards: 0 when
 * nothing is pending or the log cannot be opened. */
int mms__log_open_pending(void) MMS_HIDDEN;
/* Whether events are recorded now, opening a fork child's pending log
 * for the event that asks (not on the hot path: recording is on). */
static inline int mms__recording_now(void)
{
	return likely(mms__recording) || mms__log_open_pending();
}
/* Makes room for a record of at most `len` bytes in t's chunk. Returns 0,
 * or -1 when recording has stopped (the record must be dropped). */
int mms__reserve_slow(struct mms_thread *t, size_t len) MMS_HIDDEN;
/* Writes a metadata record of arbitrary content (tag, then fields already
 * encoded in buf) stamped now. */
void mms__write_meta(struct mms_thread *t, uint8_t tag, const uint8_t *buf, size_t len) MMS_HIDDEN;
/* A thread is done with its chunk (t->chunk is NULL afterwards): a chunk
 * with room left is kept for the next thread that needs one. */
void mms__chunk_leave(struct mms_thread *t) MMS_HIDDEN;
/* For the log thread: makes the file `want` bytes long and mapped. Returns
 * 0, or nonzero when it cannot (an error, or the file was trimmed). */
int mms__log_grow_ahead(uint64_t want) MMS_HIDDEN;
/* For the log thread: faults in the pages of [off, off + len) of the file.
 * Returns 0, or -1 (the kernel refused). */
int mms__log_populate(uint64_t off, uint64_t len) MMS_HIDDEN;
extern struct mms_file_header *mms__header MMS_HIDDEN;

/* logname.c: opens this process's log file (see there for its name),
 * writing its path into log_path and setting *execed when this image was
 * reached by exec from a recorded one, *created when the file is new.
 * Returns the descriptor, or -1 (nothing to record, or an error). */
int mms__logname_open(char log_path[PATH_MAX], int fork_child, int *execed, int *created) MMS_HIDDEN;

/* pager.c: the log thread. */
void mms__pager_init(void) MMS_HIDDEN;
void mms__pager_after_fork_child(void) MMS_HIDDEN;
/* 1 while the log thread (msmemscope-log) runs. */
int mms__log_thread_running(void) MMS_HIDDEN;
/* A chunk ending at offset `end` was taken: asks the log thread (starting
 * it the first time the log is large enough) to keep the file ready ahead
 * of it. */
void mms__pager_poke(uint64_t end) MMS_HIDDEN;
/* Ends the log thread, if it runs, and waits until it is gone (it starts
 * again when the log needs it): for the calls that refuse a process with
 * more than one thread. */
void mms__pager_stop(void) MMS_HIDDEN;
/* True when the log thread has faulted the file's pages in up to `end`. */
int mms__pager_ready(uint64_t end) MMS_HIDDEN;

/* threads.c: the registry of recording threads. */
int mms__threads_init(void) MMS_HIDDEN;
void mms__threads_after_fork_child(void) MMS_HIDDEN;
struct mms_thread *mms__thread_register(void) MMS_HIDDEN;
void mms__thread_exit(void) MMS_HIDDEN;
/* Threads with a state (registered and not exited): atomic. */
extern uint32_t mms__live_threads MMS_HIDDEN;
/* Calls fn with each thread but self that has not exited, under the
 * registry's lock; 0, or -1 when another thread holds it (at the end of
 * exit, one that is starting or ending is not waited for). For the scan
 * at exit. */
int mms__threads_each_live(const struct mms_thread *self, void (*fn)(const struct mms_thread *t, void *ctx),
			   void *ctx) MMS_HIDDEN;

/* The current thread's state, registering it on first use. NULL when it
 * cannot be had (no memory for it): the event is dropped. */
static inline struct mms_thread *mms__thread(void)
{
	struct mms_thread *t = mms__tls_thread;
	return likely(t != NULL) ? t : mms__thread_register();
}

/* Begins a record of at most `max` bytes: returns the write pointer, or
 * NULL when recording has stopped. */
static inline uint8_t *mms__rec_begin(struct mms_thread *t, size_t max)
{
	if (unlikely((size_t)(t->end - t->cur) < max) && mms__reserve_slow(t, max))
		return NULL;
	return t->cur;
}

/* Writes the tag and the stamp delta of a record. */
static inline uint8_t *mms__rec_head(struct mms_thread *t, uint8_t *p, uint8_t tag, uint64_t stamp)
{
	*p++ = tag;
	if (unlikely(stamp < t->prev_stamp)) {
		/* Clamping up to the thread's last stamp keeps the ordering rule:
		 * that stamp, too, was read before this event's memory changed
		 * hands. A large step back means the TSC is not in sync across
		 * cores: say so in the log. */
		if (t->prev_stamp - stamp > (1u << 20))
			__atomic_fetch_or(&mms__header->flags, MMS_FLAG_CLOCK_BACKWARDS, __ATOMIC_RELAXED);
		stamp = t->prev_stamp;
	}
	p = mms_put_u(p, stamp - t->prev_stamp);
	t->prev_stamp = stamp;
	return p;
}

static inline uint8_t *mms__rec_addr(struct mms_thread *t, uint8_t *p, uint64_t addr)
{
	p = mms_put_u(p, mms_zigzag((int64_t)(addr - t->prev_addr)));
	t->prev_addr = addr;
	return p;
}

/* Publishes the record that ends at p: after this store a reader (or the
 * file after SIGKILL) holds it whole. */
static inline void mms__rec_commit(struct mms_thread *t, uint8_t *p)
{
	t->cur = p;
	__atomic_store_n(&t->chunk->used, (uint64_t)(p - (uint8_t *)(t->chunk + 1)), __ATOMIC_RELEASE);
}

/* Begins a metadata record with tag, stamped as mms__write_meta()'s, whose
 * fields (at most len bytes) the caller encodes in place and ends with
 * mms__rec_commit(): no copy of them on the thread's stack, which may be
 * a small thread's. Returns where the fields go, or NULL (dropped). */
static inline uint8_t *mms__meta_begin(struct mms_thread *t, uint8_t tag, size_t len)
{
	uint8_t *p = mms__rec_begin(t, len + 11);

	return p ? mms__rec_head(t, p, tag, t->prev_stamp) : NULL;
}

/* Writes a whole event record of the common shape: tag, stamp, address,
 * then n (0 to 4) more varints a, b, c, d. Callers pass n as a constant,
 * so the unused fields cost nothing. */
static inline void mms__rec_addr_event(struct mms_thread *t, uint8_t tag, uint64_t stamp, uint64_t addr, int n,
				       uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	uint8_t *p = mms__rec_begin(t, 1 + (n > 3 ? 6 : 5) * 10);

	if (unlikely(!p)) {
		mms__log_cut_at(stamp);
		return;
	}
	p = mms__rec_head(t, p, tag, stamp);
	p = mms__rec_addr(t, p, addr);
	if (n > 0)
		p = mms_put_u(p, a);
	if (n > 1)
		p = mms_put_u(p, b);
	if (n > 2)
		p = mms_put_u(p, c);
	if (n > 3)
		p = mms_put_u(p, d);
	mms__rec_commit(t, p);
}

/* A refused allocation (ALLOC_FAIL, DEV_ALLOC_FAIL): the tag, the stamp,
 * then u size, u stack and u last (the alignment; the device). */
static inline void mms__rec_refusal(struct mms_thread *t, uint8_t tag, uint64_t stamp, uint64_t size, uint32_t stack,
				    uint64_t last)
{
	uint8_t *p = mms__rec_begin(t, 1 + 4 * 10);

	if (unlikely(!p)) {
		mms__log_cut_at(stamp);
		return;
	}
	p = mms__rec_head(t, p, tag, stamp);
	p = mms_put_u(p, size);
	p = mms_put_u(p, stack);
	p = mms_put_u(p, last);
	mms__rec_commit(t, p);
}

/* A free (enum mms_free_fn fn) of addr: FREE_STACK with the stack of the
 * call that freed when there is one, else FREE as without stacks. */
static inline void mms__rec_free_stack(struct mms_thread *t, unsigned fn, uint64_t addr, uint64_t stamp,
				       uint32_t stack)
{
	if (stack)
		mms__rec_addr_event(t, (uint8_t)(MMS_TAG_FREE_STACK | fn), stamp, addr, 1, stack, 0, 0, 0);
	else
		mms__rec_addr_event(t, (uint8_t)(MMS_TAG_FREE | fn), stamp, addr, 0, 0, 0, 0, 0);
}

#endif /* MMS_LOG_H */
