/* SPDX-License-Identifier: MIT */
/* stamp.h: the order stamps of events (clock.c): the TSC or an atomic
 * counter, fenced where the ordering rule needs it, and the table of the
 * threads that last released each address, which spares the fence. */
#ifndef MMS_STAMP_H
#define MMS_STAMP_H

#include "hooks-int.h"

/* clock.c */
extern int mms__clock_tsc MMS_HIDDEN;
extern uint64_t mms__counter MMS_HIDDEN;
/* clock: enum mms_config_clock (counter forces the counter; exact reads the
 * TSC at every event, also with one thread). */
void mms__clock_init(int clock) MMS_HIDDEN;
uint64_t mms__realtime_ns(void) MMS_HIDDEN;

/* --- one thread: the TSC read for times, not for order --------------------
 * While one thread of the process records events (others may run, as
 * PyTorch's idle OpenMP workers do, but have recorded nothing) and the
 * clock is the TSC, the order of the events is that thread's program
 * order: an allocation or a free needs the TSC only for its time. rdtsc is quick alone (7 ns) but holds back the program's own
 * memory accesses around it: on perl's hash work it cost 55 ns an event,
 * a third of the program's time. So such an event reads the TSC for the
 * first MMS_STAMP_BURST events of each tick of the kernel's coarse clock
 * (1 to 4 ms) and every MMS_STAMP_EVERY-th event after, and otherwise
 * repeats its thread's last reading (a stamp equal to the previous one:
 * the replay keeps a thread's events in file order). Its time is then
 * early by the few events since that reading, never by more than one
 * coarse tick. A second thread that records ends this for good
 * (mms__stamp_many, at its registration, before its first stamp): from
 * then on every event reads the TSC, fenced as the order needs. An event
 * of the first thread that the second one's depends on (it handed over
 * memory, or anything else the second thread saw) has a stamp at or
 * before its real time, so before the second thread's; one that depends
 * on the second thread's events saw them, and so, on x86, the flag's
 * store before them: it reads the TSC. MSMEMSCOPE_CLOCK=exact never
 * starts it. */
#define MMS_STAMP_BURST 64u
#define MMS_STAMP_EVERY 16u
extern int mms__stamp_one MMS_HIDDEN;
struct mms_stamp_tls {
	uint64_t last;           /* the last TSC reading this thread took (every
	                            stamp function notes it, so a repeat is never
	                            below a stamp the thread wrote) */
	int64_t tick;            /* the coarse clock then */
	uint32_t left;           /* events that may repeat it */
	uint32_t burst;          /* readings still taken at every event in this tick */
};
extern __thread struct mms_stamp_tls mms__tls_stamp MMS_HIDDEN;
/* A second thread records (called before its first stamp): every stamp
 * reads the TSC from now on. */
void mms__stamp_many(void) MMS_HIDDEN;
/* After fork, in the child: one thread again. */
void mms__stamp_after_fork_child(void) MMS_HIDDEN;

#if defined(__x86_64__) || defined(__i386__)
/* The stamp of an allocation or a free while mms__stamp_one is set. */
static inline uint64_t mms__stamp_one_thread(void)
{
	struct mms_stamp_tls *s = &mms__tls_stamp;
	struct timespec ts;
	int64_t tick;

	mms__real.clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	tick = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	if (likely(tick == s->tick && s->left)) {
		s->left--;
		return s->last;
	}
	if (tick != s->tick) {
		s->tick = tick;
		s->burst = MMS_STAMP_BURST;
	}
	if (s->burst)
		s->burst--;
	else
		s->left = MMS_STAMP_EVERY - 1;
	return s->last = mms_tsc();
}
#endif

/* A stamp taken before memory is released. No fence is needed: the stores
 * that release the memory become visible to other cores only after they
 * retire, and they retire after this older rdtsc has executed. (It may
 * read the TSC before an earlier stamp of this thread; the writer clamps
 * that, which keeps the order with other threads: see mms__rec_head.) */
static inline uint64_t mms__stamp_release(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (likely(mms__clock_tsc))
		return mms__tls_stamp.last = mms_tsc();
#endif
	return __atomic_fetch_add(&mms__counter, 1, __ATOMIC_SEQ_CST);
}

/* A stamp taken after memory was obtained: every earlier instruction (the
 * call that returned it) has completed before the read. */
static inline uint64_t mms__stamp_obtain(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (likely(mms__clock_tsc)) {
		__asm__ __volatile__("lfence" ::: "memory");
		return mms__tls_stamp.last = mms_tsc();
	}
#endif
	return __atomic_fetch_add(&mms__counter, 1, __ATOMIC_SEQ_CST);
}

/* Which thread last released each address, hashed: (addr << 16 | thread).
 * An obtaining stamp skips its fence when this thread itself released the
 * address last: program order then already puts the release first. */
#define MMS_RELEASERS (1u << 16)
#define MMS_NO_THREAD 0xffffu
extern uint64_t *mms__releasers MMS_HIDDEN;
void mms__releasers_reset(void) MMS_HIDDEN;

static inline uint64_t mms__releaser_key(uint64_t addr, uint32_t thread)
{
	return (addr << 16) | (thread < MMS_NO_THREAD ? thread : MMS_NO_THREAD);
}

static inline uint64_t *mms__releaser_slot(uint64_t addr)
{
	return &mms__releasers[(addr >> 4) & (MMS_RELEASERS - 1)];
}

/* The one thread that has released memory so far, MMS_NO_RELEASER before
 * any release, MMS_MANY_RELEASERS once a second thread released. */
#define MMS_NO_RELEASER 0xffffffffu
#define MMS_MANY_RELEASERS 0xfffffffeu
extern uint32_t mms__sole_releaser MMS_HIDDEN;

/* Notes, before the real call releases it, that thread `thread` releases
 * addr. On x86 these stores become visible before the stores of the
 * release itself, so a thread that then obtains addr sees them (or later
 * ones). */
void mms__note_releaser(uint32_t thread) MMS_HIDDEN;

static inline void mms__note_release(uint64_t addr, uint32_t thread)
{
	uint32_t sole = __atomic_load_n(&mms__sole_releaser, __ATOMIC_RELAXED);

	/* While this thread is the only one that has released memory, the
	 * table is read by nobody: this thread's own obtains skip the fence
	 * on `sole`, and another thread's find no entry of theirs for addr
	 * (they have released nothing) and fence. A thread that released
	 * memory this thread obtains has made `sole` MANY before that release
	 * (its first), so this thread sees MANY before it releases the same
	 * memory again, and writes the table from then on. */
	if (likely(sole == thread))
		return;
	if (sole != MMS_MANY_RELEASERS)
		mms__note_releaser(thread);
	if (likely(mms__releasers != NULL))
		__atomic_store_n(mms__releaser_slot(addr), mms__releaser_key(addr, thread), __ATOMIC_RELAXED);
}

/* The stamp of obtaining addr (see mms__stamp_obtain), unfenced where no
 * release by another thread can be what handed addr over: when no thread
 * but this one has released memory yet, or when this thread released
 * addr last. The fence drains the pipeline behind the allocator's memory
 * accesses: paid on every malloc, it would be the largest cost of a hook. */
static inline uint64_t mms__stamp_obtain_addr(uint64_t addr, uint32_t thread)
{
#if defined(__x86_64__)
	uint32_t sole;

	if (likely(__atomic_load_n(&mms__stamp_one, __ATOMIC_RELAXED)))
		return mms__stamp_one_thread();
	if (likely(mms__clock_tsc) &&
	    ((sole = __atomic_load_n(&mms__sole_releaser, __ATOMIC_RELAXED)) == thread || sole == MMS_NO_RELEASER ||
	     (likely(mms__releasers != NULL) && thread < MMS_NO_THREAD && !(addr >> 47) &&
	      __atomic_load_n(mms__releaser_slot(addr), __ATOMIC_RELAXED) == mms__releaser_key(addr, thread))))
		return mms__tls_stamp.last = mms_tsc();
#endif
	(void)addr, (void)thread;
	return mms__stamp_obtain();
}

/* The stamp of a free (see mms__stamp_release; one thread: see above). */
static inline uint64_t mms__stamp_release_heap(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (likely(__atomic_load_n(&mms__stamp_one, __ATOMIC_RELAXED)))
		return mms__stamp_one_thread();
#endif
	return mms__stamp_release();
}

#endif /* MMS_STAMP_H */
