/* SPDX-License-Identifier: MIT */
/* msmemscope/pass.h: the pass driver: one read of a log feeds every
 * analysis, export and report added to it. */
#ifndef MSMEMSCOPE_API_PASS_H
#define MSMEMSCOPE_API_PASS_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope/log.h"
#include "msmemscope/summary.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- one pass over a log (pass.c) ----------------------------------------
 * A pass reads the log once, in replay order, through one heap state, and
 * feeds every event to the analyses, exports and reports added to it
 * (each mms_<name>_add()), so any set of them costs one read of the log.
 * An analysis that needs a second look (decompose at a peak it could not
 * follow on the way, an export tagged by an analysis of the same pass)
 * gets it from the pass: a later read, only then. Damage met on the way
 * ends the pass where it is, for all of them alike: what came before
 * stands (mms_pass_info_t.stop_rc). */
typedef struct mms_pass mms_pass_t;

/* Options of mms_pass_open(); zero means the default. */
typedef struct mms_pass_options {
	/* Called now and then (done <= total events read and to read, over
	 * every read of the log), the last time before any subscriber's end;
	 * returning non-zero cancels the pass with -ECANCELED: no end runs,
	 * and the files its analyses and exports were writing are removed
	 * when the pass is closed (the command-line programs cancel so on
	 * SIGINT, SIGTERM and SIGHUP). */
	int (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
} mms_pass_options_t;

/* How a pass went (read-only). */
typedef struct mms_pass_info {
	uint64_t events;          /* events the pass applied: all, or up to the damage */
	uint64_t reads;           /* reads of the log: 1, or more when an analysis asked */
	int stop_rc;              /* the damage that ended the pass early, or 0 */
	int stopped;              /* the pass ends before the process did: the log is cut
	                             or damaged (mms_log_info_t.stopped), or stop_rc */
} mms_pass_info_t;

/* Opens a pass over log (which must outlive it). Returns 0 and sets *out,
 * or a negative code. Free with mms_pass_close(). */
int mms_pass_open(mms_log_t *log, const mms_pass_options_t *opt, mms_pass_t **out);
/* Reads the log, feeding everything added. Returns 0 when the log was
 * read (up to damage, see mms_pass_info_t), or a negative code: -ENOMEM,
 * -ECANCELED, MMS_EUSAGE for a pass that already ran. An analysis that
 * failed on its own (a file it could not write) says so in its result's
 * status; the others are not stopped by it. Runs once. */
int mms_pass_run(mms_pass_t *p);
/* Feeds the pass the events of a log followed while its program writes
 * it (mms_log_follow()) that no record still to come can precede: call it
 * after each mms_log_follow_refresh(); after mms_log_follow_end() it
 * feeds the rest. mms_pass_run() then ends the pass (reading what was not
 * fed), which gives what one mms_pass_run() over the whole log gives. Returns 0, or a
 * negative code: MMS_EORDER when records written since come before
 * events fed already (a thread that wrote late), damage, -ENOMEM,
 * MMS_EUSAGE (a pass that ran, or a log not followed). After an error the
 * pass cannot go on (mms_pass_run() returns MMS_EUSAGE): read the log
 * with a pass of its own once it is written. */
int mms_pass_feed(mms_pass_t *p);
/* Frees the pass. Results of the analyses added stay valid: they are the
 * caller's (each freed with its mms_<name>_free()). */
void mms_pass_close(mms_pass_t *p);
void mms_pass_get_info(const mms_pass_t *p, mms_pass_info_t *info);
/* The log's summary, from a pass that ran: every pass computes it.
 * Returns 0, or MMS_EUSAGE before mms_pass_run(). */
int mms_pass_summary(const mms_pass_t *p, mms_summary_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MSMEMSCOPE_API_PASS_H */
