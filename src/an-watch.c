/* SPDX-License-Identifier: MIT */
/* an-watch.c: prints the watch analysis (replay/analyses/watch.c): per watched
 * block the first launch that changed it and all the launches that did,
 * and writes msMemScope's checksum CSV into {outdir}/watch_dump/. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis.h"
#include "cli.h"

/* msMemScope writes the bytes (full-content) or the checksum CSV: the
 * recorder's configuration, kept in the log, says which it did. */
static int full_content(mms_log_t *log)
{
	mms_config_t cfg;

	return mms_log_config(log, &cfg) == 0 && cfg.watch.on && cfg.watch.full_content;
}

/* The START operator of the recording's --watch=START[:outN],END, copied
 * into buf, and *out its ":outN" (-1 without); returns 0 when there is a
 * START, -1 when --watch named none. */
static int watch_start(mms_log_t *log, char *buf, size_t cap, int *out)
{
	mms_config_t cfg;

	if (mms_log_config(log, &cfg) || !cfg.watch.on || !cfg.watch.start[0])
		return -1;
	snprintf(buf, cap, "%s", cfg.watch.start);
	*out = cfg.watch.out;
	return 0;
}

/* Says why --watch=START,... watched nothing, when no block came from
 * START: a misspelt name and an operator without outputs look the same
 * otherwise. Returns 1 when it printed. */
static int explain_start(struct an_ctx *c, const mms_watch_t *r)
{
	char start[64];
	uint64_t n = r->start_launches;
	int out;

	if (watch_start(c->log, start, sizeof start, &out))
		return 0;
	for (size_t i = 0; i < r->nblocks; i++)
		if (!strcmp(r->blocks[i].name, start))
			return 0;
	if (!n)
		warn("watch: --watch named the start operator '%s', which never ran: check its name "
		     "(msmemscope-replay LOG --from 0 lists the launches)",
		     start);
	else if (out >= 0)
		warn("watch: --watch named output %d of the start operator '%s'; it ran %" PRIu64 " time%s but no "
		     "launch had that output (outputs count from 0, in the order a launch allocated the blocks it "
		     "kept or declared them written with msmemscope_access())",
		     out, start, n, n == 1 ? "" : "s");
	else
		warn("watch: --watch named the start operator '%s'; it ran %" PRIu64 " time%s but no launch had an "
		     "output to watch (a block it allocated and kept, or declared written with msmemscope_access())",
		     start, n, n == 1 ? "" : "s");
	return 1;
}

static uint64_t tid_of(mms_log_t *log, uint32_t thread)
{
	uint64_t tid = 0;

	mms_log_thread(log, thread, &tid, NULL);
	return tid;
}

/* The first change made by a launch (not between launches), or NULL. */
static const mms_watch_change_t *first_by_launch(const mms_watch_block_t *b)
{
	for (size_t k = 0; k < b->nchanges; k++)
		if (b->changes[k].launch)
			return &b->changes[k];
	return NULL;
}

static void json_change(FILE *f, mms_log_t *log, const mms_watch_change_t *c)
{
	fprintf(f, "{\"launch\":%" PRIu64 ",\"op\":", c->launch);
	if (c->op)
		json_put_string(f, c->op, strlen(c->op));
	else
		fputs("null", f);
	fprintf(f,
		",\"found_at\":%" PRIu64 ",\"step\":%" PRIu64 ",\"tid\":%" PRIu64 ",\"before\":\"%016" PRIx64
		"\",\"after\":\"%016" PRIx64 "\",\"event\":%" PRIu64 "}",
		c->found_at, c->step, tid_of(log, c->thread), c->before, c->after, c->event);
}

static void print_json(struct an_ctx *c, const mms_watch_t *r, const char *csv)
{
	FILE *f = c->out;

	fprintf(f, "{\"analysis\":\"watch\",\"sums\":%" PRIu64 ",\"csv\":", r->sums);
	if (csv)
		json_put_string(f, csv, strlen(csv));
	else
		fputs("null", f);
	fputs(",\"blocks\":[", f);
	for (size_t i = 0; i < r->nblocks; i++) {
		const mms_watch_block_t *b = &r->blocks[i];
		const mms_watch_change_t *first = first_by_launch(b);

		fprintf(f, "%s{\"name\":", i ? "," : "");
		json_put_string(f, b->name, strlen(b->name));
		fprintf(f,
			",\"out\":%u,\"addr\":\"0x%" PRIx64 "\",\"size\":%" PRIu64 ",\"sums\":%" PRIu64
			",\"first_launch\":%" PRIu64 ",\"first_sum\":\"%016" PRIx64 "\",\"last_sum\":\"%016" PRIx64
			"\",\"first_change\":",
			b->out, b->addr, b->size, b->sums, b->first_launch, b->first_crc, b->last_crc);
		if (first)
			json_change(f, c->log, first);
		else
			fputs("null", f);
		fputs(",\"changes\":[", f);
		for (size_t k = 0; k < b->nchanges; k++) {
			if (k)
				fputc(',', f);
			json_change(f, c->log, &b->changes[k]);
		}
		fputs("]}", f);
	}
	fputs("]}\n", f);
}

static void print_text(struct an_ctx *c, const mms_watch_t *r, const char *csv)
{
	FILE *f = c->out;
	char h[32];

	fprintf(f, "watch: %zu watched block%s, %" PRIu64 " checksum%s", r->nblocks, r->nblocks == 1 ? "" : "s",
		r->sums, r->sums == 1 ? "" : "s");
	if (csv)
		fprintf(f, " (%s)", csv);
	fputc('\n', f);
	for (size_t i = 0; i < r->nblocks; i++) {
		const mms_watch_block_t *b = &r->blocks[i];
		const mms_watch_change_t *first = first_by_launch(b);
		size_t nlaunch = 0;

		fprintf(f, "  '%s' out %u: 0x%" PRIx64 ", %s, %" PRIu64 " checksums from launch %" PRIu64 "\n", b->name,
			b->out, b->addr, human_bytes(b->size, h, sizeof h), b->sums, b->first_launch);
		if (!b->nchanges) {
			fprintf(f, "    never changed (%016" PRIx64 ")\n", b->first_crc);
			continue;
		}
		if (first) {
			char step[40] = ""; /* step 0: outside steps (a log without any) */

			if (first->step)
				snprintf(step, sizeof step, ", step %" PRIu64, first->step);
			fprintf(f, "    first changed by %s, launch %" PRIu64 "%s, thread %" PRIu64 ": %016" PRIx64
				" -> %016" PRIx64 "\n",
				first->op ? first->op : "?", first->launch, step, tid_of(c->log, first->thread),
				first->before, first->after);
		}
		for (size_t k = 0; k < b->nchanges; k++)
			nlaunch += b->changes[k].launch != 0;
		if (nlaunch) {
			fprintf(f, "    changed by %zu launch%s:", nlaunch, nlaunch == 1 ? "" : "es");
			for (size_t k = 0; k < b->nchanges; k++)
				if (b->changes[k].launch)
					fprintf(f, " %s#%" PRIu64, b->changes[k].op ? b->changes[k].op : "?",
						b->changes[k].launch);
			fputc('\n', f);
		}
		for (size_t k = 0; k < b->nchanges; k++)
			if (!b->changes[k].launch)
				fprintf(f,
					"    changed between launches, found at the start of launch %" PRIu64
					": %016" PRIx64 " -> %016" PRIx64 "\n",
					b->changes[k].found_at, b->changes[k].before, b->changes[k].after);
	}
}

int an_watch_add(struct an_ctx *c)
{
	mms_watch_options_t wo = { .out.overwrite = c->o->force };
	char start[64];
	int out, rc;

	if (!full_content(c->log)) {
		mms_log_info_t info;
		time_t secs;
		struct tm tm;
		char stamp[32];

		mms_log_get_info(c->log, &info);
		secs = (time_t)(info.start_realtime_ns / 1000000000u);
		localtime_r(&secs, &tm);
		strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &tm);
		c->watch_dir = an_out_path(c->o, "watch_dump");
		if (mkdir(c->watch_dir, 0750) < 0 && errno != EEXIST) {
			warn("%s: cannot create it: %s", c->watch_dir, strerror(errno));
			return CLI_EXIT_FAILURE;
		}
		c->watch_csv = xasprintf("%s/watch_dump_data_check_sum_host_%s.csv", c->watch_dir, stamp);
	}
	wo.csv_path = c->watch_csv;
	if (!watch_start(c->log, start, sizeof start, &out))
		wo.start = start;
	rc = mms_watch_add(c->pass, &wo, &c->watch);
	c->subscribed += !rc;
	if (rc == -EEXIST)
		warn("%s: exists; not replacing it (--force replaces it)", c->watch_csv);
	else if (rc)
		warn("%s: watch: %s", c->path, mms_strerror(rc));
	return rc ? CLI_EXIT_FAILURE : 0;
}

int an_watch_print(struct an_ctx *c)
{
	const mms_watch_t *r = c->watch;
	const char *csv = c->watch_csv;

	if (r->status) {
		warn("%s: watch: %s", c->path, mms_strerror(r->status));
		return CLI_EXIT_FAILURE;
	}
	if (c->watch_dir && !r->csv_written) {
		rmdir(c->watch_dir); /* made for the CSV; left alone when it holds anything */
		csv = NULL;
	}
	if (c->o->json)
		print_json(c, r, csv);
	else
		print_text(c, r, csv);
	fflush(c->out);
	explain_start(c, r);
	return 0;
}
