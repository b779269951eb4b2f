/* SPDX-License-Identifier: MIT */
/* track-int.h: launches and steps followed over a replay (track.c). */
#ifndef MMS_TRACK_INT_H
#define MMS_TRACK_INT_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope/log.h"
#include "msmemscope/replay.h"
#include "state-int.h"

/* --- launches and steps followed over a replay (track.c) ----------------- */

/* Memory moved: allocations and frees with their bytes, and a peak. */
struct mms__counts {
	uint64_t allocs, frees, bytes_allocated, bytes_freed;
	uint64_t peak_bytes, peak_event;
};

void mms__counts_add(struct mms__counts *c, int alloc, uint64_t size);

/* One operator launch, with the memory its thread moved while it ran
 * (nested launches included). */
struct mms__tlaunch {
	uint64_t launch;          /* from 1, over the whole log */
	const char *name;
	uint32_t thread;
	uint64_t begin_event, end_event; /* end_event UINT64_MAX: not ended */
	uint64_t step;            /* the step holding begin_event, MMS__STEP_* */
	struct mms__counts m;
};

/* Step numbers besides 1, 2, ...: in no step, or before the first step
 * mark (step 1 if the log turns out to count STEP events, else none). */
#define MMS__STEP_NONE 0
#define MMS__STEP_PENDING UINT64_MAX

/* Whether collection was on or off over a step (mms__tstep.collect). */
#define MMS__SEEN_ON 1u
#define MMS__SEEN_OFF 2u
/* A fork child's step begun in the parent: before the fork it is the
 * parent's (in the child's log in part, or not at all). */
#define MMS__SEEN_FORK 4u

/* seen, a step's MMS__SEEN_* so far, after ev, which st has applied, in
 * the step (or at its beginning: with no ev). */
static inline unsigned mms__collect_seen(unsigned seen, const struct mms__state *st, const mms_event_t *ev)
{
	unsigned now;

	if (!st->collect)
		return seen; /* before the log's first event: not known yet */
	now = st->collect & (MMS__OFF_PROGRAM | MMS__OFF_STEPS) ? MMS__SEEN_OFF : MMS__SEEN_ON;
	/* The --steps filter's record comes at the step's edge, just after
	 * the mark that began it: it says what the step itself is. */
	if (ev && ev->kind == MMS_EV_COLLECT && ev->flags)
		return now | (seen & MMS__SEEN_FORK);
	return seen | now;
}

/* ... as the API says it. */
static inline mms_step_recorded_t mms__collect_recorded(unsigned seen)
{
	if (!(seen & (MMS__SEEN_OFF | MMS__SEEN_FORK)))
		return MMS_STEP_RECORDED_ALL;
	return seen & MMS__SEEN_ON ? MMS_STEP_RECORDED_PART : MMS_STEP_RECORDED_NONE;
}

struct mms__tstep {
	uint64_t begin, end;      /* positions; end UINT64_MAX while open */
	uint64_t events, launches;
	uint64_t live_begin, live_end; /* live bytes, all kinds */
	struct mms__counts m;     /* peak_event: the event reaching peak_bytes */
	unsigned collect;         /* MMS__SEEN_*: collection on, off within the step */
};

/* The launches running on one thread, innermost last. */
struct mms__tthread {
	struct mms__tlaunch *ops;
	size_t n, cap;
};

#define MMS__TRACK_LAUNCHES 1u
#define MMS__TRACK_STEPS 2u

struct mms__track {
	unsigned what;            /* MMS__TRACK_* */
	struct mms__tthread *threads; /* by thread number */
	size_t nthreads;
	struct mms__tlaunch ended; /* the launch the last event ended, if has_ended */
	int has_ended;
	uint64_t ev_step;         /* the step the last event counted in */
	int step_kind;            /* as the state's, once a step began */
	struct mms__tstep *steps;
	size_t nsteps, steps_cap;
	struct mms__tstep pending; /* before the first mark */
	/* The state's step counters and live bytes after the last event. */
	uint64_t steps_seen, ranges_seen, live_before;
	int in_range;
	int no_marks;             /* the log holds no step mark: every event stays
	                             before the first, with nothing to count */
};

void mms__track_init(struct mms__track *t, unsigned what);
void mms__track_free(struct mms__track *t);
/* Starts following from st's position; at a fork child's start, with the
 * steps its parent had begun. Returns 0 or -ENOMEM. */
int mms__track_start(struct mms__track *t, const struct mms__state *st);
/* Follows ev, which st has just applied. Returns 0 or -ENOMEM. */
int mms__track_event_any(struct mms__track *t, const struct mms__state *st, const mms_event_t *ev);
/* The same, inline where only steps are followed and the log has no mark
 * (most logs of programs that do not mark steps): every event is before
 * the first step. The state's counters, which only tell a step's
 * boundaries, are not noted: no step mark comes in such a read, and what
 * a launch needs (has_ended) is not followed. */
static inline int mms__track_event(struct mms__track *t, const struct mms__state *st, const mms_event_t *ev)
{
	if (t->what != MMS__TRACK_STEPS || !t->no_marks)
		return mms__track_event_any(t, st, ev);
	t->ev_step = MMS__STEP_PENDING;
	return 0;
}
/* At the end of the log: closes the last step as the index does. */
void mms__track_finish(struct mms__track *t, const struct mms__state *st);
/* The step holding event id (already followed): MMS__STEP_* or a number. */
uint64_t mms__track_step_of(const struct mms__track *t, uint64_t id);
/* The innermost launch running on a thread, or NULL. */
const struct mms__tlaunch *mms__track_running(const struct mms__track *t, uint32_t thread);

#endif /* MMS_TRACK_INT_H */
