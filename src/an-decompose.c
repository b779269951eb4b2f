/* SPDX-License-Identifier: MIT */
/* an-decompose.c: prints the decompose analysis: live bytes by memory kind
 * and owner levels, as an indented tree with percentages of the live
 * total, at the end of the log and at its peak, or after one event. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "logwords.h"

static double percent(uint64_t part, uint64_t total)
{
	return total ? (double)part * 100.0 / (double)total : 0.0;
}

static void text_line(FILE *f, uint64_t bytes, uint64_t blocks, uint64_t total, unsigned indent, const char *name)
{
	fprintf(f, "  %12" PRIu64 " %8" PRIu64 " %7.2f%%  %*s%s\n", bytes, blocks, percent(bytes, total),
		(int)indent * 2, "", name);
}

static void print_text(FILE *f, const char *what, const mms_decompose_tree_t *d)
{
	char h[32];
	size_t i;

	if (!what)
		fprintf(f, "decompose after event %" PRIu64 ": ", d->position - 1);
	else if (d->position)
		fprintf(f, "decompose %s (after event %" PRIu64 "): ", what, d->position - 1);
	else
		fprintf(f, "decompose %s (before the first event): ", what);
	if (!d->blocks) {
		fputs("no live blocks\n", f);
		return;
	}
	fprintf(f, "%s live in %" PRIu64 " block%s\n", human_bytes(d->bytes, h, sizeof(h)), d->blocks,
		d->blocks == 1 ? "" : "s");
	fprintf(f, "  %12s %8s %8s  %s\n", "bytes", "blocks", "%", "kind, owner levels");
	for (i = 0; i < d->n; i++) {
		const mms_decompose_node_t *nd = &d->nodes[i];

		text_line(f, nd->bytes, nd->blocks, d->bytes, nd->depth, nd->name);
		/* What the owner itself holds, beside what its sub-levels
		 * hold, gets a line of its own under it. */
		if (nd->self_blocks && nd->self_bytes != nd->bytes)
			text_line(f, nd->self_bytes, nd->self_blocks, d->bytes, nd->depth + 1, "(itself)");
	}
}

/* Prints the nodes from *i that lie below depth as a JSON array of
 * objects with their children nested. */
static void json_nodes(FILE *f, const mms_decompose_tree_t *d, size_t *i, unsigned depth)
{
	int first = 1;

	fputc('[', f);
	while (*i < d->n && d->nodes[*i].depth == depth) {
		const mms_decompose_node_t *nd = &d->nodes[(*i)++];

		fputs(first ? "{\"name\":" : ",{\"name\":", f);
		first = 0;
		json_put_string(f, nd->name, strlen(nd->name));
		fprintf(f,
			",\"bytes\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"percent\":%.2f,\"self_bytes\":%" PRIu64
			",\"self_blocks\":%" PRIu64 ",\"children\":",
			nd->bytes, nd->blocks, percent(nd->bytes, d->bytes), nd->self_bytes, nd->self_blocks);
		json_nodes(f, d, i, depth + 1);
		fputc('}', f);
	}
	fputc(']', f);
}

static void print_json(FILE *f, const char *at, const mms_decompose_tree_t *d)
{
	size_t i = 0;

	fprintf(f,
		"{\"analysis\":\"decompose\",\"at\":\"%s\",\"position\":%" PRIu64 ",\"bytes\":%" PRIu64
		",\"blocks\":%" PRIu64 ",\"tree\":",
		at, d->position, d->bytes, d->blocks);
	json_nodes(f, d, &i, 0);
	fputs("}\n", f);
}

static void print(struct an_ctx *c, const char *at, const char *what, const mms_decompose_tree_t *d)
{
	if (c->o->json)
		print_json(c->out, at, d);
	else
		print_text(c->out, what, d);
}

/* --at-event N: the state just after event N, through the seek index. */
static int at_event(struct an_ctx *c)
{
	mms_replay_options_t ro = { .progress = progress_update, .progress_ctx = &c->progress };
	mms_decompose_tree_t *d;
	mms_replay_t *r;
	mms_where_t w;
	int rc;

	progress_start(&c->progress, "indexing", c->path);
	rc = mms_replay_open_ex(c->log, &ro, &r);
	progress_end(&c->progress);
	if (rc) {
		warn("decompose: %s: cannot replay: %s", c->path, mms_strerror(rc));
		return CLI_EXIT_FAILURE;
	}
	mms_replay_where(r, &w);
	if (c->o->at_event >= w.events) {
		say_error("decompose: %s: no event %" PRIu64 ": the log has %" PRIu64 " events (0 to %" PRIu64 ")",
			  c->path, c->o->at_event, w.events, w.events ? w.events - 1 : 0);
		mms_replay_close(r);
		return CLI_EXIT_FAILURE;
	}
	rc = mms_replay_seek(r, c->o->at_event + 1);
	if (!rc)
		rc = mms_decompose_replay(r, &d);
	mms_replay_close(r);
	if (rc) {
		warn("decompose: %s: cannot replay to event %" PRIu64 ": %s", c->path, c->o->at_event,
		     mms_strerror(rc));
		return CLI_EXIT_FAILURE;
	}
	print(c, "event", NULL, d);
	mms_decompose_tree_free(d);
	return 0;
}

int an_decompose_add(struct an_ctx *c)
{
	int rc;
	mms_decompose_options_t opt = { .kinds = c->o->memory };

	/* After one event: a seek, after the pass. */
	if (c->o->at_event_set)
		return 0;
	rc = mms_decompose_add(c->pass, &opt, &c->decompose);
	c->subscribed += !rc;
	if (rc) {
		warn("decompose: %s: cannot replay: %s", c->path, mms_strerror(rc));
		return CLI_EXIT_FAILURE;
	}
	return 0;
}

int an_decompose_print(struct an_ctx *c)
{
	mms_log_info_t info;
	char when[128];

	if (c->o->at_event_set)
		return at_event(c);
	if (c->decompose->status) {
		warn("decompose: %s: cannot replay: %s", c->path, mms_strerror(c->decompose->status));
		return CLI_EXIT_FAILURE;
	}
	mms_log_get_info(c->log, &info);
	if (log_stops_early(&info))
		log_live_when(&info, when, sizeof(when));
	else
		snprintf(when, sizeof(when), "at the end of the log");
	print(c, "end", when, c->decompose->end);
	if (!c->o->json)
		fputc('\n', c->out);
	print(c, "peak", "at the peak", c->decompose->peak);
	return 0;
}
