/* SPDX-License-Identifier: MIT */
/* an-guard.c: prints the guard analysis (replay/guard.c): guard mode's
 * findings, one block each in the manner of valgrind's errors (what, the
 * block, where it was allocated and freed, the damaged bytes, and the
 * window in which the damage happened), then the error summary. */
#define _GNU_SOURCE /* qsort_r */
#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "replay-show.h"

/* enum mms_guard_found_by: the JSON's found_by, and the text's words. */
static const struct {
	const char *key, *words;
} found_by_names[] = {
	[MMS_GUARD_FOUND_BY_CHECK] = { "check", " by a full check" },
	[MMS_GUARD_FOUND_BY_RELEASE] = { "release", " by the check of its free, realloc or delete" },
	[MMS_GUARD_FOUND_BY_QUARANTINE] = { "quarantine", " as it left the quarantine, pushed out by a later free" },
};

/* NULL (the JSON) or "" (the text) for a log that does not say. */
static const char *found_by(unsigned by, int words)
{
	if (by >= sizeof found_by_names / sizeof *found_by_names || !found_by_names[by].key)
		return words ? "" : NULL;
	return words ? found_by_names[by].words : found_by_names[by].key;
}

/* enum mms_guard_since of the log format, in words. */
static const char *since_words(unsigned since)
{
	static const char *const w[] = { "its allocation", "its free", "the last full check" };

	return since < sizeof w / sizeof *w ? w[since] : "?";
}

static const char *kind_words(const char *kind)
{
	if (!strcmp(kind, "overflow"))
		return "write past the end of a heap block";
	if (!strcmp(kind, "underflow"))
		return "write before the start of a heap block";
	if (!strcmp(kind, "write_after_free"))
		return "write to a freed heap block";
	if (!strcmp(kind, "double_free"))
		return "free of a block already freed";
	if (!strcmp(kind, "invalid_free"))
		return "free of an address that is not a heap block";
	return "release by the wrong family (free of new, delete of malloc, delete of new[] ...)";
}

/* Findings that tell of the same error, as valgrind groups errors into
 * contexts: the same kind, block family and stacks (allocation, free, the
 * check's call); without any stack, the same block size and damaged
 * offset too, so that unrelated blocks are not lumped together. The text
 * prints each context once, at its first finding, with the events of the
 * others; the JSON lists every finding with its context's number. */
#define GUARD_OTHERS_SHOWN 5 /* events listed after a context's first finding */

struct contexts {
	size_t *order; /* finding indices sorted by context, then in log order */
	size_t *run;   /* finding -> where its context's run starts in order */
	size_t *num;   /* finding -> its context's number, from 0 in log order */
	size_t n;      /* contexts */
};

static int nostack(const mms_guard_finding_t *x)
{
	return !x->alloc_stack && !x->free_stack && !x->at_stack;
}

/* The damaged offset an error keeps from block to block: past the end, it
 * is counted from the end. */
static int64_t rel_offset(const mms_guard_finding_t *x)
{
	return x->kind == MMS_GUARD_FOUND_OVERFLOW ? x->offset - (int64_t)x->size : x->offset;
}

#define KEY_CMP(a, b) \
	do { \
		if ((a) != (b)) \
			return (a) < (b) ? -1 : 1; \
	} while (0)

static int key_cmp(const mms_guard_finding_t *a, const mms_guard_finding_t *b)
{
	KEY_CMP(a->kind, b->kind);
	KEY_CMP(a->family, b->family);
	KEY_CMP(a->alloc_stack, b->alloc_stack);
	KEY_CMP(a->free_stack, b->free_stack);
	KEY_CMP(a->at_stack, b->at_stack);
	if (nostack(a)) {
		KEY_CMP(a->size, b->size);
		KEY_CMP(rel_offset(a), rel_offset(b));
	}
	return 0;
}

/* Finding indices by context, then in log order (ctx: the findings). */
static int order_cmp(const void *pa, const void *pb, void *ctx)
{
	const mms_guard_finding_t *f = ctx;
	size_t i = *(const size_t *)pa, j = *(const size_t *)pb;
	int c = key_cmp(&f[i], &f[j]);

	return c ? c : (i > j) - (i < j);
}

static void contexts_free(struct contexts *c)
{
	free(c->order);
	free(c->run);
	free(c->num);
	memset(c, 0, sizeof(*c));
}

/* Groups r's findings into contexts. Returns 0, or -1 out of memory (c
 * is then empty, and each finding stands alone). */
static int contexts_make(const mms_guard_t *r, struct contexts *c)
{
	size_t n = r->nfindings, i, start = 0;

	memset(c, 0, sizeof(*c));
	if (!n)
		return 0;
	c->order = malloc(n * sizeof(*c->order));
	c->run = malloc(n * sizeof(*c->run));
	c->num = malloc(n * sizeof(*c->num));
	if (!c->order || !c->run || !c->num) {
		contexts_free(c);
		return -1;
	}
	for (i = 0; i < n; i++)
		c->order[i] = i;
	qsort_r(c->order, n, sizeof(*c->order), order_cmp, r->findings);
	for (i = 0; i < n; i++) {
		if (i && key_cmp(&r->findings[c->order[i - 1]], &r->findings[c->order[i]]))
			start = i;
		c->run[c->order[i]] = start;
	}
	/* Numbered in the order of each context's first finding: the first
	 * of its run (ties are in log order), numbered before the others. */
	for (i = 0; i < n; i++)
		c->num[i] = c->order[c->run[i]] == i ? c->n++ : c->num[c->order[c->run[i]]];
	return 0;
}

/* How many findings share finding i's context (1 without contexts). */
static size_t context_size(const struct contexts *c, const mms_guard_t *r, size_t i)
{
	size_t k;

	if (!c->order)
		return 1;
	for (k = c->run[i]; k < r->nfindings && c->run[c->order[k]] == c->run[i]; k++)
		;
	return k - c->run[i];
}

/* "allocated at event N:" and the stack, or what of them is known. */
static void print_where(struct show *s, const char *what, uint64_t event, uint32_t stack)
{
	if (event == UINT64_MAX && !stack)
		return;
	if (event != UINT64_MAX)
		fprintf(s->out, "  %s at event %" PRIu64 "%s\n", what, event, stack ? ":" : "");
	else
		fprintf(s->out, "  %s at:\n", what);
	if (stack)
		show_stack(s, stack, "      ");
}

static void print_json(struct an_ctx *c, const mms_guard_t *r)
{
	struct contexts ctx;
	FILE *f = c->out;

	fputs("{\"analysis\":\"guard\",\"log\":", f);
	json_put_string(f, c->path, strlen(c->path));
	contexts_make(r, &ctx);
	fprintf(f, ",\"guard\":%s,\"checks\":%" PRIu64 ",\"errors\":%zu,\"contexts\":%zu,\"findings\":[",
		r->guard_on ? "true" : "false", r->checks, r->nfindings, ctx.order ? ctx.n : r->nfindings);
	for (size_t i = 0; i < r->nfindings; i++) {
		const mms_guard_finding_t *x = &r->findings[i];
		const char *fam = mms_guard_family_name(x->family);

		fprintf(f, "%s{\"kind\":\"%s\",\"event\":%" PRIu64 ",\"thread\":%" PRIu32 ",\"addr\":%" PRIu64
			   ",\"size\":%" PRIu64 ",\"family\":\"%s\",\"alloc_stack\":%" PRIu32 ",\"free_stack\":%" PRIu32
			   ",\"at_stack\":%" PRIu32,
			i ? "," : "", mms_guard_kind_name(x->kind) ? mms_guard_kind_name(x->kind) : "unknown", x->event,
			x->thread, x->addr, x->size, fam ? fam : "?", x->alloc_stack, x->free_stack, x->at_stack);
		fprintf(f, ",\"context\":%zu", ctx.order ? ctx.num[i] : i);
		if (found_by(x->found_by, 0))
			fprintf(f, ",\"found_by\":\"%s\"", found_by(x->found_by, 0));
		else
			fputs(",\"found_by\":null", f);
		fputs(",\"alloc_event\":", f);
		x->alloc_event == UINT64_MAX ? fputs("null", f) : fprintf(f, "%" PRIu64, x->alloc_event);
		fputs(",\"free_event\":", f);
		x->free_event == UINT64_MAX ? fputs("null", f) : fprintf(f, "%" PRIu64, x->free_event);
		fputs(",\"window_from\":", f);
		x->since_event == UINT64_MAX ? fputs("null", f) : fprintf(f, "%" PRIu64, x->since_event);
		fprintf(f,
			",\"window_to\":%" PRIu64 ",\"steps_in_window\":%" PRIu64 ",\"launches_in_window\":%" PRIu64
			",\"offset\":%" PRId64 ",\"length\":%" PRIu64 ",\"bytes\":\"",
			x->event, x->steps_in_window, x->launches_in_window, x->offset, x->length);
		for (unsigned k = 0; k < x->nbytes; k++)
			fprintf(f, "%02x", x->bytes[k]);
		fputc('"', f);
		if (x->last_launch) {
			fprintf(f, ",\"last_launch\":%" PRIu64 ",\"last_op\":", x->last_launch);
			json_put_string(f, x->last_op ? x->last_op : "", x->last_op ? strlen(x->last_op) : 0);
		}
		fputc('}', f);
	}
	fputs("]}\n", f);
	contexts_free(&ctx);
}

/* After the first finding of a context (i), the others: how many, and the
 * events and blocks of the first few. */
static void print_others(FILE *f, const struct contexts *c, const mms_guard_t *r, size_t i)
{
	size_t n = context_size(c, r, i), k;

	if (n < 2)
		return;
	fprintf(f, "  and %zu more like it (the same kind%s), at events ", n - 1,
		nostack(&r->findings[i]) ? ", block size and damaged offset; no stacks recorded" : " and stacks");
	for (k = 1; k < n && k <= GUARD_OTHERS_SHOWN; k++) {
		const mms_guard_finding_t *y = &r->findings[c->order[c->run[i] + k]];

		fprintf(f, "%s%" PRIu64 " (0x%" PRIx64 ")", k > 1 ? ", " : "", y->event, y->addr);
	}
	fprintf(f, "%s\n", n - 1 > GUARD_OTHERS_SHOWN ? ", ... (--json lists every finding)" : "");
}

static void print_text(struct an_ctx *c, const mms_guard_t *r)
{
	struct contexts ctx;
	struct show s;
	FILE *f = c->out;
	char h[32];

	show_init(&s, c->path, c->log, NULL);
	s.out = f;
	s.depth = c->o->depth;
	s.view = c->o->stack_view;
	s.sym = an_symbolizer(c);
	s.sym_failed = !s.sym;
	if (!r->guard_on && !r->nfindings)
		fprintf(f, "guard: %s was not recorded in guard mode (msmemscope --guard): nothing to report\n",
			c->path);
	contexts_make(r, &ctx);
	for (size_t i = 0; i < r->nfindings; i++) {
		const mms_guard_finding_t *x = &r->findings[i];
		const char *kind = mms_guard_kind_name(x->kind) ? mms_guard_kind_name(x->kind) : "unknown";

		if (ctx.order && ctx.order[ctx.run[i]] != i)
			continue; /* printed with the first of its context */
		fprintf(f, "==guard== %s: %s\n", kind, kind_words(kind));
		if (x->size || x->alloc_event != UINT64_MAX)
			fprintf(f, "  block 0x%" PRIx64 " of %s (%s)\n", x->addr, human_bytes_exact(x->size, h, sizeof h),
				mms_guard_family_name(x->family) ? mms_guard_family_name(x->family) : "?");
		else
			fprintf(f, "  address 0x%" PRIx64 "\n", x->addr);
		if (x->length) {
			fprintf(f, "  %" PRIu64 " byte%s damaged at offset %" PRId64 "%s:", x->length,
				x->length == 1 ? "" : "s", x->offset,
				x->offset < 0 ? " (before the block)"
				: (uint64_t)x->offset >= x->size && strcmp(kind, "write_after_free")
					? " (past the end)"
					: "");
			for (unsigned k = 0; k < x->nbytes; k++)
				fprintf(f, " %02x", x->bytes[k]);
			fputs(x->length > x->nbytes ? " ...\n" : "\n", f);
		}
		fprintf(f, "  found at event %" PRIu64 "%s%s\n", x->event, found_by(x->found_by, 1),
			x->at_stack ? ", in:" : "");
		if (x->at_stack)
			show_stack(&s, x->at_stack, "      ");
		print_where(&s, "allocated", x->alloc_event, x->alloc_stack);
		print_where(&s, "freed", x->free_event, x->free_stack);
		if (x->length && x->since_event != UINT64_MAX) {
			fprintf(f,
				"  window: after event %" PRIu64 " (%s) and before event %" PRIu64 "; %" PRIu64
				" step%s and %" PRIu64 " operator launch%s began in it\n",
				x->since_event, since_words(x->since), x->event, x->steps_in_window,
				x->steps_in_window == 1 ? "" : "s", x->launches_in_window,
				x->launches_in_window == 1 ? "" : "es");
			if (x->last_launch && x->launches_in_window == 1)
				fprintf(f, "  done by operator launch %" PRIu64 " (%s), or just before it began\n",
					x->last_launch, x->last_op ? x->last_op : "unnamed");
			else if (x->last_launch)
				fprintf(f, "  the last launch that began in it: %" PRIu64 " (%s)%s\n", x->last_launch,
					x->last_op ? x->last_op : "unnamed",
					x->launches_in_window > 1 ? "; --guard=ops checks at each launch's end" : "");
		} else if (x->length) {
			fprintf(f, "  window: after %s and before event %" PRIu64 "\n", since_words(x->since), x->event);
		}
		print_others(f, &ctx, r, i);
	}
	/* Without stacks a finding names events only: say how to get them,
	 * as the leak reports do. */
	int stacks = 0;

	for (size_t i = 0; i < r->nfindings; i++)
		stacks |= r->findings[i].alloc_stack || r->findings[i].free_stack || r->findings[i].at_stack;
	if (r->nfindings && !stacks)
		fputs("(no stacks recorded: run with --call-stack=c:N to see where each block was allocated, freed "
		      "and found damaged)\n",
		      f);
	fprintf(f, "msmemscope: ERROR SUMMARY: %zu error%s from %zu context%s", r->nfindings, r->nfindings == 1 ? "" : "s",
		ctx.order ? ctx.n : r->nfindings, (ctx.order ? ctx.n : r->nfindings) == 1 ? "" : "s");
	if (r->guard_on)
		fprintf(f, " (guard mode, %" PRIu64 " full check%s; it moves every heap block by design)",
			r->checks, r->checks == 1 ? "" : "s");
	fputc('\n', f);
	s.sym = NULL; /* the context's: it closes it */
	show_fini(&s);
	contexts_free(&ctx);
}

int an_guard_add(struct an_ctx *c)
{
	int rc = mms_guard_add(c->pass, NULL, &c->guard);

	c->subscribed += !rc;
	if (rc)
		warn("%s: guard: %s", c->path, mms_strerror(rc));
	return rc ? CLI_EXIT_FAILURE : 0;
}

int an_guard_print(struct an_ctx *c)
{
	const mms_guard_t *r = c->guard;

	if (r->status) {
		warn("%s: guard: %s", c->path, mms_strerror(r->status));
		return CLI_EXIT_FAILURE;
	}
	if (c->o->json)
		print_json(c, r);
	else
		print_text(c, r);
	fflush(c->out);
	return 0;
}
