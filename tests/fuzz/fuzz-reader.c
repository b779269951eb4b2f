/* SPDX-License-Identifier: MIT */
/* fuzz-reader.c: libFuzzer target for the log reader: any bytes must open
 * or fail cleanly, and an opened log must iterate, summarize, replay, run
 * the analyses that write no file and answer every metadata query without
 * reading out of bounds. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msmemscope/analysis.h"
#include "msmemscope/compare.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "msmemscope/summary.h"
#include "log-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Strings the reader hands out are read whole, so that ASan sees a missing
 * NUL or a dangling pointer. */
static volatile size_t sink;

static void touch(const char *s)
{
	if (s)
		sink += strlen(s);
}

/* Every query of the metadata API, on the ids an opened log can name. */
static void query_meta(const mms_log_t *log)
{
	mms_log_info_t in;
	mms_module_t mod;
	const char *s;
	uint64_t ips[8], tid;
	size_t len;
	int i, n;

	mms_log_get_info(log, &in);
	touch(in.exe);
	touch(in.damage);
	if (mms_log_meta(log, "exe", &s, &len) == 0)
		touch(s);
	if (mms_log_meta(log, "argv", &s, &len) == 0)
		touch(s);
	n = mms_log_module(log, 0, NULL);
	for (i = 0; i < n && i < 64; i++)
		if (mms_log_module(log, (size_t)i, &mod) == 0) {
			touch(mod.path);
			if (mod.build_id_len)
				sink += mod.build_id[mod.build_id_len - 1];
		}
	for (i = 0; i < 16; i++) {
		if (mms_log_thread(log, (uint32_t)i, &tid, &s) == 0)
			touch(s);
		mms_log_stack(log, (uint32_t)i, ips, 8);
	}
	mms_strerror(in.damage_error);
}

static int count_block(const mms_block_t *b, void *ctx)
{
	(void)ctx;
	touch(b->op);
	touch(b->owner);
	touch(b->pool);
	sink += b->size;
	return 0;
}

/* The analyses' forward passes that write no file: watermark, usage and
 * leakage, decompose, inefficient, watch, compare. Each must answer up to
 * the cut or the damage. */
static void analyses(mms_log_t *log)
{
	mms_inefficient_options_t io = { .tags = 1 };
	mms_trace_options_t to = { .plot_buckets = 8 };
	mms_launches_t *l[2] = { NULL, NULL };
	mms_decompose_t *d = NULL;
	mms_inefficient_t *ineff = NULL;
	mms_watch_t *wr = NULL;
	mms_compare_t *cmp;
	const mms_compare_row_t *rows;
	mms_trace_t *t = NULL;
	mms_pass_t *p;
	size_t n;

	/* All of them in one pass, as the command lines run them. */
	if (mms_pass_open(log, NULL, &p))
		return;
	mms_trace_add(p, &to, &t);
	mms_decompose_add(p, NULL, &d);
	mms_inefficient_add(p, &io, &ineff);
	mms_watch_add(p, NULL, &wr);
	mms_launches_add(p, NULL, &l[0]);
	mms_launches_add(p, NULL, &l[1]);
	if (mms_pass_run(p) == 0 && l[0] && l[1] && mms_compare_open(MMS_COMPARE_OP, &cmp) == 0) {
		if (mms_compare_set(cmp, 0, l[0]) == 0 && mms_compare_set(cmp, 1, l[1]) == 0)
			mms_compare_align(cmp, &rows, &n, NULL);
		mms_compare_close(cmp);
	}
	mms_pass_close(p);
	mms_trace_free(t);
	mms_decompose_free(d);
	mms_inefficient_free(ineff);
	mms_watch_free(wr);
	mms_launches_free(l[0]);
	mms_launches_free(l[1]);
}

/* The replay over the heap state: checkpoints every 16 events (kept in
 * memory), seeks back and forth, the step report, groups, the search
 * for a freed block, and the leaks analysis's forward pass. */
static void replay(mms_log_t *log)
{
	mms_replay_options_t ro = { .no_index_file = 1, .checkpoint_every = 16 };
	mms_step_report_t *rep;
	mms_leaks_t *lk;
	mms_stack_group_t *g;
	mms_replay_t *r;
	mms_block_t b;
	mms_event_t ev;
	mms_where_t w;
	uint64_t s, addr = 0;
	size_t n;

	if (mms_replay_open_ex(log, &ro, &r))
		return;
	mms_replay_where(r, &w);
	while (mms_replay_next(r, &ev) == 1)
		if (ev.addr)
			addr = ev.addr + 1;
	mms_replay_seek(r, w.events / 2);
	if (mms_replay_last_event(r, &ev))
		touch(ev.name);
	if (mms_replay_event_block(r, &b))
		touch(b.owner);
	mms_replay_blocks(r, count_block, NULL);
	mms_replay_block_at(r, addr, &b);
	mms_replay_freed_block_at(r, addr, &b);
	if (mms_replay_group_live(r, 0, UINT64_MAX, &g, &n) == 0)
		free(g);
	for (s = 1; s <= mms_replay_steps(r) && s <= 3; s++)
		if (mms_replay_step_report(r, s, &rep) == 0)
			mms_step_report_free(rep);
	mms_replay_seek(r, w.events);
	mms_replay_seek(r, 1);
	mms_replay_where(r, &w);
	touch(w.op);
	mms_replay_close(r);
	if (mms_leaks_run(log, NULL, &lk) == 0) {
		if (mms_leaks_group(lk->step_leaks, lk->nstep_leaks, &g, &n) == 0)
			free(g);
		mms_leaks_free(lk);
	}
}

/* Writes the first len bytes of data to fd's file (from offset 0). */
static int put(int fd, const uint8_t *data, size_t len)
{
	ssize_t n;
	size_t off = 0;

	while (off < len) {
		n = pwrite(fd, data + off, len - off, (off_t)off);
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

/* The log followed as if written in two looks (half the file, then all
 * of it): following must fail cleanly or give the summary the whole log
 * gives. */
static void follow(const uint8_t *data, size_t size, const mms_summary_t *whole, int whole_rc)
{
	static char path[64];
	mms_summary_t s;
	mms_log_t *log;
	mms_pass_t *p;
	int fd, rc;

	if (size < 4096)
		return;
	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/fuzz-reader-follow.%ld.mms", (long)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (put(fd, data, size / 2) == 0 && mms_log_follow(path, &log, NULL) == 0) {
		if (mms_pass_open(log, NULL, &p) == 0) {
			rc = mms_pass_feed(p);
			if (put(fd, data, size) == 0 && !rc && mms_log_follow_refresh(log) >= 0)
				rc = mms_pass_feed(p);
			if (mms_log_follow_end(log) == 0 && !rc && mms_pass_feed(p) == 0 && mms_pass_run(p) == 0 &&
			    mms_pass_summary(p, &s) == 0 && whole_rc == 0 &&
			    (s.events != whole->events || s.mem[0].live_bytes != whole->mem[0].live_bytes ||
			     s.mem[0].allocs != whole->mem[0].allocs))
				abort(); /* followed, it says another thing than whole */
			mms_pass_close(p);
		}
		mms_log_close(log);
	}
	close(fd);
	unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mms_open_error_t err;
	mms_summary_t sum;
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;
	uint64_t ips[8];
	void *buf;
	int rc;

	/* A mapped file is page-aligned; give the reader the same. */
	buf = aligned_alloc(4096, size ? (size + 4095) / 4096 * 4096 : 4096);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	memset(&err, 0, sizeof(err));
	rc = mms__log_open_buf(buf, size, &log, &err);
	if (rc) {
		/* The message is what the command prints: it must be a string. */
		sink += strnlen(err.what, sizeof(err.what)) + strlen(mms_strerror(rc));
		free(buf);
		return 0;
	}
	query_meta(log);
	if (mms_iter_open(log, &it) == 0) {
		while ((rc = mms_iter_next(it, &ev)) == 1) {
			touch(ev.name);
			if (ev.stack)
				mms_log_stack(log, ev.stack, ips, 8);
		}
		mms_strerror(rc);
		mms_iter_close(it);
	}
	rc = mms_summarize(log, &sum);
	replay(log);
	analyses(log);
	mms_log_close(log);
	follow(buf, size, &sum, rc);
	free(buf);
	return 0;
}
