/* SPDX-License-Identifier: MIT */
/* analysis.c: the table of analyses, and the one pass that runs those a
 * command line asked for over a log: added, read once, printed in turn. */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "logwords.h"
#include "replay-show.h"

/* Each analysis's entry point lives in its own src/an-<name>.c. */
const struct an_def an_defs[] = {
	{ "leaks", "blocks of step N >= 2 live at the end of step N+1, blocks live at exit, step-to-step growth",
	  an_leaks_add, an_leaks_print },
	{ "decompose", "live bytes by memory kind and owner tag levels, at the end and at the peak",
	  an_decompose_add, an_decompose_print },
	{ "inefficient", "early_allocation, late_deallocation, temporary_idleness over operator launches",
	  an_inefficient_add, an_inefficient_print },
	{ "watermark", "the blocks live at the high-water mark, with stacks (watermark.tsv)", an_trace_add,
	  an_watermark_print },
	{ "usage", "live bytes over time (usage.tsv; --buckets N, --plot FILE.svg)", an_trace_add, an_usage_print },
	{ "leakage", "the blocks not freed by the end, with stacks (leakage.tsv)", an_trace_add, an_leakage_print },
	{ "watch", "the launches that changed each watched block (--watch, msmemscope_watch)", an_watch_add,
	  an_watch_print },
	{ "guard", "guard mode's findings: overflows, writes after free, bad frees (--guard)", an_guard_add,
	  an_guard_print },
	{ "oom", "at each allocation refused (out of memory): the request, the K blocks allocated last and the K "
		 "largest live then (oom:K; default 10)",
	  an_oom_add, an_oom_print },
	{ NULL, NULL, NULL, NULL },
};

const struct an_def *an_find(const char *name)
{
	for (const struct an_def *d = an_defs; d->name; d++)
		if (!strcmp(d->name, name))
			return d;
	return NULL;
}

unsigned an_mask(const char *name)
{
	const struct an_def *d = an_find(name);

	return d ? 1u << (d - an_defs) : 0;
}

const char *an_names(void)
{
	static char buf[256];
	size_t n = 0;

	buf[0] = 0;
	for (const struct an_def *d = an_defs; d->name && n < sizeof(buf); d++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? ", " : "", d->name);
	return buf;
}

void an_print_help(FILE *f)
{
	for (const struct an_def *d = an_defs; d->name; d++) {
		const char *w = d->what;
		int col = fprintf(f, "  %-13s", d->name);

		/* The description, wrapped at 79 columns under itself. */
		while (*w) {
			size_t len = strcspn(w, " ");

			if (col + 1 + (int)len > 79 && col > 15) {
				fputs("\n", f);
				col = fprintf(f, "%15s", "");
			} else if (col > 15) {
				col += fprintf(f, " ");
			}
			col += fprintf(f, "%.*s", (int)len, w);
			w += len;
			w += strspn(w, " ");
		}
		fputs("\n", f);
	}
}

const char *an_parse_list_k(const char *list, unsigned *mask, size_t *oom_k)
{
	static char msg[384];
	const char *p = list;

	*mask = 0;
	while (*p) {
		size_t len = strcspn(p, ","), name_len = len;
		const struct an_def *d;
		const char *colon = memchr(p, ':', len);

		/* oom:K, as msMemScope writes it: K blocks of each list. */
		if (colon && oom_k && colon - p == 3 && !strncmp(p, "oom", 3)) {
			char *end;
			unsigned long long k;

			errno = 0;
			k = strtoull(colon + 1, &end, 10);
			if (colon[1] < '0' || colon[1] > '9' || end != p + len || errno || !k || k > AN_OOM_K_MAX) {
				snprintf(msg, sizeof(msg), "oom:K wants K from 1 to %d blocks, not '%.*s'", AN_OOM_K_MAX,
					 (int)(len - 4), colon + 1);
				return msg;
			}
			*oom_k = (size_t)k;
			name_len = 3;
		}
		for (d = an_defs; d->name; d++)
			if (strlen(d->name) == name_len && !strncmp(d->name, p, name_len))
				break;
		if (!d->name) {
			snprintf(msg, sizeof(msg), "no analysis '%.*s'; the analyses are %s", (int)len, p,
				 an_names());
			return msg;
		}
		*mask |= 1u << (d - an_defs);
		p += len;
		if (*p == ',')
			p++;
	}
	return NULL;
}

const char *an_parse_list(const char *list, unsigned *mask)
{
	return an_parse_list_k(list, mask, NULL);
}

/* A comma-separated list of the n names into bits of *mask (1 << index);
 * NULL, or what is wrong, naming them as `what` ("memory kind"). */
static const char *parse_names(const char *list, const char *const *names, size_t n, const char *what, unsigned *mask)
{
	static char msg[200];
	char all[120] = "";
	const char *p = list;

	for (size_t k = 0; k < n; k++)
		snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s", k ? k + 1 < n ? ", " : " and " : "",
			 names[k]);
	*mask = 0;
	while (*p) {
		size_t len = strcspn(p, ","), k;

		for (k = 0; k < n; k++)
			if (strlen(names[k]) == len && !strncmp(names[k], p, len))
				break;
		if (k == n) {
			snprintf(msg, sizeof(msg), "no %s '%.*s'; the %ss are %s", what, (int)len, p, what, all);
			return msg;
		}
		*mask |= 1u << k;
		p += len;
		if (*p == ',')
			p++;
	}
	if (*mask)
		return NULL;
	snprintf(msg, sizeof(msg), "no %s given; the %ss are %s", what, what, all);
	return msg;
}

const char *const an_mem_names[MMS_MEM_KIND_COUNT] = {
	[MMS_MEM_HOST] = "host", [MMS_MEM_MMAP] = "mmap", [MMS_MEM_POOL] = "pool", [MMS_MEM_DEVICE] = "device"
};

const char *an_parse_memory(const char *list, unsigned *mask)
{
	return parse_names(list, an_mem_names, MMS_MEM_KIND_COUNT, "memory kind", mask);
}

/* In the order of enum an_leak_kind's bits. */
static const char *const leak_kind_names[] = { "definite", "indirect", "possible", "reachable", "step" };

const char *an_parse_leak_kinds(const char *list, unsigned *mask)
{
	if (!strcmp(list, "all")) {
		*mask = AN_LEAK_ALL;
		return NULL;
	}
	if (!strcmp(list, "none")) {
		*mask = 0;
		return NULL;
	}
	return parse_names(list, leak_kind_names, sizeof(leak_kind_names) / sizeof(leak_kind_names[0]), "leak kind",
			   mask);
}

/* A recording restricted to some steps or to msmemscope_start()..stop()
 * (or paused by msmemscope_stop() in immediate mode) lost the frees made
 * outside: say so once, before the analyses count
 * those blocks as live. */
static void warn_partial(const char *path, mms_log_t *log, mms_pass_t *pass)
{
	mms_summary_t sum;
	mms_config_t cfg;
	char steps[MMS_CONFIG_STEPS_MAX * 12];

	if (mms_log_config(log, &cfg))
		return;
	log_steps_list(&cfg, 0, steps, sizeof(steps), NULL);
	if (cfg.nsteps)
		warn("%s was recorded with --steps=%s: memory events of the other steps are not in the log: a block "
		     "allocated before one of them and live in the log may have been freed in it (not counted as a "
		     "leak; the live bytes per step still count it), and a free of a block allocated in one is no "
		     "error",
		     path, steps);
	else if (cfg.deferred)
		warn("%s was recorded with --collect-mode=deferred: memory events outside msmemscope_start() .. "
		     "msmemscope_stop() are not in the log: a block allocated before msmemscope_stop() and live in "
		     "the log may have been freed after it (not counted as a leak), and a free of a block allocated "
		     "outside is no error",
		     path);
	else if (!mms_pass_summary(pass, &sum) && sum.gap_event)
		warn("%s: the program called msmemscope_stop(): memory events while recording was off are not in "
		     "the log: a block allocated before and live in the log may have been freed then (not counted "
		     "as a leak), and one allocated then and never freed is not seen",
		     path);
}

struct an_ctx *an_open(const char *path, mms_log_t *log, unsigned mask, const struct an_opts *o, FILE *out,
		       int *status)
{
	unsigned writers = an_mask("watermark") | an_mask("usage") | an_mask("leakage") | an_mask("watch");
	struct an_ctx *c = xcalloc(1, sizeof(*c));
	mms_pass_options_t po = { .progress = progress_update, .progress_ctx = &c->progress };
	int rc;

	*status = 0;
	c->path = path;
	c->log = log;
	c->o = o;
	c->out = out;
	c->mask = mask;
	rc = mms_pass_open(log, &po, &c->pass);
	if (rc)
		die(CLI_EXIT_FAILURE, "%s: cannot replay: %s", path, mms_strerror(rc));
	/* The folder the files go into is made here, as compare makes its
	 * own; an analysis that still cannot write its file prints its report
	 * all the same. */
	if (o->outdir && (mask & writers)) {
		rc = cli_make_dirs(o->outdir);
		if (rc) {
			warn("cannot create the output folder %s: %s; choose another --output-dir", o->outdir,
			     strerror(-rc));
			*status = CLI_EXIT_FAILURE;
		}
	}
	for (const struct an_def *d = an_defs; d->name; d++) {
		if (!(mask & 1u << (d - an_defs)))
			continue;
		if (d->add(c))
			*status = CLI_EXIT_FAILURE;
		else
			c->added |= 1u << (d - an_defs);
	}
	return c;
}

int an_pass(struct an_ctx *c)
{
	/* Nothing to feed and no summary asked for: no read. */
	if (!c->subscribed && !c->summary)
		return 0;
	if (!c->pass_done) {
		progress_start(&c->progress, "reading", c->shown ? c->shown : c->path);
		c->pass_rc = mms_pass_run(c->pass);
		progress_end(&c->progress);
	}
	if (c->pass_rc)
		warn("%s: cannot replay: %s", c->path, mms_strerror(c->pass_rc));
	return c->pass_rc;
}

int an_print(struct an_ctx *c)
{
	int status = 0;

	if (c->mask & ~an_mask("watch"))
		warn_partial(c->path, c->log, c->pass);
	for (const struct an_def *d = an_defs; d->name; d++) {
		unsigned bit = 1u << (d - an_defs);

		if (!(c->mask & bit))
			continue;
		if (!(c->added & bit) || c->pass_rc || d->print(c))
			status = CLI_EXIT_FAILURE;
		fflush(c->out);
	}
	return status;
}

void an_close(struct an_ctx *c)
{
	mms_pass_close(c->pass);
	mms_leaks_free(c->leaks);
	mms_decompose_free(c->decompose);
	mms_inefficient_free(c->inefficient);
	mms_watch_free(c->watch);
	mms_guard_free(c->guard);
	mms_oom_free(c->oom);
	free(c->watch_dir);
	free(c->watch_csv);
	mms_suppressions_free(c->leaks_supp);
	mms_trace_free(c->trace);
	mms_symbolizer_close(c->sym);
	free(c);
	/* The files a cancelled pass was writing are gone now. */
	progress_die_if_caught();
}

/* The bad frees --error-exitcode counts: mismatched frees always; double
 * and invalid ones where the log saw every allocation and free of the run
 * (not one recorded in parts: collect=deferred, --steps, msmemscope_stop(),
 * where a free of a block allocated while nothing was recorded is no
 * bug). Guard mode's heap ones are its findings, not the log's. */
static uint64_t bad_free_errors(const struct an_ctx *c)
{
	const mms_leaks_t *l = c->leaks;
	mms_summary_t sum;
	mms_config_t cfg;

	if (!l)
		return 0;
	if (mms_log_config(c->log, &cfg) || cfg.deferred || cfg.nsteps || mms_pass_summary(c->pass, &sum) ||
	    sum.by_kind[MMS_EV_COLLECT])
		return l->mismatched_frees;
	return l->double_frees + l->invalid_frees + l->mismatched_frees;
}

int an_error_status(const struct an_ctx *c, int status)
{
	uint64_t guard, leaks, bad, n, unverdicted;

	if (!c->o->error_exitcode)
		return status;
	guard = c->guard ? c->guard->nfindings : 0;
	leaks = an_leak_errors(c, c->o->leak_error_kinds, &unverdicted);
	bad = bad_free_errors(c);
	n = guard + leaks + bad;
	if (!n)
		return status;
	fprintf(stderr, "%s: %" PRIu64 " error%s: %" PRIu64 " leak%s (", cli_progname, n, n == 1 ? "" : "s", leaks,
		leaks == 1 ? "" : "s");
	for (unsigned k = 0, sep = 0; k < sizeof(leak_kind_names) / sizeof(leak_kind_names[0]); k++)
		if (c->o->leak_error_kinds & 1u << k)
			fprintf(stderr, "%s%s", sep++ ? "," : "", leak_kind_names[k]);
	if (!c->o->leak_error_kinds)
		fprintf(stderr, "none");
	/* The report calls them live at exit, not leaks: say why they count. */
	if (unverdicted)
		fprintf(stderr, "; %" PRIu64 " of them live at exit, with no scan to tell leaked from reachable",
			unverdicted);
	fprintf(stderr, ")");
	if (bad)
		fprintf(stderr, ", %" PRIu64 " bad free%s", bad, bad == 1 ? "" : "s");
	fprintf(stderr, " and %" PRIu64 " guard finding%s", guard, guard == 1 ? "" : "s");
	if (c->killed_by)
		fprintf(stderr, "; the program was killed by signal %d, which is the status (not --error-exitcode)\n",
			c->killed_by);
	else
		fprintf(stderr, ": exit status %d (--error-exitcode)\n", c->o->error_exitcode);
	/* As valgrind's --error-exitcode: the findings decide. */
	return c->o->error_exitcode;
}

int an_run(const char *path, mms_log_t *log, unsigned mask, const struct an_opts *o, FILE *out)
{
	int status;
	struct an_ctx *c = an_open(path, log, mask, o, out, &status);

	if (an_pass(c))
		status = CLI_EXIT_FAILURE;
	if (an_print(c))
		status = CLI_EXIT_FAILURE;
	status = an_error_status(c, status);
	an_close(c);
	return status;
}

int an_summarize(const char *path, mms_log_t *log, mms_summary_t *out)
{
	struct progress pr = { 0 };
	mms_pass_options_t po = { .progress = progress_update, .progress_ctx = &pr };
	mms_pass_info_t pi;
	mms_pass_t *p;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = mms_pass_open(log, &po, &p);
	if (rc)
		return rc;
	progress_start(&pr, "reading", path);
	rc = mms_pass_run(p);
	progress_end(&pr);
	if (!rc) {
		mms_pass_summary(p, out);
		mms_pass_get_info(p, &pi);
		rc = pi.stop_rc;
	}
	mms_pass_close(p);
	progress_die_if_caught();
	return rc;
}

mms_symbolizer_t *an_symbolizer(struct an_ctx *c)
{
	if (!c->sym && !c->sym_failed && mms_symbolizer_open(c->log, &c->sym)) {
		c->sym = NULL;
		c->sym_failed = 1;
	}
	return c->sym;
}

char *an_out_path(const struct an_opts *o, const char *name)
{
	return xasprintf("%s/%s", o->outdir ? o->outdir : ".", name);
}

void an_show_init(struct an_ctx *c, struct show *s)
{
	show_init(s, c->path, c->log, NULL);
	s->out = c->out;
	s->json = c->o->json;
	s->depth = c->o->depth;
	s->view = c->o->stack_view;
	s->top = c->o->top;
	/* The analyses share one symbolizer, which the context owns. */
	s->sym = an_symbolizer(c);
	s->sym_failed = !s->sym;
}

void an_show_fini(struct show *s)
{
	s->sym = NULL;
	show_fini(s);
}

const char *an_parse_leak_marks(const char *value, struct an_opts *o)
{
	/* The name, kept here: no allocation to free (one option, one
	 * name); as long as the recorder keeps a name. */
	static char name[4096 + 1];
	const char *comma = strrchr(value, ',');
	char *end;
	unsigned long long n = 1;

	if (comma && comma[1] >= '0' && comma[1] <= '9' && comma[strspn(comma + 1, "0123456789") + 1] == '\0') {
		errno = 0;
		n = strtoull(comma + 1, &end, 10);
		if (errno || !n)
			return "N (the first of the three marks) counts marks of that name from 1";
	} else {
		comma = value + strlen(value);
	}
	if (comma == value)
		return "expected the name of a mark (msmemscope_mark(), mstxMarkA(), nvtxMarkA())";
	if ((size_t)(comma - value) >= sizeof(name))
		return "a mark's name is at most 4096 bytes (the recorder keeps no more)";
	memcpy(name, value, (size_t)(comma - value));
	name[comma - value] = '\0';
	o->leak_marks = name;
	o->leak_mark_first = n;
	return NULL;
}

const char *an_check_suppressions(const char *path)
{
	static char msg[512];
	mms_suppressions_t *s;
	unsigned line = 0;
	int rc;

	rc = mms_suppressions_load(path, &s, &line);
	if (rc == MMS_EUSAGE && line)
		snprintf(msg, sizeof(msg), "%s:%u: not a suppression (expected leak:PATTERN, # comment or a blank line)",
			 path, line);
	else if (rc)
		snprintf(msg, sizeof(msg), "cannot read %s: %s", path, mms_strerror(rc));
	else
		mms_suppressions_free(s);
	return rc ? msg : NULL;
}
