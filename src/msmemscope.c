/* SPDX-License-Identifier: MIT */
/* msmemscope.c: the launcher: runs a program with the recorder preloaded
 * into a fresh run folder, passes its exit status through and summarizes
 * the log it left. */
#define _GNU_SOURCE
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "msmemscope-replay.h"
#include "cli.h"

#define HOOKS_SO "libmsmemscope-hooks.so"
#define OUTPUT_DEFAULT "memscopeDumpResults"
#define OUTPUT_MAX 4096 /* msMemScope's limit on --output */
#define STEPS_MAX 5
#define CALL_STACK_MAX 1000
#define CALL_STACK_C_DEFAULT 50 /* --call-stack=c without a depth */
#define EXIT_NOEXEC 126
#define EXIT_NOTFOUND 127

enum event_bit {
	EV_ALLOC = 1u << 0,
	EV_FREE = 1u << 1,
	EV_LAUNCH = 1u << 2,
	EV_ACCESS = 1u << 3,
};

enum log_level { LOG_INFO, LOG_WARN, LOG_ERROR };

static const char *const log_level_names[] = { "info", "warn", "error" };

struct opts {
	unsigned events;     /* enum event_bit */
	unsigned call_stack; /* C frames per event, 0 = none */
	bool deferred;
	unsigned steps[STEPS_MAX];
	unsigned nsteps; /* 0: all steps */
	char *output;    /* allocated */
	enum log_level log_level;
	bool record_only; /* --analysis= */
	bool follow_exec;
	char **argv; /* the program and its arguments */
};

static enum log_level log_level = LOG_WARN;

/* ---- messages ---- */

/* Warnings go out unless --log-level=error; notes only at --log-level=info. */
#define WARN(...)                          \
	do {                               \
		if (log_level <= LOG_WARN) \
			warn(__VA_ARGS__); \
	} while (0)

__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
	va_list ap;

	if (log_level > LOG_INFO)
		return;
	fprintf(stderr, "%s: ", cli_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- options ---- */

struct opt_def {
	const char *name; /* without the leading "--" */
	bool has_value;
	/* Parses value into o; on a malformed value returns what was expected,
	 * for the message, else NULL. */
	const char *(*parse)(struct opts *o, char *value);
};

/* The next item of a list separated by ',' or the full-width '，' (U+FF0C,
 * which msMemScope accepts too). Cuts the item in place; returns it, or NULL
 * when the list is used up. Empty items are returned as "". */
static char *list_next(char **cursor)
{
	char *item = *cursor, *p;

	if (!item)
		return NULL;
	for (p = item; *p; p++) {
		if (*p == ',') {
			*p = '\0';
			*cursor = p + 1;
			return item;
		}
		if (strncmp(p, "\xef\xbc\x8c", 3) == 0) {
			*p = '\0';
			*cursor = p + 3;
			return item;
		}
	}
	*cursor = NULL;
	return item;
}

/* Parses a decimal number in [lo, hi] with nothing around it. */
static bool parse_range(const char *s, uint64_t lo, uint64_t hi, unsigned *out)
{
	uint64_t v;

	if (*s < '0' || *s > '9' || cli_parse_u64(s, &v) < 0 || v < lo || v > hi)
		return false;
	*out = (unsigned)v;
	return true;
}

static const char *parse_events(struct opts *o, char *value)
{
	static const char expected[] = "expected a list of alloc, free, launch, access";
	char *item, *cursor = *value ? value : NULL;

	o->events = 0;
	while ((item = list_next(&cursor))) {
		if (strcmp(item, "alloc") == 0 || strcmp(item, "free") == 0)
			o->events |= EV_ALLOC | EV_FREE; /* each implies the other */
		else if (strcmp(item, "launch") == 0)
			o->events |= EV_LAUNCH;
		else if (strcmp(item, "access") == 0)
			o->events |= EV_ACCESS | EV_ALLOC | EV_FREE;
		else if (strcmp(item, "traceback") == 0)
			WARN("--events=traceback: Python traces are not recorded for native programs; ignored");
		else
			return expected;
	}
	return NULL;
}

static const char *parse_call_stack(struct opts *o, char *value)
{
	static const char expected[] = "expected c, c:N or python[:N], N from 0 to 1000";
	char *item, *cursor = value, *colon;
	unsigned depth;

	if (!*value)
		return expected;
	while ((item = list_next(&cursor))) {
		colon = strchr(item, ':');
		depth = CALL_STACK_C_DEFAULT;
		if (colon) {
			*colon = '\0';
			if (!parse_range(colon + 1, 0, CALL_STACK_MAX, &depth))
				return expected;
		}
		if (strcmp(item, "c") == 0)
			o->call_stack = depth;
		else if (strcmp(item, "python") == 0)
			WARN("--call-stack=python: Python stacks are not recorded for native programs; ignored");
		else
			return expected;
	}
	return NULL;
}

static const char *parse_collect_mode(struct opts *o, char *value)
{
	if (strcmp(value, "immediate") == 0)
		o->deferred = false;
	else if (strcmp(value, "deferred") == 0)
		o->deferred = true;
	else
		return "expected immediate or deferred";
	return NULL;
}

static const char *parse_steps(struct opts *o, char *value)
{
	static const char expected[] = "expected 1 to 5 step numbers (positive integers) separated by commas";
	char *item, *cursor = value;

	o->nsteps = 0;
	while ((item = list_next(&cursor))) {
		if (o->nsteps == STEPS_MAX || !parse_range(item, 1, INT32_MAX, &o->steps[o->nsteps]))
			return expected;
		o->nsteps++;
	}
	return o->nsteps ? NULL : expected;
}

static const char *parse_output(struct opts *o, char *value)
{
	if (!*value || strlen(value) > OUTPUT_MAX)
		return "expected a directory path of 1 to 4096 characters";
	free(o->output);
	o->output = xstrdup(value);
	return NULL;
}

static const char *parse_log_level(struct opts *o, char *value)
{
	for (size_t i = 0; i < sizeof(log_level_names) / sizeof(log_level_names[0]); i++) {
		if (strcmp(value, log_level_names[i]) == 0) {
			o->log_level = (enum log_level)i;
			log_level = o->log_level;
			return NULL;
		}
	}
	return "expected info, warn or error";
}

static const char *parse_analysis(struct opts *o, char *value)
{
	if (*value)
		return "the analyses (leaks, decompose, inefficient) are not in this version yet;"
		       " --analysis= (empty) records without a summary";
	o->record_only = true;
	return NULL;
}

static const char *parse_no_follow_exec(struct opts *o, char *value)
{
	o->follow_exec = false;
	return NULL;
}

static void print_help(void);

static const char *parse_help(struct opts *o, char *value)
{
	print_help();
	exit(0);
}

static const char *parse_version(struct opts *o, char *value)
{
	printf("%s %s\n", cli_progname, PACKAGE_VERSION);
	exit(0);
}

static const struct opt_def opt_defs[] = {
	{ "--events", true, parse_events },
	{ "--call-stack", true, parse_call_stack },
	{ "--collect-mode", true, parse_collect_mode },
	{ "--steps", true, parse_steps },
	{ "--output", true, parse_output },
	{ "--log-level", true, parse_log_level },
	{ "--analysis", true, parse_analysis },
	{ "--no-follow-exec", false, parse_no_follow_exec },
	{ "--help", false, parse_help },
	{ "--version", false, parse_version },
};
#define N_OPTS (sizeof(opt_defs) / sizeof(opt_defs[0]))

/* msMemScope options this version does not implement yet: refused with a
 * message that says so rather than "unknown". */
static const char *const later_opts[] = { "--watch", "--data-format", "--compare", "--input", "--device", "--level" };

__attribute__((noreturn)) static void unknown_option(const char *arg)
{
	char accepted[256];
	size_t n = 0, len = strcspn(arg, "=");
	const char *why = "unknown option";

	for (size_t i = 0; i < N_OPTS; i++)
		n += (size_t)snprintf(accepted + n, sizeof(accepted) - n, "%s%s", i ? ", " : "", opt_defs[i].name);
	for (size_t i = 0; i < sizeof(later_opts) / sizeof(later_opts[0]); i++)
		if (strlen(later_opts[i]) == len && strncmp(arg, later_opts[i], len) == 0)
			why = "not in this version yet";
	die_usage("%.*s: %s (accepted: %s)", (int)len, arg, why, accepted);
}

/* Parses argv into o. Stops at "--" or at the first argument that is not an
 * option: that is the program. Exits 2 on a usage error. */
static void parse_args(int argc, char **argv, struct opts *o)
{
	int i;

	*o = (struct opts){
		.events = EV_ALLOC | EV_FREE | EV_LAUNCH,
		.output = xstrdup(OUTPUT_DEFAULT),
		.log_level = LOG_WARN,
		.follow_exec = true,
	};
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *value = NULL, *bad;
		const struct opt_def *def = NULL;
		char *copy;

		if (strcmp(arg, "--") == 0) {
			i++;
			break;
		}
		if (arg[0] != '-' || arg[1] == '\0')
			break; /* the program */
		if (strcmp(arg, "-h") == 0)
			parse_help(o, NULL);
		if (strcmp(arg, "-v") == 0)
			parse_version(o, NULL);
		for (size_t k = 0; k < N_OPTS && !def; k++) {
			if (opt_defs[k].has_value ? cli_opt_value(argc, argv, &i, opt_defs[k].name, &value)
						  : cli_opt_flag(arg, opt_defs[k].name))
				def = &opt_defs[k];
		}
		if (!def)
			unknown_option(arg);
		/* List values are cut up in a copy, so messages quote them whole. */
		copy = value ? xstrdup(value) : NULL;
		bad = def->parse(o, copy);
		if (bad)
			die_usage("%s=%s: %s", def->name, value, bad);
		free(copy);
	}
	if (i >= argc)
		die_usage("no program to run (usage: %s [options] [--] prog [args...])", cli_progname);
	o->argv = argv + i;
}

static void print_help(void)
{
	printf("Usage: %s [options] [--] prog [args...]\n"
	       "\n"
	       "Runs prog with the msmemscope recorder preloaded, which writes every memory\n"
	       "event of prog (malloc family, mmap family, the msmemscope.h annotations) to an\n"
	       "event log, then prints a summary of that log on stderr.\n"
	       "\n"
	       "Recording options (values as --opt=VALUE or --opt VALUE; lists take ',' or the\n"
	       "full-width '\xef\xbc\x8c'):\n"
	       "  --events=LIST         events to record: alloc, free, launch, access.\n"
	       "                        Default alloc,free,launch. alloc and free imply each\n"
	       "                        other; access implies alloc,free. Empty: none.\n"
	       "  --call-stack=c[:N]    record a C call stack of at most N frames (0-1000) with\n"
	       "                        each event; 'c' alone means c:50. Default: no stacks.\n"
	       "                        'python[:N]' is accepted and ignored (native programs).\n"
	       "  --collect-mode=MODE   immediate (default): record from the start;\n"
	       "                        deferred: record only between msmemscope_start() and\n"
	       "                        msmemscope_stop() calls in the program.\n"
	       "  --steps=N[,N...]      record only these steps (1 to 5 step numbers, from 1,\n"
	       "                        as msmemscope_step() counts them). Default: all.\n"
	       "  --no-follow-exec      do not record the images the program execs (default:\n"
	       "                        each is recorded as memscope_{pid}.exec{N}.mms).\n"
	       "  --output=DIR          where run folders go (default %s).\n"
	       "  --log-level=LEVEL     info, warn (default) or error: what msmemscope and the\n"
	       "                        recorder report on stderr.\n"
	       "\n"
	       "Report options:\n"
	       "  --analysis=           record only: print no summary. The analyses (leaks,\n"
	       "                        decompose, inefficient) are not in this version yet;\n"
	       "                        any other value is refused.\n"
	       "\n"
	       "  -h, --help            show this help and exit\n"
	       "  -v, --version         show the version and exit\n"
	       "\n"
	       "Output:\n"
	       "  Each run creates a new folder DIR/msmemscope_{PID}_{YYYYMMDDhhmmss}/ (PID is\n"
	       "  msmemscope's own, the time is local), never reusing one, which holds\n"
	       "  memscope_{pid}.mms for prog, one log for each process it forks, and\n"
	       "  memscope_{pid}.exec{N}.mms for each image it execs. Read them with\n"
	       "  msmemscope-replay. prog's own output is left alone; the summary goes to\n"
	       "  stderr.\n"
	       "\n"
	       "Exit status:\n"
	       "  prog's exit status, or 128+N when prog was killed by signal N. 2 for a\n"
	       "  usage error, 126 when prog cannot be executed, 127 when it is not found,\n"
	       "  1 when msmemscope itself fails (recorder library missing, output folder\n"
	       "  not writable).\n"
	       "\n"
	       "Environment:\n"
	       "  MSMEMSCOPE_HOOKS      the recorder library to preload. Default: the one in\n"
	       "                        the build tree when msmemscope runs from there, else\n"
	       "                        %s\n"
	       "\n"
	       "Examples:\n"
	       "  %s ./infer 5\n"
	       "  %s --call-stack=c:20 --output=/tmp/runs -- ./server --port 8080\n"
	       "  %s --steps=2,3 --events=alloc,launch ./train\n"
	       "  %s --analysis= -- make check        record only, no summary\n"
	       "\n"
	       "See msmemscope(1) and the user guide for more.\n",
	       cli_progname, OUTPUT_DEFAULT, PKGLIBDIR "/" HOOKS_SO, cli_progname, cli_progname, cli_progname,
	       cli_progname);
}

/* ---- set-up: recorder library, run folder, environment ---- */

static bool is_readable_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

/* Returns the absolute path of the recorder library (malloc'd), or exits 1
 * naming every place it looked. */
static char *find_hooks(void)
{
	const char *env = getenv("MSMEMSCOPE_HOOKS");
	char self[PATH_MAX], *slash, *cand[2], *found = NULL;
	ssize_t n;

	if (env && *env) {
		if (!is_readable_file(env))
			die(1, "MSMEMSCOPE_HOOKS=%s: not a readable file", env);
		found = realpath(env, NULL);
		if (!found)
			die(1, "MSMEMSCOPE_HOOKS=%s: %s", env, strerror(errno));
		return found;
	}

	/* In a build tree the binary is src/msmemscope, or src/.libs/lt-msmemscope
	 * behind libtool's wrapper script. */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		n = 0;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	cand[0] = xasprintf("%s/../hooks/.libs/%s", self, HOOKS_SO);
	cand[1] = xasprintf("%s/../../hooks/.libs/%s", self, HOOKS_SO);
	for (int i = 0; i < 2 && !found; i++)
		if (n > 0 && is_readable_file(cand[i]))
			found = realpath(cand[i], NULL);
	if (!found && is_readable_file(PKGLIBDIR "/" HOOKS_SO))
		found = realpath(PKGLIBDIR "/" HOOKS_SO, NULL);
	if (!found)
		die(1,
		    "cannot find the recorder %s: looked for %s, %s and %s. "
		    "Build it (make), install it (make install), or set MSMEMSCOPE_HOOKS to its path",
		    HOOKS_SO, cand[0], cand[1], PKGLIBDIR "/" HOOKS_SO);
	free(cand[0]);
	free(cand[1]);
	return found;
}

/* mkdir -p with mode 0750 for the folders it creates. */
static int mkdir_p(const char *path)
{
	char *p = strdup(path), *s;
	struct stat st;
	int ret = 0;

	if (!p)
		return -ENOMEM;
	for (s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;

		*s = '\0';
		if (mkdir(p, 0750) < 0 && (errno != EEXIST || stat(p, &st) < 0 || !S_ISDIR(st.st_mode))) {
			ret = errno == EEXIST ? -ENOTDIR : -errno;
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	free(p);
	return ret;
}

struct run {
	char *dir;   /* absolute path of the run folder */
	char *shown; /* the same as the user named it, for messages */
	char *hooks; /* absolute path of the recorder library */
};

/* Creates {output}/msmemscope_{PID}_{timestamp}/ (never an existing one). */
static void run_create(struct run *run, const char *output)
{
	char stamp[32], *absout, *name;
	time_t now = time(NULL);
	struct tm tm;
	int err;

	err = mkdir_p(output);
	if (err)
		die(1, "cannot create the output folder %s: %s", output, strerror(-err));
	absout = realpath(output, NULL);
	if (!absout)
		die(1, "%s: %s", output, strerror(errno));
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
	name = xasprintf("msmemscope_%ld_%s", (long)getpid(), stamp);
	run->dir = xasprintf("%s/%s", absout, name);
	run->shown = xasprintf("%s%s%s", output, output[strlen(output) - 1] == '/' ? "" : "/", name);
	if (strlen(run->dir) + 64 >= PATH_MAX)
		die(1, "%s: path too long", run->dir);
	if (mkdir(run->dir, 0750) < 0)
		die(1, "cannot create the run folder %s: %s%s", run->shown, strerror(errno),
		    errno == EEXIST ? " (not overwriting it)" : "");
	free(absout);
	free(name);
}

/* Sets the environment the recorder reads; the child inherits it. */
static void env_setup(const struct run *run, const struct opts *o)
{
	static const struct {
		unsigned bit;
		const char *name;
	} ev_names[] = { { EV_ALLOC, "alloc" }, { EV_FREE, "free" }, { EV_LAUNCH, "launch" }, { EV_ACCESS, "access" } };
	const char *old = getenv("LD_PRELOAD");
	char events[64] = "", steps[STEPS_MAX * 12] = "", *preload, *config;
	size_t n = 0;

	/* ld.so splits LD_PRELOAD at spaces and colons. */
	if (strpbrk(run->hooks, " :"))
		die(1,
		    "%s: the recorder's path holds a space or a colon, which LD_PRELOAD cannot carry; "
		    "set MSMEMSCOPE_HOOKS to a copy elsewhere",
		    run->hooks);
	preload = old && *old ? xasprintf("%s:%s", run->hooks, old) : xasprintf("%s", run->hooks);

	for (size_t i = 0; i < sizeof(ev_names) / sizeof(ev_names[0]); i++)
		if (o->events & ev_names[i].bit)
			n += (size_t)snprintf(events + n, sizeof(events) - n, "%s%s", n ? "," : "", ev_names[i].name);
	n = 0;
	for (unsigned i = 0; i < o->nsteps; i++)
		n += (size_t)snprintf(steps + n, sizeof(steps) - n, "%s%u", i ? "," : "", o->steps[i]);
	config = xasprintf("call_stack=%u;events=%s;collect=%s;%s%s%sfollow_exec=%d;log_level=%s", o->call_stack,
			   events, o->deferred ? "deferred" : "immediate", o->nsteps ? "steps=" : "", steps,
			   o->nsteps ? ";" : "", o->follow_exec, log_level_names[o->log_level]);

	if (setenv("LD_PRELOAD", preload, 1) < 0 || setenv("MSMEMSCOPE_LOG_DIR", run->dir, 1) < 0 ||
	    setenv("MSMEMSCOPE_CONFIG", config, 1) < 0)
		die(1, "cannot set the environment: %s", strerror(errno));
	note("recording into %s", run->dir);
	note("LD_PRELOAD=%s", preload);
	note("MSMEMSCOPE_CONFIG=%s", config);
	free(preload);
	free(config);
}

/* ---- running the program ---- */

/* Checks prog the way a shell would before anything is created, so a typo
 * leaves no empty run folder behind. Returns 0, or the exit status after
 * printing why. */
static int check_program(const char *prog)
{
	const char *path, *p, *end;
	struct stat st;
	bool denied = false;

	if (strchr(prog, '/')) {
		if (stat(prog, &st) < 0) {
			fprintf(stderr, "%s: %s: %s\n", cli_progname, prog, strerror(errno));
			return errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
		}
		if (S_ISDIR(st.st_mode) || access(prog, X_OK) < 0) {
			fprintf(stderr, "%s: %s: %s\n", cli_progname, prog,
				S_ISDIR(st.st_mode) ? "Is a directory" : strerror(errno));
			return EXIT_NOEXEC;
		}
		return 0;
	}
	path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin"; /* what execvp() searches then */
	for (p = path;; p = end + 1) {
		end = strchrnul(p, ':');
		char *cand = end == p ? xasprintf("./%s", prog) : xasprintf("%.*s/%s", (int)(end - p), p, prog);

		if (stat(cand, &st) == 0 && !S_ISDIR(st.st_mode)) {
			if (access(cand, X_OK) == 0) {
				free(cand);
				return 0;
			}
			denied = true;
		}
		free(cand);
		if (!*end)
			break;
	}
	if (denied) {
		fprintf(stderr, "%s: %s: Permission denied\n", cli_progname, prog);
		return EXIT_NOEXEC;
	}
	fprintf(stderr, "%s: %s: command not found\n", cli_progname, prog);
	return EXIT_NOTFOUND;
}

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

/* Runs the program and waits for it. Returns its wait status in *status and
 * its pid; exits 126/127 if it could not be executed. */
static pid_t run_program(const struct run *run, char **argv, int *status)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, fwd = { .sa_handler = forward_signal };
	struct sigaction old_int, old_quit, old_term, old_hup;
	sigset_t block, old_mask;
	int pipefd[2], exec_errno = 0;
	ssize_t got;
	pid_t pid;

	/* The child reports a failed exec through a close-on-exec pipe: EOF
	 * means the exec succeeded. */
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		die(1, "pipe: %s", strerror(errno));

	/* Like system(): ignore SIGINT and SIGQUIT while the program runs (the
	 * terminal sends them to it too), forward SIGTERM and SIGHUP. The
	 * forwarding handlers are blocked until child_pid is known. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old_mask);
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	sigaction(SIGTERM, &fwd, &old_term);
	sigaction(SIGHUP, &fwd, &old_hup);

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die(1, "fork: %s", strerror(errno));
	if (pid == 0) {
		int err;

		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		sigaction(SIGHUP, &old_hup, NULL);
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		close(pipefd[0]);
		execvp(argv[0], argv);
		err = errno;
		if (write(pipefd[1], &err, sizeof(err)) < 0)
			_exit(EXIT_NOEXEC);
		_exit(err == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
	}
	child_pid = pid;
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	close(pipefd[1]);
	do
		got = read(pipefd[0], &exec_errno, sizeof(exec_errno));
	while (got < 0 && errno == EINTR);
	close(pipefd[0]);

	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR)
			die(1, "waitpid: %s", strerror(errno));
	}
	child_pid = 0;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);

	if (got == (ssize_t)sizeof(exec_errno)) {
		fprintf(stderr, "%s: %s: cannot execute: %s\n", cli_progname, argv[0], strerror(exec_errno));
		rmdir(run->dir); /* nothing was recorded; leave no empty folder */
		exit(exec_errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
	}
	return pid;
}

/* ---- the summary ---- */

/* What one log says, and how its process ended. */
struct log_result {
	mms_log_info_t info;
	mms_summary_t sum;
	char *exe;        /* info.exe and info.damage, copied: the log owns */
	char *damage;     /* the originals, and log_read() closes it */
	char *next;       /* the log of the image it exec'd, or NULL */
	int replay_error; /* mms_summarize() stopped early with this */
};

/* "812 bytes", or "4.0 KiB (4096 bytes)" when rounded. */
static const char *bytes_str(uint64_t n, char *buf, size_t cap)
{
	char h[32];

	human_bytes(n, h, sizeof(h));
	if (n < 1024)
		snprintf(buf, cap, "%s", h);
	else
		snprintf(buf, cap, "%s (%" PRIu64 " bytes)", h, n);
	return buf;
}

/* Where a log's process went on, when it exec'd: memscope_P.mms is
 * followed by memscope_P.exec1.mms, memscope_P.execN.mms by exec{N+1}.
 * Returns the successor's name (malloc'd) if that log exists. */
static char *exec_successor(const char *dir, const char *name)
{
	unsigned long pid, n = 0;
	char *next, *path;
	struct stat st;

	if (sscanf(name, "memscope_%lu.exec%lu.mms", &pid, &n) < 1)
		return NULL;
	next = xasprintf("memscope_%lu.exec%lu.mms", pid, n + 1);
	path = xasprintf("%s/%s", dir, next);
	if (stat(path, &st) < 0) {
		free(next);
		next = NULL;
	}
	free(path);
	return next;
}

static void log_result_free(struct log_result *r)
{
	free(r->exe);
	free(r->damage);
	free(r->next);
}

/* Opens and summarizes the log dir/name into *r. Returns 0 (free *r with
 * log_result_free()); -ENOENT when there is no such log; another negative
 * code after warning why it could not be read. */
static int log_read(const char *dir, const char *name, struct log_result *r)
{
	char *path = xasprintf("%s/%s", dir, name);
	mms_open_error_t oerr = { 0 };
	mms_log_t *log;
	int err;

	memset(r, 0, sizeof(*r));
	err = mms_log_open_ex(path, &log, &oerr);
	free(path);
	if (err == -ENOENT)
		return err;
	if (err < 0) {
		if (oerr.what[0])
			WARN("%s: cannot read the log: %s (offset %" PRIu64 ")", name, oerr.what, oerr.offset);
		else
			WARN("%s: cannot read the log: %s", name, mms_strerror(err));
		return err;
	}
	mms_log_get_info(log, &r->info);
	err = mms_summarize(log, &r->sum);
	r->exe = xstrdup(r->info.exe ? r->info.exe : "");
	r->damage = r->info.damage ? xstrdup(r->info.damage) : NULL;
	r->info.exe = NULL;
	r->info.damage = NULL;
	mms_log_close(log);
	if (err < 0 && err != MMS_ECORRUPT && err != MMS_EORDER) {
		WARN("%s: cannot replay the log: %s", name, mms_strerror(err));
		log_result_free(r);
		return err;
	}
	r->replay_error = err < 0 ? err : 0;
	r->next = exec_successor(dir, name);
	return 0;
}

/* How the log ends, for the "live at ..." label. */
static const char *log_end(const struct log_result *r)
{
	return r->info.complete ? "exit" : r->next ? "exec" : "log end";
}

/* Warnings about a log cut short or damaged. The caller has already said
 * when the program was killed, so that is not repeated. */
static void log_warn_state(const char *name, const struct log_result *r, bool killed)
{
	const mms_log_info_t *info = &r->info;

	if (info->cut)
		WARN("%s: recording stopped early (%s); the log covers what came before", name,
		     info->cut_errno ? strerror(info->cut_errno) : "no reason recorded");
	else if (!info->complete && !r->next && !killed)
		WARN("%s: the process did not reach exit (it left by _exit, was killed, or is still running); "
		     "the log ends at its last whole record",
		     name);
	if (info->damaged)
		WARN("%s: damaged at offset %" PRIu64 " (%s); the summary covers the events before it", name,
		     info->damage_offset, r->damage ? r->damage : mms_strerror(info->damage_error));
	else if (r->replay_error)
		WARN("%s: replay stopped early (%s); the summary covers the events before it", name,
		     mms_strerror(r->replay_error));
	if (info->lost_events)
		WARN("%s: %" PRIu64 " events were lost while recording", name, info->lost_events);
}

/* Three lines for one memory kind; at_exit flags blocks live at exit
 * ("leaked at exit", or "still mapped at exit" for mappings). */
static void print_memory(const char *label, const mms_kind_summary_t *k, const struct log_result *r,
			 const char *at_exit)
{
	char a[64], live[64];
	char *at = xasprintf("  live at %s", log_end(r));

	fprintf(stderr, "  %-17s %" PRIu64 " allocations, %" PRIu64 " frees, %s allocated\n", label, k->allocs,
		k->frees, bytes_str(k->bytes_allocated, a, sizeof(a)));
	fprintf(stderr, "  %-17s %s\n", "  peak live", bytes_str(k->peak_bytes, a, sizeof(a)));
	fprintf(stderr, "  %-17s %" PRIu64 " block%s, %s%s\n", at, k->live_blocks, k->live_blocks == 1 ? "" : "s",
		bytes_str(k->live_bytes, live, sizeof(live)), k->live_blocks && r->info.complete ? at_exit : "");
	free(at);
}

/* The summary of the program's own log, on stderr. */
static void print_main_summary(const struct run *run, char **argv, pid_t pid, int status)
{
	char *name = xasprintf("memscope_%ld.mms", (long)pid);
	const mms_summary_t *sum;
	struct log_result r;
	int err;

	err = log_read(run->dir, name, &r);
	if (err == -ENOENT)
		WARN("%s (pid %ld) left no log in %s: the recorder was not loaded into it "
		     "(a statically linked or setuid program, or one that resets LD_PRELOAD, is not recorded)",
		     argv[0], (long)pid, run->shown);
	if (err < 0)
		goto out;
	/* A process that left by _exit() (shells do) has no end record, but
	 * the wait status says it exited: its last record is its end. */
	if (WIFEXITED(status) && !r.info.cut && !r.next)
		r.info.complete = 1;
	log_warn_state(name, &r, WIFSIGNALED(status));

	sum = &r.sum;
	fprintf(stderr, "%s: recorded %s (pid %ld) to %s/%s\n", cli_progname, argv[0], (long)pid, run->shown, name);
	fprintf(stderr, "  %-17s %" PRIu64 "  (", "events", sum->events);
	for (int k = 1, first = 1; k < MMS_EV_KIND_COUNT; k++) {
		if (!sum->by_kind[k])
			continue;
		fprintf(stderr, "%s%s %" PRIu64, first ? "" : ", ", cli_event_kind_name((unsigned)k), sum->by_kind[k]);
		first = 0;
	}
	fprintf(stderr, ")\n");
	print_memory("heap (malloc)", &sum->mem[MMS_MEM_HOST], &r, "   <- leaked at exit");
	if (sum->mem[MMS_MEM_MMAP].allocs || sum->mem[MMS_MEM_MMAP].frees)
		print_memory("mmap", &sum->mem[MMS_MEM_MMAP], &r, "   <- still mapped at exit");
	if (sum->mem[MMS_MEM_POOL].allocs || sum->mem[MMS_MEM_POOL].frees)
		print_memory("pools (API)", &sum->mem[MMS_MEM_POOL], &r, "   <- never released to the pool");
	if (sum->steps)
		fprintf(stderr, "  %-17s %" PRIu64 "\n", "steps", sum->steps);
	fprintf(stderr, "  %-17s %" PRIu64 "\n", "threads", sum->threads);
	if (sum->unmatched_frees)
		fprintf(stderr, "  %-17s %" PRIu64 " (frees of an address that was not live)\n", "bad frees",
			sum->unmatched_frees);
	if (sum->double_allocs)
		fprintf(stderr, "  %-17s %" PRIu64 " (an address handed out while still live)\n", "double allocs",
			sum->double_allocs);
	log_result_free(&r);
out:
	free(name);
}

/* Orders logs by pid, then each process's images in exec order. */
static int cmp_logs(const struct dirent **a, const struct dirent **b)
{
	unsigned long pa = 0, pb = 0, ea = 0, eb = 0;

	sscanf((*a)->d_name, "memscope_%lu.exec%lu", &pa, &ea);
	sscanf((*b)->d_name, "memscope_%lu.exec%lu", &pb, &eb);
	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (ea != eb)
		return ea < eb ? -1 : 1;
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_log(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return strncmp(d->d_name, "memscope_", 9) == 0 && n > 4 && strcmp(d->d_name + n - 4, ".mms") == 0;
}

/* One line for each log in the run folder besides the program's own:
 * forked children and exec'd images. */
static void print_other_logs(const struct run *run, pid_t pid)
{
	char *main_name = xasprintf("memscope_%ld.mms", (long)pid);
	struct dirent **list;
	int n;

	n = scandir(run->dir, &list, is_log, cmp_logs);
	if (n < 0) {
		WARN("cannot list %s: %s", run->shown, strerror(errno));
		free(main_name);
		return;
	}
	for (int i = 0; i < n; i++) {
		const char *name = list[i]->d_name;
		const mms_log_info_t *info;
		struct log_result r;
		char b[64];

		if (strcmp(name, main_name) != 0 && log_read(run->dir, name, &r) == 0) {
			info = &r.info;
			fprintf(stderr,
				"  also %s: %s, pid %" PRIu64 "%s%s: %" PRIu64 " events, %" PRIu64 " heap block%s "
				"(%s) live at %s%s%s%s\n",
				name, strstr(name, ".exec") ? "exec'd image" : "forked child", info->pid,
				*r.exe ? ", " : "", r.exe, r.sum.events, r.sum.mem[MMS_MEM_HOST].live_blocks,
				r.sum.mem[MMS_MEM_HOST].live_blocks == 1 ? "" : "s",
				human_bytes(r.sum.mem[MMS_MEM_HOST].live_bytes, b, sizeof(b)), log_end(&r),
				info->cut ? "; recording was cut" : "", info->damaged ? "; damaged" : "",
				info->lost_events ? "; events lost" : "");
			log_result_free(&r);
		}
		free(list[i]);
	}
	free(list);
	free(main_name);
}

static const char *signal_name(int sig)
{
	static char buf[24];
	const char *abbrev = sigabbrev_np(sig);

	if (!abbrev)
		return "unknown signal";
	snprintf(buf, sizeof(buf), "SIG%s", abbrev);
	return buf;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct run run = { 0 };
	int status, ret;
	pid_t pid;

	cli_init(NULL);
	parse_args(argc, argv, &o);
	ret = check_program(o.argv[0]);
	if (ret) {
		free(o.output);
		return ret;
	}
	run.hooks = find_hooks();
	run_create(&run, o.output);
	env_setup(&run, &o);

	pid = run_program(&run, o.argv, &status);
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		fprintf(stderr, "%s: %s killed by signal %d (%s)%s\n", cli_progname, o.argv[0], sig, signal_name(sig),
			WCOREDUMP(status) ? ", core dumped" : "");
		ret = 128 + sig;
	} else {
		ret = WEXITSTATUS(status);
	}

	fflush(stdout);
	if (!o.record_only) {
		print_main_summary(&run, o.argv, pid, status);
		print_other_logs(&run, pid);
	} else if (log_level <= LOG_WARN) {
		/* Record only: no replay, but say where the logs went. */
		fprintf(stderr, "%s: recorded %s (pid %ld) into %s/\n", cli_progname, o.argv[0], (long)pid, run.shown);
	}
	free(run.dir);
	free(run.shown);
	free(run.hooks);
	free(o.output);
	return ret;
}
