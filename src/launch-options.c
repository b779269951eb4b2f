/* SPDX-License-Identifier: MIT */
/* launch-options.c: the launcher's command line: parses msmemscope's options
 * into struct opts and prints --help. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "progress.h"
#include "launch.h"

#define OUTPUT_DEFAULT "memscopeDumpResults"
#define OUTPUT_MAX 4096 /* msMemScope's limit on --output */
#define CALL_STACK_C_DEFAULT "50" /* --call-stack=c without a depth */

enum log_level log_level = LOG_WARN;

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

/* Sets key of the recording configuration from value, read by the
 * configuration's own parser. On a bad value returns what the key takes,
 * for the message ("expected ..."), else NULL. */
static const char *set_key(mms_config_t *rec, const char *key, const char *value)
{
	static char msg[512];
	mms_config_error_t err = { .expected = "" };

	if (!mms_config_set(rec, key, value, strlen(value), &err))
		return NULL;
	snprintf(msg, sizeof(msg), "expected %s", err.expected);
	return msg;
}

/* Makes each full-width '\xef\xbc\x8c' separator of the list s a ',',
 * the configuration's. Returns s. */
static char *ascii_commas(char *s)
{
	char *w = s;

	for (const char *r = s; *r;) {
		if (strncmp(r, "\xef\xbc\x8c", 3) == 0) {
			*w++ = ',';
			r += 3;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return s;
}

/* The recording's events=, without msMemScope's traceback. */
static const char *parse_events(struct opts *o, char *value)
{
	char *item, *cursor = *value ? value : NULL, *list = xmalloc(strlen(value) + 1);
	const char *bad;
	size_t n = 0;

	list[0] = '\0';
	while ((item = list_next(&cursor))) {
		if (strcmp(item, "traceback") == 0) {
			WARN("--events=traceback: Python traces are not recorded for native programs; ignored");
			continue;
		}
		if (!*item) {
			n = 0;
			strcpy(list, ","); /* an empty item: refused */
			break;
		}
		n += (size_t)sprintf(list + n, "%s%s", n ? "," : "", item);
	}
	bad = set_key(&o->rec, "events", list);
	/* The recorder records the memory events whatever the list says:
	 * every report stands on them (a log without frees would call each
	 * block a leak). Say so rather than let the list seem obeyed. */
	if (!bad && !(o->rec.events & (MMS_CONFIG_EV_ALLOC | MMS_CONFIG_EV_FREE)))
		WARN("--events=%s: alloc and free are recorded all the same (every report stands on them); only "
		     "launch and access can be left out",
		     value);
	free(list);
	o->events_set = true;
	return bad;
}

/* c:N is the recording's call_stack=N; python[:N] is msMemScope's. */
static const char *parse_call_stack(struct opts *o, char *value)
{
	static const char expected[] = "expected c, c:N or python[:N], N from 0 to 1000";
	char *item, *cursor = value, *colon;

	if (!*value)
		return expected;
	while ((item = list_next(&cursor))) {
		const char *depth = CALL_STACK_C_DEFAULT;

		colon = strchr(item, ':');
		if (colon) {
			*colon = '\0';
			depth = colon + 1;
		}
		if (strcmp(item, "c") == 0) {
			if (set_key(&o->rec, "call_stack", depth))
				return expected;
		} else if (strcmp(item, "python") == 0) {
			if (set_key(&o->rec, "python_stack", depth))
				return expected;
		} else {
			return expected;
		}
	}
	return NULL;
}

/* The allocator of the Python interpreters Python stacks are recorded in. */
static const char *parse_python_allocator(struct opts *o, char *value)
{
	if (strcmp(value, "malloc") && strcmp(value, "pymalloc"))
		return "expected malloc or pymalloc";
	o->pymalloc = strcmp(value, "pymalloc") == 0;
	o->python_allocator_set = true;
	return NULL;
}

/* valgrind's --keep-stacktraces, of which the two this recorder has:
 * stacks for allocations and frees (the default), or for allocations
 * only. */
static const char *parse_keep_stacktraces(struct opts *o, char *value)
{
	if (!strcmp(value, "alloc-and-free"))
		o->rec.free_stack = 1;
	else if (!strcmp(value, "alloc"))
		o->rec.free_stack = 0;
	else if (!strcmp(value, "none") || !strcmp(value, "free") || !strcmp(value, "alloc-then-free"))
		return "expected alloc or alloc-and-free (for no stacks at all, leave out --call-stack; valgrind's "
		       "free and alloc-then-free, which drop a block's allocation stack, have no counterpart: a log "
		       "keeps every stack it records)";
	else
		return "expected alloc or alloc-and-free";
	o->keep_stacktraces_set = true;
	return NULL;
}

static const char *parse_collect_mode(struct opts *o, char *value)
{
	return set_key(&o->rec, "collect", value);
}

/* The recording's steps=, which takes an empty list (every step) that
 * --steps does not. */
static const char *parse_steps(struct opts *o, char *value)
{
	const char *bad = set_key(&o->rec, "steps", *value ? ascii_commas(value) : ",");

	return bad;
}

/* msMemScope's --device (npu, every device, or npu:ID, several): here
 * the CUDA devices whose device memory is recorded, cuda or cuda:N, with
 * npu and npu:N taken as msMemScope's spelling of them. As msMemScope's,
 * a list that has the whole (cuda) records every device. */
static const char *parse_device(struct opts *o, char *value)
{
	static const char expected[] = "expected cuda (every device) or cuda:N (N a device ordinal from 0 to 63), "
				       "several separated by commas; npu and npu:N, msMemScope's spellings, are "
				       "taken as cuda and cuda:N";
	uint64_t mask = 0;
	bool all = false;
	char *s = ascii_commas(value);

	for (;;) {
		size_t len = strcspn(s, ","), name = !strncmp(s, "cuda", 4) ? 4 : !strncmp(s, "npu", 3) ? 3 : 0;
		char *end;
		unsigned long n;

		if (!name)
			return expected;
		if (len == name) {
			all = true;
		} else {
			if (s[name] != ':' || !isdigit((unsigned char)s[name + 1]))
				return expected;
			errno = 0;
			n = strtoul(s + name + 1, &end, 10);
			if (end != s + len || errno || n > 63)
				return expected;
			mask |= 1ull << n;
		}
		if (!s[len])
			break;
		s += len + 1;
	}
	o->rec.devices = all ? 0 : mask;
	return NULL;
}

static const char *parse_output(struct opts *o, char *value)
{
	if (!*value || strlen(value) > OUTPUT_MAX)
		return "expected a directory path of 1 to 4096 characters";
	free(o->output);
	o->output = xstrdup(value);
	return NULL;
}

/* msmemscope's own level, and the recorder's (log_level=). */
static const char *parse_log_level(struct opts *o, char *value)
{
	const char *bad = set_key(&o->rec, "log_level", value);

	if (!bad)
		log_level = o->log_level = (enum log_level)o->rec.log_level;
	return bad;
}

static const char *parse_analysis(struct opts *o, char *value)
{
	const char *msg = an_parse_list_k(value, &o->analyses, &o->oom_k);

	if (msg)
		return msg;
	o->analyses_set = true;
	o->record_only = !o->analyses;
	return NULL;
}

/* The file is read now, so a mistake in it stops msmemscope before the
 * program runs rather than after. */
static const char *parse_suppressions(struct opts *o, char *value)
{
	const char *msg = an_check_suppressions(value);

	if (msg)
		return msg;
	free(o->suppressions);
	o->suppressions = xstrdup(value);
	return NULL;
}

/* --watch=[START[:outN],]END[,full-content]: the recording's watch=,
 * which takes an empty value (no watch) that --watch does not. */
static const char *parse_watch(struct opts *o, char *value)
{
	return set_key(&o->rec, "watch", *value ? ascii_commas(value) : ",");
}

static const char *parse_data_format(struct opts *o, char *value)
{
	if (strcmp(value, "csv") == 0)
		o->data_format = "csv";
	else if (strcmp(value, "db") == 0)
		o->data_format = "db";
	else
		return "expected csv or db";
	return NULL;
}

static const char *parse_compare(struct opts *o, char *value)
{
	o->compare = true;
	return NULL;
}

static const char *parse_input(struct opts *o, char *value)
{
	char *cursor = value, *item;
	size_t n = 0;

	free(o->input[0]);
	free(o->input[1]);
	o->input[0] = o->input[1] = NULL;
	while ((item = list_next(&cursor))) {
		if (!*item || n == 2)
			return "expected two paths, BASE,COMPARE (logs or memscope_dump CSVs)";
		o->input[n++] = xstrdup(item);
	}
	return NULL;
}

/* With --compare, which launches to align; when recording, msMemScope's
 * way of asking for launches (0 and 1 are its older spellings). */
static const char *parse_level(struct opts *o, char *value)
{
	if (strcmp(value, "op") == 0 || strcmp(value, "0") == 0)
		o->level = MMS_COMPARE_OP;
	else if (strcmp(value, "kernel") == 0 || strcmp(value, "1") == 0)
		o->level = MMS_COMPARE_KERNEL;
	else
		return "expected op or kernel (0 or 1)";
	o->level_set = true;
	return NULL;
}

static const char *parse_no_follow_exec(struct opts *o, char *value)
{
	o->rec.follow_exec = 0;
	return NULL;
}

static const char *parse_show_runtime(struct opts *o, char *value)
{
	o->show_runtime = true;
	return NULL;
}

static const char *parse_show_reachable(struct opts *o, char *value)
{
	o->show_reachable = true;
	return NULL;
}

static const char *parse_show_held(struct opts *o, char *value)
{
	o->show_held = true;
	return NULL;
}

static const char *parse_warmup_steps(struct opts *o, char *value)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(value, &end, 10);
	if (!*value || *end || *value == '-' || errno || v < 1 || v > UINT32_MAX)
		return "expected a number of steps, 1 or more";
	o->warmup_steps = (uint32_t)v;
	return NULL;
}

static const char *parse_leak_marks(struct opts *o, char *value)
{
	struct an_opts ao = { 0 };
	const char *bad = an_parse_leak_marks(value, &ao);

	if (bad)
		return bad;
	o->leak_marks = ao.leak_marks;
	o->leak_mark_first = ao.leak_mark_first;
	return NULL;
}

static const char *parse_no_live(struct opts *o, char *value)
{
	(void)value;
	o->no_live = true;
	return NULL;
}

static const char *parse_no_freeres(struct opts *o, char *value)
{
	o->rec.freeres = 0;
	return NULL;
}

static const char *parse_no_reach_scan(struct opts *o, char *value)
{
	o->rec.reach = 0;
	return NULL;
}

/* --quiet: the progress line is the command line's, not the recording's;
 * it goes with every form (a compare reads logs too). */
static const char *parse_quiet(struct opts *o, char *value)
{
	progress_quiet();
	return NULL;
}

/* --guard[=LIST]: LIST names what is guarded and when it is checked:
 * heap (the default: every heap block), ops (heap, and a full check at
 * the end of each operator launch). */
static const char *parse_guard(struct opts *o, char *value)
{
	char *cursor = value, *item;
	int level = 1;

	while (value && (item = list_next(&cursor))) {
		if (!strcmp(item, "ops"))
			level = 2;
		else if (strcmp(item, "heap"))
			return "expected heap or ops";
	}
	o->rec.guard = level > o->rec.guard ? level : o->rec.guard;
	return NULL;
}

/* --guard-redzone and --guard-quarantine set guard mode's sizes, and so
 * ask for guard mode: given alone they would change nothing. */
static const char *parse_guard_redzone(struct opts *o, char *value)
{
	if (!o->rec.guard)
		o->rec.guard = 1;
	return set_key(&o->rec, "guard_redzone", value);
}

static const char *parse_guard_quarantine(struct opts *o, char *value)
{
	if (!o->rec.guard)
		o->rec.guard = 1;
	return set_key(&o->rec, "guard_quarantine", value);
}

static const char *parse_error_exitcode(struct opts *o, char *value)
{
	char *end;
	long v = strtol(value, &end, 10);

	if (!*value || *end || v < 1 || v > 255)
		return "expected a number from 1 to 255";
	o->error_exitcode = (int)v;
	return NULL;
}

static const char *parse_leak_error_kinds(struct opts *o, char *value)
{
	o->leak_error_kinds_set = true;
	return an_parse_leak_kinds(value, &o->leak_error_kinds);
}

static const char *parse_print_env(struct opts *o, char *value)
{
	o->print_env = true;
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
	{ "--python-allocator", true, parse_python_allocator },
	{ "--keep-stacktraces", true, parse_keep_stacktraces },
	{ "--collect-mode", true, parse_collect_mode },
	{ "--steps", true, parse_steps },
	{ "--device", true, parse_device },
	{ "--output", true, parse_output },
	{ "--log-level", true, parse_log_level },
	{ "--analysis", true, parse_analysis },
	{ "--suppressions", true, parse_suppressions },
	{ "--data-format", true, parse_data_format },
	{ "--compare", false, parse_compare },
	{ "--input", true, parse_input },
	{ "--level", true, parse_level },
	{ "--watch", true, parse_watch },
	{ "--no-follow-exec", false, parse_no_follow_exec },
	{ "--no-freeres", false, parse_no_freeres },
	{ "--no-reach-scan", false, parse_no_reach_scan },
	{ "--guard", false, parse_guard },
	{ "--guard-redzone", true, parse_guard_redzone },
	{ "--guard-quarantine", true, parse_guard_quarantine },
	{ "--error-exitcode", true, parse_error_exitcode },
	{ "--errors-for-leak-kinds", true, parse_leak_error_kinds },
	{ "--print-env", false, parse_print_env },
	{ "--show-runtime", false, parse_show_runtime },
	{ "--show-reachable", false, parse_show_reachable },
	{ "--show-held", false, parse_show_held },
	{ "--warmup-steps", true, parse_warmup_steps },
	{ "--leak-marks", true, parse_leak_marks },
	{ "--no-live-report", false, parse_no_live },
	{ "--quiet", false, parse_quiet },
	{ "--help", false, parse_help },
	{ "--version", false, parse_version },
};
#define N_OPTS (sizeof(opt_defs) / sizeof(opt_defs[0]))
/* --guard=LIST: the flag --guard with a value. */
static const struct opt_def guard_list_def = { "--guard", true, parse_guard };

__attribute__((noreturn)) static void unknown_option(const char *arg)
{
	char accepted[1024];
	size_t n = 0, len = strcspn(arg, "=");

	/* Stops short rather than past the end, however many options. */
	for (size_t i = 0; i < N_OPTS && n < sizeof(accepted); i++)
		n += (size_t)snprintf(accepted + n, sizeof(accepted) - n, "%s%s", i ? ", " : "", opt_defs[i].name);
	die_usage("%.*s: unknown option (accepted: %s)", (int)len, arg, accepted);
}

/* Parses argv into o. Stops at "--" or at the first argument that is not an
 * option: that is the program. Exits 2 on a usage error. */
void parse_args(int argc, char **argv, struct opts *o)
{
	/* The first option that is about a recording, for --compare to refuse,
	 * and the first about reports, for --print-env to refuse: neither runs
	 * a program, so they would go unused without a word. */
	const char *record_opt = NULL, *report_opt = NULL;
	int i;

	*o = (struct opts){
		.output = xstrdup(OUTPUT_DEFAULT),
		.log_level = LOG_WARN,
	};
	mms_config_default(&o->rec);
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
		if (strcmp(arg, "-q") == 0) {
			parse_quiet(o, NULL);
			continue;
		}
		if (strncmp(arg, "--guard=", 8) == 0) {
			value = arg + 8;
			def = &guard_list_def;
		}
		/* -o DIR, as heaptrack and msmemscope-replay spell it. */
		if (strcmp(arg, "-o") == 0) {
			if (i + 1 >= argc || !strcmp(argv[i + 1], "--"))
				die_usage("-o needs a folder: -o DIR (or --output=DIR)");
			value = argv[++i];
			arg = "--output";
		}
		for (size_t k = 0; k < N_OPTS && !def; k++) {
			if (value                   ? !strcmp(arg, opt_defs[k].name)
			    : opt_defs[k].has_value ? cli_opt_value(argc, argv, &i, opt_defs[k].name, &value)
						    : cli_opt_flag(arg, opt_defs[k].name))
				def = &opt_defs[k];
		}
		if (!def)
			unknown_option(arg);
		if (!record_opt && strcmp(def->name, "--compare") && strcmp(def->name, "--error-exitcode") &&
		    strcmp(def->name, "--errors-for-leak-kinds") && strcmp(def->name, "--input") &&
		    strcmp(def->name, "--level") && strcmp(def->name, "--output") && strcmp(def->name, "--log-level") &&
		    strcmp(def->name, "--quiet"))
			record_opt = def->name;
		if (!report_opt && (!strcmp(def->name, "--analysis") || !strcmp(def->name, "--suppressions") ||
				    !strcmp(def->name, "--data-format") || !strcmp(def->name, "--show-runtime") ||
				    !strcmp(def->name, "--show-reachable") || !strcmp(def->name, "--show-held") ||
				    !strcmp(def->name, "--warmup-steps") || !strcmp(def->name, "--leak-marks") ||
				    !strcmp(def->name, "--compare") || !strcmp(def->name, "--input")))
			report_opt = def->name;
		/* List values are cut up in a copy, so messages quote them whole. */
		copy = value ? xstrdup(value) : NULL;
		bad = def->parse(o, copy);
		if (bad) {
			/* bad may point into copy: say it before letting copy go. */
			char msg[1024];

			snprintf(msg, sizeof(msg), "%s=%s: %s", def->name, value, bad);
			free(copy);
			die_usage("%s", msg);
		}
		free(copy);
	}
	if (o->compare) {
		/* --compare runs no program: it compares two recordings. */
		if (!o->input[0])
			die_usage("--compare needs --input=BASE,COMPARE: the two logs or memscope_dump CSVs to compare");
		if (!o->input[1])
			die_usage("--compare needs two inputs, --input=BASE,COMPARE; --input names only %s", o->input[0]);
		if (i < argc)
			die_usage("--compare runs no program; '%s' is one argument too many", argv[i]);
		if (record_opt)
			die_usage("--compare runs no program, so %s does not go with it (record each run first, "
				  "then compare the logs)",
				  record_opt);
		/* It would exit 0 whatever it was given: no status to choose. */
		if (o->error_exitcode || o->leak_error_kinds_set)
			die_usage("--compare finds no errors, so %s does not go with it (its exit status says "
				  "whether the compare was made)",
				  o->error_exitcode ? "--error-exitcode" : "--errors-for-leak-kinds");
		return;
	}
	/* --watch needs the launches. */
	if (o->rec.watch.on)
		o->rec.events |= MMS_CONFIG_EV_LAUNCH;
	if (o->python_allocator_set && !o->rec.python_stack)
		WARN("--python-allocator goes with --call-stack=python:N (Python's allocator is left as it is "
		     "without Python stacks); ignored");
	if (o->keep_stacktraces_set && !o->rec.python_stack && !o->rec.call_stack) {
		WARN("--keep-stacktraces goes with --call-stack (without it no event has a stack); ignored");
		o->rec.free_stack = 1;
	}
	/* --level=op|kernel when recording: the launches are recorded (the
	 * aten operators of msmemscope.torch, the program's own, its kernel
	 * launches), whatever --events says. */
	if (o->level_set)
		o->rec.events |= MMS_CONFIG_EV_LAUNCH;
	/* --level=op: a Python program's aten operators too, with no change
	 * to it (the Python package's boot module, launch-run.c). */
	if (o->level_set && o->level == MMS_COMPARE_OP)
		o->rec.torch_ops = 1;
	if (o->print_env) {
		/* --print-env runs no program: it prints its environment. */
		if (i < argc)
			die_usage("--print-env runs no program; '%s' is one argument too many", argv[i]);
		if (report_opt)
			die_usage("--print-env runs no program, so %s does not go with it (run msmemscope-replay on "
				  "the logs afterwards)",
				  report_opt);
		return;
	}
	if (o->input[0])
		die_usage("--input goes with --compare");
	if (i >= argc)
		die_usage("no program to run (usage: %s [options] [--] prog [args...])", cli_progname);
	o->argv = argv + i;
	/* msMemScope's default analysis is leaks. */
	if (!o->analyses_set)
		an_parse_list(an_find("leaks") ? "leaks" : "", &o->analyses);
	if (o->leak_marks && !(o->analyses & an_mask("leaks")))
		die_usage("--leak-marks goes with the leaks analysis (--analysis=leaks, the default)");
	if (o->leak_error_kinds_set && !(o->analyses & an_mask("leaks")))
		die_usage("--errors-for-leak-kinds goes with the leaks analysis (--analysis=leaks, the default)");
	if (o->leak_error_kinds_set && !o->error_exitcode)
		die_usage("--errors-for-leak-kinds says which leaks --error-exitcode counts: give both");
	if (!o->leak_error_kinds_set)
		o->leak_error_kinds = AN_LEAK_DEFAULT;
	/* As msMemScope: inefficient turns accesses on unless --events says. */
	if ((o->analyses & an_mask("inefficient")) && !o->events_set)
		o->rec.events |= MMS_CONFIG_EV_ACCESS | MMS_CONFIG_EV_ALLOC | MMS_CONFIG_EV_FREE;
	/* --guard reports what it found, after the leaks. */
	if (o->rec.guard && !o->record_only) {
		unsigned g = 0;

		if (!an_parse_list("guard", &g))
			o->analyses |= g;
	}
	/* --watch reports what it found. */
	if (o->rec.watch.on) {
		unsigned w = 0;

		if (!o->record_only && !an_parse_list("watch", &w))
			o->analyses |= w;
	}
}

void opts_free(struct opts *o)
{
	free(o->output);
	free(o->suppressions);
	free(o->input[0]);
	free(o->input[1]);
	o->output = o->suppressions = o->input[0] = o->input[1] = NULL;
}

static void print_help(void)
{
	printf("Usage: %s [options] [--] prog [args...]\n"
	       "       %s --compare --input=BASE,COMPARE [--level=op|kernel] [--output=DIR]\n"
	       "       %s --print-env [recording options] [--output=DIR]\n"
	       "\n"
	       "Runs prog with the msmemscope recorder preloaded, which writes every memory\n"
	       "event of prog (malloc family, mmap family, the msmemscope.h annotations) to an\n"
	       "event log, then prints a summary of that log on stderr.\n"
	       "\n"
	       "Recording options (values as --opt=VALUE or --opt VALUE; lists take ',' or the\n"
	       "full-width '\xef\xbc\x8c'):\n"
	       "  --events=LIST         events to record: alloc, free, launch, access.\n"
	       "                        Default alloc,free,launch. alloc and free are always\n"
	       "                        recorded (every report stands on them): a list\n"
	       "                        without them (or empty) leaves out launch and access.\n"
	       "  --call-stack=LIST     c[:N]: record a C call stack of at most N frames (0-1000)\n"
	       "                        with each event; python[:N]: the innermost N Python\n"
	       "                        frames of Python programs (the msmemscope package\n"
	       "                        keeps them; doc/python.md); 'c' or 'python' alone\n"
	       "                        means N=50; c:N,python:M both. Default: no stacks.\n"
	       "  --python-allocator=A  with python stacks: malloc (default) runs Python with\n"
	       "                        PYTHONMALLOC=malloc, so each object is an allocation\n"
	       "                        of its own; pymalloc keeps Python's arenas (small\n"
	       "                        objects then are not seen one by one).\n"
	       "  --keep-stacktraces=alloc|alloc-and-free\n"
	       "                        with --call-stack: alloc-and-free (default) also records\n"
	       "                        the stack of each free, realloc and delete (who freed a\n"
	       "                        block); alloc keeps allocations' stacks only, which\n"
	       "                        costs less (as valgrind's option of that name).\n"
	       "  --collect-mode=MODE   immediate (default): record from the start;\n"
	       "                        deferred: record only between msmemscope_start() and\n"
	       "                        msmemscope_stop() calls in the program.\n"
	       "  --level=op|kernel     record operator (op, 0) or kernel (kernel, 1) launches:\n"
	       "                        adds launch to --events. op also makes a PyTorch\n"
	       "                        program's aten operators operator launches, with no\n"
	       "                        change to the program, and, where it marks no steps,\n"
	       "                        each end of its optimizer.step() a step (with\n"
	       "                        several optimizers, each iteration's last).\n"
	       "  --steps=N[,N...]      record only these steps (1 to 5 step numbers, from 1,\n"
	       "                        as msmemscope_step() counts them). Default: all.\n"
	       "  --device=LIST         record the device memory of these CUDA devices only:\n"
	       "                        cuda (every one, the default) or cuda:N (ordinal N,\n"
	       "                        0 to 63), several separated by commas; msMemScope's\n"
	       "                        npu and npu:N are taken as cuda and cuda:N. Host\n"
	       "                        memory and kernel launches are recorded whole.\n"
	       "  --no-follow-exec      do not record the images the program execs (default:\n"
	       "                        each is recorded as memscope_{pid}.exec{N}.mms).\n"
	       "  --no-freeres          do not have glibc and libstdc++ free their internal\n"
	       "                        memory at the end of exit (default: they do when no\n"
	       "                        other thread is left, as under valgrind, so that what\n"
	       "                        is live at exit is what the program left).\n"
	       "  --no-reach-scan       do not scan the program's memory at exit for pointers\n"
	       "                        to its live blocks (default: scanned, so that leaked\n"
	       "                        blocks are told from those still reachable from its\n"
	       "                        globals and stacks, as valgrind tells them).\n"
	       "  --guard[=heap|ops]    guard mode: red zones around each heap block, freed\n"
	       "                        blocks held in a quarantine, frees checked before\n"
	       "                        libc sees them; finds overflows, writes after free,\n"
	       "                        double, invalid and mismatched frees, and prints\n"
	       "                        them after the run (ERROR SUMMARY). Blocks move by\n"
	       "                        design. ops: also check every block at the end of\n"
	       "                        each operator launch, so a finding names the launch\n"
	       "                        that did the damage (costs a pass over the live\n"
	       "                        blocks per launch). See guard.md.\n"
	       "  --guard-redzone=N     bytes of each red zone, 1 to 4096 (default 16);\n"
	       "                        implies --guard.\n"
	       "  --guard-quarantine=SIZE\n"
	       "                        freed bytes held back, with K, M or G (default 4M;\n"
	       "                        0: none, and writes after free go unseen); implies\n"
	       "                        --guard.\n"
	       "  --watch=[START[:outN],]END[,full-content]\n"
	       "                        watch blocks across operator launches: when a\n"
	       "                        launch of operator START ends, the blocks it\n"
	       "                        allocated and still holds or declared written\n"
	       "                        (msmemscope_access), numbered from 0 in that order\n"
	       "                        (outN: only output N), are checksummed (CRC-64/XZ)\n"
	       "                        before and after every launch until a launch of\n"
	       "                        END ends; so are msmemscope_watch() blocks at every\n"
	       "                        launch. Names may hold ':' (aten::addmm:out0).\n"
	       "                        full-content: also write their bytes to\n"
	       "                        watch_dump/ in the run folder. Implies launch\n"
	       "                        events and runs the watch analysis after the run.\n"
	       "  -o, --output=DIR      where run folders go (default %s).\n"
	       "  --log-level=LEVEL     info, warn (default) or error: what msmemscope and the\n"
	       "                        recorder report on stderr.\n"
	       "\n"
	       "Report options:\n"
	       "  --error-exitcode=N    exit N (1-255) when guard mode found errors, the\n"
	       "                        leaks report found leaks of the kinds below or\n"
	       "                        bad frees (double, invalid, mismatched);\n"
	       "                        otherwise prog's status (as valgrind's).\n"
	       "  --errors-for-leak-kinds=LIST\n"
	       "                        the leaks --error-exitcode counts: definite (leaked\n"
	       "                        at exit), indirect, possible, reachable (still\n"
	       "                        pointed to at exit), step (per-step and marks\n"
	       "                        rules), all or none. Default definite,possible.\n"
	       "  --analysis=LIST       the analyses to run over prog's log after the run,\n"
	       "                        comma-separated (listed below). Default: leaks.\n"
	       "                        Empty (--analysis=): record only, print no summary.\n"
	       "                        Reports go to stderr, files into the run folder.\n"
	       "                        inefficient also records accesses unless --events is\n"
	       "                        given, and tags its blocks in the --data-format dump.\n"
	       "  --show-runtime        leaks: list the blocks the C and C++ runtimes keep for\n"
	       "                        themselves (not leaks: thread TLS vectors, stdio\n"
	       "                        buffers, libstdc++'s exception pool) by stack.\n"
	       "  --show-reachable      leaks: list the blocks the program still pointed to at\n"
	       "                        exit (not leaks: valgrind's \"still reachable\") by\n"
	       "                        stack.\n"
	       "  --show-held           leaks: list by stack the blocks the per-step rule found\n"
	       "                        that the program freed in a later step, before its\n"
	       "                        last step ended (not leaks: queues, prefetched\n"
	       "                        input, caches that turn over), and those the Python\n"
	       "                        package's sweep at exit freed (reference cycles,\n"
	       "                        CPython's and PyTorch's caches), those still in a\n"
	       "                        cache or queue that turns over when the steps\n"
	       "                        ended, and those of a stack that kept blocks in\n"
	       "                        one step only.\n"
	       "  --warmup-steps=N      leaks: blocks allocated in steps 1 to N are never\n"
	       "                        per-step leaks (default 1, msMemScope's rule, and 2\n"
	       "                        where the steps were inferred from a PyTorch\n"
	       "                        optimizer; 2 for a loop whose optimizer state or\n"
	       "                        caches appear in step 2).\n"
	       "  --leak-marks=NAME[,N] leaks: also msMemScope's offline rule: a block\n"
	       "                        allocated between mark N of that name (default 1) and\n"
	       "                        the next one, still live at the mark after those, is a\n"
	       "                        leak (marks: msmemscope_mark(), mstxMarkA(),\n"
	       "                        nvtxMarkA(), Python's msmemscope.mark()).\n"
	       "  --suppressions=FILE   leaks: leave out the leaks whose allocation stack has\n"
	       "                        a frame (function, source file or module) matching a\n"
	       "                        'leak:PATTERN' line of FILE (LeakSanitizer's format).\n"
	       "  --data-format=FORMAT  after the run, also write msMemScope's dump of every\n"
	       "                        event of prog: csv (dump/memscope_dump_{time}.csv) or\n"
	       "                        db (SQLite, dump/memscope_dump_{time}.db) in the run\n"
	       "                        folder. See msmemscope-replay(1), --export.\n"
	       "  --no-live-report      read prog's log only after prog exits. By default the\n"
	       "                        summary and leaks report are read while prog runs,\n"
	       "                        by a thread that only takes CPU time no other\n"
	       "                        thread wants (SCHED_IDLE), so the report is ready\n"
	       "                        soon after the exit; other analyses, a dump and\n"
	       "                        suppressions are always read after the run.\n"
	       "  -q, --quiet           no progress line: on a terminal, reading prog's log\n"
	       "                        (or a compare's) for more than half a second says on\n"
	       "                        stderr how far it got.\n"
	       "\n",
	       cli_progname, cli_progname, cli_progname, OUTPUT_DEFAULT);
	printf("Analyses (--analysis):\n");
	an_print_help(stdout);
	printf("  Their files go into the run folder. The analyses' own options (--buckets,\n"
	       "  --plot, --memory, --top, --depth, --json, ...) are msmemscope-replay's: run\n"
	       "  msmemscope-replay LOG --analysis LIST with them on the log afterwards.\n"
	       "\n"
	       "Compare (runs no program):\n"
	       "  --compare --input=BASE,COMPARE [--level=op|kernel]\n"
	       "                        align the operator launches (or kernel launches) of\n"
	       "                        two recordings by name (Myers diff), each a .mms log\n"
	       "                        or a memscope_dump CSV; write each launch's net bytes\n"
	       "                        on both sides and their difference to\n"
	       "                        DIR/compare/memory_compare_{time}.csv (DIR: --output)\n"
	       "                        and print the largest differences. For two steps of\n"
	       "                        one log: msmemscope-replay LOG --compare-steps N,M.\n"
	       "\n"
	       "Environment (runs no program):\n"
	       "  --print-env           print the environment msmemscope would give prog\n"
	       "                        with the recording options given, as shell commands\n"
	       "                        (export NAME=WORD, keeping an LD_PRELOAD already set\n"
	       "                        after the recorder), for a program started another\n"
	       "                        way: memscope.gdb's exec-wrapper, or a script's\n"
	       "                        eval \"$(msmemscope --print-env --call-stack=c:16)\".\n"
	       "                        The logs go into DIR itself (--output, created).\n"
	       "\n"
	       "  -h, --help            show this help and exit\n"
	       "  -v, --version         show the version and exit\n"
	       "\n"
	       "Output:\n"
	       "  Each run creates a new folder DIR/msmemscope_{PID}_{YYYYMMDDhhmmss}/ (PID is\n"
	       "  msmemscope's own, the time is local), never reusing one, which holds\n"
	       "  memscope_{pid}.mms for prog, one log for each process it forks or spawns\n"
	       "  (a forked child's replay starts from its parent's heap), and\n"
	       "  memscope_{pid}.exec{N}.mms for each image it execs (memscope_{pid}-{k}.mms\n"
	       "  for a process of another PID namespace whose pid was taken). Read them with\n"
	       "  msmemscope-replay. prog's own output is left alone; the summary goes to\n"
	       "  stderr.\n"
	       "\n"
	       "Exit status:\n"
	       "  prog's exit status; when signal N killed prog, msmemscope kills itself with\n"
	       "  N after the report (a shell's $? is 128+N, as for prog alone). 2 for a\n"
	       "  usage error (or a bad value of a variable below), 126 when prog cannot be\n"
	       "  executed, 127 when it is not found, 1 when msmemscope itself fails\n"
	       "  (recorder library missing, output folder not writable).\n"
	       "\n"
	       "Environment:\n"
	       "  MSMEMSCOPE_HOOKS      the recorder library to preload. Default: the one in\n"
	       "                        the build tree when msmemscope runs from there, else\n"
	       "                        %s\n"
	       "  MSMEMSCOPE_LOG_LIMIT, MSMEMSCOPE_CLOCK, MSMEMSCOPE_LOG_THREAD,\n"
	       "  MSMEMSCOPE_UNWIND, MSMEMSCOPE_UNWIND_CHECK\n"
	       "                        the recorder's settings without an option: passed\n"
	       "                        on to prog, checked first (see the recorder's\n"
	       "                        documentation, recorder.md).\n"
	       "\n"
	       "Examples:\n"
	       "  %s ./infer 5\n"
	       "  %s --call-stack=c:20 --output=/tmp/runs -- ./server --port 8080\n"
	       "  %s --steps=2,3 --events=alloc,launch ./train\n"
	       "  %s --analysis= -- make check        record only, no summary\n"
	       "  %s --compare --input=a.mms,b.mms    compare two runs\n"
	       "  %s --watch=embed,softmax ./infer 5  which launch changed embed's outputs\n"
	       "\n"
	       "See msmemscope(1) and the user guide for more.\n",
	       PKGLIBDIR "/" HOOKS_SO, cli_progname, cli_progname, cli_progname,
	       cli_progname,
	       cli_progname, cli_progname);
}
