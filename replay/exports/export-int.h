/* SPDX-License-Identifier: MIT */
/* export-int.h: what the CSV and SQLite exporters share: a subscriber of
 * the pass that builds msMemScope's dump row of each event with the
 * launches and steps the pass follows, and renders C stacks; a text
 * buffer; and output files that appear whole or not at all. */
#ifndef MMS_EXPORT_INT_H
#define MMS_EXPORT_INT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "msmemscope/analysis.h"
#include "msmemscope/export.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "msmemscope/symbolize.h"
#include "decimal-int.h"
#include "map-int.h"
#include "outfile-int.h"
#include "pass-int.h"
#include "state-int.h"
#include "track-int.h"

/* --- text buffer ----------------------------------------------------------- */

struct mms__xbuf {
	char *p;
	size_t len, cap;
};

/* Grows b to hold n more bytes (the slow path of mms__xbuf_reserve()).
 * Returns 0 or -ENOMEM. */
int mms__xbuf_grow(struct mms__xbuf *b, size_t n);

/* Makes room for n more bytes. Returns 0 or -ENOMEM. */
static inline int mms__xbuf_reserve(struct mms__xbuf *b, size_t n)
{
	return b->p && b->cap - b->len >= n ? 0 : mms__xbuf_grow(b, n);
}

/* Appends; each returns 0 or -ENOMEM. Inline: the exporters call them a
 * dozen times per row. */
static inline int mms__xbuf_put(struct mms__xbuf *b, const char *s, size_t n)
{
	if (mms__xbuf_reserve(b, n))
		return -ENOMEM;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

static inline int mms__xbuf_puts(struct mms__xbuf *b, const char *s)
{
	return mms__xbuf_put(b, s, strlen(s));
}

/* Writes v in decimal at o (at most 20 bytes); returns the end. */
static inline char *mms__xfmt_u64(char *o, uint64_t v)
{
	return o + mms__dec(o, v);
}

static inline int mms__xbuf_u64(struct mms__xbuf *b, uint64_t v)
{
	if (mms__xbuf_reserve(b, 20))
		return -ENOMEM;
	b->len = (size_t)(mms__xfmt_u64(b->p + b->len, v) - b->p);
	return 0;
}

/* "0x" and 16 lower-case hex digits, as msMemScope writes addresses. */
int mms__xbuf_addr(struct mms__xbuf *b, uint64_t v);
void mms__xbuf_free(struct mms__xbuf *b);

/* Writes a CSV field at o: as is, or quoted when it holds a comma, a quote
 * or a line break (RFC 4180), with its quotes doubled. Needs room for
 * 2n + 2 bytes; returns the end. */
char *mms__csv_field(char *o, const char *s, size_t n);

/* --- dump rows ------------------------------------------------------------- */

/* One row of memscope_dump. The strings stay valid until the next event
 * of the pass; name == NULL is written N/A, the others may be empty. */
struct mms__xrow {
	uint64_t id, time_ns, pid, tid;
	const char *event, *type, *name;
	size_t name_len;
	char ptr[24];     /* "0x%016llx" or "N/A" */
	char device[24];  /* Device Id: "host", or a DEVICE block's CUDA ordinal (mms__dec()'s room) */
	const char *attr; /* "{k:v,...}" or "" */
	size_t attr_len;
	const char *cstack; /* frames joined by '|', or "" */
	size_t cstack_len;
	const char *pystack; /* Python frames joined by '|', or "" */
	size_t pystack_len;
};

/* --- the pass ------------------------------------------------------------- */

/* What an exporter follows of the pass it subscribes to: the current event
 * with its block, the launches and steps, and the C stacks it renders. */
struct mms__xpass {
	struct mms__sub sub;   /* the exporter's subscriber */
	mms_log_t *log;
	mms_symbolizer_t *sym; /* names the frames; NULL: raw addresses */
	const mms_inefficient_t *inefficient; /* tags MALLOC rows, or NULL */
	const struct mms__xowners *owners;    /* owners given later, or NULL */
	const struct mms__state *st;
	mms_log_info_t info;
	mms_export_t *res;
	struct mms__outfile f; /* the file, under its temporary name until the end */
	int fd;                /* its descriptor; -1 once closed */
	int committed;

	/* The current event and its block (has_blk), after mms__xpass_event(). */
	mms_event_t ev;
	mms_block_t blk;
	int has_blk;
	/* The launches and steps the pass follows (track.c): track->ended
	 * when has_ended, the step of the current event in track->ev_step. */
	const struct mms__track *track;

	/* C stack text per stack id: index into stk_spans, spans into stk_text. */
	struct mms__map stk_ix;
	struct {
		size_t off, len;
	} * stk_spans;
	size_t nstk, stk_cap;
	struct mms__xbuf stk_text;
	uint64_t *ips; /* scratch for mms_log_stack() */
	size_t ips_cap;

	struct mms__xbuf attr; /* scratch for the row's Attr */
	char name[48];         /* scratch for "Range end from id N" */
};

/* Sets up x for an export of the log p reads to opt->path: creates the
 * file (under a temporary name; -EEXIST when path exists and overwrite is
 * 0) and fills x->sub for the exporter to complete with its callbacks.
 * Returns 0 or a negative code; on failure nothing needs freeing. */
int mms__xpass_init(struct mms__xpass *x, mms_pass_t *p, const mms_export_options_t *opt, mms_export_t *res);
/* Frees what the pass allocated; removes the file unless committed. */
void mms__xpass_free(struct mms__xpass *x);
/* For the exporter's begin: takes the pass's state and track. */
void mms__xpass_begin(struct mms__xpass *x, struct mms_pass *p);
/* For the exporter's event: sets x->ev, x->blk and has_blk. */
void mms__xpass_event(struct mms__xpass *x, const mms_event_t *ev);
/* Closes the file and moves it to its path. Returns 0 or a negative code. */
int mms__xpass_commit(struct mms__xpass *x);
/* Calls fn on each block live at the end, as the replay gives it, until
 * fn returns non-zero, which is returned. */
int mms__xpass_each_live(struct mms__xpass *x, int (*fn)(const mms_block_t *b, void *ctx), void *ctx);
/* The dump row of the current event: returns 1 and fills *row, 0 when the
 * event has no row (OWNER, STEP, WATCH, COLLECT), or -ENOMEM. */
int mms__xpass_row(struct mms__xpass *x, struct mms__xrow *row);
/* The step holding event id (an event already applied): a step number,
 * MMS__STEP_NONE, or MMS__STEP_PENDING before the first step mark. */
uint64_t mms__xpass_step_of(const struct mms__xpass *x, uint64_t id);
/* The OS thread id of a thread index (0 when the log does not say). */
uint64_t mms__xpass_tid(struct mms__xpass *x, uint32_t thread);
/* The text of stack id: its frames, innermost first, joined by '|'
 * (symbolized when the options give a symbolizer). Sets *s and *n, valid
 * until the pass is closed. Returns 0 or a negative code. */
int mms__xpass_stack(struct mms__xpass *x, uint32_t id, int python, const char **s, size_t *n);
/* Fills ips with stack id's instruction pointers (innermost first):
 * returns the depth, with *ips pointing into the pass's scratch, or a
 * negative code. */
int mms__xpass_ips(struct mms__xpass *x, uint32_t id, const uint64_t **ips);

/* The exporters (export-csv.c, export-db.c): each makes its subscriber
 * and adds it to p. Returns 0 or a negative code. */
int mms__export_csv_add(mms_pass_t *p, const mms_export_options_t *opt, mms_export_t *res);
int mms__export_db_add(mms_pass_t *p, const mms_export_options_t *opt, mms_export_t *res);

/* The kinds of events with a dump row (all but OWNER, STEP, WATCH, COLLECT). */
#define MMS__XPASS_KINDS                                                                                      \
	(1u << MMS_EV_SYSTEM | 1u << MMS_EV_MALLOC | 1u << MMS_EV_FREE | 1u << MMS_EV_ACCESS |                  \
	 1u << MMS_EV_OP_LAUNCH | 1u << MMS_EV_KERNEL_LAUNCH | 1u << MMS_EV_MSTX)

#endif /* MMS_EXPORT_INT_H */
