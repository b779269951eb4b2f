/* SPDX-License-Identifier: MIT */
/* replay-show.h: how msmemscope-replay prints what a replay knows (events,
 * blocks, stacks, positions, step reports), as text for people or as JSON
 * for scripts; shared by the one-shot queries and the interactive stepper. */
#ifndef MMS_REPLAY_SHOW_H
#define MMS_REPLAY_SHOW_H

#include <stdint.h>
#include <stdio.h>

#include "msmemscope-replay.h"
#include "progress.h"

struct show {
	FILE *out;
	const char *path;         /* the log, as the user named it */
	mms_log_t *log;
	mms_replay_t *r;
	mms_symbolizer_t *sym;    /* opened on first use */
	int sym_failed;
	int json;
	unsigned depth;           /* frames printed per stack, 0 = all */
	int view;                 /* enum mms_stack_view: mixed (0), C or Python frames */
	size_t top;               /* groups and launches listed, 0 = all */
	struct progress *progress; /* the replay's progress line (its progress_ctx) */
};

void show_init(struct show *s, const char *path, mms_log_t *log, mms_replay_t *r);
void show_fini(struct show *s);

/* Text: one line per event: id, thread, kind, what and where. JSON: one
 * object (no newline). */
void show_event_line(struct show *s, const mms_event_t *ev);
/* The event just applied in full: the line, the block it touched with its
 * allocation stack. JSON: an object. */
void show_event(struct show *s, const mms_event_t *ev);
/* Where the replay stands: position, step, operator, live and peak. */
void show_where(struct show *s);
/* A block, live or freed. */
void show_block(struct show *s, const mms_block_t *b);
/* Groups of live blocks by stack, under a title (text) or key (JSON). */
void show_groups(struct show *s, const char *title, const mms_stack_group_t *g, size_t n);
/* mms_replay_step_report() of step n, with the progress line. */
int show_step_replay(struct show *s, uint64_t n, mms_step_report_t **out);
/* The report of one step. */
void show_step_report(struct show *s, const mms_step_report_t *rep);
/* Stack id's frames, indented (text), or a JSON array. */
void show_stack(struct show *s, uint32_t stack, const char *indent);

/* Names used in text and JSON. */
const char *show_mem_name(unsigned mem);
const char *show_fn_name(const mms_event_t *ev);
/* An allocating function (enum mms_alloc_func) by name: "malloc", ... */
const char *show_alloc_fn_name(unsigned fn);
/* A releasing function (enum mms_free_func) by name: "free", "realloc",
 * "delete", "delete[]". */
const char *show_free_fn_name(unsigned fn);
/* The driver call behind a DEVICE event of kind (MALLOC, FREE, ALLOC_FAIL)
 * and sub (enum mms_device_sub): cuMemAlloc, cuMemFreeAsync, ... */
const char *show_dev_fn_name(unsigned kind, unsigned sub);
/* The function of a refused allocation of memory kind mem: malloc, ...,
 * or cuMemAlloc, ... for DEVICE. */
const char *show_refused_fn_name(unsigned mem, unsigned fn);

#endif /* MMS_REPLAY_SHOW_H */
