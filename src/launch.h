/* SPDX-License-Identifier: MIT */
/* launch.h: what the parts of the msmemscope launcher share: its options,
 * its run folder, its log level and the steps main() takes in turn. */
#ifndef MMS_LAUNCH_H
#define MMS_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

#include "msmemscope/config.h"
#include "msmemscope/log.h"

#define HOOKS_SO "libmsmemscope-hooks.so"

/* As --log-level and the configuration's log_level (enum mms_config_log_level). */
enum log_level { LOG_INFO = MMS_CONFIG_LOG_INFO, LOG_WARN = MMS_CONFIG_LOG_WARN, LOG_ERROR = MMS_CONFIG_LOG_ERROR };

struct opts {
	/* The recording options: the configuration written into
	 * MSMEMSCOPE_CONFIG (msmemscope/config.h). */
	mms_config_t rec;
	bool events_set;     /* --events given */
	char *output;    /* allocated */
	enum log_level log_level;
	bool record_only; /* --analysis= */
	unsigned analyses; /* --analysis: mask over an_defs (analysis.h) */
	bool analyses_set;
	char *suppressions; /* --suppressions: LeakSanitizer-format file for leaks (allocated) */
	bool show_runtime; /* --show-runtime: leaks lists what the runtimes keep */
	bool show_reachable;   /* --show-reachable: leaks lists what is still reachable at exit */
	bool show_held;        /* --show-held: leaks lists what the per-step rule found freed later */
	uint32_t warmup_steps; /* --warmup-steps: leaks' per-step rule; 0: 1 */
	const char *leak_marks;   /* --leak-marks NAME: leaks' marks rule, or NULL */
	size_t oom_k;             /* --analysis=oom:K; 0: 10 */
	uint64_t leak_mark_first; /* --leak-marks ,N: its first mark, from 1 */
	const char *data_format; /* --data-format: "csv", "db", or NULL for none */
	bool compare;        /* --compare: compare input[0] with input[1], run nothing */
	bool print_env;      /* --print-env: print the program's environment, run nothing */
	char *input[2];      /* --input, allocated */
	int level;           /* --level: enum mms_compare_level */
	bool level_set;
	int error_exitcode;        /* --error-exitcode: the status when guard or leaks found errors, 0: none */
	unsigned leak_error_kinds; /* --errors-for-leak-kinds (enum an_leak_kind's bits) */
	bool leak_error_kinds_set;
	bool pymalloc;       /* --python-allocator=pymalloc: PYTHONMALLOC is left alone */
	bool python_allocator_set; /* --python-allocator given */
	bool keep_stacktraces_set; /* --keep-stacktraces given */
	bool no_live;        /* --no-live-report: read prog's log only after it exits */
	char **argv; /* the program and its arguments */
};

struct run {
	char *dir;   /* absolute path of the run folder */
	char *shown; /* the same as the user named it, for messages */
	char *hooks; /* absolute path of the recorder library */
};

/* The level --log-level set (warn by default); WARN() and note() read it. */
extern enum log_level log_level;

/* Warnings go out unless --log-level=error; notes only at --log-level=info. */
#define WARN(...)                          \
	do {                               \
		if (log_level <= LOG_WARN) \
			warn(__VA_ARGS__); \
	} while (0)

/* launch-options.c */
void parse_args(int argc, char **argv, struct opts *o);
/* Frees what parse_args() allocated in o. */
void opts_free(struct opts *o);

/* launch-run.c */
char *find_hooks(void);
/* Creates the folder output where missing (mode 0750) and returns its
 * absolute path (malloc'd); exits 1 saying why it cannot. */
char *output_create(const char *output);
void run_create(struct run *run, const char *output);
/* The configuration o records with, as MSMEMSCOPE_CONFIG text (malloc'd),
 * read back with the variables of single keys in the environment as the
 * recorder will read it: exits 2 naming a bad value, before anything is
 * created or run. */
char *env_config(const struct opts *o);
/* Sets the environment the recorder reads (config from env_config(),
 * logs into log_dir), and with o's Python stacks the Python variables
 * (PYTHONPATH, PYTHONMALLOC); the program inherits it. */
void env_setup(const char *hooks, const char *log_dir, const char *config, const struct opts *o);
/* --print-env: prints the same as shell commands, for a program started
 * by someone else (gdb's exec-wrapper, a script): `export NAME=WORD', one
 * a line, where WORD keeps what the environment they run in already holds
 * as env_setup() would. log_dir NULL: none. */
void env_print(const char *hooks, const char *log_dir, const char *config, const struct opts *o);
/* 0 when prog can be run and recorded; otherwise says why on stderr and
 * returns the exit status to leave with (127 not found, 126 not runnable,
 * 1 not recordable: static, set-user-ID). */
int check_program(const char *prog);
struct live;
/* Runs the program and waits for it; *lv (NULL: none) is the reading of
 * its log while it ran (launch-live.c), for report_run(). */
pid_t run_program(const struct run *run, char **argv, const struct opts *o, int *status, struct live **lv);

/* launch-live.c: the report's read of the program's log while the
 * program runs. live_start() starts it (NULL when the report asked for is
 * read after the run: files, a dump, suppressions), live_stop() ends it
 * once the program has exited, live_take() hands report_run() the pass it
 * fed over the log `name' (NULL: read the log anew; the thread follows the
 * process's exec's to its last image), live_free() frees what is left. */
struct an_ctx;
struct an_opts;
struct live *live_start(const struct run *run, pid_t pid, const struct opts *o);
void live_stop(struct live *lv);
struct an_ctx *live_take(struct live *lv, const char *name, mms_log_t **log, int *status);
void live_free(struct live *lv);

/* launch-report.c */
/* The report after a run: reads the program's log once for its summary,
 * the analyses o asks for (writing their files into the run folder) and
 * the dump --data-format asks for, and prints the summary, one line for
 * each other log of the run, then the analyses, on stderr. Returns 0; 1
 * when an analysis or the dump failed (said); -ENOENT (said) when the
 * program left no log. */
int report_run(const struct run *run, char **argv, pid_t pid, int status, const struct opts *o, struct live *lv,
	       uint64_t *errors);
/* Where the process of log dir/name went on, when it exec'd: the file
 * name of the exec'd image's log (log_exec_successor(), malloc'd) if that
 * log exists, else NULL. */
char *exec_successor(const char *dir, const char *name);
/* The program's log in the run folder dir: that of the last image of
 * process pid (a wrapper such as env, a shell script or pyenv's shims
 * exec's the program the user meant), memscope_P.mms when it exec'd
 * nothing. Malloc'd. */
char *program_log_name(const char *dir, pid_t pid);
/* The analyses' options of the report after a run. */
void report_options(const struct run *run, const struct opts *o, struct an_opts *ao);
/* --data-format without a report (--analysis=): writes msMemScope's dump
 * of the program's log into {run}/dump/; returns 0, or 1 after saying why
 * it could not. */
int write_dump(const struct run *run, pid_t pid, const char *format, unsigned analyses);

#endif /* MMS_LAUNCH_H */
