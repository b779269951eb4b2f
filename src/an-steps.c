/* SPDX-License-Identifier: MIT */
/* an-steps.c: the leaks analysis's words on the steps: msMemScope's
 * "gap" table (each step's lowest and highest live bytes per kind), the
 * steps that allocated more than the step before, and those that ended
 * with more live memory (memory that grows from step to step). */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis.h"
#include "cli.h"
#include "logwords.h"
#include "replay-show.h"

/* A step's min/max ratio of one kind, in percent; -1 when it had none,
 * or when the log has only part of the step or none of it (--steps,
 * collect=deferred): its lowest and highest are not known. */
static double gap_ratio(const mms_leak_step_t *s, unsigned k)
{
	if (s->recorded != MMS_STEP_RECORDED_ALL)
		return -1;
	return s->max_bytes[k] ? 100.0 * (double)s->min_bytes[k] / (double)s->max_bytes[k] : -1;
}

/* Whether step i (i >= 1) and the one before are recorded whole, so
 * that what they allocated can be compared. */
static int alloc_comparable(const mms_leaks_t *l, size_t i)
{
	return l->steps[i].recorded == MMS_STEP_RECORDED_ALL && l->steps[i - 1].recorded == MMS_STEP_RECORDED_ALL;
}

/* Whether the log has steps it did not record whole. */
static int steps_partial(const mms_leaks_t *l)
{
	for (size_t i = 0; i < l->nsteps; i++)
		if (l->steps[i].recorded != MMS_STEP_RECORDED_ALL)
			return 1;
	return 0;
}

/* Names the steps the log did not record whole ("1, 3, 5-6"), which the
 * tables above left out. */
static void print_steps_left_out(FILE *f, const mms_leaks_t *l, mms_log_t *log)
{
	size_t i = 0, j, shown = 0;
	char why[128];

	fprintf(f, "Steps not recorded whole (%s), left out of the tables above:",
		log_steps_unrecorded_why(log, why, sizeof(why)));
	while (i < l->nsteps && shown < 16) {
		for (; i < l->nsteps && l->steps[i].recorded == MMS_STEP_RECORDED_ALL; i++)
			;
		if (i == l->nsteps)
			break;
		for (j = i; j + 1 < l->nsteps && l->steps[j + 1].recorded != MMS_STEP_RECORDED_ALL; j++)
			;
		fprintf(f, "%s %" PRIu64, shown++ ? "," : "", l->steps[i].step);
		if (j > i)
			fprintf(f, "-%" PRIu64, l->steps[j].step);
		i = j + 1;
	}
	for (j = 0; i < l->nsteps; i++)
		j += l->steps[i].recorded != MMS_STEP_RECORDED_ALL;
	if (j)
		fprintf(f, " and %zu more", j);
	fputs(".\n", f);
}

/* A fork child's log whose steps all began in the parent (it marked
 * none): its step tables would compare nothing; one line says so. Returns
 * 1 when said. */
static int print_parents_steps(FILE *f, const mms_log_t *log, const mms_leaks_t *l)
{
	mms_log_fork_t fk;

	if (mms_log_fork(log, &fk) || fk.state != MMS_FORK_INHERITED || l->nsteps > fk.fork_step)
		return 0;
	fprintf(f,
		"No step began in this process: it was forked in pid %" PRIu64 "'s step %" PRIu64
		", whose log has the steps; no table of the steps.\n",
		fk.parent_pid, fk.fork_step);
	return 1;
}

/* The steps from 2 on with the smallest and largest ratio of kind k;
 * returns 0 when no step from 2 on held memory of kind k. */
static int gap_find(const mms_leaks_t *l, unsigned k, size_t *lo, size_t *hi)
{
	size_t i;
	int found = 0;

	for (i = 1; i < l->nsteps; i++) {
		double r = gap_ratio(&l->steps[i], k);

		if (r < 0)
			continue;
		if (!found || r < gap_ratio(&l->steps[*lo], k))
			*lo = i;
		if (!found || r > gap_ratio(&l->steps[*hi], k))
			*hi = i;
		found = 1;
	}
	return found;
}

/* Steps by how much more they allocated than the step before (steps
 * are consecutive in their array), then in order. */
static int growth_cmp(const void *a, const void *b)
{
	const mms_leak_step_t *x = *(const mms_leak_step_t *const *)a, *y = *(const mms_leak_step_t *const *)b;
	uint64_t dx = x->bytes_allocated - x[-1].bytes_allocated, dy = y->bytes_allocated - y[-1].bytes_allocated;

	if (dx != dy)
		return dx > dy ? -1 : 1;
	return x->step < y->step ? -1 : x->step > y->step;
}

/* A step that ended with more live bytes of a kind than the step before
 * (at index i of the steps, i >= 1). */
struct live_growth {
	size_t i;
	unsigned k;
	uint64_t more;
};

/* By the increase, largest first, then step and kind in order. */
static int live_growth_cmp(const void *a, const void *b)
{
	const struct live_growth *x = a, *y = b;

	if (x->more != y->more)
		return x->more > y->more ? -1 : 1;
	if (x->i != y->i)
		return x->i < y->i ? -1 : 1;
	return x->k < y->k ? -1 : x->k > y->k;
}

/* The steps that ended with more live memory of a kind than the step
 * before, the largest increase first (--top of them): memory that grows
 * from step to step, also where no step allocated more than the one
 * before it. */
static void print_live_growth(FILE *f, const mms_leaks_t *l, size_t top)
{
	struct live_growth *g;
	size_t i, n = 0, shown, whole = 0;
	unsigned k;

	g = xcalloc((l->nsteps - 1) * MMS_MEM_KIND_COUNT, sizeof(*g));
	/* The difference is what step i did, known where the log has all
	 * of it, whatever it has of the step before. */
	for (i = 1; i < l->nsteps; i++)
		for (k = 0, whole += l->steps[i].recorded == MMS_STEP_RECORDED_ALL;
		     k < MMS_MEM_KIND_COUNT && l->steps[i].recorded == MMS_STEP_RECORDED_ALL; k++)
			if (l->steps[i].end_bytes[k] > l->steps[i - 1].end_bytes[k])
				g[n++] =
					(struct live_growth){ i, k,
							      l->steps[i].end_bytes[k] - l->steps[i - 1].end_bytes[k] };
	if (n > 1)
		qsort(g, n, sizeof(*g), live_growth_cmp);
	shown = top && n > top ? top : n;
	if (shown)
		fprintf(f, "Steps that ended with more live memory than the step before, largest increase first%s:\n",
			steps_partial(l) ? " (of the blocks the log recorded)" : "");
	for (i = 0; i < shown; i++) {
		const mms_leak_step_t *s = &l->steps[g[i].i];

		fprintf(f,
			"  step %" PRIu64 ": %s %" PRIu64 " bytes live at its end, %" PRIu64 " more than step %" PRIu64
			"\n",
			s->step, show_mem_name(g[i].k), s->end_bytes[g[i].k], g[i].more, s[-1].step);
	}
	if (shown < n)
		fprintf(f, "  ... %zu more (--top 0 lists all)\n", n - shown);
	if (!n && whole + 1 == l->nsteps)
		fprintf(f, "No step ended with more live memory than the step before (%zu steps).\n", l->nsteps);
	else if (!n && whole)
		fprintf(f,
			"No step ended with more live memory than the step before (%zu of %zu steps recorded "
			"whole).\n",
			whole, l->nsteps);
	else if (!n)
		fputs("How live memory changed over the steps cannot be told: no step after the first was recorded "
		      "whole.\n",
		      f);
	free(g);
}

void an_leaks_print_steps(FILE *f, mms_log_t *log, const mms_leaks_t *l, int json, size_t top)
{
	const mms_leak_step_t **grew;
	size_t lo = 0, hi = 0, i, shown, ngrew = 0, pairs = 0;
	unsigned k;

	if (json) {
		fputs("\"gap\":{", f);
		for (k = 0, i = 0; k < MMS_MEM_KIND_COUNT; k++) {
			if (!gap_find(l, k, &lo, &hi))
				continue;
			fprintf(f,
				"%s\"%s\":{\"min_gap\":{\"ratio\":%.6f,\"min_bytes\":%" PRIu64 ",\"step\":%" PRIu64
				"},\"max_gap\":{\"ratio\":%.6f,\"min_bytes\":%" PRIu64 ",\"step\":%" PRIu64 "}}",
				i++ ? "," : "", show_mem_name(k), gap_ratio(&l->steps[lo], k),
				l->steps[lo].min_bytes[k], l->steps[lo].step, gap_ratio(&l->steps[hi], k),
				l->steps[hi].min_bytes[k], l->steps[hi].step);
		}
		fputs("},\"steps\":[", f);
		for (i = 0; i < l->nsteps; i++) {
			const mms_leak_step_t *s = &l->steps[i];

			fprintf(f,
				"%s{\"step\":%" PRIu64 ",\"allocs\":%" PRIu64 ",\"bytes_allocated\":%" PRIu64
				",\"recorded\":\"%s\",\"more_than_previous\":%s",
				i ? "," : "", s->step, s->allocs, s->bytes_allocated,
				mms_step_recorded_name(s->recorded),
				i && !alloc_comparable(l, i)                                ? "null"
				: i && s->bytes_allocated > l->steps[i - 1].bytes_allocated ? "true"
											    : "false");
			for (k = 0; k < MMS_MEM_KIND_COUNT; k++)
				fprintf(f,
					",\"%s\":{\"min_bytes\":%" PRIu64 ",\"max_bytes\":%" PRIu64
					",\"end_bytes\":%" PRIu64 "}",
					show_mem_name(k), s->min_bytes[k], s->max_bytes[k], s->end_bytes[k]);
			fputc('}', f);
		}
		fputc(']', f);
		return;
	}
	if (l->nsteps < 2 || print_parents_steps(f, log, l))
		return;
	for (k = 0; k < MMS_MEM_KIND_COUNT; k++) {
		if (!gap_find(l, k, &lo, &hi))
			continue;
		fprintf(f, "Live %s bytes per step, steps 2-%zu (lowest/highest within each step):\n", show_mem_name(k),
			l->nsteps);
		fprintf(f, "  %-8s %-22s %-17s %s\n", "", "MinAlloc/MaxAlloc(%)", "MinAllocMem(MB)", "StepId");
		fprintf(f, "  %-8s %-22.6f %-17.6f %" PRIu64 "\n", "MinGap", gap_ratio(&l->steps[lo], k),
			an_mb(l->steps[lo].min_bytes[k]), l->steps[lo].step);
		fprintf(f, "  %-8s %-22.6f %-17.6f %" PRIu64 "\n", "MaxGap", gap_ratio(&l->steps[hi], k),
			an_mb(l->steps[hi].min_bytes[k]), l->steps[hi].step);
	}
	/* The steps that allocated more than the one before, the largest
	 * increase first. */
	grew = xcalloc(l->nsteps, sizeof(*grew));
	for (i = 1; i < l->nsteps; i++) {
		pairs += alloc_comparable(l, i);
		if (alloc_comparable(l, i) && l->steps[i].bytes_allocated > l->steps[i - 1].bytes_allocated)
			grew[ngrew++] = &l->steps[i];
	}
	if (ngrew)
		qsort(grew, ngrew, sizeof(*grew), growth_cmp);
	shown = top && ngrew > top ? top : ngrew;
	if (shown)
		fputs("Steps that allocated more than the step before, largest increase first:\n", f);
	for (i = 0; i < shown; i++) {
		const mms_leak_step_t *s = grew[i], *p = s - 1;

		fprintf(f,
			"  step %" PRIu64 ": %" PRIu64 " bytes in %" PRIu64 " allocation(s), %" PRIu64
			" bytes more than step %" PRIu64 "\n",
			s->step, s->bytes_allocated, s->allocs, s->bytes_allocated - p->bytes_allocated, p->step);
	}
	if (shown < ngrew)
		fprintf(f, "  ... %zu more step%s (--top 0 lists all)\n", ngrew - shown, ngrew - shown == 1 ? "" : "s");
	free(grew);
	if (!shown && pairs + 1 == l->nsteps)
		fprintf(f, "No step allocated more than the step before (%zu steps).\n", l->nsteps);
	else if (!shown && pairs)
		fprintf(f,
			"No step allocated more than the step before (%zu of %zu steps, each recorded whole with the "
			"one before).\n",
			pairs, l->nsteps);
	else if (!shown)
		fputs("What the steps allocated cannot be compared: no two steps in a row were recorded whole.\n", f);
	print_live_growth(f, l, top);
	if (steps_partial(l))
		print_steps_left_out(f, l, log);
}
