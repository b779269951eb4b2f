/* SPDX-License-Identifier: MIT */
/* plot.c: draws the usage timeline as a self-contained SVG line chart (no
 * scripts, fonts or links), readable in any browser: live bytes over time,
 * step boundaries, operator launches and the labelled peak. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plot.h"

/* The picture's geometry, in SVG units. */
#define W 1000.0
#define H 420.0
#define LEFT 90.0
#define RIGHT 30.0
#define TOP 40.0
#define BOTTOM 60.0
#define PW (W - LEFT - RIGHT)
#define PH (H - TOP - BOTTOM)
/* Launch marks drawn at most: nearby buckets share one. */
#define MAX_LAUNCH_MARKS 200

static void xml_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			/* Control characters are not allowed in XML 1.0. */
			fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
		}
	}
}

/* A tick step of 1, 2 or 5 times a power of ten, about range / 5. */
static double nice_step(double range)
{
	double raw = range / 5, p = 1, m;

	while (p * 10 <= raw)
		p *= 10;
	while (p > raw)
		p /= 10;
	m = raw / p;

	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

struct unit {
	const char *name;
	double div;
};

static struct unit bytes_unit(uint64_t max)
{
	if (max >= 1ull << 30)
		return (struct unit){ "GiB", 1073741824.0 };
	if (max >= 1ull << 20)
		return (struct unit){ "MiB", 1048576.0 };
	if (max >= 1ull << 10)
		return (struct unit){ "KiB", 1024.0 };
	return (struct unit){ "bytes", 1.0 };
}

static struct unit time_unit(uint64_t span)
{
	if (span >= 10000000000ull)
		return (struct unit){ "s", 1e9 };
	if (span >= 10000000ull)
		return (struct unit){ "ms", 1e6 };
	if (span >= 10000ull)
		return (struct unit){ "\xc2\xb5s", 1e3 };
	return (struct unit){ "ns", 1.0 };
}

struct frame {
	uint64_t t0, span;  /* time axis: [t0, t0 + span] */
	double ymax;        /* bytes at the top */
};

static double xpos(const struct frame *fr, uint64_t t)
{
	double d = t > fr->t0 ? (double)(t - fr->t0) : 0;

	return LEFT + (fr->span ? d / (double)fr->span : 0) * PW;
}

static double ypos(const struct frame *fr, uint64_t bytes)
{
	return TOP + PH - (double)bytes / fr->ymax * PH;
}

static void axes(FILE *f, const struct frame *fr)
{
	struct unit bu = bytes_unit((uint64_t)fr->ymax), tu = time_unit(fr->span);
	double top = fr->ymax / bu.div, step = nice_step(top), span = (double)fr->span / tu.div;
	double tstep = nice_step(span > 0 ? span : 1);

	fprintf(f, "<g class=\"axes\" stroke=\"#444\" fill=\"none\">\n");
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", LEFT, TOP + PH, LEFT + PW, TOP + PH);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n</g>\n", LEFT, TOP, LEFT, TOP + PH);
	fprintf(f, "<g class=\"yticks\" font-size=\"11\" text-anchor=\"end\" fill=\"#333\">\n");
	for (double v = 0; v <= top * 1.0001; v += step) {
		double y = TOP + PH - v / top * PH;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", LEFT, y,
			LEFT + PW, y);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%g %s</text>\n", LEFT - 6, y + 4, v, bu.name);
	}
	fprintf(f, "</g>\n<g class=\"xticks\" font-size=\"11\" text-anchor=\"middle\" fill=\"#333\">\n");
	for (double v = 0; v <= span * 1.0001; v += tstep) {
		double x = LEFT + (span > 0 ? v / span : 0) * PW;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>", x, TOP + PH, x,
			TOP + PH + 5);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">+%g %s</text>\n", x, TOP + PH + 18, v, tu.name);
		if (span <= 0)
			break;
	}
	fprintf(f, "</g>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">time since the recording began"
		   "</text>\n",
		LEFT + PW / 2, H - 12);
	fprintf(f, "<text x=\"14\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">"
		   "live bytes</text>\n",
		TOP + PH / 2, TOP + PH / 2);
}

/* Formats ns after the first event with a unit, for labels. */
static const char *rel_time(const struct frame *fr, uint64_t t, char *buf, size_t cap)
{
	double d = t > fr->t0 ? (double)(t - fr->t0) : 0;

	if (d >= 1e9)
		snprintf(buf, cap, "+%.3f s", d / 1e9);
	else if (d >= 1e6)
		snprintf(buf, cap, "+%.3f ms", d / 1e6);
	else if (d >= 1e3)
		snprintf(buf, cap, "+%.3f \xc2\xb5s", d / 1e3);
	else
		snprintf(buf, cap, "+%.0f ns", d);
	return buf;
}

static void curve(FILE *f, const struct frame *fr, const mms_trace_t *t)
{
	fprintf(f, "<path class=\"usage\" fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"1.2\" d=\"M%.1f %.1f",
		xpos(fr, fr->t0), ypos(fr, 0));
	for (size_t i = 0; i < t->npoints; i++) {
		/* A bucket holds its highest value until the next begins. */
		fprintf(f, " V%.1f", ypos(fr, t->points[i].bytes));
		fprintf(f, " H%.1f", i + 1 < t->npoints ? xpos(fr, t->points[i + 1].time_ns) : LEFT + PW);
	}
	fprintf(f, "\"><title>live bytes (highest per %zu-th of the run)</title></path>\n", t->npoints);
}

static void steps(FILE *f, const struct frame *fr, const mms_trace_t *t)
{
	char tb[48];

	fprintf(f, "<g class=\"steps\" stroke=\"#c07000\" stroke-dasharray=\"4 3\">\n");
	for (size_t i = 0; i < t->nsteps; i++) {
		double x = xpos(fr, t->steps[i].time_ns);

		fprintf(f, "<line class=\"step\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>step %" PRIu64
			   " begins at %s</title></line>\n",
			x, TOP, x, TOP + PH, t->steps[i].step, rel_time(fr, t->steps[i].time_ns, tb, sizeof(tb)));
	}
	fprintf(f, "</g>\n");
}

static void launches(FILE *f, const struct frame *fr, const mms_trace_t *t)
{
	size_t group = (t->npoints + MAX_LAUNCH_MARKS - 1) / MAX_LAUNCH_MARKS;
	char tb[48];

	if (!group)
		group = 1;
	fprintf(f, "<g class=\"launches\" stroke=\"#2a8a2a\" stroke-width=\"1.5\">\n");
	for (size_t i = 0; i < t->npoints; i += group) {
		uint64_t count = 0, time = 0;
		const char *name = NULL;

		for (size_t j = i; j < i + group && j < t->npoints; j++) {
			if (t->launches[j].count && !count) {
				time = t->launches[j].time_ns;
				name = t->launches[j].name;
			}
			count += t->launches[j].count;
		}
		if (!count)
			continue;
		fprintf(f, "<line class=\"launch\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>%" PRIu64
			   " operator launch%s from %s, the first ",
			xpos(fr, time), TOP + PH, xpos(fr, time), TOP + PH - 8, count, count == 1 ? "" : "es",
			rel_time(fr, time, tb, sizeof(tb)));
		xml_text(f, name ? name : "(unnamed)");
		fprintf(f, "</title></line>\n");
	}
	fprintf(f, "</g>\n");
}

static void peak(FILE *f, const struct frame *fr, const mms_trace_t *t)
{
	double x = xpos(fr, t->peak_ns), y = ypos(fr, t->peak_bytes);
	char hb[32], tb[48];
	const char *anchor = x > LEFT + PW * 0.7 ? "end" : "start";

	human_bytes(t->peak_bytes, hb, sizeof(hb));
	rel_time(fr, t->peak_ns, tb, sizeof(tb));
	fprintf(f, "<g class=\"peak\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#c02020\"/>", x, y);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#c02020\" text-anchor=\"%s\">peak %s at %s</text>",
		anchor[0] == 'e' ? x - 8 : x + 8, y - 8 > 14 ? y - 8 : 14, anchor, hb, tb);
	fprintf(f, "<title>peak: %" PRIu64 " bytes at event %" PRIu64 ", %s</title></g>\n", t->peak_bytes,
		t->peak_event, tb);
}

int plot_usage_svg(struct an_ctx *c, const mms_trace_t *t, const char *path)
{
	struct frame fr;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc;

	if (!f)
		die(CLI_EXIT_FAILURE, "out of memory");
	fr.t0 = t->first_ns;
	fr.span = t->last_ns - t->first_ns;
	fr.ymax = t->peak_bytes ? (double)t->peak_bytes * 1.1 : 1024;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		   "font-family=\"sans-serif\">\n",
		W, H, W, H);
	fprintf(f, "<title>live bytes over time: ");
	xml_text(f, c->path);
	fprintf(f, "</title>\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	/* The heading names the log by its file name: a path would run off
	 * the picture (the <title> above has it whole). */
	fprintf(f, "<text x=\"%.1f\" y=\"22\" font-size=\"14\">live bytes over time: ", LEFT);
	xml_text(f, strrchr(c->path, '/') ? strrchr(c->path, '/') + 1 : c->path);
	fprintf(f, " (%zu step boundaries, %" PRIu64 " operator launches)</text>\n", t->nsteps, t->op_launches);
	axes(f, &fr);
	steps(f, &fr, t);
	curve(f, &fr, t);
	launches(f, &fr, t);
	if (t->peak_bytes)
		peak(f, &fr, t);
	fprintf(f, "</svg>\n");
	if (fclose(f))
		die(CLI_EXIT_FAILURE, "out of memory");
	rc = mms_file_write(path, buf, len, &(mms_output_options_t){ .overwrite = c->o->force });
	free(buf);
	if (rc == -EEXIST)
		warn("usage: %s exists; remove it, name another file, or add --force", path);
	else if (rc)
		warn("usage: cannot write %s: %s", path, mms_strerror(rc));
	return rc ? CLI_EXIT_FAILURE : 0;
}
