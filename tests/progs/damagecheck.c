/* SPDX-License-Identifier: MIT */
/* damagecheck.c: runs every query and export of the replay library over
 * damaged copies of a whole log, for tests/progs/damage.sh: the log cut at
 * every chunk boundary and at random offsets, and with random bytes
 * flipped. Each copy must open, or be refused with an offset and a reason;
 * every query of one that opens must answer (up to the cut or the damage,
 * which the log's info says), never fail for the damage; and a log that is
 * only cut must replay a consistent prefix of the run: no free of a block
 * that was not live, no address handed out twice. Under the sanitizer
 * build, no report either.
 *
 * Usage: damagecheck LOG DIR SEED CUTS FLIPS
 *   LOG    a whole recording, consistent (no unmatched frees)
 *   DIR    an empty folder for the copies and the files the exports write
 *   SEED   for the random cuts and flips
 *   CUTS   random cut points besides the chunk boundaries
 *   FLIPS  copies with 1 to 4 random bytes changed
 * Prints one line of figures; exits 1 at the first copy that breaks a rule,
 * keeping it as DIR/failed.mms. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "msmemscope-replay.h"
#include "progs.h"

#define HEADER 4096u

static const char *dir;
static char variant[4096]; /* what the current copy is, for messages */
static unsigned long long rng;

static char *in_dir(const char *name)
{
	return prog_in_dir(dir, name);
}

static uint64_t next_rand(void)
{
	return prog_rand(&rng);
}

static int write_file(const char *path, const uint8_t *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ssize_t w;

	if (fd < 0)
		return -1;
	while (n) {
		w = write(fd, p, n);
		if (w <= 0) {
			close(fd);
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return close(fd);
}

__attribute__((format(printf, 1, 2), noreturn)) static void broken(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "damagecheck: %s: ", variant);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (the copy is %s)\n", in_dir("failed.mms"));
	rename(in_dir("copy.mms"), in_dir("failed.mms"));
	exit(1);
}

/* A query must answer: 0. */
static void answered(const char *what, int rc)
{
	if (rc)
		broken("%s failed: %d (%s)", what, rc, mms_strerror(rc));
}

static int count_block(const mms_block_t *b, void *ctx)
{
	*(uint64_t *)ctx += b->size;
	return 0;
}

/* The replay with its index in memory: an event, the steps, the blocks. */
static void query_replay(mms_log_t *log)
{
	mms_replay_options_t ro = { .no_index_file = 1, .checkpoint_every = 64 };
	mms_step_report_t *rep;
	mms_stack_group_t *g;
	mms_decompose_tree_t *d;
	mms_replay_t *r;
	mms_event_t ev;
	mms_block_t b;
	mms_where_t w;
	uint64_t s, bytes = 0;
	size_t n;

	answered("mms_replay_open_ex", mms_replay_open_ex(log, &ro, &r));
	mms_replay_where(r, &w);
	if (w.events) {
		answered("mms_replay_seek (--event)", mms_replay_seek(r, w.events / 2 + 1));
		if (!mms_replay_last_event(r, &ev))
			broken("no last event after a seek to %" PRIu64, w.events / 2 + 1);
		if (ev.addr) {
			mms_replay_event_block(r, &b);
			mms_replay_block_at(r, ev.addr, &b);
			if (mms_replay_freed_block_at(r, ev.addr, &b) < 0)
				broken("mms_replay_freed_block_at failed");
		}
		answered("mms_decompose_replay", mms_decompose_replay(r, &d));
		mms_decompose_tree_free(d);
	}
	for (s = 1; s <= mms_replay_steps(r) && s <= 4; s++) {
		answered("mms_replay_step_report (--step)", mms_replay_step_report(r, s, &rep));
		mms_step_report_free(rep);
	}
	answered("mms_replay_seek (end)", mms_replay_seek(r, w.events));
	answered("mms_replay_group_live", mms_replay_group_live(r, 0, UINT64_MAX, &g, &n));
	free(g);
	mms_replay_blocks(r, count_block, &bytes);
	mms_replay_where(r, &w);
	if (bytes != w.live_bytes)
		broken("live blocks hold %" PRIu64 " bytes, the replay says %" PRIu64, bytes, w.live_bytes);
	mms_replay_close(r);
}

/* Every analysis and export, as the two programs run them. */
static void query_all(mms_log_t *log, mms_symbolizer_t *sym)
{
	mms_trace_options_t to = { .usage_path = in_dir("usage.tsv"), .out.overwrite = 1, .plot_buckets = 50 };
	mms_inefficient_options_t io = { .tags = 1 };
	mms_export_options_t eo = { .out = { .sym = sym, .overwrite = 1 } };
	mms_transform_options_t xo = { .out = { .overwrite = 1, .sym = sym }, .threshold = 2 };
	mms_output_options_t out = { .overwrite = 1, .sym = sym };
	mms_watch_options_t wo = { .csv_path = in_dir("watch.csv"), .out.overwrite = 1 };
	mms_launches_t *launches[2];
	mms_suppressions_t *supp;
	mms_inefficient_t *ineff;
	mms_transform_t *xr;
	mms_export_t *x[2];
	mms_watch_t *wr;
	mms_guard_t *gr;
	mms_decompose_t *d;
	mms_stack_group_t *g;
	mms_compare_t *cmp;
	const mms_compare_row_t *rows;
	mms_leaks_options_t lo = { 0 };
	mms_leaks_t *l;
	mms_trace_t *t;
	mms_pass_t *p;
	size_t n;
	int f, sel;

	query_replay(log);
	if (mms_suppressions_parse("leak:main\n", 10, &supp, NULL))
		broken("cannot parse a suppression");
	lo.suppressions = supp;
	lo.sym = sym;
	answered("mms_leaks_run", mms_leaks_run(log, &lo, &l));
	mms_suppressions_free(supp);
	answered("mms_leaks_group", mms_leaks_group(l->exit_leaks, l->nexit_leaks, &g, &n));
	free(g);
	mms_leaks_free(l);
	answered("mms_decompose_run", mms_decompose_run(log, NULL, &d));
	mms_decompose_free(d);
	answered("mms_trace_run (watermark, usage, leakage)", mms_trace_run(log, &to, &t));
	answered("mms_trace_write_tsv (watermark)",
		 mms_trace_write_tsv(log, t->peak, t->npeak, in_dir("watermark.tsv"), &out));
	answered("mms_trace_write_tsv (leakage)", mms_trace_write_tsv(log, t->end, t->nend, in_dir("leakage.tsv"), &out));
	mms_trace_free(t);
	answered("mms_watch_run", mms_watch_run(log, &wo, &wr));
	mms_watch_free(wr);
	answered("mms_guard_run", mms_guard_run(log, NULL, &gr));
	mms_guard_free(gr);
	/* The dump tagged by inefficient in the same pass (a second read),
	 * and the SQLite one. */
	answered("mms_pass_open", mms_pass_open(log, NULL, &p));
	answered("mms_inefficient_add", mms_inefficient_add(p, &io, &ineff));
	eo.format = MMS_EXPORT_CSV;
	eo.path = in_dir("dump.csv");
	eo.inefficient = ineff;
	answered("mms_export_add (csv)", mms_export_add(p, &eo, &x[0]));
	eo.format = MMS_EXPORT_DB;
	eo.path = in_dir("dump.db");
	eo.inefficient = NULL;
	answered("mms_export_add (db)", mms_export_add(p, &eo, &x[1]));
	answered("mms_pass_run (exports)", mms_pass_run(p));
	mms_pass_close(p);
	answered("mms_inefficient_add", ineff->status);
	answered("mms_export_add (csv)", x[0]->status);
	answered("mms_export_add (db)", x[1]->status);
	mms_export_free(x[0]);
	mms_export_free(x[1]);
	mms_inefficient_free(ineff);
	xo.path = in_dir("transform.out");
	for (f = MMS_TRANSFORM_CSV; f <= MMS_TRANSFORM_FLAMEGRAPH; f++)
		for (sel = MMS_TRANSFORM_PEAK; sel <= MMS_TRANSFORM_TEMPORARY; sel++) {
			xo.format = f;
			xo.selection = sel;
			answered(mms_transform_format_name(f), mms_transform_run(log, &xo, &xr));
			mms_transform_free(xr);
		}
	answered("mms_compare_open", mms_compare_open(MMS_COMPARE_OP, &cmp));
	answered("mms_pass_open", mms_pass_open(log, NULL, &p));
	answered("mms_launches_add", mms_launches_add(p, NULL, &launches[0]));
	answered("mms_launches_add", mms_launches_add(p, NULL, &launches[1]));
	answered("mms_pass_run (launches)", mms_pass_run(p));
	mms_pass_close(p);
	answered("mms_compare_set", mms_compare_set(cmp, 0, launches[0]));
	answered("mms_compare_set", mms_compare_set(cmp, 1, launches[1]));
	mms_launches_free(launches[0]);
	mms_launches_free(launches[1]);
	answered("mms_compare_align", mms_compare_align(cmp, &rows, &n, NULL));
	mms_compare_close(cmp);
}

struct figures {
	uint64_t copies, refused, cut, damaged, stopped, whole, bad_stacks;
};

/* One copy: open it, check what its info says, run every query. Returns 1
 * when it was refused. */
static int check_copy(const uint8_t *p, size_t len, int only_cut, size_t whole_len, const mms_summary_t *base,
		      struct figures *fig)
{
	mms_open_error_t err = { 0 };
	mms_symbolizer_t *sym;
	mms_log_info_t in;
	mms_summary_t s;
	mms_log_t *log;
	int rc;

	fig->copies++;
	if (write_file(in_dir("copy.mms"), p, len))
		broken("cannot write %s: %s", in_dir("copy.mms"), strerror(errno));
	rc = mms_log_open_ex(in_dir("copy.mms"), &log, &err);
	if (rc) {
		/* Refused: a format error, with where and why. */
		if (rc != MMS_EBADMAGIC && rc != MMS_EVERSION && rc != MMS_ETRUNCATED && rc != MMS_ECORRUPT)
			broken("refused with %d (%s), not a format error", rc, mms_strerror(rc));
		if (!err.what[0] || err.offset > len)
			broken("refused (%s) without a reason or with offset %" PRIu64 " past the file's %zu bytes",
			       mms_strerror(rc), err.offset, len);
		if (only_cut && len >= HEADER)
			broken("a log cut after its header was refused: %s", err.what);
		fig->refused++;
		return 1;
	}
	mms_log_get_info(log, &in);
	if ((in.cut && !in.cut_what && !(in.flags & 2 /* MMS_FLAG_CUT */)) || (in.damaged && !in.damage))
		broken("a cut or damaged log does not say what is wrong");
	if (in.cut && in.cut_offset != len)
		broken("cut at byte %" PRIu64 ", but the file has %zu bytes", in.cut_offset, len);
	if (only_cut) {
		if (len < whole_len && !in.cut)
			broken("the first %zu of %zu bytes read as a whole log", len, whole_len);
		if (in.damaged)
			broken("a log only cut reads as damaged: %s", in.damage);
	}
	answered("mms_summarize", mms_summarize(log, &s));
	if (s.events != in.events)
		broken("the summary has %" PRIu64 " events, the info %" PRIu64, s.events, in.events);
	/* A log only cut replays a prefix of the run: consistent, and no
	 * more than the whole log. */
	if (only_cut && (s.unmatched_frees || s.double_allocs || s.events > base->events ||
			 s.mem[MMS_MEM_HOST].allocs > base->mem[MMS_MEM_HOST].allocs))
		broken("a log only cut is no consistent prefix: %" PRIu64 " events (of %" PRIu64 "), %" PRIu64
		       " unmatched frees, %" PRIu64 " double allocations",
		       s.events, base->events, s.unmatched_frees, s.double_allocs);
	/* Symbolizing costs most of a copy's time: every fourth copy. */
	if (fig->copies % 4 || mms_symbolizer_open(log, &sym))
		sym = NULL;
	query_all(log, sym);
	mms_symbolizer_close(sym);
	mms_log_get_info(log, &in);
	fig->cut += in.cut;
	fig->damaged += in.damaged;
	fig->stopped += in.stopped;
	fig->whole += !in.cut && !in.damaged;
	fig->bad_stacks += in.bad_stacks != 0;
	mms_log_close(log);
	return 0;
}

/* A random byte of a chunk's header or records (not its unused tail). */
static size_t record_byte(const uint8_t *p, size_t len, size_t cs)
{
	size_t nchunks = (len - HEADER) / cs, k, tries;
	uint64_t used;

	for (tries = 0; tries < 16; tries++) {
		k = (size_t)(next_rand() % nchunks);
		memcpy(&used, p + HEADER + k * cs + 8, 8);
		if (used && used <= cs - 16)
			return HEADER + k * cs + (size_t)(next_rand() % (16 + used));
	}
	return HEADER + (size_t)(next_rand() % (len - HEADER));
}

static uint8_t *read_file(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) || !(p = malloc((size_t)st.st_size + 1)) ||
	    read(fd, p, (size_t)st.st_size) != st.st_size) {
		fprintf(stderr, "damagecheck: cannot read %s: %s\n", path, strerror(errno));
		exit(1);
	}
	close(fd);
	*len = (size_t)st.st_size;
	return p;
}

int main(int argc, char **argv)
{
	struct figures fig = { 0 };
	mms_summary_t base;
	mms_log_t *log;
	uint8_t *whole, *copy;
	size_t len, cut, cs, k, i, nflips;
	unsigned long cuts, flips;

	if (argc != 6) {
		fprintf(stderr, "usage: damagecheck LOG DIR SEED CUTS FLIPS\n");
		return 2;
	}
	dir = argv[2];
	rng = (strtoull(argv[3], NULL, 10) + 1) * 0x9e3779b97f4a7c15ull;
	if (!rng)
		rng = 1;
	cuts = strtoul(argv[4], NULL, 10);
	flips = strtoul(argv[5], NULL, 10);
	whole = read_file(argv[1], &len);
	if (len < HEADER + 16 || mms_log_open(argv[1], &log)) {
		fprintf(stderr, "damagecheck: %s is not a whole log\n", argv[1]);
		return 1;
	}
	if (mms_summarize(log, &base) || base.unmatched_frees || base.double_allocs) {
		fprintf(stderr, "damagecheck: %s is not a consistent log to start from\n", argv[1]);
		return 1;
	}
	mms_log_close(log);
	memcpy(&cs, whole + 16, 4);
	cs = (uint32_t)cs;
	copy = malloc(len);
	if (!copy)
		return 1;

	snprintf(variant, sizeof(variant), "the whole log");
	check_copy(whole, len, 1, len, &base, &fig);
	/* Cut at every chunk boundary, and inside each chunk's header. */
	for (k = 0; HEADER + k * cs < len; k++) {
		snprintf(variant, sizeof(variant), "cut after chunk %zu (byte %zu)", k, (size_t)(HEADER + k * cs));
		check_copy(whole, HEADER + k * cs, 1, len, &base, &fig);
		snprintf(variant, sizeof(variant), "cut inside chunk %zu's header (byte %zu)", k,
			 (size_t)(HEADER + k * cs + 9));
		check_copy(whole, HEADER + k * cs + 9, 1, len, &base, &fig);
	}
	for (i = 0; i < cuts; i++) {
		cut = (size_t)(next_rand() % len);
		snprintf(variant, sizeof(variant), "cut at byte %zu", cut);
		check_copy(whole, cut, 1, len, &base, &fig);
	}
	/* Flipped bytes: mostly in the chunks' records, some in the header or
	 * anywhere (a chunk's unused tail among them). */
	for (i = 0; i < flips; i++) {
		size_t o = (size_t)snprintf(variant, sizeof(variant), "bytes changed:");

		memcpy(copy, whole, len);
		nflips = 1 + (size_t)(next_rand() % 4);
		for (k = 0; k < nflips; k++) {
			size_t at = record_byte(whole, len, cs);

			if (next_rand() % 10 == 0)
				at = (size_t)(next_rand() % HEADER);
			else if (next_rand() % 10 == 0)
				at = HEADER + (size_t)(next_rand() % (len - HEADER));
			uint8_t x = (uint8_t)(1 + next_rand() % 255);

			copy[at] ^= x;
			if (o < sizeof(variant))
				o += (size_t)snprintf(variant + o, sizeof(variant) - o, " %zu^0x%02x", at, x);
		}
		check_copy(copy, len, 0, len, &base, &fig);
	}
	/* A header that claims more chunks than a file holds. */
	memcpy(copy, whole, len);
	memset(copy + 80, 0xff, 8);
	snprintf(variant, sizeof(variant), "nchunks 2^64-1");
	if (!check_copy(copy, len, 0, len, &base, &fig))
		broken("the header with 2^64-1 chunks was read");

	printf("damagecheck: %" PRIu64 " copies: %" PRIu64 " refused, %" PRIu64 " cut, %" PRIu64 " damaged, %" PRIu64
	       " stopped early, %" PRIu64 " read whole, %" PRIu64 " with stacks that did not resolve; every query "
	       "answered\n",
	       fig.copies, fig.refused, fig.cut, fig.damaged, fig.stopped, fig.whole, fig.bad_stacks);
	unlink(in_dir("copy.mms"));
	free(copy);
	free(whole);
	return 0;
}
