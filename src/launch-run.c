/* SPDX-License-Identifier: MIT */
/* launch-run.c: the launcher's set-up and run: finds the recorder library,
 * creates the run folder, sets the environment the recorder reads and runs
 * the program under it. */
#define _GNU_SOURCE /* strchrnul, pipe2 */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "launch.h"

#define EXIT_NOEXEC 126
#define EXIT_NOTFOUND 127

/* ---- messages ---- */

/* Notes only at --log-level=info. */
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

/* ---- set-up: recorder library, run folder, environment ---- */

static bool is_readable_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

/* Returns the absolute path of the recorder library (malloc'd), or exits 1
 * naming every place it looked. */
char *find_hooks(void)
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

/* mkdir -p with mode 0750 (less the umask) for the folders it creates;
 * run by root, 0751 whatever the umask, so that a process of the
 * program's that takes another user's identity reaches the run folder
 * (run_create). */
static int mkdir_p(const char *path)
{
	int root = geteuid() == 0;
	mode_t mode = root ? 0751 : 0750;
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
		if (mkdir(p, mode) == 0) {
			if (root && chmod(p, mode) < 0) {
				ret = -errno;
				break;
			}
		} else if (errno != EEXIST || stat(p, &st) < 0 || !S_ISDIR(st.st_mode)) {
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

char *output_create(const char *output)
{
	char *abs;
	int err = mkdir_p(output);

	if (err)
		die(1, "cannot create the output folder %s: %s", output, strerror(-err));
	abs = realpath(output, NULL);
	if (!abs)
		die(1, "%s: %s", output, strerror(errno));
	return abs;
}

/* Creates {output}/msmemscope_{PID}_{timestamp}/ (never an existing one). */
void run_create(struct run *run, const char *output)
{
	char stamp[32], *absout = output_create(output), *name;
	time_t now = time(NULL);
	struct tm tm;

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
	/* Run by root, the program may take another user's identity (a
	 * server's workers, su, a service's privilege drop): those processes
	 * may create their logs here too, as in /tmp (sticky: none removes
	 * another's; without read: none lists the folder). Logs are created
	 * exclusively, never through a link. */
	if (geteuid() == 0 && chmod(run->dir, 01733) < 0)
		die(1, "cannot set the mode of the run folder %s: %s", run->shown, strerror(errno));
	free(absout);
	free(name);
}

char *env_config(const struct opts *o)
{
	mms_config_error_t err = { .expected = "" };
	size_t len = mms_config_format(&o->rec, NULL, 0);
	char *config = xmalloc(len + 1);
	mms_config_t check;

	mms_config_format(&o->rec, config, len + 1);
	/* What the recorder will read: this text, and the variables of single
	 * keys that the program inherits. A bad one is refused now rather than
	 * ignored by the recorder with a warning in the program's stderr. */
	if (mms_config_getenv(&check, config, &err))
		die(CLI_EXIT_USAGE, "%s=%s in the environment: expected %s; correct it or unset it", err.source,
		    err.value, err.expected);
	return config;
}

/* The variables the program gets, and how each meets a value the
 * environment holds already. One table for env_setup() and env_print(). */
enum env_how {
	ENV_SET,     /* replaces it */
	ENV_PREPEND, /* goes first in the list, before it (LD_PRELOAD: ':') */
	ENV_DEFAULT, /* only when it is unset or empty: another tool's stays */
};
struct env_var {
	const char *name;
	const char *value;
	enum env_how how;
};

/* Where the msmemscope Python package is for the recorder at hooks: the
 * build tree's (hooks/python/build beside hooks/.libs) or the installed
 * one. Returns a malloc'd path, or NULL when there is none. */
static char *python_package(const char *hooks)
{
	char *dir = xstrdup(hooks), *slash = strrchr(dir, '/'), *pkg, *boot;

	if (slash && slash - dir >= 6 && !strncmp(slash - 6, "/.libs", 6)) {
		slash[-6] = '\0';
		pkg = xasprintf("%s/python/build", dir);
	} else {
		pkg = xstrdup(MMS_PYTHON_DIR);
	}
	free(dir);
	boot = xasprintf("%s/msmemscope/boot/sitecustomize.py", pkg);
	if (!*pkg || !is_readable_file(boot)) {
		free(pkg);
		pkg = NULL;
	}
	free(boot);
	return pkg;
}

/* Python stacks (--call-stack=python:N), C stacks and aten operators
 * (--level=op, torch_ops): PYTHONPATH leads to the package's boot folder,
 * whose sitecustomize.py imports msmemscope (which installs the profile
 * hook that keeps the Python frames, and scopes importlib's loading of
 * modules: with stacks, what native code allocates while a module is
 * imported would otherwise be the program's leak at exit), has the
 * program's import of torch turn its operators into launches, and then
 * runs the sitecustomize it hides; with Python stacks also
 * PYTHONMALLOC=malloc, unless --python-allocator=pymalloc, so that every
 * object is a malloc block. */
static size_t env_python(struct env_var *vars, const char *hooks, const struct opts *o)
{
	static char *path;
	size_t n = 0;
	char *pkg;

	if (!o || (!o->rec.python_stack && !o->rec.torch_ops && !o->rec.call_stack))
		return 0;
	if (!path) {
		pkg = python_package(hooks);
		if (!pkg) {
			/* --level=op on a program that is not Python's needs none. */
			if (o->rec.python_stack)
				WARN("--call-stack=python: the msmemscope Python package is not installed (configure "
				     "found no Python headers): no Python frames are recorded");
			return 0;
		}
		path = xasprintf("%s/msmemscope/boot:%s", pkg, pkg);
		free(pkg);
		if (strchr(path + strlen(path) - 1, ':'))
			die(1, "%s: the Python package's path ends in ':'", path);
	}
	vars[n++] = (struct env_var){ "PYTHONPATH", path, ENV_PREPEND };
	if (o->rec.python_stack && !o->pymalloc)
		vars[n++] = (struct env_var){ "PYTHONMALLOC", "malloc", ENV_DEFAULT };
	return n;
}

/* Fills vars (6 entries) and returns how many there are. */
static size_t env_vars(struct env_var *vars, const char *hooks, const char *log_dir, const char *config,
		       const struct opts *o)
{
	size_t n = 0;

	/* ld.so splits LD_PRELOAD at spaces and colons. */
	if (strpbrk(hooks, " :"))
		die(1,
		    "%s: the recorder's path holds a space or a colon, which LD_PRELOAD cannot carry; "
		    "set MSMEMSCOPE_HOOKS to a copy elsewhere",
		    hooks);
	vars[n++] = (struct env_var){ "LD_PRELOAD", hooks, ENV_PREPEND };
	if (log_dir)
		vars[n++] = (struct env_var){ "MSMEMSCOPE_LOG_DIR", log_dir, ENV_SET };
	vars[n++] = (struct env_var){ "MSMEMSCOPE_CONFIG", config, ENV_SET };
	/* NVTX loads the library this names at the program's first NVTX
	 * call: the recorder, preloaded already, then gets its ranges
	 * (hooks/nvtx.c). A tool the user named keeps them. */
	vars[n++] = (struct env_var){ "NVTX_INJECTION64_PATH", hooks, ENV_DEFAULT };
	n += env_python(vars + n, hooks, o);
	return n;
}

void env_setup(const char *hooks, const char *log_dir, const char *config, const struct opts *o)
{
	struct env_var vars[6];
	size_t n = env_vars(vars, hooks, log_dir, config, o);

	if (log_dir)
		note("recording into %s", log_dir);
	for (size_t i = 0; i < n; i++) {
		const char *old = getenv(vars[i].name);
		char *value = NULL;
		int rc = 0;

		switch (vars[i].how) {
		case ENV_SET:
			rc = setenv(vars[i].name, vars[i].value, 1);
			break;
		case ENV_PREPEND:
			value = old && *old ? xasprintf("%s:%s", vars[i].value, old) : xstrdup(vars[i].value);
			rc = setenv(vars[i].name, value, 1);
			break;
		case ENV_DEFAULT:
			if (old && *old && strcmp(old, vars[i].value)) {
				note("%s=%s was set already: left alone%s", vars[i].name, old,
				     strcmp(vars[i].name, "NVTX_INJECTION64_PATH")
					     ? ""
					     : ", so NVTX ranges go to that library, not to msmemscope");
				continue;
			}
			rc = setenv(vars[i].name, vars[i].value, 1);
			break;
		}
		if (rc < 0)
			die(1, "cannot set the environment: %s", strerror(errno));
		note("%s=%s", vars[i].name, value ? value : vars[i].value);
		free(value);
	}
}

/* s as one word of a POSIX shell: in single quotes, a ' as '\''. */
static void sh_quote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	fputc('\'', f);
}

/* s inside a shell's double quotes: \, ", $ and ` escaped. */
static void sh_dquote(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (strchr("\\\"$`", *s))
			fputc('\\', f);
		fputc(*s, f);
	}
}

void env_print(const char *hooks, const char *log_dir, const char *config, const struct opts *o)
{
	struct env_var vars[6];
	size_t n = env_vars(vars, hooks, log_dir, config, o);

	for (size_t i = 0; i < n; i++) {
		const char *name = vars[i].name;

		printf("export %s=", name);
		switch (vars[i].how) {
		case ENV_SET:
			sh_quote(stdout, vars[i].value);
			break;
		case ENV_PREPEND:
			sh_quote(stdout, vars[i].value);
			printf("${%s:+:\"$%s\"}", name, name);
			break;
		case ENV_DEFAULT:
			printf("\"${%s:-", name);
			sh_dquote(stdout, vars[i].value);
			fputs("}\"", stdout);
			break;
		}
		putchar('\n');
	}
}

/* ---- running the program ---- */

/* Checks prog the way a shell would before anything is created, so a typo
 * leaves no empty run folder behind. Returns 0, or the exit status after
 * printing why. */
/* Why the recorder cannot be loaded into the program at path, or NULL:
 * the dynamic loader takes LD_PRELOAD only in dynamically linked programs
 * that do not run with other privileges than their caller's. */
static const char *unrecordable(const char *path, const struct stat *st)
{
	unsigned char buf[4096];
	const Elf64_Ehdr *eh = (const void *)buf;
	ssize_t n;
	int fd;

	if ((st->st_mode & S_ISUID) && st->st_uid != geteuid())
		return "it is set-user-ID, and the dynamic loader ignores LD_PRELOAD for such programs";
	if ((st->st_mode & S_ISGID) && st->st_gid != getegid())
		return "it is set-group-ID, and the dynamic loader ignores LD_PRELOAD for such programs";
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL; /* exec will say what is wrong */
	n = pread(fd, buf, sizeof buf, 0);
	close(fd);
	/* Only a 64-bit ELF file is judged; scripts name their interpreter,
	 * which the loader runs dynamically or not. */
	if (n < (ssize_t)sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > (uint64_t)n ||
	    eh->e_phnum > ((uint64_t)n - eh->e_phoff) / sizeof(Elf64_Phdr))
		return NULL;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, buf + eh->e_phoff + i * sizeof ph, sizeof ph);
		if (ph.p_type == PT_INTERP)
			return NULL;
	}
	return "it is statically linked: the recorder is a library the dynamic loader preloads, and a static "
	       "program has no dynamic loader. Link it dynamically (without -static) to record it";
}

/* The program is one the recorder can be loaded into; otherwise says why
 * and returns 1. */
static int check_recordable(const char *prog, const char *path, const struct stat *st)
{
	const char *why = unrecordable(path, st);

	if (!why)
		return 0;
	fprintf(stderr, "%s: cannot record %s: %s\n", cli_progname, prog, why);
	return 1;
}

int check_program(const char *prog)
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
		return check_recordable(prog, prog, &st);
	}
	path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin"; /* what execvp() searches then */
	for (p = path;; p = end + 1) {
		end = strchrnul(p, ':');
		char *cand = end == p ? xasprintf("./%s", prog) : xasprintf("%.*s/%s", (int)(end - p), p, prog);

		if (stat(cand, &st) == 0 && !S_ISDIR(st.st_mode)) {
			if (access(cand, X_OK) == 0) {
				int r = check_recordable(prog, cand, &st);
				free(cand);
				return r;
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

/* A signal a process sent to the launcher (kill, sigqueue: si_code <= 0)
 * goes on to the program, whose pid the sender took it for. One the
 * kernel made (a terminal's Ctrl-C, Ctrl-\\, Ctrl-Z or hangup, sent to
 * the whole foreground group) the program got itself: not twice. The
 * launcher does not stop at SIGTSTP, SIGTTIN or SIGTTOU: it stops when
 * the program does (run_program()'s wait). */
static void forward_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (child_pid > 0 && si->si_code <= 0 && si->si_pid != (pid_t)child_pid)
		kill((pid_t)child_pid, sig);
}

/* The signals forwarded: all that a program may catch, but the launcher's
 * own faults (it dies of them as any program) and SIGCHLD. */
static int forwarded(int sig)
{
	switch (sig) {
	case SIGKILL:
	case SIGSTOP:
	case SIGCHLD:
	case SIGSEGV:
	case SIGBUS:
	case SIGFPE:
	case SIGILL:
	case SIGTRAP:
	case SIGABRT:
	case SIGSYS:
		return 0;
	default:
		return 1;
	}
}

static void restore_signals(const struct sigaction *old)
{
	for (int sig = 1; sig < NSIG; sig++)
		if (forwarded(sig) && old[sig].sa_handler != SIG_IGN)
			sigaction(sig, &old[sig], NULL);
}

/* Runs the program and waits for it. Returns its wait status in *status and
 * its pid; exits 126/127 if it could not be executed. */
pid_t run_program(const struct run *run, char **argv, const struct opts *o, int *status, struct live **lv)
{
	struct sigaction fwd = { .sa_sigaction = forward_signal, .sa_flags = SA_SIGINFO | SA_RESTART };
	static struct sigaction old[NSIG];
	sigset_t block, old_mask;
	int pipefd[2], exec_errno = 0;
	ssize_t got;
	pid_t pid;

	/* The child reports a failed exec through a close-on-exec pipe: EOF
	 * means the exec succeeded. */
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		die(1, "pipe: %s", strerror(errno));

	/* While the program runs, the signals sent to the launcher go on to
	 * it (forward_signal); those the launcher ignores stay ignored, as
	 * the program inherits them so. The handlers are blocked until
	 * child_pid is known. */
	sigemptyset(&block);
	for (int sig = 1; sig < NSIG; sig++)
		if (forwarded(sig))
			sigaddset(&block, sig);
	sigprocmask(SIG_BLOCK, &block, &old_mask);
	for (int sig = 1; sig < NSIG; sig++) {
		if (!forwarded(sig) || sigaction(sig, NULL, &old[sig]))
			continue;
		if (old[sig].sa_handler != SIG_IGN)
			sigaction(sig, &fwd, NULL);
	}

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die(1, "fork: %s", strerror(errno));
	if (pid == 0) {
		int err;

		restore_signals(old);
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
	*lv = got == 0 ? live_start(run, pid, o) : NULL;

	/* The program stopped (Ctrl-Z, SIGSTOP, raise(SIGSTOP)): the launcher
	 * stops too, so that its parent (a shell's job control) sees the job
	 * stopped, as it would see the program; continued (fg, bg, SIGCONT
	 * to the group or to the launcher, which forwards it), it waits on. */
	for (;;) {
		if (waitpid(pid, status, WUNTRACED) < 0) {
			if (errno != EINTR)
				die(1, "waitpid: %s", strerror(errno));
			continue;
		}
		if (!WIFSTOPPED(*status))
			break;
		kill(getpid(), SIGSTOP);
	}
	child_pid = 0;
	live_stop(*lv);
	restore_signals(old);
	/* The report goes on stderr, maybe into a pipe whose reader is gone
	 * (msmemscope ... 2>&1 | head): a write there fails with EPIPE, the
	 * launcher is not killed, and its status stays the program's. */
	signal(SIGPIPE, SIG_IGN);

	if (got == (ssize_t)sizeof(exec_errno)) {
		fprintf(stderr, "%s: %s: cannot execute: %s\n", cli_progname, argv[0], strerror(exec_errno));
		rmdir(run->dir); /* nothing was recorded; leave no empty folder */
		exit(exec_errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
	}
	return pid;
}
