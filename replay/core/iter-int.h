/* SPDX-License-Identifier: MIT */
/* iter-int.h: the iterator's saved positions (iter.c). */
#ifndef MMS_ITER_INT_H
#define MMS_ITER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope/log.h"
#include "state-int.h"

/* --- the next event, in place (iter.c) ------------------------------------ */
/* mms_iter_next() without the copy: *evp is set to the event, in the
 * iterator's memory, where it may be changed and stays until the next
 * call or mms_iter_close(). Returns as mms_iter_next() does (it must not be
 * NULL). */
int mms__iter_next_ref(mms_iter_t *it, mms_event_t **evp);
/* The next events, up to max, side by side in the iterator's memory:
 * *v set to the first of them, which stay until the next call: one
 * thread's, up to the next event of any other (outside a followed log's
 * limit; one at a time within it). Returns how many (>= 1), or as
 * mms__iter_next_ref() does at the end or on damage. */
int mms__iter_next_span(mms_iter_t *it, mms_event_t **v, size_t max);

/* A caller's hold on the iterator's last run: n events from v, i of them
 * taken. All zero: none. */
struct mms__span {
	mms_event_t *v;
	size_t n, i;
};

/* The most events the callers ask for in a run: half the iterator's ring,
 * so that the last run's events stay while the next is made. */
#define MMS__SPAN_MAX 16

/* The next event of sp's run, or NULL when it is used up. Inline: every
 * event takes it. */
static inline mms_event_t *mms__span_take(struct mms__span *sp)
{
	return sp->i < sp->n ? &sp->v[sp->i++] : NULL;
}

/* A new run of at most max events (1: one at a time, as
 * mms__iter_next_ref()) into sp, its first event taken into *evp. Returns
 * as mms__iter_next_ref() does. */
static inline int mms__span_fill(struct mms__span *sp, mms_iter_t *it, size_t max, mms_event_t **evp)
{
	int rc = mms__iter_next_span(it, &sp->v, max);

	if (rc <= 0) {
		sp->n = sp->i = 0;
		return rc;
	}
	sp->n = (size_t)rc;
	sp->i = 1;
	*evp = sp->v;
	return 1;
}

/* The next event into *evp: sp's next, or a new run's first. Returns as
 * mms__iter_next_ref() does; *evp stays as it was unless it returns 1.
 * (mms__span_take() written out: through it, the pass ran 0.7% more
 * instructions, callgrind on sqlite3's log.) */
static inline int mms__span_next(struct mms__span *sp, mms_iter_t *it, size_t max, mms_event_t **evp)
{
	if (sp->i < sp->n) {
		*evp = &sp->v[sp->i++];
		return 1;
	}
	return mms__span_fill(sp, it, max, evp);
}

/* Forgets sp's run, before its iterator goes. */
static inline void mms__span_drop(struct mms__span *sp)
{
	sp->n = sp->i = 0;
}

/* --- iterator positions (iter.c) ---------------------------------------- */
/* Where one thread's cursor stands: enough to resume without decoding what
 * came before. */
struct mms__src_pos {
	uint64_t seg;            /* segment index; UINT64_MAX when the thread is done */
	uint64_t off;            /* file offset of its pending event's record */
	uint64_t stamp, prev_addr; /* the delta state before that record */
};

/* Saves the iterator's position: next_id and one entry per thread run
 * (log->nruns of them, into pos), just before event at: the next event
 * the iterator gives, or one of the last run mms__iter_next_span() gave
 * (the events before it applied). */
void mms__iter_save(const mms_iter_t *it, uint64_t at, uint64_t *next_id, struct mms__src_pos *pos);
/* Opens an iterator at a saved position. Returns 0 or a negative code. */
int mms__iter_open_at(mms_log_t *log, uint64_t next_id, const struct mms__src_pos *pos, mms_iter_t **out);
/* Tells the iterator which heap state its events go to (NULL: none), so
 * that it asks for the state's cache lines some events ahead. */
void mms__iter_prefetch_for(mms_iter_t *it, const struct mms__state *st);

/* --- following a growing log (mms_pass_feed()) ------------------------- */
/* Where one thread's cursor stands, by file offset: its next event's
 * record, or (at_end) the end of the records it had. Stays true when the
 * log grows, whatever becomes of the segment table. */
struct mms__follow_pos {
	uint64_t off, stamp, prev_addr;
	int at_end;
	int valid;           /* the thread had records then */
};

/* Saves every thread's position (log->nthreads of them, by thread
 * number, into pos), before the log is looked at again. */
void mms__iter_save_follow(const mms_iter_t *it, uint64_t *next_id, struct mms__follow_pos *pos);
/* Opens an iterator on the grown log at the npos positions saved (a
 * thread that had no records then starts at its first one). Every
 * event still to come must come after (stamp, thread), the last event
 * yielded: MMS_EORDER when one does not (a thread's records written late,
 * stamped before it). The log's damage code (MMS_ETRUNCATED where it is
 * cut) when the log now stops at or before that event: its replay leaves
 * out what was yielded. Returns 0 or a negative code. */
int mms__iter_open_follow(mms_log_t *log, uint64_t next_id, const struct mms__follow_pos *pos, size_t npos,
			  uint64_t stamp, uint32_t thread, mms_iter_t **out);
/* The iterator yields no event stamped after limit: it returns 0 there,
 * as at its end. */
void mms__iter_limit(mms_iter_t *it, uint64_t limit);

#endif /* MMS_ITER_INT_H */
