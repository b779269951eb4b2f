/* SPDX-License-Identifier: MIT */
/* pass.c: the pass driver: one read of a log through the heap state that
 * feeds every event to the subscribers added to it (analyses, reports,
 * exports, the index builder), so any set of them costs one read. It owns
 * the iterator, the state, the launches and steps followed, the damage
 * rule and the summary's figures; a subscriber that needs a second look
 * (the state at a position it learnt on the way) asks for a later read. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "msmemscope/summary.h"
#include "base-int.h"
#include "index-int.h"
#include "iter-int.h"
#include "map-int.h"
#include "pass-int.h"
#include "state-int.h"
#include "track-int.h"

/* Events between two calls of the progress callback. */
#define PASS_PROGRESS_EVERY ((uint64_t)1 << 16)

/* --- shared owner strings ------------------------------------------------------ */

struct mms__strs *mms__strs_ref(struct mms__strs *s)
{
	if (s)
		s->refs++;
	return s;
}

void mms__strs_unref(struct mms__strs *s)
{
	if (!s || --s->refs)
		return;
	mms__owners_free(&s->ow);
	free(s);
}

/* The subscribers of this read, by the event kinds they are fed. */
struct dispatch {
	struct mms__sub **ev[MMS_EV_KIND_COUNT], **before[MMS_EV_KIND_COUNT];
	size_t nev[MMS_EV_KIND_COUNT], nbefore[MMS_EV_KIND_COUNT];
	uint64_t next_until;         /* the nearest position a subscriber ends at */
};

/* --- data per live block ------------------------------------------------------- */

size_t mms__pass_attach(struct mms_pass *p, size_t bytes)
{
	size_t off = p->attach;

	p->attach += (bytes + 7) & ~(size_t)7;
	return off;
}

void *mms__pass_data_of(struct mms_pass *p, const struct mms__blk *b, size_t off)
{
	const struct mms__state *st = p->cur->st;
	int64_t slot;

	if (!st->ext_size || (slot = mms__state_slot_of(st, b)) < 0)
		return NULL;
	return st->ext + (size_t)slot * st->ext_size + off;
}

/* --- reads -------------------------------------------------------------------- */

/* Starts a read of the log from position 0 with a state of its own whose
 * owner strings are the pass's. */
static int read_start(struct mms_pass *p, struct mms__read *rd, unsigned track)
{
	int rc;

	memset(rd, 0, sizeof(*rd));
	rc = mms_iter_open(p->log, &rd->it);
	if (rc)
		return rc;
	mms__state_init(&rd->own, p->log);
	rd->own.ow = &p->strs->ow;
	/* The subscribers' data per live block sits beside the state's
	 * slots: no lookup of its own. */
	rd->own.ext_size = p->attach;
	rc = mms__state_seed(&rd->own);
	if (rc) {
		mms_iter_close(rd->it);
		rd->it = NULL;
		return rc;
	}
	rd->own_used = 1;
	rd->st = &rd->own;
	mms__iter_prefetch_for(rd->it, rd->st);
	rd->track = track;
	mms__track_init(&rd->tr, track);
	rd->tr.no_marks = !p->log->step_marks;
	/* A fork child's read starts with its inherited heap. */
	mms__track_start(&rd->tr, rd->st);
	return 0;
}

static void read_free(struct mms__read *rd)
{
	mms_iter_close(rd->it);
	if (rd->own_used)
		mms__state_free(&rd->own);
	mms__track_free(&rd->tr);
	memset(rd, 0, sizeof(*rd));
}

static void sub_fail(struct mms__sub *s, int rc)
{
	s->failed = 1;
	if (s->status && !*s->status)
		*s->status = rc;
}

/* The next event of the read, applied to its state. Returns 1, 0 at the
 * end, or a negative code: damage (MMS_ECORRUPT, MMS_EORDER), or what the
 * state could not do. */
static int read_next(struct mms_pass *p, struct mms__read *rd, mms_event_t *ev)
{
	size_t i;
	int rc;

	if (rd->replay) {
		/* A report's replay applies the event itself. */
		if (rd->st->pos >= p->to)
			return 0;
		rc = mms_replay_next(rd->replay, ev);
		return rc ? rc : MMS_ECORRUPT; /* the step ends before the log does */
	}
	rc = mms_iter_next(rd->it, ev);
	if (rc <= 0)
		return rc;
	for (i = 0; ev->kind < MMS_EV_KIND_COUNT && i < p->dispatch->nbefore[ev->kind]; i++) {
		struct mms__sub *s = p->dispatch->before[ev->kind][i];

		if (s->done || s->failed)
			continue;
		rc = s->before(s, p, ev);
		if (rc)
			sub_fail(s, rc);
	}
	rc = mms__state_apply(&rd->own, ev);
	if (rc)
		return rc;
	/* An operator's end record has no name: the state knows it. */
	if (ev->kind == MMS_EV_OP_LAUNCH && ev->sub == 1)
		ev->name = rd->own.ended_op;
	return 1;
}

/* --- subscribers --------------------------------------------------------------- */

int mms__pass_add(struct mms_pass *p, struct mms__sub *s)
{
	if (!p || !s)
		goto fail;
	if (p->ran || mms__grow(&p->subs, &p->subs_cap, p->nsubs, sizeof(*p->subs)))
		goto fail;
	if (!s->until)
		s->until = UINT64_MAX;
	p->subs[p->nsubs++] = s;
	return 0;
fail:
	if (s && s->drop)
		s->drop(s);
	return p && !p->ran ? -ENOMEM : MMS_EUSAGE;
}

void mms__pass_again(struct mms_pass *p, struct mms__sub *s, uint64_t until, unsigned kinds)
{
	s->round = p->round + 1;
	s->until = until;
	s->kinds = kinds;
	s->done = 0;
}

/* Calls the end of every subscriber of this read that has not ended and
 * whose position is pos (or any, at the end of the log). */
static void subs_end(struct mms_pass *p, uint64_t pos, int at_end)
{
	size_t i;
	int rc;

	for (i = 0; i < p->nsubs; i++) {
		struct mms__sub *s = p->subs[i];

		if (s->round != p->round || s->done || (!at_end && s->until != pos))
			continue;
		s->done = 1;
		if (s->failed || !s->end)
			continue;
		rc = s->end(s, p);
		if (rc)
			sub_fail(s, rc);
	}
}

/* Whether a subscriber of this read still waits for events. */
static int subs_waiting(const struct mms_pass *p)
{
	size_t i;

	for (i = 0; i < p->nsubs; i++)
		if (p->subs[i]->round == p->round && !p->subs[i]->done)
			return 1;
	return 0;
}

static int progress(struct mms_pass *p, int force)
{
	if (!p->progress || (!force && p->done < p->progress_next))
		return 0;
	p->progress_next = p->done + PASS_PROGRESS_EVERY;
	return p->progress(p->progress_ctx, p->done, p->total > p->done ? p->total : p->done) ? -ECANCELED : 0;
}

static void dispatch_free(struct dispatch *d)
{
	for (int k = 0; k < MMS_EV_KIND_COUNT; k++) {
		free(d->ev[k]);
		free(d->before[k]);
	}
}

static int dispatch_build(struct mms_pass *p, struct dispatch *d)
{
	size_t i;
	int k;

	memset(d, 0, sizeof(*d));
	for (k = 0; k < MMS_EV_KIND_COUNT; k++) {
		d->ev[k] = calloc(p->nsubs + 1, sizeof(*d->ev[k]));
		d->before[k] = calloc(p->nsubs + 1, sizeof(*d->before[k]));
		if (!d->ev[k] || !d->before[k]) {
			dispatch_free(d);
			return -ENOMEM;
		}
		for (i = 0; i < p->nsubs; i++) {
			struct mms__sub *s = p->subs[i];

			if (s->round != p->round)
				continue;
			if (s->event && s->kinds & 1u << k)
				d->ev[k][d->nev[k]++] = s;
			if (s->before && s->before_kinds & 1u << k)
				d->before[k][d->nbefore[k]++] = s;
		}
	}
	return 0;
}

/* The nearest position where a subscriber of this read that has not
 * ended ends. */
static uint64_t next_until(const struct mms_pass *p)
{
	uint64_t u = UINT64_MAX;
	size_t i;

	for (i = 0; i < p->nsubs; i++)
		if (p->subs[i]->round == p->round && !p->subs[i]->done && p->subs[i]->until < u)
			u = p->subs[i]->until;
	return u;
}

/* Reads the log (or the replay's range) once, feeding this round's
 * subscribers. Returns 0 (damage included: the read then ends early, with
 * p->stop_rc set in the first read) or the driver's own error. */
static int read_all(struct mms_pass *p, struct mms__read *rd)
{
	const struct mms__track *t = &rd->tr;
	struct dispatch d;
	mms_event_t ev;
	size_t i;
	int rc;

	p->cur = rd;
	p->reads++;
	rc = dispatch_build(p, &d);
	if (rc)
		return rc;
	p->dispatch = &d;
	for (i = 0; i < p->nsubs; i++) {
		struct mms__sub *s = p->subs[i];

		s->done = 0;
		if (s->round != p->round || s->begun || s->failed)
			continue;
		s->begun = 1;
		rc = s->begin ? s->begin(s, p) : 0;
		if (rc)
			sub_fail(s, rc);
	}
	d.next_until = next_until(p);
	for (;;) {
		if (rd->st->pos == d.next_until) {
			subs_end(p, rd->st->pos, 0);
			d.next_until = next_until(p);
			/* The first read goes to the end for the summary; a
			 * later one to the last position asked for. */
			if (p->round && !subs_waiting(p)) {
				rc = 0;
				goto out;
			}
		}
		if (p->progress && p->done >= p->progress_next && (rc = progress(p, 0)))
			goto out;
		rc = read_next(p, rd, &ev);
		if (rc == 0)
			break;
		/* The damage rule: what came before stands, and every
		 * subscriber ends there. */
		if (rc == MMS_ECORRUPT || rc == MMS_EORDER) {
			if (!p->round && !rd->replay)
				p->stop_rc = rc;
			break;
		}
		if (rc < 0)
			goto out;
		p->done++;
		if (rd->track) {
			rc = mms__track_event(&rd->tr, rd->st, &ev);
			if (rc)
				goto out;
		}
		/* The summary's bad frees. */
		if (!p->round && !rd->replay)
			mms__state_bad_free(rd->st, &ev, p->bad, &p->nbad, MMS_BAD_FREES_KEPT);
		for (i = 0; ev.kind < MMS_EV_KIND_COUNT && i < d.nev[ev.kind]; i++) {
			struct mms__sub *s = d.ev[ev.kind][i];

			if (s->done || s->failed)
				continue;
			rc = s->event(s, p, &ev);
			if (rc)
				sub_fail(s, rc);
		}
	}
	/* The last call at the end of the read: a cancel there still comes
	 * before any subscriber ended (an export left no file). */
	rc = progress(p, 1);
	if (rc)
		goto out;
	/* At the end the step running closes as the index closes it; the
	 * steps a mark ended are those before. */
	if (rd->track) {
		size_t n = t->nsteps;

		while (n && t->steps[n - 1].end == UINT64_MAX)
			n--;
		rd->steps_marked = n;
		mms__track_finish(&rd->tr, rd->st);
	}
	subs_end(p, rd->st->pos, 1);
	rc = 0;
out:
	p->dispatch = NULL;
	dispatch_free(&d);
	return rc;
}

/* --- the pass ------------------------------------------------------------------ */

static struct mms_pass *pass_new(mms_log_t *log)
{
	struct mms_pass *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->strs = calloc(1, sizeof(*p->strs));
	if (!p->strs) {
		free(p);
		return NULL;
	}
	mms__map_init(&p->strs->ow.ix);
	p->strs->refs = 1;
	p->log = log;
	mms_log_get_info(log, &p->info);
	p->cur = &p->first;
	return p;
}

MMS__EXPORT int mms_pass_open(mms_log_t *log, const mms_pass_options_t *opt, mms_pass_t **out)
{
	struct mms_pass *p;

	if (!out)
		return MMS_EUSAGE;
	*out = NULL;
	if (!log)
		return MMS_EUSAGE;
	p = pass_new(log);
	if (!p)
		return -ENOMEM;
	if (opt) {
		p->progress = opt->progress;
		p->progress_ctx = opt->progress_ctx;
	}
	*out = p;
	return 0;
}

int mms__pass_open_replay(mms_replay_t *r, uint64_t to, struct mms_pass **out)
{
	struct mms_pass *p = pass_new(mms_replay_log(r));

	*out = p;
	if (!p)
		return -ENOMEM;
	p->first.replay = r;
	p->first.st = mms__replay_state(r);
	mms__replay_progress(r, p);
	p->to = to;
	return 0;
}

MMS__EXPORT int mms_pass_run(mms_pass_t *p)
{
	struct mms__read later;
	unsigned track = 0;
	size_t i;
	int rc;

	if (!p || p->ran)
		return MMS_EUSAGE;
	p->ran = 1;
	for (i = 0; i < p->nsubs; i++)
		if (!p->subs[i]->round)
			track |= p->subs[i]->track;
	p->total = p->first.replay ? p->to - p->first.st->pos : p->log->events;
	rc = progress(p, 1);
	if (rc)
		return rc;
	if (p->first.replay) {
		p->first.track = track;
		mms__track_init(&p->first.tr, track);
		mms__track_start(&p->first.tr, p->first.st);
	} else {
		rc = read_start(p, &p->first, track);
		if (rc)
			return rc;
	}
	rc = read_all(p, &p->first);
	p->events = p->first.st->pos;
	/* Later reads, for the subscribers that asked for a second look. */
	while (!rc && !p->first.replay) {
		uint64_t until = 0;
		int any = 0;

		p->round++;
		track = 0;
		for (i = 0; i < p->nsubs; i++) {
			if (p->subs[i]->round != p->round || p->subs[i]->failed)
				continue;
			any = 1;
			track |= p->subs[i]->track;
			if (p->subs[i]->until > until)
				until = p->subs[i]->until;
		}
		if (!any)
			break;
		p->total += until < p->events ? until : p->events;
		rc = read_start(p, &later, track);
		if (rc)
			break;
		rc = read_all(p, &later);
		read_free(&later);
	}
	p->cur = &p->first;
	return rc;
}

MMS__EXPORT void mms_pass_close(mms_pass_t *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nsubs; i++)
		if (p->subs[i]->drop)
			p->subs[i]->drop(p->subs[i]);
	free(p->subs);
	read_free(&p->first);
	mms__strs_unref(p->strs);
	free(p);
}

MMS__EXPORT void mms_pass_get_info(const mms_pass_t *p, mms_pass_info_t *info)
{
	if (!info)
		return;
	memset(info, 0, sizeof(*info));
	if (!p)
		return;
	info->events = p->events;
	info->reads = p->reads;
	info->stop_rc = p->stop_rc;
	info->stopped = mms__pass_stopped(p);
}

/* --- the block of an event ------------------------------------------------------- */

int mms__state_event_block(const struct mms__state *st, const mms_event_t *ev, mms_block_t *b)
{
	if (!st->last_blk_valid)
		return 0;
	mms__state_blk_export(st, st->last_blk, b);
	if (st->last_free_event != UINT64_MAX) {
		b->free_event = st->last_free_event;
		b->free_thread = ev->thread;
		b->free_stack = ev->stack;
	}
	return 1;
}
