/* SPDX-License-Identifier: MIT */
/* summary.c: the figures of a whole log that every pass computes: events,
 * allocations, frees, bytes, peaks, threads and steps. */
#include <string.h>

#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "msmemscope/summary.h"
#include "base-int.h"
#include "pass-int.h"
#include "state-int.h"

struct inherited_ctx {
	const struct mms__state *st;
	mms_summary_t *out;
	struct mms__rtmemo rtmemo;
};

static int count_inherited(const struct mms__blk *b, void *ctx)
{
	struct inherited_ctx *c = ctx;

	if (mms__blk_inherited(c->st, b)) {
		c->out->inherited_live_blocks[b->mem]++;
		c->out->inherited_live_bytes[b->mem] += b->size;
	}
	return 0;
}

/* A block live at the end that a runtime keeps: not the program's. */
static int count_runtime(const struct mms__blk *b, void *ctx)
{
	struct inherited_ctx *c = ctx;
	unsigned k = mms__blk_runtime_at_end(c->st, &c->rtmemo, b);

	if (k) {
		c->out->runtime_blocks[k][b->mem]++;
		c->out->runtime_bytes[k][b->mem] += b->size;
		c->out->runtime_blocks[MMS_RUNTIME_NONE][b->mem]++;
		c->out->runtime_bytes[MMS_RUNTIME_NONE][b->mem] += b->size;
	} else if (b->mem == MMS_MEM_HOST) {
		/* The program's heap block: leaked or still reachable. */
		unsigned r = mms__blk_reach_at_end(c->st, b);

		c->out->reach_blocks[r]++;
		c->out->reach_bytes[r] += b->size;
	}
	return 0;
}

/* Copies the state's running figures into a summary. */
void mms__state_summary(const struct mms__state *st, mms_summary_t *out)
{
	memset(out, 0, sizeof(*out));
	out->events = st->pos;
	memcpy(out->by_kind, st->by_kind, sizeof(out->by_kind));
	memcpy(out->mem, st->mem, sizeof(out->mem));
	out->threads = st->log->nthreads;
	/* msmemscope_step() ends step k and begins k + 1: a program that
	 * calls it at the end of each of N iterations has run N steps, and
	 * the step it began last counts only if something happened in it. */
	if (st->step_kind == 1)
		out->steps = st->steps_seen + (uint64_t)st->after_step;
	else if (st->step_kind == 2)
		out->steps = st->ranges_seen;
	out->unmatched_frees = st->unmatched_frees;
	out->unrecorded_frees = st->unrecorded_frees;
	out->double_allocs = st->double_allocs;
	if (st->log->inh.state == MMS_FORK_INHERITED) {
		struct inherited_ctx c = { .st = st, .out = out };

		mms__state_each(st, count_inherited, &c);
	}
	out->double_frees = st->double_frees;
	out->invalid_frees = st->invalid_frees;
	out->mismatched_frees = st->mismatched_frees;
	out->unchecked_frees = st->unchecked_frees;
	out->gap_event = st->gap_event;
}

MMS__EXPORT int mms_pass_summary(const mms_pass_t *p, mms_summary_t *out)
{
	const struct mms__state *st;

	if (!out)
		return MMS_EUSAGE;
	memset(out, 0, sizeof(*out));
	if (!p || !p->ran || p->first.replay)
		return MMS_EUSAGE;
	st = p->first.st;
	mms__state_summary(st, out);
	memcpy(out->bad_frees, p->bad, p->nbad * sizeof(*p->bad));
	out->nbad_frees = p->nbad;
	/* What is live at the end: the runtimes' share. */
	{
		struct inherited_ctx c = { .st = st, .out = out };

		out->reach_known = mms__reach_known(st);
		mms__state_each(st, count_runtime, &c);
		mms__rtmemo_free(&c.rtmemo);
	}
	out->freeres = mms_log_meta(p->log, "freeres", NULL, NULL) == 0;
	return 0;
}

MMS__EXPORT int mms_summarize(mms_log_t *log, mms_summary_t *out)
{
	mms_pass_t *p;
	int rc;

	if (!log || !out)
		return MMS_EUSAGE;
	memset(out, 0, sizeof(*out));
	rc = mms_pass_open(log, NULL, &p);
	if (rc)
		return rc;
	rc = mms_pass_run(p);
	if (!rc) {
		mms_pass_summary(p, out);
		rc = p->stop_rc;
	}
	mms_pass_close(p);
	return rc;
}
