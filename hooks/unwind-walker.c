/* SPDX-License-Identifier: MIT */
/* unwind-walker.c: the stack walker of our own, over the DWARF frame
 * rules of cfi.c (cached per thread), reusing the frames of recent walks
 * whose stack words are unchanged; libunwind takes the stacks it cannot
 * walk. The default unwinder. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "unwind.h"

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
	uintptr_t scratch[MMS_MAX_DEPTH + 8]; /* the check mode's second stack */
};

const char *const mms__walk_fallback_names[MMS_FB_COUNT] = {
	"no-stack", "self-chain", "busy", "no-fde", "unsupported", "bounds",
};

static void forget_walks(struct mms_unw *u)
{
	u->last_n = 0;
	memset(u->recent_ra, 0, sizeof u->recent_ra);
}

/* A thread's first capture: its stack's bounds, and its walker memory
 * (mapped, or another thread's taken over with the thread state). */
static void walker_thread_start(struct mms_thread *t)
{
	int busy = mms__tls_busy;

	mms__stack_bounds(t); /* unknown (stack_hi 1): every stack goes to libunwind */
	mms__tls_busy = 2;
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
		return 1 + MMS_FB_BUSY;
	e->ra = ra;
	e->rule = rule;
	if (err)
		return 1 + (err == -ENOENT ? MMS_FB_NO_FDE : MMS_FB_UNSUPPORTED);
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

/* The caller's stack by our walker, as mms__walker_frames (unwind.h).
 * Reads nothing outside this thread's stack. Inlined into the walker's
 * walk, which is on the way of every capture. */
static inline __attribute__((always_inline)) int walk_frames(struct mms_thread *t, uintptr_t *out, int depth,
							     uint32_t *id, uintptr_t fp)
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
	return -1 - MMS_FB_UNSUPPORTED; /* cfi.c knows x86-64 only */
#endif
	if (fp < t->stack_lo || fp >= hi)
		return -1 - MMS_FB_NO_STACK;
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
			return -1 - MMS_FB_SELF;
		ra = ((uintptr_t *)fp)[1];
		if (ra < mms__self_lo || ra >= mms__self_hi)
			break;
		next = ((uintptr_t *)fp)[0];
		if (next <= fp)
			return -1 - MMS_FB_SELF;
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
			return -1 - MMS_FB_UNSUPPORTED;
		}
		if (r.flags & MMS_CFI_CFA_RBP) {
			if (unlikely(!rbp))
				return -1 - MMS_FB_UNSUPPORTED;
			cfa = rbp + (uintptr_t)(intptr_t)r.cfa_off;
		} else {
			cfa = sp + (uintptr_t)(intptr_t)r.cfa_off;
		}
		/* The CFA grows by a return address at least, within the stack. */
		if (unlikely(cfa < sp + 8 || cfa > hi))
			return -1 - MMS_FB_BOUNDS;
		ra = ((uintptr_t *)cfa)[-1];
		if (r.flags & MMS_CFI_RBP_SAVED) {
			uintptr_t at = cfa + (uintptr_t)(intptr_t)r.rbp_off;
			if (unlikely(at < lo || at > hi - 8))
				return -1 - MMS_FB_BOUNDS;
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

/* --- the backend ----------------------------------------------------------- */

int mms__walker_frames(struct mms_thread *t, uintptr_t *out, int depth, uint32_t *id, uintptr_t fp)
{
	return walk_frames(t, out, depth, id, fp);
}

int mms__walker_peek(struct mms_thread *t, uintptr_t *out, int depth, uintptr_t fp)
{
	if (unlikely(!t->stack_hi))
		walker_thread_start(t);
	return t->unw ? walk_frames(t, out, depth, NULL, fp) : -1 - MMS_FB_NO_STACK;
}

uintptr_t *mms__walker_scratch(struct mms_thread *t)
{
	return t->unw ? t->unw->scratch : NULL;
}

void mms__walker_interned(struct mms_thread *t, uint32_t id, int same)
{
	if (t->unw && t->unw->fill) {
		if (same)
			recent_store(t->unw, id);
		else
			t->unw->fill = 0;
	}
}

static uint32_t walker_walk(struct mms_thread *t, uintptr_t fp, int depth)
{
	uintptr_t *buf = t->frames;
	uint32_t id = 0;
	int n = t->unw ? walk_frames(t, buf, depth, &id, fp) : -1 - MMS_FB_NO_STACK;

	if (n < 0) {
		/* Off the thread's stack: perhaps a small signal stack. */
		if ((n == -1 - MMS_FB_NO_STACK && !mms__libunwind_room(t)) || mms__libunwind_barred(t))
			return 0;
		return mms__unwind_intern(t, buf, mms__libunwind_frames(buf, depth));
	}
	if (id)
		return id; /* a recent stack */
	if (n == 0)
		return 0;
	id = mms__unwind_intern(t, buf, n);
	if (t->unw->fill)
		recent_store(t->unw, id);
	return id;
}

static void walker_nothing(void)
{
}

const struct mms_unwinder mms__unwind_walker = {
	.name = "walker",
	.init = mms__libunwind_init, /* for the stacks the walker cannot walk */
	.thread_start = walker_thread_start,
	.walk = walker_walk,
	.after_fork_child = walker_nothing,
	.report = walker_nothing,
};
