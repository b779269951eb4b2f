/* SPDX-License-Identifier: MIT */
/* unwind-check.c: the check mode (MSMEMSCOPE_UNWIND_CHECK): every stack
 * is captured by the walker and by libunwind, libunwind's frames are
 * recorded, and at exit one line on stderr says how many stacks the two
 * captured differently and why the walker gave some up. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "unwind.h"

/* unwind_check=1 (MSMEMSCOPE_UNWIND_CHECK=1): every stack is captured both ways and the
 * differences counted (2: and the first ones printed). */
static int check_mode;
static uint64_t n_stacks, n_walked, n_mismatch, n_fallback[MMS_FB_COUNT];
static uint32_t n_printed;

static void say(const char *s)
{
	mms__say(s, (int)strlen(s), strlen(s) + 1);
}

static void print_frames(const char *what, const uintptr_t *ips, int n)
{
	char line[512];

	snprintf(line, sizeof line, "  %s: %d frames\n", what, n);
	say(line);
	for (int i = 0; i < n && i < 40; i++) {
		Dl_info info;
		if (dladdr((void *)ips[i], &info) && info.dli_fname)
			snprintf(line, sizeof line, "    #%d %#lx %s+%#lx %s\n", i, (unsigned long)ips[i],
				 info.dli_fname, (unsigned long)(ips[i] - (uintptr_t)info.dli_fbase),
				 info.dli_sname ? info.dli_sname : "");
		else
			snprintf(line, sizeof line, "    #%d %#lx\n", i, (unsigned long)ips[i]);
		say(line);
	}
}

/* Captures the stack both ways and returns libunwind's frames. When the
 * walker took the stack's node id from a recent stack, *wid is that id,
 * for the caller to compare with the id libunwind's frames get; otherwise
 * the frames are compared here, and *same says whether they agree. */
static int stack_check(struct mms_thread *t, uintptr_t *out, int depth, uint32_t *wid, int *same, uintptr_t fp)
{
	uintptr_t *mine = mms__walker_scratch(t);
	int n, m, busy = mms__tls_busy;

	*wid = 0;
	*same = 0;
	if (!mine)
		return mms__libunwind_frames(out, depth);
	n = mms__walker_frames(t, mine, depth, wid, fp);
	m = mms__libunwind_frames(out, depth);

	__atomic_fetch_add(&n_stacks, 1, __ATOMIC_RELAXED);
	if (n < 0) {
		__atomic_fetch_add(&n_fallback[-1 - n], 1, __ATOMIC_RELAXED);
		if (check_mode >= 2 && -1 - n != MMS_FB_BUSY && __atomic_fetch_add(&n_printed, 1, __ATOMIC_RELAXED) < 10) {
			mms__tls_busy = 2;
			say("msmemscope: unwind check: walker fell back: ");
			say(mms__walk_fallback_names[-1 - n]);
			say("\n");
			print_frames("libunwind", out, m);
			mms__tls_busy = busy;
		}
		return m;
	}
	__atomic_fetch_add(&n_walked, 1, __ATOMIC_RELAXED);
	if (*wid)
		return m;
	*same = n == m && !memcmp(mine, out, (size_t)n * sizeof *out);
	if (*same)
		return m;
	__atomic_fetch_add(&n_mismatch, 1, __ATOMIC_RELAXED);
	if (check_mode >= 2 && __atomic_fetch_add(&n_printed, 1, __ATOMIC_RELAXED) < 10) {
		mms__tls_busy = 2;
		say("msmemscope: unwind check: stacks differ\n");
		print_frames("walker", mine, n);
		print_frames("libunwind", out, m);
		mms__tls_busy = busy;
	}
	return m;
}

/* The walk: libunwind's frames are interned; the walker's id for a recent
 * stack must be theirs; the walker keeps its walk as a recent one only
 * when its frames were libunwind's. */
static uint32_t check_walk(struct mms_thread *t, uintptr_t fp, int depth)
{
	uintptr_t *buf = t->frames;
	uint32_t wid, id;
	int same, n;

	if (!mms__libunwind_room(t) || mms__libunwind_barred(t))
		return 0; /* a small signal stack, a fork child's loader: neither walks */
	n = stack_check(t, buf, depth, &wid, &same, fp);

	if (n <= 0)
		return 0;
	id = mms__unwind_intern(t, buf, n);
	if (wid && wid != id) {
		__atomic_fetch_add(&n_mismatch, 1, __ATOMIC_RELAXED);
		if (check_mode >= 2 && __atomic_fetch_add(&n_printed, 1, __ATOMIC_RELAXED) < 10)
			say("msmemscope: unwind check: a recent stack's id differs\n");
	}
	mms__walker_interned(t, id, same);
	return id;
}

static void check_report(void)
{
	char line[512];
	int len;

	if (!check_mode)
		return;
	len = snprintf(line, sizeof line,
		       "msmemscope: unwind check: pid %ld: %llu stacks, %llu walked, %llu mismatches; fell back:",
		       (long)getpid(), (unsigned long long)n_stacks, (unsigned long long)n_walked,
		       (unsigned long long)n_mismatch);
	for (int i = 0; i < MMS_FB_COUNT && len < (int)sizeof line - 40; i++)
		len += snprintf(line + len, sizeof line - (size_t)len, " %s %llu", mms__walk_fallback_names[i],
				(unsigned long long)n_fallback[i]);
	snprintf(line + len, sizeof line - (size_t)len, "\n");
	say(line);
}

static void check_thread_start(struct mms_thread *t)
{
	mms__unwind_walker.thread_start(t);
}

static void check_init(void)
{
	check_mode = mms__config.unwind_check;
	mms__libunwind_init();
}

static void check_after_fork_child(void)
{
	n_stacks = n_walked = n_mismatch = 0;
	memset(n_fallback, 0, sizeof n_fallback);
	n_printed = 0;
}

const struct mms_unwinder mms__unwind_check = {
	.name = "check",
	.init = check_init,
	.thread_start = check_thread_start,
	.walk = check_walk,
	.after_fork_child = check_after_fork_child,
	.report = check_report,
};
