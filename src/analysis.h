/* SPDX-License-Identifier: MIT */
/* analysis.h: the analyses that msmemscope (after a run) and
 * msmemscope-replay (on any log) run over one log: their names, their
 * options, and two entry points each: one adds the analysis to the pass
 * that reads the log once for all of them, one prints its result. Each
 * analysis is a module of the replay library (replay/<name>.c) that
 * computes, and a printer here in src/ (src/an-<name>.c) that shows the
 * result as text or JSON and writes the files msMemScope writes. */
#ifndef MMS_ANALYSIS_H
#define MMS_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "msmemscope-replay.h"
#include "progress.h"

/* Options of the analyses, from either command line. Zero is the default. */
struct an_opts {
	bool json;          /* one JSON object per analysis, one per line */
	unsigned depth;     /* frames shown per stack, 0 = all */
	int stack_view;     /* enum mms_stack_view: which frames stacks show */
	size_t top;         /* groups listed, 0 = all */
	const char *outdir; /* folder for the files analyses write; NULL: "." */
	bool force;         /* replace output files that exist */
	const char *suppressions; /* leaks: LeakSanitizer-format file, or NULL */
	bool show_runtime;        /* leaks: list the blocks the runtimes keep, by stack */
	bool show_reachable;      /* leaks: list the blocks still reachable at exit, by stack */
	bool show_held;           /* leaks: list the per-step rule's blocks freed in a later step */
	uint32_t warmup_steps;    /* leaks: steps whose blocks are no per-step leaks (0: 1) */
	const char *leak_marks;   /* leaks: the marks rule's mark name, or NULL */
	size_t oom_k;             /* oom: blocks of each list (0: 10) */
	uint64_t leak_mark_first; /* leaks: the first of its three marks, from 1 (0: 1) */
	uint64_t idle_threshold;  /* inefficient: launches (0: 3000) */
	uint64_t min_size;        /* inefficient: smallest block considered */
	uint64_t buckets;         /* usage: points of the timeline, 0 = every change */
	bool at_event_set;        /* decompose: at one event instead of the end and peak */
	uint64_t at_event;        /* decompose: the state just after this event */
	const char *plot;         /* usage: also draw the timeline into this SVG file */
	unsigned memory;          /* watermark, usage, leakage, decompose: memory kinds
	                             counted (bits 1 << enum mms_mem_kind), 0 = the
	                             defaults (see --memory) */
	bool tag_inefficient;     /* inefficient also notes every block it finds, for a
	                             dump in the same pass */
	int error_exitcode;       /* --error-exitcode: an_error_status()'s status when
	                             there are errors; 0: none */
	unsigned leak_error_kinds; /* --errors-for-leak-kinds: the leaks it counts
	                              (enum an_leak_kind's bits) */
};

/* The leaks that count as errors (--errors-for-leak-kinds, valgrind's
 * words): blocks of the heap live at the end of a log that reached exit,
 * leaked (or unknown: no scan told them), indirectly or possibly leaked,
 * or still reachable; and those the per-step or marks rule found. */
enum an_leak_kind {
	AN_LEAK_DEFINITE = 1,
	AN_LEAK_INDIRECT = 2,
	AN_LEAK_POSSIBLE = 4,
	AN_LEAK_REACHABLE = 8,
	AN_LEAK_STEP = 16,
	AN_LEAK_ALL = 31,
	AN_LEAK_DEFAULT = AN_LEAK_DEFINITE | AN_LEAK_POSSIBLE, /* valgrind's */
};

/* What an analysis is given. */
struct an_ctx {
	const char *path; /* the log, as the user named it */
	mms_log_t *log;
	const struct an_opts *o;
	FILE *out;
	mms_symbolizer_t *sym; /* an_symbolizer() opens it on first use */
	int sym_failed;
	unsigned mask;         /* the analyses an_run() runs (bits over an_defs) */
	unsigned added;        /* those added to the pass */
	mms_pass_t *pass;      /* the one read of the log they share */
	struct progress progress; /* the pass's progress line */
	const char *shown;     /* the log as that line names it; NULL: path */
	int killed_by;         /* the launcher's program died of this signal, which
	                          is then its status, errors or not (an_error_status) */
	int pass_rc;           /* what mms_pass_run() returned */
	int pass_done;         /* the pass ran already (the launcher's live read) */
	int subscribed;        /* analyses and exports added to the pass */
	int summary;           /* read the log even with no analysis added: the caller
	                          wants the pass's summary */
	/* The results, filled by the pass. */
	mms_leaks_t *leaks;
	mms_suppressions_t *leaks_supp;
	mms_decompose_t *decompose;
	mms_inefficient_t *inefficient;
	mms_watch_t *watch;
	mms_guard_t *guard;
	mms_oom_t *oom;
	char *watch_dir, *watch_csv; /* watch: the CSV's folder (made for it) and path */
	/* watermark, usage, leakage share one subscriber (src/an-trace.c). */
	mms_trace_t *trace;
	int trace_said;        /* what stopped it was said */
	int usage_rc;          /* usage.tsv could not be written: the code */
};

struct an_def {
	const char *name;
	const char *what; /* one line for --help */
	/* Adds the analysis to c->pass; returns 0, or CLI_EXIT_FAILURE after
	 * saying why on stderr. */
	int (*add)(struct an_ctx *c);
	/* After the pass: prints its report to c->out and writes its files;
	 * returns 0, or CLI_EXIT_FAILURE after saying why on stderr. */
	int (*print)(struct an_ctx *c);
};

/* The entry points, one per src/an-<name>.c. */
int an_decompose_add(struct an_ctx *c);
int an_decompose_print(struct an_ctx *c);
int an_inefficient_add(struct an_ctx *c);
int an_inefficient_print(struct an_ctx *c);

/* The inefficient analysis's options as the library takes them. */
void an_inefficient_options(const struct an_opts *o, mms_inefficient_options_t *io);
int an_leaks_add(struct an_ctx *c);
int an_leaks_print(struct an_ctx *c);
/* msMemScope's unit: MiB, printed with six decimals and named "Mb(s)". */
static inline double an_mb(uint64_t bytes)
{
	return (double)bytes / 1048576.0;
}

/* The leaks report's part on the steps (src/an-steps.c): the gap table,
 * the steps that allocated more than the step before and those that
 * ended with more live memory, the top of each list (0: all); as JSON
 * members ("gap", "steps") when json; log's words say why steps were
 * not recorded whole. */
void an_leaks_print_steps(FILE *f, mms_log_t *log, const mms_leaks_t *l, int json, size_t top);

/* compare (src/an-compare.c): two inputs, not one log, so it is not in
 * an_defs. Either input[0] and input[1] (each a .mms log or a
 * memscope_dump CSV), or steps[0] and steps[1] of the log input[0]. */
struct an_compare_args {
	const char *input[2];
	uint64_t steps[2]; /* both 0: compare two inputs */
	int level;         /* enum mms_compare_level */
};

/* Compares, writes {outdir}/compare/memory_compare_{timestamp}.csv and
 * prints the report to out. Returns 0, or CLI_EXIT_FAILURE after saying
 * why on stderr. */
int an_compare(const struct an_compare_args *a, const struct an_opts *o, FILE *out);
/* The entry points (src/an-<name>.c): watermark, usage and leakage share
 * one subscriber. */
int an_trace_add(struct an_ctx *c);
int an_watermark_print(struct an_ctx *c);
int an_usage_print(struct an_ctx *c);
int an_leakage_print(struct an_ctx *c);
int an_watch_add(struct an_ctx *c);
int an_watch_print(struct an_ctx *c);
int an_guard_add(struct an_ctx *c);
int an_guard_print(struct an_ctx *c);
int an_oom_add(struct an_ctx *c);
int an_oom_print(struct an_ctx *c);

/* The analyses, in the order they run; ends with a NULL name. */
extern const struct an_def an_defs[];

/* The analysis called name, or NULL. */
const struct an_def *an_find(const char *name);

/* The bit of analysis name in a mask of an_parse_list(), 0 when unknown. */
unsigned an_mask(const char *name);

/* Parses a comma-separated list of analysis names ("leaks,decompose") into
 * a bit mask over an_defs (bit i = an_defs[i]); an empty list gives 0.
 * Returns NULL, or a message naming the unknown name and the known ones
 * (valid until the next call). */
const char *an_parse_list(const char *list, unsigned *mask);
/* The same, also reading oom:K into *oom_k (unchanged without it). */
const char *an_parse_list_k(const char *list, unsigned *mask, size_t *oom_k);
#define AN_OOM_K_MAX 100000

/* Parses a comma-separated list of memory kinds (host, mmap, pool, device) into a
 * mask of bits 1 << enum mms_mem_kind. Returns NULL, or a message naming
 * the unknown kind (valid until the next call). */
const char *an_parse_memory(const char *list, unsigned *mask);
/* The memory kinds' names, as --memory takes them and the JSON's keys
 * ("host", "mmap", "pool", "device"), by enum mms_mem_kind. */
extern const char *const an_mem_names[MMS_MEM_KIND_COUNT];

/* After a step count whose steps the recorder inferred
 * (mms_log_info_t.steps_inferred): says so. */
#define STEPS_INFERRED_NOTE " (inferred: the ends of its PyTorch optimizer steps; it marks no steps itself)"

/* --errors-for-leak-kinds: definite, indirect, possible, reachable, step,
 * or all or none; NULL, or what is wrong. */
const char *an_parse_leak_kinds(const char *list, unsigned *mask);
/* The leaks of the kinds (enum an_leak_kind's bits) the leaks analysis
 * found that no suppression matched: 0 when it did not run. *unverdicted
 * gets how many of them are blocks live at exit that no scan told
 * (counted as definite leaks). */
uint64_t an_leak_errors(const struct an_ctx *c, unsigned kinds, uint64_t *unverdicted);
/* status, or --error-exitcode's (o->error_exitcode) when there are errors:
 * guard's findings, and the leaks of the kinds o->leak_error_kinds names;
 * how many of each is said on stderr. */
int an_error_status(const struct an_ctx *c, int status);

/* Prints the analyses to f for --help: one entry each, the name and its
 * description wrapped at 79 columns. */
void an_print_help(FILE *f);

/* The names of the analyses, comma-separated, for messages and help. */
const char *an_names(void);

/* Runs the analyses of mask over the log at path (already open), in the
 * order of an_defs, printing to out: an_open(), an_pass(), an_print(),
 * an_close(). Returns 0, or CLI_EXIT_FAILURE when one of them failed (the
 * others still run). */
int an_run(const char *path, mms_log_t *log, unsigned mask, const struct an_opts *o, FILE *out);

/* The steps of an_run(), for a caller that prints more from the same
 * pass (the launcher's summary): a context whose pass has the analyses of
 * mask added. Returns it (never NULL: dies when out of memory); *status
 * gets CLI_EXIT_FAILURE when one could not be added (said on stderr). */
struct an_ctx *an_open(const char *path, mms_log_t *log, unsigned mask, const struct an_opts *o, FILE *out,
		       int *status);
/* Reads the log once for all of them, with the progress line on a
 * terminal. Returns 0, or the error after
 * saying it on stderr (the log could not be read at all). */
int an_pass(struct an_ctx *c);
/* Prints each analysis's report in the order of an_defs. Returns 0, or
 * CLI_EXIT_FAILURE when one of them failed. */
int an_print(struct an_ctx *c);
void an_close(struct an_ctx *c);

/* mms_summarize() of the log at path (already open), with the progress
 * line on a terminal. Returns what mms_summarize() returns. */
int an_summarize(const char *path, mms_log_t *log, mms_summary_t *out);

/* Reads a --suppressions file to check it. Returns NULL when it can be
 * used, or a message saying which line is wrong or why it cannot be read
 * (valid until the next call), for a usage error. */
const char *an_check_suppressions(const char *path);

/* Reads --leak-marks' NAME[,N] into o (NAME copied into a buffer of its
 * own, which the next call reuses: value may go).
 * NAME is all of value unless it ends in ',' and digits. Returns NULL, or
 * what is wrong, for a usage error. */
const char *an_parse_leak_marks(const char *value, struct an_opts *o);

struct show;
/* Readies s (replay-show.h) over c's log for an analysis's report: c's
 * output, --json, --depth, --stack-view and --top, and c's symbolizer,
 * which an_show_fini() leaves to c. */
void an_show_init(struct an_ctx *c, struct show *s);
void an_show_fini(struct show *s);

/* The symbolizer of c's log, opened on first use; NULL when it cannot be
 * (stacks are then shown as module+offset). */
mms_symbolizer_t *an_symbolizer(struct an_ctx *c);

/* The path of an output file named name in o->outdir (or "."): allocated,
 * the caller frees it. */
char *an_out_path(const struct an_opts *o, const char *name);

#endif /* MMS_ANALYSIS_H */
