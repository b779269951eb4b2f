/* SPDX-License-Identifier: MIT */
/* replay-interactive.c: msmemscope-replay -i, a stepper over a replay
 * that reads commands from a terminal (with line editing and history when
 * built with libedit) or from stdin for scripts. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_LIBEDIT
#include <editline/readline.h>
#endif

#include "cli.h"
#include "logwords.h"
#include "progress.h"
#include "replay-cli.h"

#define MAX_ARGS 8
#define LIST_MAX 20 /* events printed one per line by next/back */

struct session {
	struct show *s;
};

static const char help_text[] =
	"Commands (a position is the number of events applied: 0 is before event #0):\n"
	"  next [N]           apply the next N events (default 1) and print them\n"
	"  back [N]           go back N events (default 1)\n"
	"  step [N]           go to the end of the current step, or N steps on\n"
	"  goto event N       go to just after event #N\n"
	"  goto step N        go to the start of step N (before its first event)\n"
	"  goto end           go to the end of the log\n"
	"  event N            goto event N (the words of --event N)\n"
	"  op NAME            go to the next launch of operator NAME (the rest of the\n"
	"                     line, spaces and all; quotes around it are dropped)\n"
	"  where              position, step, operator, live and peak bytes\n"
	"  live               the live blocks, grouped by allocation stack\n"
	"  leaks              msMemScope's leaks so far: blocks allocated in a step N >= 2\n"
	"                     still live after step N + 1 ended\n"
	"  info block ADDR    the block containing ADDR (live, or the last one freed);\n"
	"                     also: block ADDR\n"
	"  report step N      what step N did (as --step N prints it)\n"
	"  help               this list\n"
	"  quit               leave (end of input does too)\n";

/* Reports a failed command: text on stderr, or a JSON object. The session
 * goes on, and its exit status stays 0: the commands ran. */
static void fail(struct session *ss, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct session *ss, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	/* A command Ctrl-C interrupted fails: "Interrupted." says it. */
	if (progress_caught())
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ss->s->json) {
		fputs("{\"error\":", ss->s->out);
		json_put_string(ss->s->out, msg, strlen(msg));
		fputs("}\n", ss->s->out);
	} else {
		/* What was typed is quoted in it: its control characters
		 * (an escape sequence's) are not the terminal's to obey. */
		for (char *c = msg; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		fflush(ss->s->out);
		fprintf(stderr, "%s\n", msg);
	}
}

/* Parses argument i as a count (default dflt when absent). */
static int arg_count(struct session *ss, int argc, char **argv, int i, uint64_t dflt, uint64_t *out)
{
	if (argc <= i) {
		*out = dflt;
		return 0;
	}
	if (cli_parse_u64(argv[i], out)) {
		fail(ss, "'%s' is not %s", argv[i], cli_u64_why(argv[i]));
		return -1;
	}
	return 0;
}

static void end_answer(struct session *ss)
{
	if (ss->s->json)
		fputc('\n', ss->s->out);
}

static void print_where(struct session *ss)
{
	show_where(ss->s);
	end_answer(ss);
}

/* Applies up to n events, printing the first LIST_MAX of them. */
static void cmd_next(struct session *ss, uint64_t n)
{
	struct show *s = ss->s;
	mms_event_t ev;
	uint64_t i;
	int rc = 1;

	for (i = 0; i < n; i++) {
		rc = mms_replay_next(s->r, &ev);
		if (rc <= 0)
			break;
		if (i < LIST_MAX && !s->json)
			show_event_line(s, &ev);
	}
	if (rc < 0)
		fail(ss, "the replay stops here: %s", mms_strerror(rc));
	else if (i < n && !s->json)
		fprintf(s->out, "end of the log after %" PRIu64 " event%s\n", i, i == 1 ? "" : "s");
	if (i > LIST_MAX && !s->json)
		fprintf(s->out, "... %" PRIu64 " events in all\n", i);
	if (s->json) {
		/* One answer per command: the last event and where it leaves us. */
		fputs("{\"applied\":", s->out);
		fprintf(s->out, "%" PRIu64 ",\"last_event\":", i);
		if (i && mms_replay_last_event(s->r, &ev))
			show_event_line(s, &ev);
		else
			fputs("null", s->out);
		fputs(",\"where\":", s->out);
		show_where(s);
		fputs("}\n", s->out);
	}
}

static void seek_and_show(struct session *ss, uint64_t pos, int show_event)
{
	struct show *s = ss->s;
	mms_event_t ev;
	int rc;

	rc = mms_replay_seek(s->r, pos);
	if (rc) {
		fail(ss, "cannot go to position %" PRIu64 ": %s", pos, mms_strerror(rc));
		return;
	}
	if (show_event && mms_replay_last_event(s->r, &ev)) {
		if (s->json) {
			fputs("{\"event\":", s->out);
			show_event_line(s, &ev);
			fputs(",\"where\":", s->out);
			show_where(s);
			fputs("}\n", s->out);
			return;
		}
		show_event_line(s, &ev);
	}
	print_where(ss);
}

static void cmd_step(struct session *ss, uint64_t n)
{
	struct show *s = ss->s;
	uint64_t steps = mms_replay_steps(s->r), k, begin, end;
	mms_where_t w;

	if (!steps) {
		fail(ss, "the log has no steps (no msmemscope_step() call, no \"step start\" range); use next N or "
			 "goto event N");
		return;
	}
	mms_replay_where(s->r, &w);
	/* The first step that ends after here is the current one. */
	for (k = 1; k <= steps; k++) {
		mms_replay_step_range(s->r, k, &begin, &end);
		if (end > w.position)
			break;
	}
	if (k > steps) {
		fail(ss, "no step ends after position %" PRIu64 " (the last, step %" PRIu64 ", ended before)", w.position,
		     steps);
		return;
	}
	k += n ? n - 1 : 0;
	if (k > steps)
		k = steps;
	mms_replay_step_range(s->r, k, &begin, &end);
	if (!s->json)
		fprintf(s->out, "end of step %" PRIu64 "\n", k);
	seek_and_show(ss, end, 0);
}

/* goto event N (and event N): just after event #N. */
static void goto_event(struct session *ss, uint64_t n)
{
	mms_where_t w;

	mms_replay_where(ss->s->r, &w);
	if (n >= w.events) {
		fail(ss, "no event #%" PRIu64 ": the log has %" PRIu64 " events (#0 to #%" PRIu64 ")", n, w.events,
		     w.events ? w.events - 1 : 0);
		return;
	}
	seek_and_show(ss, n + 1, 1);
}

static void cmd_goto(struct session *ss, int argc, char **argv)
{
	struct show *s = ss->s;
	uint64_t n, begin, steps = mms_replay_steps(s->r);
	mms_log_fork_t fk;
	mms_where_t w;

	mms_replay_where(s->r, &w);
	if (argc == 2 && !strcmp(argv[1], "end")) {
		seek_and_show(ss, w.events, 1);
		return;
	}
	if (argc != 3 || (strcmp(argv[1], "event") && strcmp(argv[1], "step"))) {
		fail(ss, "usage: goto event N | goto step N | goto end");
		return;
	}
	if (arg_count(ss, argc, argv, 2, 0, &n))
		return;
	if (!strcmp(argv[1], "event")) {
		goto_event(ss, n);
		return;
	}
	if (n < 1 || n > steps) {
		fail(ss, "no step %" PRIu64 ": the log has %" PRIu64 " step%s", n, steps, steps == 1 ? "" : "s");
		return;
	}
	if (log_step_in_parent(s->log, n, &fk) == 2) {
		fail(ss,
		     "step %" PRIu64 " is pid %" PRIu64 "'s: it ended before that process forked this one, whose log "
		     "goes on from there; the parent's log has it: %s",
		     n, fk.parent_pid, fk.parent_log);
		return;
	}
	mms_replay_step_range(s->r, n, &begin, NULL);
	if (!s->json)
		fprintf(s->out, "start of step %" PRIu64 "\n", n);
	seek_and_show(ss, begin, 0);
}

static void cmd_op(struct session *ss, const char *name)
{
	struct show *s = ss->s;
	mms_event_t ev;
	mms_where_t w;
	int rc;

	mms_replay_where(s->r, &w);
	while ((rc = mms_replay_next(s->r, &ev)) == 1) {
		if (ev.kind == MMS_EV_OP_LAUNCH && ev.sub == 0 && ev.name && !strcmp(ev.name, name)) {
			seek_and_show(ss, ev.id + 1, 1);
			return;
		}
	}
	/* Not found: stay where we were. */
	mms_replay_seek(s->r, w.position);
	if (rc < 0)
		fail(ss, "no launch of operator '%s' before the replay stopped: %s", name, mms_strerror(rc));
	else
		fail(ss, "no launch of operator '%s' after position %" PRIu64, name, w.position);
}

static void cmd_groups(struct session *ss, int leaks)
{
	struct show *s = ss->s;
	mms_stack_group_t *g;
	mms_where_t w;
	size_t n;
	uint64_t hi = UINT64_MAX;
	char title[128];
	int rc;

	mms_replay_where(s->r, &w);
	if (leaks) {
		uint64_t ended;

		if (!mms_replay_steps(s->r)) {
			fail(ss, "the log has no steps, so no step has ended; 'live' lists every live block");
			return;
		}
		/* msMemScope's rule: a block allocated in step N >= 2 (step 1
		 * warms up) is a leak once step N + 1 has ended. */
		ended = w.in_step ? w.step - (w.step > 0) : w.step;
		if (ended < 3) {
			if (s->json)
				fputs("{\"blocks\":0,\"bytes\":0,\"groups\":[],\"groups_total\":0}\n", s->out);
			else
				fprintf(s->out, "no leaks yet: a block allocated in step N >= 2 leaks once step N + 1 has "
						"ended, and %" PRIu64 " step%s ended so far\n",
					ended, ended == 1 ? " has" : "s have");
			return;
		}
		hi = ended - 1;
	}
	rc = mms_replay_group_live(s->r, leaks ? 2 : 0, hi, &g, &n);
	if (rc) {
		fail(ss, "cannot group the live blocks: %s", mms_strerror(rc));
		return;
	}
	if (leaks) {
		/* Allocated before recording last stopped: freed since or not,
		 * the log cannot tell; not counted, said apart. */
		size_t i, j, un = 0;
		uint64_t ub = 0;

		for (i = j = 0; i < n; i++) {
			if (g[i].reach == MMS_REACH_UNRECORDED) {
				un += g[i].blocks;
				ub += g[i].bytes;
			} else {
				g[j++] = g[i];
			}
		}
		n = j;
		snprintf(title, sizeof(title), "Leaks (allocated in steps 2 to %" PRIu64 ", still live after the next step ended)", hi);
		show_groups(s, title, g, n);
		if (un && !s->json)
			fprintf(s->out,
				"Not counted: %zu block%s, %" PRIu64 " bytes allocated before recording stopped "
				"(freed while nothing was recorded or not, the log cannot tell)\n",
				un, un == 1 ? "" : "s", ub);
	} else {
		snprintf(title, sizeof(title), "Live blocks at position %" PRIu64, w.position);
		show_groups(s, title, g, n);
	}
	end_answer(ss);
	free(g);
}

static void cmd_info_block(struct session *ss, const char *arg)
{
	struct show *s = ss->s;
	mms_block_t b;
	uint64_t addr;
	char *end;
	int rc;

	errno = 0;
	addr = strtoull(arg, &end, 0);
	if (errno || *end || end == arg) {
		fail(ss, "'%s' is not an address (write it as 0x55d0c1a2b2c0 or in decimal)", arg);
		return;
	}
	if (mms_replay_block_at(s->r, addr, &b) == 1) {
		show_block(s, &b);
		end_answer(ss);
		return;
	}
	rc = mms_replay_freed_block_at(s->r, addr, &b);
	if (rc == 1) {
		show_block(s, &b);
		end_answer(ss);
		return;
	}
	if (rc < 0)
		fail(ss, "cannot search the freed blocks: %s", mms_strerror(rc));
	else
		fail(ss, "no block contains 0x%" PRIx64 " here, and none that did was freed before", addr);
}

static void cmd_report(struct session *ss, int argc, char **argv)
{
	struct show *s = ss->s;
	mms_step_report_t *rep;
	uint64_t n, steps = mms_replay_steps(s->r);
	int rc;

	if (argc != 3 || strcmp(argv[1], "step")) {
		fail(ss, "usage: report step N");
		return;
	}
	if (arg_count(ss, argc, argv, 2, 0, &n))
		return;
	if (n < 1 || n > steps) {
		fail(ss, "no step %" PRIu64 ": the log has %" PRIu64 " step%s", n, steps, steps == 1 ? "" : "s");
		return;
	}
	rc = show_step_replay(s, n, &rep);
	if (rc) {
		fail(ss, "cannot replay step %" PRIu64 ": %s", n, mms_strerror(rc));
		return;
	}
	show_step_report(s, rep);
	end_answer(ss);
	mms_step_report_free(rep);
}

/* The NAME of an `op NAME' line: the rest of the line, its spaces kept
 * (NVTX ranges' names have them: "forward pass"), less one pair of
 * quotes around it; cut off in line. NULL for another command. */
static char *op_name_arg(char *line)
{
	char *p = line + strspn(line, " \t"), *end;

	if (strncmp(p, "op", 2) || (p[2] != ' ' && p[2] != '\t'))
		return NULL;
	p += 2 + strspn(p + 2, " \t");
	end = p + strlen(p);
	while (end > p && strchr(" \t\r\n", end[-1]))
		end--;
	*end = '\0';
	if (end - p >= 2 && (*p == '"' || *p == '\'') && end[-1] == *p) {
		*--end = '\0';
		p++;
	}
	return p;
}

/* Runs one command line; returns 1 to quit. */
static int run_line(struct session *ss, char *line)
{
	char *argv[MAX_ARGS], *save = NULL, *tok, *name;
	struct show *s = ss->s;
	uint64_t n;
	mms_where_t w;
	int argc = 0;

	if ((name = op_name_arg(line)) && *name) {
		cmd_op(ss, name);
		fflush(s->out);
		return 0;
	}
	for (tok = strtok_r(line, " \t\r\n", &save); tok && argc < MAX_ARGS; tok = strtok_r(NULL, " \t\r\n", &save))
		argv[argc++] = tok;
	if (!argc || argv[0][0] == '#')
		return 0;
	if (!strcmp(argv[0], "quit") || !strcmp(argv[0], "q") || !strcmp(argv[0], "exit"))
		return 1;
	if (!strcmp(argv[0], "help") || !strcmp(argv[0], "h") || !strcmp(argv[0], "?")) {
		if (s->json) {
			fputs("{\"help\":", s->out);
			json_put_string(s->out, help_text, strlen(help_text));
			fputs("}\n", s->out);
		} else {
			fputs(help_text, s->out);
		}
	} else if (!strcmp(argv[0], "next") || !strcmp(argv[0], "n")) {
		if (!arg_count(ss, argc, argv, 1, 1, &n))
			cmd_next(ss, n);
	} else if (!strcmp(argv[0], "back") || !strcmp(argv[0], "b")) {
		if (!arg_count(ss, argc, argv, 1, 1, &n)) {
			mms_replay_where(s->r, &w);
			seek_and_show(ss, n > w.position ? 0 : w.position - n, 1);
		}
	} else if (!strcmp(argv[0], "step") || !strcmp(argv[0], "s")) {
		if (!arg_count(ss, argc, argv, 1, 1, &n))
			cmd_step(ss, n);
	} else if (!strcmp(argv[0], "goto") || !strcmp(argv[0], "g")) {
		cmd_goto(ss, argc, argv);
	} else if (!strcmp(argv[0], "event")) {
		/* As --event N says it: goto event N. */
		if (argc != 2)
			fail(ss, "usage: event N");
		else if (!arg_count(ss, argc, argv, 1, 0, &n))
			goto_event(ss, n);
	} else if (!strcmp(argv[0], "op")) {
		if (argc != 2)
			fail(ss, "usage: op NAME");
		else
			cmd_op(ss, argv[1]);
	} else if (!strcmp(argv[0], "where") || !strcmp(argv[0], "w")) {
		print_where(ss);
	} else if (!strcmp(argv[0], "live")) {
		cmd_groups(ss, 0);
	} else if (!strcmp(argv[0], "leaks")) {
		cmd_groups(ss, 1);
	} else if (!strcmp(argv[0], "info")) {
		if (argc != 3 || strcmp(argv[1], "block"))
			fail(ss, "usage: info block ADDR");
		else
			cmd_info_block(ss, argv[2]);
	} else if (!strcmp(argv[0], "block")) {
		if (argc != 2)
			fail(ss, "usage: block ADDR");
		else
			cmd_info_block(ss, argv[1]);
	} else if (!strcmp(argv[0], "report")) {
		cmd_report(ss, argc, argv);
	} else {
		fail(ss, "unknown command '%s'; 'help' lists the commands", argv[0]);
	}
	fflush(s->out);
	return 0;
}

/* After a command: "Interrupted." when Ctrl-C came while it ran (it
 * stopped where it stood, or had ended already). */
static void interrupted(struct session *ss)
{
	if (!progress_take_interrupt())
		return;
	fflush(ss->s->out);
	if (ss->s->json) {
		fputs("{\"error\":\"interrupted\"}\n", ss->s->out);
		fflush(ss->s->out);
	} else {
		fputs("Interrupted.\n", stderr);
	}
}

/* The next command line into *out: 1; 0 at the end of the input; -1 when
 * Ctrl-C dropped the line being typed. A terminal's line is edited
 * (*edited, freed at the next call) where editline is built in; else
 * read into *line (*cap bytes), after a prompt on prompt_to for a
 * terminal. */
static int next_line(FILE *in, int tty, FILE *prompt_to, char **edited, char **line, size_t *cap, char **out)
{
#ifdef HAVE_LIBEDIT
	(void)prompt_to;
	if (tty) {
		free(*edited);
		*edited = readline("(msmemscope) ");
		if (!*edited)
			return progress_take_interrupt() ? -1 : 0;
		if (**edited)
			add_history(*edited);
		*out = *edited;
		return 1;
	}
#else
	(void)edited;
	if (tty) {
		fputs("(msmemscope) ", prompt_to);
		fflush(prompt_to);
	}
#endif
	if (getline(line, cap, in) < 0) {
		if (!tty || !progress_take_interrupt())
			return 0;
		clearerr(in);
		return -1;
	}
	*out = *line;
	return 1;
}

int replay_interactive(struct show *s, FILE *in)
{
	struct session ss = { s };
	int tty = isatty(fileno(in)) && isatty(STDOUT_FILENO);
	char *line = NULL, *edited = NULL, *l;
	size_t cap = 0;
	int quit = 0, rc;

	/* On a terminal Ctrl-C interrupts the command or the line typed and
	 * the prompt comes back; commands read from elsewhere are a script,
	 * which a signal ends as it would have before. */
	if (tty)
		progress_catch_interrupts();
	else
		progress_uncatch_signals();
	if (tty && !s->json) {
		fprintf(s->out, "%s: replaying %s; 'help' lists the commands.\n", cli_progname, s->path);
		show_where(s);
	}
#ifdef HAVE_LIBEDIT
	/* editline's handlers would send the signal on to the whole process
	 * group: ours takes it. */
	rl_catch_signals = 0;
#endif
	while (!quit && (rc = next_line(in, tty, s->out, &edited, &line, &cap, &l))) {
		if (rc < 0) {
			fputc('\n', s->out);
			continue;
		}
		quit = run_line(&ss, l);
		interrupted(&ss);
	}
	free(edited);
	free(line);
	if (tty && !quit)
		fputc('\n', s->out);
	return 0;
}
