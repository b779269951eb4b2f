/* SPDX-License-Identifier: MIT */
/* replay-cli.h: the parts of the msmemscope-replay command: the summary,
 * the one-shot queries and the interactive stepper. */
#ifndef MMS_REPLAY_CLI_H
#define MMS_REPLAY_CLI_H

#include "msmemscope-replay.h"
#include "replay-show.h"

/* --summary: prints the log's figures; returns the exit status. */
int replay_summary(const char *path, mms_log_t *log, int json);
/* Warns on stderr about what a cut, damaged or unfinished log leaves out;
 * with json, the notes the JSON answer says itself (a log that ends at an
 * exec) are left out, so a healthy log leaves stderr empty. */
void replay_warn_log_state(const char *path, const mms_log_info_t *in, int json);
/* Warns when log is a fork child whose inherited blocks are unknown. */
void replay_warn_fork(const char *path, const mms_log_t *log);
/* -i: reads commands from in until quit or end of input; returns the exit
 * status, 0 when the commands ran (a command that failed said so, as text
 * on stderr or {"error": ...}). Prompts and line editing only when in is a
 * terminal. */
int replay_interactive(struct show *s, FILE *in);
/* Opens a log or dies with a message that says why it cannot be read. */
mms_log_t *replay_open_log(const char *path);
/* The transform subcommand (argv[0] is "transform"): returns the exit
 * status. */
int replay_transform(int argc, char **argv);
/* One transform of a log, written by a pass that reads it: the caller
 * sets t (format, selection, ...), path, log_path and exists_hint (what to
 * do when path exists). */
struct replay_transform {
	mms_transform_options_t t;
	const char *path, *log_path, *exists_hint;
	char title[192], words[160];
	mms_transform_t *res;
};

/* Adds the transform to the pass p of log (frames named with sym, or not
 * when NULL). Returns 0, or CLI_EXIT_FAILURE after saying why. */
int replay_transform_add(struct replay_transform *x, mms_pass_t *p, mms_log_t *log, mms_symbolizer_t *sym);
/* After the pass (which returned pass_rc): one line on stderr naming the
 * file and its figures, or why it was not written. Returns 0 or
 * CLI_EXIT_FAILURE. */
int replay_transform_done(struct replay_transform *x, int pass_rc);

#endif /* MMS_REPLAY_CLI_H */
