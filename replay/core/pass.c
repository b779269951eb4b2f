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
#include "log-int.h"
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

_Static_assert((MMS_MEM_KIND_COUNT & (MMS_MEM_KIND_COUNT - 1)) == 0, "read_events() masks a memory kind");

/* The subscribers of this read, by the event kinds they are fed. */
struct dispatch {
	/* Only subscribers still fed: one that ends or fails leaves (stale
	 * set, the lists pruned before the next call), so that an event
	 * costs a call per subscriber it is for and nothing more. Both
	 * lists by event kind and memory kind: a subscriber quiet for a
	 * memory kind (mms__pass_quiet()) is in no list of its MALLOC and
	 * FREE events. */
	struct dlist {
		struct mms__sub **v;
		size_t n;
	} ev[MMS_EV_KIND_COUNT][MMS_MEM_KIND_COUNT], before[MMS_EV_KIND_COUNT][MMS_MEM_KIND_COUNT];
	/* The peak callbacks, and the state's peak_total they last saw. */
	struct dlist peak;
	uint64_t peak_seen;
	int stale;
	unsigned before_mems[MMS_EV_KIND_COUNT]; /* by event kind: bit 1 << memory kind where
						    that before list is not empty */
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

void mms__pass_unhold(struct mms_pass *p, const uint32_t *slots, size_t n)
{
	if (!p->cur->ended)
		mms__state_unhold(&p->cur->own, slots, n);
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
	mms__state_expect_whole(&rd->own);
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
	rd->tr.no_marks = !mms__log_has_steps(p->log);
	/* A fork child's read starts with its inherited heap, and steps. */
	rc = mms__track_start(&rd->tr, rd->st);
	if (rc) {
		mms__track_free(&rd->tr);
		mms__state_free(&rd->own);
		mms_iter_close(rd->it);
		memset(rd, 0, sizeof(*rd));
	}
	return rc;
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

static void dispatch_fill(struct mms_pass *p, struct dispatch *d);

/* The next event of the read, applied to its state, into *evp: the
 * iterator's own (no copy; it stays until the next call), or buf over a
 * replay. Returns 1, 0 at the end, or a negative code: damage
 * (MMS_ECORRUPT, MMS_EORDER), or what the state could not do. */
static int read_next(struct mms_pass *p, struct mms__read *rd, mms_event_t *buf, mms_event_t **evp)
{
	mms_event_t *ev;
	size_t i;
	int rc;

	if (rd->replay) {
		/* A report's replay applies the event itself. */
		if (rd->st->pos >= p->to)
			return 0;
		rc = mms_replay_next(rd->replay, buf);
		*evp = buf;
		return rc ? rc : MMS_ECORRUPT; /* the step ends before the log does */
	}
	/* At the end *evp stays the last event (read_events()). */
	rc = mms__span_next(&rd->span, rd->it, MMS__SPAN_MAX, evp);
	if (rc <= 0)
		return rc;
	ev = *evp;
	/* One test for most events: a subscriber's before is for a few kinds. */
	if (ev->kind < MMS_EV_KIND_COUNT && ev->mem < MMS_MEM_KIND_COUNT &&
	    p->dispatch->before_mems[ev->kind] >> ev->mem & 1u) {
		struct dispatch *d = p->dispatch;
		struct mms__sub *const *v = d->before[ev->kind][ev->mem].v;
		size_t n = d->before[ev->kind][ev->mem].n;

		for (i = 0; i < n; i++) {
			rc = v[i]->before(v[i], p, ev);
			if (rc) {
				sub_fail(v[i], rc);
				d->stale = 1;
			}
		}
		if (d->stale) /* one failed: not fed the event */
			dispatch_fill(p, d);
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
	s->quiet = 0;
	s->done = 0;
}

void mms__pass_quiet(struct mms_pass *p, struct mms__sub *s, unsigned mems)
{
	if (s->quiet == mems)
		return;
	s->quiet = mems;
	/* The lists are made again after the event under way (a list is
	 * not changed while it is walked). */
	if (p->dispatch)
		p->dispatch->stale = 1;
}

/* Calls the end of every subscriber of this read that has not ended and
 * whose position is pos (or any, at the end of the log). */
static void subs_end(struct mms_pass *p, uint64_t pos, int at_end)
{
	/* The state, frozen while the ends walk it (the index the freeze
	 * makes is the driver's: nothing else of it changes). */
	struct mms__state *st = (struct mms__state *)p->cur->st;
	size_t i, n = 0;
	int rc;

	for (i = 0; i < p->nsubs; i++) {
		struct mms__sub *s = p->subs[i];

		if (s->round != p->round || s->done || (!at_end && s->until != pos))
			continue;
		s->done = 1;
		if (s->failed || !s->end)
			continue;
		if (!n++)
			mms__state_freeze(st);
		rc = s->end(s, p);
		if (rc)
			sub_fail(s, rc);
	}
	/* The first read's own state at the end of the log stays as it is
	 * until the pass closes (the summary walks it too); any other
	 * goes on changing. */
	if (!(at_end && p->cur == &p->first && st == &p->first.own))
		mms__state_thaw(st);
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
	for (int k = 0; k < MMS_EV_KIND_COUNT; k++)
		for (int m = 0; m < MMS_MEM_KIND_COUNT; m++) {
			free(d->ev[k][m].v);
			free(d->before[k][m].v);
		}
	free(d->peak.v);
}

/* Whether s is still fed in this read. */
static int sub_fed(const struct mms_pass *p, const struct mms__sub *s)
{
	return s->round == p->round && !s->done && !s->failed;
}

/* Fills d's lists with the subscribers still fed (the lists have room
 * for all). */
static void dispatch_fill(struct mms_pass *p, struct dispatch *d)
{
	size_t i;
	int k, m;

	d->peak.n = 0;
	for (i = 0; i < p->nsubs; i++)
		if (p->subs[i]->peak && p->subs[i]->kinds && sub_fed(p, p->subs[i]))
			d->peak.v[d->peak.n++] = p->subs[i];
	for (k = 0; k < MMS_EV_KIND_COUNT; k++) {
		int memory = k == MMS_EV_MALLOC || k == MMS_EV_FREE;

		for (m = 0; m < MMS_MEM_KIND_COUNT; m++)
			d->ev[k][m].n = d->before[k][m].n = 0;
		d->before_mems[k] = 0;
		for (i = 0; i < p->nsubs; i++) {
			struct mms__sub *s = p->subs[i];

			if (!sub_fed(p, s))
				continue;
			for (m = 0; m < MMS_MEM_KIND_COUNT; m++)
				if (s->event && s->kinds & 1u << k && !(memory && s->quiet & 1u << m))
					d->ev[k][m].v[d->ev[k][m].n++] = s;
			for (m = 0; m < MMS_MEM_KIND_COUNT; m++)
				if (s->before && s->before_kinds & 1u << k &&
				    (!s->before_mems || s->before_mems & 1u << m)) {
					d->before[k][m].v[d->before[k][m].n++] = s;
					d->before_mems[k] |= 1u << m;
				}
		}
	}
	d->stale = 0;
}

static int dispatch_build(struct mms_pass *p, struct dispatch *d)
{
	int k, m;

	memset(d, 0, sizeof(*d));
	for (k = 0; k < MMS_EV_KIND_COUNT; k++)
		for (m = 0; m < MMS_MEM_KIND_COUNT; m++)
			if (!(d->ev[k][m].v = calloc(p->nsubs + 1, sizeof(*d->ev[k][m].v))) ||
			    !(d->before[k][m].v = calloc(p->nsubs + 1, sizeof(*d->before[k][m].v))))
				goto fail;
	if (!(d->peak.v = calloc(p->nsubs + 1, sizeof(*d->peak.v))))
		goto fail;
	d->peak_seen = p->cur->st->peak_total;
	return 0;
fail:
	dispatch_free(d);
	return -ENOMEM;
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

/* The start of a read: its subscribers by event kind, and the begin of
 * those that take part. Returns 0 or -ENOMEM. */
static int read_begin(struct mms_pass *p, struct mms__read *rd, struct dispatch *d)
{
	size_t i;
	int rc;

	p->cur = rd;
	p->reads++;
	rc = dispatch_build(p, d);
	if (rc)
		return rc;
	p->dispatch = d;
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
	dispatch_fill(p, d);
	d->next_until = next_until(p);
	return 0;
}

/* Feeds the read's events until the iterator has none (its end, or the
 * limit of a log followed). Returns 0, 1 when a later read has every
 * subscriber it was for ended, or the driver's own error. */
static int read_events(struct mms_pass *p, struct mms__read *rd, struct dispatch *d)
{
	const uint64_t done = p->done;
	mms_event_t buf, *ev = &buf;
	size_t i;
	int rc;

	for (;;) {
		if (rd->st->pos == d->next_until) {
			subs_end(p, rd->st->pos, 0);
			dispatch_fill(p, d);
			d->next_until = next_until(p);
			/* The first read goes to the end for the summary; a
			 * later one to the last position asked for. */
			if (p->round && !subs_waiting(p))
				return 1;
		}
		if (p->progress && p->done >= p->progress_next && (rc = progress(p, 0)))
			return rc;
		rc = read_next(p, rd, &buf, &ev);
		if (rc == 0) {
			/* Where a feed stops: nothing may come before it (ev
			 * is still the last event: an iterator at its end or
			 * its limit leaves it be). */
			if (p->done > done) {
				p->fed_stamp = ev->stamp;
				p->fed_thread = ev->thread;
			}
			return 0;
		}
		/* The damage rule: what came before stands, and every
		 * subscriber ends there. */
		if (rc == MMS_ECORRUPT || rc == MMS_EORDER) {
			if (!p->round && !rd->replay)
				p->stop_rc = rc;
			return 0;
		}
		if (rc < 0)
			return rc;
		p->done++;
		if (rd->track) {
			rc = mms__track_event(&rd->tr, rd->st, ev);
			if (rc)
				return rc;
		}
		/* The summary's bad frees (the test first: a call per
		 * event was 1% of a summary's instructions). */
		if (rd->st->last_bad_free && !p->round && !rd->replay)
			mms__state_bad_free(rd->st, ev, p->bad, &p->nbad, MMS_BAD_FREES_KEPT);
		if (ev->kind < MMS_EV_KIND_COUNT) {
			/* Every event the iterator gives has a memory kind
			 * (HOST where none applies): the mask only keeps the
			 * index in the table. */
			const struct dlist *l = &d->ev[ev->kind][ev->mem & (MMS_MEM_KIND_COUNT - 1)];
			struct mms__sub *const *v = l->v;
			size_t n = l->n;

			for (i = 0; i < n; i++) {
				rc = v[i]->event(v[i], p, ev);
				if (rc) {
					sub_fail(v[i], rc);
					d->stale = 1;
				}
			}
		}
		if (d->peak.n && rd->st->peak_total != d->peak_seen) {
			d->peak_seen = rd->st->peak_total;
			for (i = 0; i < d->peak.n; i++) {
				if (d->peak.v[i]->failed) /* in this event's callback */
					continue;
				rc = d->peak.v[i]->peak(d->peak.v[i], p);
				if (rc) {
					sub_fail(d->peak.v[i], rc);
					d->stale = 1;
				}
			}
		}
		if (d->stale)
			dispatch_fill(p, d);
	}
}

/* The end of a read: its last progress call, the step running closed,
 * every subscriber's end. Returns 0 or -ECANCELED. */
static int read_finish(struct mms_pass *p, struct mms__read *rd)
{
	const struct mms__track *t = &rd->tr;
	int rc;

	/* The last call at the end of the read: a cancel there still comes
	 * before any subscriber ended (an export left no file). */
	rc = progress(p, 1);
	if (rc)
		return rc;
	/* At the end the step running closes as the index closes it; the
	 * steps a mark ended are those before. */
	if (rd->track) {
		size_t n = t->nsteps;

		while (n && t->steps[n - 1].end == UINT64_MAX)
			n--;
		rd->steps_marked = n;
		mms__track_finish(&rd->tr, rd->st);
	}
	rd->ended = 1;
	subs_end(p, rd->st->pos, 1);
	return 0;
}

static void read_end(struct mms_pass *p)
{
	if (p->dispatch)
		dispatch_free(p->dispatch);
	free(p->dispatch);
	p->dispatch = NULL;
}

/* Reads the log (or the replay's range) once, feeding this round's
 * subscribers. Returns 0 (damage included: the read then ends early, with
 * p->stop_rc set in the first read) or the driver's own error. */
static int read_all(struct mms_pass *p, struct mms__read *rd)
{
	struct dispatch *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return -ENOMEM;
	rc = read_begin(p, rd, d);
	if (rc) {
		free(d);
		return rc;
	}
	rc = read_events(p, rd, d);
	if (!rc)
		rc = read_finish(p, rd);
	read_end(p);
	return rc < 0 ? rc : 0;
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

/* What the first read follows, for the subscribers of round 0. */
static unsigned first_track(const struct mms_pass *p)
{
	unsigned track = 0;
	size_t i;

	for (i = 0; i < p->nsubs; i++)
		if (!p->subs[i]->round)
			track |= p->subs[i]->track;
	return track;
}

/* The lowest of the threads' last stamps in a followed log: every event
 * up to it is in the log already (a thread writes its records in the
 * order of their stamps); one after it may still come from a thread that
 * has not written it yet. A thread the last look found outside its hooks
 * writes nothing stamped before its idle stamp (log.c, look_threads). */
static uint64_t follow_limit(const mms_log_t *log)
{
	const struct mms__segment *g;
	uint64_t limit = UINT64_MAX, t;
	size_t i;

	for (i = 0; i < log->nruns; i++) {
		g = &log->segs[log->runs[i + 1] - 1];
		t = g->last;
		if (g->thread < log->nthreads && log->threads[g->thread].idle_stamp > t)
			t = log->threads[g->thread].idle_stamp;
		if (t < limit)
			limit = t;
	}
	if (log->look_cap && log->look_cap < limit)
		limit = log->look_cap;
	if (log->gap_cap < limit)
		limit = log->gap_cap;
	/* Below it: a thread may write more records of its last stamp,
	 * which would come before another's of the same stamp. */
	return limit ? limit - 1 : 0;
}

/* Opens the first read's iterator again where the last feed left it, on
 * the log as it is now. */
static int feed_reopen(struct mms_pass *p)
{
	int rc;

	rc = mms__iter_open_follow(p->log, p->fed_id, p->fpos, p->nfpos, p->fed_stamp, p->fed_thread, &p->first.it);
	if (rc)
		return rc;
	mms__iter_prefetch_for(p->first.it, p->first.st);
	return 0;
}

/* Keeps where the first read's iterator stands and closes it: the next
 * look at the log rebuilds the segments it goes by. */
static int feed_save(struct mms_pass *p)
{
	size_t n = p->log->nthreads;

	if (n > p->nfpos) {
		struct mms__follow_pos *f = realloc(p->fpos, n * sizeof(*f));

		if (!f)
			return -ENOMEM;
		p->fpos = f;
	}
	p->nfpos = n;
	mms__iter_save_follow(p->first.it, &p->fed_id, p->fpos);
	mms_iter_close(p->first.it);
	p->first.it = NULL;
	mms__span_drop(&p->first.span);
	return 0;
}

MMS__EXPORT int mms_pass_feed(mms_pass_t *p)
{
	struct dispatch *d;
	int rc;

	if (!p || p->ran || p->first.replay || !p->log->follow)
		return MMS_EUSAGE;
	if (p->stop_rc)
		return p->stop_rc;
	if (!p->feeding) {
		d = calloc(1, sizeof(*d));
		if (!d)
			return -ENOMEM;
		rc = read_start(p, &p->first, first_track(p));
		if (rc) {
			free(d);
			return rc;
		}
		/* Step marks may come later in the log. */
		p->first.tr.no_marks = 0;
		rc = read_begin(p, &p->first, d);
		if (rc) {
			free(d);
			return rc;
		}
		p->feeding = 1;
	} else {
		rc = feed_reopen(p);
		if (rc)
			return p->stop_rc = rc;
	}
	/* While the program writes, up to what no record to come can
	 * precede; after the last look, to the end. */
	if (p->log->follow == MMS__FOLLOW_LIVE)
		mms__iter_limit(p->first.it, follow_limit(p->log));
	rc = read_events(p, &p->first, p->dispatch);
	if (!rc && p->stop_rc)
		rc = p->stop_rc;
	if (!rc)
		rc = feed_save(p);
	if (rc)
		p->stop_rc = rc < 0 ? rc : MMS_ECORRUPT;
	p->events = p->first.st->pos;
	return rc;
}

MMS__EXPORT int mms_pass_run(mms_pass_t *p)
{
	struct mms__read later;
	unsigned track;
	size_t i;
	int rc;

	if (!p || p->ran)
		return MMS_EUSAGE;
	p->ran = 1;
	track = first_track(p);
	p->total = p->first.replay ? p->to - p->first.st->pos : p->log->events;
	if (p->feeding) {
		/* Fed while the log grew: the rest of the first read. */
		/* A feed that failed left the read where it stopped: the
		 * caller reads the log again with a pass of its own. */
		if (p->stop_rc)
			return MMS_EUSAGE;
		mms_log_get_info(p->log, &p->info);
		rc = feed_reopen(p);
		if (!rc) {
			rc = read_events(p, &p->first, p->dispatch);
			if (!rc)
				rc = read_finish(p, &p->first);
		}
		read_end(p);
		rc = rc < 0 ? rc : 0;
		goto later_reads;
	}
	rc = progress(p, 1);
	if (rc)
		return rc;
	if (p->first.replay) {
		p->first.track = track;
		mms__track_init(&p->first.tr, track);
		rc = mms__track_start(&p->first.tr, p->first.st);
		if (rc)
			return rc;
	} else {
		rc = read_start(p, &p->first, track);
		if (rc)
			return rc;
	}
	rc = read_all(p, &p->first);
later_reads:
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
	read_end(p);
	free(p->fpos);
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
