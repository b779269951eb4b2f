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
#include "base-int.h"
#include "intervals-int.h"
#include "log-int.h"
#include "outfile-int.h"
#include "pass-int.h"
#include "sort-int.h"
#include "state-int.h"

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
	/* Blocks (or mapping pieces) live at the peak and freed since. */
	mms_trace_block_t *freed;
	size_t nfreed, freed_cap;
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

/* Live bytes of the kinds counted. */
static uint64_t live_total(const struct pass *p)
{
	uint64_t n = 0;

	for (int k = 0; k < MMS_MEM_KIND_COUNT; k++)
		if (p->kinds & 1u << k)
			n += p->st->mem[k].live_bytes;
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

static int freed_add(struct pass *p, const struct mms__blk *b, uint64_t time_ns)
{
	if (!(p->kinds & 1u << b->mem) || p->skip & MMS_TRACE_SKIP_PEAK)
		return 0;
	if (mms__grow(&p->freed, &p->freed_cap, p->nfreed, sizeof(*p->freed)))
		return -ENOMEM;
	block_out(p, b, time_ns, &p->freed[p->nfreed++]);
	return 0;
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

/* One event, applied: before the live bytes and the state's step counters
 * as they were. */
static int trace_event(struct pass *p, const mms_event_t *ev, uint64_t before, uint64_t steps, uint64_t ranges)
{
	mms_trace_t *t = p->t;
	uint64_t now;
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
	now = live_total(p);
	if (now == before)
		return 0;
	t->changes++;
	if (now > t->peak_bytes) {
		/* The first time the mark is reached: what was freed before
		 * it no longer matters. */
		t->peak_bytes = now;
		t->peak_event = ev->id;
		t->peak_ns = ev->time_ns;
		p->nfreed = 0;
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
	int rc;

	(void)pass;
	rc = trace_event(p, ev, p->live, p->steps, p->ranges);
	p->live = live_total(p);
	p->steps = p->st->steps_seen;
	p->ranges = p->st->ranges_seen;
	return rc;
}

/* Collects blocks into a list sorted largest first (then oldest first,
 * then by address): first their sort keys and where each is (a live
 * block's slot, or a block made already: freed since the peak, a piece
 * of a mapping), then the list is made in their order, each block
 * written once. */
#define MADE ((size_t)1 << (sizeof(size_t) * 8 - 1)) /* ref: index in made */

struct cand {
	uint64_t size, event;
	size_t ref;              /* a slot, or MADE | index in made */
};

struct collect {
	struct pass *p;
	struct cand *v;
	size_t n, cap;
	mms_trace_block_t *made;
	size_t nmade, made_cap;
	uint64_t limit;          /* only blocks allocated at or before it */
	uint64_t bytes;
};

static int cand_add(struct collect *c, uint64_t size, uint64_t event, size_t ref)
{
	if (mms__grow(&c->v, &c->cap, c->n, sizeof(*c->v)))
		return -ENOMEM;
	c->v[c->n++] = (struct cand){ size, event, ref };
	c->bytes += size;
	return 0;
}

/* Room for the live blocks and more candidates, so that the list does
 * not grow by doubling (a million blocks are common). */
static int collect_room(struct collect *c, size_t more)
{
	const struct mms__state *st = c->p->st;

	c->cap = st->nblks - st->nfree + st->maps.n + more;
	c->v = malloc((c->cap ? c->cap : 1) * sizeof(*c->v));
	return c->v ? 0 : -ENOMEM;
}

static int collect_one(const struct mms__blk *b, void *ctx)
{
	struct collect *c = ctx;
	const struct mms__state *st = c->p->st;

	if (b->alloc_event > c->limit || !(c->p->kinds & 1u << b->mem))
		return 0;
	if (b >= st->blks && b < st->blks + st->nblks)
		return cand_add(c, b->size, b->alloc_event, (size_t)(b - st->blks));
	/* A piece of a mapping, made for this call only. */
	if (mms__grow(&c->made, &c->made_cap, c->nmade, sizeof(*c->made)))
		return -ENOMEM;
	block_out(c->p, b, block_time(c->p, b), &c->made[c->nmade]);
	return cand_add(c, b->size, b->alloc_event, MADE | c->nmade++);
}

/* The address of candidate x's block. */
static uint64_t cand_addr(const struct collect *c, const struct cand *x)
{
	return x->ref & MADE ? c->made[x->ref & ~MADE].b.addr : c->p->st->blks[x->ref].addr;
}

static int cand_cmp(const struct collect *c, const struct cand *x, const struct cand *y)
{
	uint64_t a, b;

	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	a = cand_addr(c, x);
	b = cand_addr(c, y);
	return a < b ? -1 : a > b;
}

static int keyed_cmp(const void *a, const void *b, void *ctx)
{
	const struct collect *c = ctx;

	return cand_cmp(c, &c->v[((const struct mms__keyed *)a)->ix], &c->v[((const struct mms__keyed *)b)->ix]);
}

/* The candidates' order as cand_cmp() has it, as indices into c->v in
 * (*k)[i].ix (freed by the caller): a radix sort of one key of the size
 * and the event where both fit in 64 bits, runs of equal keys (pieces of
 * one mapping) by address; else a qsort(). Returns 0 or -ENOMEM. */
static int cands_order(struct collect *c, struct mms__keyed **k)
{
	uint64_t most = 0, last = 0;
	unsigned ebits;
	size_t i, lo;

	*k = malloc((c->n ? c->n : 1) * sizeof(**k));
	if (!*k)
		return -ENOMEM;
	for (i = 0; i < c->n; i++) {
		most = c->v[i].size > most ? c->v[i].size : most;
		last = c->v[i].event > last ? c->v[i].event : last;
	}
	ebits = mms__bits(last);
	for (i = 0; i < c->n; i++) {
		(*k)[i].key = (ebits < 64 ? (most - c->v[i].size) << ebits : 0) | c->v[i].event;
		(*k)[i].ix = i;
	}
	if (mms__bits(most) + ebits > 64 || mms__sort_keyed(*k, c->n)) {
		/* Keys too wide, or no memory for the sort. */
		for (i = 0; i < c->n; i++)
			(*k)[i].key = 0;
	}
	for (lo = 0; lo < c->n; lo = i) {
		for (i = lo + 1; i < c->n && (*k)[i].key == (*k)[lo].key; i++)
			;
		if (i - lo > 1)
			qsort_r(*k + lo, i - lo, sizeof(**k), keyed_cmp, c);
	}
	return 0;
}

/* Puts made in the order of k, in place: made[k[i].ix] (cands refer to
 * made only) goes to place i, each cycle of the permutation followed
 * once. */
static void made_permute(struct collect *c, struct mms__keyed *k)
{
	mms_trace_block_t tmp;
	size_t i, j, f;

	for (i = 0; i < c->n; i++)
		k[i].ix = c->v[k[i].ix].ref & ~MADE; /* where place i's block is now */
	for (i = 0; i < c->n; i++) {
		if (k[i].ix == i)
			continue;
		tmp = c->made[i];
		for (j = i; k[j].ix != i; j = f) {
			f = k[j].ix;
			c->made[j] = c->made[f];
			k[j].ix = j;
		}
		c->made[j] = tmp;
		k[j].ix = j;
	}
}

/* Makes the sorted list of what c collected into *out (*n blocks), and
 * frees what c held. When most blocks are made already (the peak's list:
 * blocks freed since, often millions), the live ones join them and the
 * list is sorted in place; else it is written anew in order. Returns 0
 * or -ENOMEM. */
static int collect_finish(struct collect *c, mms_trace_block_t **out, size_t *n)
{
	const struct mms__state *st = c->p->st;
	mms_trace_block_t *v = NULL;
	struct mms__keyed *k = NULL;
	int in_place = c->nmade > c->n / 4;
	struct cand *x;
	size_t i;
	int rc;

	for (i = 0; in_place && i < c->n; i++) {
		x = &c->v[i];
		if (x->ref & MADE)
			continue;
		if (mms__grow(&c->made, &c->made_cap, c->nmade, sizeof(*c->made))) {
			rc = -ENOMEM;
			goto out;
		}
		block_out(c->p, &st->blks[x->ref], block_time(c->p, &st->blks[x->ref]), &c->made[c->nmade]);
		x->ref = MADE | c->nmade++;
	}
	rc = cands_order(c, &k);
	if (rc)
		goto out;
	if (in_place) {
		made_permute(c, k);
		v = c->made;
		c->made = NULL;
	} else if (c->n) {
		v = malloc(c->n * sizeof(*v));
		if (!v) {
			rc = -ENOMEM;
			goto out;
		}
		for (i = 0; i < c->n; i++) {
			x = &c->v[k[i].ix];
			if (x->ref & MADE)
				v[i] = c->made[x->ref & ~MADE];
			else
				block_out(c->p, &st->blks[x->ref], block_time(c->p, &st->blks[x->ref]), &v[i]);
		}
	}
out:
	*out = rc ? NULL : v;
	*n = rc ? 0 : c->n;
	free(k);
	free(c->v);
	free(c->made);
	c->v = NULL;
	c->made = NULL;
	c->n = c->cap = c->nmade = c->made_cap = 0;
	return rc;
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

static int pass_finish(struct pass *p)
{
	mms_trace_t *t = p->t;
	struct collect c = { .p = p, .limit = UINT64_MAX };
	size_t i;
	int rc;

	/* Leakage: everything live at the end (its bytes also when the list
	 * is not wanted). */
	if (p->skip & MMS_TRACE_SKIP_END) {
		t->end_bytes = live_total(p);
	} else {
		rc = collect_room(&c, 0);
		if (!rc)
			rc = mms__state_each(p->st, collect_one, &c);
		t->end_bytes = c.bytes;
		if (!rc)
			rc = collect_finish(&c, &t->end, &t->nend);
		if (rc)
			goto fail;
	}
	if (p->skip & MMS_TRACE_SKIP_PEAK)
		return 0;

	/* Watermark: what is still live of the peak, and what was freed
	 * since. */
	memset(&c, 0, sizeof(c));
	c.p = p;
	c.limit = t->peak_bytes ? t->peak_event : 0;
	c.made = p->freed;
	c.nmade = p->nfreed;
	c.made_cap = p->freed_cap;
	p->freed = NULL;
	if (!t->peak_bytes)
		return collect_finish(&c, &t->peak, &t->npeak); /* none */
	rc = collect_room(&c, c.nmade);
	for (i = 0; !rc && i < c.nmade; i++)
		rc = cand_add(&c, c.made[i].b.size, c.made[i].b.alloc_event, MADE | i);
	if (!rc)
		rc = mms__state_each(p->st, collect_one, &c);
	if (!rc)
		return collect_finish(&c, &t->peak, &t->npeak);
fail:
	free(c.v);
	free(c.made);
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
	free(p->freed);
	free(p->pieces);
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
	p->kinds = opt->kinds ? opt->kinds : (1u << MMS_MEM_KIND_COUNT) - 1 - (1u << MMS_MEM_DEVICE);
	p->skip = opt->skip;
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

/* --- the scripts' TSV ------------------------------------------------------------- */

static const char *kind_name(const mms_block_t *b)
{
	const char *name = mms_mem_kind_name(b->mem);

	return name ? name : "POOL";
}

/* Writes s with tabs and line breaks turned into spaces (a field). */
static void w_field(struct mms__wfile *w, const char *s)
{
	for (; *s; s++) {
		char ch = *s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s;

		mms__wfile_mem(w, &ch, 1);
	}
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

MMS__EXPORT int mms_trace_frame_text(const mms_frame_t *f, char *buf, size_t len)
{
	const char *mod = base_name(f->module);
	int n;

	if (f->function)
		n = snprintf(buf, len, "%s (%s)", f->function, mod ? mod : "??");
	else
		n = snprintf(buf, len, "0x%llx (%s)", (unsigned long long)f->ip, mod ? mod : "??");
	return n;
}

MMS__EXPORT int mms_trace_write_tsv(mms_log_t *log, const mms_trace_block_t *blocks, size_t n, const char *path,
				    const mms_output_options_t *out)
{
	mms_symbolizer_t *sym = out ? out->sym : NULL;
	mms_log_info_t info;
	struct mms__wfile *w;
	uint64_t ips[256];
	mms_frame_t frames[64];
	char text[1024];
	size_t i;
	int rc = 0, depth, k, j, nf;

	if (!log || !path || (!blocks && n))
		return MMS_EUSAGE;
	mms_log_get_info(log, &info);
	w = mms__wfile_open(path, out && out->overwrite, &rc);
	if (!w)
		return rc;
	for (i = 0; i < n && !rc; i++) {
		const mms_trace_block_t *tb = &blocks[i];
		const char *var = tb->b.owner ? tb->b.owner : tb->b.pool ? tb->b.pool : "";

		mms__wfile_u64(w, info.pid, '\t');
		mms__wfile_hex(w, tb->b.addr, '\t');
		mms__wfile_u64(w, tb->time_ns, '\t');
		mms__wfile_u64(w, tb->b.size, '\t');
		mms__wfile_str(w, kind_name(&tb->b));
		mms__wfile_str(w, "\tALLOCATION\t");
		w_field(w, var);
		mms__wfile_mem(w, "\t", 1);
		depth = mms__log_stack(log, tb->b.stack, ips, sizeof(ips) / sizeof(ips[0]));
		if (depth < 0) {
			rc = depth;
			break;
		}
		if ((size_t)depth > sizeof(ips) / sizeof(ips[0]))
			depth = (int)(sizeof(ips) / sizeof(ips[0]));
		/* Python frames where the eval loop ran them. */
		if (sym && depth > 0) {
			int m = mms_stack_mixed(sym, ips, (size_t)depth);
			if (m < 0) {
				rc = m;
				break;
			}
			depth = m;
		}
		for (k = 0; k < depth; k++) {
			mms_frame_t one = { .ip = ips[k] };

			nf = sym ? mms_symbolize(sym, ips[k], frames, sizeof(frames) / sizeof(frames[0])) : 0;
			if (nf < 0) {
				rc = nf;
				break;
			}
			if (!nf) {
				frames[0] = one;
				nf = 1;
			}
			for (j = 0; j < nf; j++) {
				if (k || j)
					mms__wfile_str(w, "; ");
				mms_trace_frame_text(&frames[j], text, sizeof(text));
				w_field(w, text);
			}
		}
		mms__wfile_mem(w, "\n", 1);
	}
	return mms__wfile_close(w, rc);
}
