/* SPDX-License-Identifier: MIT */
/* clock.c: chooses how events are stamped: the invariant TSC when the CPU
 * reports one, else one global atomic counter; and, while the process has
 * one thread, how often its allocations and frees read the TSC (stamp.h). */
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <time.h>

#include "hooks-int.h"
#include "stamp.h"

int mms__clock_tsc;
int mms__stamp_one;
__thread struct mms_stamp_tls mms__tls_stamp;
uint64_t mms__counter = 1;
uint64_t *mms__releasers;
uint32_t mms__sole_releaser = MMS_NO_RELEASER;

/* True when /proc/cpuinfo lists both constant_tsc and nonstop_tsc: the TSC
 * ticks at one rate in every power state, so stamps from different cores
 * compare. Read once at start-up, never on the hot path. */
static int cpu_has_invariant_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	static char line[4096]; /* once, at start-up: not on a small stack */
	int constant = 0, nonstop = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "flags", 5))
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
#else
	return 0;
#endif
}

/* Whether a process with one thread may repeat TSC readings (stamp.h):
 * the TSC is the clock, exact times were not asked for, and the coarse
 * clock is read in the vDSO (without it, each reading would be a system
 * call, dearer than rdtsc). */
static int one_thread_stamps(int clock)
{
	return mms__clock_tsc && clock != MMS_CONFIG_CLOCK_EXACT && mms__real.clock_gettime &&
	       getauxval(AT_SYSINFO_EHDR) != 0;
}

void mms__clock_init(int clock)
{
	mms__clock_tsc = clock != MMS_CONFIG_CLOCK_COUNTER && cpu_has_invariant_tsc();
	if (mms__clock_tsc)
		mms__releasers = mms__map_anon(MMS_RELEASERS * sizeof(uint64_t));
	/* One thread so far (the recorder starts before main, as a rule;
	 * started later, the threads that run already count). */
	mms__stamp_one = one_thread_stamps(clock) && mms__threads_now() == 1;
}

void mms__stamp_many(void)
{
	if (__atomic_load_n(&mms__stamp_one, __ATOMIC_RELAXED))
		__atomic_store_n(&mms__stamp_one, 0, __ATOMIC_SEQ_CST);
}

void mms__stamp_after_fork_child(void)
{
	/* The child's one thread: the parent's ended with the fork. Its
	 * reading was taken in the parent; the next one is new. */
	mms__tls_stamp.tick = 0;
	mms__tls_stamp.left = 0;
	mms__stamp_one = one_thread_stamps(mms__config.clock);
}

/* A thread releases memory and is not known as the only one that does:
 * it becomes that one if none did before, else there are many. */
void mms__note_releaser(uint32_t thread)
{
	uint32_t expect = MMS_NO_RELEASER;

	if (!__atomic_compare_exchange_n(&mms__sole_releaser, &expect, thread, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) &&
	    expect != thread)
		__atomic_store_n(&mms__sole_releaser, MMS_MANY_RELEASERS, __ATOMIC_SEQ_CST);
}

/* After fork: the parent's threads' releases are not in the child's log. */
void mms__releasers_reset(void)
{
	mms__sole_releaser = MMS_NO_RELEASER;
	if (mms__releasers)
		mms__advise(mms__releasers, MMS_RELEASERS * sizeof(uint64_t), MADV_DONTNEED);
}

uint64_t mms__realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
