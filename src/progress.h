/* SPDX-License-Identifier: MIT */
/* progress.h: the one progress line of the command-line programs: long work
 * over a log (a pass, building the seek index, replaying a step) says how
 * far it got on stderr, only when stderr is a terminal and the work has
 * lasted half a second, redrawn at most ten times a second and erased when
 * the work ends, so the output that follows is not garbled. Never stdout.
 * The same callback stops that work when a signal asks the program to
 * (progress_catch_signals(), below). */
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
 * when it is due. Returns 0, or 1 (cancel) once a signal was caught
 * (progress_catch_signals()). */
int progress_update(void *ctx, uint64_t done, uint64_t total);

/* Ends the work: erases the line if it was drawn; p is idle again. */
void progress_end(struct progress *p);

/* Erases the line on the terminal, if any, before another message goes
 * to stderr (cli.c's die() and warn() call it). */
void progress_clear(void);

/* SIGINT, SIGTERM and SIGHUP (those not ignored) cancel the work over a
 * log instead of killing the program at once: progress_update() then
 * asks the library to stop, which removes the files it was writing, and
 * the program ends by the signal once they are gone (an_close(),
 * an_summarize(), die(); progress_die_if_caught()), printing nothing
 * more. A second signal kills at once. At the prompt of -i,
 * progress_catch_interrupts() instead. */
void progress_catch_signals(void);
/* The signal caught, 0: none. */
int progress_caught(void);
/* Ends the program by the signal caught (erasing the progress line and
 * flushing output first); returns when none was, and at the prompt. */
void progress_die_if_caught(void);
/* The prompt of -i on a terminal: SIGINT (Ctrl-C) interrupts the command
 * running, or the line being typed, and the prompt comes back (as in gdb
 * or Python); SIGTERM and SIGHUP end the program at once. */
void progress_catch_interrupts(void);
/* Gives the three signals back their default handling where
 * progress_catch_signals() took them. */
void progress_uncatch_signals(void);
/* The signal caught since the last call (0: none), and forgets it. */
int progress_take_interrupt(void);

#endif /* MMS_PROGRESS_H */
