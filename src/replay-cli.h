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
/* Writes one transform of log to path, then one line on stderr naming the
 * file and its figures. Returns 0, or CLI_EXIT_FAILURE after saying why
 * (exists_hint: what to do when path exists). */
int replay_transform_write(const char *log_path, mms_log_t *log, int format, mms_transform_options_t *t,
			   const char *path, const char *exists_hint);

#endif /* MMS_REPLAY_CLI_H */
