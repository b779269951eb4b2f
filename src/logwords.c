/* SPDX-License-Identifier: MIT */
/* logwords.c: how a log ends, in the words every report of both programs
 * uses, so that no report calls leaked what a cut log only stopped
 * showing. */
#define _GNU_SOURCE /* sigabbrev_np */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "logwords.h"

char *log_exec_successor(const char *path)
{
	size_t n = strlen(path), d;
	unsigned long k = 0;
	struct stat st;
	char *next;

	if (n < 4 || strcmp(path + n - 4, ".mms"))
		return NULL;
	n -= 4;
	/* STEM.execN: N digits after ".exec". */
	for (d = n; d > 0 && path[d - 1] >= '0' && path[d - 1] <= '9'; d--)
		;
	if (d < n && n - d < 10 && d >= 5 && !strncmp(path + d - 5, ".exec", 5)) {
		k = strtoul(path + d, NULL, 10);
		n = d - 5;
	}
	next = xasprintf("%.*s.exec%lu.mms", (int)n, path, k + 1);
	if (stat(next, &st) == 0 && S_ISREG(st.st_mode))
		return next;
	free(next);
	return NULL;
}

const char *log_freeres_why(const mms_log_info_t *in, int killed_by, char *buf, size_t cap)
{
	const char *abbrev = killed_by ? sigabbrev_np(killed_by) : NULL;

	switch (in->freeres_skipped) {
	case MMS_FREERES_SKIP_OFF:
		snprintf(buf, cap, "recorded with --no-freeres (freeres=0)");
		break;
	case MMS_FREERES_SKIP_THREADS:
		if (in->freeres_threads)
			snprintf(buf, cap, "%" PRIu64 " other thread%s still running at exit", in->freeres_threads,
				 in->freeres_threads == 1 ? " was" : "s were");
		else
			snprintf(buf, cap, "other threads were still running at exit");
		break;
	case MMS_FREERES_SKIP_EXIT:
		snprintf(buf, cap, "the process left with _exit, which runs no exit handler");
		break;
	case MMS_FREERES_SKIP_UNCOUNTED:
		snprintf(buf, cap,
			 "the recorder could not count the threads at exit (no file descriptor free, no /proc, "
			 "or one of another PID namespace)");
		break;
	default:
		/* The recorder says why at the end of exit and in _exit: the
		 * process that wrote nothing ended otherwise. */
		if (in->cut)
			snprintf(buf, cap, "recording stopped before the process ended");
		else if (in->exec_away && !in->damaged)
			snprintf(buf, cap, "the process replaced itself with exec");
		else if (!in->complete && killed_by)
			snprintf(buf, cap, "the process was killed by signal %d (SIG%s) before it could exit",
				 killed_by, abbrev ? abbrev : "?");
		else if (!in->complete)
			snprintf(buf, cap, "the process did not reach exit (killed by a signal, or still running)");
		else
			snprintf(buf, cap,
				 "the log does not say why (an older recorder wrote it: another thread was still "
				 "running, the process left with _exit, or --no-freeres)");
	}
	return buf;
}

const char *log_reach_scan_text(const mms_log_info_t *in, char *buf, size_t cap)
{
	char h[32];

	human_bytes(in->reach_bytes, h, sizeof(h));
	switch (in->reach_scan) {
	case MMS_REACH_SCAN_WHOLE:
		snprintf(buf, cap, "read %s in %.1f ms, %" PRIu64 " pointer%s%s", h, (double)in->reach_ns / 1e6,
			 in->reach_pointers, in->reach_pointers == 1 ? "" : "s",
			 in->reach_threads ? " (other threads still ran)" : "");
		break;
	case MMS_REACH_SCAN_LIMIT:
		snprintf(buf, cap,
			 "stopped at its limit (16 Mi pointers, 4 GiB read, 65536 mappings) after %" PRIu64
			 " pointers in %s: "
			 "leaked blocks not told from reachable ones",
			 in->reach_pointers, h);
		break;
	case MMS_REACH_SCAN_NOREAD:
		snprintf(buf, cap,
			 "the process could not read its own memory (a seccomp filter?): leaked blocks "
			 "not told from reachable ones");
		break;
	case MMS_REACH_SCAN_LOST:
		snprintf(buf, cap, "its records are not all in the log: leaked blocks not told from reachable ones");
		break;
	case MMS_REACH_SCAN_ALLOCATOR:
		snprintf(
			buf, cap,
			"not made: the program's malloc is a library's that replaces glibc's (jemalloc, tcmalloc, mimalloc), "
			"whose caches keep pointers to blocks: leaked blocks not told from reachable ones");
		break;
	default:
		snprintf(buf, cap, "none");
	}
	return buf;
}

const char *log_reach_scan_name(int scan)
{
	static const char *const names[] = { "none", "whole", "limit", "noread", "lost", "allocator" };

	return scan >= 0 && scan < (int)(sizeof(names) / sizeof(names[0])) ? names[scan] : "none";
}

char *log_cut_why(const mms_log_info_t *in)
{
	if (in->cut_what)
		return xasprintf("%s", in->cut_what);
	return xasprintf("recording stopped early (%s)", mms_cut_reason(in->cut_errno));
}

int log_ends_at_exit(const mms_log_info_t *in)
{
	return in->complete && !in->cut && !in->damaged;
}

int log_stops_early(const mms_log_info_t *in)
{
	return in->cut || (in->damaged && in->stopped);
}

const char *log_runtime_what(const mms_log_info_t *in, unsigned kind)
{
	return log_ends_at_exit(in) ? mms_runtime_what(kind) : mms_runtime_what_live(kind);
}

const char *log_end_label(const mms_log_info_t *in)
{
	if (log_stops_early(in))
		return in->cut ? "the cut" : "the damage";
	if (log_ends_at_exit(in))
		return "exit";
	return in->exec_away && !in->damaged ? "exec" : "log end";
}

const char *log_live_when(const mms_log_info_t *in, char *buf, size_t cap)
{
	if (in->cut)
		snprintf(buf, cap, "when recording stopped at event %" PRIu64 " (the log is cut; not leaks)",
			 in->events);
	else if (in->damaged && in->stopped)
		snprintf(buf, cap, "at event %" PRIu64 ", where the damage stops the replay (not leaks)", in->events);
	else if (log_ends_at_exit(in))
		snprintf(buf, cap, "at exit");
	else if (in->exec_away && !in->damaged)
		snprintf(buf, cap, "at exec");
	else
		snprintf(buf, cap, "at log end");
	return buf;
}

void log_json_end(FILE *f, const mms_log_info_t *in)
{
	if (in->cut)
		fprintf(f, "\"cut_at_byte\":%" PRIu64 ",", in->cut_offset);
	else
		fputs("\"cut_at_byte\":null,", f);
	if (in->stopped)
		fprintf(f, "\"stopped_at_event\":%" PRIu64, in->events);
	else
		fputs("\"stopped_at_event\":null", f);
}

/* The memory a freed address belongs to: HOST, DEVICE, or a pool's name. */
static const char *bad_free_memory(const mms_bad_free_t *b)
{
	if (b->mem == MMS_MEM_POOL)
		return b->pool && *b->pool ? b->pool : "POOL";
	return mms_mem_kind_name(b->mem) ? mms_mem_kind_name(b->mem) : "HOST";
}

/* A function of a mismatched free, by name. */
static const char *alloc_fn(unsigned fn)
{
	const char *s = mms_alloc_func_name(fn);

	return s ? s : "?";
}

static const char *free_fn(unsigned fn)
{
	const char *s = mms_free_func_name(fn);

	return s ? s : "?";
}

const char *log_bad_free_text(const mms_bad_free_t *b, char *buf, size_t cap)
{
	if (b->kind == MMS_BAD_FREE_MISMATCHED)
		snprintf(buf, cap,
			 "%s of a block allocated by %s (%s 0x%" PRIx64 ", %" PRIu64
			 " bytes, allocated at event %" PRIu64 ")",
			 free_fn(b->free_fn), alloc_fn(b->alloc_fn), bad_free_memory(b), b->addr, b->size,
			 b->alloc_event);
	else if (b->freed_event != UINT64_MAX)
		snprintf(buf, cap,
			 "double free of a block freed at event %" PRIu64 " (%s 0x%" PRIx64 ", %" PRIu64
			 " bytes, allocated at event %" PRIu64 ")",
			 b->freed_event, bad_free_memory(b), b->addr, b->size, b->alloc_event);
	else
		snprintf(buf, cap, "free of an address that is not a live block (%s 0x%" PRIx64 ")", bad_free_memory(b),
			 b->addr);
	return buf;
}

const char *log_bad_frees_count(const struct log_bad_frees *b, char *buf, size_t cap)
{
	int n = 0;

	buf[0] = 0;
	if (b->double_frees)
		n = snprintf(buf, cap, "%" PRIu64 " double free%s", b->double_frees, b->double_frees == 1 ? "" : "s");
	if (b->invalid_frees && n >= 0 && (size_t)n < cap)
		n += snprintf(buf + n, cap - (size_t)n, "%s%" PRIu64 " free%s of an address that is not a live block",
			      n ? ", " : "", b->invalid_frees, b->invalid_frees == 1 ? "" : "s");
	if (b->mismatched_frees && n >= 0 && (size_t)n < cap)
		snprintf(buf + n, cap - (size_t)n, "%s%" PRIu64 " mismatched free%s", n ? ", " : "",
			 b->mismatched_frees, b->mismatched_frees == 1 ? "" : "s");
	return buf;
}

const char *log_steps_list(const mms_config_t *cfg, uint64_t above, char *buf, size_t cap, size_t *n)
{
	size_t len = 0, k = 0;

	buf[0] = 0;
	for (uint32_t i = 0; i < cfg->nsteps && len < cap; i++)
		if (cfg->steps[i] > above)
			len += (size_t)snprintf(buf + len, cap - len, "%s%u", k++ ? "," : "", cfg->steps[i]);
	if (n)
		*n = k;
	return buf;
}

/* The steps a fork child's log numbers from its parent's (up to
 * fk->fork_step): 0 when none. */
static uint64_t fork_steps(const mms_log_t *log, mms_log_fork_t *fk)
{
	return !mms_log_fork(log, fk) && fk->state == MMS_FORK_INHERITED ? fk->fork_step : 0;
}

int log_step_in_parent(const mms_log_t *log, uint64_t step, mms_log_fork_t *fk)
{
	if (!step || step > fork_steps(log, fk))
		return 0;
	return step < fk->fork_step || !fk->fork_in_step ? 2 : 1;
}

/* Appends ", what" (or what, first) to buf, holding n bytes. */
static int why_add(char *buf, size_t cap, int n, const char *what)
{
	if (n < 0 || (size_t)n >= cap)
		return n;
	return n + snprintf(buf + n, cap - (size_t)n, "%s%s", n ? ", " : "", what);
}

const char *log_step_unrecorded_why(mms_log_t *log, uint64_t step, mms_step_recorded_t r, char *buf, size_t cap)
{
	char list[MMS_CONFIG_STEPS_MAX * 12 + 16];
	mms_log_fork_t fk;
	mms_config_t cfg;
	int n = 0;

	buf[0] = 0;
	if (r == MMS_STEP_RECORDED_ALL)
		return buf;
	switch (log_step_in_parent(log, step, &fk)) {
	case 2:
		snprintf(buf, cap, "pid %" PRIu64 "'s, before it forked this process", fk.parent_pid);
		return buf;
	case 1:
		n = snprintf(buf, cap, "begun in pid %" PRIu64 " before it forked this process", fk.parent_pid);
		break;
	}
	if (mms_log_config(log, &cfg))
		return buf;
	if (cfg.nsteps) {
		snprintf(list, sizeof(list), "--steps=");
		log_steps_list(&cfg, 0, list + 8, sizeof(list) - 8, NULL);
		n = why_add(buf, cap, n, list);
	}
	if (cfg.deferred)
		n = why_add(buf, cap, n, "collect=deferred");
	if (!n)
		snprintf(buf, cap, "msmemscope_stop() paused recording");
	return buf;
}

const char *log_steps_unrecorded_why(mms_log_t *log, char *buf, size_t cap)
{
	char what[64];
	mms_log_fork_t fk;
	mms_config_t cfg;
	int n = 0;

	buf[0] = 0;
	if (!mms_log_config(log, &cfg)) {
		if (cfg.nsteps)
			n = why_add(buf, cap, n, "--steps");
		if (cfg.deferred)
			n = why_add(buf, cap, n, "collect=deferred");
	}
	if (fork_steps(log, &fk)) {
		snprintf(what, sizeof(what), "begun before the fork, in pid %" PRIu64, fk.parent_pid);
		n = why_add(buf, cap, n, what);
	}
	/* Else only the program's msmemscope_stop() turns collection off. */
	if (!n)
		snprintf(buf, cap, "msmemscope_stop() paused recording");
	return buf;
}

const char *log_threads_note(const mms_log_info_t *in)
{
	return in->freeres_skipped == MMS_FREERES_SKIP_THREADS
		       ? " (with events in the log; threads that made none are not counted)"
		       : "";
}

void log_own_operators(const mms_log_t *log, uint64_t unchecked, const char *own[2])
{
	own[0] = own[1] = NULL;
	if (unchecked && mms_log_own_operators(log, &own[0], &own[1]) != 1)
		own[0] = own[1] = NULL;
}

void log_print_bad_frees(FILE *f, const char *indent, int width, const struct log_bad_frees *b)
{
	char count[192], what[160], ev[32];
	uint64_t total = log_bad_frees_total(b);

	if (total) {
		fprintf(f, "%s%-*s %" PRIu64 ": %s\n", indent, width, "bad frees", total,
			log_bad_frees_count(b, count, sizeof(count)));
		for (size_t i = 0; i < b->n; i++) {
			snprintf(ev, sizeof(ev), "event %" PRIu64, b->list[i].event);
			fprintf(f, "%s  %-*s %s, thread %" PRIu32 "\n", indent, width - 2, ev,
				log_bad_free_text(&b->list[i], what, sizeof(what)), b->list[i].thread);
		}
		if (total > b->n)
			fprintf(f, "%s  ... and %" PRIu64 " more\n", indent, total - b->n);
	}
	if (b->unrecorded_frees)
		fprintf(f, "%s%-*s %" PRIu64 " of blocks allocated while nothing was recorded: not errors\n", indent,
			width, "unrecorded frees", b->unrecorded_frees);
	if (!b->unchecked_frees)
		return;
	fprintf(f,
		"%s%-*s %" PRIu64
		" between the malloc and C++ families (delete of a malloc'd block, free of a new'd one), "
		"not told mismatched: ",
		indent, width, "unchecked frees", b->unchecked_frees);
	if (b->own_op)
		fprintf(f, "%s calls its own %s (a C++ runtime linked into it)", b->own_module, b->own_op);
	else
		fprintf(f, "%s has its own copy of the C++ runtime (linked into it)",
			b->own_module ? b->own_module : "a module");
	fputs(": the recorder sees its new and delete as the malloc and free they call\n", f);
}

void log_json_bad_frees(FILE *f, const struct log_bad_frees *bf)
{
	static const char *const kinds[] = { [MMS_BAD_FREE_DOUBLE] = "double_free",
					     [MMS_BAD_FREE_INVALID] = "invalid_free",
					     [MMS_BAD_FREE_MISMATCHED] = "mismatched_free" };

	fprintf(f,
		"\"double_frees\":%" PRIu64 ",\"invalid_frees\":%" PRIu64 ",\"mismatched_frees\":%" PRIu64
		",\"unchecked_frees\":%" PRIu64 ",\"own_operators\":",
		bf->double_frees, bf->invalid_frees, bf->mismatched_frees, bf->unchecked_frees);
	if (bf->unchecked_frees && bf->own_module) {
		fputs("{\"module\":", f);
		json_put_string(f, bf->own_module, strlen(bf->own_module));
		fputs(",\"operator\":", f);
		if (bf->own_op)
			json_put_string(f, bf->own_op, strlen(bf->own_op));
		else
			fputs("null", f);
		fputc('}', f);
	} else {
		fputs("null", f);
	}
	fputs(",\"bad_frees\":[", f);
	for (size_t i = 0; i < bf->n; i++) {
		const mms_bad_free_t *b = &bf->list[i];
		const char *mem = bad_free_memory(b);
		unsigned kind = b->kind <= MMS_BAD_FREE_MISMATCHED && b->kind ? b->kind : MMS_BAD_FREE_INVALID;

		fprintf(f,
			"%s{\"event\":%" PRIu64 ",\"kind\":\"%s\",\"addr\":\"0x%" PRIx64 "\",\"memory\":", i ? "," : "",
			b->event, kinds[kind], b->addr);
		json_put_string(f, mem, strlen(mem));
		fprintf(f, ",\"thread\":%" PRIu32, b->thread);
		if (kind == MMS_BAD_FREE_DOUBLE)
			fprintf(f, ",\"freed_at_event\":%" PRIu64 ",\"freed_stack\":%" PRIu32, b->freed_event,
				b->freed_stack);
		if (kind != MMS_BAD_FREE_INVALID)
			fprintf(f, ",\"alloc_event\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"stack\":%" PRIu32,
				b->alloc_event, b->size, b->stack);
		if (kind == MMS_BAD_FREE_MISMATCHED)
			fprintf(f, ",\"alloc_fn\":\"%s\",\"free_fn\":\"%s\",\"free_stack\":%" PRIu32,
				alloc_fn(b->alloc_fn), free_fn(b->free_fn), b->free_stack);
		fputc('}', f);
	}
	fprintf(f, "],\"unrecorded_frees\":%" PRIu64, bf->unrecorded_frees);
}

void log_warn_damage(const char *name, const mms_log_info_t *in, void (*say)(const char *line))
{
	char *why, *line;

	if (in->cut) {
		why = log_cut_why(in);
		line = xasprintf("%s: the log is cut at byte %" PRIu64 ": %s; the replay stops at event %" PRIu64
				 ", where records may be missing",
				 name, in->cut_offset, why, in->events);
		say(line);
		free(line);
		free(why);
	}
	if (in->damaged) {
		char stop[96];

		if (in->stopped)
			snprintf(stop, sizeof(stop),
				 "the replay stops at event %" PRIu64 ", where records may be missing", in->events);
		else
			snprintf(stop, sizeof(stop), "the replay reads on past it");
		line = xasprintf("%s: damaged at byte %" PRIu64 ": %s (%" PRIu64 " place%s); %s", name,
				 in->damage_offset, in->damage ? in->damage : mms_strerror(in->damage_error),
				 in->damage_count, in->damage_count == 1 ? "" : "s", stop);
		say(line);
		free(line);
	}
	if (in->bad_stacks) {
		line = xasprintf("%s: allocation stacks could not be read %" PRIu64 " time%s: their records in the log "
				 "are damaged; they are shown without frames",
				 name, in->bad_stacks, in->bad_stacks == 1 ? "" : "s");
		say(line);
		free(line);
	}
	if (in->stacks_full) {
		line = xasprintf("%s: the recorder's table of stack frames filled up: the stacks of the events after "
				 "that are cut short (their innermost frames missing) or absent; a smaller --call-stack "
				 "depth, or recording fewer steps (--steps), keeps them whole",
				 name);
		say(line);
		free(line);
	}
	if (in->strings_full) {
		line = xasprintf("%s: the recorder's table of names filled up: later operator, mark, owner and pool "
				 "names are missing",
				 name);
		say(line);
		free(line);
	}
	if (in->own_malloc) {
		line = xasprintf(
			"%s: %s defines malloc itself (an allocator linked into the program): the calls of its "
			"malloc family never reach the recorder, so the heap figures and leaks miss them. "
			"Link the allocator as a shared library (jemalloc: -ljemalloc) or use the C library's "
			"to record them",
			name, in->own_malloc);
		say(line);
		free(line);
	}
	if (in->own_cxx) {
		line = xasprintf("%s: %s defines %s itself, so mismatched frees (delete of a malloc'd block, "
				 "delete[] of a new'd one) are not checked: new and delete are recorded as the malloc "
				 "and free they call",
				 name, in->own_cxx, in->own_cxx_op);
		say(line);
		free(line);
	}
	if (in->lost_events) {
		line = xasprintf("%s: %" PRIu64 " events were not recorded (signals that arrived inside a hook)", name,
				 in->lost_events);
		say(line);
		free(line);
	}
}

const char *log_devices_text(const mms_log_t *log, char *buf, size_t cap)
{
	mms_config_t cfg;
	size_t n = 0;

	if (!cap || mms_log_config(log, &cfg) || !cfg.devices)
		return NULL;
	buf[0] = 0;
	for (unsigned i = 0; i < 64 && n < cap; i++)
		if (cfg.devices >> i & 1)
			n += (size_t)snprintf(buf + n, cap - n, "%scuda:%u", n ? "," : "", i);
	return buf;
}
