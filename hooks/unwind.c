/* SPDX-License-Identifier: MIT */
/* unwind.c: captures C call stacks, with a walker of our own over the DWARF
 * frame rules of cfi.c (cached per thread) and with libunwind for the
 * stacks the walker does not handle, and interns them as a path of
 * (parent, ip) nodes, reusing the outer frames of the last stack. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hooks-int.h"

/* Our own code's address range: frames there are the hook, not the program. */
static uintptr_t self_lo, self_hi;
/* libunwind's code: it maps its per-thread caches inside unw_backtrace()
 * (not recorded) and unmaps them in a thread-exit destructor of its own,
 * through munmap(), which must not be recorded either. */
static uintptr_t unw_lo, unw_hi;

/* One cached frame rule: the rule of the frame whose return address is ra. */
struct mms_unw_entry {
	uintptr_t ra;
	struct mms_cfi_rule rule;
};

/* One frame of a walk: its return address, the stack pointer and rbp in
 * the frame, and where the step out of it read the caller's rbp (0: it
 * did not). */
struct walk_frame {
	uintptr_t ra, sp, rbp, rbp_at;
};

/* How a walk ended. */
enum { END_DEPTH, END_LAST, END_ZERO };

/* A recent walk of up to RECENT_FRAMES frames and the node id its stack
 * was interned as, kept by its first frame in a set of RECENT_WAYS (one
 * first frame has as many outer stacks as callers). */
#define RECENT_BITS 6
#define RECENT_SETS (1u << RECENT_BITS)
#define RECENT_WAYS 4
#define RECENT_FRAMES 64
struct recent_walk {
	uint32_t n;              /* frames */
	uint32_t end;            /* how it ended */
	uint32_t id;             /* its stack's node id, 0: not known */
	uintptr_t end_sp;        /* END_ZERO: the CFA under which it read 0 */
	struct walk_frame f[RECENT_FRAMES];
};

/* A thread's walker memory, mapped at its first capture and kept with the
 * thread state (which later threads reuse). The rule cache is
 * direct-mapped and valid while gen equals mms__cfi_gen.
 *
 * A walk is a pure function of its first frame (return address, stack
 * pointer, rbp), the rules (fixed while gen is) and the stack words it
 * reads. So a walk that starts where a recent one started, and finds the
 * words that one read unchanged, is that one: it checks them with loads
 * independent of each other (a walk's are a chain) and takes its frames
 * and its interned id. A walk that reaches a frame of the thread's last
 * walk does the same for the rest of the stack. */
#define CACHE_BITS 12
#define CACHE_SLOTS (1u << CACHE_BITS)
struct mms_unw {
	uint32_t gen;
	uint32_t last;           /* walks[last] is the last walk */
	uint32_t last_n;         /* its frames, 0: none to reuse */
	uint32_t last_end;       /* how it ended */
	uintptr_t last_end_sp;   /* END_ZERO: the CFA under which it read 0 */
	uint32_t fill;           /* the last walk is to be kept as a recent one */
	uint32_t fill_set;       /* in this set */
	uint8_t victim[RECENT_SETS]; /* the way each set replaces next */
	/* The first return address of each recent walk, 0: none kept. Apart
	 * from the walks: a look-up reads one line, and forgetting them all
	 * touches 2 KiB, not each walk's page. */
	uintptr_t recent_ra[RECENT_SETS][RECENT_WAYS];
	struct mms_unw_entry cache[CACHE_SLOTS];
	struct recent_walk recent[RECENT_SETS][RECENT_WAYS];
	struct walk_frame walks[2][MMS_MAX_DEPTH + 1];
	uintptr_t check[MMS_MAX_DEPTH + 8]; /* the check mode's second stack */
};

/* Why the walker gave a stack to libunwind (counted in the check mode). */
enum fallback {
	FB_NO_STACK,      /* the thread's stack is unknown, or we are not on it */
	FB_SELF,          /* our own frame-pointer chain is broken */
	FB_BUSY,          /* another thread was reading the module table */
	FB_NO_FDE,        /* no call frame information for a return address */
	FB_UNSUPPORTED,   /* a rule the walker does not handle (PLT, signal frame) */
	FB_BOUNDS,        /* a step would leave the stack or not grow the CFA */
	FB_COUNT
};
static const char *const fallback_names[FB_COUNT] = {
	"no-stack", "self-chain", "busy", "no-fde", "unsupported", "bounds",
};

/* MSMEMSCOPE_UNWIND_CHECK=1: every stack is captured both ways and the
 * differences counted (2: and the first ones printed). */
static int check_mode;
static uint64_t n_stacks, n_walked, n_mismatch, n_fallback[FB_COUNT];
static uint32_t n_printed;

struct code_range {
	uintptr_t here; /* an address in the code looked for */
	uintptr_t *lo, *hi;
};

static int find_code(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct code_range *r = arg;
	(void)size;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && r->here >= lo && r->here < hi) {
			*r->lo = lo;
			*r->hi = hi;
			return 1;
		}
	}
	return 0;
}

int mms__unwinder_code(uintptr_t ip)
{
	return ip >= unw_lo && ip < unw_hi;
}

void mms__unwind_init(void)
{
	struct code_range self = { (uintptr_t)&mms__unwind_init, &self_lo, &self_hi };
	struct code_range unw = { (uintptr_t)&unw_backtrace, &unw_lo, &unw_hi };
	const char *check = getenv("MSMEMSCOPE_UNWIND_CHECK");

	dl_iterate_phdr(find_code, &self);
	dl_iterate_phdr(find_code, &unw);
	check_mode = check && *check ? atoi(check) : 0;
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

/* The program put a descriptor of its own at the number of libunwind's
 * pipe (dup2 onto it): libunwind writes into that pipe, so it is never
 * called again; the stacks it would have taken end where the walker
 * stopped. */
void mms__unwind_lost_fd(void)
{
	__atomic_store_n(&unw_state, 2, __ATOMIC_RELEASE);
}

void mms__unwind_after_fork_child(void)
{
	mms__cfi_after_fork_child();
	n_stacks = n_walked = n_mismatch = 0;
	memset(n_fallback, 0, sizeof n_fallback);
	n_printed = 0;
}

/* --- libunwind ------------------------------------------------------------ */

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

/* The caller's stack by libunwind, innermost first, without our frames:
 * returns the number of frames (at most depth). */
static int stack_libunwind(uintptr_t *out, int depth)
{
	static uint32_t flushed_gen = 1;
	void *buf[MMS_MAX_DEPTH + 8];
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
	while (skip < n && (uintptr_t)buf[skip] >= self_lo && (uintptr_t)buf[skip] < self_hi)
		skip++;
	n -= skip;
	if (n > depth)
		n = depth;
	for (int i = 0; i < n; i++)
		out[i] = (uintptr_t)buf[skip + i];
	return n > 0 ? n : 0;
}

/* --- the walker ----------------------------------------------------------- */

static void forget_walks(struct mms_unw *u)
{
	u->last_n = 0;
	memset(u->recent_ra, 0, sizeof u->recent_ra);
}

static void stack_bounds(struct mms_thread *t)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;
	int busy = mms__tls_busy;

	t->stack_lo = 0;
	t->stack_hi = 1; /* unknown: every stack goes to libunwind */
	mms__tls_busy = 2; /* glibc reads /proc/self/maps with stdio */
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size) {
			t->stack_lo = (uintptr_t)addr;
			t->stack_hi = (uintptr_t)addr + size;
		}
		pthread_attr_destroy(&attr);
	}
	if (!t->unw) {
		t->unw = mms__map_anon(sizeof *t->unw);
		if (!t->unw)
			t->stack_hi = 1;
	} else {
		forget_walks(t->unw); /* another thread's, whose stack may be gone */
	}
	mms__tls_busy = busy;
}

static inline uint32_t cache_slot(uintptr_t ra)
{
	return (uint32_t)((ra * 0x9e3779b97f4a7c15ull) >> (64 - CACHE_BITS));
}

/* Fills e with the rule of return address ra. Returns 0, or 1 + the
 * reason to give the stack to libunwind. */
static __attribute__((noinline)) int rule_miss(struct mms_unw_entry *e, uintptr_t ra)
{
	struct mms_cfi_rule rule;
	int busy = mms__tls_busy, err;

	mms__tls_busy = 2;
	err = mms__cfi_rule(ra, &rule);
	mms__tls_busy = busy;
	if (err == -EAGAIN)
		return 1 + FB_BUSY;
	e->ra = ra;
	e->rule = rule;
	if (err)
		return 1 + (err == -ENOENT ? FB_NO_FDE : FB_UNSUPPORTED);
	return 0;
}

/* Whether the stack words that the steps from frame `from` to frame
 * end - 1 of a walk read still hold what they read. Each step read the
 * return address under the next frame's CFA and maybe the caller's rbp. */
static inline int steps_hold(const struct walk_frame *f, uint32_t from, uint32_t end)
{
	for (uint32_t k = from; k + 1 < end; k++)
		if (((const uintptr_t *)f[k + 1].sp)[-1] != f[k + 1].ra ||
		    (f[k].rbp_at && *(const uintptr_t *)f[k].rbp_at != f[k + 1].rbp))
			return 0;
	return 1;
}

static inline uint32_t recent_set(uintptr_t ra, uintptr_t sp)
{
	return (uint32_t)(((ra ^ (sp * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull) >> (64 - RECENT_BITS));
}

/* The last walk's frames from `from` on, if the stack words it read from
 * there are unchanged: copies them to out and cur from index n on and
 * returns how many frames the walk now has; or returns -1. Sets *more
 * when the last walk stopped at the depth only, so the walk must go on
 * from the last frame copied. */
static int reuse_last(struct mms_unw *u, const struct walk_frame *last, uint32_t from, struct walk_frame *cur,
		      uintptr_t *out, int n, int depth, int *more)
{
	uint32_t end = u->last_n, k;
	int total = n + (int)(end - from);

	*more = 0;
	if (total >= depth) {
		end = from + (uint32_t)(depth - n);
	} else if (u->last_end == END_DEPTH) {
		*more = 1;
	} else if (u->last_end == END_ZERO && ((const uintptr_t *)u->last_end_sp)[-1] != 0) {
		return -1;
	}
	if (!steps_hold(last, from, end))
		return -1;
	for (k = from; k < end; k++, n++) {
		cur[n] = last[k];
		out[n] = last[k].ra;
	}
	return n;
}

/* The caller's stack by our walker, innermost first, without our frames:
 * returns the number of frames (at most depth), or -1 - (enum fallback)
 * when libunwind must capture this stack. With id, a stack that is a
 * recent one whose node id is known sets *id and leaves out unset. Reads
 * nothing outside this thread's stack. */
static int stack_walk(struct mms_thread *t, uintptr_t *out, int depth, uint32_t *id, uintptr_t fp)
{
	uintptr_t lo = fp, hi = t->stack_hi;
	uintptr_t ra, sp, rbp, cfa, next;
	struct mms_unw *u = t->unw;
	uint32_t gen = __atomic_load_n(&mms__cfi_gen, __ATOMIC_ACQUIRE);
	const struct walk_frame *last;
	struct walk_frame *cur;
	struct recent_walk *rw;
	uint32_t j = 0, last_n, set;
	int n = 0, err, more, end = END_DEPTH;

	u->fill = 0;
#if !defined(__x86_64__)
	return -1 - FB_UNSUPPORTED; /* cfi.c knows x86-64 only */
#endif
	if (fp < t->stack_lo || fp >= hi)
		return -1 - FB_NO_STACK;
	if (unlikely(u->gen != gen)) {
		memset(u->cache, 0, sizeof u->cache);
		forget_walks(u);
		u->gen = gen;
	}
	last = u->walks[u->last];
	cur = u->walks[!u->last];
	last_n = u->last_n;
	/* Our frames keep frame pointers: follow them to the first return
	 * address outside our code, the program's innermost frame. */
	for (;;) {
		if ((fp & 7) || fp + 16 > hi)
			return -1 - FB_SELF;
		ra = ((uintptr_t *)fp)[1];
		if (ra < self_lo || ra >= self_hi)
			break;
		next = ((uintptr_t *)fp)[0];
		if (next <= fp)
			return -1 - FB_SELF;
		fp = next;
	}
	sp = fp + 16;
	rbp = ((uintptr_t *)fp)[0];
	/* A recent walk from the same first frame, whose words still hold? */
	set = recent_set(ra, sp);
	for (uint32_t way = 0; way < RECENT_WAYS; way++) {
		rw = &u->recent[set][way];
		if (u->recent_ra[set][way] == ra && rw->f[0].sp == sp && rw->f[0].rbp == rbp &&
		    steps_hold(rw->f, 0, rw->n) && (rw->end != END_ZERO || ((const uintptr_t *)rw->end_sp)[-1] == 0)) {
			if (id && rw->id) {
				*id = rw->id;
				return (int)rw->n;
			}
			for (n = 0; n < (int)rw->n; n++)
				out[n] = rw->f[n].ra;
			return n;
		}
	}
	for (;;) {
		struct mms_unw_entry *e;
		struct mms_cfi_rule r;

		if (!ra) {
			end = END_ZERO;
			break;
		}
		/* A frame of the last walk: the rest may be the same. */
		while (j < last_n && last[j].sp < sp)
			j++;
		if (j < last_n && last[j].sp == sp && last[j].ra == ra && last[j].rbp == rbp) {
			int m = reuse_last(u, last, j, cur, out, n, depth, &more);
			last_n = 0;
			if (m >= 0) {
				if (!more) {
					end = m == depth ? END_DEPTH : (int)u->last_end;
					sp = u->last_end_sp;
					n = m;
					break;
				}
				/* Go on from the last frame copied. */
				n = m - 1;
				ra = cur[n].ra;
				sp = cur[n].sp;
				rbp = cur[n].rbp;
			}
		}
		cur[n].ra = ra;
		cur[n].sp = sp;
		cur[n].rbp = rbp;
		cur[n].rbp_at = 0;
		out[n++] = ra;
		if (n == depth)
			break;
		e = &u->cache[cache_slot(ra)];
		if (unlikely(e->ra != ra) && (err = rule_miss(e, ra)))
			return -err;
		r = e->rule;
		if (unlikely(r.flags & (MMS_CFI_LAST | MMS_CFI_UNSUPPORTED))) {
			if (r.flags & MMS_CFI_LAST) {
				end = END_LAST;
				break;
			}
			return -1 - FB_UNSUPPORTED;
		}
		if (r.flags & MMS_CFI_CFA_RBP) {
			if (unlikely(!rbp))
				return -1 - FB_UNSUPPORTED;
			cfa = rbp + (uintptr_t)(intptr_t)r.cfa_off;
		} else {
			cfa = sp + (uintptr_t)(intptr_t)r.cfa_off;
		}
		/* The CFA grows by a return address at least, within the stack. */
		if (unlikely(cfa < sp + 8 || cfa > hi))
			return -1 - FB_BOUNDS;
		ra = ((uintptr_t *)cfa)[-1];
		if (r.flags & MMS_CFI_RBP_SAVED) {
			uintptr_t at = cfa + (uintptr_t)(intptr_t)r.rbp_off;
			if (unlikely(at < lo || at > hi - 8))
				return -1 - FB_BOUNDS;
			rbp = *(uintptr_t *)at;
			cur[n - 1].rbp_at = at;
		} else if (r.flags & MMS_CFI_RBP_UNDEF) {
			rbp = 0; /* a CFA from it is refused above */
		}
		sp = cfa;
	}
	u->last = !u->last;
	u->last_n = (uint32_t)n;
	u->last_end = (uint32_t)end;
	u->last_end_sp = sp;
	if (n <= RECENT_FRAMES) {
		u->fill_set = set;
		u->fill = 1;
	}
	return n;
}

/* Keeps the last walk, whose stack was interned as id (0: unknown), as a
 * recent one. */
static void recent_store(struct mms_unw *u, uint32_t id)
{
	uint32_t set = u->fill_set;
	uint32_t way = u->victim[set]++ % RECENT_WAYS;
	struct recent_walk *rw = &u->recent[set][way];

	rw->n = u->last_n;
	rw->end = u->last_end;
	rw->end_sp = u->last_end_sp;
	rw->id = id;
	memcpy(rw->f, u->walks[u->last], u->last_n * sizeof *rw->f);
	u->recent_ra[set][way] = rw->f[0].ra;
	u->fill = 0;
}

/* --- the check mode ------------------------------------------------------- */

static void say(const char *s)
{
	ssize_t r = write(2, s, strlen(s));
	(void)r;
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
	uintptr_t *mine;
	int n, m, busy = mms__tls_busy;

	*wid = 0;
	*same = 0;
	if (!t->unw)
		return stack_libunwind(out, depth);
	mine = t->unw->check;
	n = stack_walk(t, mine, depth, wid, fp);
	m = stack_libunwind(out, depth);

	__atomic_fetch_add(&n_stacks, 1, __ATOMIC_RELAXED);
	if (n < 0) {
		__atomic_fetch_add(&n_fallback[-1 - n], 1, __ATOMIC_RELAXED);
		if (check_mode >= 2 && -1 - n != FB_BUSY && __atomic_fetch_add(&n_printed, 1, __ATOMIC_RELAXED) < 10) {
			mms__tls_busy = 2;
			say("msmemscope: unwind check: walker fell back: ");
			say(fallback_names[-1 - n]);
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

/* The check mode, after libunwind's frames were interned as id: the
 * walker's id for a recent stack must be the same; a walk whose frames
 * were not libunwind's is not kept. */
static void check_id(struct mms_thread *t, uint32_t wid, uint32_t id, int same)
{
	if (wid && wid != id) {
		__atomic_fetch_add(&n_mismatch, 1, __ATOMIC_RELAXED);
		if (check_mode >= 2 && __atomic_fetch_add(&n_printed, 1, __ATOMIC_RELAXED) < 10)
			say("msmemscope: unwind check: a recent stack's id differs\n");
	}
	if (!same && t->unw)
		t->unw->fill = 0;
}

void mms__unwind_report(void)
{
	char line[512];
	int len;

	if (!check_mode)
		return;
	len = snprintf(line, sizeof line,
		       "msmemscope: unwind check: pid %ld: %llu stacks, %llu walked, %llu mismatches; fell back:",
		       (long)getpid(), (unsigned long long)n_stacks, (unsigned long long)n_walked,
		       (unsigned long long)n_mismatch);
	for (int i = 0; i < FB_COUNT && len < (int)sizeof line - 40; i++)
		len += snprintf(line + len, sizeof line - (size_t)len, " %s %llu", fallback_names[i],
				(unsigned long long)n_fallback[i]);
	snprintf(line + len, sizeof line - (size_t)len, "\n");
	say(line);
}

/* --- capture and interning ------------------------------------------------- */

uint32_t mms__capture_stack_slow(struct mms_thread *t, uintptr_t fp)
{
	uint32_t depth = mms__config.depth;
	uintptr_t buf[MMS_MAX_DEPTH + 8];
	int n, same = 0;
	uint32_t k, c, parent = 0, wid = 0;

	if (unlikely(!t->stack_hi))
		stack_bounds(t);
	if (unlikely(check_mode))
		n = stack_check(t, buf, (int)depth, &wid, &same, fp);
	else if ((n = stack_walk(t, buf, (int)depth, &parent, fp)) < 0)
		n = stack_libunwind(buf, (int)depth);
	else if (parent)
		return parent; /* a recent stack */
	if (n <= 0)
		return 0;
	/* Frames outermost first: buf[n - 1] ... buf[0]. Keep the prefix
	 * shared with the previous stack of this thread. */
	k = (uint32_t)n;
	for (c = 0; c < k && c < t->nframes && t->ips[c] == buf[n - 1 - c]; c++)
		;
	if (c == k && k == t->nframes) {
		parent = t->stack_id;
	} else {
		parent = c ? t->ids[c - 1] : 0;
		for (uint32_t i = c; i < k; i++) {
			uintptr_t ip = buf[n - 1 - i];
			t->ips[i] = ip;
			t->ids[i] = parent = mms__intern_frame(t, parent, ip);
		}
		t->nframes = k;
		t->stack_id = parent;
	}
	if (unlikely(check_mode))
		check_id(t, wid, parent, same);
	if (t->unw && t->unw->fill)
		recent_store(t->unw, parent);
	return parent;
}
