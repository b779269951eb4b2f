/* SPDX-License-Identifier: MIT */
/* an-leaks-apart.c: what the leaks report sets apart as no leak, each
 * under its own heading: the blocks the runtimes keep for themselves,
 * those still reachable at exit, those live when recording stopped, what
 * the per-step rule held apart; and the bad frees that close the report
 * (the leaks themselves: an-leaks.c). */
#include "config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an-leaks.h"
#include "cli.h"
#include "logwords.h"

/* The blocks live at the end that the C and C++ runtimes keep for
 * themselves: not leaks, so under a heading of their own, counted by
 * runtime (and listed by stack with --show-runtime). */
void an_leaks_print_runtime(struct leaks_out *o)
{
	const mms_leaks_t *l = o->l;
	/* The runtimes whose state at exit is told from native code's own
	 * leaks by the allocation stacks. */
	static const struct {
		unsigned kind;
		const char *code, *whose;
	} native[] = { { MMS_RUNTIME_PERL, "an XS module", "perl" },
		       { MMS_RUNTIME_NODE, "a native addon", "Node.js" },
		       { MMS_RUNTIME_JVM, "a JNI library", "the JVM" } };
	FILE *f = o->c->out;
	uint64_t blocks[MMS_RUNTIME_COUNT] = { 0 }, bytes[MMS_RUNTIME_COUNT] = { 0 };
	size_t i;
	char h[32];

	for (i = 0; i < l->nruntime_kept; i++) {
		unsigned k = l->runtime_kept[i].b.runtime < MMS_RUNTIME_COUNT ? l->runtime_kept[i].b.runtime : 0;

		blocks[k]++, bytes[k] += l->runtime_kept[i].b.size;
		blocks[0]++, bytes[0] += l->runtime_kept[i].b.size;
	}
	if (o->s.json) {
		fprintf(f, "\"runtime\":{\"blocks\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"by_kind\":{", blocks[0],
			bytes[0]);
		for (unsigned k = 1, first = 1; k < MMS_RUNTIME_COUNT; k++) {
			if (!blocks[k])
				continue;
			fprintf(f, "%s\"%s\":{\"blocks\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", first ? "" : ",",
				mms_runtime_name(k), blocks[k], bytes[k]);
			first = 0;
		}
		fputs("},\"list\":", f);
		an_leaks_json_list(f, l->runtime_kept, l->nruntime_kept);
		fputc('}', f);
		return;
	}
	if (!blocks[0])
		return;
	fprintf(f, "====== Kept by the runtimes: %" PRIu64 " allocation(s), %s (not leaks) ======\n", blocks[0],
		human_bytes(bytes[0], h, sizeof(h)));
	for (unsigned k = 1; k < MMS_RUNTIME_COUNT; k++)
		if (blocks[k])
			fprintf(f, "  %" PRIu64 " block%s, %s: %s\n", blocks[k], blocks[k] == 1 ? "" : "s",
				human_bytes(bytes[k], h, sizeof(h)), log_runtime_what(&o->info, k));
	if (blocks[MMS_RUNTIME_PYTHON] && !o->info.call_stack_depth) {
		mms_config_t cfg;
		/* Python frames alone do not tell an extension module's code
		 * from the interpreter's. */
		int py = !mms_log_config(o->c->log, &cfg) && cfg.python_stack;

		fprintf(f,
			"  (recorded without %sstacks: a block an extension module leaked is counted as CPython's too; "
			"record with --call-stack=c:N%s to tell them apart)\n",
			py ? "C " : "", py ? ",python:M" : "");
	}
	for (i = 0; i < sizeof(native) / sizeof(native[0]) && !o->info.call_stack_depth; i++)
		if (blocks[native[i].kind])
			fprintf(f,
				"  (recorded without stacks: a block %s leaked is counted as %s's too; record with "
				"--call-stack=c:N to tell them apart)\n",
				native[i].code, native[i].whose);
	if (blocks[MMS_RUNTIME_LIBC] + blocks[MMS_RUNTIME_LIBCXX] + blocks[MMS_RUNTIME_TLS] +
		    blocks[MMS_RUNTIME_STDIO] &&
	    !o->info.freeres) {
		char why[160];

		fprintf(f,
			"  (glibc's and libstdc++'s freeres, which free these at the end of exit, did not run: %s)\n",
			log_freeres_why(&o->info, o->c->killed_by, why, sizeof(why)));
	}
	if (!o->c->o->show_runtime) {
		fputs("  --show-runtime lists them by allocation stack.\n", f);
		return;
	}
	an_leaks_by_stack(o, l->runtime_kept, l->nruntime_kept, "Kept by the runtimes by allocation stack", NULL, NULL);
}

/* Blocks that are not leaks, set apart: in JSON the object key (blocks,
 * bytes, list); as text the line "PRE<n> allocation(s), <size>POST", the
 * inherited ones among them when asked, then the list by stack under
 * title when show, else a pointer to the option that shows it. */
static void print_apart(struct leaks_out *o, const mms_leak_t *l, size_t n, const char *key, const char *pre,
			const char *post, int inherited, bool show, const char *option, const char *title)
{
	FILE *f = o->c->out;
	uint64_t bytes = 0;
	size_t i;
	char h[32];

	for (i = 0; i < n; i++)
		bytes += l[i].b.size;
	if (o->s.json) {
		fprintf(f, "\"%s\":{\"blocks\":%zu,\"bytes\":%" PRIu64 ",\"list\":", key, n, bytes);
		an_leaks_json_list(f, l, n);
		fputc('}', f);
		return;
	}
	if (!n)
		return;
	fprintf(f, "%s%zu allocation(s), %s%s\n", pre, n, human_bytes(bytes, h, sizeof(h)), post);
	if (inherited)
		an_leaks_inherited(f, l, n);
	if (!show) {
		fprintf(f, "  %s lists them by allocation stack.\n", option);
		return;
	}
	an_leaks_by_stack(o, l, n, title, NULL, NULL);
}

/* The program's blocks live at exit that it still pointed to from its
 * globals, stacks or thread-local storage (the scan at exit): not leaks,
 * counted (and listed by stack with --show-reachable). */
void an_leaks_print_reachable(struct leaks_out *o)
{
	print_apart(o, o->l->reachable, o->l->nreachable, "reachable",
		    "====== Still reachable at exit: ", " (not leaks: the program still pointed to them) ======", 1,
		    o->c->o->show_reachable, "--show-reachable", "Still reachable at exit by allocation stack");
}

/* The blocks live at the end that were allocated before recording last
 * stopped (msmemscope_stop(), the end of a step --steps asked for) and
 * not still reachable: the program may have freed them after, unrecorded;
 * not counted as leaks, listed by stack, as they may be. */
void an_leaks_print_unrecorded(struct leaks_out *o)
{
	print_apart(o, o->l->unrecorded, o->l->nunrecorded, "unrecorded", "====== Live when recording stopped: ",
		    " (not counted as leaks: freed after recording stopped or not, the log cannot tell) ======", 0, 1,
		    NULL, "Live when recording stopped by allocation stack");
}

/* What the per-step rule found that is not a leak, each kind counted on a
 * line of its own after the per-step section (in JSON, each an object and
 * a comma) and listed by stack with --show-held: held past the step after
 * its own, then given back before the last step ended; let go of and
 * freed by the Python package's sweep at exit; still in a cache or queue
 * that turns over (as old as blocks of its stack it freed got); kept from
 * one step only (a one-time increase); allocated before recording stopped
 * before the next step ended (the log cannot tell). stacks: the log has
 * stacks. */
void an_leaks_print_step_apart(struct leaks_out *o, int stacks)
{
	const mms_leaks_t *l = o->l;
	const struct {
		const mms_leak_t *v;
		size_t n;
		const char *key, *pre, *post, *title;
	} apart[] = {
		{ l->step_held, l->nstep_held, "per_step_held", "Held past the next step, then freed in a later one: ",
		  " (not leaks: the program gave each back before its last step ended; queues, prefetched input, "
		  "caches that turn over)",
		  "Held past the next step by allocation stack" },
		{ l->step_swept, l->nstep_swept, "per_step_swept",
		  "Let go of, freed at exit by the sweep of Python's garbage and caches: ",
		  " (not leaks: reference cycles no collection had reached, CPython's method cache, PyTorch's cache "
		  "of shared storages)",
		  "Let go of, freed at exit by allocation stack" },
		{ l->step_cached, l->nstep_cached, "per_step_cached",
		  "Still in a cache or queue that turns over when the steps ended: ",
		  stacks ? " (not counted as per-step leaks: no older than blocks of the same stack that were held as "
			   "long, then freed; those the program lost are in the leaks at exit)"
			 : " (not counted as per-step leaks: no older than blocks that were held as long, then freed; "
			   "recorded without stacks, a leak that began as late would be counted here too: record with "
			   "--call-stack=c:N to tell them apart; those the program lost are in the leaks at exit)",
		  "Still in a cache or queue by allocation stack" },
		{ l->step_once, l->nstep_once, "per_step_once", "Kept from one step only: ",
		  stacks ? " (not counted as per-step leaks: allocated once after the warm-up, as a table or cache "
			   "built where a code path first ran; the steps after it kept nothing more from the same "
			   "stack; those the program lost are in the leaks at exit)"
			 : " (not counted as per-step leaks: allocated once after the warm-up, as a table or cache "
			   "built where a code path first ran; the steps after it kept nothing; those the program lost "
			   "are in the leaks at exit)",
		  "Kept from one step only by allocation stack" },
		{ l->step_unrecorded, l->nstep_unrecorded, "per_step_unrecorded",
		  "Live when recording stopped before the end of the step after their own: ",
		  " (not counted as per-step leaks: freed while nothing was recorded or not, the log cannot tell; "
		  "those live at the end are under \"Live when recording stopped\")",
		  "Live when recording stopped before the next step ended by allocation stack" },
	};

	for (size_t i = 0; i < sizeof(apart) / sizeof(apart[0]); i++) {
		print_apart(o, apart[i].v, apart[i].n, apart[i].key, apart[i].pre, apart[i].post, 0, o->c->o->show_held,
			    "--show-held", apart[i].title);
		if (o->s.json)
			fputc(',', o->c->out);
	}
}

/* The releases between the malloc and C++ families not checked (a module
 * calls its own operators), in a line of their own. */
static void print_unchecked(FILE *f, const struct log_bad_frees *b)
{
	if (b->unrecorded_frees)
		fprintf(f,
			"====== Not checked: %" PRIu64
			" free%s of no live block, of blocks allocated while nothing was "
			"recorded (not errors) ======\n",
			b->unrecorded_frees, b->unrecorded_frees == 1 ? "" : "s");
	if (!b->unchecked_frees)
		return;
	fprintf(f, "====== Not checked: %" PRIu64 " free%s between the malloc and C++ families (%s %s) ======\n",
		b->unchecked_frees, b->unchecked_frees == 1 ? "" : "s", b->own_module ? b->own_module : "a module",
		b->own_op ? "calls its own operators" : "has its own copy of the C++ runtime");
}

/* The bad frees, with their events, and the allocation stack of a double
 * or mismatched free's block, then the releases not checked. */
void an_leaks_print_bad_frees(struct leaks_out *o)
{
	const mms_leaks_t *l = o->l;
	const char *own[2];
	struct log_bad_frees b;
	FILE *f = o->c->out;
	char count[192], what[160];
	size_t i;

	log_own_operators(o->c->log, l->unchecked_frees, own);
	b = (struct log_bad_frees){ LOG_BAD_FREES_OF(l, own) };
	if (!log_bad_frees_total(&b)) {
		print_unchecked(f, &b);
		return;
	}
	fprintf(f, "====== Bad frees: %s ======\n", log_bad_frees_count(&b, count, sizeof(count)));
	for (i = 0; i < l->nbad_frees; i++) {
		fprintf(f, "event %" PRIu64 ": %s, thread %" PRIu32 "\n", l->bad_frees[i].event,
			log_bad_free_text(&l->bad_frees[i], what, sizeof(what)), l->bad_frees[i].thread);
		if (l->bad_frees[i].kind == MMS_BAD_FREE_MISMATCHED && l->bad_frees[i].free_stack) {
			fputs("    allocated at:\n", f);
			show_stack(&o->s, l->bad_frees[i].stack, "      ");
			fprintf(f, "    released by %s at:\n", show_free_fn_name(l->bad_frees[i].free_fn));
			show_stack(&o->s, l->bad_frees[i].free_stack, "      ");
		} else if (l->bad_frees[i].kind == MMS_BAD_FREE_DOUBLE) {
			/* Each stack the log has, said which it is. */
			fputs("    allocated at:\n", f);
			show_stack(&o->s, l->bad_frees[i].stack, "      ");
			if (l->bad_frees[i].freed_stack) {
				fprintf(f, "    first freed (event %" PRIu64 ") at:\n", l->bad_frees[i].freed_event);
				show_stack(&o->s, l->bad_frees[i].freed_stack, "      ");
			}
			if (l->bad_frees[i].free_stack) {
				fputs("    freed again at:\n", f);
				show_stack(&o->s, l->bad_frees[i].free_stack, "      ");
			}
		} else if (l->bad_frees[i].kind != MMS_BAD_FREE_INVALID) {
			show_stack(&o->s, l->bad_frees[i].stack, "      ");
		}
	}
	if (log_bad_frees_total(&b) > l->nbad_frees)
		fprintf(f, "  ... and %" PRIu64 " more\n", log_bad_frees_total(&b) - l->nbad_frees);
	print_unchecked(f, &b);
}
