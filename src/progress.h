/* SPDX-License-Identifier: MIT */
/* progress.h: the one progress line of the command-line programs: long work
 * over a log (a pass, building the seek index, replaying a step) says how
 * far it got on stderr, only when stderr is a terminal and the work has
 * lasted half a second, redrawn at most ten times a second and erased when
 * the work ends, so the output that follows is not garbled. Never stdout. */
#ifndef MMS_PROGRESS_H
#define MMS_PROGRESS_H

#include <stdint.h>

/* One piece of work: what it does ("reading", "indexing") and to which
 * log. Zero-initialised, it is idle. */
struct progress {
	char what[48];
	const char *path;  /* kept, not copied */
	uint64_t start_ns; /* 0: idle */
	uint64_t drawn_ns; /* when the line was last drawn, 0: never */
};

/* --quiet: no progress line for the rest of the run. */
void progress_quiet(void);

/* Starts timing the work what over path (the log as the user named it). */
void progress_start(struct progress *p, const char *what, const char *path);

/* The replay library's progress callback (mms_pass_options_t,
 * mms_replay_options_t) with ctx a struct progress: redraws the line
 * when it is due. Returns 0: it never cancels. */
int progress_update(void *ctx, uint64_t done, uint64_t total);

/* Ends the work: erases the line if it was drawn; p is idle again. */
void progress_end(struct progress *p);

/* Erases the line on the terminal, if any, before another message goes
 * to stderr (cli.c's die() and warn() call it). */
void progress_clear(void);

#endif /* MMS_PROGRESS_H */
