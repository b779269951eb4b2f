/* SPDX-License-Identifier: MIT */
/* an-trace.c: the printers of the GPU-trace scripts' three analyses,
 * watermark, usage and leakage (replay/analyses/trace.c computes them): a report
 * for people or one JSON object, and the scripts' TSV files. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "logwords.h"
#include "plot.h"

/* Buckets of the plotted timeline: about one per pixel column. */
#define PLOT_BUCKETS 2000
#define MAX_FRAMES 16 /* inlined frames per address */

/* Adds the subscriber the three analyses share, once: with usage's file
 * (and picture) when usage is among the analyses run, and only the lists
 * of blocks that watermark and leakage, when run, print. */
static int trace_add(struct an_ctx *c)
{
	mms_trace_options_t opt = { 0 };
	char *path = NULL, *wm_path = NULL, *lk_path = NULL;
	int rc;

	if (c->trace)
		return 0;
	opt.kinds = c->o->memory;
	opt.skip = (c->mask & an_mask("watermark") ? 0 : MMS_TRACE_SKIP_PEAK) |
		   (c->mask & an_mask("leakage") ? 0 : MMS_TRACE_SKIP_END);
	opt.out.overwrite = c->o->force;
	/* The pass writes the lists' files from its compact records and
	 * makes records only of the blocks the reports show. */
	opt.top = c->o->top;
	if (c->mask & an_mask("watermark"))
		opt.watermark_path = wm_path = an_out_path(c->o, "watermark.tsv");
	if (c->mask & an_mask("leakage"))
		opt.leakage_path = lk_path = an_out_path(c->o, "leakage.tsv");
	if (wm_path || lk_path)
		opt.out.sym = an_symbolizer(c);
	if (c->mask & an_mask("usage")) {
		path = an_out_path(c->o, "usage.tsv");
		opt.usage_path = path;
		opt.buckets = c->o->buckets;
		opt.plot_buckets = c->o->plot ? PLOT_BUCKETS : 0;
	}
	rc = mms_trace_add(c->pass, &opt, &c->trace);
	if (rc && path && rc > -10000 && rc != -ENOMEM) {
		/* usage.tsv cannot be written: usage says so, the others
		 * need not fail for it. */
		c->usage_rc = rc;
		opt.usage_path = NULL;
		rc = mms_trace_add(c->pass, &opt, &c->trace);
	}
	free(path);
	free(wm_path);
	free(lk_path);
	if (rc) {
		warn("cannot analyse %s: %s", c->path, mms_strerror(rc));
		return CLI_EXIT_FAILURE;
	}
	c->subscribed++;
	return 0;
}

int an_trace_add(struct an_ctx *c)
{
	return trace_add(c);
}

/* The result, after the pass; NULL when it failed, said once. */
static mms_trace_t *trace_get(struct an_ctx *c)
{
	if (c->trace_said)
		return c->trace->status ? NULL : c->trace;
	c->trace_said = 1;
	if (c->trace->status) {
		/* A system error while the pass ran is usage's file's, the one
		 * file written as it goes: named, as a full disk is the
		 * file's problem, not the log's. */
		if (c->trace->status > -10000 && c->trace->status != -ENOMEM && (c->mask & an_mask("usage")) &&
		    !c->usage_rc) {
			char *path = an_out_path(c->o, "usage.tsv");

			warn("cannot write %s (usage over %s): %s", path, c->path, mms_strerror(c->trace->status));
			free(path);
		} else {
			warn("cannot analyse %s: %s", c->path, mms_strerror(c->trace->status));
		}
		return NULL;
	}
	if (c->trace->stop_rc)
		warn("%s is damaged: watermark, usage and leakage cover the events before event %" PRIu64 " (%s)",
		     c->path, c->trace->events, mms_strerror(c->trace->stop_rc));
	return c->trace;
}

/* Seconds from the first event, for people. */
static double rel_s(const mms_trace_t *t, uint64_t ns)
{
	return ns > t->first_ns ? (double)(ns - t->first_ns) / 1e9 : 0.0;
}

/* Prints stack id as frames "function (module)", innermost first, one per
 * line (text, inlined frames marked "[inlined]" as in leaks) or as a JSON
 * array. */
/* Whether the recorder's table of stack frames filled up. */
static int stacks_full(mms_log_t *log)
{
	mms_log_info_t info;

	mms_log_get_info(log, &info);
	return info.stacks_full;
}

static void put_stack(struct an_ctx *c, uint32_t stack, int json)
{
	mms_symbolizer_t *sym = an_symbolizer(c);
	uint64_t ips[256];
	mms_frame_t frames[MAX_FRAMES];
	char text[1024];
	int depth = mms_log_stack(c->log, stack, ips, sizeof(ips) / sizeof(ips[0]));
	unsigned shown = 0;

	if (json)
		fputc('[', c->out);
	if (depth > (int)(sizeof(ips) / sizeof(ips[0])))
		depth = (int)(sizeof(ips) / sizeof(ips[0]));
	/* Python frames where the eval loop ran them. */
	if (sym && depth > 0) {
		int m = mms_stack_mixed(sym, ips, (size_t)depth);
		if (m >= 0)
			depth = m;
	}
	for (int k = 0; k < depth && (!c->o->depth || shown < c->o->depth); k++) {
		mms_frame_t one = { .ip = ips[k] };
		int nf = sym ? mms_symbolize(sym, ips[k], frames, MAX_FRAMES) : 0;

		if (nf <= 0) {
			frames[0] = one;
			nf = 1;
		}
		for (int j = 0; j < nf && (!c->o->depth || shown < c->o->depth); j++, shown++) {
			mms_trace_frame_text(&frames[j], text, sizeof(text));
			if (json) {
				if (shown)
					fputc(',', c->out);
				json_put_string(c->out, text, strlen(text));
			} else if (!frames[j].function && frames[j].module) {
				/* No symbol: the module and the offset in it, as
				 * leaks and the transforms print it (addr2line
				 * takes it); the address changes from run to run. */
				const char *slash = strrchr(frames[j].module, '/');

				fprintf(c->out, "      %s+0x%" PRIx64 "\n", slash ? slash + 1 : frames[j].module,
					frames[j].module_offset);
			} else {
				/* As leaks marks them: a function inlined into
				 * itself would otherwise read as a repeated line. */
				fprintf(c->out, "      %s%s\n", text, frames[j].inlined ? " [inlined]" : "");
			}
		}
	}
	if (json)
		fputc(']', c->out);
	else if (depth == MMS_ECORRUPT)
		fprintf(c->out, "      (stack damaged: its records in the log do not resolve)\n");
	else if (depth <= 0)
		fprintf(c->out, "      (no stack recorded%s)\n",
			stacks_full(c->log) ? ": the recorder's table of stack frames was full" : "");
}

static const char *kind_name(const mms_block_t *b)
{
	const char *name = mms_mem_kind_name(b->mem);

	return name ? name : "POOL";
}

/* Whether the log was recorded with stacks of some kind (C or Python). */
static int log_has_stacks(struct an_ctx *c)
{
	mms_log_info_t info;
	mms_config_t cfg;

	mms_log_get_info(c->log, &info);
	return info.call_stack_depth || (!mms_log_config(c->log, &cfg) && cfg.python_stack);
}

/* The blocks of a watermark or leakage report: the first top of its
 * total, n records made of them. Recorded without stacks, no block says
 * so on a line of its own: one line after the list does. */
static void put_blocks(struct an_ctx *c, const mms_trace_t *t, const mms_trace_block_t *v, size_t n, size_t total)
{
	size_t shown = c->o->top && c->o->top < total ? c->o->top : total;
	int stacks = c->o->json || log_has_stacks(c);
	char hb[64];

	if (shown > n)
		shown = n;
	for (size_t i = 0; i < shown; i++) {
		const mms_block_t *b = &v[i].b;

		if (c->o->json) {
			fprintf(c->out, "%s{\"addr\":\"0x%" PRIx64 "\",\"bytes\":%" PRIu64 ",\"kind\":\"%s\",",
				i ? "," : "", b->addr, b->size, kind_name(b));
			fprintf(c->out, "\"time_ns\":%" PRIu64 ",\"alloc_event\":%" PRIu64 ",\"step\":%" PRIu64 ",",
				v[i].time_ns, b->alloc_event, b->step);
			fputs("\"op\":", c->out);
			if (b->op)
				json_put_string(c->out, b->op, strlen(b->op));
			else
				fputs("null", c->out);
			fputs(",\"stack\":", c->out);
			put_stack(c, b->stack, 1);
			fputc('}', c->out);
			continue;
		}
		fprintf(c->out, "  %s at 0x%" PRIx64 ", %s, allocated at +%.6f s (event %" PRIu64,
			human_bytes_exact(b->size, hb, sizeof(hb)), b->addr, kind_name(b), rel_s(t, v[i].time_ns),
			b->alloc_event);
		if (b->step)
			fprintf(c->out, ", step %" PRIu64, b->step);
		if (b->op)
			fprintf(c->out, ", in %s", b->op);
		fputs(")\n", c->out);
		if (stacks)
			put_stack(c, b->stack, 0);
	}
	if (!c->o->json && shown < total)
		fprintf(c->out, "  ... and %zu more block(s) (--top 0 lists them all)\n", total - shown);
	if (!stacks && shown)
		fprintf(c->out, "  (no stacks recorded: record with --call-stack=c:N to see where each block was "
				"allocated)\n");
}

/* The path of the scripts' TSV of blocks that the pass wrote into the
 * output folder (allocated), or NULL after saying why it did not. */
static char *tsv_written(struct an_ctx *c, const char *what, const char *name, int rc)
{
	char *path = an_out_path(c->o, name);

	if (rc == -EEXIST)
		warn("%s: %s exists; remove it, choose another --output-dir, or add --force", what, path);
	else if (rc)
		warn("%s: cannot write %s: %s", what, path, mms_strerror(rc));
	if (rc) {
		free(path);
		return NULL;
	}
	return path;
}

static void put_file(struct an_ctx *c, const char *path)
{
	if (c->o->json) {
		fputs(",\"file\":", c->out);
		json_put_string(c->out, path, strlen(path));
	} else {
		fprintf(c->out, "  written: %s\n", path);
	}
}

/* watermark and leakage: a set of n blocks (the first nv of them in v),
 * its bytes and its TSV file. */
static int report_blocks(struct an_ctx *c, const char *what, const mms_trace_t *t, const mms_trace_block_t *v,
			 size_t nv, size_t n, uint64_t bytes)
{
	int wm = !strcmp(what, "watermark");
	char *path = tsv_written(c, what, wm ? "watermark.tsv" : "leakage.tsv", wm ? t->watermark_rc : t->leakage_rc);
	mms_log_info_t info;
	char hb[64], when[128];

	/* Leakage is what is live at the end of the replay: at exit, or
	 * where a cut log stops, which is no leak. */
	mms_log_get_info(c->log, &info);
	log_live_when(&info, when, sizeof(when));
	if (c->o->json) {
		fprintf(c->out, "{\"analysis\":\"%s\",\"bytes\":%" PRIu64 ",\"blocks\":%zu", what, bytes, n);
		if (!strcmp(what, "watermark")) {
			fprintf(c->out, ",\"event\":%" PRIu64 ",\"time_ns\":%" PRIu64, t->peak_event, t->peak_ns);
		} else {
			fputs(",\"live_when\":", c->out);
			json_put_string(c->out, when, strlen(when));
		}
		fputs(",\"top\":[", c->out);
		put_blocks(c, t, v, nv, n);
		fputc(']', c->out);
		if (path)
			put_file(c, path);
		fputs("}\n", c->out);
	} else {
		if (!strcmp(what, "watermark") && n)
			fprintf(c->out,
				"== watermark: peak of %s at +%.6f s (event %" PRIu64 "), %zu block(s) live then\n",
				human_bytes_exact(bytes, hb, sizeof(hb)), rel_s(t, t->peak_ns), t->peak_event, n);
		else if (!strcmp(what, "watermark"))
			fprintf(c->out, "== watermark: no memory was ever live\n");
		else if (n && !log_stops_early(&info))
			fprintf(c->out, "== leakage: %s in %zu block(s) not freed by the end\n",
				human_bytes_exact(bytes, hb, sizeof(hb)), n);
		else if (n)
			fprintf(c->out, "== leakage: %s in %zu block(s) live %s\n", human_bytes_exact(bytes, hb, sizeof(hb)),
				n, when);
		else
			fprintf(c->out, "== leakage: no block live %s\n",
				log_stops_early(&info) ? when : "at the end of the log");
		put_blocks(c, t, v, nv, n);
		if (path)
			put_file(c, path);
	}
	free(path);
	return path ? 0 : CLI_EXIT_FAILURE;
}

int an_watermark_print(struct an_ctx *c)
{
	mms_trace_t *t = trace_get(c);

	if (!t)
		return CLI_EXIT_FAILURE;
	return report_blocks(c, "watermark", t, t->peak, t->npeak, t->peak_blocks, t->peak_bytes);
}

int an_leakage_print(struct an_ctx *c)
{
	mms_trace_t *t = trace_get(c);

	if (!t)
		return CLI_EXIT_FAILURE;
	return report_blocks(c, "leakage", t, t->end, t->nend, t->end_blocks, t->end_bytes);
}

int an_usage_print(struct an_ctx *c)
{
	mms_trace_t *t = trace_get(c);
	char *path;
	char hb[32], hp[32];
	int status = 0, plot_failed = 0;

	if (!t)
		return CLI_EXIT_FAILURE;
	path = an_out_path(c->o, "usage.tsv");
	if (c->usage_rc == -EEXIST)
		warn("usage: %s exists; remove it, choose another --output-dir, or add --force", path);
	else if (c->usage_rc)
		warn("usage: cannot write %s: %s", path, mms_strerror(c->usage_rc));
	if (c->usage_rc) {
		/* The report and the plot do not need the file. */
		free(path);
		path = NULL;
		status = CLI_EXIT_FAILURE;
	}
	if (c->o->plot && plot_usage_svg(c, t, c->o->plot))
		plot_failed = 1;
	if (c->o->json) {
		fprintf(c->out,
			"{\"analysis\":\"usage\",\"events\":%" PRIu64 ",\"changes\":%" PRIu64 ",\"rows\":%" PRIu64
			",\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 ",\"peak_bytes\":%" PRIu64
			",\"peak_ns\":%" PRIu64 ",\"end_bytes\":%" PRIu64 ",\"step_boundaries\":%zu,\"op_launches\":%" PRIu64,
			t->events, t->changes, t->usage_rows, t->first_ns, t->end_ns, t->peak_bytes, t->peak_ns,
			t->end_bytes, t->nsteps, t->op_launches);
		if (path)
			put_file(c, path);
		if (c->o->plot && !plot_failed) {
			fputs(",\"plot\":", c->out);
			json_put_string(c->out, c->o->plot, strlen(c->o->plot));
		}
		fputs("}\n", c->out);
	} else {
		fprintf(c->out,
			"== usage: %" PRIu64 " change(s) of live bytes over %.6f s; peak %s at +%.6f s; %s live at "
			"the end\n",
			t->changes, rel_s(t, t->end_ns), human_bytes(t->peak_bytes, hp, sizeof(hp)),
			rel_s(t, t->peak_ns), human_bytes(t->end_bytes, hb, sizeof(hb)));
		fprintf(c->out, "  %" PRIu64 " row(s) (%s)\n", t->usage_rows,
			c->o->buckets ? "the highest live bytes of each time bucket"
				      : "one per time live bytes changed at");
		if (path)
			put_file(c, path);
		if (c->o->plot && !plot_failed)
			fprintf(c->out, "  plot: %s\n", c->o->plot);
	}
	free(path);
	return status || plot_failed ? CLI_EXIT_FAILURE : 0;
}
