/* SPDX-License-Identifier: MIT */
/* msmemscope-replay.c: the replay command: opens a .mms log and answers one
 * query (summary, a step, an event, a range of events, an export) or runs
 * the interactive stepper; "transform" is a subcommand (replay-transform.c). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "analysis.h"
#include "cli.h"
#include "progress.h"
#include "replay-cli.h"

enum query { Q_SUMMARY, Q_STEP, Q_EVENT, Q_RANGE, Q_INTERACTIVE, Q_EXPORT, Q_ANALYSIS, Q_COMPARE };

struct opts {
	const char *log;
	enum query query;
	const char *query_opt;    /* the option that chose it, for messages */
	uint64_t n, from, to;
	bool to_set;
	bool json;
	bool no_index;
	bool force;
	const char *export_fmt;
	const char *output;
	uint64_t depth, top;
	int stack_view;           /* --stack-view: enum mms_stack_view */
	unsigned analyses;        /* --analysis: mask over an_defs */
	const char *flamegraph;   /* --flamegraph FILE.svg */
	struct an_opts an;
	struct an_compare_args cmp; /* --compare-steps, --level */
	const char *level_opt;
	bool leak_kinds_set; /* --errors-for-leak-kinds given */
};

/* --buckets: the most rows usage.tsv may be asked for. */
#define MAX_BUCKETS 1000000

static void usage(void)
{
	printf("Usage: %s LOG [QUERY] [OPTIONS]\n"
	       "       %s transform csv|gprof2dot|flamegraph [OPTIONS] LOG   (see transform --help)\n"
	       "Replay a msmemscope event log (.mms): summarize it, show the state at a step\n"
	       "or an event, list events, step through it, or export msMemScope's dump.\n"
	       "\n"
	       "Queries (one at a time; --summary is the default):\n"
	       "  --summary         events by kind, allocations, frees, bytes, peak, live at the\n"
	       "                    end, threads, steps; for a forked child, what it inherited\n"
	       "                    from its parent (its replay starts from the parent's heap\n"
	       "                    at the fork); warnings about a cut or damaged log\n"
	       "  --step N          the state at the end of step N (from 1): live blocks and\n"
	       "                    bytes, the peak within the step, what the step allocated and\n"
	       "                    did not free (by allocation stack, largest first), each\n"
	       "                    operator launch with its memory, live bytes by owner tag\n"
	       "  --event N         event N (from 0) and the state just after it\n"
	       "  --from A [--to B] the events A to B (both included; default: to the end)\n"
	       "  -i, --interactive step through the log like a debugger; commands come from\n"
	       "                    the terminal or stdin ('help' lists them)\n"
	       "  --export FORMAT   write msMemScope's dump of every event: csv\n"
	       "                    (memscope_dump_{timestamp}.csv) or db (SQLite, with tables for\n"
	       "                    blocks, stacks, launches and steps; see doc/export.md); with\n"
	       "                    --analysis too, the analyses run first, and inefficient's\n"
	       "                    blocks get inefficient_type:TYPE in their MALLOC rows' Attr\n"
	       "  --analysis LIST   run analyses over the log, comma-separated (see below)\n"
	       "  --compare-steps N,M\n"
	       "                    compare the operator launches of step N (base) with those\n"
	       "                    of step M, aligned by name: each launch's net bytes on each\n"
	       "                    side and their difference, the largest differences printed,\n"
	       "                    all in DIR/compare/memory_compare_{timestamp}.csv\n"
	       "                    (DIR: --output-dir)\n"
	       "\n"
	       "Options:\n"
	       "  --json            print the answer as JSON, one object per line: one for a\n"
	       "                    query, one per analysis (decompose: one per tree), one\n"
	       "                    per event for --from\n"
	       "  --depth N         frames shown per stack (default 12, 0 = all)\n"
	       "  --stack-view V    which frames stacks show: mixed (default: the C frames,\n"
	       "                    with the Python frames in place of the eval loop frames\n"
	       "                    that ran them), c, or python (--call-stack=python:N)\n"
	       "  --top N           stacks, launches and inefficient blocks listed (default 10,\n"
	       "                    0 = all; 0 also lists every per-step leak line, of which\n"
	       "                    the first 100 are listed otherwise)\n"
	       "  -o, --output FILE the export's file (default: msMemScope's name, here)\n"
	       "  --force           let --export, an analysis or a compare replace a file\n"
	       "  --output-dir DIR  where analyses and compares write their files (default:\n"
	       "                    here; made when missing)\n"
	       "  --suppressions FILE\n"
	       "                    leaks: leave out the leaks whose allocation stack has a\n"
	       "                    frame (function, source file or module) matching a\n"
	       "                    'leak:PATTERN' line of FILE (LeakSanitizer's format)\n"
	       "  --show-runtime    leaks: list the blocks the C and C++ runtimes keep for\n"
	       "                    themselves (not leaks) by allocation stack\n"
	       "  --show-reachable  leaks: list the blocks the program still pointed to at exit\n"
	       "                    (not leaks: valgrind's \"still reachable\") by allocation stack\n"
	       "  --show-held       leaks: list the blocks the per-step rule found that the\n"
	       "                    program freed in a later step, before its last step ended\n"
	       "                    (not leaks: queues, prefetched input), and those the Python\n"
	       "                    package's sweep at exit freed, still in a cache or queue\n"
	       "                    when the steps ended, or of a stack that kept blocks in\n"
	       "                    one step only, by allocation stack\n"
	       "  --warmup-steps N  leaks: blocks allocated in steps 1 to N are never per-step\n"
	       "                    leaks (default 1, msMemScope's rule; 2 where the steps were\n"
	       "                    inferred from a PyTorch optimizer)\n"
	       "  --error-exitcode N\n"
	       "                    exit N (1-255) when the guard analysis has findings, or\n"
	       "                    leaks found leaks of the kinds --errors-for-leak-kinds\n"
	       "                    names or bad frees (double, invalid, mismatched), as\n"
	       "                    valgrind's\n"
	       "  --errors-for-leak-kinds LIST\n"
	       "                    definite, indirect, possible, reachable, step, all or\n"
	       "                    none (default definite,possible)\n"
	       "  --leak-marks NAME[,N]\n"
	       "                    leaks: also msMemScope's offline rule: a block allocated\n"
	       "                    between mark N of that name (default 1) and the next one,\n"
	       "                    still live at the mark after those, is a leak (marks:\n"
	       "                    msmemscope_mark(), mstxMarkA(), nvtxMarkA(), Python's\n"
	       "                    msmemscope.mark())\n"
	       "  --idle-threshold N\n"
	       "                    inefficient: launches between two accesses that make a\n"
	       "                    block idle (default 3000)\n"
	       "  --min-size N      inefficient: smallest block considered, in bytes\n"
	       "  --buckets N       usage: points of the timeline, 1 to 1000000 (default: every\n"
	       "                    time live bytes changed at)\n"
	       "  --at-event N      decompose: the state just after event N (from 0), through\n"
	       "                    the seek index, instead of the end and the peak\n"
	       "  --level op|kernel compare: operator launches (default) or kernel launches\n"
	       "  --flamegraph FILE.svg\n"
	       "                    draw the allocations live at the peak as an interactive\n"
	       "                    flame graph (alone, or beside --analysis; leaked or\n"
	       "                    temporary ones: transform flamegraph --leaks ...)\n"
	       "  --plot FILE.svg   usage: also draw live bytes over time, with step boundaries,\n"
	       "                    operator launches and the peak, as a self-contained SVG\n"
	       "                    (runs usage when --analysis does not name it)\n"
	       "  --memory KINDS    watermark, usage, leakage, decompose: the memory kinds\n"
	       "                    counted, from host (the malloc family), mmap, pool and\n"
	       "                    device (CUDA memory); default: host,mmap,pool (decompose\n"
	       "                    shows every kind, at the peak of those three)\n"
	       "  --no-index        neither read nor write LOG.idx (the seek index is then built\n"
	       "                    in memory on each run)\n"
	       "  -q, --quiet       no progress line: on a terminal, work over a log that\n"
	       "                    lasts more than half a second says on stderr how far it got\n"
	       "  --list-analyses   print the names of the analyses, one per line, and exit\n"
	       "  --help            print this help and exit\n"
	       "  --version         print the version and exit\n"
	       "\n"
	       "Analyses (--analysis LIST, comma-separated; see doc/analyses.md):\n",
	       cli_progname, cli_progname);
	an_print_help(stdout);
	printf("\n"
	       "Seeking (--step, --event, -i) uses checkpoints of the replay kept in an index\n"
	       "beside the log, LOG.idx, built on the first query and rebuilt when the log\n"
	       "changes.\n"
	       "\n"
	       "Exit status: 0 on success (a cut or damaged log is reported with warnings;\n"
	       "-i: when its commands ran, even one that answered an error), 1 when the log\n"
	       "cannot be read or the query fails, 2 for a wrong command line.\n"
	       "See msmemscope-replay(1), doc/replay.md and doc/log-format.md.\n");
}

static uint64_t number(const char *opt, const char *v)
{
	uint64_t n;

	if (cli_parse_u64(v, &n))
		die_usage("%s wants %s, not '%s'", opt, cli_u64_why(v), v);
	return n;
}

static void set_query(struct opts *o, enum query q, const char *opt)
{
	if (o->query_opt && o->query != q)
		die_usage("one query at a time: %s and %s", o->query_opt, opt);
	o->query = q;
	o->query_opt = opt;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	bool options = true;
	const char *v;
	int i;

	o->depth = 12;
	o->top = 10;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (options && a[0] == '-' && a[1]) {
			if (!strcmp(a, "--")) {
				options = false;
			} else if (cli_opt_flag(a, "--help")) {
				usage();
				exit(0);
			} else if (cli_opt_flag(a, "--list-analyses")) {
				for (const struct an_def *d = an_defs; d->name; d++)
					puts(d->name);
				exit(0);
			} else if (cli_opt_flag(a, "--version")) {
				printf("%s %s\n", cli_progname, PACKAGE_VERSION);
				exit(0);
			} else if (cli_opt_flag(a, "--summary")) {
				set_query(o, Q_SUMMARY, "--summary");
			} else if (cli_opt_value(argc, argv, &i, "--step", &v)) {
				set_query(o, Q_STEP, "--step");
				o->n = number("--step", v);
				if (!o->n)
					die_usage("steps count from 1; --step 0 names none");
			} else if (cli_opt_value(argc, argv, &i, "--event", &v)) {
				set_query(o, Q_EVENT, "--event");
				o->n = number("--event", v);
			} else if (cli_opt_value(argc, argv, &i, "--from", &v)) {
				set_query(o, Q_RANGE, "--from");
				o->from = number("--from", v);
			} else if (cli_opt_value(argc, argv, &i, "--to", &v)) {
				o->to = number("--to", v);
				o->to_set = true;
			} else if (cli_opt_flag(a, "-i") || cli_opt_flag(a, "--interactive")) {
				set_query(o, Q_INTERACTIVE, a);
			} else if (cli_opt_value(argc, argv, &i, "--export", &v)) {
				/* --analysis with --export: the dump, with what
				 * the analyses found (see query_export()). */
				if (o->query == Q_ANALYSIS)
					o->query_opt = NULL;
				set_query(o, Q_EXPORT, "--export");
				if (strcmp(v, "csv") && strcmp(v, "db"))
					die_usage("--export writes csv or db, not '%s'", v);
				o->export_fmt = v;
			} else if (cli_opt_value(argc, argv, &i, "--output", &v) ||
				   cli_opt_value(argc, argv, &i, "-o", &v)) {
				o->output = v;
			} else if (cli_opt_flag(a, "--force")) {
				o->force = true;
			} else if (cli_opt_flag(a, "--json")) {
				o->json = true;
			} else if (cli_opt_value(argc, argv, &i, "--depth", &v)) {
				o->depth = number("--depth", v);
			} else if (cli_opt_value(argc, argv, &i, "--stack-view", &v)) {
				if (!strcmp(v, "mixed"))
					o->stack_view = MMS_STACK_MIXED;
				else if (!strcmp(v, "c"))
					o->stack_view = MMS_STACK_C;
				else if (!strcmp(v, "python"))
					o->stack_view = MMS_STACK_PYTHON;
				else
					die_usage("--stack-view is mixed, c or python, not '%s'", v);
			} else if (cli_opt_value(argc, argv, &i, "--top", &v)) {
				o->top = number("--top", v);
			} else if (cli_opt_value(argc, argv, &i, "--analysis", &v)) {
				const char *msg;

				if (o->query != Q_EXPORT)
					set_query(o, Q_ANALYSIS, "--analysis");
				msg = an_parse_list_k(v, &o->analyses, &o->an.oom_k);
				if (msg)
					die_usage("--analysis: %s", msg);
				if (!o->analyses)
					die_usage("--analysis wants one analysis or more: %s", an_names());
			} else if (cli_opt_value(argc, argv, &i, "--compare-steps", &v)) {
				char *end;

				set_query(o, Q_COMPARE, "--compare-steps");
				end = strchr(v, ',');
				if (!end)
					die_usage("--compare-steps wants two steps N,M, not '%s'", v);
				*end = '\0';
				if (cli_parse_u64(v, &o->cmp.steps[0]) || cli_parse_u64(end + 1, &o->cmp.steps[1]) ||
				    !o->cmp.steps[0] || !o->cmp.steps[1]) {
					*end = ',';
					die_usage("--compare-steps wants two step numbers from 1, N,M, not '%s'", v);
				}
			} else if (cli_opt_value(argc, argv, &i, "--level", &v)) {
				if (!strcmp(v, "op"))
					o->cmp.level = MMS_COMPARE_OP;
				else if (!strcmp(v, "kernel"))
					o->cmp.level = MMS_COMPARE_KERNEL;
				else
					die_usage("--level is op or kernel, not '%s'", v);
				o->level_opt = "--level";
			} else if (cli_opt_value(argc, argv, &i, "--output-dir", &v)) {
				o->an.outdir = v;
			} else if (cli_opt_value(argc, argv, &i, "--suppressions", &v)) {
				const char *msg = an_check_suppressions(v);

				if (msg)
					die_usage("--suppressions: %s", msg);
				o->an.suppressions = v;
			} else if (!strcmp(argv[i], "--show-runtime")) {
				o->an.show_runtime = true;
			} else if (!strcmp(argv[i], "--show-reachable")) {
				o->an.show_reachable = true;
			} else if (!strcmp(argv[i], "--show-held")) {
				o->an.show_held = true;
			} else if (cli_opt_value(argc, argv, &i, "--warmup-steps", &v)) {
				uint64_t w = number("--warmup-steps", v);

				if (!w || w > UINT32_MAX)
					die_usage("--warmup-steps wants a number of steps, 1 or more");
				o->an.warmup_steps = (uint32_t)w;
			} else if (cli_opt_value(argc, argv, &i, "--error-exitcode", &v)) {
				uint64_t e = number("--error-exitcode", v);

				if (e < 1 || e > 255)
					die_usage("--error-exitcode wants a status from 1 to 255, not '%s'", v);
				o->an.error_exitcode = (int)e;
			} else if (cli_opt_value(argc, argv, &i, "--errors-for-leak-kinds", &v)) {
				const char *msg = an_parse_leak_kinds(v, &o->an.leak_error_kinds);

				if (msg)
					die_usage("--errors-for-leak-kinds: %s", msg);
				o->leak_kinds_set = true;
			} else if (cli_opt_value(argc, argv, &i, "--leak-marks", &v)) {
				const char *msg = an_parse_leak_marks(v, &o->an);

				if (msg)
					die_usage("--leak-marks %s: %s", v, msg);
			} else if (cli_opt_value(argc, argv, &i, "--idle-threshold", &v)) {
				o->an.idle_threshold = number("--idle-threshold", v);
				if (!o->an.idle_threshold)
					die_usage("--idle-threshold wants 1 launch or more");
			} else if (cli_opt_value(argc, argv, &i, "--min-size", &v)) {
				o->an.min_size = number("--min-size", v);
			} else if (cli_opt_value(argc, argv, &i, "--at-event", &v)) {
				o->an.at_event = number("--at-event", v);
				o->an.at_event_set = true;
			} else if (cli_opt_value(argc, argv, &i, "--buckets", &v)) {
				o->an.buckets = number("--buckets", v);
				if (!o->an.buckets)
					die_usage("--buckets wants 1 point or more");
				/* Each bucket is a row of usage.tsv: 10^12 of them
				 * filled a disk. Without --buckets, a row per time
				 * live bytes changed at. */
				if (o->an.buckets > MAX_BUCKETS)
					die_usage(
						"--buckets wants at most %d points (leave it out for a row per time live bytes changed at)",
						MAX_BUCKETS);
			} else if (cli_opt_value(argc, argv, &i, "--flamegraph", &v)) {
				o->flamegraph = v;
			} else if (cli_opt_value(argc, argv, &i, "--plot", &v)) {
				size_t n = strlen(v);

				/* An SVG in usage.png opens in no image viewer. */
				if (n < 5 || strcasecmp(v + n - 4, ".svg"))
					die_usage("--plot draws an SVG picture: name the file FILE.svg, not '%s'", v);
				o->an.plot = v;
			} else if (cli_opt_value(argc, argv, &i, "--memory", &v)) {
				const char *msg = an_parse_memory(v, &o->an.memory);

				if (msg)
					die_usage("--memory: %s", msg);
			} else if (cli_opt_flag(a, "--no-index")) {
				o->no_index = true;
			} else if (cli_opt_flag(a, "--quiet") || cli_opt_flag(a, "-q")) {
				progress_quiet();
			} else {
				die_usage("unknown option '%s'", a);
			}
			continue;
		}
		if (o->log)
			die_usage("one log at a time: '%s' and '%s'", o->log, a);
		o->log = a;
	}
	if (!o->log)
		die_usage("no log given");
	if (o->an.plot && (o->query == Q_ANALYSIS || (o->query == Q_SUMMARY && !o->query_opt))) {
		/* The picture is the usage analysis's. */
		o->query = Q_ANALYSIS;
		o->analyses |= 1u << (an_find("usage") - an_defs);
	} else if (o->an.plot) {
		die_usage("--plot goes with --analysis (it draws the usage timeline)");
	}
	if (o->flamegraph && o->query != Q_ANALYSIS && (o->query != Q_SUMMARY || o->query_opt))
		die_usage("--flamegraph goes alone or with --analysis");
	if (o->to_set && o->query != Q_RANGE)
		die_usage("--to goes with --from");
	if (o->to_set && o->to < o->from)
		die_usage("--to %" PRIu64 " is before --from %" PRIu64, o->to, o->from);
	if (o->output && o->query != Q_EXPORT)
		die_usage("--output goes with --export (analyses write into --output-dir)");
	if (o->force && o->query != Q_EXPORT && !o->analyses && o->query != Q_COMPARE && !o->flamegraph)
		die_usage("--force goes with --export, --analysis, --compare-steps or --flamegraph");
	if (o->level_opt && o->query != Q_COMPARE)
		die_usage("--level goes with --compare-steps");
	if (o->an.outdir && !o->analyses && o->query != Q_COMPARE)
		die_usage("--output-dir goes with --analysis or --compare-steps");
	if ((o->an.suppressions || o->an.show_runtime || o->an.show_reachable || o->an.show_held ||
	     o->an.warmup_steps || o->an.idle_threshold || o->an.min_size || o->an.buckets || o->an.at_event_set ||
	     o->an.memory) &&
	    !o->analyses)
		die_usage("%s goes with --analysis", o->an.suppressions     ? "--suppressions"
						     : o->an.show_runtime   ? "--show-runtime"
						     : o->an.show_reachable ? "--show-reachable"
						     : o->an.show_held      ? "--show-held"
						     : o->an.warmup_steps   ? "--warmup-steps"
						     : o->an.idle_threshold ? "--idle-threshold"
						     : o->an.min_size       ? "--min-size"
						     : o->an.buckets        ? "--buckets"
						     : o->an.at_event_set   ? "--at-event"
									    : "--memory");
	if (o->an.leak_marks && !(o->analyses & an_mask("leaks")))
		die_usage("--leak-marks goes with --analysis leaks");
	if (o->an.error_exitcode && !(o->analyses & (an_mask("leaks") | an_mask("guard"))))
		die_usage("--error-exitcode goes with --analysis leaks or guard");
	if (o->leak_kinds_set && !(o->analyses & an_mask("leaks")))
		die_usage("--errors-for-leak-kinds goes with --analysis leaks");
	if (o->leak_kinds_set && !o->an.error_exitcode)
		die_usage("--errors-for-leak-kinds says which leaks --error-exitcode counts: give both");
	if (!o->leak_kinds_set)
		o->an.leak_error_kinds = AN_LEAK_DEFAULT;
	if (o->json && o->query == Q_EXPORT && !o->analyses)
		die_usage("--json does not apply to --export");
}

mms_log_t *replay_open_log(const char *path)
{
	mms_open_error_t err = { 0 };
	mms_log_t *log;
	int rc;

	rc = mms_log_open_ex(path, &log, &err);
	if (rc == 0)
		return log;
	if (rc == -EISDIR)
		die(CLI_EXIT_FAILURE, "%s: is a directory; give a log file (a run folder holds memscope_{pid}.mms)", path);
	if (err.what[0] && !err.offset && rc == MMS_ETRUNCATED)
		die(CLI_EXIT_FAILURE, "%s: %s: %s", path, mms_strerror(rc), err.what);
	if (err.what[0])
		die(CLI_EXIT_FAILURE, "%s: %s: %s (at byte %" PRIu64 ")", path, mms_strerror(rc), err.what,
		    err.offset);
	die(CLI_EXIT_FAILURE, "%s: %s", path, mms_strerror(rc));
}

/* Opens the replay of log, building its index with the progress line pr
 * (which the step reports of the replay use too: it must outlive it). */
static mms_replay_t *open_replay(const struct opts *o, mms_log_t *log, struct progress *pr)
{
	mms_replay_options_t ro = { 0 };
	mms_replay_t *r;
	int rc, werr;

	ro.no_index_file = o->no_index;
	ro.progress = progress_update;
	ro.progress_ctx = pr;
	progress_start(pr, "indexing", o->log);
	rc = mms_replay_open_ex(log, &ro, &r);
	progress_end(pr);
	if (rc)
		die(CLI_EXIT_FAILURE, "%s: cannot replay: %s", o->log, mms_strerror(rc));
	if (mms_replay_index_state(r, &werr) == MMS_INDEX_MEMORY && !o->no_index)
		warn("%s: cannot write the index %s.idx (%s); it is kept in memory for this run (--no-index "
		     "says so on purpose)",
		     o->log, o->log, werr == -EEXIST ? "a file that is not an index is in the way" : mms_strerror(werr));
	return r;
}

/* Says that answers stop short of the end of a damaged log. */
static void warn_state(const struct opts *o, mms_log_t *log)
{
	mms_log_info_t info;

	mms_log_get_info(log, &info);
	replay_warn_log_state(o->log, &info, o->json);
	replay_warn_fork(o->log, log);
}

/* Dies with a message about a query of log, after the warnings about
 * the log's state (a cut log has fewer steps and events to ask for). */
static void die_query(const struct opts *o, mms_log_t *log, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

static void die_query(const struct opts *o, mms_log_t *log, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fflush(stdout);
	warn_state(o, log);
	die(CLI_EXIT_FAILURE, "%s", msg);
}

static int query_step(const struct opts *o, struct show *s)
{
	mms_step_report_t *rep;
	uint64_t steps = mms_replay_steps(s->r);
	int rc;

	if (o->n > steps) {
		if (!steps)
			die_query(o, s->log, "%s: the log has no steps: the program never called msmemscope_step() nor "
			    "opened a \"step start\" range; try --event N or -i", o->log);
		die_query(o, s->log, "%s: no step %" PRIu64 ": the log has %" PRIu64 " step%s", o->log, o->n, steps,
		    steps == 1 ? "" : "s");
	}
	rc = show_step_replay(s, o->n, &rep);
	if (rc)
		die_query(o, s->log, "%s: cannot replay step %" PRIu64 ": %s", o->log, o->n, mms_strerror(rc));
	show_step_report(s, rep);
	if (s->json)
		fputc('\n', s->out);
	mms_step_report_free(rep);
	return 0;
}

static int query_event(const struct opts *o, struct show *s)
{
	mms_event_t ev;
	mms_where_t w;
	int rc;

	mms_replay_where(s->r, &w);
	if (o->n >= w.events)
		die_query(o, s->log, "%s: no event %" PRIu64 ": the log has %" PRIu64 " events (0 to %" PRIu64 ")", o->log,
		    o->n, w.events, w.events ? w.events - 1 : 0);
	rc = mms_replay_seek(s->r, o->n + 1);
	if (rc || !mms_replay_last_event(s->r, &ev))
		die_query(o, s->log, "%s: cannot replay to event %" PRIu64 ": %s", o->log, o->n,
		    mms_strerror(rc ? rc : MMS_ECORRUPT));
	if (s->json) {
		fputs("{\"event\":", s->out);
		show_event(s, &ev);
		fputs(",\"state\":", s->out);
		show_where(s);
		fputs("}\n", s->out);
		return 0;
	}
	show_event(s, &ev);
	fputs("state after it: ", s->out);
	show_where(s);
	return 0;
}

static int query_range(const struct opts *o, struct show *s)
{
	uint64_t to = o->to;
	mms_event_t ev;
	mms_where_t w;
	int rc;

	mms_replay_where(s->r, &w);
	if (o->from >= w.events)
		die_query(o, s->log, "%s: no event %" PRIu64 ": the log has %" PRIu64 " events", o->log, o->from,
		    w.events);
	if (!o->to_set || to >= w.events)
		to = w.events - 1;
	rc = mms_replay_seek(s->r, o->from);
	while (!rc && (rc = mms_replay_next(s->r, &ev)) == 1) {
		show_event_line(s, &ev);
		if (s->json)
			fputc('\n', s->out);
		if (ev.id >= to)
			return 0;
		rc = 0;
	}
	die_query(o, s->log, "%s: replay stopped at event %" PRIu64 ": %s", o->log, w.position,
	    mms_strerror(rc ? rc : MMS_ECORRUPT));
}

/* --export, with the analyses --analysis names in the same pass: their
 * reports on stdout, then the dump (inefficient's blocks tagged in it). */
static int query_export(struct opts *o, mms_log_t *log)
{
	mms_export_options_t eo = { 0 };
	const char *path = o->output;
	mms_export_t *x = NULL;
	struct an_ctx *c;
	char name[64];
	int rc, status;

	if (!path) {
		mms_export_name(log, o->export_fmt, name, sizeof(name));
		path = name;
	}
	o->an.tag_inefficient = true;
	c = an_open(o->log, log, o->analyses, &o->an, stdout, &status);
	eo.format = !strcmp(o->export_fmt, "csv") ? MMS_EXPORT_CSV : MMS_EXPORT_DB;
	eo.path = path;
	/* The user named the file with -o: theirs to replace with --force;
	 * the default name is never replaced silently either. */
	eo.out.overwrite = o->force;
	eo.out.sym = an_symbolizer(c);
	eo.inefficient = c->inefficient;
	rc = mms_export_add(c->pass, &eo, &x);
	c->subscribed += !rc;
	if (rc == -EEXIST)
		die(CLI_EXIT_FAILURE, "%s: %s exists; remove it, name another file with -o, or add --force", o->log, path);
	if (rc)
		die_query(o, log, "%s: cannot export to %s: %s", o->log, path, mms_strerror(rc));
	c->summary = 1;
	if (an_pass(c))
		status = CLI_EXIT_FAILURE;
	if (an_print(c))
		status = CLI_EXIT_FAILURE;
	fflush(stdout);
	status = an_error_status(c, status);
	rc = c->pass_rc ? c->pass_rc : x->status;
	an_close(c);
	mms_export_free(x);
	if (rc)
		die_query(o, log, "%s: cannot export to %s: %s", o->log, path, mms_strerror(rc));
	fprintf(stderr, "%s: wrote %s\n", cli_progname, path);
	return status;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct progress pr = { 0 };
	struct show s;
	mms_replay_t *r;
	mms_log_t *log;
	int status;

	cli_init(argv[0]);
	/* A subcommand, as memray's: a log named "transform" is ./transform. */
	if (argc > 1 && !strcmp(argv[1], "transform"))
		return replay_transform(argc - 1, argv + 1);
	parse_args(argc, argv, &o);
	/* A signal cancels the work over the log, which removes the files
	 * it was writing (the index -i builds too); at the prompt of -i,
	 * Ctrl-C interrupts a command (replay_interactive()). */
	progress_catch_signals();
	if (o.query == Q_COMPARE) {
		o.an.json = o.json;
		o.an.top = (size_t)o.top;
		o.an.force = o.force;
		o.cmp.input[0] = o.log;
		status = an_compare(&o.cmp, &o.an, stdout);
		if (fflush(stdout) || ferror(stdout))
			die(CLI_EXIT_FAILURE, "cannot write the answer: %s", strerror(errno));
		return status;
	}
	log = replay_open_log(o.log);
	o.an.json = o.json;
	o.an.depth = (unsigned)o.depth;
	o.an.stack_view = o.stack_view;
	o.an.top = (size_t)o.top;
	o.an.force = o.force;
	if (o.flamegraph) {
		/* The peak's allocations, as transform flamegraph draws them,
		 * in the pass of the analyses. */
		struct replay_transform x = { .t = { .format = MMS_TRANSFORM_FLAMEGRAPH,
						     .selection = MMS_TRANSFORM_PEAK,
						     .out.overwrite = o.force },
					      .path = o.flamegraph,
					      .log_path = o.log,
					      .exists_hint = "remove it, name another file, or add --force" };
		struct an_ctx *c = an_open(o.log, log, o.query == Q_ANALYSIS ? o.analyses : 0, &o.an, stdout, &status);
		int added = !replay_transform_add(&x, c->pass, log, an_symbolizer(c));

		c->subscribed += added;
		if (an_pass(c))
			status = CLI_EXIT_FAILURE;
		if (an_print(c))
			status = CLI_EXIT_FAILURE;
		fflush(stdout);
		if (!added || replay_transform_done(&x, c->pass_rc))
			status = CLI_EXIT_FAILURE;
		status = an_error_status(c, status);
		an_close(c);
		warn_state(&o, log);
		mms_log_close(log);
		return status;
	}
	if (o.query == Q_SUMMARY) {
		status = replay_summary(o.log, log, o.json);
		mms_log_close(log);
		return status;
	}
	if (o.query == Q_ANALYSIS) {
		status = an_run(o.log, log, o.analyses, &o.an, stdout);
		if (fflush(stdout) || ferror(stdout))
			die(CLI_EXIT_FAILURE, "cannot write the answer: %s", strerror(errno));
		warn_state(&o, log);
		mms_log_close(log);
		return status;
	}
	if (o.query == Q_EXPORT) {
		status = query_export(&o, log);
		warn_state(&o, log);
		mms_log_close(log);
		return status;
	}
	r = open_replay(&o, log, &pr);
	show_init(&s, o.log, log, r);
	s.progress = &pr;
	s.json = o.json;
	s.depth = (unsigned)o.depth;
	s.view = o.stack_view;
	s.top = (size_t)o.top;
	switch (o.query) {
	case Q_STEP:
		status = query_step(&o, &s);
		break;
	case Q_EVENT:
		status = query_event(&o, &s);
		break;
	case Q_RANGE:
		status = query_range(&o, &s);
		break;
	default:
		status = replay_interactive(&s, stdin);
		break;
	}
	if (fflush(stdout) || ferror(stdout))
		die(CLI_EXIT_FAILURE, "cannot write the answer: %s", strerror(errno));
	if (o.query != Q_INTERACTIVE)
		warn_state(&o, log);
	show_fini(&s);
	mms_replay_close(r);
	mms_log_close(log);
	progress_die_if_caught();
	return status;
}
