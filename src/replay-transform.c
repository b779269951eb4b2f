/* SPDX-License-Identifier: MIT */
/* replay-transform.c: "msmemscope-replay transform FORMAT [options] LOG",
 * memray's transform reporter over a .mms log: the allocations live at the
 * high-water mark, leaked or temporary, as CSV, gprof2dot JSON or an SVG
 * flame graph. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "progress.h"
#include "logwords.h"
#include "replay-cli.h"

static void transform_usage(void)
{
	printf("Usage: %s transform FORMAT [OPTIONS] LOG\n"
	       "Write the allocations of a msmemscope log (.mms) that make its high-water mark\n"
	       "(or that leaked, or that were temporary) in a format other tools read, as\n"
	       "memray's transform does. Allocations are grouped by allocation stack, thread and\n"
	       "allocator; record with --call-stack=c:N to have stacks.\n"
	       "\n"
	       "Formats:\n"
	       "  csv         allocator,num_allocations,size,tid,thread_name,stack_trace\n"
	       "              (frames function;file;line joined by '|', most recent first)\n"
	       "  gprof2dot   gprof2dot's JSON profile (gprof2dot -f json FILE | dot -Tsvg)\n"
	       "  flamegraph  an interactive SVG flame graph, bytes per frame (open it in a\n"
	       "              browser: hover for bytes and allocations, click to zoom)\n"
	       "\n"
	       "Options:\n"
	       "  -o, --output FILE  the output file (default: beside LOG,\n"
	       "                     memscope-FORMAT-NAME.csv|json|svg for LOG NAME.mms)\n"
	       "  -f, --force        replace the output file if it exists\n"
	       "  --leaks            allocations leaked at the end of the log (live there, not\n"
	       "                     still reachable nor a runtime's), not those at the peak\n"
	       "  --temporary-allocation-threshold N\n"
	       "                     temporary allocations: freed by the thread that made them\n"
	       "                     after at most N other allocations of that thread\n"
	       "  --temporary-allocations\n"
	       "                     the same as --temporary-allocation-threshold=1\n"
	       "  --title TEXT       flamegraph: the title line\n"
	       "  -q, --quiet        no progress line (on a terminal, reading a log that lasts\n"
	       "                     more than half a second says on stderr how far it got)\n"
	       "  --help             print this help and exit\n"
	       "\n"
	       "A line on stderr names the file written with its figures. Exit status: 0 on\n"
	       "success, 1 when the log cannot be read or the file not written, 2 for a wrong\n"
	       "command line. See msmemscope-replay(1) and doc/transform.md.\n",
	       cli_progname);
}

struct topts {
	int format;
	const char *log, *output, *title;
	const char *selection_opt; /* the option that chose the selection */
	mms_transform_options_t t;
};

static void set_selection(struct topts *o, int selection, const char *opt)
{
	if (o->selection_opt && strcmp(o->selection_opt, opt))
		die_usage("transform: %s and %s cannot go together", o->selection_opt, opt);
	o->selection_opt = opt;
	o->t.selection = selection;
}

static void parse_transform(int argc, char **argv, struct topts *o)
{
	int options = 1, i;
	const char *v;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (options && a[0] == '-' && a[1]) {
			if (!strcmp(a, "--")) {
				options = 0;
			} else if (cli_opt_flag(a, "--help") || !strcmp(a, "-h")) {
				transform_usage();
				exit(0);
			} else if (cli_opt_value(argc, argv, &i, "--output", &v) ||
				   cli_opt_value(argc, argv, &i, "-o", &v)) {
				if (!*v)
					die_usage("transform: --output wants a file name");
				o->output = v;
			} else if (cli_opt_flag(a, "--quiet") || !strcmp(a, "-q")) {
				progress_quiet();
			} else if (cli_opt_flag(a, "--force") || !strcmp(a, "-f")) {
				o->t.out.overwrite = 1;
			} else if (cli_opt_flag(a, "--leaks")) {
				set_selection(o, MMS_TRANSFORM_LEAKS, "--leaks");
			} else if (cli_opt_value(argc, argv, &i, "--temporary-allocation-threshold", &v)) {
				set_selection(o, MMS_TRANSFORM_TEMPORARY, "--temporary-allocation-threshold");
				if (cli_parse_u64(v, &o->t.threshold))
					die_usage("transform: --temporary-allocation-threshold wants %s, not '%s'",
						  cli_u64_why(v), v);
			} else if (cli_opt_flag(a, "--temporary-allocations")) {
				set_selection(o, MMS_TRANSFORM_TEMPORARY, "--temporary-allocations");
				o->t.threshold = 1;
			} else if (cli_opt_value(argc, argv, &i, "--title", &v)) {
				o->title = v;
			} else {
				die_usage("transform: unknown option '%s'", a);
			}
			continue;
		}
		if (!o->format) {
			if (!strcmp(a, "csv"))
				o->format = MMS_TRANSFORM_CSV;
			else if (!strcmp(a, "gprof2dot"))
				o->format = MMS_TRANSFORM_GPROF2DOT;
			else if (!strcmp(a, "flamegraph"))
				o->format = MMS_TRANSFORM_FLAMEGRAPH;
			else
				die_usage("transform: no format '%s': csv, gprof2dot or flamegraph", a);
			continue;
		}
		if (o->log)
			die_usage("transform: one log at a time: '%s' and '%s'", o->log, a);
		o->log = a;
	}
	if (!o->format)
		die_usage("transform: no format given: csv, gprof2dot or flamegraph");
	if (!o->log)
		die_usage("transform: no log given");
	if (o->title && o->format != MMS_TRANSFORM_FLAMEGRAPH)
		die_usage("transform: --title goes with flamegraph");
}

/* What the stderr line counts, by format: one, and more. */
static const char *const unit_words[][2] = {
	[MMS_TRANSFORM_CSV] = { "row", "rows" },
	[MMS_TRANSFORM_GPROF2DOT] = { "call chain", "call chains" },
	[MMS_TRANSFORM_FLAMEGRAPH] = { "box", "boxes" },
};

/* What the selection chose, in words, into buf. The allocations live at
 * the end of a cut or damaged log are no leaks: say when they were live. */
static const char *selection_words(const mms_transform_options_t *t, const mms_log_info_t *in, char *buf, size_t cap)
{
	char when[128];

	if (t->selection == MMS_TRANSFORM_LEAKS && log_stops_early(in))
		snprintf(buf, cap, "live %s", log_live_when(in, when, sizeof(when)));
	else
		snprintf(buf, cap, "%s",
			 t->selection == MMS_TRANSFORM_LEAKS       ? "leaked"
			 : t->selection == MMS_TRANSFORM_TEMPORARY ? "temporary"
								   : "live at the peak");
	return buf;
}

int replay_transform_add(struct replay_transform *x, mms_pass_t *p, mms_log_t *log, mms_symbolizer_t *sym)
{
	mms_log_info_t info;
	int rc;

	mms_log_get_info(log, &info);
	selection_words(&x->t, &info, x->words, sizeof(x->words));
	if (x->t.selection == MMS_TRANSFORM_LEAKS && log_stops_early(&info) && !x->t.title) {
		snprintf(x->title, sizeof(x->title), "Allocations %s", x->words);
		x->t.title = x->title;
	}
	x->t.out.sym = sym;
	x->t.path = x->path;
	rc = mms_transform_add(p, &x->t, &x->res);
	if (rc == -EEXIST) {
		fprintf(stderr, "%s: %s: %s exists; %s\n", cli_progname, x->log_path, x->path, x->exists_hint);
		return CLI_EXIT_FAILURE;
	}
	if (rc) {
		fprintf(stderr, "%s: %s: cannot write %s: %s\n", cli_progname, x->log_path, x->path, mms_strerror(rc));
		return CLI_EXIT_FAILURE;
	}
	return 0;
}

int replay_transform_done(struct replay_transform *x, int pass_rc)
{
	const mms_transform_t *st = x->res;
	int rc = pass_rc ? pass_rc : st->status;

	if (rc) {
		/* A signal's cancel: the program ends by it, saying nothing. */
		if (!progress_caught())
			fprintf(stderr, "%s: %s: cannot write %s: %s\n", cli_progname, x->log_path, x->path,
				mms_strerror(rc));
	} else {
		fprintf(stderr,
			"%s: wrote %s: %" PRIu64 " allocation%s %s, %" PRIu64 " bytes, in %" PRIu64 " %s; peak %" PRIu64
			" bytes\n",
			cli_progname, x->path, st->allocations, st->allocations == 1 ? "" : "s", x->words, st->bytes,
			st->groups, unit_words[x->t.format][st->groups != 1], st->peak_bytes);
	}
	mms_transform_free(x->res);
	x->res = NULL;
	return rc ? CLI_EXIT_FAILURE : 0;
}

int replay_transform(int argc, char **argv)
{
	struct topts o = { 0 };
	struct replay_transform x = { 0 };
	struct an_opts ao = { 0 };
	mms_log_info_t info;
	struct an_ctx *c;
	char *name = NULL;
	mms_log_t *log;
	int n, st;

	cli_help_command = xasprintf("%s transform", cli_progname);
	parse_transform(argc, argv, &o);
	progress_catch_signals();
	log = replay_open_log(o.log);
	x.path = o.output;
	if (!x.path) {
		n = mms_transform_name(o.log, o.format, NULL, 0);
		name = xmalloc((size_t)n + 1);
		mms_transform_name(o.log, o.format, name, (size_t)n + 1);
		x.path = name;
	}
	x.t = o.t;
	x.t.format = o.format;
	x.t.title = o.title;
	x.log_path = o.log;
	x.exists_hint = "remove it, name another file with -o, or add -f";
	c = an_open(o.log, log, 0, &ao, stdout, &st);
	if (replay_transform_add(&x, c->pass, log, an_symbolizer(c)))
		exit(CLI_EXIT_FAILURE);
	c->subscribed++;
	an_pass(c);
	st = replay_transform_done(&x, c->pass_rc);
	/* Closed first: a file being written is removed (and a signal's
	 * cancel ends the program there). */
	an_close(c);
	if (st)
		exit(CLI_EXIT_FAILURE);
	free(name);
	mms_log_get_info(log, &info);
	replay_warn_log_state(o.log, &info, 0);
	replay_warn_fork(o.log, log);
	mms_log_close(log);
	return 0;
}
