/* SPDX-License-Identifier: MIT */
/* an-compare.c: the compare report of both programs: reads two sides (logs,
 * dump CSVs, or two steps of one log), aligns their launches, writes
 * compare/memory_compare_{timestamp}.csv and prints the launches whose
 * memory differs most. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis.h"
#include "cli.h"
#include "logwords.h"

static const char *const side_names[] = { "base", "compare" };

/* Says why the compare failed: "PROG: compare: MESSAGE". */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: compare: ", cli_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Warns that a side stops short of the end of a damaged or cut log. */
static void warn_damage(const char *path, mms_log_t *log)
{
	mms_log_info_t info;

	mms_log_get_info(log, &info);
	if (info.damaged)
		warn("compare: %s: damaged at byte %" PRIu64 " (%s): compared the launches the reader could read",
		     path, info.damage_offset, info.damage ? info.damage : "unreadable");
	else if (info.cut)
		warn("compare: %s: recording was cut short (%s): compared the launches recorded", path,
		     mms_cut_reason(info.cut_errno));
}

/* Warns of a step compared that a recording in parts (--steps,
 * collect=deferred) left out, or has part of: its side holds no memory
 * event, or some, which is not the program's doing. */
static void warn_unrecorded(const char *path, mms_log_t *log, const uint64_t steps[2],
			    const mms_step_recorded_t recorded[2])
{
	char why[MMS_CONFIG_STEPS_MAX * 12 + 96];

	for (int i = 0; i < 2; i++) {
		log_step_unrecorded_why(log, steps[i], recorded[i], why, sizeof(why));
		if (recorded[i] == MMS_STEP_RECORDED_NONE)
			warn("compare: %s: step %" PRIu64 " was not recorded (%s): its memory events are not in "
			     "the log, and its side of the compare shows none",
			     path, steps[i], why);
		else if (recorded[i] == MMS_STEP_RECORDED_PART)
			warn("compare: %s: step %" PRIu64 " was recorded in part (%s): its side of the compare "
			     "shows the memory events of the part recorded",
			     path, steps[i], why);
	}
}

/* Reads sides from log in one pass: the whole log as side `side` when
 * steps is NULL (or both steps[] 0), else step steps[0] as base and
 * steps[1] as compare. *nsteps (when not NULL) gets the log's steps.
 * Returns 0 or a negative code; MMS_EUSAGE when the log has no such step. */
static int read_pass(mms_compare_t *c, int level, mms_log_t *log, const char *path, const struct an_opts *o, int side,
		     const uint64_t *steps, uint64_t *nsteps, mms_step_recorded_t *recorded)
{
	mms_launches_options_t lo[2] = { { .level = level }, { .level = level } };
	mms_launches_t *l[2] = { NULL, NULL };
	struct an_ctx *a;
	int rc, st, k, n = steps ? 2 : 1;

	a = an_open(path, log, 0, o, stderr, &st);
	for (k = 0, rc = 0; !rc && k < n; k++) {
		lo[k].step = steps ? steps[k] : 0;
		rc = mms_launches_add(a->pass, &lo[k], &l[k]);
		a->subscribed += !rc;
	}
	if (!rc)
		rc = an_pass(a) ? a->pass_rc : 0;
	if (!rc && nsteps)
		*nsteps = l[0]->steps;
	for (k = 0; !rc && recorded && k < n; k++)
		recorded[k] = l[k]->recorded;
	for (k = 0; !rc && k < n; k++)
		rc = l[k]->status ? l[k]->status : mms_compare_set(c, steps ? k : side, l[k]);
	mms_launches_free(l[0]);
	mms_launches_free(l[1]);
	an_close(a);
	return rc;
}

/* Whether the first 4 KiB of path hold a NUL byte: no CSV file does. */
static int binary_file(const char *path)
{
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return n > 0 && memchr(buf, 0, (size_t)n) != NULL;
}

/* Reads one side from path: a .mms log, else a memscope_dump CSV. Returns
 * 0, or CLI_EXIT_FAILURE after saying why. */
static int read_side(mms_compare_t *c, int level, int side, const char *path, const struct an_opts *o)
{

	mms_compare_error_t cerr;
	mms_open_error_t oerr = { 0 };
	mms_log_t *log;
	int rc;

	rc = mms_log_open_ex(path, &log, &oerr);
	if (rc == 0) {
		rc = read_pass(c, level, log, path, o, side, NULL, NULL, NULL);
		if (!rc)
			warn_damage(path, log);
		mms_log_close(log);
		if (rc) {
			say("%s: cannot replay it: %s", path, mms_strerror(rc));
			return CLI_EXIT_FAILURE;
		}
		return 0;
	}
	if (rc != MMS_EBADMAGIC && rc != MMS_ETRUNCATED) {
		say("%s: %s%s%s", path, mms_strerror(rc), oerr.what[0] ? ": " : "", oerr.what);
		return CLI_EXIT_FAILURE;
	}
	/* Not a log: a dump CSV, then, unless it holds binary data (a log
	 * cut in its header, any other file). */
	if (binary_file(path)) {
		say("%s: neither a msmemscope log (%s%s%s) nor a memscope_dump CSV (it holds binary data)", path,
		    rc == MMS_ETRUNCATED || !oerr.what[0] ? mms_strerror(rc) : "",
		    rc == MMS_ETRUNCATED && oerr.what[0] ? ": " : "", oerr.what);
		return CLI_EXIT_FAILURE;
	}
	rc = mms_compare_add_csv(c, side, path, &cerr);
	if (rc == MMS_ECORRUPT) {
		say("%s:%" PRIu64 ": %s (the inputs are msmemscope logs or memscope_dump CSVs)", path,
		     cerr.line, cerr.what);
		return CLI_EXIT_FAILURE;
	}
	if (rc) {
		say("%s: %s", path, mms_strerror(rc));
		return CLI_EXIT_FAILURE;
	}
	return 0;
}

/* Rows by |diff|, largest first, then in their order. */
static int by_diff(const void *x, const void *y)
{
	const mms_compare_row_t *a = *(const mms_compare_row_t *const *)x, *b = *(const mms_compare_row_t *const *)y;
	uint64_t da = a->diff < 0 ? -(uint64_t)a->diff : (uint64_t)a->diff;
	uint64_t db = b->diff < 0 ? -(uint64_t)b->diff : (uint64_t)b->diff;

	if (da != db)
		return da > db ? -1 : 1;
	return a < b ? -1 : a > b;
}

static void put_side_bytes(FILE *out, uint64_t launch, int64_t bytes, int json)
{
	if (!launch)
		fputs(json ? "null" : "N/A", out);
	else
		fprintf(out, "%" PRId64, bytes);
}

/* b - a, held at the ends of int64_t. */
static int64_t diff64(int64_t b, int64_t a)
{
	int64_t d;

	return __builtin_sub_overflow(b, a, &d) ? (b > a ? INT64_MAX : INT64_MIN) : d;
}

/* b - a in words: "+4.2 KiB", "-1000 B". */
static const char *diff_words(int64_t b, int64_t a, char *buf, size_t cap)
{
	char hb[32];

	snprintf(buf, cap, "%s%s", b < a ? "-" : "+",
		 human_bytes(b < a ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a, hb, sizeof(hb)));
	return buf;
}

static void print_report(FILE *out, const struct an_opts *o, const char *level, const char *const what[2],
			 const mms_compare_row_t *rows, size_t nrows, const mms_compare_stats_t *st, const char *file)
{
	const mms_compare_row_t **top = xmalloc((nrows ? nrows : 1) * sizeof(*top));
	size_t i, n = 0, shown;
	char hb[32];

	for (i = 0; i < nrows; i++)
		if (rows[i].diff)
			top[n++] = &rows[i];
	if (n)
		qsort(top, n, sizeof(*top), by_diff);
	shown = o->top && o->top < n ? o->top : n;
	if (o->json) {
		fputs("{\"analysis\":\"compare\",\"level\":", out);
		json_put_string(out, level, strlen(level));
		for (i = 0; i < 2; i++) {
			fprintf(out, ",\"%s\":{\"input\":", side_names[i]);
			json_put_string(out, what[i], strlen(what[i]));
			fprintf(out, ",\"launches\":%" PRIu64 ",\"bytes\":%" PRId64 ",\"only\":%" PRIu64 "}",
				st->launches[i], st->bytes[i], st->only[i]);
		}
		fprintf(out,
			",\"paired\":%" PRIu64 ",\"diff_bytes\":%" PRId64
			",\"differing\":%zu,\"outside\":{\"base\":%" PRId64 ",\"compare\":%" PRId64 ",\"diff\":%" PRId64
			"},\"file\":",
			st->paired, diff64(st->bytes[1], st->bytes[0]), n, st->outside[0], st->outside[1],
			diff64(st->outside[1], st->outside[0]));
		json_put_string(out, file, strlen(file));
		fputs(",\"top\":[", out);
		for (i = 0; i < shown; i++) {
			fprintf(out, "%s{\"name\":", i ? "," : "");
			json_put_string(out, top[i]->name, strlen(top[i]->name));
			fprintf(out, ",\"base_launch\":%" PRIu64 ",\"compare_launch\":%" PRIu64 ",\"base\":",
				top[i]->base_launch, top[i]->compare_launch);
			put_side_bytes(out, top[i]->base_launch, top[i]->base, 1);
			fputs(",\"compare\":", out);
			put_side_bytes(out, top[i]->compare_launch, top[i]->compare, 1);
			fprintf(out, ",\"diff\":%" PRId64 "}", top[i]->diff);
		}
		fputs("]}\n", out);
		free(top);
		return;
	}
	fprintf(out, "====== compare (%s launches) ======\n", level);
	for (i = 0; i < 2; i++)
		fprintf(out, "%-8s %s: %" PRIu64 " launches, net %" PRId64 " bytes, %" PRIu64 " only here\n",
			side_names[i], what[i], st->launches[i], st->bytes[i], st->only[i]);
	fprintf(out, "paired %" PRIu64 " launches; %zu rows differ; total diff %" PRId64 " bytes (%s)\n", st->paired, n,
		diff64(st->bytes[1], st->bytes[0]), diff_words(st->bytes[1], st->bytes[0], hb, sizeof(hb)));
	/* What moved between the launches: a step that grew with no launch
	 * growing grew here. */
	fprintf(out,
		"outside the %s launches: base net %" PRId64 " bytes, compare net %" PRId64 " bytes; diff %" PRId64
		" bytes (%s)\n",
		level, st->outside[0], st->outside[1], diff64(st->outside[1], st->outside[0]),
		diff_words(st->outside[1], st->outside[0], hb, sizeof(hb)));
	if (shown) {
		fprintf(out, "largest differences (%zu of %zu):\n", shown, n);
		fprintf(out, "  %14s %14s %14s  %-8s %s\n", "diff", "base", "compare", "launch", "name");
		for (i = 0; i < shown; i++) {
			char b[24], c[24], at[48];

			if (top[i]->base_launch)
				snprintf(b, sizeof(b), "%" PRId64, top[i]->base);
			else
				snprintf(b, sizeof(b), "N/A");
			if (top[i]->compare_launch)
				snprintf(c, sizeof(c), "%" PRId64, top[i]->compare);
			else
				snprintf(c, sizeof(c), "N/A");
			if (top[i]->base_launch && top[i]->compare_launch)
				snprintf(at, sizeof(at), "#%" PRIu64 "/#%" PRIu64, top[i]->base_launch,
					 top[i]->compare_launch);
			else if (top[i]->base_launch)
				snprintf(at, sizeof(at), "#%" PRIu64 "/-", top[i]->base_launch);
			else
				snprintf(at, sizeof(at), "-/#%" PRIu64, top[i]->compare_launch);
			fprintf(out, "  %+14" PRId64 " %14s %14s  %-8s %s\n", top[i]->diff, b, c, at, top[i]->name);
		}
	} else {
		fputs("no launch differs\n", out);
	}
	fprintf(out, "wrote %s\n", file);
	free(top);
}

int an_compare(const struct an_compare_args *a, const struct an_opts *o, FILE *out)
{
	const char *level = a->level == MMS_COMPARE_KERNEL ? "kernel" : "op";
	const mms_compare_row_t *rows;
	mms_compare_stats_t st;
	mms_compare_t *c;
	char name[64], *dir, *file, *what[2];
	size_t nrows;
	int rc, status = CLI_EXIT_FAILURE;

	rc = mms_compare_open(a->level, &c);
	if (rc)
		die(CLI_EXIT_FAILURE, "compare: %s", mms_strerror(rc));
	if (a->steps[0]) {
		mms_open_error_t oerr = { 0 };
		mms_step_recorded_t recorded[2] = { MMS_STEP_RECORDED_ALL, MMS_STEP_RECORDED_ALL };
		uint64_t nsteps = 0;
		mms_log_t *log;

		rc = mms_log_open_ex(a->input[0], &log, &oerr);
		if (rc) {
			say("%s: %s%s%s", a->input[0], mms_strerror(rc), oerr.what[0] ? ": " : "", oerr.what);
			goto out;
		}
		rc = read_pass(c, a->level, log, a->input[0], o, 0, a->steps, &nsteps, recorded);
		if (!rc) {
			warn_damage(a->input[0], log);
			warn_unrecorded(a->input[0], log, a->steps, recorded);
		}
		mms_log_close(log);
		if (rc == MMS_EUSAGE) {
			say("%s: no step %" PRIu64 ": the log has %" PRIu64 " step%s", a->input[0],
			     a->steps[0] > nsteps ? a->steps[0] : a->steps[1], nsteps, nsteps == 1 ? "" : "s");
			goto out;
		}
		if (rc) {
			say("%s: cannot replay it: %s", a->input[0], mms_strerror(rc));
			goto out;
		}
		what[0] = xasprintf("%s step %" PRIu64, a->input[0], a->steps[0]);
		what[1] = xasprintf("%s step %" PRIu64, a->input[0], a->steps[1]);
	} else {
		if (read_side(c, a->level, 0, a->input[0], o) || read_side(c, a->level, 1, a->input[1], o))
			goto out;
		what[0] = xstrdup(a->input[0]);
		what[1] = xstrdup(a->input[1]);
	}
	rc = mms_compare_align(c, &rows, &nrows, &st);
	if (rc) {
		say("cannot align the launches: %s", mms_strerror(rc));
		goto out_what;
	}
	dir = xasprintf("%s/compare", o->outdir ? o->outdir : ".");
	rc = cli_make_dirs(dir);
	if (rc) {
		say("cannot create %s: %s", dir, strerror(-rc));
		free(dir);
		goto out_what;
	}
	mms_compare_name(name, sizeof(name));
	file = xasprintf("%s/%s", dir, name);
	rc = mms_compare_write_csv(c, file, &(mms_output_options_t){ .overwrite = o->force });
	/* A compare in the same second wrote that name: the next free one,
	 * memory_compare_{timestamp}_N.csv, rather than replacing it. */
	for (int k = 1; rc == -EEXIST && k < 100; k++) {
		free(file);
		file = xasprintf("%s/%.*s_%d.csv", dir, (int)(strlen(name) - 4), name, k);
		rc = mms_compare_write_csv(c, file, NULL);
	}
	free(dir);
	if (rc == -EEXIST)
		say("%s exists; remove the compare files of this second", file);
	else if (rc)
		say("cannot write %s: %s", file, mms_strerror(rc));
	else {
		print_report(out, o, level, (const char *const *)what, rows, nrows, &st, file);
		status = 0;
	}
	free(file);
out_what:
	free(what[0]);
	free(what[1]);
out:
	mms_compare_close(c);
	return status;
}
