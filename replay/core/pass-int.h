/* SPDX-License-Identifier: MIT */
/* pass-int.h: the pass driver (pass.c) as the library's analyses, reports,
 * exports and the index builder see it: one read of the log that owns the
 * iterator, the heap state, the launches and steps followed, and the damage
 * rule, and feeds every event to a list of subscribers. */
#ifndef MMS_PASS_INT_H
#define MMS_PASS_INT_H

#include "msmemscope/analysis.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "msmemscope/summary.h"
#include "base-int.h"
#include "iter-int.h"
#include "map-int.h"
#include "state-int.h"
#include "track-int.h"

struct mms__sub;

/* Owner strings (tags joined by '@') interned by a pass's heap state,
 * shared with the results that name them: each result that keeps a
 * block's owner holds a reference, so the strings outlive the pass. */
struct mms__strs {
	struct mms__owners ow;
	unsigned refs;
};

/* Takes a reference (s may be NULL); returns s. */
struct mms__strs *mms__strs_ref(struct mms__strs *s);
/* Drops one; the last frees the strings. */
void mms__strs_unref(struct mms__strs *s);

/* One read of the log, from its start or, for a report over a replay,
 * from where the replay stands. */
struct mms__read {
	const struct mms__state *st; /* the state subscribers see: &own, or the replay's */
	struct mms__state own;
	int own_used;
	mms_iter_t *it;        /* NULL over a replay */
	struct mms__span span; /* the iterator's last run of events */
	mms_replay_t *replay;  /* a report's replay, or NULL */
	struct mms__track tr;  /* launches and steps, as the subscribers asked */
	unsigned track;        /* MMS__TRACK_* followed in this read */
	int ended;             /* at its end: the state takes no more events */
	uint64_t steps_marked; /* steps of tr that a mark ended (before the end of the log) */
};

struct mms_pass {
	mms_log_t *log;
	mms_log_info_t info;
	int (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
	struct mms__strs *strs;
	struct mms__read first; /* round 0: kept, its state is the log's end */
	struct mms__read *cur;  /* the read under way */
	uint64_t to;            /* over a replay: the position to stop at */
	struct mms__sub **subs;
	size_t nsubs, subs_cap;
	struct dispatch *dispatch;   /* the read's subscribers by event kind */
	/* Fed while the log grows (mms_pass_feed()): the first read is
	 * under way, its iterator closed between two looks at the log. */
	int feeding;
	struct mms__follow_pos *fpos; /* each thread's position then */
	size_t nfpos;
	uint64_t fed_id;             /* the next event's id */
	uint64_t fed_stamp;          /* the last event fed: nothing may come before it */
	uint32_t fed_thread;
	size_t attach;               /* bytes per live block the subscribers attached */
	unsigned round; /* the read under way, from 0 */
	unsigned reads; /* reads of the log so far */
	int ran;
	int stop_rc;          /* the damage that ended the first read early, or 0 */
	uint64_t events;      /* events the first read applied */
	uint64_t done, total; /* events read by all rounds, and to read (progress) */
	uint64_t progress_next;
	/* The summary's: bad frees, the first in log order. */
	mms_bad_free_t bad[MMS_BAD_FREES_KEPT];
	size_t nbad;
};

/* A subscriber: what one analysis, report, export or the index builder
 * does with each event of a pass. Callbacks return 0 or a negative code;
 * a subscriber whose callback fails is left out of the rest of the pass
 * with that code in status (the others go on). */
struct mms__sub {
	const char *name;
	/* Event kinds it is fed (bits 1u << enum mms_event_kind); 0: none. */
	unsigned kinds;
	/* Event kinds its before callback is called for, and of their
	 * events those of these memory kinds (bits 1u << enum mms_mem_kind;
	 * 0: every one). */
	unsigned before_kinds, before_mems;
	/* Memory kinds whose MALLOC and FREE events it is not fed for now
	 * (bits 1u << enum mms_mem_kind; 0: fed all): mms__pass_quiet(). */
	unsigned quiet;
	/* MMS__TRACK_LAUNCHES, MMS__TRACK_STEPS: what the driver follows for
	 * it in mms__pass_track(). */
	unsigned track;
	/* Before the first event of its first read. */
	int (*begin)(struct mms__sub *s, struct mms_pass *p);
	/* Before the heap state applies ev (optional). */
	int (*before)(struct mms__sub *s, struct mms_pass *p, const mms_event_t *ev);
	/* After the heap state applied ev (and the driver followed it). */
	int (*event)(struct mms__sub *s, struct mms_pass *p, const mms_event_t *ev);
	/* Optional: after the event callbacks of an event that raised the
	 * state's peak_total (the highest live bytes of the process's kinds,
	 * mms__state_live_total()): what a subscriber quiet for some memory
	 * kinds (mms__pass_quiet()) learns of the peak. Not called in a read
	 * that feeds it no event kind. */
	int (*peak)(struct mms__sub *s, struct mms_pass *p);
	/* At the end of the log, or where the pass stops (damage), or at the
	 * position `until` asked for: mms__pass_state() is the state there. */
	int (*end)(struct mms__sub *s, struct mms_pass *p);
	/* Frees the subscriber (not the result it filled); called once, at
	 * mms_pass_close(). */
	void (*drop)(struct mms__sub *s);
	int *status; /* where its error goes (its result's), or NULL */

	/* The driver's. */
	unsigned round; /* the read it takes part in: 0, or a later one
	                                (set before the pass runs, or by mms__pass_again()) */
	uint64_t until; /* the position of its end in that read; UINT64_MAX: the end */
	int begun; /* its begin was called */
	int done;       /* its end was called in this read */
	int failed;
};

/* Takes bytes of data per live block for a subscriber (before the pass
 * runs; the bytes of each block start zeroed, and stay until its slot is
 * taken again: through the event that frees it). Returns its offset for
 * mms__pass_data(). */
size_t mms__pass_attach(struct mms_pass *p, size_t bytes);
/* The data at offset off of the block the current event allocated, freed
 * or (ACCESS, WATCH) touched, or NULL (no such block, or a read over a
 * replay, which keeps none). Valid until the next event. */
static inline void *mms__pass_data(struct mms_pass *p, size_t off)
{
	return mms__state_last_data(p->cur->st, off);
}
/* The same for live block b of the pass's state (one of its slots or a
 * copy of one), or NULL when b is not live there. */
void *mms__pass_data_of(struct mms_pass *p, const struct mms__blk *b, size_t off);

/* Keeps the slot of the block the current event freed, with its fields
 * and data, out of reuse until mms__pass_unhold() (by the end of the
 * read): a subscriber that lists such blocks later reads them where they
 * are instead of copying them. Returns the slot, or -1 (none freed, or
 * a read over a replay, whose state is not the pass's to keep). */
static inline struct mms__state *mms__pass_own_state(struct mms_pass *p);
static inline int64_t mms__pass_hold(struct mms_pass *p)
{
	struct mms__state *st = mms__pass_own_state(p);

	return st ? mms__state_hold_last(st) : -1;
}
/* The read's state where it is the pass's own (not a replay's): the one
 * mms__pass_hold() holds slots of, for a subscriber that holds them
 * without asking the pass each time; NULL over a replay. */
static inline struct mms__state *mms__pass_own_state(struct mms_pass *p)
{
	struct mms__read *rd = p->cur;

	return rd->own_used && rd->st == &rd->own ? &rd->own : NULL;
}
/* Gives the n held slots at slots back to the read's state for reuse;
 * at the end of the read, where nothing would reuse them, leaves them
 * out (perl's log: 2 M slots, 8 MB of the state's free-slot stack not
 * touched before, 16-24 ms). */
void mms__pass_unhold(struct mms_pass *p, const uint32_t *slots, size_t n);
/* Opens a pass over a replay from where it stands up to position `to`
 * (report.c): subscribers see the replay's state. Returns 0 or -ENOMEM. */
int mms__pass_open_replay(mms_replay_t *r, uint64_t to, struct mms_pass **out);
/* Gives p the progress callback r was opened with (seek.c). */
void mms__replay_progress(const mms_replay_t *r, struct mms_pass *p);
/* Adds s to the pass (before it runs); the pass owns s from here on, also
 * on failure. Returns 0 or a negative code (MMS_EUSAGE after the run). */
int mms__pass_add(struct mms_pass *p, struct mms__sub *s);
/* From s's end: feeds s again in a later read of the log, from its start
 * to position until, with the event kinds `kinds`; its end is then called
 * with the state at until. */
void mms__pass_again(struct mms_pass *p, struct mms__sub *s, uint64_t until, unsigned kinds);
/* From s's callbacks (begin, event): from the next event on, s is not fed
 * the MALLOC and FREE events of the memory kinds in mems (bits 1u <<
 * enum mms_mem_kind), and is fed again those of the kinds left out of
 * mems: for a subscriber that has nothing to do with them for a while
 * (what it would have counted, it reads from the state when fed again).
 * A later read feeds it every kind it asked for. */
void mms__pass_quiet(struct mms_pass *p, struct mms__sub *s, unsigned mems);

/* What the subscribers read. */
static inline const struct mms__state *mms__pass_state(const struct mms_pass *p)
{
	return p->cur->st;
}

static inline const struct mms__track *mms__pass_track(const struct mms_pass *p)
{
	return &p->cur->tr;
}

/* The read's iterator (the index builder saves its position); NULL over
 * a replay. */
static inline const mms_iter_t *mms__pass_iter(const struct mms_pass *p)
{
	return p->cur->it;
}

/* The damage rule, one for all: the pass stops before the process's last
 * records when the log does (a cut, or damage that may have lost records
 * of some thread: mms_log_info_t.stopped) or when the iterator met damage
 * on the way (stop_rc). Then the step running at the end did not end. */
static inline int mms__pass_stopped(const struct mms_pass *p)
{
	return p->info.stopped || p->stop_rc;
}

/* Steps of the track that a mark ended before the end of the read: at
 * the end, the track closes the step running (mms__track_finish()),
 * which a stopped pass did not end. */
static inline uint64_t mms__pass_steps_marked(const struct mms_pass *p)
{
	return p->cur->steps_marked;
}

/* Defines mms_<name>_run(log, opt, &res): a pass of its own over log with
 * the one analysis mms_<name>_add() adds; its result, or NULL and the
 * error (the pass's, or the analysis's status). */
#define MMS__RUN_ONE(name, opt_t, res_t)                                                \
	MMS__EXPORT int mms_##name##_run(mms_log_t *log, const opt_t *opt, res_t **out) \
	{                                                                               \
		mms_pass_t *p;                                                          \
		int rc;                                                                 \
                                                                                        \
		if (!out)                                                               \
			return MMS_EUSAGE;                                              \
		*out = NULL;                                                            \
		rc = mms_pass_open(log, NULL, &p);                                      \
		if (rc)                                                                 \
			return rc;                                                      \
		rc = mms_##name##_add(p, opt, out);                                     \
		if (!rc)                                                                \
			rc = mms_pass_run(p);                                           \
		if (!rc)                                                                \
			rc = (*out)->status;                                            \
		mms_pass_close(p);                                                      \
		if (rc) {                                                               \
			mms_##name##_free(*out);                                        \
			*out = NULL;                                                    \
		}                                                                       \
		return rc;                                                              \
	}

/* The pass that fills an inefficient result, until its analysis ended
 * (inefficient.c); NULL for a finished one. */
const struct mms_pass *mms__inefficient_filling(const mms_inefficient_t *res);

/* The block the event just applied allocated or freed (free_event set),
 * or for ACCESS and WATCH the live block holding its address: returns 1
 * and fills *b, or 0. */
int mms__state_event_block(const struct mms__state *st, const mms_event_t *ev, mms_block_t *b);

#endif /* MMS_PASS_INT_H */
