/* SPDX-License-Identifier: MIT */
/* progress.c: the progress line of the command-line programs, and the
 * signals that stop their work over a log, see progress.h. */
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"

/* Work shorter than this prints nothing; then one redraw at most every
 * PROGRESS_EVERY_NS. */
#define PROGRESS_AFTER_NS 500000000ull
#define PROGRESS_EVERY_NS 100000000ull

/* -1: not decided yet; 0: off (--quiet, or stderr is not a terminal);
 * 1: on. */
static int enabled = -1;
/* Columns of the line on the terminal now, 0: none drawn. */
static int shown;

/* The signal caught by on_signal(), 0: none. */
static volatile sig_atomic_t caught;
/* progress_catch_interrupts(): SIGINT interrupts a command of the prompt
 * instead of ending the program. */
static volatile sig_atomic_t repl;

static void on_signal(int sig)
{
	/* A second one: at once, as without the handler. */
	if (caught && !repl) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	caught = sig;
}

/* Whether sig's handling is the default or ours (not ignored, not the
 * program's own). */
static bool handling_ours(int sig)
{
	struct sigaction old;

	return !sigaction(sig, NULL, &old) && (old.sa_handler == SIG_DFL || old.sa_handler == on_signal);
}

/* Gives sig to on_signal() with flags, unless it is ignored or another's:
 * one ignored (nohup, a background job of a shell) stays so. */
static void take(int sig, int flags)
{
	struct sigaction sa;

	if (!handling_ours(sig))
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = flags;
	sigaction(sig, &sa, NULL);
}

/* Gives sig its default handling back where on_signal() has it. */
static void give_back(int sig)
{
	struct sigaction old;

	if (!sigaction(sig, NULL, &old) && old.sa_handler == on_signal)
		signal(sig, SIG_DFL);
}

void progress_catch_signals(void)
{
	take(SIGINT, SA_RESTART);
	take(SIGTERM, SA_RESTART);
	take(SIGHUP, SA_RESTART);
}

void progress_catch_interrupts(void)
{
	repl = 1;
	caught = 0;
	/* No SA_RESTART: the read of the prompt's line returns (EINTR). */
	take(SIGINT, 0);
	/* The prompt's commands write no file: SIGTERM and SIGHUP end the
	 * program at once, as before any handler. */
	give_back(SIGTERM);
	give_back(SIGHUP);
}

void progress_uncatch_signals(void)
{
	give_back(SIGINT);
	give_back(SIGTERM);
	give_back(SIGHUP);
}

int progress_take_interrupt(void)
{
	int sig = caught;

	caught = 0;
	return sig;
}

int progress_caught(void)
{
	return caught;
}

void progress_die_if_caught(void)
{
	if (!caught || repl)
		return;
	progress_clear();
	cli_die_of(caught);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool is_on(void)
{
	if (enabled < 0)
		enabled = isatty(STDERR_FILENO) == 1;
	return enabled;
}

void progress_quiet(void)
{
	enabled = 0;
}

void progress_start(struct progress *p, const char *what, const char *path)
{
	snprintf(p->what, sizeof(p->what), "%s", what);
	p->path = path;
	p->drawn_ns = 0;
	p->start_ns = is_on() ? now_ns() : 0;
}

/* An event count for people: "812", "45.6 k", "12.3 M", "1.2 G". */
static const char *count(uint64_t n, char *buf, size_t cap)
{
	if (n < 10000)
		snprintf(buf, cap, "%" PRIu64, n);
	else if (n < 1000000)
		snprintf(buf, cap, "%.1f k", (double)n / 1e3);
	else if (n < 1000000000)
		snprintf(buf, cap, "%.1f M", (double)n / 1e6);
	else
		snprintf(buf, cap, "%.1f G", (double)n / 1e9);
	return buf;
}

/* The terminal's width, to keep the line on one row (a line that wraps
 * cannot be redrawn with '\r'); 0 when unknown. */
static int columns(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) || !ws.ws_col)
		return 0;
	return ws.ws_col;
}

int progress_update(void *ctx, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	char line[512], d[32], t[32];
	uint64_t now;
	int n, cols, pad;

	if (caught)
		return 1;
	if (!p->start_ns || !enabled)
		return 0;
	now = now_ns();
	if (now - p->start_ns < PROGRESS_AFTER_NS || (p->drawn_ns && now - p->drawn_ns < PROGRESS_EVERY_NS))
		return 0;
	if (total < done)
		total = done;
	n = snprintf(line, sizeof(line), "%s: %s %s: %s of %s events (%" PRIu64 "%%)", cli_progname, p->what, p->path,
		     count(done, d, sizeof(d)), count(total, t, sizeof(t)), total ? done * 100 / total : 100);
	if (n < 0)
		return 0;
	if (n >= (int)sizeof(line))
		n = (int)sizeof(line) - 1;
	cols = columns();
	if (cols && n > cols - 1)
		n = cols - 1;
	/* Spaces over what is left of a longer line drawn before. */
	pad = shown > n ? shown - n : 0;
	fprintf(stderr, "\r%.*s%*s", n, line, pad, "");
	if (pad)
		fprintf(stderr, "\r%.*s", n, line);
	fflush(stderr);
	shown = n;
	p->drawn_ns = now;
	return 0;
}

void progress_clear(void)
{
	if (!shown)
		return;
	fprintf(stderr, "\r%*s\r", shown, "");
	fflush(stderr);
	shown = 0;
}

void progress_end(struct progress *p)
{
	progress_clear();
	p->start_ns = 0;
	p->drawn_ns = 0;
}
