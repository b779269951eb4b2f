/* SPDX-License-Identifier: MIT */
/* logwords.h: how a log ends, in the words every report of both programs
 * uses: why a cut log is cut, and when the blocks still live at the end of
 * its replay were live. */
#ifndef MMS_LOGWORDS_H
#define MMS_LOGWORDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "msmemscope-replay.h"

/* The log of the image the process of the log at path exec'd: path
 * STEM.mms or STEM.execN.mms is followed by STEM.exec{N+1}.mms (the
 * recorder's naming, hooks/logname.c). Returns that path (malloc'd) when
 * the file exists, else NULL. */
char *log_exec_successor(const char *path);

/* Why the log is cut, for a warning: what the file lost, or "recording
 * stopped early (No space left on device)". Returns it allocated, whole
 * whatever its length (the caller frees it). */
char *log_cut_why(const mms_log_info_t *in);

/* Why glibc's and libstdc++'s freeres did not run at the end of exit,
 * after "did not run: ": what the recorder said, or how the process ended
 * when it said nothing (killed_by: the signal the launcher saw it die of,
 * 0 when not known). Returns buf (160 bytes are enough). */
const char *log_freeres_why(const mms_log_info_t *in, int killed_by, char *buf, size_t cap);

/* The recorder's scan of the process's memory at exit (reach_scan), in
 * words: "read 1.2 MiB in 3 ms, 4521 pointers" or why it told nothing.
 * Returns buf (200 bytes are enough). log_reach_scan_name(): "none",
 * "whole", "limit", "noread", "lost" (JSON). */
const char *log_reach_scan_text(const mms_log_info_t *in, char *buf, size_t cap);
const char *log_reach_scan_name(int scan);
/* Why a heap block live at exit has no verdict where the scan gave the
 * others theirs (mms_block_t.reach MMS_REACH_UNKNOWN in a log whose scan
 * was whole): a thread still running made it as the scan ran or after. */
#define LOG_UNJUDGED_WHY                                                                                       \
	"made by threads still running while the scan at exit read memory, which may not yet have pointed to " \
	"them"
/* What a block live at the end allocated before recording last stopped
 * is (mms_block_t.reach MMS_REACH_UNRECORDED). */
#define LOG_UNRECORDED_WHY \
	"allocated before recording stopped: freed later or not, the log cannot tell; not counted as leaks"

/* Whether the blocks live at the end of the replay are those the process
 * held at exit: it reached exit and the log holds it all, undamaged. */
int log_ends_at_exit(const mms_log_info_t *in);
/* What the runtime of kind keeps, in words: mms_runtime_what() where the
 * log ends at the exit, else mms_runtime_what_live(). */
const char *log_runtime_what(const mms_log_info_t *in, unsigned kind);

/* Whether the replay stops at a cut or at damage, before the records
 * end: the blocks live there are no leaks, and reports say when they were
 * live (log_live_when()). */
int log_stops_early(const mms_log_info_t *in);

/* Where the replay of the log ends, after "live at": "exit", "exec",
 * "log end", "the cut" or "the damage". */
const char *log_end_label(const mms_log_info_t *in);

/* When the blocks live at the end of the replay were live, after "live":
 * "at exit", "at exec", "at log end", "when recording stopped at event N
 * (the log is cut; not leaks)" or "at event N, where the damage stops the
 * replay (not leaks)". Returns buf (96 bytes are enough). */
const char *log_live_when(const mms_log_info_t *in, char *buf, size_t cap);

/* Writes the JSON members that say where a cut or damaged log ends:
 * "cut_at_byte":N (the file's size; null when not cut) and
 * "stopped_at_event":E (where the replay stops, events 0 to E - 1
 * replayed; null when it reads the whole log), without a comma after. */
void log_json_end(FILE *f, const mms_log_info_t *in);

/* A bad free in words: "double free of a block freed at event N (0x1000,
 * 30 bytes, allocated at event M)", "free of an address that is not a
 * live block (0xdead0)" or "delete of a block allocated by new[] (HOST
 * 0x1000, 40 bytes, allocated at event M)". Returns buf (160 bytes are
 * enough). */
const char *log_bad_free_text(const mms_bad_free_t *b, char *buf, size_t cap);

/* The counts of the bad frees of a log, and the first of them; the
 * releases not checked for their family, and the module that calls its
 * own C++ operators (mms_log_own_operators(): own_module NULL when
 * unknown, own_op NULL for a stripped copy of the C++ runtime). */
struct log_bad_frees {
	uint64_t double_frees, invalid_frees, mismatched_frees;
	const mms_bad_free_t *list;
	size_t n;
	uint64_t unchecked_frees;
	const char *own_module, *own_op;
	uint64_t unrecorded_frees;
};
/* The initializer of a struct log_bad_frees from a summary or a leaks
 * report (p: a pointer to either), whose fields have the same names, and
 * the module with its own operators (own: an array of two, as
 * log_own_operators() fills it). */
#define LOG_BAD_FREES_OF(p, own)                                                                       \
	(p)->double_frees, (p)->invalid_frees, (p)->mismatched_frees, (p)->bad_frees, (p)->nbad_frees, \
		(p)->unchecked_frees, (own)[0], (own)[1], (p)->unrecorded_frees

/* What the summary's thread count counts, where a line about threads
 * still running at exit could read as contradicting it: " (with events in
 * the log; threads that made none are not counted)", else "". */
const char *log_threads_note(const mms_log_info_t *in);

/* "2,4": the steps a --steps recording asked for (cfg's) above step
 * `above` (0: all of them), in buf; *n (when not NULL) gets their count. */
const char *log_steps_list(const mms_config_t *cfg, uint64_t above, char *buf, size_t cap, size_t *n);
/* Why step `step` of log, which r says was not recorded or in part, is
 * so, in buf: "pid 12's, before it forked this process" (a fork child's
 * steps before the fork), "begun in pid 12 before it forked this
 * process", "--steps=2,4", "collect=deferred", or several; "" for a step
 * recorded whole. */
const char *log_step_unrecorded_why(mms_log_t *log, uint64_t step, mms_step_recorded_t r, char *buf, size_t cap);
/* Where step `step` of log began, for a fork child's whose steps go on
 * from its parent's: 2 in the parent, where it also ended (the child's
 * log holds none of it), 1 in the parent, the fork inside it (the rest is
 * the child's), 0 in this process (or no fork child); *fk gets the fork. */
int log_step_in_parent(const mms_log_t *log, uint64_t step, mms_log_fork_t *fk);
/* The same for steps of log in general (a list of them): "--steps",
 * "collect=deferred", "begun before the fork, in pid 12", those that
 * apply. */
const char *log_steps_unrecorded_why(mms_log_t *log, char *buf, size_t cap);

/* own[0] and own[1]: the module of log that calls its own C++ operators
 * and the operator's name (mms_log_own_operators()), looked for only when
 * unchecked frees were counted; NULL when not. */
void log_own_operators(const mms_log_t *log, uint64_t unchecked, const char *own[2]);

/* The counts of each kind: "1 double free, 2 frees of an address that is
 * not a live block, 1 mismatched free". Returns buf (192 bytes are
 * enough). */
const char *log_bad_frees_count(const struct log_bad_frees *b, char *buf, size_t cap);

/* All bad frees: double, invalid and mismatched. */
static inline uint64_t log_bad_frees_total(const struct log_bad_frees *b)
{
	return b->double_frees + b->invalid_frees + b->mismatched_frees;
}

/* Prints the lines of a summary about the bad frees: the label "bad
 * frees" (indented, in a column width wide), their number and the counts
 * of each kind, then a line per free kept with its event, and how many
 * more there were; then the unchecked frees, with the module that calls
 * its own operators. Nothing when there are none of either. */
void log_print_bad_frees(FILE *f, const char *indent, int width, const struct log_bad_frees *b);

/* Writes the JSON members "double_frees":N,"invalid_frees":M,
 * "mismatched_frees":K,"unchecked_frees":U,"own_operators":{"module",
 * "operator"} (null when U is 0),"bad_frees":[...] (the first n, each with event,
 * kind "double_free", "invalid_free" or "mismatched_free", addr, memory,
 * thread; for a double free freed_at_event, freed_stack; for a double or mismatched
 * one alloc_event, bytes, stack; for a mismatched one alloc_fn and
 * free_fn ("new[]", "delete") and free_stack), then "unrecorded_frees":N,
 * without a comma after. */
void log_json_bad_frees(FILE *f, const struct log_bad_frees *b);

/* The CUDA devices whose device memory log's recording kept (the
 * launcher's --device), as "cuda:1,cuda:3" into buf (64 * 9 bytes hold
 * them all); NULL when it kept every device's. */
const char *log_devices_text(const mms_log_t *log, char *buf, size_t cap);

/* The warning lines about a log that is cut, damaged or lost events, each
 * passed to say() without the program's prefix: "NAME: the log is cut at
 * byte N: WHY; the replay stops at event E, where records may be missing".
 * (That the process did not reach exit is the caller's to say: only it
 * knows how the process ended.) */
void log_warn_damage(const char *name, const mms_log_info_t *in, void (*say)(const char *line));

#endif /* MMS_LOGWORDS_H */
