/* SPDX-License-Identifier: MIT */
/* transform.c: memray-style transforms: a subscriber of a pass that selects
 * the allocations live at the high-water mark, leaked, or temporary, groups
 * them by (allocation stack, thread, allocator) and writes them as CSV or
 * as gprof2dot's JSON profile (or a flame graph, flamegraph.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msmemscope/export.h"
#include "msmemscope/log.h"
#include "msmemscope/symbolize.h"
#include "base-int.h"
#include "export-int.h"
#include "log-int.h"
#include "map-int.h"
#include "outfile-int.h"
#include "pass-int.h"
#include "state-int.h"
#include "transform-int.h"

/* The allocator of a block, as an index: HOST functions 0..7, mmap 8,
 * pools from 16 on (the pool's place in pools[]). */
#define XF_ALLOC_MMAP 8u
#define XF_ALLOC_POOL 16u

static int allocator_of(struct mms__xf *x, const struct mms__blk *b, uint32_t *out)
{
	const char *pool;
	size_t i;

	if (b->mem == MMS_MEM_MMAP) {
		*out = XF_ALLOC_MMAP;
		return 0;
	}
	if (b->mem != MMS_MEM_POOL) {
		/* memray knows no C++ operators: their blocks are malloc's, as
		 * memray sees them. */
		*out = b->fn < 8 ? b->fn : 0;
		return 0;
	}
	pool = mms__blk_origin(x->st, b)->pool;
	for (i = 0; i < x->npools; i++)
		if (x->pools[i] == pool)
			break;
	if (i == x->npools) {
		if (mms__grow(&x->pools, &x->pools_cap, x->npools, sizeof(*x->pools)))
			return -ENOMEM;
		x->pools[x->npools++] = pool;
	}
	*out = XF_ALLOC_POOL + (uint32_t)i;
	return 0;
}

const char *mms__xf_allocator_name(const struct mms__xf *x, uint32_t a)
{
	if (a < 8)
		return mms_alloc_func_name(a);
	if (a == XF_ALLOC_MMAP)
		return "mmap";
	a -= XF_ALLOC_POOL;
	return x->pools[a] && *x->pools[a] ? x->pools[a] : "pool";
}

/* The group of block b, created empty when new: returns its index, or
 * -ENOMEM. */
static int64_t group_of(struct mms__xf *x, const struct mms__blk *b)
{
	uint32_t a, thread = mms__blk_origin(x->st, b)->thread;
	uint64_t key, *v;
	int isnew;

	if (allocator_of(x, b, &a))
		return -ENOMEM;
	/* stack (32 bits), thread (24), allocator (8): pools beyond 239
	 * share a key slot only in the hash, never in the comparison. */
	key = (uint64_t)b->stack << 32 | (uint64_t)(thread & 0xffffff) << 8 | (a & 0xff);
	v = mms__map_put(&x->gix, key, &isnew);
	if (!v)
		return -ENOMEM;
	if (!isnew) {
		const struct mms__xf_group *g = &x->groups[*v - 1];

		if (g->stack == b->stack && g->thread == thread && g->allocator == a)
			return (int64_t)(*v - 1);
		/* A key collision (over 16M threads or 239 pools): search. */
		for (size_t i = 0; i < x->ngroups; i++)
			if (x->groups[i].stack == b->stack && x->groups[i].thread == thread &&
			    x->groups[i].allocator == a)
				return (int64_t)i;
	}
	if (mms__grow(&x->groups, &x->groups_cap, x->ngroups, sizeof(*x->groups)))
		return -ENOMEM;
	x->groups[x->ngroups] = (struct mms__xf_group){ b->stack, thread, a, 0, 0 };
	if (isnew)
		*v = x->ngroups + 1;
	return (int64_t)x->ngroups++;
}

static int group_add(struct mms__xf *x, const struct mms__blk *b, uint64_t count, uint64_t bytes)
{
	int64_t g = group_of(x, b);

	if (g < 0)
		return (int)g;
	x->groups[g].count += count;
	x->groups[g].bytes += bytes;
	return 0;
}

/* --- temporary allocations ---------------------------------------------------
 * As memray counts them: per thread. An allocation is temporary when the
 * thread that made it frees it after at most N other allocations of its
 * own, i.e. while it is among the thread's last N + 1 allocations. Each
 * thread keeps those ids in a ring (they increase, so the oldest bounds
 * the window). For a large N the ring would grow with the log; then each
 * live block's place among its thread's allocations is kept instead, in
 * a map that follows the live blocks. */

#define XF_RING_MAX (1u << 16)

static struct mms__xf_window *window_of(struct mms__xf *x, uint32_t thread)
{
	if (thread >= x->nwin) {
		size_t n = (size_t)thread + 1 > x->nwin * 2 ? (size_t)thread + 1 : x->nwin * 2;
		struct mms__xf_window *w = realloc(x->win, n * sizeof(*w));

		if (!w)
			return NULL;
		memset(w + x->nwin, 0, (n - x->nwin) * sizeof(*w));
		x->win = w;
		x->nwin = n;
	}
	return &x->win[thread];
}

static int window_push(struct mms__xf *x, uint32_t thread, uint64_t id)
{
	struct mms__xf_window *w = window_of(x, thread);
	uint64_t limit = x->threshold + 1, *v;
	int isnew;

	if (!w)
		return -ENOMEM;
	w->count++;
	if (x->by_place) {
		v = mms__map_put(&x->place, id, &isnew);
		if (!v)
			return -ENOMEM;
		*v = w->count;
		return 0;
	}
	if (w->len < w->cap || (w->len == w->cap && w->cap < limit)) {
		if (w->len == w->cap) {
			/* Grow up to N + 1; the ring is not wrapped while it grows. */
			size_t ncap = w->cap ? w->cap * 2 : 16;
			uint64_t *p;

			if (ncap > limit)
				ncap = (size_t)limit;
			p = realloc(w->ids, ncap * sizeof(*p));
			if (!p)
				return -ENOMEM;
			w->ids = p;
			w->cap = ncap;
		}
		w->ids[(w->head + w->len++) % w->cap] = id;
		return 0;
	}
	w->ids[w->head] = id;
	w->head = (w->head + 1) % w->cap;
	return 0;
}

/* Block b leaves (whole: all of it): whether its thread has made at most
 * N other allocations since it. */
static int window_holds(struct mms__xf *x, const struct mms__blk *b, int whole)
{
	uint32_t thread = mms__blk_origin(x->st, b)->thread;
	const struct mms__xf_window *w = thread < x->nwin ? &x->win[thread] : NULL;
	uint64_t place;

	if (x->by_place) {
		if (!whole || !mms__map_del(&x->place, b->alloc_id, &place))
			return 0;
		return w && w->count - place <= x->threshold;
	}
	return w && w->len && b->alloc_id >= w->ids[w->head];
}

/* --- the pass ----------------------------------------------------------------- */

/* Whether a piece of mapping b is left beside the range an munmap just
 * took (the state has applied it). */
static int piece_left(const struct mms__xf *x, const mms_event_t *ev, const struct mms__blk *b)
{
	const struct mms__blk *p = mms__state_find(x->st, ev->addr + ev->size);

	if (p && p->mem == MMS_MEM_MMAP && p->alloc_id == b->alloc_id)
		return 1;
	p = ev->addr ? mms__state_find(x->st, ev->addr - 1) : NULL;
	return p && p->mem == MMS_MEM_MMAP && p->alloc_id == b->alloc_id;
}

/* memray's rule for a ranged deallocation to match an allocation: the same
 * start, and the whole mapping gone. */
static int unmap_whole(const struct mms__xf *x, const mms_event_t *ev, const struct mms__blk *b)
{
	return ev->addr == b->addr && !piece_left(x, ev, b);
}

static int on_event(struct mms__xf *x, const mms_event_t *ev, uint64_t mmap_before)
{
	const struct mms__state *st = x->st;
	const struct mms__blk *b = st->last_blk;
	uint64_t bytes, total;
	int64_t g;

	if (x->selection == MMS_TRANSFORM_TEMPORARY) {
		if (!st->last_blk_valid)
			return 0;
		if (ev->kind == MMS_EV_MALLOC)
			return window_push(x, mms__blk_origin(st, b)->thread, b->alloc_id);
		/* memray looks the free up among the last N + 1 allocations
		 * of the freeing thread only. */
		if (window_holds(x, b, b->mem != MMS_MEM_MMAP || !piece_left(x, ev, b)) &&
		    mms__blk_origin(st, b)->thread == ev->thread &&
		    (b->mem != MMS_MEM_MMAP || unmap_whole(x, ev, b)))
			return group_add(x, b, 1, b->mem == MMS_MEM_MMAP ? ev->size : b->size);
		return 0;
	}
	if (x->selection != MMS_TRANSFORM_PEAK)
		return 0;
	total = mms__state_live_total(st);
	if (ev->kind == MMS_EV_MALLOC && total >= x->peak_bytes) {
		/* The high-water mark, reached again or higher: as memray,
		 * the last time it is reached counts. What was freed
		 * before it is not live at it. */
		x->peak_bytes = total;
		x->peak_pos = st->pos;
		x->ngone = 0;
		return 0;
	}
	if (ev->kind != MMS_EV_FREE || !st->last_blk_valid ||
	    (b->alloc_event >= x->peak_pos && !mms__blk_inherited(st, b)))
		return 0;
	/* A block of the peak's set leaves: keep what it held then. An
	 * munmap over several mappings is charged to the one it began in. */
	bytes = b->mem == MMS_MEM_MMAP ? mmap_before - st->mem[MMS_MEM_MMAP].live_bytes : b->size;
	if (mms__grow(&x->gone, &x->gone_cap, x->ngone, sizeof(*x->gone)))
		return -ENOMEM;
	g = group_of(x, b);
	if (g < 0)
		return (int)g;
	x->gone[x->ngone++] =
		(struct mms__xf_gone){ (uint32_t)g, b->mem != MMS_MEM_MMAP || !piece_left(x, ev, b), bytes };
	return 0;
}

/* --leaks: whether block b, live at the end, is no leak by the end's
 * verdicts, as the leaks analysis tells (a runtime's, still reachable, or
 * allocated before recording stopped). Of a log without them (cut, or
 * of a killed program), every block live at the end counts. */
static int no_leak_at_end(struct mms__xf *x, const struct mms__blk *b)
{
	mms_block_t out;

	memset(&out, 0, sizeof(out));
	mms__blk_at_end(x->st, &x->rtmemo, b, &out);
	return out.runtime || out.reach == MMS_REACH_REACHABLE || out.reach == MMS_REACH_UNRECORDED;
}

static int add_live(const struct mms__blk *b, void *ctx)
{
	struct mms__xf *x = ctx;

	/* A fork child's inherited blocks are live from position 0. */
	if (x->selection == MMS_TRANSFORM_PEAK && b->alloc_event >= x->peak_pos && !mms__blk_inherited(x->st, b))
		return 0;
	if (x->selection == MMS_TRANSFORM_LEAKS && no_leak_at_end(x, b))
		return 0;
	return group_add(x, b, 1, b->size) ? 1 : 0;
}

static int group_cmp(const void *a, const void *b)
{
	const struct mms__xf_group *p = a, *q = b;

	if (p->bytes != q->bytes)
		return p->bytes < q->bytes ? 1 : -1;
	if (p->thread != q->thread)
		return p->thread < q->thread ? -1 : 1;
	if (p->stack != q->stack)
		return p->stack < q->stack ? -1 : 1;
	return p->allocator < q->allocator ? -1 : p->allocator > q->allocator;
}

static int xf_event(struct mms__sub *sub, struct mms_pass *p, const mms_event_t *ev)
{
	struct mms__xf *x = (struct mms__xf *)sub;
	uint64_t mmap_before = x->mmap_live;

	(void)p;
	x->mmap_live = x->st->mem[MMS_MEM_MMAP].live_bytes;
	return on_event(x, ev, mmap_before);
}

static int xf_begin(struct mms__sub *sub, struct mms_pass *p)
{
	struct mms__xf *x = (struct mms__xf *)sub;

	x->st = mms__pass_state(p);
	x->mmap_live = x->st->mem[MMS_MEM_MMAP].live_bytes;
	/* A fork child's inherited heap may be its high-water mark. */
	x->peak_bytes = x->st->peak_total;
	x->peak_pos = 0;
	return 0;
}

/* The groups, once the log is read: the blocks live at the end (or at the
 * peak), the empty groups dropped, largest first. */
static int groups_finish(struct mms__xf *x)
{
	size_t i, n;

	if (x->selection != MMS_TRANSFORM_TEMPORARY) {
		int rc = mms__state_each(x->st, add_live, x);

		mms__rtmemo_free(&x->rtmemo);
		if (rc)
			return -ENOMEM;
		for (i = 0; i < x->ngone; i++) {
			x->groups[x->gone[i].group].count += x->gone[i].whole;
			x->groups[x->gone[i].group].bytes += x->gone[i].bytes;
		}
	}
	for (i = n = 0; i < x->ngroups; i++)
		if (x->groups[i].count || x->groups[i].bytes)
			x->groups[n++] = x->groups[i];
	x->ngroups = n;
	if (n)
		qsort(x->groups, n, sizeof(*x->groups), group_cmp);
	return 0;
}

/* --- output ------------------------------------------------------------------- */

int mms__xf_flush(struct mms__xf_out *o, int force)
{
	int rc;

	if (!force && o->b.len < 1 << 16)
		return 0;
	rc = mms__write_all(o->fd, o->b.p, o->b.len);
	o->b.len = 0;
	return rc;
}

/* Stack id's ips, innermost first, Python frames where the eval loop
 * ran them (mms_stack_mixed) when symbolized: returns the depth or a
 * negative code. */
int mms__xf_stack_ips(struct mms__xf_out *o, mms_log_t *log, uint32_t id)
{
	int n = mms__log_stack(log, id, o->ips, o->ips_cap);

	if (n > 0 && (size_t)n > o->ips_cap) {
		uint64_t *p = realloc(o->ips, (size_t)n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		o->ips = p;
		o->ips_cap = (size_t)n;
		n = mms__log_stack(log, id, o->ips, o->ips_cap);
	}
	if (n > 0 && o->sym && log->npycodes)
		n = mms_stack_mixed(o->sym, o->ips, (size_t)n);
	return n;
}

/* Symbolizes one ip into o->frames: returns how many. */
int mms__xf_frames(struct mms__xf_out *o, uint64_t ip)
{
	if (o->sym)
		return mms_symbolize(o->sym, ip, o->frames, MMS__XF_MAX_FRAMES);
	memset(&o->frames[0], 0, sizeof(o->frames[0]));
	o->frames[0].ip = ip;
	return 1;
}

/* A frame's function as text: its name, or "module+0xoff", or "0xip". */
const char *mms__xf_function(struct mms__xf_out *o, const mms_frame_t *f)
{
	mms_frame_t bare;

	if (f->function)
		return f->function;
	bare = *f;
	bare.file = NULL;
	bare.line = 0;
	mms_frame_format(&bare, o->scratch, sizeof(o->scratch));
	return o->scratch;
}

/* Appends s as one CSV field, quoted when it needs it (RFC 4180). */
static int csv_field(struct mms__xbuf *b, const char *s, size_t n)
{
	size_t i;

	if (!memchr(s, '"', n) && !memchr(s, ',', n) && !memchr(s, '\n', n) && !memchr(s, '\r', n))
		return mms__xbuf_put(b, s, n);
	if (mms__xbuf_put(b, "\"", 1))
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if ((s[i] == '"' && mms__xbuf_put(b, "\"", 1)) || mms__xbuf_put(b, s + i, 1))
			return -ENOMEM;
	return mms__xbuf_put(b, "\"", 1);
}

/* Appends the stack_trace text of stack id to t: frames function;file;line
 * joined by '|', most recent first. Returns 0 or a negative code. */
static int stack_text(struct mms__xf *x, struct mms__xf_out *o, uint32_t id, struct mms__xbuf *t)
{
	size_t start = t->len;
	int rc = 0, n, j, k, m;

	n = mms__xf_stack_ips(o, x->log, id);
	if (n < 0)
		return n;
	for (j = 0; !rc && j < n; j++) {
		m = mms__xf_frames(o, o->ips[j]);
		if (m < 0)
			return m;
		for (k = 0; !rc && k < m; k++) {
			const mms_frame_t *f = &o->frames[k];

			if (t->len > start)
				rc |= mms__xbuf_put(t, "|", 1);
			rc |= mms__xbuf_puts(t, mms__xf_function(o, f));
			rc |= mms__xbuf_put(t, ";", 1);
			if (f->file)
				rc |= mms__xbuf_puts(t, f->file);
			rc |= mms__xbuf_put(t, ";", 1);
			if (f->line)
				rc |= mms__xbuf_u64(t, f->line);
		}
	}
	return rc ? -ENOMEM : 0;
}

/* A CSV row: groups whose stacks read the same (the same lines reached
 * from different addresses, as an unrolled loop makes) share one. */
struct xf_row {
	size_t off, len; /* the stack text in the rows' buffer */
	uint32_t thread, allocator;
	uint64_t count, bytes, order;
};

static int row_cmp(const void *a, const void *b)
{
	const struct xf_row *p = a, *q = b;

	if (p->bytes != q->bytes)
		return p->bytes < q->bytes ? 1 : -1;
	return p->order < q->order ? -1 : p->order > q->order;
}

static int write_csv(struct mms__xf *x, struct mms__xf_out *o)
{
	struct mms__xbuf text = { 0 };
	struct mms__map rix;
	struct xf_row *rows = NULL;
	size_t nrows = 0, rows_cap = 0, i, start;
	int rc = 0;

	mms__map_init(&rix);
	for (i = 0; !rc && i < x->ngroups; i++) {
		const struct mms__xf_group *g = &x->groups[i];
		uint64_t h, *v;
		int isnew;

		start = text.len;
		rc = stack_text(x, o, g->stack, &text);
		if (rc)
			break;
		h = mms__xf_hash(MMS__XF_HASH0, text.p + start, text.len - start);
		h ^= (uint64_t)g->thread << 8 ^ g->allocator;
		for (;; h++) {
			v = mms__map_put(&rix, h, &isnew);
			if (!v) {
				rc = -ENOMEM;
				break;
			}
			if (isnew)
				break;
			struct xf_row *r = &rows[*v];
			/* Stacks without frames (none recorded, or damaged)
			 * have empty texts, and perhaps no buffer. */
			if (r->thread == g->thread && r->allocator == g->allocator && r->len == text.len - start &&
			    (!r->len || !memcmp(text.p + r->off, text.p + start, r->len)))
				break;
		}
		if (rc)
			break;
		if (isnew) {
			if (mms__grow(&rows, &rows_cap, nrows, sizeof(*rows))) {
				rc = -ENOMEM;
				break;
			}
			rows[nrows] = (struct xf_row){ start, text.len - start, g->thread, g->allocator, 0, 0, nrows };
			*v = nrows++;
		} else {
			text.len = start; /* the row has this text already */
		}
		rows[*v].count += g->count;
		rows[*v].bytes += g->bytes;
	}
	if (nrows)
		qsort(rows, nrows, sizeof(*rows), row_cmp);
	if (!rc)
		rc = mms__xbuf_puts(&o->b, "allocator,num_allocations,size,tid,thread_name,stack_trace\r\n");
	for (i = 0; !rc && i < nrows; i++) {
		const struct xf_row *r = &rows[i];
		const char *tname = NULL, *alloc = mms__xf_allocator_name(x, r->allocator);
		uint64_t tid = 0;

		mms_log_thread(x->log, r->thread, &tid, &tname);
		rc |= csv_field(&o->b, alloc, strlen(alloc));
		rc |= mms__xbuf_put(&o->b, ",", 1);
		rc |= mms__xbuf_u64(&o->b, r->count);
		rc |= mms__xbuf_put(&o->b, ",", 1);
		rc |= mms__xbuf_u64(&o->b, r->bytes);
		rc |= mms__xbuf_put(&o->b, ",", 1);
		rc |= mms__xbuf_u64(&o->b, tid);
		rc |= mms__xbuf_put(&o->b, ",", 1);
		if (tname)
			rc |= csv_field(&o->b, tname, strlen(tname));
		rc |= mms__xbuf_put(&o->b, ",", 1);
		rc |= csv_field(&o->b, text.p ? text.p + r->off : "", r->len);
		rc |= mms__xbuf_put(&o->b, "\r\n", 2);
		rc = rc ? -ENOMEM : mms__xf_flush(o, 0);
	}
	x->nrows = nrows;
	free(rows);
	mms__map_free(&rix);
	mms__xbuf_free(&text);
	return rc;
}

/* Appends s as a JSON string. */
static int json_str(struct mms__xbuf *b, const char *s)
{
	char esc[8];
	int rc = mms__xbuf_put(b, "\"", 1);

	for (; !rc && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			rc = mms__xbuf_put(b, esc, 2);
		} else if (c < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			rc = mms__xbuf_put(b, esc, 6);
		} else {
			rc = mms__xbuf_put(b, s, 1);
		}
	}
	return rc ? -ENOMEM : mms__xbuf_put(b, "\"", 1);
}

/* gprof2dot's JSON profile: functions are (name, module) pairs, named by
 * their index; an event is one group, its call chain innermost first and
 * its cost the group's bytes. */
static int write_gprof2dot(struct mms__xf *x, struct mms__xf_out *o)
{
	struct mms__map fix; /* hash of name and module -> index + 1 */
	struct {
		char *name, *module;
	} *fn = NULL;
	size_t nfn = 0, fn_cap = 0, i;
	struct mms__xbuf ev = { 0 };
	int rc = 0, n, j, k, m;

	mms__map_init(&fix);
	for (i = 0; !rc && i < x->ngroups; i++) {
		const struct mms__xf_group *g = &x->groups[i];
		int first = 1;

		if (i)
			rc |= mms__xbuf_put(&ev, ",\n", 2);
		rc |= mms__xbuf_puts(&ev, "{\"callchain\": [");
		n = mms__xf_stack_ips(o, x->log, g->stack);
		if (n < 0) {
			rc = n;
			break;
		}
		for (j = 0; !rc && j < n; j++) {
			m = mms__xf_frames(o, o->ips[j]);
			if (m < 0) {
				rc = m;
				break;
			}
			for (k = 0; !rc && k < m; k++) {
				const mms_frame_t *f = &o->frames[k];
				const char *name = mms__xf_function(o, f);
				const char *mod = f->file ? f->file : f->module ? f->module : "";
				uint64_t h = mms__xf_hash(MMS__XF_HASH0, name, strlen(name) + 1), *v;
				int isnew;

				h = mms__xf_hash(h, mod, strlen(mod));
				for (;; h++) {
					v = mms__map_put(&fix, h, &isnew);
					if (!v) {
						rc = -ENOMEM;
						break;
					}
					if (isnew ||
					    (!strcmp(fn[*v - 1].name, name) && !strcmp(fn[*v - 1].module, mod)))
						break;
				}
				if (rc)
					break;
				if (isnew) {
					if (mms__grow(&fn, &fn_cap, nfn, sizeof(*fn))) {
						rc = -ENOMEM;
						break;
					}
					fn[nfn].name = strdup(name);
					fn[nfn].module = strdup(mod);
					if (!fn[nfn].name || !fn[nfn].module) {
						free(fn[nfn].name);
						free(fn[nfn].module);
						rc = -ENOMEM;
						break;
					}
					*v = ++nfn;
				}
				if (!first)
					rc |= mms__xbuf_put(&ev, ", ", 2);
				first = 0;
				rc |= mms__xbuf_u64(&ev, *v - 1);
			}
		}
		if (rc)
			break;
		if (first) {
			/* gprof2dot wants one function at least: a stack that
			 * was not recorded is charged to its allocator. */
			uint64_t *v = mms__map_put(&fix, 0xffffffff00000000ull | g->allocator, &first);

			if (!v || mms__grow(&fn, &fn_cap, nfn, sizeof(*fn))) {
				rc = -ENOMEM;
				break;
			}
			if (first) {
				fn[nfn].name = strdup(mms__xf_allocator_name(x, g->allocator));
				fn[nfn].module = strdup("");
				if (!fn[nfn].name || !fn[nfn].module) {
					free(fn[nfn].name);
					free(fn[nfn].module);
					rc = -ENOMEM;
					break;
				}
				*v = ++nfn;
			}
			rc |= mms__xbuf_u64(&ev, *v - 1);
		}
		rc |= mms__xbuf_puts(&ev, "], \"cost\": [");
		rc |= mms__xbuf_u64(&ev, g->bytes);
		rc |= mms__xbuf_puts(&ev, "]}");
	}
	if (!rc) {
		rc |= mms__xbuf_puts(&o->b, "{\"version\": 0,\n\"costs\": [{\"description\": \"Memory\", "
					    "\"unit\": \"bytes\"}],\n\"functions\": [\n");
		for (i = 0; !rc && i < nfn; i++) {
			if (i)
				rc |= mms__xbuf_put(&o->b, ",\n", 2);
			rc |= mms__xbuf_puts(&o->b, "{\"name\": ");
			rc |= json_str(&o->b, fn[i].name);
			rc |= mms__xbuf_puts(&o->b, ", \"module\": ");
			rc |= json_str(&o->b, fn[i].module);
			rc |= mms__xbuf_put(&o->b, "}", 1);
			if (!rc)
				rc = mms__xf_flush(o, 0);
		}
		rc |= mms__xbuf_puts(&o->b, "],\n\"events\": [\n");
		if (!rc)
			rc = mms__xf_flush(o, 1);
		if (!rc && ev.len)
			rc = mms__write_all(o->fd, ev.p, ev.len);
		rc |= mms__xbuf_puts(&o->b, "]}\n");
	}
	x->nrows = x->ngroups;
	for (i = 0; i < nfn; i++) {
		free(fn[i].name);
		free(fn[i].module);
	}
	free(fn);
	mms__map_free(&fix);
	mms__xbuf_free(&ev);
	return rc < -1 ? rc : rc ? -ENOMEM : 0;
}

MMS__EXPORT const char *mms_transform_format_name(int format)
{
	switch (format) {
	case MMS_TRANSFORM_CSV:
		return "csv";
	case MMS_TRANSFORM_GPROF2DOT:
		return "gprof2dot";
	case MMS_TRANSFORM_FLAMEGRAPH:
		return "flamegraph";
	default:
		return NULL;
	}
}

/* At the end of the log: the groups, written in the format asked for. */
static int xf_end(struct mms__sub *sub, struct mms_pass *p)
{
	struct mms__xf *x = (struct mms__xf *)sub;
	struct mms__xf_out *o = x->o;
	mms_transform_t *res = x->res;
	size_t i;
	int rc;

	(void)p;
	rc = groups_finish(x);
	if (rc)
		return rc;
	if (x->opt.format == MMS_TRANSFORM_CSV)
		rc = write_csv(x, o);
	else if (x->opt.format == MMS_TRANSFORM_GPROF2DOT)
		rc = write_gprof2dot(x, o);
	else
		rc = mms__xf_flamegraph(x, o);
	if (!rc)
		rc = mms__xf_flush(o, 1);
	if (!rc && close(o->fd))
		rc = -errno;
	o->fd = -1;
	if (!rc)
		rc = mms__outfile_commit(&x->f);
	if (rc)
		return rc;
	x->committed = 1;
	res->groups = x->nrows;
	for (i = 0; i < x->ngroups; i++) {
		res->allocations += x->groups[i].count;
		res->bytes += x->groups[i].bytes;
	}
	res->peak_bytes = x->st->peak_total;
	return 0;
}

static void xf_drop(struct mms__sub *sub)
{
	struct mms__xf *x = (struct mms__xf *)sub;
	size_t i;

	if (x->o->fd >= 0)
		close(x->o->fd);
	if (!x->committed)
		mms__outfile_abort(&x->f);
	for (i = 0; i < x->nwin; i++)
		free(x->win[i].ids);
	free(x->win);
	free(x->groups);
	free(x->pools);
	free(x->gone);
	mms__map_free(&x->gix);
	mms__map_free(&x->place);
	free(x->o->ips);
	mms__xbuf_free(&x->o->b);
	free(x->o);
	free(x->title);
	free(x);
}

MMS__EXPORT void mms_transform_free(mms_transform_t *res)
{
	free(res);
}

MMS__EXPORT int mms_transform_add(mms_pass_t *p, const mms_transform_options_t *opt, mms_transform_t **out)
{
	struct mms__xf *x;
	int rc;

	if (!out)
		return MMS_EUSAGE;
	*out = NULL;
	if (!p || !opt || !opt->path || !mms_transform_format_name(opt->format) ||
	    opt->selection < MMS_TRANSFORM_PEAK || opt->selection > MMS_TRANSFORM_TEMPORARY)
		return MMS_EUSAGE;
	x = calloc(1, sizeof(*x));
	*out = calloc(1, sizeof(**out));
	if (!x || !*out || !(x->o = calloc(1, sizeof(*x->o))) || (opt->title && !(x->title = strdup(opt->title)))) {
		if (x)
			free(x->o);
		free(x);
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	x->log = p->log;
	x->opt = *opt;
	x->opt.path = NULL;
	x->opt.title = NULL;
	x->res = *out;
	x->selection = opt->selection;
	x->threshold = opt->threshold;
	x->by_place = opt->threshold >= XF_RING_MAX;
	mms__map_init(&x->gix);
	mms__map_init(&x->place);
	x->o->sym = opt->out.sym;
	x->o->fd = mms__outfile_create(&x->f, opt->path, mms__out_flags(&opt->out));
	if (x->o->fd < 0) {
		rc = x->o->fd;
		x->committed = 1; /* nothing to remove */
		xf_drop(&x->sub);
		free(*out);
		*out = NULL;
		return rc;
	}
	x->sub.name = "transform";
	x->sub.kinds = 1u << MMS_EV_MALLOC | 1u << MMS_EV_FREE;
	x->sub.begin = xf_begin;
	x->sub.event = xf_event;
	x->sub.end = xf_end;
	x->sub.drop = xf_drop;
	x->sub.status = &(*out)->status;
	rc = mms__pass_add(p, &x->sub);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

MMS__RUN_ONE(transform, mms_transform_options_t, mms_transform_t)

MMS__EXPORT int mms_transform_name(const char *log_path, int format, char *buf, size_t len)
{
	static const char prefix[] = "memscope-";
	const char *fmt = mms_transform_format_name(format);
	const char *base, *dot;
	int dir, stem;

	if (!log_path || !fmt)
		return MMS_EUSAGE;
	base = strrchr(log_path, '/');
	base = base ? base + 1 : log_path;
	dir = (int)(base - log_path);
	if (!strncmp(base, prefix, sizeof(prefix) - 1) && base[sizeof(prefix) - 1])
		base += sizeof(prefix) - 1;
	/* memray replaces the last suffix (Path.with_suffix). */
	dot = strrchr(base, '.');
	stem = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
	return snprintf(buf, len, "%.*s%s%s-%.*s.%s", dir, log_path, prefix, fmt, stem, base,
			format == MMS_TRANSFORM_CSV         ? "csv"
			: format == MMS_TRANSFORM_GPROF2DOT ? "json"
							    : "svg");
}
