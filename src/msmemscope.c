/* SPDX-License-Identifier: MIT */
/* msmemscope.c: the launcher: runs a program with the recorder preloaded
 * into a fresh run folder, passes its exit status through and summarizes
 * the log it left. */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis.h"
#include "cli.h"
#include "launch.h"
#include "progress.h"

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
	char *config;
	int status, ret;
	struct live *lv = NULL;
	int killed_by = 0;
	pid_t pid;

	cli_init(NULL);
	parse_args(argc, argv, &o);
	/* After the run, a signal cancels the report (the program's run
	 * sets its own handling: launch-run.c). */
	progress_catch_signals();
	if (o.compare) {
		struct an_compare_args a = { { o.input[0], o.input[1] }, { 0, 0 }, o.level };
		struct an_opts ao = { .outdir = o.output, .top = 10 };

		ret = an_compare(&a, &ao, stdout);
		if (fflush(stdout) || ferror(stdout))
			ret = CLI_EXIT_FAILURE;
		opts_free(&o);
		return ret;
	}
	if (o.print_env) {
		/* The environment of a run, for someone else to start the
		 * program in (memscope.gdb's exec-wrapper, a script). */
		char *dir;

		run.hooks = find_hooks();
		config = env_config(&o);
		dir = output_create(o.output);
		env_print(run.hooks, dir, config, &o);
		ret = fflush(stdout) || ferror(stdout) ? CLI_EXIT_FAILURE : 0;
		free(dir);
		free(config);
		free(run.hooks);
		opts_free(&o);
		return ret;
	}
	ret = check_program(o.argv[0]);
	if (ret) {
		opts_free(&o);
		return ret;
	}
	run.hooks = find_hooks();
	config = env_config(&o);
	run_create(&run, o.output);
	env_setup(run.hooks, run.dir, config, &o);
	free(config);

	pid = run_program(&run, o.argv, &o, &status, &lv);
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		fprintf(stderr, "%s: %s killed by signal %d (%s)%s\n", cli_progname, o.argv[0], sig, signal_name(sig),
			WCOREDUMP(status) ? ", core dumped" : "");
		ret = 128 + sig;
		killed_by = sig;
	} else {
		ret = WEXITSTATUS(status);
	}

	fflush(stdout);
	if (!o.record_only) {
		uint64_t errors = 0;
		int rc = report_run(&run, o.argv, pid, status, &o, lv, &errors);

		if (rc == -ENOENT) {
			/* Said once; no analysis or dump of a log that is not
			 * there, and no empty run folder left behind. */
			rmdir(run.dir);
			goto out;
		}
		if (rc && ret == 0)
			ret = 1;
		/* As valgrind's --error-exitcode: the findings decide. */
		if (errors && o.error_exitcode)
			ret = o.error_exitcode;
	} else if (log_level <= LOG_WARN) {
		/* Record only: no replay, but say where the logs went. */
		fprintf(stderr, "%s: recorded %s (pid %ld) into %s/\n", cli_progname, o.argv[0], (long)pid, run.shown);
	}
	/* A failed dump is msmemscope's failure, not the program's: say so,
	 * and keep the program's status unless it succeeded. The report
	 * wrote it, in its pass, unless there was none. */
	if (o.data_format && o.record_only && write_dump(&run, pid, o.data_format, o.analyses) && ret == 0)
		ret = 1;
out:
	live_free(lv);
	free(run.dir);
	free(run.shown);
	free(run.hooks);
	opts_free(&o);
	/* A killed program's status is its signal, whatever the findings
	 * (--error-exitcode) and the report, as under valgrind. */
	if (killed_by)
		cli_die_of(killed_by);
	return ret;
}
