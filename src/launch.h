/* SPDX-License-Identifier: MIT */
/* launch.h: what the parts of the msmemscope launcher share: its options,
 * its run folder, its log level and the steps main() takes in turn. */
#ifndef MMS_LAUNCH_H
#define MMS_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

#define HOOKS_SO "libmsmemscope-hooks.so"
#define STEPS_MAX 5

enum event_bit {
	EV_ALLOC = 1u << 0,
	EV_FREE = 1u << 1,
	EV_LAUNCH = 1u << 2,
	EV_ACCESS = 1u << 3,
};

enum log_level { LOG_INFO, LOG_WARN, LOG_ERROR };

/* The names of enum log_level, as --log-level and MSMEMSCOPE_CONFIG spell them. */
extern const char *const log_level_names[];

struct opts {
	unsigned events;     /* enum event_bit */
	bool events_set;     /* --events given */
	unsigned call_stack; /* C frames per event, 0 = none */
	bool deferred;
	unsigned steps[STEPS_MAX];
	unsigned nsteps; /* 0: all steps */
	char *output;    /* allocated */
	enum log_level log_level;
	bool record_only; /* --analysis= */
	unsigned analyses; /* --analysis: mask over an_defs (analysis.h) */
	bool analyses_set;
	char *suppressions; /* --suppressions: LeakSanitizer-format file for leaks (allocated) */
	bool follow_exec;
	bool freeres;
	bool show_runtime; /* --show-runtime: leaks lists what the runtimes keep */
	const char *data_format; /* --data-format: "csv", "db", or NULL for none */
	bool compare;        /* --compare: compare input[0] with input[1], run nothing */
	char *input[2];      /* --input, allocated */
	int level;           /* --level: enum mms_compare_level */
	bool level_set;
	char *watch; /* --watch, normalized ("START:out0,END,full-content"), or NULL */
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
void run_create(struct run *run, const char *output);
void env_setup(const struct run *run, const struct opts *o);
/* 0 when prog can be run and recorded; otherwise says why on stderr and
 * returns the exit status to leave with (127 not found, 126 not runnable,
 * 1 not recordable: static, set-user-ID). */
int check_program(const char *prog);
pid_t run_program(const struct run *run, char **argv, int *status);

/* launch-report.c */
/* Returns 0, or -ENOENT (said on stderr) when the program left no log. */
int print_main_summary(const struct run *run, char **argv, pid_t pid, int status);
void print_other_logs(const struct run *run, pid_t pid);
/* --data-format: writes msMemScope's dump of the program's log into
 * {run}/dump/ (with --analysis=inefficient, its blocks tagged in Attr);
 * returns 0, or 1 after saying why it could not. */
int write_dump(const struct run *run, pid_t pid, const char *format, unsigned analyses);
/* --analysis: runs the analyses o asks for over the program's log, writing
 * their files into the run folder; returns 0, or 1 after saying why. */
int run_analyses(const struct run *run, pid_t pid, const struct opts *o);

#endif /* MMS_LAUNCH_H */
