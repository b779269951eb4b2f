/* SPDX-License-Identifier: MIT */
/* launch-report.c: the launcher's summary: reads the logs a run left and
 * prints what they recorded on stderr; and the dump --data-format asks for. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "msmemscope-replay.h"
#include "analysis.h"
#include "cli.h"
#include "launch.h"
#include "logwords.h"

/* ---- the summary ---- */

/* What one log says, and how its process ended. */
struct log_result {
	mms_log_info_t info;
	mms_summary_t sum;
	char *exe;        /* info.exe, info.damage and info.cut_what, copied: */
	char *damage;     /* the log owns the originals, and log_read() */
	char *cut_what;   /* closes it */
	char *next;       /* the log of the image it exec'd, or NULL */
	int replay_error; /* an_summarize() stopped early with this */
	mms_log_fork_t fork; /* a fork child's origin; why copied (or NULL) */
	char *pools[MMS_BAD_FREES_KEPT]; /* the pool names of sum.bad_frees, copied */
	char devices[64 * 9];            /* the CUDA devices recorded (--device), or "" for all */
	char *own_ops[2];                /* log_own_operators()'s module and operator, copied */
};

/* The pid, the number k of memscope_{pid}-{k}.mms (1 without it: a
 * process of another PID namespace with the same pid wrote the plain
 * name first) and the exec number of a log's name. */
static void log_name_numbers(const char *name, unsigned long *pid, unsigned long *k, unsigned long *exec)
{
	int n = 0;

	*pid = *exec = 0;
	*k = 1;
	if (sscanf(name, "memscope_%lu%n", pid, &n) < 1 || !n)
		return;
	name += n;
	if (*name == '-' && sscanf(name, "-%lu%n", k, &n) >= 1)
		name += n;
	sscanf(name, ".exec%lu", exec);
}

char *exec_successor(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name), *next = log_exec_successor(path), *base;

	free(path);
	if (!next)
		return NULL;
	base = xstrdup(strrchr(next, '/') + 1);
	free(next);
	return base;
}

char *program_log_name(const char *dir, pid_t pid)
{
	char *name = xasprintf("memscope_%ld.mms", (long)pid), *next;

	while ((next = exec_successor(dir, name))) {
		free(name);
		name = next;
	}
	return name;
}

static void log_result_free(struct log_result *r)
{
	free(r->exe);
	free(r->damage);
	free(r->cut_what);
	free(r->next);
	free((char *)r->fork.why);
	for (size_t i = 0; i < MMS_BAD_FREES_KEPT; i++)
		free(r->pools[i]);
	free(r->own_ops[0]);
	free(r->own_ops[1]);
}

/* Opens the log dir/name. Returns 0 and sets *log; -ENOENT when there is
 * no such log; another negative code after warning why it cannot be
 * read. */
static int log_open(const char *dir, const char *name, mms_log_t **log)
{
	char *path = xasprintf("%s/%s", dir, name);
	mms_open_error_t oerr = { 0 };
	int err;

	err = mms_log_open_ex(path, log, &oerr);
	free(path);
	if (err == -ENOENT || !err)
		return err;
	if (oerr.what[0])
		WARN("%s: cannot read the log: %s (offset %" PRIu64 ")", name, oerr.what, oerr.offset);
	else
		WARN("%s: cannot read the log: %s", name, mms_strerror(err));
	return err;
}

/* Fills *r from the open log dir/name and its summary, which the replay
 * made with err (0, damage, or an error that leaves no summary). Returns
 * 0 (free *r with log_result_free()), or err after warning. */
static int log_result(const char *dir, const char *name, mms_log_t *log, int err, const mms_summary_t *sum,
		      struct log_result *r)
{
	memset(r, 0, sizeof(*r));
	mms_log_get_info(log, &r->info);
	r->sum = *sum;
	r->exe = xstrdup(r->info.exe ? r->info.exe : "");
	r->damage = r->info.damage ? xstrdup(r->info.damage) : NULL;
	r->cut_what = r->info.cut_what ? xstrdup(r->info.cut_what) : NULL;
	r->info.exe = r->exe;
	r->info.damage = r->damage;
	r->info.cut_what = r->cut_what;
	for (size_t i = 0; i < r->sum.nbad_frees; i++)
		if (r->sum.bad_frees[i].pool)
			r->sum.bad_frees[i].pool = r->pools[i] = xstrdup(r->sum.bad_frees[i].pool);
	const char *own[2];

	log_own_operators(log, sum->unchecked_frees, own);
	for (int i = 0; i < 2; i++)
		r->own_ops[i] = own[i] ? xstrdup(own[i]) : NULL;
	mms_log_fork(log, &r->fork);
	r->fork.why = r->fork.why ? xstrdup(r->fork.why) : NULL;
	if (!log_devices_text(log, r->devices, sizeof(r->devices)))
		r->devices[0] = 0;
	r->fork.parent_log = NULL;
	if (err < 0 && err != MMS_ECORRUPT && err != MMS_EORDER) {
		WARN("%s: cannot replay the log: %s", name, mms_strerror(err));
		log_result_free(r);
		return err;
	}
	r->replay_error = err < 0 ? err : 0;
	r->next = exec_successor(dir, name);
	return 0;
}

/* Opens and summarizes the log dir/name into *r. Returns 0 (free *r with
 * log_result_free()); -ENOENT when there is no such log; another negative
 * code after warning why it could not be read. */
static int log_read(const char *dir, const char *name, struct log_result *r)
{
	mms_summary_t sum;
	mms_log_t *log;
	int err;

	memset(r, 0, sizeof(*r));
	err = log_open(dir, name, &log);
	if (err)
		return err;
	err = an_summarize(name, log, &sum);
	err = log_result(dir, name, log, err, &sum, r);
	mms_log_close(log);
	return err;
}

/* How the log ends, for the "live at ..." label. */
static const char *log_end(const struct log_result *r)
{
	if (r->next && !r->info.cut && !r->info.damaged)
		return "exec";
	return log_end_label(&r->info);
}

static void warn_line(const char *line)
{
	WARN("%s", line);
}

/* Warnings about a log cut short or damaged. The caller has already said
 * when the program was killed, so that is not repeated. */
static void log_warn_state(const char *name, const struct log_result *r, bool killed)
{
	const mms_log_info_t *info = &r->info;

	if (!info->cut && !info->complete && !r->next && !info->exec_away && !killed)
		WARN("%s: the process did not reach exit (it was killed, or is still running); "
		     "the log ends at its last whole record",
		     name);
	log_warn_damage(name, info, warn_line);
	if (!info->damaged && r->replay_error)
		WARN("%s: replay stopped early (%s); the summary covers the events before it", name,
		     mms_strerror(r->replay_error));
}

/* Three lines for one memory kind; at_exit flags blocks live at exit
 * ("leaked at exit", or "still mapped at exit" for mappings). */
static void print_memory(const char *label, const mms_kind_summary_t *k, const struct log_result *r,
			 const char *at_exit, uint64_t rt_blocks, uint64_t rt_bytes)
{
	char a[64], live[64], phrase[128], when[160];
	char *at = xasprintf("  live at %s", log_end(r));
	uint64_t own = k->live_blocks - rt_blocks;
	/* The scan at exit told the program's heap blocks apart: leaked, or
	 * still reachable. */
	bool reach = k == &r->sum.mem[MMS_MEM_HOST] && r->sum.reach_known && own && log_ends_at_exit(&r->info);
	/* Heap blocks the scan gave no verdict (none made, or none could
	 * be): never freed, not said leaked, as the report's "Blocks still
	 * live at exit". */
	const char *unscanned = k == &r->sum.mem[MMS_MEM_HOST] ? "   <- never freed" : at_exit;

	fprintf(stderr, "  %-17s %" PRIu64 " allocations, %" PRIu64 " frees, %s allocated\n", label, k->allocs,
		k->frees, human_bytes_exact(k->bytes_allocated, a, sizeof(a)));
	fprintf(stderr, "  %-17s %s\n", "  peak live", human_bytes_exact(k->peak_bytes, a, sizeof(a)));
	/* Blocks live when a cut or damaged log stops are not leaks: say
	 * when they were live instead. */
	if (log_stops_early(&r->info))
		snprintf(when, sizeof(when), "   (live %s)", log_live_when(&r->info, phrase, sizeof(phrase)));
	fprintf(stderr, "  %-17s %" PRIu64 " block%s, %s%s\n", at, k->live_blocks, k->live_blocks == 1 ? "" : "s",
		human_bytes_exact(k->live_bytes, live, sizeof(live)),
		log_stops_early(&r->info)                                   ? when
		: own && !rt_blocks && !reach && log_ends_at_exit(&r->info) ? unscanned
									    : "");
	if (reach) {
		const uint64_t *b = r->sum.reach_blocks, *y = r->sum.reach_bytes;
		/* Those made as the scan ran that it found no pointer to are
		 * not judged. */
		uint64_t lb = own - b[MMS_REACH_REACHABLE] - b[MMS_REACH_UNKNOWN] - b[MMS_REACH_UNRECORDED],
			 ly = k->live_bytes - rt_bytes - y[MMS_REACH_REACHABLE] - y[MMS_REACH_UNKNOWN] -
			      y[MMS_REACH_UNRECORDED];

		char possibly[80] = "";

		/* valgrind's "indirectly lost" (pointed to only from other
		 * leaked blocks) and "possibly lost" (reached only through a
		 * pointer into its middle) apart. */
		if (b[MMS_REACH_INDIRECT] && b[MMS_REACH_POSSIBLE])
			snprintf(possibly, sizeof(possibly), " (%" PRIu64 " indirectly, %" PRIu64 " possibly)",
				 b[MMS_REACH_INDIRECT], b[MMS_REACH_POSSIBLE]);
		else if (b[MMS_REACH_INDIRECT])
			snprintf(possibly, sizeof(possibly), " (%" PRIu64 " indirectly)", b[MMS_REACH_INDIRECT]);
		else if (b[MMS_REACH_POSSIBLE])
			snprintf(possibly, sizeof(possibly), " (%" PRIu64 " possibly)", b[MMS_REACH_POSSIBLE]);
		fprintf(stderr, "  %-17s %" PRIu64 " block%s, %s%s%s\n", "    leaked", lb, lb == 1 ? "" : "s",
			human_bytes_exact(ly, live, sizeof(live)), lb ? at_exit : "", possibly);
		if (b[MMS_REACH_REACHABLE])
			fprintf(stderr, "  %-17s %" PRIu64 " block%s, %s   still pointed to at exit, not leaks\n",
				"    reachable", b[MMS_REACH_REACHABLE], b[MMS_REACH_REACHABLE] == 1 ? "" : "s",
				human_bytes_exact(y[MMS_REACH_REACHABLE], live, sizeof(live)));
		if (b[MMS_REACH_UNKNOWN])
			fprintf(stderr, "  %-17s %" PRIu64 " block%s, %s   made as the scan at exit ran, not judged\n",
				"    not judged", b[MMS_REACH_UNKNOWN], b[MMS_REACH_UNKNOWN] == 1 ? "" : "s",
				human_bytes_exact(y[MMS_REACH_UNKNOWN], live, sizeof(live)));
	}
	/* Allocated before recording stopped: freed or not since, the log
	 * cannot tell (judged or not by the scan). */
	if (k == &r->sum.mem[MMS_MEM_HOST] && r->sum.reach_blocks[MMS_REACH_UNRECORDED])
		fprintf(stderr, "  %-17s %" PRIu64 " block%s, %s   " LOG_UNRECORDED_WHY "\n", "    fate unknown",
			r->sum.reach_blocks[MMS_REACH_UNRECORDED],
			r->sum.reach_blocks[MMS_REACH_UNRECORDED] == 1 ? "" : "s",
			human_bytes_exact(r->sum.reach_bytes[MMS_REACH_UNRECORDED], live, sizeof(live)));
	/* What the runtimes keep for themselves, apart: not leaks. */
	if (rt_blocks) {
		if (!reach)
			fprintf(stderr, "  %-17s %" PRIu64 " block%s, %s%s\n", "    program's", own,
				own == 1 ? "" : "s", human_bytes_exact(k->live_bytes - rt_bytes, live, sizeof(live)),
				own && log_ends_at_exit(&r->info) ? unscanned : "");
		fprintf(stderr, "  %-17s %" PRIu64 " block%s, %s   kept by %s, not leaks\n", "    runtimes'", rt_blocks,
			rt_blocks == 1 ? "" : "s", human_bytes_exact(rt_bytes, live, sizeof(live)),
			k == &r->sum.mem[MMS_MEM_DEVICE] ? "PyTorch (its CUDA caching allocator, its handles)"
			: k == &r->sum.mem[MMS_MEM_POOL]
				? "PyTorch (tensors of its CUDA caching allocator still held)"
				: "the runtimes (C, C++, CPython, perl, Node.js, the JVM, CUDA)");
	}
	free(at);
}

/* The summary of the program's own log, on stderr. */
static void print_main_summary(const struct run *run, char **argv, pid_t pid, int status, const char *name,
			       struct log_result *r, bool follow_exec)
{
	const mms_summary_t *sum;
	unsigned long execs, lpid, lk;

	/* A process that left by _exit() (shells do) has no end record, but
	 * the wait status says it exited: its last record is its end (unless
	 * it exec'd another program, which then exited: what this image held
	 * was live at exec, not leaked). */
	if (WIFEXITED(status) && !r->info.cut && !r->info.exec_away && !r->next)
		r->info.complete = 1;
	log_warn_state(name, r, WIFSIGNALED(status));

	sum = &r->sum;
	fprintf(stderr, "%s: recorded %s (pid %ld) to %s/%s\n", cli_progname, argv[0], (long)pid, run->shown, name);
	/* The process exec'd a program that left no log: the user's program
	 * most likely, behind a wrapper. */
	if (r->info.exec_away && !r->next && !r->info.cut && !r->info.damaged)
		fprintf(stderr, "  %-17s another program, which was not recorded (%s)\n", "then exec'd",
			follow_exec ? "a statically linked or set-user-ID program, or one run with LD_PRELOAD cleared, "
				      "is not"
				    : "--no-follow-exec");
	/* A wrapper (env, a shell script, pyenv's shims) exec'd the program
	 * the user meant: the report is the last image's. */
	log_name_numbers(name, &lpid, &lk, &execs);
	if (execs)
		fprintf(stderr, "  %-17s %s (image %lu of pid %ld, after %lu exec%s; the earlier %s listed below)\n",
			"image", *r->exe ? r->exe : "(unknown)", execs + 1, (long)pid, execs, execs == 1 ? "" : "s",
			execs == 1 ? "image's log is" : "images' logs are");
	fprintf(stderr, "  %-17s %" PRIu64 "  (", "events", sum->events);
	for (int k = 1, first = 1; k < MMS_EV_KIND_COUNT; k++) {
		if (!sum->by_kind[k])
			continue;
		fprintf(stderr, "%s%s %" PRIu64, first ? "" : ", ", cli_event_kind_name((unsigned)k), sum->by_kind[k]);
		first = 0;
	}
	fprintf(stderr, ")\n");
	print_memory("heap (malloc)", &sum->mem[MMS_MEM_HOST], r, "   <- leaked at exit",
		     sum->runtime_blocks[MMS_RUNTIME_NONE][MMS_MEM_HOST],
		     sum->runtime_bytes[MMS_RUNTIME_NONE][MMS_MEM_HOST]);
	if (sum->mem[MMS_MEM_MMAP].allocs || sum->mem[MMS_MEM_MMAP].frees)
		print_memory("mmap", &sum->mem[MMS_MEM_MMAP], r, "   <- still mapped at exit",
			     sum->runtime_blocks[MMS_RUNTIME_NONE][MMS_MEM_MMAP],
			     sum->runtime_bytes[MMS_RUNTIME_NONE][MMS_MEM_MMAP]);
	if (sum->mem[MMS_MEM_POOL].allocs || sum->mem[MMS_MEM_POOL].frees)
		print_memory("pools (API)", &sum->mem[MMS_MEM_POOL], r, "   <- never released to the pool",
			     sum->runtime_blocks[MMS_RUNTIME_NONE][MMS_MEM_POOL],
			     sum->runtime_bytes[MMS_RUNTIME_NONE][MMS_MEM_POOL]);
	if (sum->mem[MMS_MEM_DEVICE].allocs || sum->mem[MMS_MEM_DEVICE].frees)
		print_memory("CUDA (driver)", &sum->mem[MMS_MEM_DEVICE], r, "   <- never freed",
			     sum->runtime_blocks[MMS_RUNTIME_NONE][MMS_MEM_DEVICE],
			     sum->runtime_bytes[MMS_RUNTIME_NONE][MMS_MEM_DEVICE]);
	if (r->devices[0])
		fprintf(stderr, "  %-17s %s only (--device): the other devices' memory was not recorded\n",
			"CUDA devices", r->devices);
	if (sum->steps)
		fprintf(stderr, "  %-17s %" PRIu64 "%s\n", "steps", sum->steps,
			r->info.steps_inferred ? STEPS_INFERRED_NOTE : "");
	fprintf(stderr, "  %-17s %" PRIu64 "%s\n", "threads", sum->threads, log_threads_note(&r->info));
	log_print_bad_frees(stderr, "  ", 17, &(struct log_bad_frees){ LOG_BAD_FREES_OF(sum, r->own_ops) });
	if (sum->double_allocs)
		fprintf(stderr, "  %-17s %" PRIu64 " (an address handed out while still live)\n", "double allocs",
			sum->double_allocs);
	if (sum->by_kind[MMS_EV_ALLOC_FAIL])
		fprintf(stderr, "  %-17s %" PRIu64 " allocation%s (out of memory): --analysis=oom shows what was live then\n",
			"refused", sum->by_kind[MMS_EV_ALLOC_FAIL], sum->by_kind[MMS_EV_ALLOC_FAIL] == 1 ? "" : "s");
}

/* Orders logs by pid, then each process's images in exec order. */
static int cmp_logs(const struct dirent **a, const struct dirent **b)
{
	unsigned long pa, pb, ka, kb, ea, eb;

	log_name_numbers((*a)->d_name, &pa, &ka, &ea);
	log_name_numbers((*b)->d_name, &pb, &kb, &eb);
	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (ka != kb)
		return ka < kb ? -1 : 1;
	if (ea != eb)
		return ea < eb ? -1 : 1;
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_log(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return strncmp(d->d_name, "memscope_", 9) == 0 && n > 4 && strcmp(d->d_name + n - 4, ".mms") == 0;
}

/* How the process of log `name` began, for the list of other logs:
 * "forked from pid P at its event N", "exec'd from memscope_P.mms", "the
 * program as msmemscope started it" (the first image of pid program, when
 * it exec'd) or "spawned by pid P (...)". Returns a malloc'd string. */
static char *log_origin(const char *name, const struct log_result *r, pid_t program)
{
	unsigned long pid, k, n;
	char stem[64];

	log_name_numbers(name, &pid, &k, &n);
	if (k > 1)
		snprintf(stem, sizeof stem, "memscope_%lu-%lu", pid, k);
	else
		snprintf(stem, sizeof stem, "memscope_%lu", pid);
	if (n >= 1)
		return n == 1 ? xasprintf("exec'd from %s.mms", stem)
			      : xasprintf("exec'd from %s.exec%lu.mms", stem, n - 1);
	if (r->fork.state == MMS_FORK_INHERITED)
		return xasprintf("forked from pid %" PRIu64 " at its event %" PRIu64, r->fork.parent_pid,
				 r->fork.fork_event);
	if (r->fork.state == MMS_FORK_UNKNOWN)
		return xasprintf("forked from pid %" PRIu64 " (inherited blocks unknown: %s)", r->fork.parent_pid,
				 r->fork.why);
	if (r->info.pid == (uint64_t)program)
		return xstrdup("the program as msmemscope started it");
	/* The first process of a PID namespace sees no parent: it is
	 * outside. */
	if (!r->info.ppid)
		return xstrdup(
			"the first process of a new PID namespace (unshare -p, a sandbox's), started from outside it");
	/* A fork child that execs at once leaves no log of its own: its
	 * image is a new process to the recorder, as posix_spawn's is. */
	return xasprintf("spawned by pid %" PRIu64 " (posix_spawn, vfork or fork, then exec)", r->info.ppid);
}

/* Other logs listed one by one: a build or a shell script spawns
 * hundreds of processes. The rest are counted, but one that is cut,
 * damaged or lost events is always listed. */
#define OTHER_LOGS_SHOWN 10

/* "; N frees of no live block; M mismatched frees" for the line of
 * another log, or "" (malloc'd). */
static char *bad_frees_note(const mms_summary_t *s)
{
	char *unmatched = s->unmatched_frees ? xasprintf("; %" PRIu64 " free%s of no live block", s->unmatched_frees,
							 s->unmatched_frees == 1 ? "" : "s")
					     : xstrdup("");
	char *note = s->mismatched_frees ? xasprintf("%s; %" PRIu64 " mismatched free%s", unmatched,
						     s->mismatched_frees, s->mismatched_frees == 1 ? "" : "s")
					 : xstrdup(unmatched);
	free(unmatched);
	return note;
}

/* The line of another log of the run: how its process began, its events
 * and the heap blocks live at its end, and what is wrong with it. */
static void print_other_log(const char *name, const struct log_result *r, pid_t program)
{
	const mms_log_info_t *info = &r->info;
	char b[64], *origin, *inherited, *bad;

	origin = log_origin(name, r, program);
	inherited = r->fork.state == MMS_FORK_INHERITED
			    ? xasprintf(" (%" PRIu64 " of them inherited)", r->sum.inherited_live_blocks[MMS_MEM_HOST])
			    : xstrdup("");
	bad = bad_frees_note(&r->sum);
	fprintf(stderr,
		"  also %s: pid %" PRIu64 "%s%s, %s: %" PRIu64 " events, %" PRIu64 " heap block%s "
		"(%s) live at %s%s%s%s%s%s\n",
		name, info->pid, *r->exe ? ", " : "", r->exe, origin, r->sum.events,
		r->sum.mem[MMS_MEM_HOST].live_blocks, r->sum.mem[MMS_MEM_HOST].live_blocks == 1 ? "" : "s",
		human_bytes(r->sum.mem[MMS_MEM_HOST].live_bytes, b, sizeof(b)), log_end(r), inherited, bad,
		info->cut ? "; the log is cut" : "", info->damaged ? "; damaged" : "",
		info->lost_events ? "; events lost" : "");
	free(origin);
	free(inherited);
	free(bad);
}

/* The log with the most events so far, when one has more than the
 * program's own. */
struct busiest {
	uint64_t events;
	char *name, *exe;
};

static void busiest(struct busiest *b, const char *name, const char *exe, uint64_t events)
{
	if (events <= b->events)
		return;
	b->events = events;
	free(b->name);
	free(b->exe);
	b->name = xstrdup(name);
	b->exe = xstrdup(exe);
}

/* One line for each log in the run folder besides the program's own
 * (forked children, spawned children and exec'd images): the first
 * OTHER_LOGS_SHOWN, then those with a problem (cut, damaged, events
 * lost), then a count of the rest and their events. The rest are only
 * peeked at (mms_log_peek()): the summary of a forked child replays its
 * parent's log up to the fork, about a second for a PyTorch DataLoader
 * worker, which a training run forks anew at every epoch.
 * When one of them has more events than the program's own (main_events),
 * a last line names the busiest and how to read its report: a shell
 * script that runs the program, a launcher script, a build, all put the
 * work the user is after in a child. */
/* Whether the log dir/name, only peeked at (mms_log_peek(): its own info,
 * into *info and exe), is whole: not cut, not damaged, no events lost. */
static int peeked_whole(const char *dir, const char *name, mms_log_info_t *info, char *exe, size_t cap)
{
	char *path = xasprintf("%s/%s", dir, name);
	int whole = mms_log_peek(path, info, exe, cap) == 0 && !info->cut && !info->damaged && !info->lost_events;

	free(path);
	return whole;
}

static void print_other_logs(const struct run *run, pid_t pid, const char *main_name, uint64_t main_events)
{
	struct busiest top = { main_events, NULL, NULL };
	uint64_t more = 0, more_events = 0;
	char exe[256];
	struct dirent **list;
	mms_log_info_t info;
	int n, shown = 0;

	n = scandir(run->dir, &list, is_log, cmp_logs);
	if (n < 0) {
		WARN("cannot list %s: %s", run->shown, strerror(errno));
		return;
	}
	for (int i = 0; i < n; i++) {
		const char *name = list[i]->d_name;
		struct log_result r;

		if (!strcmp(name, main_name)) {
			/* the program's own, summarized already */
		} else if (shown >= OTHER_LOGS_SHOWN && peeked_whole(run->dir, name, &info, exe, sizeof exe)) {
			more++;
			more_events += info.events;
			busiest(&top, name, exe, info.events);
		} else if (log_read(run->dir, name, &r) == 0) {
			busiest(&top, name, r.exe, r.sum.events);
			shown++;
			print_other_log(name, &r, pid);
			log_result_free(&r);
		}
		free(list[i]);
	}
	if (more)
		fprintf(stderr, "  ... and %" PRIu64 " more log%s in %s: %" PRIu64 " events (msmemscope-replay LOG reads "
			"each)\n",
			more, more == 1 ? "" : "s", run->shown, more_events);
	if (top.name)
		fprintf(stderr,
			"  most events are in %s (%s%s%" PRIu64 " events, more than the program's own); its report: "
			"msmemscope-replay %s/%s --analysis leaks\n",
			top.name, top.exe, *top.exe ? ": " : "", top.events, run->shown, top.name);
	free(top.name);
	free(top.exe);
	free(list);
}

/* ---- the dump (--data-format) ---- */

/* The dump of the program's log in {run}/dump/, written by the pass c
 * reads the log with (with inefficient's blocks tagged when c runs it). */
struct dump {
	const char *format;
	char *out;        /* its path */
	char name[64];    /* its file name */
	mms_export_t *x;
};

/* Adds the dump to c's pass. Returns 0, or 1 after saying why not. */
static int dump_add(struct dump *d, const struct run *run, const char *format, struct an_ctx *c)
{
	char *dir = xasprintf("%s/dump", run->dir);
	mms_export_options_t eo = { 0 };
	int rc;

	memset(d, 0, sizeof(*d));
	d->format = format;
	if (mkdir(dir, 0750) && errno != EEXIST) {
		warn("--data-format=%s: cannot create %s: %s; no dump written", format, dir, strerror(errno));
		free(dir);
		return 1;
	}
	mms_export_name(c->log, format, d->name, sizeof(d->name));
	d->out = xasprintf("%s/%s", dir, d->name);
	free(dir);
	eo.format = !strcmp(format, "csv") ? MMS_EXPORT_CSV : MMS_EXPORT_DB;
	eo.path = d->out;
	eo.out.sym = an_symbolizer(c);
	/* msMemScope tags the MALLOC rows of inefficient blocks. */
	eo.inefficient = c->inefficient;
	rc = mms_export_add(c->pass, &eo, &d->x);
	c->subscribed += !rc;
	if (rc) {
		warn("--data-format=%s: cannot write %s: %s", format, d->out, mms_strerror(rc));
		return 1;
	}
	return 0;
}

/* After the pass: says what became of the dump. Returns 0, or 1 after
 * saying why it was not written. */
static int dump_done(struct dump *d, const struct run *run, const struct an_ctx *c)
{
	int rc = c->pass_rc ? c->pass_rc : d->x->status, ret = 0;

	if (c->inefficient && c->inefficient->status)
		warn("--data-format=%s: cannot find the inefficient blocks of %s: %s; the dump has no "
		     "inefficient_type", d->format, c->path, mms_strerror(c->inefficient->status));
	if (rc) {
		warn("--data-format=%s: cannot write %s: %s", d->format, d->out, mms_strerror(rc));
		ret = 1;
	} else if (log_level <= LOG_WARN) {
		fprintf(stderr, "%s: wrote the dump %s/dump/%s\n", cli_progname, run->shown, d->name);
	}
	mms_export_free(d->x);
	free(d->out);
	return ret;
}

int write_dump(const struct run *run, pid_t pid, const char *format, unsigned analyses)
{
	char *name = program_log_name(run->dir, pid);
	char *path = xasprintf("%s/%s", run->dir, name);
	struct an_opts ao = { .tag_inefficient = true };
	struct dump d;
	struct an_ctx *c;
	mms_log_t *log = NULL;
	int rc, ret = 1, st;

	rc = mms_log_open(path, &log);
	if (rc) {
		warn("--data-format=%s: cannot read %s: %s; no dump written", format, path, mms_strerror(rc));
		goto out;
	}
	/* Only inefficient matters to the dump: its tags. */
	c = an_open(path, log, analyses & an_mask("inefficient"), &ao, stderr, &st);
	c->shown = strrchr(path, '/') + 1;
	if (!dump_add(&d, run, format, c)) {
		an_pass(c);
		ret = dump_done(&d, run, c);
	}
	an_close(c);
out:
	mms_log_close(log);
	free(path);
	free(name);
	return ret;
}

void report_options(const struct run *run, const struct opts *o, struct an_opts *ao)
{
	memset(ao, 0, sizeof(*ao));
	ao->depth = 12;
	ao->top = 10;
	ao->outdir = run->dir;
	ao->suppressions = o->suppressions;
	ao->show_runtime = o->show_runtime;
	ao->show_reachable = o->show_reachable;
	ao->show_held = o->show_held;
	ao->warmup_steps = o->warmup_steps;
	ao->leak_marks = o->leak_marks;
	ao->oom_k = o->oom_k;
	ao->leak_mark_first = o->leak_mark_first;
	ao->tag_inefficient = o->data_format != NULL;
	ao->leak_error_kinds = o->leak_error_kinds;
	ao->error_exitcode = o->error_exitcode;
}

int report_run(const struct run *run, char **argv, pid_t pid, int status, const struct opts *o, struct live *lv,
	       uint64_t *errors)
{
	char *name = program_log_name(run->dir, pid);
	char *path = xasprintf("%s/%s", run->dir, name);
	struct an_opts ao = { 0 };
	struct log_result r;
	struct an_ctx *c;
	struct dump d;
	mms_summary_t sum;
	mms_pass_info_t pi;
	mms_log_t *log;
	int err, ret = 0, st, dump = 0;

	/* Read while the program ran: the rest, and the report. A record
	 * written late (a thread's, stamped before events the pass took
	 * already: it waited for the lock that maps its chunk) makes the
	 * log read anew, as without the live read. */
	c = live_take(lv, name, &log, &st);
	if (c) {
		c->shown = name;
		c->pass_rc = mms_pass_run(c->pass);
		c->pass_done = 1;
		if (c->pass_rc != MMS_EORDER)
			goto read;
		if (getenv("MSMEMSCOPE_LIVE_DEBUG"))
			fprintf(stderr, "%s: live: not used (a record written late)\n", cli_progname);
		an_close(c);
		mms_log_close(log);
	}
	err = log_open(run->dir, name, &log);
	if (err == -ENOENT)
		WARN("%s (pid %ld) left no log in %s: the recorder was not loaded into it "
		     "(a statically linked or setuid program, or one that resets LD_PRELOAD, is not recorded), "
		     "or it could not make its log (a line above then says why)",
		     argv[0], (long)pid, run->shown);
	if (err == -ENOENT)
		goto out;
	if (err < 0) {
		print_other_logs(run, pid, name, 0);
		if (o->analyses) {
			warn("--analysis: cannot read %s: %s", path, mms_strerror(err));
			ret = 1;
		}
		if (o->data_format) {
			warn("--data-format=%s: cannot read %s: %s; no dump written", o->data_format, path,
			     mms_strerror(err));
			ret = 1;
		}
		goto out;
	}
	report_options(run, o, &ao);
	/* One pass over the log gives the summary, every analysis asked for
	 * and the dump. */
	c = an_open(path, log, o->analyses, &ao, stderr, &st);
	c->shown = name;
	if (o->data_format) {
		dump = !dump_add(&d, run, o->data_format, c);
		if (!dump)
			ret = 1;
	}
	c->summary = 1;
read:
	if (st)
		ret = 1;
	err = an_pass(c);
	mms_pass_get_info(c->pass, &pi);
	if (!err && !mms_pass_summary(c->pass, &sum))
		err = pi.stop_rc;
	else
		memset(&sum, 0, sizeof(sum));
	if (log_result(run->dir, name, log, err, &sum, &r) == 0) {
		print_main_summary(run, argv, pid, status, name, &r, o->rec.follow_exec);
		log_result_free(&r);
	}
	print_other_logs(run, pid, name, sum.events);
	/* Before the report: it says why freeres did not run. */
	c->killed_by = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	if (o->analyses) {
		/* The report goes with the summary, on stderr: the program's
		 * own output on stdout stays as it was. */
		fflush(stdout);
		if (an_print(c))
			ret = 1;
	}
	if (dump && dump_done(&d, run, c))
		ret = 1;
	*errors = an_error_status(c, 0) != 0;
	an_close(c);
	mms_log_close(log);
out:
	free(path);
	free(name);
	return err == -ENOENT ? err : ret;
}
