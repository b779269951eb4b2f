/* SPDX-License-Identifier: MIT */
/* an-leaks.c: the leaks analysis as people and scripts read it: the
 * per-step leaks in msMemScope's words, grouped by allocation stack, the
 * blocks live at exit, and what the suppressions file took out (what is
 * set apart as no leak, and the bad frees: an-leaks-apart.c; the steps'
 * table and growth: an-steps.c). */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an-leaks.h"
#include "analysis.h"
#include "cli.h"
#include "logwords.h"
#include "replay-show.h"

/* What the suppressions took out of one section, per suppression. */
struct suppressed {
	uint64_t leaks, bytes;
	uint64_t *per_leaks, *per_bytes; /* by suppression */
};

/* The memory a block came from, as msMemScope names it in a leak line:
 * the kind, a pool's own name, or HAL for device memory (as its dump's
 * Event Type). */
static const char *pool_name(const mms_block_t *b)
{
	if (b->mem == MMS_MEM_POOL && b->pool && *b->pool)
		return b->pool;
	return b->mem == MMS_MEM_DEVICE ? "HAL" : show_mem_name(b->mem);
}

static void json_str(FILE *f, const char *s)
{
	if (s)
		json_put_string(f, s, strlen(s));
	else
		fputs("null", f);
}

static void count_suppressed(const struct leaks_out *o, const mms_leak_t *l, size_t n, struct suppressed *sp)
{
	size_t i;

	memset(sp, 0, sizeof(*sp));
	sp->per_leaks = xcalloc(o->nsupp + 1, sizeof(*sp->per_leaks));
	sp->per_bytes = xcalloc(o->nsupp + 1, sizeof(*sp->per_bytes));
	for (i = 0; i < n; i++) {
		if (!l[i].suppression)
			continue;
		sp->leaks++;
		sp->bytes += l[i].b.size;
		sp->per_leaks[l[i].suppression - 1]++;
		sp->per_bytes[l[i].suppression - 1] += l[i].b.size;
	}
}

static void suppressed_free(struct suppressed *sp)
{
	free(sp->per_leaks);
	free(sp->per_bytes);
}

/* LeakSanitizer's table of the suppressions used. */
static void print_suppressed(const struct leaks_out *o, const struct suppressed *sp)
{
	FILE *f = o->c->out;
	size_t i;

	if (!sp->leaks)
		return;
	fprintf(f, "Suppressed: %" PRIu64 " byte(s) in %" PRIu64 " allocation(s):\n", sp->bytes, sp->leaks);
	fprintf(f, "  %8s %12s  %s\n", "count", "bytes", "template");
	for (i = 0; i < o->nsupp; i++)
		if (sp->per_leaks[i])
			fprintf(f, "  %8" PRIu64 " %12" PRIu64 "  %s\n", sp->per_leaks[i], sp->per_bytes[i],
				mms_suppressions_pattern(o->supp, i));
}

static void json_suppressed(const struct leaks_out *o, const struct suppressed *sp)
{
	FILE *f = o->c->out;
	size_t i, k = 0;

	fprintf(f, "\"suppressed_leaks\":%" PRIu64 ",\"suppressed_bytes\":%" PRIu64 ",\"suppressions_used\":[",
		sp->leaks, sp->bytes);
	for (i = 0; i < o->nsupp; i++) {
		if (!sp->per_leaks[i])
			continue;
		fprintf(f, "%s{\"template\":", k++ ? "," : "");
		json_str(f, mms_suppressions_pattern(o->supp, i));
		fprintf(f, ",\"leaks\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", sp->per_leaks[i], sp->per_bytes[i]);
	}
	fputc(']', f);
}

/* Per-step leak lines printed one by one (unless --top 0): a leak in a
 * loop is thousands of them, and the stacks that follow say more. */
#define LEAK_LINES 100

/* One leak line, as msMemScope writes it, with the operator named. */
static void print_leak(FILE *f, const mms_leak_t *k)
{
	fprintf(f, "Direct %s leak of %.6f Mb(s) at 0x%" PRIx64 " in ", pool_name(&k->b), an_mb(k->b.size), k->b.addr);
	if (k->b.op)
		fprintf(f, "%s (launch %" PRIu64 ")", k->b.op, k->b.op_launch);
	else
		fprintf(f, "kernel_%" PRIu64, k->b.kernel_launches);
	/* A log without steps has no step to name (the marks rule). */
	if (k->b.step)
		fprintf(f, " at step %" PRIu64, k->b.step);
	fputs(".\n", f);
}

void an_leaks_json_list(FILE *f, const mms_leak_t *l, size_t n)
{
	size_t i, k = 0;

	fputc('[', f);
	for (i = 0; i < n; i++) {
		const mms_block_t *b = &l[i].b;

		if (l[i].suppression)
			continue;
		fprintf(f, "%s{\"addr\":\"0x%" PRIx64 "\",\"bytes\":%" PRIu64 ",\"memory\":", k++ ? "," : "", b->addr,
			b->size);
		json_str(f, pool_name(b));
		if (b->mem == MMS_MEM_DEVICE)
			fprintf(f, ",\"device\":%" PRIu32, b->device);
		fprintf(f, ",\"step\":%" PRIu64 ",\"found_at_step_end\":%" PRIu64 ",\"op\":", b->step, l[i].found_step);
		json_str(f, b->op);
		fprintf(f,
			",\"op_launch\":%" PRIu64 ",\"kernel_launches\":%" PRIu64 ",\"thread\":%" PRIu32
			",\"alloc_id\":%" PRIu64 ",\"stack\":%" PRIu32 ",\"inherited\":%s",
			b->op_launch, b->kernel_launches, b->thread, b->alloc_id, b->stack,
			b->inherited ? "true" : "false");
		if (b->reach)
			fprintf(f, ",\"reach\":\"%s\"", mms_reach_name(b->reach));
		if (b->indirect_blocks)
			fprintf(f, ",\"indirect\":{\"blocks\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", b->indirect_blocks,
				b->indirect_bytes);
		if (l[i].freed_step)
			fprintf(f, ",\"freed_at_step\":%" PRIu64 ",\"freed_at_event\":%" PRIu64, l[i].freed_step,
				l[i].freed_event);
		fputc('}', f);
	}
	fputc(']', f);
}

/* What a section found, after its heading: a line per leak (the first
 * LEAK_LINES unless --top 0), the leaks by stack ("WHAT by allocation
 * stack") and the summary line; more names the leaks in the line that
 * counts those not listed. */
static void print_found(struct leaks_out *o, const mms_leak_t *l, size_t n, uint64_t blocks, uint64_t bytes,
			const char *more, const char *what, const mms_stack_group_t *g, size_t ng)
{
	FILE *f = o->c->out;
	size_t i, listed = 0;
	char *title = xasprintf("%s by allocation stack", what);

	for (i = 0; i < n; i++)
		if (!l[i].suppression && (!o->s.top || listed++ < LEAK_LINES))
			print_leak(f, &l[i]);
	if (o->s.top && blocks > LEAK_LINES)
		fprintf(f,
			"... and %" PRIu64 " more %s, counted by stack below "
			"(msmemscope-replay LOG --analysis leaks --top 0 lists every one)\n",
			blocks - LEAK_LINES, more);
	show_groups(&o->s, title, g, ng);
	fprintf(f, "====== SUMMARY: %.6f Mb(s) leaked in %" PRIu64 " allocation(s) ======\n", an_mb(bytes), blocks);
	free(title);
}

/* The sections of the report. */
enum section { SEC_EXIT, SEC_STEP, SEC_MARKS };

/* The marks rule's marks, in words: "between mark 2 (event 40) and mark 3
 * (event 77) of 'iter', still live at mark 4 (event 120)". */
static void marks_words(const struct leaks_out *o, char *buf, size_t len)
{
	const mms_leaks_t *l = o->l;
	uint64_t first = o->c->o->leak_mark_first ? o->c->o->leak_mark_first : 1;

	snprintf(buf, len,
		 "between mark %" PRIu64 " (event %" PRIu64 ") and mark %" PRIu64 " (event %" PRIu64
		 ") named '%s', still live at mark %" PRIu64 " (event %" PRIu64 ")",
		 first, l->mark_events[0], first + 1, l->mark_events[1], o->c->o->leak_marks, first + 2,
		 l->mark_events[2]);
}

/* The marks rule could not apply: too few marks of that name. */
static void print_marks_missing(const struct leaks_out *o)
{
	const mms_leaks_t *l = o->l;
	uint64_t first = o->c->o->leak_mark_first ? o->c->o->leak_mark_first : 1;

	fprintf(o->c->out,
		"No leaks between marks: the %s has %" PRIu64 " mark%s named '%s', and the rule needs three from "
		"mark %" PRIu64 " (--leak-marks NAME,N chooses the first).\n",
		o->info.cut || o->info.damaged || l->stop_rc ? "log, as far as it could be read," : "log",
		l->marks_seen, l->marks_seen == 1 ? "" : "s", o->c->o->leak_marks, first);
}

/* The blocks of l[0, n) (not suppressed) of each verdict of the scan at
 * exit (enum mms_reach); [MMS_REACH_UNKNOWN] counts the heap's alone: in
 * a log whose scan gave the others theirs, those made as it ran. */
static void reach_counts(const mms_leak_t *l, size_t n, uint64_t blocks[MMS_REACH_COUNT],
			 uint64_t bytes[MMS_REACH_COUNT])
{
	memset(blocks, 0, MMS_REACH_COUNT * sizeof(*blocks));
	memset(bytes, 0, MMS_REACH_COUNT * sizeof(*bytes));
	for (size_t i = 0; i < n; i++) {
		unsigned r = l[i].b.reach < MMS_REACH_COUNT ? l[i].b.reach : 0;

		if (l[i].suppression || (!r && l[i].b.mem != MMS_MEM_HOST))
			continue;
		blocks[r]++;
		bytes[r] += l[i].b.size;
	}
}

/* at_exit's "reach" fields: whether the scan told leaked blocks from
 * reachable ones, and how many of each verdict the leaks are. */
static void json_reach(const struct leaks_out *o, const mms_leak_t *l, size_t n)
{
	uint64_t blocks[MMS_REACH_COUNT], bytes[MMS_REACH_COUNT];

	reach_counts(l, n, blocks, bytes);
	fprintf(o->c->out, "\"reach_known\":%s,", o->l->reach_known ? "true" : "false");
	if (!o->l->reach_known)
		return;
	fputs("\"by_reach\":{", o->c->out);
	for (unsigned r = MMS_REACH_LEAKED; r <= MMS_REACH_POSSIBLE; r++)
		fprintf(o->c->out, "%s\"%s\":{\"leaks\":%" PRIu64 ",\"bytes\":%" PRIu64 "}",
			r == MMS_REACH_LEAKED ? "" : ",", mms_reach_name(r), blocks[r], bytes[r]);
	/* The heap's blocks made as the scan ran, no pointer found: no
	 * verdict, no leak (the list has them without "reach"). */
	fprintf(o->c->out, ",\"not_judged\":{\"blocks\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", blocks[0], bytes[0]);
	fputs("},", o->c->out);
}

/* "Of them N allocation(s) ... were inherited from the parent", when a
 * fork child's blocks of l[0, n) (not suppressed) came from its parent. */
void an_leaks_inherited(FILE *f, const mms_leak_t *l, size_t n)
{
	uint64_t blocks = 0, bytes = 0;

	for (size_t i = 0; i < n; i++)
		if (!l[i].suppression && l[i].b.inherited) {
			blocks++;
			bytes += l[i].b.size;
		}
	if (blocks)
		fprintf(f,
			"Of them %" PRIu64 " allocation(s), %.6f Mb(s), were inherited from the parent: allocated "
			"before it forked this process.\n",
			blocks, an_mb(bytes));
}

/* Shows l[0, n) (not suppressed) grouped by allocation stack under title;
 * adds their blocks and bytes to *blocks and *bytes when not NULL. */
void an_leaks_by_stack(struct leaks_out *o, const mms_leak_t *l, size_t n, const char *title, uint64_t *blocks,
		       uint64_t *bytes)
{
	mms_stack_group_t *g;
	size_t ng, i;
	int rc = mms_leaks_group(l, n, &g, &ng);

	if (rc)
		die(CLI_EXIT_FAILURE, "leaks: %s", mms_strerror(rc));
	for (i = 0; i < ng && blocks && bytes; i++) {
		*blocks += g[i].blocks;
		*bytes += g[i].bytes;
	}
	show_groups(&o->s, title, g, ng);
	free(g);
}

/* Groups l[0, n) (not suppressed) by stack under title, then the summary
 * line "SUMMARY: X Mb(s) what in N allocation(s)". */
static void print_groups(struct leaks_out *o, const mms_leak_t *l, size_t n, const char *title, const char *what)
{
	uint64_t blocks = 0, bytes = 0;

	an_leaks_by_stack(o, l, n, title, &blocks, &bytes);
	fprintf(o->c->out, "====== SUMMARY: %.6f Mb(s) %s in %" PRIu64 " allocation(s) ======\n", an_mb(bytes), what,
		blocks);
}

/* The end's verdict when every block live there was allocated before
 * recording last stopped. */
#define UNRECORDED_ONLY                                                                                          \
	"No leaks at exit that the log can tell: every block it followed to the end was freed; those allocated " \
	"before recording stopped follow.\n"

/* The head of a verdict of no leak (when: "at exit", ...): of a log
 * recorded in parts only what it can tell; with leaks suppressed, not
 * none at all. */
static void no_leaks_head(const struct leaks_out *o, const char *when, size_t suppressed)
{
	fprintf(o->c->out, "No leaks %s%s%s: ", when, o->parts ? " that the log can tell" : "",
		suppressed ? " but those suppressed (below)" : "");
}

/* After such a verdict, a log recorded in parts says why it cannot tell
 * more (print_all_freed() says it in its line). */
static void parts_note(const struct leaks_out *o)
{
	if (!o->parts)
		return;
	fprintf(o->c->out,
		"(The log was recorded in parts (%s): what the program allocated or freed while "
		"nothing was recorded is not in it.)\n",
		o->cfg.nsteps     ? "--steps"
		: o->cfg.deferred ? "--collect-mode=deferred"
				  : "msmemscope_stop() paused it");
}

/* No block live at the end (when: "at exit", "at log end"...): of a log
 * recorded in parts, nothing is said of what it did not see. */
static void print_all_freed(const struct leaks_out *o, const char *when)
{
	FILE *f = o->c->out;

	if (!o->parts)
		fprintf(f, "No leaks %s: every block was freed.\n", when);
	else if (o->cfg.nsteps)
		fprintf(f,
			"No leaks %s that the log can tell: every block it recorded was freed (recorded with "
			"--steps: the memory events of those steps only).\n",
			when);
	else if (!o->cfg.deferred)
		fprintf(f,
			"No leaks %s that the log can tell: every block it recorded was freed (msmemscope_stop() "
			"paused recording: the memory events while it was off are not in the log).\n",
			when);
	else if (!o->collects)
		fprintf(f,
			"No leaks %s that the log can tell: it recorded no block (recorded with "
			"--collect-mode=deferred, and the program never called msmemscope_start()).\n",
			when);
	else
		fprintf(f,
			"No leaks %s that the log can tell: every block it recorded was freed (recorded with "
			"--collect-mode=deferred: only between msmemscope_start() and msmemscope_stop()).\n",
			when);
}

/* The blocks live at exit when the scan at exit told the heap's leaked
 * blocks from those still reachable (which follow, apart): the leaked
 * ones, then the heap's blocks made as the scan ran that it found no
 * pointer to (no verdict), then what the scan does not judge (mappings,
 * pools, device memory), still live. */
static void print_leaked_at_exit(struct leaks_out *o, const mms_leak_t *l, size_t n)
{
	FILE *f = o->c->out;
	uint64_t rb[MMS_REACH_COUNT], ry[MMS_REACH_COUNT];
	mms_leak_t *heap = xcalloc(n ? n : 1, sizeof(*heap)), *other = xcalloc(n ? n : 1, sizeof(*other));
	mms_leak_t *late = xcalloc(n ? n : 1, sizeof(*late));
	size_t nheap = 0, nother = 0, nlate = 0, nsupp = 0, i;

	for (i = 0; i < n; i++) {
		if (l[i].suppression) {
			nsupp++;
			continue;
		}
		if (l[i].b.reach)
			heap[nheap++] = l[i];
		else if (l[i].b.mem == MMS_MEM_HOST)
			late[nlate++] = l[i];
		else
			other[nother++] = l[i];
	}
	reach_counts(heap, nheap, rb, ry);
	if (nheap) {
		fputs("====== Blocks leaked at exit: the program no longer pointed to them ======\n", f);
		print_groups(o, heap, nheap, "Leaked at exit by allocation stack", "leaked at exit");
		if (rb[MMS_REACH_INDIRECT])
			fprintf(f,
				"Of them %" PRIu64 " allocation(s), %.6f Mb(s), were pointed to only from other leaked "
				"blocks (indirectly leaked: they go with the blocks that point to them).\n",
				rb[MMS_REACH_INDIRECT], an_mb(ry[MMS_REACH_INDIRECT]));
		if (rb[MMS_REACH_POSSIBLE])
			fprintf(f,
				"Of them %" PRIu64
				" allocation(s), %.6f Mb(s), were reached only through pointers into "
				"their middle (possibly leaked).\n",
				rb[MMS_REACH_POSSIBLE], an_mb(ry[MMS_REACH_POSSIBLE]));
		an_leaks_inherited(f, heap, nheap);
	} else if (!nother && !nlate && !o->l->nreachable && o->info.own_malloc) {
		fputs("No recorded block live at exit; the program's own malloc's blocks were not recorded (see the "
		      "warning).\n",
		      f);
	} else if (o->l->nunrecorded) {
		fputs(UNRECORDED_ONLY, f);
	} else if (nother || nlate) {
		fprintf(f, "No heap block leaked at exit%s%s: each was freed%s.\n",
			o->parts ? " that the log can tell" : "", nsupp ? " but those suppressed (below)" : "",
			o->l->nreachable && nlate ? ", is still reachable or was not judged (what follows)"
			: o->l->nreachable        ? " or is still reachable (what follows)"
			: nlate                   ? " or was not judged (what follows)"
						  : "");
		parts_note(o);
	} else if (o->l->nreachable) {
		no_leaks_head(o, "at exit", nsupp);
		fputs("every block of the program's was freed or is still reachable (what follows).\n", f);
		parts_note(o);
	} else if (o->l->nruntime_kept || nsupp) {
		no_leaks_head(o, "at exit", nsupp);
		fputs(o->l->nruntime_kept ? "every block of the program's was freed (what the runtimes keep follows).\n"
					  : "every other block was freed.\n",
		      f);
		parts_note(o);
	} else {
		print_all_freed(o, "at exit");
	}
	if (nlate) {
		fputs("====== Heap blocks not judged (" LOG_UNJUDGED_WHY ") ======\n", f);
		print_groups(o, late, nlate, "Not judged at exit by allocation stack", "live at exit (not judged)");
	}
	if (nother) {
		fputs("====== Other memory still live at exit (mappings, pools, device memory) ======\n", f);
		print_groups(o, other, nother, "Live at exit by allocation stack", "live at exit");
		an_leaks_inherited(f, other, nother);
	}
	free(heap);
	free(late);
	free(other);
}

/* One section (per-step leaks, between marks, or live at exit): the leak
 * lines (not at exit), the stacks, the summary, what was suppressed. */
static void print_section(struct leaks_out *o, enum section sec, const mms_leak_t *l, size_t n)
{
	int per_step = sec == SEC_STEP;
	FILE *f = o->c->out;
	struct suppressed sp;
	mms_stack_group_t *g;
	uint64_t blocks = 0, bytes = 0, iblocks = 0, ibytes = 0;
	size_t ng, i;
	int rc;

	count_suppressed(o, l, n, &sp);
	/* A fork child's blocks from its parent, kept to the end. */
	for (i = 0; i < n; i++) {
		if (!l[i].suppression && l[i].b.inherited) {
			iblocks++;
			ibytes += l[i].b.size;
		}
	}
	rc = mms_leaks_group(l, n, &g, &ng);
	if (rc)
		die(CLI_EXIT_FAILURE, "leaks: %s", mms_strerror(rc));
	for (i = 0; i < ng; i++) {
		blocks += g[i].blocks;
		bytes += g[i].bytes;
	}
	if (o->s.json) {
		char when[128];

		fprintf(f, "\"%s\":{\"leaks\":%" PRIu64 ",\"bytes\":%" PRIu64 ",",
			per_step ? "per_step" : sec == SEC_MARKS ? "between_marks" : "at_exit", blocks, bytes);
		if (sec == SEC_MARKS) {
			fputs("\"name\":", f);
			json_str(f, o->c->o->leak_marks);
			fprintf(f, ",\"first\":%" PRIu64 ",\"marks_seen\":%" PRIu64 ",\"events\":[",
				o->c->o->leak_mark_first ? o->c->o->leak_mark_first : 1, o->l->marks_seen);
			for (i = 0; i < 3; i++) {
				if (o->l->mark_events[i] == UINT64_MAX)
					fprintf(f, "%snull", i ? "," : "");
				else
					fprintf(f, "%s%" PRIu64, i ? "," : "", o->l->mark_events[i]);
			}
			fputs("],", f);
		}
		/* "at_exit" is the blocks live at the end of the replay: when
		 * that was, in words. */
		if (sec == SEC_EXIT) {
			fprintf(f, "\"inherited_leaks\":%" PRIu64 ",\"inherited_bytes\":%" PRIu64 ",", iblocks, ibytes);
			json_reach(o, l, n);
			fputs("\"live_when\":", f);
			json_str(f, log_live_when(&o->info, when, sizeof(when)));
			fputc(',', f);
		}
		json_suppressed(o, &sp);
		fputs(",\"list\":", f);
		an_leaks_json_list(f, l, n);
		fputs(",\"by_stack\":", f);
		show_groups(&o->s, NULL, g, ng);
		fputc('}', f);
		goto out;
	}
	if (per_step) {
		if (blocks) {
			fputs("====== ERROR: Detected memory leaks ======\n", f);
			print_found(o, l, n, blocks, bytes, "per-step leaks", "Per-step leaks", g, ng);
			if (o->l->warmup_steps == 2 && !o->c->o->warmup_steps)
				fputs("(Steps 1 and 2 were warm-up, as for steps inferred from a PyTorch optimizer; "
				      "--warmup-steps=1 applies msMemScope's rule, step 1 only.)\n",
				      f);
		} else if (o->l->nstep_held + o->l->nstep_swept + o->l->nstep_cached + o->l->nstep_once +
			   o->l->nstep_unrecorded) {
			/* The rule found blocks, all set apart: say so, not
			 * that it found none. */
			fprintf(f,
				"No per-step leaks: what was allocated in step %u or later and still live at the end of "
				"the step after it is set apart below (freed later, in a cache, kept from one step "
				"only, or live when recording stopped: no growth from step to step the log can tell).\n",
				o->l->warmup_steps + 1);
		} else {
			fprintf(f,
				"No per-step leaks: no block allocated in step %u or later was still live at the end of "
				"the step after it.\n",
				o->l->warmup_steps + 1);
		}
	} else if (sec == SEC_MARKS) {
		char words[512];

		if (o->l->mark_events[2] == UINT64_MAX) {
			print_marks_missing(o);
		} else if (blocks) {
			marks_words(o, words, sizeof(words));
			fputs("====== ERROR: Detected memory leaks between marks ======\n", f);
			fprintf(f, "Allocated %s:\n", words);
			print_found(o, l, n, blocks, bytes, "leaks between the marks", "Leaks between marks", g, ng);
		} else {
			marks_words(o, words, sizeof(words));
			fprintf(f, "No leaks between marks: no block allocated %s.\n", words);
		}
	} else {
		/* A cut or damaged log lost records, frees among them: what
		 * it shows live is not what the process kept at exit. */
		char when[128];
		char *title = xasprintf("Live at %s by allocation stack", log_end_label(&o->info));

		log_live_when(&o->info, when, sizeof(when));
		if (o->l->reach_known) {
			print_leaked_at_exit(o, l, n);
		} else if (blocks) {
			fprintf(f, "====== Blocks still live %s ======\n", when);
			/* Why they have no verdicts, where the scan ran. */
			if (o->info.reach_scan > MMS_REACH_SCAN_WHOLE && log_ends_at_exit(&o->info)) {
				char why[256];

				fprintf(f, "(scan at exit: %s)\n", log_reach_scan_text(&o->info, why, sizeof(why)));
			}
			show_groups(&o->s, title, g, ng);
			fprintf(f, "====== SUMMARY: %.6f Mb(s) live %s in %" PRIu64 " allocation(s) ======\n",
				an_mb(bytes), when, blocks);
			an_leaks_inherited(f, l, n);
		} else if (o->info.cut || o->info.damaged) {
			fprintf(f, "No blocks live %s (see the warning).\n", when);
		} else if (o->l->nunrecorded) {
			fputs(UNRECORDED_ONLY, f);
		} else if (o->info.own_malloc) {
			fprintf(f,
				"No recorded block live %s; the program's own malloc's blocks were not recorded (see "
				"the warning).\n",
				when);
		} else if (o->l->nruntime_kept || sp.leaks) {
			no_leaks_head(o, when, sp.leaks);
			fputs(o->l->nruntime_kept ? "every block of the program's was freed (what the runtimes keep "
						    "follows).\n"
						  : "every other block was freed.\n",
			      f);
			parts_note(o);
		} else {
			print_all_freed(o, when);
		}
		free(title);
	}
	print_suppressed(o, &sp);
out:
	free(g);
	suppressed_free(&sp);
}

/* --- the analysis -------------------------------------------------------------- */

/* Reads --suppressions (both programs checked it already; it may have
 * changed since). */
static int load_suppressions(struct leaks_out *o)
{
	const char *path = o->c->o->suppressions, *msg;
	unsigned line = 0;

	if (!path)
		return 0;
	if (mms_suppressions_load(path, &o->supp, &line)) {
		msg = an_check_suppressions(path);
		warn("--suppressions: %s; no leaks report", msg ? msg : "cannot read it");
		return CLI_EXIT_FAILURE;
	}
	o->nsupp = mms_suppressions_count(o->supp);
	return 0;
}

int an_leaks_add(struct an_ctx *c)
{
	mms_leaks_options_t lo = { 0 };
	struct leaks_out o = { .c = c };
	int rc;

	if (load_suppressions(&o))
		return CLI_EXIT_FAILURE;
	c->leaks_supp = o.supp;
	lo.suppressions = o.supp;
	lo.warmup_steps = c->o->warmup_steps;
	lo.marks = c->o->leak_marks;
	lo.mark_first = c->o->leak_mark_first;
	lo.sym = o.supp ? an_symbolizer(c) : NULL;
	rc = mms_leaks_add(c->pass, &lo, &c->leaks);
	c->subscribed += !rc;
	if (rc) {
		warn("leaks: cannot replay %s: %s", c->path, mms_strerror(rc));
		return CLI_EXIT_FAILURE;
	}
	return 0;
}

/* The steps --steps asked for that the program, which reached its exit,
 * never began: nothing of them is in the log, which a report of no
 * leaks would otherwise pass over. The log's steps leave out a last one
 * with no event after its mark: the step after them may have begun. */
static void print_steps_missing(struct leaks_out *o)
{
	char list[MMS_CONFIG_STEPS_MAX * 12];
	size_t k;

	if (!o->info.complete)
		return;
	log_steps_list(&o->cfg, o->l->nsteps ? o->l->nsteps + 1 : 1, list, sizeof(list), &k);
	if (!k)
		return;
	if (o->l->nsteps)
		fprintf(o->c->out,
			"--steps asked for step%s %s, which the program never began (the log has %zu step%s): no "
			"memory event of %s is in the log.\n",
			k == 1 ? "" : "s", list, o->l->nsteps, o->l->nsteps == 1 ? "" : "s", k == 1 ? "it" : "them");
	else
		fprintf(o->c->out,
			"--steps asked for step%s %s, which the program never began (it marked no steps: all of it "
			"ran as step 1): no memory event of %s is in the log.\n",
			k == 1 ? "" : "s", list, k == 1 ? "it" : "them");
}

int an_leaks_print(struct an_ctx *c)
{
	struct leaks_out o = { .c = c, .l = c->leaks, .supp = c->leaks_supp };
	const char *own[2];
	mms_summary_t sum;
	int stacks;

	if (o.l->status) {
		warn("leaks: cannot replay %s: %s", c->path, mms_strerror(o.l->status));
		return CLI_EXIT_FAILURE;
	}
	o.nsupp = o.supp ? mms_suppressions_count(o.supp) : 0;
	if (o.l->stop_rc)
		warn("leaks: %s: the replay stopped early (%s); the report covers the events before it", c->path,
		     mms_strerror(o.l->stop_rc));
	mms_log_get_info(c->log, &o.info);

	an_show_init(c, &o.s);
	if (mms_log_config(c->log, &o.cfg))
		memset(&o.cfg, 0, sizeof(o.cfg));
	if (!mms_pass_summary(c->pass, &sum)) {
		o.collects = sum.by_kind[MMS_EV_COLLECT];
		o.stopped = sum.gap_event != 0;
	}
	/* In parts: deferred, --steps, or msmemscope_stop() called in
	 * immediate mode. */
	o.parts = o.cfg.deferred || o.cfg.nsteps || o.stopped;
	stacks = o.info.call_stack_depth || o.cfg.python_stack;

	if (o.s.json) {
		fprintf(c->out, "{\"analysis\":\"leaks\",\"log\":");
		json_str(c->out, c->path);
		fprintf(c->out, ",\"events\":%" PRIu64 ",\"complete\":%s,\"damaged\":%s,\"cut\":%s,", o.l->events,
			o.info.complete ? "true" : "false", o.info.damaged ? "true" : "false",
			o.info.cut ? "true" : "false");
		log_json_end(c->out, &o.info);
		fprintf(c->out, ",\"steps_total\":%zu,\"warmup_steps\":%u,", o.l->nsteps, o.l->warmup_steps);
		print_section(&o, SEC_STEP, o.l->step_leaks, o.l->nstep_leaks);
		fputc(',', c->out);
		an_leaks_print_step_apart(&o, stacks);
		if (c->o->leak_marks) {
			print_section(&o, SEC_MARKS, o.l->mark_leaks, o.l->nmark_leaks);
			fputc(',', c->out);
		}
		print_section(&o, SEC_EXIT, o.l->exit_leaks, o.l->nexit_leaks);
		fputc(',', c->out);
		an_leaks_print_reachable(&o);
		fputc(',', c->out);
		an_leaks_print_unrecorded(&o);
		fputc(',', c->out);
		an_leaks_print_runtime(&o);
		fputc(',', c->out);
		log_own_operators(c->log, o.l->unchecked_frees, own);
		log_json_bad_frees(c->out, &(struct log_bad_frees){ LOG_BAD_FREES_OF(o.l, own) });
		fputc(',', c->out);
		an_leaks_print_steps(c->out, c->log, o.l, o.s.json, o.s.top);
		fputs("}\n", c->out);
	} else {
		print_steps_missing(&o);
		if (o.l->nsteps) {
			print_section(&o, SEC_STEP, o.l->step_leaks, o.l->nstep_leaks);
			an_leaks_print_step_apart(&o, stacks);
		}
		if (c->o->leak_marks)
			print_section(&o, SEC_MARKS, o.l->mark_leaks, o.l->nmark_leaks);
		print_section(&o, SEC_EXIT, o.l->exit_leaks, o.l->nexit_leaks);
		an_leaks_print_reachable(&o);
		an_leaks_print_unrecorded(&o);
		an_leaks_print_runtime(&o);
		an_leaks_print_bad_frees(&o);
		an_leaks_print_steps(c->out, c->log, o.l, o.s.json, o.s.top);
	}
	an_show_fini(&o.s);
	return 0;
}

/* The leaks of l of the kinds (enum an_leak_kind) no suppression matched;
 * those no scan told (counted as definite) are added to *unverdicted.
 * judged: the scan told the others apart, and those it did not judge
 * (made as it ran) are no leaks. */
static uint64_t count_leaks(const mms_leak_t *l, size_t n, unsigned kinds, int judged, uint64_t *unverdicted)
{
	uint64_t k = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned r = l[i].b.reach;
		unsigned kind = r == MMS_REACH_INDIRECT    ? AN_LEAK_INDIRECT
				: r == MMS_REACH_POSSIBLE  ? AN_LEAK_POSSIBLE
				: r == MMS_REACH_REACHABLE ? AN_LEAK_REACHABLE
							   : AN_LEAK_DEFINITE;
		int counted = !l[i].suppression && l[i].b.mem == MMS_MEM_HOST && (kinds & kind) &&
			      !(judged && r == MMS_REACH_UNKNOWN);

		k += counted;
		*unverdicted += counted && r == MMS_REACH_UNKNOWN;
	}
	return k;
}

uint64_t an_leak_errors(const struct an_ctx *c, unsigned kinds, uint64_t *unverdicted)
{
	const mms_leaks_t *l = c->leaks;
	mms_log_info_t info;
	uint64_t n = 0;

	*unverdicted = 0;
	if (!l)
		return 0;
	if (kinds & AN_LEAK_STEP) {
		for (size_t i = 0; i < l->nstep_leaks; i++)
			n += !l->step_leaks[i].suppression;
		for (size_t i = 0; i < l->nmark_leaks; i++)
			n += !l->mark_leaks[i].suppression;
	}
	/* Live at the end of a cut log, or of one that stopped before exit, is
	 * no leak. */
	mms_log_get_info(c->log, &info);
	if (!log_ends_at_exit(&info))
		return n;
	return n +
	       count_leaks(l->exit_leaks, l->nexit_leaks, kinds & ~(unsigned)AN_LEAK_STEP, l->reach_known,
			   unverdicted) +
	       count_leaks(l->reachable, l->nreachable, kinds & AN_LEAK_REACHABLE, l->reach_known, unverdicted);
}
