/* SPDX-License-Identifier: MIT */
/* trace.c: the GPU-trace scripts' three analyses as one subscriber of a
 * pass: the blocks live at the high-water mark (watermark), live bytes
 * through time (usage) and the blocks live at the end (leakage). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msmemscope/analysis.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/output.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "msmemscope/symbolize.h"
#include "format.h"
#include "base-int.h"
#include "intervals-int.h"
#include "log-int.h"
#include "map-int.h"
#include "outfile-int.h"
#include "pass-int.h"
#include "sort-int.h"
#include "state-int.h"
#include "table-int.h"
#include "trace-int.h"

/* --- time buckets ------------------------------------------------------------ */

/* Splits [t0, t1] into n equal buckets and keeps the highest live bytes in
 * each (the value carried in from the bucket before counts), handing each
 * finished bucket to emit. */
struct bucketer {
	uint64_t t0, span, n;
	uint64_t cur;      /* the open bucket */
	uint64_t max;      /* its highest live bytes so far */
	void (*emit)(void *ctx, uint64_t i, uint64_t time_ns, uint64_t bytes);
	void *ctx;
};

static uint64_t bucket_of(const struct bucketer *b, uint64_t t)
{
	uint64_t d = t > b->t0 ? t - b->t0 : 0;

	if (!b->span || d >= b->span)
		return b->n - 1;
	/* d * n may not fit in 64 bits for long runs. */
	return (uint64_t)((unsigned __int128)d * b->n / b->span);
}

static uint64_t bucket_start(const struct bucketer *b, uint64_t i)
{
	return b->t0 + (uint64_t)((unsigned __int128)b->span * i / b->n);
}

/* The live bytes were before and are now after an event at time t. */
static void bucket_add(struct bucketer *b, uint64_t t, uint64_t before, uint64_t now)
{
	uint64_t i = bucket_of(b, t);

	while (b->cur < i) {
		b->emit(b->ctx, b->cur, bucket_start(b, b->cur), b->max);
		b->cur++;
		b->max = before;
	}
	if (now > b->max)
		b->max = now;
}

static void bucket_finish(struct bucketer *b, uint64_t live)
{
	for (; b->cur < b->n; b->cur++) {
		b->emit(b->ctx, b->cur, bucket_start(b, b->cur), b->max);
		b->max = live;
	}
}

/* --- the pass ---------------------------------------------------------------- */

static void row_of(const struct mms__state *st, const struct mms__blk *b, uint64_t time_ns, struct row *r)
{
	const struct mms__origin *o = mms__blk_origin(st, b);

	*r = (struct row){ .addr = b->addr, .size = b->size, .event = b->alloc_event, .time_ns = time_ns,
			   .var = o->owner ? o->owner : o->pool ? o->pool : "", .stack = b->stack, .mem = b->mem };
}

/* A block freed since the peak whose record may be made: the state's
 * slot as it was (a copy is quicker than a record, and most are dropped
 * at a later peak), its time, and its step as the state counted it then
 * (the state learns how steps are marked at the first one). */
struct kept {
	struct mms__blk b;
	uint64_t time_ns, step;
};

/* The result, with what it keeps besides. */
struct trace_res {
	mms_trace_t pub;
	size_t steps_cap;
	struct mms__strs *strs; /* the blocks' owner strings */
};

struct pass {
	struct mms__sub sub;
	mms_log_t *log;
	struct trace_res *res;
	mms_trace_t *t;
	const struct mms__state *st;
	uint64_t live, steps, ranges; /* after the last event: live bytes counted, the
	                                 state's step and range counters */
	struct mms_pass *pass;
	size_t time_off;         /* each live block's allocation time, in the pass's data */
	/* Blocks (or mapping pieces) live at the peak and freed since. With
	 * top 0, each in kept. Else their rows as varints in gone
	 * (about 20 bytes each where a record takes 152, and the peak's list
	 * may hold millions of them; a table of huge pages, read in the
	 * list's order, which is random), and in kept a heap of the first
	 * top of them, the last at the root. */
	uint8_t *gone;
	size_t gone_len, gone_cap;
	const char **vars;       /* the rows' var strings: vars[i - 1] is var i */
	size_t nvars, vars_cap;
	struct mms__map var_ix;  /* a var string's address -> its i */
	struct kept *kept;
	size_t nkept, kept_cap;
	size_t top;              /* records made of each list, 0 = all */
	char *tsv_path[2];       /* the watermark's and the leakage's TSV, or NULL */
	mms_output_options_t out;
	/* Mapping pieces an MMAP event is about to remove. */
	struct piece {
		struct mms__blk b;
		uint64_t slot;
		uint64_t time_ns; /* its mapping's allocation time: the slot may
				     be taken again by the event */
	} *pieces;
	size_t npieces, pieces_cap;
	struct mms__wfile *usage;     /* usage.tsv, or NULL */
	struct bucketer file_b, plot_b;
	int file_bucketed, plot;
	unsigned kinds;          /* bit 1 << kind: the memory kinds counted */
	unsigned skip;           /* MMS_TRACE_SKIP_*: the lists not made */
};

/* Live bytes of the kinds counted (after every event: the kinds' bits
 * only). */
static uint64_t live_total(const struct pass *p)
{
	uint64_t n = 0;

	for (unsigned m = p->kinds; m; m &= m - 1)
		n += p->st->mem[__builtin_ctz(m)].live_bytes;
	return n;
}

static void file_emit(void *ctx, uint64_t i, uint64_t time_ns, uint64_t bytes)
{
	struct pass *p = ctx;

	(void)i;
	mms__wfile_u64(p->usage, time_ns, '\t');
	mms__wfile_u64(p->usage, bytes, '\n');
	p->t->usage_rows++;
}

static void plot_emit(void *ctx, uint64_t i, uint64_t time_ns, uint64_t bytes)
{
	struct pass *p = ctx;

	p->t->points[i].time_ns = time_ns;
	p->t->points[i].bytes = bytes;
}

/* The allocation time of live block b (or of the block the current event
 * freed), 0 when unknown. */
static uint64_t block_time(struct pass *p, const struct mms__blk *b)
{
	const uint64_t *time = mms__pass_data_of(p->pass, b, p->time_off);

	return time ? *time : 0;
}

static void block_out(struct pass *p, const struct mms__blk *b, uint64_t time_ns, mms_trace_block_t *out)
{
	mms__state_blk_export(p->st, b, &out->b);
	out->time_ns = time_ns;
}

/* The lists' order: largest first, then the oldest (by allocation event),
 * then the lowest address; no two blocks of a list are equal in it. */
static int order_cmp(uint64_t size_a, uint64_t event_a, uint64_t addr_a, uint64_t size_b, uint64_t event_b,
		     uint64_t addr_b)
{
	if (size_a != size_b)
		return size_a > size_b ? -1 : 1;
	if (event_a != event_b)
		return event_a < event_b ? -1 : 1;
	return addr_a < addr_b ? -1 : addr_a > addr_b;
}

static void kept_out(struct pass *p, const struct kept *k, mms_trace_block_t *out)
{
	block_out(p, &k->b, k->time_ns, out);
	if (!out->b.inherited)
		out->b.step = k->step;
}

static int kept_cmp(const struct kept *x, const struct kept *y)
{
	return order_cmp(x->b.size, x->b.alloc_event, x->b.addr, y->b.size, y->b.alloc_event, y->b.addr);
}

static int kept_qsort_cmp(const void *x, const void *y)
{
	return kept_cmp(x, y);
}

/* Keeps block b, freed since the peak: every one with top 0; else only
 * while it is among the first top of those freed, in a heap whose root
 * is the last of them (most blocks freed compare with the root only). */
static int kept_add(struct pass *p, const struct mms__blk *b, uint64_t time_ns)
{
	struct kept x = { .b = *b, .time_ns = time_ns, .step = mms__state_blk_step(p->st, b) }, *k;
	size_t i, c;

	if (!p->top || p->nkept < p->top) {
		if (mms__grow(&p->kept, &p->kept_cap, p->nkept, sizeof(*p->kept)))
			return -ENOMEM;
		k = p->kept;
		i = p->nkept++;
		k[i] = x;
		for (; p->top && i && kept_cmp(&k[(i - 1) / 2], &k[i]) < 0; i = (i - 1) / 2) {
			x = k[i];
			k[i] = k[(i - 1) / 2];
			k[(i - 1) / 2] = x;
		}
		return 0;
	}
	k = p->kept;
	if (kept_cmp(&x, &k[0]) >= 0)
		return 0; /* after all those kept */
	for (i = 0; (c = 2 * i + 1) < p->nkept; i = c) {
		if (c + 1 < p->nkept && kept_cmp(&k[c + 1], &k[c]) > 0)
			c++;
		if (kept_cmp(&k[c], &x) < 0)
			break;
		k[i] = k[c];
	}
	k[i] = x;
	return 0;
}

/* The number of var string s in gone's rows (0 for ""), or -ENOMEM. */
static int64_t var_number(struct pass *p, const char *s)
{
	uint64_t *ix;
	int isnew;

	if (!*s)
		return 0;
	ix = mms__map_put(&p->var_ix, (uint64_t)(uintptr_t)s, &isnew);
	if (!ix)
		return -ENOMEM;
	if (isnew) {
		if (mms__grow(&p->vars, &p->vars_cap, p->nvars, sizeof(*p->vars))) {
			mms__map_del(&p->var_ix, (uint64_t)(uintptr_t)s, NULL);
			return -ENOMEM;
		}
		p->vars[p->nvars++] = s;
		*ix = p->nvars;
	}
	return (int64_t)*ix;
}

/* Row r as varints at the end of gone: its address, size, allocation
 * event, time from the start of the log (zigzag), stack, and var number
 * and memory kind together. */
#define GONE_MAX (6 * 10) /* bytes a row takes at most */
_Static_assert(MMS_MEM_KIND_COUNT <= 8, "a memory kind fits 3 bits");

static int gone_put(struct pass *p, const struct row *r)
{
	int64_t var = var_number(p, r->var);
	uint8_t *q;

	if (var < 0)
		return (int)var;
	while (p->gone_cap - p->gone_len < GONE_MAX)
		if (mms__table_grow(&p->gone, &p->gone_cap, p->gone_cap, 1))
			return -ENOMEM;
	q = p->gone + p->gone_len;
	q = mms_put_u(q, r->addr);
	q = mms_put_u(q, r->size);
	q = mms_put_u(q, r->event);
	q = mms_put_u(q, mms_zigzag((int64_t)(r->time_ns - p->t->first_ns)));
	q = mms_put_u(q, r->stack);
	q = mms_put_u(q, (uint64_t)var << 3 | r->mem);
	p->gone_len = (size_t)(q - p->gone);
	return 0;
}

/* The row at offset off of gone into *r; returns the next row's offset. */
static size_t gone_get(const struct pass *p, size_t off, struct row *r)
{
	const uint8_t *q = p->gone + off, *end = p->gone + p->gone_len;
	uint64_t v[6] = { 0 };

	/* The format's varints, as gone_put() wrote them with mms_put_u(). */
	for (int i = 0; i < 6; i++)
		(void)mms_get_u(&q, end, &v[i]);
	r->addr = v[0];
	r->size = v[1];
	r->event = v[2];
	r->time_ns = p->t->first_ns + (uint64_t)mms_unzigzag(v[3]);
	r->stack = (uint32_t)v[4];
	r->mem = (uint8_t)(v[5] & 7);
	r->var = v[5] >> 3 ? p->vars[(v[5] >> 3) - 1] : "";
	return (size_t)(q - p->gone);
}

static int freed_add(struct pass *p, const struct mms__blk *b, uint64_t time_ns)
{
	struct row r;
	int rc;

	if (!(p->kinds & 1u << b->mem) || p->skip & MMS_TRACE_SKIP_PEAK)
		return 0;
	if (p->top) {
		row_of(p->st, b, time_ns, &r);
		rc = gone_put(p, &r);
		if (rc)
			return rc;
	}
	return kept_add(p, b, time_ns);
}

/* Before an MMAP event: the pieces of live mappings it will remove (an
 * munmap, or a mapping placed over others), clipped to its range. */
static int mmap_before(struct pass *p, const mms_event_t *ev)
{
	const struct mms__ivset *s = &p->st->maps;
	uint64_t lo = ev->addr, hi = ev->addr + ev->size < ev->addr ? UINT64_MAX : ev->addr + ev->size;
	size_t i;
	struct piece *pc;

	p->npieces = 0;
	for (i = mms__ivset_first_after(s, lo); i < s->n && s->iv[i].lo < hi; i++) {
		if (mms__grow(&p->pieces, &p->pieces_cap, p->npieces, sizeof(*p->pieces)))
			return -ENOMEM;
		pc = &p->pieces[p->npieces++];
		pc->slot = s->iv[i].val;
		pc->b = p->st->blks[pc->slot];
		pc->b.addr = s->iv[i].lo > lo ? s->iv[i].lo : lo;
		pc->b.size = (s->iv[i].hi < hi ? s->iv[i].hi : hi) - pc->b.addr;
		pc->time_ns = block_time(p, &p->st->blks[pc->slot]);
	}
	return 0;
}

/* After it: pieces that were live at the peak join the freed list. */
static int mmap_after(struct pass *p)
{
	size_t i;

	for (i = 0; i < p->npieces; i++) {
		struct piece *pc = &p->pieces[i];

		if (p->t->peak_bytes && pc->b.alloc_event <= p->t->peak_event && freed_add(p, &pc->b, pc->time_ns))
			return -ENOMEM;
	}
	return 0;
}

static void launch_mark(struct pass *p, const mms_event_t *ev)
{
	mms_trace_launches_t *l;

	p->t->op_launches++;
	if (!p->plot)
		return;
	l = &p->t->launches[bucket_of(&p->plot_b, ev->time_ns)];
	if (!l->count++) {
		l->time_ns = ev->time_ns;
		l->name = ev->name;
	}
}

static int step_mark(struct pass *p, const mms_event_t *ev, uint64_t step)
{
	mms_trace_t *t = p->t;

	if (mms__grow(&t->steps, &p->res->steps_cap, t->nsteps, sizeof(*t->steps)))
		return -ENOMEM;
	t->steps[t->nsteps].time_ns = ev->time_ns;
	t->steps[t->nsteps].step = step;
	t->nsteps++;
	return 0;
}

/* Before a memory event: an MMAP event may remove pieces of mappings. */
static int pass_before(struct mms__sub *sub, struct mms_pass *pass, const mms_event_t *ev)
{
	struct pass *p = (struct pass *)sub;

	(void)pass;
	return ev->mem == MMS_MEM_MMAP ? mmap_before(p, ev) : 0;
}

/* One event, applied: the live bytes before and now, and the state's
 * step counters as they were. */
static int trace_event(struct pass *p, const mms_event_t *ev, uint64_t before, uint64_t now, uint64_t steps,
		       uint64_t ranges)
{
	mms_trace_t *t = p->t;
	int memory = ev->kind == MMS_EV_MALLOC || ev->kind == MMS_EV_FREE;

	t->events++;
	t->end_ns = ev->time_ns;
	if (!memory) {
		if (ev->kind == MMS_EV_OP_LAUNCH && ev->sub == 0)
			launch_mark(p, ev);
		else if (p->st->step_kind == 1 && p->st->steps_seen != steps)
			return step_mark(p, ev, p->st->steps_seen + 1);
		else if (p->st->step_kind == 2 && p->st->ranges_seen != ranges)
			return step_mark(p, ev, p->st->ranges_seen);
		return 0;
	}
	if (ev->mem == MMS_MEM_MMAP) {
		if (mmap_after(p))
			return -ENOMEM;
	} else if (ev->kind == MMS_EV_FREE && p->st->last_blk_valid) {
		/* A block live at the peak, freed since: it still counts. */
		if (t->peak_bytes && p->st->last_blk->alloc_event <= t->peak_event && freed_add(p, p->st->last_blk, block_time(p, p->st->last_blk)))
			return -ENOMEM;
	}
	if (ev->kind == MMS_EV_MALLOC) {
		uint64_t *time = mms__pass_data(p->pass, p->time_off);

		if (time)
			*time = ev->time_ns;
	}
	if (now == before)
		return 0;
	t->changes++;
	if (now > t->peak_bytes) {
		/* The first time the mark is reached: what was freed before
		 * it no longer matters. */
		t->peak_bytes = now;
		t->peak_event = ev->id;
		t->peak_ns = ev->time_ns;
		p->gone_len = 0;
		p->nkept = 0;
	}
	if (p->usage) {
		if (p->file_bucketed) {
			bucket_add(&p->file_b, ev->time_ns, before, now);
		} else {
			mms__wfile_u64(p->usage, ev->time_ns, '\t');
			mms__wfile_u64(p->usage, now, '\n');
			t->usage_rows++;
		}
	}
	if (p->plot)
		bucket_add(&p->plot_b, ev->time_ns, before, now);
	return 0;
}

static int pass_event(struct mms__sub *sub, struct mms_pass *pass, const mms_event_t *ev)
{
	struct pass *p = (struct pass *)sub;
	uint64_t now = live_total(p);
	int rc;

	(void)pass;
	rc = trace_event(p, ev, p->live, now, p->steps, p->ranges);
	p->live = now;
	p->steps = p->st->steps_seen;
	p->ranges = p->st->ranges_seen;
	return rc;
}

/* A list of blocks being made: the blocks' sort keys and where each is,
 * in k[i].ix: a live block's slot, a piece of a live mapping
 * (REF_PIECE | its index in the state's maps) or a block freed since the
 * peak (REF_GONE | its row's offset in gone, or with top 0 its index in
 * kept). Only these 16 bytes a block are sorted; the rows are written and
 * the first records made from where the blocks are. */
#define REF_PIECE ((size_t)1 << (sizeof(size_t) * 8 - 1))
#define REF_GONE ((size_t)1 << (sizeof(size_t) * 8 - 2))
#define REF_IX (REF_GONE - 1)

struct list {
	struct pass *p;
	uint64_t limit;          /* only blocks allocated at or before it */
	int gone;                /* with the blocks freed since the peak */
	int fill;                /* 0: count the blocks; 1: fill k */
	struct mms__keyed *k;
	size_t n;
	uint64_t bytes, most, last; /* their bytes, the largest size, the last event */
	unsigned ebits;          /* the bits of last */
	int wide;                /* size and event do not fit one key */
};

static void list_one(struct list *l, uint64_t size, uint64_t event, size_t ref)
{
	if (l->fill) {
		l->k[l->n].key = l->wide ? 0 : (l->ebits < 64 ? (l->most - size) << l->ebits : 0) | event;
		l->k[l->n++].ix = ref;
		return;
	}
	l->n++;
	l->bytes += size;
	l->most = size > l->most ? size : l->most;
	l->last = event > l->last ? event : l->last;
}

static int list_visit(const struct mms__blk *b, void *ctx)
{
	struct list *l = ctx;
	const struct mms__state *st = l->p->st;

	if (b->alloc_event > l->limit || !(l->p->kinds & 1u << b->mem))
		return 0;
	if (b >= st->blks && b < st->blks + st->nblks)
		list_one(l, b->size, b->alloc_event, (size_t)(b - st->blks));
	else /* a piece of a mapping, a copy: its range's index */
		list_one(l, b->size, b->alloc_event, REF_PIECE | mms__ivset_find(&st->maps, b->addr));
	return 0;
}

static void list_walk(struct list *l)
{
	size_t i, next;
	struct row r;

	l->n = 0;
	mms__state_each(l->p->st, list_visit, l);
	if (!l->gone)
		return;
	for (i = 0; !l->p->top && i < l->p->nkept; i++)
		list_one(l, l->p->kept[i].b.size, l->p->kept[i].b.alloc_event, REF_GONE | i);
	for (i = 0; l->p->top && i < l->p->gone_len; i = next) {
		next = gone_get(l->p, i, &r);
		list_one(l, r.size, r.event, REF_GONE | i);
	}
}

/* The slot of the live block, or of the live mapping, that ref is of. */
static const struct mms__blk *ref_blk(const struct pass *p, size_t ref)
{
	return &p->st->blks[ref & REF_PIECE ? p->st->maps.iv[ref & REF_IX].val : ref];
}

/* The row of the block at ref. */
static void ref_row(struct pass *p, size_t ref, struct row *r)
{
	const struct mms__blk *b;
	const struct mms__iv *iv;

	if (ref & REF_GONE) {
		if (p->top)
			gone_get(p, ref & REF_IX, r);
		else
			row_of(p->st, &p->kept[ref & REF_IX].b, p->kept[ref & REF_IX].time_ns, r);
		return;
	}
	b = ref_blk(p, ref);
	row_of(p->st, b, block_time(p, b), r);
	if (ref & REF_PIECE) {
		iv = &p->st->maps.iv[ref & REF_IX];
		r->addr = iv->lo;
		r->size = iv->hi - iv->lo;
	}
}

static int ref_cmp(const void *a, const void *b, void *ctx)
{
	struct pass *p = ctx;
	struct row x, y;

	ref_row(p, ((const struct mms__keyed *)a)->ix, &x);
	ref_row(p, ((const struct mms__keyed *)b)->ix, &y);
	return order_cmp(x.size, x.event, x.addr, y.size, y.event, y.addr);
}

/* Puts the list's blocks in l->k in their order (l->k, a table of huge
 * pages for the same reason as gone, freed by the caller): a radix sort
 * of one key of the size and the event where both fit in 64 bits, runs
 * of equal keys (pieces of one mapping) by address; else a qsort().
 * Returns 0 or -ENOMEM. */
static int list_sort(struct list *l)
{
	size_t i, lo;

	list_walk(l);
	l->ebits = mms__bits(l->last);
	l->wide = mms__bits(l->most) + l->ebits > 64;
	l->k = mms__table_alloc((l->n ? l->n : 1) * sizeof(*l->k));
	if (!l->k)
		return -ENOMEM;
	l->fill = 1;
	list_walk(l);
	if (!l->wide)
		mms__sort_keyed(l->k, l->n);
	for (lo = 0; lo < l->n; lo = i) {
		for (i = lo + 1; i < l->n && l->k[i].key == l->k[lo].key; i++)
			;
		if (i - lo > 1)
			qsort_r(l->k + lo, i - lo, sizeof(*l->k), ref_cmp, l->p);
	}
	return 0;
}

/* The record of the block at ref, the first in the list to be made of
 * those freed since the peak when nth (from 0). */
static void ref_record(struct pass *p, size_t ref, size_t nth, mms_trace_block_t *out)
{
	const struct mms__blk *b;
	struct mms__blk piece;
	const struct mms__iv *iv;

	if (ref & REF_GONE) {
		/* With top 0 every one was kept; else the kept are the
		 * first of them, sorted: the nth freed block of the list is
		 * the nth kept (nth < nkept, as the list's first top hold at
		 * most top of them). */
		kept_out(p, &p->kept[p->top ? nth : ref & REF_IX], out);
		return;
	}
	b = ref_blk(p, ref);
	if (ref & REF_PIECE) {
		iv = &p->st->maps.iv[ref & REF_IX];
		piece = *b;
		piece.addr = iv->lo;
		piece.size = iv->hi - iv->lo;
		block_out(p, &piece, block_time(p, b), out);
	} else {
		block_out(p, b, block_time(p, b), out);
	}
}

/* Asks for the memory of the block at ref ahead of its turn: the list's
 * order takes the blocks at random, and a row is written in less time
 * than a cache miss takes. Inlined always: GCC takes a function that only
 * prefetches for one without effects and drops its calls. */
#define AHEAD 16
static inline __attribute__((always_inline)) void ref_prefetch(const struct pass *p, size_t ref)
{
	const struct mms__state *st = p->st;
	const char *q;

	if (ref & REF_GONE) {
		q = p->top ? (const char *)p->gone + (ref & REF_IX) : (const char *)&p->kept[ref & REF_IX];
		__builtin_prefetch(q);
		__builtin_prefetch(q + GONE_MAX - 1);
	} else if (!(ref & REF_PIECE)) {
		q = (const char *)&st->blks[ref];
		__builtin_prefetch(q);
		__builtin_prefetch(q + sizeof(st->blks[0]) - 1);
		if (st->ext_size)
			__builtin_prefetch(st->ext + ref * st->ext_size + p->time_off);
	}
}

/* Makes list l: its first top blocks as records in *out (*nout of them;
 * NULL when none), every block's row into f (when open), and sets *total
 * and *bytes. Returns 0 or -ENOMEM. */
static int list_make(struct list *l, struct tsv *f, mms_trace_block_t **out, size_t *nout, size_t *total,
		     uint64_t *bytes)
{
	struct pass *p = l->p;
	mms_trace_block_t *v = NULL;
	size_t i, keep, nth = 0;
	struct row r;
	int rc;

	rc = list_sort(l);
	keep = p->top && p->top < l->n ? p->top : l->n;
	if (!rc && keep && !(v = malloc(keep * sizeof(*v))))
		rc = -ENOMEM;
	if (!rc && l->gone && p->top)
		qsort(p->kept, p->nkept, sizeof(*p->kept), kept_qsort_cmp);
	for (i = 0; !rc && i < l->n && (i < keep || (f->w && !f->rc)); i++) {
		size_t ref = l->k[i].ix;

		if (i + AHEAD < l->n)
			ref_prefetch(p, l->k[i + AHEAD].ix);
		if (i < keep)
			ref_record(p, ref, ref & REF_GONE ? nth++ : 0, &v[i]);
		if (f->w && !f->rc) {
			ref_row(p, ref, &r);
			mms__trace_tsv_row(f, &r);
		}
	}
	mms__table_free(l->k, (l->n ? l->n : 1) * sizeof(*l->k));
	l->k = NULL;
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*nout = keep;
	*total = l->n;
	*bytes = l->bytes;
	return 0;
}

/* The span of the log's events: from the start of the recording (the
 * header's clock pair) to the last stamp of its segments. */
static void log_span(const mms_log_t *log, uint64_t *t0, uint64_t *t1)
{
	uint64_t hi = log->hdr.start_stamp;
	size_t i;

	for (i = 0; i < log->nsegs; i++)
		if (log->segs[i].last > hi)
			hi = log->segs[i].last;
	*t0 = log->hdr.start_realtime_ns;
	*t1 = mms__log_time(log, hi);
	if (*t1 < *t0)
		*t1 = *t0;
}

static void bucketer_init(struct bucketer *b, uint64_t t0, uint64_t t1, uint64_t n,
			  void (*emit)(void *, uint64_t, uint64_t, uint64_t), void *ctx)
{
	memset(b, 0, sizeof(*b));
	b->t0 = t0;
	b->span = t1 - t0 + 1;
	b->n = n;
	b->emit = emit;
	b->ctx = ctx;
}

/* Opens the TSV file at path (none when NULL) into f: a file that cannot
 * be made is said in *rc, and its list is made without it. */
static void tsv_open(struct pass *p, struct tsv *f, const char *path, int *rc)
{
	mms_log_info_t info;

	memset(f, 0, sizeof(*f));
	*rc = 0;
	if (!path)
		return;
	mms_log_get_info(p->log, &info);
	f->log = p->log;
	f->pid = info.pid;
	f->sym = p->out.sym;
	f->w = mms__wfile_open(path, p->out.overwrite, rc);
}

/* The lists, and their files: both files are moved into place once both
 * lists are made (none when the analysis fails). */
static int pass_finish(struct pass *p)
{
	mms_trace_t *t = p->t;
	struct tsv f[2];
	struct list l;
	uint64_t bytes;
	int rc = 0;

	tsv_open(p, &f[0], p->tsv_path[0], &t->watermark_rc);
	tsv_open(p, &f[1], p->tsv_path[1], &t->leakage_rc);
	/* Leakage: everything live at the end (its bytes also when the list
	 * is not wanted). */
	if (p->skip & MMS_TRACE_SKIP_END) {
		t->end_bytes = live_total(p);
	} else {
		l = (struct list){ .p = p, .limit = UINT64_MAX };
		rc = list_make(&l, &f[1], &t->end, &t->nend, &t->end_blocks, &t->end_bytes);
	}
	/* Watermark: what is still live of the peak, and what was freed
	 * since (none without a peak). */
	if (!rc && !(p->skip & MMS_TRACE_SKIP_PEAK) && t->peak_bytes) {
		l = (struct list){ .p = p, .limit = t->peak_event, .gone = 1 };
		rc = list_make(&l, &f[0], &t->peak, &t->npeak, &t->peak_blocks, &bytes); /* peak_bytes's */
	}
	mms__table_free(p->gone, p->gone_cap);
	free(p->kept);
	p->gone = NULL;
	p->kept = NULL;
	p->gone_len = p->gone_cap = p->nkept = p->kept_cap = 0;
	if (f[0].w)
		t->watermark_rc = mms__wfile_close(f[0].w, rc ? rc : f[0].rc);
	if (f[1].w)
		t->leakage_rc = mms__wfile_close(f[1].w, rc ? rc : f[1].rc);
	return rc;
}

static int pass_begin(struct mms__sub *sub, struct mms_pass *pass)
{
	struct pass *p = (struct pass *)sub;
	mms_trace_t *t = p->t;

	p->st = mms__pass_state(pass);
	p->live = live_total(p);
	p->steps = p->st->steps_seen;
	p->ranges = p->st->ranges_seen;
	/* A fork child's inherited blocks are live from the start, which may
	 * be its peak. */
	if (p->live) {
		t->peak_bytes = p->live;
		t->peak_ns = t->first_ns;
	}
	return 0;
}

/* At the end (damage stops the pass: what came before stands). */
static int pass_end(struct mms__sub *sub, struct mms_pass *pass)
{
	struct pass *p = (struct pass *)sub;
	struct mms__wfile *usage = p->usage;
	int rc;

	p->t->stop_rc = pass->stop_rc;
	if (p->file_bucketed)
		bucket_finish(&p->file_b, live_total(p));
	if (p->plot)
		bucket_finish(&p->plot_b, live_total(p));
	rc = pass_finish(p);
	p->usage = NULL;
	return mms__wfile_close(usage, rc);
}

static void pass_drop(struct mms__sub *sub)
{
	struct pass *p = (struct pass *)sub;

	mms__wfile_close(p->usage, MMS_EUSAGE); /* not finished: no file */
	mms__table_free(p->gone, p->gone_cap);
	free(p->vars);
	mms__map_free(&p->var_ix);
	free(p->kept);
	free(p->pieces);
	free(p->tsv_path[0]);
	free(p->tsv_path[1]);
	free(p);
}

MMS__EXPORT int mms_trace_add(mms_pass_t *pass, const mms_trace_options_t *opt, mms_trace_t **out)
{
	static const mms_trace_options_t none;
	struct trace_res *res;
	mms_trace_t *t;
	struct pass *p;
	int rc = 0;

	if (!out)
		return MMS_EUSAGE;
	*out = NULL;
	if (!pass)
		return MMS_EUSAGE;
	if (!opt)
		opt = &none;
	if ((opt->watermark_path && opt->skip & MMS_TRACE_SKIP_PEAK) ||
	    (opt->leakage_path && opt->skip & MMS_TRACE_SKIP_END))
		return MMS_EUSAGE;
	res = calloc(1, sizeof(*res));
	p = calloc(1, sizeof(*p));
	if (!res || !p) {
		free(res);
		free(p);
		return -ENOMEM;
	}
	t = &res->pub;
	/* The blocks' owner strings are the pass's: the result holds them. */
	res->strs = mms__strs_ref(pass->strs);
	p->log = pass->log;
	p->res = res;
	p->t = t;
	p->pass = pass;
	p->time_off = mms__pass_attach(pass, sizeof(uint64_t));
	p->kinds = (opt->kinds ? opt->kinds : ~(1u << MMS_MEM_DEVICE)) & ((1u << MMS_MEM_KIND_COUNT) - 1);
	p->skip = opt->skip;
	p->top = opt->top;
	p->out = opt->out;
	mms__map_init(&p->var_ix);
	/* Written at the end: the caller's strings may be gone by then. */
	if ((opt->watermark_path && !(p->tsv_path[0] = strdup(opt->watermark_path))) ||
	    (opt->leakage_path && !(p->tsv_path[1] = strdup(opt->leakage_path)))) {
		rc = -ENOMEM;
		goto fail;
	}
	log_span(p->log, &t->first_ns, &t->last_ns);
	p->sub.name = "trace";
	p->sub.kinds = ~0u;
	p->sub.before_kinds = 1u << MMS_EV_MALLOC | 1u << MMS_EV_FREE;
	p->sub.begin = pass_begin;
	p->sub.before = pass_before;
	p->sub.event = pass_event;
	p->sub.end = pass_end;
	p->sub.drop = pass_drop;
	p->sub.status = &t->status;
	*out = t;
	if (opt->plot_buckets) {
		p->plot = 1;
		t->npoints = opt->plot_buckets;
		t->points = calloc(t->npoints, sizeof(*t->points));
		t->launches = calloc(t->npoints, sizeof(*t->launches));
		if (!t->points || !t->launches) {
			rc = -ENOMEM;
			goto fail;
		}
		bucketer_init(&p->plot_b, t->first_ns, t->last_ns, opt->plot_buckets, plot_emit, p);
	}
	if (opt->usage_path) {
		p->usage = mms__wfile_open(opt->usage_path, opt->out.overwrite, &rc);
		if (!p->usage)
			goto fail;
		mms__wfile_str(p->usage, "time_ns\tlive_bytes\n");
		if (opt->buckets) {
			p->file_bucketed = 1;
			bucketer_init(&p->file_b, t->first_ns, t->last_ns, opt->buckets, file_emit, p);
		}
	}
	rc = mms__pass_add(pass, &p->sub);
	p = NULL;
	if (!rc)
		return 0;
fail:
	if (p)
		pass_drop(&p->sub);
	mms_trace_free(t);
	*out = NULL;
	return rc;
}

MMS__RUN_ONE(trace, mms_trace_options_t, mms_trace_t)

MMS__EXPORT void mms_trace_free(mms_trace_t *t)
{
	struct trace_res *res = (struct trace_res *)t;

	if (!t)
		return;
	mms__strs_unref(res->strs);
	free(t->peak);
	free(t->end);
	free(t->points);
	free(t->launches);
	free(t->steps);
	free(res);
}
