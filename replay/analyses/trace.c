/* SPDX-License-Identifier: MIT */
/* trace.c: the GPU-trace scripts' three analyses as one subscriber of a
 * pass: the blocks live at the high-water mark (watermark), live bytes
 * through time (usage) and the blocks live at the end (leakage). This
 * file follows the events (the peak, the usage rows, the blocks live at
 * the peak as they are freed); trace-list.c makes the two lists at the
 * end. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope/analysis.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "base-int.h"
#include "decimal-int.h"
#include "intervals-int.h"
#include "log-int.h"
#include "map-int.h"
#include "outfile-int.h"
#include "pass-int.h"
#include "state-int.h"
#include "trace-int.h"

/* --- time buckets (struct bucketer: trace-int.h) ---------------------------- */

/* Time t from the buckets' start (0 for a time before it). */
static uint64_t bucket_since(const struct bucketer *b, uint64_t t)
{
	return t > b->t0 ? t - b->t0 : 0;
}

static uint64_t bucket_of(const struct bucketer *b, uint64_t t)
{
	uint64_t d = bucket_since(b, t);

	if (!b->span || d >= b->span)
		return b->n - 1;
	/* d * n may not fit in 64 bits for long runs. */
	return (uint64_t)((unsigned __int128)d * b->n / b->span);
}

static uint64_t bucket_start(const struct bucketer *b, uint64_t i)
{
	return b->t0 + (uint64_t)((unsigned __int128)b->span * i / b->n);
}

/* The least time from t0 in bucket i or a later one (bucket_of()'s
 * inverse): UINT64_MAX for i past the last. */
static uint64_t bucket_edge(const struct bucketer *b, uint64_t i)
{
	if (i >= b->n)
		return UINT64_MAX;
	if (!b->span)
		return 0;
	return (uint64_t)(((unsigned __int128)b->span * i + b->n - 1) / b->n);
}

/* The live bytes were before and are now after an event at time t. An
 * event in the open bucket or before it (nearly every one) is told by
 * one comparison with the next bucket's edge, without bucket_of()'s
 * division. */
static void bucket_add(struct bucketer *b, uint64_t t, uint64_t before, uint64_t now)
{
	uint64_t i;

	if (bucket_since(b, t) >= b->next_edge) {
		i = bucket_of(b, t);
		while (b->cur < i) {
			b->emit(b->ctx, b->cur, bucket_start(b, b->cur), b->max);
			b->cur++;
			b->max = before;
		}
		b->next_edge = bucket_edge(b, b->cur + 1);
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

/* One row of usage.tsv: the time, the live bytes. */
static void usage_write(struct trace_pass *p, uint64_t time_ns, uint64_t bytes)
{
	char *q = mms__wfile_room(p->usage, 2 * 21);

	q = mms__wfile_dec_at(p->usage, q, time_ns);
	*q++ = '\t';
	q += mms__dec(q, bytes);
	*q++ = '\n';
	mms__wfile_end(p->usage, q);
	p->t->usage_rows++;
}

static void file_emit(void *ctx, uint64_t i, uint64_t time_ns, uint64_t bytes)
{
	(void)i;
	usage_write(ctx, time_ns, bytes);
}

static void plot_emit(void *ctx, uint64_t i, uint64_t time_ns, uint64_t bytes)
{
	struct trace_pass *p = ctx;

	p->t->points[i].time_ns = time_ns;
	p->t->points[i].bytes = bytes;
}

/* Writes the rows of the time the last changes had: the highest live
 * bytes among them when the last change left fewer, then the last. */
static void usage_rows_flush(struct trace_pass *p)
{
	if (p->row_ns == ROW_NONE)
		return;
	if (p->row_max > p->row_last)
		usage_write(p, p->row_ns, p->row_max);
	usage_write(p, p->row_ns, p->row_last);
	p->row_ns = ROW_NONE;
}

/* Where the row waiting for usage.tsv is of time t: it takes in the
 * change of live bytes to now, and 1 is returned; else 0. */
static inline int row_merge(struct trace_pass *p, uint64_t t, uint64_t now)
{
	if (t != p->row_ns || t == ROW_NONE)
		return 0;
	p->row_last = now;
	if (now > p->row_max)
		p->row_max = now;
	return 1;
}

/* A change of live bytes to now at time t, for usage.tsv: the changes of
 * one time (events recorded one after the other between two readings of
 * the clock share their time, see recorder.md) make at most two rows. */
static void usage_row(struct trace_pass *p, uint64_t t, uint64_t now)
{
	if (row_merge(p, t, now))
		return;
	usage_rows_flush(p);
	p->row_ns = t;
	p->row_max = p->row_last = now;
}

/* Before an MMAP event: the pieces of live mappings it will remove (an
 * munmap, or a mapping placed over others), clipped to its range. */
static int mmap_before(struct trace_pass *p, const mms_event_t *ev)
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
	}
	return 0;
}

/* After it: pieces that were live at the peak join the freed list. */
static int mmap_after(struct trace_pass *p)
{
	size_t i;

	for (i = 0; i < p->npieces; i++) {
		struct piece *pc = &p->pieces[i];

		if (p->t->peak_bytes && pc->b.alloc_event <= p->t->peak_event && mms__trace_freed_add(p, &pc->b))
			return -ENOMEM;
	}
	return 0;
}

static void launch_mark(struct trace_pass *p, const mms_event_t *ev)
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

static int step_mark(struct trace_pass *p, const mms_event_t *ev, uint64_t step)
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
	struct trace_pass *p = (struct trace_pass *)sub;

	(void)pass;
	return ev->mem == MMS_MEM_MMAP ? mmap_before(p, ev) : 0;
}

/* The usage file's and the plot's part of a change of the live bytes
 * counted, from before to now, at event ev. */
static void usage_change(struct trace_pass *p, const mms_event_t *ev, uint64_t before, uint64_t now)
{
	if (p->usage) {
		if (p->file_bucketed) {
			bucket_add(&p->file_b, ev->time_ns, before, now);
		} else {
			usage_row(p, ev->time_ns, now);
		}
	}
	if (p->plot)
		bucket_add(&p->plot_b, ev->time_ns, before, now);
}

/* usage_change() out of line, returning 0. */
static __attribute__((noinline)) int usage_change_out(struct trace_pass *p, const mms_event_t *ev, uint64_t before,
						      uint64_t now)
{
	usage_change(p, ev, before, now);
	return 0;
}

/* usage_change(), where a row of the time of the last change, when only
 * usage.tsv's rows are made, takes the change in without a call; the
 * rest is out of line, reached by a call in tail position. Returns 0. */
static inline __attribute__((always_inline)) int usage_take(struct trace_pass *p, const mms_event_t *ev,
							    uint64_t before, uint64_t now)
{
	if (p->rows_only && row_merge(p, ev->time_ns, now))
		return 0;
	return p->usage_any ? usage_change_out(p, ev, before, now) : 0;
}

/* A new peak where slots were held for the last one: they go back to the
 * state; then usage_take(). */
static __attribute__((noinline)) int peak_release(struct trace_pass *p, const mms_event_t *ev, uint64_t before,
						  uint64_t now)
{
	mms__trace_held_release(p);
	return usage_take(p, ev, before, now);
}

/* A change of the live bytes counted, from before to now (not equal), at
 * event ev; returns 0. The first time the peak's mark is reached, what
 * was freed before it no longer matters. What most changes do is done
 * here (usage_take()); the rest is out of line, reached by calls in tail
 * position, so that the heap events' short way, which inlines this,
 * saves no register and calls nothing. */
static inline __attribute__((always_inline)) int trace_change(struct trace_pass *p, const mms_event_t *ev,
							      uint64_t before, uint64_t now)
{
	mms_trace_t *t = p->t;

	t->changes++;
	if (now > t->peak_bytes) {
		t->peak_bytes = now;
		t->peak_event = ev->id;
		t->peak_ns = ev->time_ns;
		p->gone_len = p->ngone = 0;
		p->nkept = 0;
		if (p->nheld) /* most new peaks have none */
			return peak_release(p, ev, before, now);
	}
	return usage_take(p, ev, before, now);
}

/* A heap free of a block live at the peak whose slot could not be held at
 * once: kept another way (mms__trace_freed_more()). */
static __attribute__((noinline)) int freed_out(struct trace_pass *p, const mms_event_t *ev, uint64_t before,
					       uint64_t now)
{
	if (mms__trace_freed_more(p))
		return -ENOMEM;
	return now != before ? trace_change(p, ev, before, now) : 0;
}

/* A MALLOC or FREE of a block (not a mapping: mmap_after() keeps their
 * pieces), applied, the live bytes counted gone from before to now: a
 * block live at the peak and freed since still counts, its slot held
 * where it can be (nearly every such free: inline, calling nothing)
 * (an allocation's time is the state's, in the block's slot); then the
 * change. */
static inline __attribute__((always_inline)) int block_event(struct trace_pass *p, const mms_event_t *ev,
							     uint64_t before, uint64_t now)
{
	const struct mms__state *st = p->st;
	int64_t slot;

	if (ev->kind == MMS_EV_FREE) {
		if (st->last_blk_valid && p->t->peak_bytes && st->last_blk->alloc_event <= p->t->peak_event &&
		    p->peak_kinds & 1u << st->last_blk->mem) {
			if (p->nheld == p->held_cap || !p->hold_st || (slot = mms__state_hold_last(p->hold_st)) < 0)
				return freed_out(p, ev, before, now);
			mms__trace_held_add(p, slot);
		}
	}
	return now != before ? trace_change(p, ev, before, now) : 0;
}

/* An event that is neither a heap allocation nor a free (out of the way
 * of those): launches and step marks, and MMAP, POOL and DEVICE events
 * (MMAP's pieces mmap_before() found). The live bytes are counted over
 * every kind here; the short way follows the heap's alone. */
static __attribute__((noinline)) int trace_other(struct trace_pass *p, const mms_event_t *ev)
{
	const struct mms__state *st = p->st;
	uint64_t steps = p->steps, ranges = p->ranges, before = p->live, now = mms__trace_live_total(p);
	int rc = 0;

	p->live = now;
	p->host_seen = st->mem[MMS_MEM_HOST].live_bytes;
	p->steps = st->steps_seen;
	p->ranges = st->ranges_seen;
	if (ev->kind != MMS_EV_MALLOC && ev->kind != MMS_EV_FREE) {
		if (ev->kind == MMS_EV_OP_LAUNCH && ev->sub == 0)
			launch_mark(p, ev);
		else if (st->step_kind == 1 && st->steps_seen != steps)
			rc = step_mark(p, ev, st->steps_seen + 1);
		else if (st->step_kind == 2 && st->ranges_seen != ranges)
			rc = step_mark(p, ev, st->ranges_seen);
		return rc;
	}
	if (ev->mem != MMS_MEM_MMAP)
		return block_event(p, ev, before, now);
	if (mmap_after(p))
		return -ENOMEM;
	return now != before ? trace_change(p, ev, before, now) : 0;
}

/* One event, applied. Heap allocations and frees, nearly every event,
 * take the short way: such an event changes the heap's live bytes only
 * (the state's keyed_alloc() and keyed_free_in() count it in
 * mem[MMS_MEM_HOST] alone), so the live bytes counted move by the change
 * of those since the last event (host_seen), masked when the heap is not
 * counted; every other event counts them all again (trace_other()). */
static int pass_event(struct mms__sub *sub, struct mms_pass *pass, const mms_event_t *ev)
{
	struct trace_pass *p = (struct trace_pass *)sub;
	mms_trace_t *t = p->t;
	uint64_t before = p->live, now, host;

	(void)pass;
	t->events++;
	t->end_ns = ev->time_ns;
	if ((ev->kind != MMS_EV_MALLOC && ev->kind != MMS_EV_FREE) || ev->mem != MMS_MEM_HOST)
		return trace_other(p, ev);
	host = p->st->mem[MMS_MEM_HOST].live_bytes;
	now = before + ((host - p->host_seen) & p->kmask[MMS_MEM_HOST]);
	p->host_seen = host;
	p->live = now;
	return block_event(p, ev, before, now);
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
	b->next_edge = bucket_edge(b, 1);
}

static int pass_begin(struct mms__sub *sub, struct mms_pass *pass)
{
	struct trace_pass *p = (struct trace_pass *)sub;
	mms_trace_t *t = p->t;

	p->st = mms__pass_state(pass);
	p->live = mms__trace_live_total(p);
	p->host_seen = p->st->mem[MMS_MEM_HOST].live_bytes;
	p->hold_st = mms__pass_own_state(pass);
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
	struct trace_pass *p = (struct trace_pass *)sub;
	struct mms__wfile *usage = p->usage;
	int rc;

	p->t->stop_rc = pass->stop_rc;
	if (p->file_bucketed)
		bucket_finish(&p->file_b, mms__trace_live_total(p));
	else if (usage)
		usage_rows_flush(p);
	if (p->plot)
		bucket_finish(&p->plot_b, mms__trace_live_total(p));
	rc = mms__trace_lists_finish(p);
	p->usage = NULL;
	return mms__wfile_close(usage, rc);
}

static void pass_drop(struct mms__sub *sub)
{
	struct trace_pass *p = (struct trace_pass *)sub;

	mms__wfile_close(p->usage, MMS_EUSAGE); /* not finished: no file */
	mms__trace_lists_free(p);
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
	struct trace_pass *p;
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
	p->row_ns = ROW_NONE;
	p->kinds = (opt->kinds ? opt->kinds : ~(1u << MMS_MEM_DEVICE)) & ((1u << MMS_MEM_KIND_COUNT) - 1);
	for (unsigned k = 0; k < MMS_MEM_KIND_COUNT; k++)
		p->kmask[k] = p->kinds & 1u << k ? UINT64_MAX : 0;
	p->skip = opt->skip;
	p->peak_kinds = p->skip & MMS_TRACE_SKIP_PEAK ? 0 : p->kinds;
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
	p->sub.before_mems = 1u << MMS_MEM_MMAP;
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
		p->usage = mms__wfile_open(opt->usage_path, mms__out_flags(&opt->out), &rc);
		if (!p->usage)
			goto fail;
		mms__wfile_str(p->usage, "time_ns\tlive_bytes\n");
		if (opt->buckets) {
			p->file_bucketed = 1;
			bucketer_init(&p->file_b, t->first_ns, t->last_ns, opt->buckets, file_emit, p);
		}
	}
	p->rows_only = p->usage && !p->file_bucketed && !p->plot;
	p->usage_any = p->usage || p->plot;
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
