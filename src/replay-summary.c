/* SPDX-License-Identifier: MIT */
/* replay-summary.c: msmemscope-replay --summary: the figures of a whole log
 * as text or JSON, and warnings about what a cut or damaged log leaves
 * out. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "logwords.h"
#include "replay-cli.h"

static void say_warning(const char *line)
{
	warn("%s", line);
}

/* Tells the user what the summary does not cover. */
void replay_warn_log_state(const char *path, const mms_log_info_t *in, int json)
{
	if (!in->cut && !in->complete && in->exec_away && !json) {
		char *next = log_exec_successor(path);

		fprintf(stderr, "%s: %s: the process exec'd another program; blocks \"live at exec\" are those it "
			"held then%s%s%s\n", cli_progname, path, next ? " (its log: " : "", next ? next : "",
			next ? ")" : "");
		free(next);
	}
	else if (!in->cut && !in->complete && !in->exec_away)
		warn("%s: the process did not reach exit (killed, or still running); blocks \"live at log end\" "
		     "are those live at the last recorded event",
		     path);
	log_warn_damage(path, in, say_warning);
}

void replay_warn_fork(const char *path, const mms_log_t *log)
{
	mms_log_fork_t fk;

	if (mms_log_fork(log, &fk) == 0 && fk.state == MMS_FORK_UNKNOWN)
		warn("%s: a forked child whose inherited blocks are unknown: %s; its frees of them count as "
		     "unmatched frees, and those it kept are missing from what it holds",
		     path, fk.why);
}

/* "424 bytes" or "1667420240 bytes (1.6 GiB)". */
static const char *bytes_text(uint64_t n, char *buf, size_t cap)
{
	char h[32];

	if (n < 1024)
		snprintf(buf, cap, "%" PRIu64 " bytes", n);
	else
		snprintf(buf, cap, "%" PRIu64 " bytes (%s)", n, human_bytes(n, h, sizeof(h)));
	return buf;
}

/* The blocks of memory kind `mem` live at the end that the runtimes keep,
 * under that kind's line: in all, then each runtime's. */
static void print_runtimes_text(const mms_log_info_t *in, const mms_summary_t *s, unsigned mem)
{
	uint64_t n = s->runtime_blocks[MMS_RUNTIME_NONE][mem];
	char a[64];

	if (!n)
		return;
	printf("  %-18s %" PRIu64 " block%s, %s (not leaks)\n", "runtimes' of them", n, n == 1 ? "" : "s",
	       bytes_text(s->runtime_bytes[MMS_RUNTIME_NONE][mem], a, sizeof(a)));
	for (unsigned k = 1; k < MMS_RUNTIME_COUNT; k++) {
		n = s->runtime_blocks[k][mem];
		if (n)
			printf("    %-16s %" PRIu64 " block%s, %s: %s\n", mms_runtime_name(k), n, n == 1 ? "" : "s",
			       bytes_text(s->runtime_bytes[k][mem], a, sizeof(a)), log_runtime_what(in, k));
	}
}

static void print_kind_text(const char *label, const mms_log_info_t *in, const mms_summary_t *s, unsigned mem,
			    const char *at_end)
{
	const mms_kind_summary_t *k = &s->mem[mem];
	char a[32], b[32], c[32];

	printf("%-20s %" PRIu64 " allocations, %" PRIu64 " frees, %s allocated, peak %s, %s %" PRIu64 " block%s (%s)\n",
	       label, k->allocs, k->frees, human_bytes(k->bytes_allocated, a, sizeof(a)),
	       human_bytes(k->peak_bytes, b, sizeof(b)), at_end, k->live_blocks, k->live_blocks == 1 ? "" : "s",
	       human_bytes(k->live_bytes, c, sizeof(c)));
	print_runtimes_text(in, s, mem);
}

/* Where a fork child's heap came from, and what of it is left. */
static void print_fork_text(const mms_log_t *log, const mms_summary_t *s, const char *at_end)
{
	mms_log_fork_t fk;
	char a[64];

	if (mms_log_fork(log, &fk) || fk.state == MMS_FORK_NONE)
		return;
	if (fk.state == MMS_FORK_UNKNOWN) {
		printf("%-20s pid %" PRIu64 "; inherited blocks unknown: %s\n", "forked from", fk.parent_pid, fk.why);
		return;
	}
	printf("%-20s pid %" PRIu64 " at its event %" PRIu64 " (%s)\n", "forked from", fk.parent_pid, fk.fork_event,
	       fk.parent_log);
	/* The steps go on with the parent's numbers. */
	if (fk.fork_step)
		printf("%-20s %s step %" PRIu64 "; this log's steps go on with the parent's numbers\n", "forked in",
		       fk.fork_in_step ? "its" : "after its", fk.fork_step);
	printf("%-20s %" PRIu64 " block%s, %s; %" PRIu64 " of them %s (%" PRIu64 " bytes)\n", "inherited",
	       fk.blocks[MMS_MEM_HOST], fk.blocks[MMS_MEM_HOST] == 1 ? "" : "s",
	       bytes_text(fk.bytes[MMS_MEM_HOST], a, sizeof(a)), s->inherited_live_blocks[MMS_MEM_HOST], at_end,
	       s->inherited_live_bytes[MMS_MEM_HOST]);
}

static void print_text(const char *path, const mms_log_t *log, const mms_log_info_t *in, const mms_summary_t *s)
{
	const mms_kind_summary_t *h = &s->mem[MMS_MEM_HOST];
	char at_end[32], when[160], phrase[128], a[64], devs[64 * 9];
	const char *own[2];
	unsigned k;

	/* A cut or damaged log lost records, frees among them: its live
	 * blocks are not those of the exit. */
	snprintf(at_end, sizeof(at_end), "live at %s", log_end_label(in));
	if (log_stops_early(in)) {
		when[0] = ':';
		when[1] = ' ';
		snprintf(when + 2, sizeof(when) - 2, "live %s", log_live_when(in, phrase, sizeof(phrase)));
	} else {
		when[0] = 0;
	}
	printf("%s: pid %" PRIu64 "%s%s\n", path, in->pid, in->exe[0] ? ", " : "", in->exe);
	print_fork_text(log, s, at_end);
	printf("%-20s %" PRIu64 "\n", "events", s->events);
	for (k = 1; k < MMS_EV_KIND_COUNT; k++)
		if (s->by_kind[k])
			printf("  %-18s %" PRIu64 "\n", cli_event_kind_name(k), s->by_kind[k]);
	printf("%-20s %" PRIu64 "\n", "allocations", h->allocs);
	printf("%-20s %" PRIu64 "\n", "frees", h->frees);
	printf("%-20s %s\n", "bytes allocated", bytes_text(h->bytes_allocated, a, sizeof(a)));
	printf("%-20s %s\n", "peak live bytes", bytes_text(h->peak_bytes, a, sizeof(a)));
	printf("%-20s %" PRIu64 " block%s, %s%s\n", at_end, h->live_blocks, h->live_blocks == 1 ? "" : "s",
	       bytes_text(h->live_bytes, a, sizeof(a)), when);
	print_runtimes_text(in, s, MMS_MEM_HOST);
	if (s->reach_known && h->live_blocks > s->runtime_blocks[MMS_RUNTIME_NONE][MMS_MEM_HOST]) {
		uint64_t lb = 0, ly = 0;

		/* The program's own blocks live at exit: leaked, or not; those
		 * made as the scan ran have no verdict. */
		for (k = MMS_REACH_LEAKED; k <= MMS_REACH_POSSIBLE; k++)
			lb += s->reach_blocks[k], ly += s->reach_bytes[k];
		printf("  %-18s %" PRIu64 " block%s, %s\n", "leaked of them", lb, lb == 1 ? "" : "s",
		       bytes_text(ly, a, sizeof(a)));
		printf("  %-18s %" PRIu64 " block%s, %s (not leaks: still pointed to)\n", "reachable of them",
		       s->reach_blocks[MMS_REACH_REACHABLE], s->reach_blocks[MMS_REACH_REACHABLE] == 1 ? "" : "s",
		       bytes_text(s->reach_bytes[MMS_REACH_REACHABLE], a, sizeof(a)));
		if (s->reach_blocks[MMS_REACH_UNKNOWN])
			printf("  %-18s %" PRIu64 " block%s, %s (%s)\n", "not judged",
			       s->reach_blocks[MMS_REACH_UNKNOWN], s->reach_blocks[MMS_REACH_UNKNOWN] == 1 ? "" : "s",
			       bytes_text(s->reach_bytes[MMS_REACH_UNKNOWN], a, sizeof(a)), LOG_UNJUDGED_WHY);
	}
	if (s->reach_blocks[MMS_REACH_UNRECORDED])
		printf("  %-18s %" PRIu64 " block%s, %s (" LOG_UNRECORDED_WHY ")\n", "unrecorded fate",
		       s->reach_blocks[MMS_REACH_UNRECORDED], s->reach_blocks[MMS_REACH_UNRECORDED] == 1 ? "" : "s",
		       bytes_text(s->reach_bytes[MMS_REACH_UNRECORDED], a, sizeof(a)));
	if (in->reach_scan && log_ends_at_exit(in)) {
		char why[200];

		printf("%-20s %s\n", "scan at exit", log_reach_scan_text(in, why, sizeof(why)));
	}
	if (s->freeres) {
		printf("%-20s %s\n", "freeres", "glibc and libstdc++ freed their internal memory at exit");
	} else if (in->freeres_skipped) {
		char why[160];

		printf("%-20s did not run: %s\n", "freeres", log_freeres_why(in, 0, why, sizeof(why)));
	}
	printf("%-20s %" PRIu64 "%s\n", "threads", s->threads, log_threads_note(in));
	printf("%-20s %" PRIu64 "%s\n", "steps", s->steps, in->steps_inferred ? STEPS_INFERRED_NOTE : "");
	if (s->mem[MMS_MEM_MMAP].allocs || s->mem[MMS_MEM_MMAP].frees)
		print_kind_text("mmap", in, s, MMS_MEM_MMAP, at_end);
	if (s->mem[MMS_MEM_POOL].allocs || s->mem[MMS_MEM_POOL].frees)
		print_kind_text("pool", in, s, MMS_MEM_POOL, at_end);
	if (s->mem[MMS_MEM_DEVICE].allocs || s->mem[MMS_MEM_DEVICE].frees)
		print_kind_text("device", in, s, MMS_MEM_DEVICE, at_end);
	if (log_devices_text(log, devs, sizeof(devs)))
		printf("%-20s %s only (--device): the other devices' memory was not recorded\n", "devices recorded",
		       devs);
	log_own_operators(log, s->unchecked_frees, own);
	log_print_bad_frees(stdout, "", 20, &(struct log_bad_frees){ LOG_BAD_FREES_OF(s, own) });
	if (s->double_allocs)
		printf("%-20s %" PRIu64 "\n", "double allocations", s->double_allocs);
}

static void print_kind_json(const mms_kind_summary_t *k)
{
	printf("{\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"bytes_allocated\":%" PRIu64 ",\"peak_bytes\":%" PRIu64
	       ",\"live_blocks\":%" PRIu64 ",\"live_bytes\":%" PRIu64 "}",
	       k->allocs, k->frees, k->bytes_allocated, k->peak_bytes, k->live_blocks, k->live_bytes);
}

/* Where a fork child's heap came from (null for other logs), and the
 * heap blocks it inherited (0 for other logs). */
static void print_fork_json(const mms_log_t *log, const mms_summary_t *s)
{
	mms_log_fork_t fk;

	if (mms_log_fork(log, &fk))
		memset(&fk, 0, sizeof(fk));
	printf(",\"inherited_blocks\":%" PRIu64 ",\"inherited_bytes\":%" PRIu64 ",\"inherited_live_blocks\":%" PRIu64
	       ",\"inherited_live_bytes\":%" PRIu64 ",\"fork\":",
	       fk.blocks[MMS_MEM_HOST], fk.bytes[MMS_MEM_HOST], s->inherited_live_blocks[MMS_MEM_HOST],
	       s->inherited_live_bytes[MMS_MEM_HOST]);
	if (fk.state == MMS_FORK_NONE) {
		printf("null");
		return;
	}
	printf("{\"state\":\"%s\",\"parent_pid\":%" PRIu64 ",\"parent_log\":",
	       fk.state == MMS_FORK_INHERITED ? "inherited" : "unknown", fk.parent_pid);
	if (fk.parent_log)
		json_put_string(stdout, fk.parent_log, strlen(fk.parent_log));
	else
		printf("null");
	if (fk.state == MMS_FORK_INHERITED)
		printf(",\"fork_event\":%" PRIu64 ",\"fork_step\":%" PRIu64 ",\"fork_in_step\":%s}", fk.fork_event,
		       fk.fork_step, fk.fork_in_step ? "true" : "false");
	else {
		printf(",\"why\":");
		json_put_string(stdout, fk.why, strlen(fk.why));
		printf("}");
	}
}

static void print_json(const mms_log_t *log, const mms_log_info_t *in, const mms_summary_t *s)
{
	const mms_kind_summary_t *h = &s->mem[MMS_MEM_HOST];
	const char *sep = "", *own[2];
	unsigned k;
	char name[32], devs[64 * 9];
	size_t i;

	printf("{\"events\":%" PRIu64 ",\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"bytes_allocated\":%" PRIu64
	       ",\"peak_bytes\":%" PRIu64 ",\"live_blocks\":%" PRIu64 ",\"live_bytes\":%" PRIu64 ",\"threads\":%" PRIu64
	       ",\"steps\":%" PRIu64 ",\"steps_from\":\"%s\",",
	       s->events, h->allocs, h->frees, h->bytes_allocated, h->peak_bytes, h->live_blocks, h->live_bytes,
	       s->threads, s->steps,
	       in->steps_inferred ? "optimizer"
	       : s->steps         ? "program"
				  : "none");
	printf("\"kinds\":{\"mmap\":");
	print_kind_json(&s->mem[MMS_MEM_MMAP]);
	printf(",\"pool\":");
	print_kind_json(&s->mem[MMS_MEM_POOL]);
	printf(",\"device\":");
	print_kind_json(&s->mem[MMS_MEM_DEVICE]);
	printf("},\"devices_recorded\":");
	if (log_devices_text(log, devs, sizeof(devs)))
		json_put_string(stdout, devs, strlen(devs));
	else
		printf("null");
	printf(",\"by_kind\":{");
	for (k = 1; k < MMS_EV_KIND_COUNT; k++) {
		/* Keys are the kind names in lower case: "malloc", "op_launch". */
		snprintf(name, sizeof(name), "%s", cli_event_kind_name(k));
		for (i = 0; name[i]; i++)
			name[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
		printf("%s\"%s\":%" PRIu64, sep, name, s->by_kind[k]);
		sep = ",";
	}
	printf("},\"complete\":%s,\"exec_away\":%s,\"cut\":%s,", in->complete ? "true" : "false",
	       in->exec_away ? "true" : "false", in->cut ? "true" : "false");
	log_json_end(stdout, in);
	printf(",\"damaged\":%s,\"lost_events\":%" PRIu64 ",\"stacks_full\":%s,\"strings_full\":%s,"
	       "\"own_malloc\":",
	       in->damaged ? "true" : "false", in->lost_events, in->stacks_full ? "true" : "false",
	       in->strings_full ? "true" : "false");
	if (in->own_malloc)
		json_put_string(stdout, in->own_malloc, strlen(in->own_malloc));
	else
		printf("null");
	printf(",\"own_cxx\":");
	if (in->own_cxx) {
		json_put_string(stdout, in->own_cxx, strlen(in->own_cxx));
		printf(",\"own_cxx_op\":");
		json_put_string(stdout, in->own_cxx_op, strlen(in->own_cxx_op));
	} else {
		printf("null,\"own_cxx_op\":null");
	}
	printf(",\"unmatched_frees\":%" PRIu64 ",\"double_allocs\":%" PRIu64 ",", s->unmatched_frees, s->double_allocs);
	log_own_operators(log, s->unchecked_frees, own);
	log_json_bad_frees(stdout, &(struct log_bad_frees){ LOG_BAD_FREES_OF(s, own) });
	print_fork_json(log, s);
	if (in->freeres_skipped)
		printf(",\"freeres_skipped\":\"%s\",\"freeres_threads\":%" PRIu64,
		       in->freeres_skipped == MMS_FREERES_SKIP_OFF       ? "off"
		       : in->freeres_skipped == MMS_FREERES_SKIP_THREADS ? "threads"
		       : in->freeres_skipped == MMS_FREERES_SKIP_EXIT    ? "_exit"
									 : "uncounted",
		       in->freeres_threads);
	printf(",\"reach_scan\":\"%s\",\"reach_pointers\":%" PRIu64 ",\"reach_bytes_read\":%" PRIu64
	       ",\"reach_scan_ns\":%" PRIu64,
	       log_reach_scan_name(in->reach_scan), in->reach_pointers, in->reach_bytes, in->reach_ns);
	if (s->reach_known) {
		printf(",\"reach\":{");
		for (k = MMS_REACH_UNKNOWN, sep = ""; k < MMS_REACH_COUNT; k++) {
			printf("%s\"%s\":{\"blocks\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", sep, mms_reach_name(k),
			       s->reach_blocks[k], s->reach_bytes[k]);
			sep = ",";
		}
		printf("}");
	}
	printf(",\"freeres\":%s,\"runtime_live_blocks\":%" PRIu64 ",\"runtime_live_bytes\":%" PRIu64 ",\"runtime\":{",
	       s->freeres ? "true" : "false", s->runtime_blocks[MMS_RUNTIME_NONE][MMS_MEM_HOST],
	       s->runtime_bytes[MMS_RUNTIME_NONE][MMS_MEM_HOST]);
	for (k = 1, sep = ""; k < MMS_RUNTIME_COUNT; k++) {
		uint64_t blocks = 0, bytes = 0;

		for (i = 0; i < MMS_MEM_KIND_COUNT; i++) {
			blocks += s->runtime_blocks[k][i];
			bytes += s->runtime_bytes[k][i];
		}
		if (!blocks)
			continue;
		printf("%s\"%s\":{\"blocks\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"kinds\":{", sep, mms_runtime_name(k),
		       blocks, bytes);
		for (i = 0, sep = ""; i < MMS_MEM_KIND_COUNT; i++) {
			if (!s->runtime_blocks[k][i])
				continue;
			printf("%s\"%s\":{\"blocks\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", sep, an_mem_names[i],
			       s->runtime_blocks[k][i], s->runtime_bytes[k][i]);
			sep = ",";
		}
		printf("}}");
		sep = ",";
	}
	printf("}}\n");
}

int replay_summary(const char *path, mms_log_t *log, int json)
{
	mms_log_info_t info;
	mms_summary_t sum;
	int rc, status = 0;

	mms_log_get_info(log, &info);
	rc = an_summarize(path, log, &sum);
	if (rc && rc != MMS_ECORRUPT && rc != MMS_EORDER)
		die(CLI_EXIT_FAILURE, "%s: cannot replay: %s", path, mms_strerror(rc));
	if (json)
		print_json(log, &info, &sum);
	else
		print_text(path, log, &info, &sum);
	if (fflush(stdout) || ferror(stdout))
		die(CLI_EXIT_FAILURE, "cannot write the summary: %s", strerror(errno));
	replay_warn_log_state(path, &info, json);
	replay_warn_fork(path, log);
	if (rc) {
		warn("%s: replay stopped early: %s; the summary covers the events before", path, mms_strerror(rc));
		status = CLI_EXIT_FAILURE;
	}
	return status;
}
