/* SPDX-License-Identifier: MIT */
/* seek.c: the public replay: opens the index (building it when missing or
 * stale), steps through events, seeks by checkpoint plus a short replay,
 * and answers questions about the state and its blocks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/replay.h"
#include "base-int.h"
#include "index-int.h"
#include "iter-int.h"
#include "pass-int.h"
#include "state-int.h"

struct mms_replay {
	mms_log_t *log;
	struct mms__owners owners; /* owner strings of all the states below */
	struct mms__owners *ow;  /* &owners, or the replay's this one scratches for */
	struct mms__index ix;
	struct mms__state st;
	mms_iter_t *it;
	/* The iterator's last run of events; one event at a time on a log
	 * being followed, whose refresh may come between two events. */
	struct mms__span span;
	/* The last event applied, when last_valid: in the iterator's slot
	 * (no copy), or in last_buf, where last_keep() puts it before the
	 * iterator goes. Never NULL. */
	mms_event_t *last;
	mms_event_t last_buf;
	int last_valid;          /* 0 right after a checkpoint was loaded */
	int follow_rc;           /* a failed mms_replay_follow_refresh(): it left no iterator */
	int index_state;
	int write_error;
	/* mms_replay_options_t's: the index build and the passes over the
	 * replay (a step report's) report to it. */
	int (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
};

/* Moves the last event out of the iterator's memory, before it closes. */
static void last_keep(mms_replay_t *r)
{
	if (r->last != &r->last_buf) {
		r->last_buf = *r->last;
		r->last = &r->last_buf;
	}
}

/* A replay of a log being written goes no further than a gap in a
 * thread's records that the last look may have made (log.c, find_stop):
 * the next look may fill it. */
static void gap_limit(mms_replay_t *r)
{
	if (r->it && r->log->follow == MMS__FOLLOW_LIVE && r->log->gap_cap != UINT64_MAX)
		mms__iter_limit(r->it, r->log->gap_cap ? r->log->gap_cap - 1 : 0);
}

/* Puts the replay at position 0: an empty heap, or a fork child's
 * inherited blocks (interned among the replay's owner strings). */
static int rewind_start(mms_replay_t *r)
{
	struct mms__state st;
	mms_iter_t *it;
	int rc;

	rc = mms_iter_open(r->log, &it);
	if (rc)
		return rc;
	mms__state_init(&st, r->log);
	st.ow = r->ow;
	/* A forward-only replay reads on to the end of the log. */
	if (r->ix.events == UINT64_MAX)
		mms__state_expect_whole(&st);
	rc = mms__state_seed(&st);
	if (rc) {
		mms_iter_close(it);
		return rc;
	}
	last_keep(r);
	mms__span_drop(&r->span);
	mms_iter_close(r->it);
	mms__state_free(&r->st);
	r->it = it;
	gap_limit(r);
	r->st = st;
	/* The mappings' callback points at the state: it moved. */
	r->st.maps.ctx = &r->st;
	mms__iter_prefetch_for(r->it, &r->st);
	r->st.step_kind_hint = r->ix.step_kind;
	r->last_valid = 0;
	return 0;
}

static char *default_index_path(const mms_log_t *log)
{
	size_t n;
	char *p;

	if (!log->path)
		return NULL;
	n = strlen(log->path) + 5;
	p = malloc(n);
	if (p)
		snprintf(p, n, "%s.idx", log->path);
	return p;
}

MMS__EXPORT int mms_replay_open_ex(mms_log_t *log, const mms_replay_options_t *opt, mms_replay_t **out)
{
	mms_replay_t *r;
	char *path = NULL;
	int rc;

	if (!log || !out)
		return MMS_EUSAGE;
	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->log = log;
	r->ow = &r->owners;
	r->last = &r->last_buf;
	if (opt) {
		r->progress = opt->progress;
		r->progress_ctx = opt->progress_ctx;
	}
	mms__state_init(&r->st, log);
	if (!opt || (!opt->no_index_file && !opt->forward_only)) {
		path = opt && opt->index_path ? strdup(opt->index_path) : default_index_path(log);
		if (!path && (log->path || (opt && opt->index_path))) {
			rc = -ENOMEM;
			goto fail_r;
		}
	}
	if (opt && opt->forward_only) {
		/* No index: events end where the iterator says. */
		r->ix.events = UINT64_MAX;
	} else if (path && mms__index_load(log, path, &r->ix) == 0) {
		r->index_state = MMS_INDEX_LOADED;
	} else {
		rc = mms__index_build(log, opt, &r->ix);
		if (rc)
			goto fail_path;
		r->index_state = MMS_INDEX_MEMORY;
		if (path) {
			r->write_error = mms__index_store(log, path, &r->ix);
			if (!r->write_error)
				r->index_state = MMS_INDEX_BUILT;
		}
	}
	free(path);
	rc = rewind_start(r);
	if (rc)
		goto fail_ix;
	*out = r;
	return 0;
fail_path:
	free(path);
fail_ix:
	mms__index_free(&r->ix);
fail_r:
	mms__state_free(&r->st);
	mms__owners_free(&r->owners);
	free(r);
	return rc;
}

void mms__replay_progress(const mms_replay_t *r, struct mms_pass *p)
{
	p->progress = r->progress;
	p->progress_ctx = r->progress_ctx;
}

MMS__EXPORT int mms_replay_open(mms_log_t *log, mms_replay_t **out)
{
	return mms_replay_open_ex(log, NULL, out);
}

MMS__EXPORT void mms_replay_close(mms_replay_t *r)
{
	if (!r)
		return;
	mms_iter_close(r->it);
	mms__state_free(&r->st);
	mms__index_free(&r->ix);
	mms__owners_free(&r->owners);
	free(r);
}

MMS__EXPORT int mms_replay_index_state(const mms_replay_t *r, int *write_error)
{
	if (!r)
		return MMS_EUSAGE;
	if (write_error)
		*write_error = r->write_error;
	return r->index_state;
}

const struct mms__state *mms__replay_state(const mms_replay_t *r)
{
	return &r->st;
}

int mms__replay_fork_event(const mms_replay_t *r, uint64_t number, uint64_t *id)
{
	size_t i;

	for (i = 0; i < r->ix.nforks; i++) {
		if (r->ix.forks[i].number == number) {
			*id = r->ix.forks[i].id;
			return 1;
		}
	}
	return 0;
}

MMS__EXPORT mms_log_t *mms_replay_log(const mms_replay_t *r)
{
	return r ? r->log : NULL;
}

MMS__EXPORT int mms_replay_next(mms_replay_t *r, mms_event_t *ev)
{
	mms_event_t *e;
	int rc;

	if (!r)
		return MMS_EUSAGE;
	if (!r->it)
		return r->follow_rc ? r->follow_rc : MMS_EUSAGE;
	/* The index says where the readable events end; past that is the
	 * damage the build found. */
	if (r->st.pos >= r->ix.events)
		return r->ix.stop_rc;
	e = mms__span_take(&r->span);
	if (!e && (rc = mms__span_fill(&r->span, r->it, r->log->follow ? 1 : MMS__SPAN_MAX, &e)) <= 0)
		return rc;
	rc = mms__state_apply(&r->st, e);
	if (rc) {
		last_keep(r); /* the last event applied stays, whatever comes */
		return rc;
	}
	/* An operator's end record has no name: the state knows it. */
	if (e->kind == MMS_EV_OP_LAUNCH && e->sub == 1)
		e->name = r->st.ended_op;
	r->last = e;
	r->last_valid = 1;
	if (ev)
		*ev = *e;
	return 1;
}

/* Events a seek replays between calls of the progress callback. */
#define SEEK_PROGRESS_EVERY ((uint64_t)1 << 16)

/* Replays up to pos; the progress callback, every SEEK_PROGRESS_EVERY
 * events, may cancel (-ECANCELED: the replay stands where it stopped). */
static int replay_to(mms_replay_t *r, uint64_t pos)
{
	uint64_t from = r->st.pos, next = from + SEEK_PROGRESS_EVERY;
	int rc;

	while (r->st.pos < pos) {
		if (r->st.pos >= next) {
			next = r->st.pos + SEEK_PROGRESS_EVERY;
			if (r->progress && r->progress(r->progress_ctx, r->st.pos - from, pos - from))
				return -ECANCELED;
		}
		rc = mms_replay_next(r, NULL);
		if (rc <= 0)
			return rc ? rc : MMS_ECORRUPT;
	}
	return 0;
}

/* The last checkpoint at or before pos, or -1. */
static ptrdiff_t ckpt_before(const struct mms__index *ix, uint64_t pos)
{
	size_t a = 0, b = ix->nckpts, m;

	while (a < b) {
		m = a + (b - a) / 2;
		if (ix->ckpts[m].pos <= pos)
			a = m + 1;
		else
			b = m;
	}
	return (ptrdiff_t)a - 1;
}

/* Loads checkpoint k into the replay (k < 0: the start). */
static int load_ckpt(mms_replay_t *r, ptrdiff_t k)
{
	struct mms__state st;
	mms_iter_t *it;
	int rc;

	if (k < 0)
		return rewind_start(r);
	rc = mms__ckpt_restore(r->log, r->ix.blobs + r->ix.ckpts[k].off, r->ix.ckpts[k].len, r->ow, &st, &it);
	if (rc)
		return rc;
	last_keep(r);
	mms__span_drop(&r->span);
	mms_iter_close(r->it);
	mms__state_free(&r->st);
	r->st = st;
	/* The mappings' callback points at the state: it moved. */
	r->st.maps.ctx = &r->st;
	r->st.step_kind_hint = r->ix.step_kind;
	r->it = it;
	mms__iter_prefetch_for(r->it, &r->st);
	r->last_valid = 0;
	return 0;
}

MMS__EXPORT int mms_replay_seek(mms_replay_t *r, uint64_t pos)
{
	ptrdiff_t k;
	int rc;

	if (!r || pos > r->ix.events)
		return MMS_EUSAGE;
	/* A checkpoint before pos, not at it: the replay then applies at
	 * least the event before pos, which "last event" reports. */
	k = pos ? ckpt_before(&r->ix, pos - 1) : -1;
	/* Going forward from here beats a checkpoint that is not ahead of
	 * us; anything else starts from the checkpoint. */
	if (pos < r->st.pos || (pos == r->st.pos && pos && !r->last_valid) ||
	    (k >= 0 && r->ix.ckpts[k].pos > r->st.pos)) {
		rc = load_ckpt(r, k);
		if (rc)
			return rc;
	}
	return replay_to(r, pos);
}

MMS__EXPORT int mms_replay_follow_refresh(mms_replay_t *r)
{
	struct mms__follow_pos *pos;
	uint64_t next_id;
	size_t n;
	int rc, found;

	if (!r || !r->it || r->ix.events != UINT64_MAX || r->log->follow != MMS__FOLLOW_LIVE)
		return MMS_EUSAGE;
	n = r->log->nthreads;
	pos = calloc(n ? n : 1, sizeof(*pos));
	if (!pos)
		return -ENOMEM;
	/* Where the iterator stands, then a look at the log (which rebuilds
	 * the segments an iterator goes by), then the iterator again from
	 * there. */
	mms__iter_save_follow(r->it, &next_id, pos);
	last_keep(r);
	mms__span_drop(&r->span);
	mms_iter_close(r->it);
	r->it = NULL;
	found = mms_log_follow_refresh(r->log);
	rc = found < 0 ? found
		       : mms__iter_open_follow(r->log, next_id, pos, n, r->last_valid ? r->last->stamp : 0,
					       r->last_valid ? r->last->thread : 0, &r->it);
	free(pos);
	if (rc) {
		r->it = NULL;
		r->follow_rc = rc;
		return rc;
	}
	mms__iter_prefetch_for(r->it, &r->st);
	gap_limit(r);
	return found;
}

MMS__EXPORT int mms_replay_last_event(const mms_replay_t *r, mms_event_t *ev)
{
	if (!r || !ev || !r->last_valid)
		return 0;
	*ev = *r->last;
	return 1;
}

MMS__EXPORT void mms_replay_where(const mms_replay_t *r, mms_where_t *w)
{
	const struct mms__state *st;
	const struct mms__tstate *t;
	size_t i;

	if (!r || !w)
		return;
	st = &r->st;
	memset(w, 0, sizeof(*w));
	w->position = st->pos;
	w->events = r->ix.events == UINT64_MAX ? r->log->events : r->ix.events;
	w->step = mms__state_step(st, &w->in_step);
	w->op_launches = st->op_launches;
	w->kernel_launches = st->kernel_launches;
	w->thread = st->last_thread;
	if (st->last_thread < st->nthreads) {
		t = &st->threads[st->last_thread];
		if (t->nops) {
			w->op = t->ops[t->nops - 1].name;
			w->op_launch = t->ops[t->nops - 1].launch;
		}
	}
	memcpy(w->mem, st->mem, sizeof(w->mem));
	for (i = 0; i < MMS_MEM_KIND_COUNT; i++)
		w->live_bytes += st->mem[i].live_bytes;
	w->peak_bytes = st->peak_total;
	w->unmatched_frees = st->unmatched_frees;
	w->double_allocs = st->double_allocs;
	w->double_frees = st->double_frees;
	w->invalid_frees = st->invalid_frees;
	w->mismatched_frees = st->mismatched_frees;
	w->unchecked_frees = st->unchecked_frees;
	w->gap_event = st->gap_event;
}

MMS__EXPORT uint64_t mms_replay_steps(const mms_replay_t *r)
{
	return r ? r->ix.nsteps : 0;
}

MMS__EXPORT int mms_replay_step_range(const mms_replay_t *r, uint64_t step, uint64_t *begin, uint64_t *end)
{
	if (!r || step < 1 || step > r->ix.nsteps)
		return MMS_EUSAGE;
	if (begin)
		*begin = r->ix.steps[step - 1].begin;
	if (end)
		*end = r->ix.steps[step - 1].end;
	return 0;
}

MMS__EXPORT int mms_replay_block_at(const mms_replay_t *r, uint64_t addr, mms_block_t *b)
{
	const struct mms__blk *k;

	if (!r || !b)
		return MMS_EUSAGE;
	k = mms__state_find(&r->st, addr);
	if (!k)
		return 0;
	mms__state_blk_export(&r->st, k, b);
	return 1;
}

MMS__EXPORT int mms_replay_event_block(const mms_replay_t *r, mms_block_t *b)
{
	if (!r || !b)
		return 0;
	return mms__state_event_block(&r->st, r->last, b);
}

struct each_ctx {
	const struct mms__state *st;
	int (*fn)(const mms_block_t *b, void *ctx);
	void *ctx;
	int at_end; /* the replay stands after the log's last event */
	struct mms__rtmemo rtmemo;
};

static int each_export(const struct mms__blk *k, void *ctx)
{
	struct each_ctx *e = ctx;
	mms_block_t b;

	mms__state_blk_export(e->st, k, &b);
	/* At the end, what the runtimes keep as the leaks report counts it
	 * (a CPython interpreter's state at exit too). Before it, a block
	 * allocated before recording last stopped may have been freed while
	 * nothing was recorded, as at the end. */
	if (e->at_end)
		mms__blk_at_end(e->st, &e->rtmemo, k, &b);
	else if (mms__blk_before_gap(e->st, k))
		b.reach = MMS_REACH_UNRECORDED;
	return e->fn(&b, e->ctx);
}

MMS__EXPORT int mms_replay_blocks(const mms_replay_t *r, int (*fn)(const mms_block_t *b, void *ctx), void *ctx)
{
	struct each_ctx e = { .st = r ? &r->st : NULL, .fn = fn, .ctx = ctx };
	int rc;

	if (!r || !fn)
		return MMS_EUSAGE;
	e.at_end = r->st.pos >= r->log->events;
	rc = mms__state_each(&r->st, each_export, &e);
	mms__rtmemo_free(&e.rtmemo);
	return rc;
}

/* Replays [from checkpoint k, to) in a scratch replay and keeps the last
 * freed block that contained addr. Returns 1, 0 or a negative code. */
static int freed_in(mms_replay_t *r, ptrdiff_t k, uint64_t to, uint64_t addr, mms_block_t *b)
{
	mms_replay_t s = { .log = r->log, .ix = r->ix, .ow = r->ow };
	const struct mms__blk *k2;
	int rc, found = 0;

	s.last = &s.last_buf;
	mms__state_init(&s.st, r->log);
	rc = load_ckpt(&s, k);
	/* Number the steps as the replay asking does: a forward-only one
	 * may already know the log's kind of step marks. */
	if (!rc && !s.st.step_kind_hint)
		s.st.step_kind_hint = r->st.step_kind_hint ? r->st.step_kind_hint : r->st.step_kind;
	while (!rc && s.st.pos < to) {
		rc = mms_replay_next(&s, NULL);
		if (rc <= 0) {
			rc = rc ? rc : MMS_ECORRUPT;
			break;
		}
		rc = 0;
		if (s.last->kind != MMS_EV_FREE || !s.st.last_blk_valid)
			continue;
		k2 = s.st.last_blk;
		if (addr < k2->addr || addr - k2->addr >= k2->size)
			continue;
		mms__state_blk_export(&s.st, k2, b);
		b->free_event = s.last->id;
		b->free_thread = s.last->thread;
		b->free_stack = s.last->stack;
		found = 1;
	}
	mms_iter_close(s.it);
	mms__state_free(&s.st);
	return rc ? rc : found;
}

MMS__EXPORT int mms_replay_freed_block_at(mms_replay_t *r, uint64_t addr, mms_block_t *b)
{
	uint64_t to;
	ptrdiff_t k;
	int rc;

	if (!r || !b)
		return MMS_EUSAGE;
	/* Newest first: one checkpoint interval at a time, backwards. */
	to = r->st.pos;
	k = ckpt_before(&r->ix, to ? to - 1 : 0);
	for (;;) {
		rc = freed_in(r, k, to, addr, b);
		if (rc)
			return rc;
		if (k < 0)
			return 0;
		to = r->ix.ckpts[k].pos;
		k--;
	}
}
