/* SPDX-License-Identifier: MIT */
/* check-trace.c: unit tests of the watermark, usage and leakage pass
 * (replay/analyses/trace.c) over synthetic logs: the first moment of the peak,
 * blocks and mapping pieces freed after it, kinds, the usage file, and
 * the lists' files, top and totals. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logbuild.h"
#include "scratch.h"
#include "msmemscope-replay.h"

#define LOG "t.mms"
#define CS 4096u

/* A one-thread log with its SEGMENT, THREAD and SYSTEM init (event 0),
 * in chunks of cs bytes. */
static struct lb *one_thread_in(uint32_t cs)
{
	struct lb *b = lb_new(cs);

	lb_chunk(b);
	lb_segment(b, 0, 10);
	lb_thread(b, 10, 0, 1000);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_INIT, 11);
	return b;
}

static struct lb *one_thread(void)
{
	return one_thread_in(CS);
}

static mms_trace_t *run(struct lb *b, const mms_trace_options_t *opt, mms_log_t **logp)
{
	mms_trace_t *t = NULL;
	int rc;

	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	lb_destroy(b);
	ck_assert_int_eq(mms_log_open(LOG, logp), 0);
	rc = mms_trace_run(*logp, opt, &t);
	ck_assert_msg(rc == 0, "trace: %s", mms_strerror(rc));
	return t;
}

static char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* A log whose lists have every kind of member: blocks live at the peak
 * and at the end, blocks freed after the peak in an order of their own
 * (sizes repeating, so that the allocation event and the address order
 * them too), pieces of a mapping cut after it, an owner's blocks and a
 * pool's, two stacks. 45 blocks live at the peak (event 46), 14 at the
 * end. */
#define MANY 40
static struct lb *many_blocks(void)
{
	struct lb *b = one_thread();
	int i, j;

	lb_string(b, 12, 1, "pool-a");
	lb_string(b, 12, 2, "weights");
	lb_stack(b, 12, 1, 0, 0x401000);
	lb_stack(b, 12, 2, 1, 0x402000);
	lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x500000, 4096, 0); /* event 1: freed before the peak */
	lb_free(b, 21, MMS_FREE_FREE, 0x500000);
	lb_event1(b, MMS_TAG_OWNER_PUSH, 22, 2);
	for (i = 0; i < MANY; i++) /* events 4 to 43 */
		lb_alloc(b, 30 + (uint64_t)i, MMS_ALLOC_MALLOC, 0x100000 + (uint64_t)(MANY - i) * 0x1000,
			 16 + (uint64_t)(i * 7 % 5) * 8, (uint64_t)(i % 3));
	lb_event0(b, MMS_TAG_OWNER_POP, 80);
	lb_pool_alloc(b, 81, 1, 0x900000, 24, 1024, 24, 2); /* event 45 */
	lb_mmap(b, 82, 0x10000000, 0x4000); /* event 46: the peak */
	for (i = 0; i < MANY; i++) {
		j = i * 17 % MANY;
		if (j % 4)
			lb_free(b, 90 + (uint64_t)i, MMS_FREE_FREE, 0x100000 + (uint64_t)(MANY - j) * 0x1000);
	}
	lb_munmap(b, 140, 0x10001000, 0x1000);
	lb_mmap(b, 141, 0x10002000, 0x1000); /* over the third page */
	lb_pool_free(b, 142, 1, 0x900000, 24, 1024, 0);
	lb_alloc(b, 143, MMS_ALLOC_MALLOC, 0x600000, 40, 2);
	return b;
}

/* Whether two records say the same. */
static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static void same_record(const mms_trace_block_t *x, const mms_trace_block_t *y)
{
	ck_assert_uint_eq(x->time_ns, y->time_ns);
	ck_assert_uint_eq(x->b.addr, y->b.addr);
	ck_assert_uint_eq(x->b.size, y->b.size);
	ck_assert_uint_eq(x->b.mem, y->b.mem);
	ck_assert_uint_eq(x->b.fn, y->b.fn);
	ck_assert_uint_eq(x->b.thread, y->b.thread);
	ck_assert_uint_eq(x->b.stack, y->b.stack);
	ck_assert_uint_eq(x->b.alloc_id, y->b.alloc_id);
	ck_assert_uint_eq(x->b.alloc_event, y->b.alloc_event);
	ck_assert_uint_eq(x->b.step, y->b.step);
	ck_assert_uint_eq(x->b.op_launch, y->b.op_launch);
	ck_assert_uint_eq(x->b.kernel_launches, y->b.kernel_launches);
	ck_assert_uint_eq(x->b.free_event, y->b.free_event);
	ck_assert_int_eq(x->b.inherited, y->b.inherited);
	ck_assert(same_str(x->b.op, y->b.op));
	ck_assert(same_str(x->b.owner, y->b.owner));
	ck_assert(same_str(x->b.pool, y->b.pool));
}

static size_t lines(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;
	int ch;

	ck_assert_ptr_nonnull(f);
	while ((ch = getc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* Whether files a and b hold the same bytes, every one. */
static void same_file(const char *a, const char *b)
{
	FILE *f = fopen(a, "r"), *g = fopen(b, "r");
	size_t n = 0;
	int x, y;

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(g);
	do {
		x = getc(f);
		y = getc(g);
		ck_assert_msg(x == y, "%s and %s differ at byte %zu", a, b, n);
		n++;
	} while (x != EOF);
	fclose(f);
	fclose(g);
}

/* The peak is the first moment the highest live bytes are reached; blocks
 * freed after it still count, a later equal peak does not move it. */
START_TEST(test_peak_first)
{
	struct lb *b = one_thread();
	mms_log_t *log;
	mms_trace_t *t;

	lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x1000, 100, 0); /* event 1 */
	lb_alloc(b, 21, MMS_ALLOC_MALLOC, 0x2000, 200, 0); /* 2: peak 300 */
	lb_free(b, 22, MMS_FREE_FREE, 0x1000);
	lb_alloc(b, 23, MMS_ALLOC_MALLOC, 0x3000, 100, 0); /* 300 again */
	lb_free(b, 24, MMS_FREE_FREE, 0x2000);
	lb_alloc(b, 25, MMS_ALLOC_MALLOC, 0x4000, 50, 0);
	t = run(b, NULL, &log);
	ck_assert_uint_eq(t->peak_bytes, 300);
	ck_assert_uint_eq(t->peak_event, 2);
	ck_assert_uint_eq(t->peak_ns, 1000000000ull + 21);
	ck_assert_uint_eq(t->npeak, 2);
	ck_assert_uint_eq(t->peak[0].b.addr, 0x2000);
	ck_assert_uint_eq(t->peak[0].b.size, 200);
	ck_assert_uint_eq(t->peak[0].time_ns, 1000000000ull + 21);
	ck_assert_uint_eq(t->peak[1].b.addr, 0x1000);
	ck_assert_uint_eq(t->peak[1].time_ns, 1000000000ull + 20);
	ck_assert_uint_eq(t->end_bytes, 150);
	ck_assert_uint_eq(t->nend, 2);
	ck_assert_uint_eq(t->end[0].b.addr, 0x3000);
	ck_assert_uint_eq(t->end[1].b.addr, 0x4000);
	ck_assert_uint_eq(t->end[1].time_ns, 1000000000ull + 25);
	ck_assert_uint_eq(t->changes, 6);
	mms_trace_free(t);
	mms_log_close(log);
}
END_TEST

/* A list of n blocks with the addresses and times of want. */
static void expect_blocks(const mms_trace_block_t *v, size_t n, const uint64_t (*want)[2], size_t nwant)
{
	ck_assert_uint_eq(n, nwant);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(v[i].b.addr, want[i][0]);
		ck_assert_uint_eq(v[i].time_ns, 1000000000ull + want[i][1]);
	}
}

/* Writes b's log, opens it into *log and runs a pass of two traces into
 * t: the first holds the slots of blocks freed since the peak, the
 * second, which cannot, keeps copies. Returns the pass. */
static mms_pass_t *two_traces(struct lb *b, mms_log_t **log, mms_trace_t *t[2])
{
	mms_pass_t *pass;

	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	lb_destroy(b);
	ck_assert_int_eq(mms_log_open(LOG, log), 0);
	ck_assert_int_eq(mms_pass_open(*log, NULL, &pass), 0);
	ck_assert_int_eq(mms_trace_add(pass, NULL, &t[0]), 0);
	ck_assert_int_eq(mms_trace_add(pass, NULL, &t[1]), 0);
	ck_assert_int_eq(mms_pass_run(pass), 0);
	return pass;
}

/* The blocks freed since the peak keep their slots out of reuse until a
 * new peak gives them back: what is allocated meanwhile takes others, and
 * a second trace of the same pass, which cannot hold them, lists them
 * from its copies the same. */
START_TEST(test_held_slots)
{
	struct lb *b = one_thread();
	mms_pass_t *pass;
	mms_log_t *log;
	/* Address and allocation time (ns after the log's start). */
	static const uint64_t peak[][2] = { { 0x4000, 24 }, { 0x2000, 21 }, { 0x3000, 23 } };
	static const uint64_t end[][2] = { { 0x4000, 24 }, { 0x7000, 29 }, { 0x6000, 28 }, { 0x5000, 26 } };
	mms_trace_t *t[2];
	size_t i;

	lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x1000, 100, 0); /* event 1: A */
	lb_alloc(b, 21, MMS_ALLOC_MALLOC, 0x2000, 100, 0); /* 2: B, a first peak */
	lb_free(b, 22, MMS_FREE_FREE, 0x1000);             /* A held */
	lb_alloc(b, 23, MMS_ALLOC_MALLOC, 0x3000, 50, 0);  /* 4: C */
	lb_alloc(b, 24, MMS_ALLOC_MALLOC, 0x4000, 200, 0); /* 5: D, the peak: A given back */
	lb_free(b, 25, MMS_FREE_FREE, 0x2000);             /* B held */
	lb_alloc(b, 26, MMS_ALLOC_MALLOC, 0x5000, 10, 0);  /* 7: E */
	lb_free(b, 27, MMS_FREE_FREE, 0x3000);             /* C held */
	lb_alloc(b, 28, MMS_ALLOC_MALLOC, 0x6000, 20, 0);  /* 9: F */
	lb_alloc(b, 29, MMS_ALLOC_MALLOC, 0x7000, 30, 0);  /* 10: G */
	pass = two_traces(b, &log, t);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(t[i]->status, 0);
		ck_assert_uint_eq(t[i]->peak_event, 5);
		ck_assert_uint_eq(t[i]->peak_bytes, 350);
		expect_blocks(t[i]->peak, t[i]->npeak, peak, 3);
		expect_blocks(t[i]->end, t[i]->nend, end, 4);
	}
	for (i = 0; i < 3; i++)
		same_record(&t[0]->peak[i], &t[1]->peak[i]);
	mms_pass_close(pass);
	mms_trace_free(t[0]);
	mms_trace_free(t[1]);
	mms_log_close(log);
}
END_TEST

/* A mapping cut after the peak by munmap and by a mapping placed over it
 * shows as the pieces it had at the peak; the new mapping does not. */
START_TEST(test_mmap_pieces)
{
	struct lb *b = one_thread();
	mms_log_t *log;
	mms_trace_t *t;
	static const uint64_t at[4] = { 0x10000, 0x11000, 0x12000, 0x13000 };

	lb_mmap(b, 20, 0x10000, 0x4000);   /* event 1: the peak */
	lb_munmap(b, 21, 0x11000, 0x1000);
	lb_mmap(b, 22, 0x12000, 0x1000);   /* over the third page */
	t = run(b, NULL, &log);
	ck_assert_uint_eq(t->peak_bytes, 0x4000);
	ck_assert_uint_eq(t->peak_event, 1);
	ck_assert_uint_eq(t->npeak, 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(t->peak[i].b.addr, at[i]);
		ck_assert_uint_eq(t->peak[i].b.size, 0x1000);
		ck_assert_uint_eq(t->peak[i].b.alloc_event, 1);
		ck_assert_uint_eq(t->peak[i].time_ns, 1000000000ull + 20);
	}
	ck_assert_uint_eq(t->end_bytes, 0x3000);
	ck_assert_uint_eq(t->nend, 3);
	ck_assert_uint_eq(t->end[2].b.addr, 0x12000);
	ck_assert_uint_eq(t->end[2].b.alloc_event, 3);
	ck_assert_uint_eq(t->end[2].time_ns, 1000000000ull + 22);
	mms_trace_free(t);
	mms_log_close(log);
}
END_TEST

/* A list not wanted is not made; the figures are the same, the mappings'
 * pieces included. */
/* One piece of a mapping live at the end and one freed since the peak
 * have the same size and allocation event: the peak's list has them by
 * address, the freed piece (a copy, listed after the live ones) first. */
START_TEST(test_mmap_piece_freed_first)
{
	struct lb *b = one_thread();
	mms_log_t *log;
	mms_trace_t *t;

	lb_mmap(b, 20, 0x10000, 0x2000);   /* event 1: the peak */
	lb_munmap(b, 21, 0x10000, 0x1000); /* its first page */
	t = run(b, NULL, &log);
	ck_assert_uint_eq(t->peak_event, 1);
	ck_assert_uint_eq(t->npeak, 2);
	ck_assert_uint_eq(t->peak[0].b.addr, 0x10000);
	ck_assert_uint_eq(t->peak[1].b.addr, 0x11000);
	ck_assert_uint_eq(t->peak[0].b.size, 0x1000);
	ck_assert_uint_eq(t->peak[1].b.size, 0x1000);
	mms_trace_free(t);
	mms_log_close(log);
}
END_TEST

START_TEST(test_skip_lists)
{
	static const unsigned skips[3] = { MMS_TRACE_SKIP_PEAK, MMS_TRACE_SKIP_END,
					   MMS_TRACE_SKIP_PEAK | MMS_TRACE_SKIP_END };

	for (int i = 0; i < 3; i++) {
		mms_trace_options_t opt = { .skip = skips[i] };
		struct lb *b = one_thread();
		mms_log_t *log;
		mms_trace_t *t;

		lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x1000, 100, 0);
		lb_mmap(b, 21, 0x10000, 0x4000); /* event 2: the peak */
		lb_free(b, 22, MMS_FREE_FREE, 0x1000);
		lb_munmap(b, 23, 0x11000, 0x1000);
		lb_alloc(b, 24, MMS_ALLOC_MALLOC, 0x3000, 50, 0);
		t = run(b, &opt, &log);
		ck_assert_uint_eq(t->peak_bytes, 100 + 0x4000);
		ck_assert_uint_eq(t->peak_event, 2);
		ck_assert_uint_eq(t->end_bytes, 50 + 0x3000);
		ck_assert_uint_eq(t->changes, 5);
		if (skips[i] & MMS_TRACE_SKIP_PEAK) {
			ck_assert_uint_eq(t->npeak, 0);
			ck_assert_ptr_null(t->peak);
		} else {
			ck_assert_uint_eq(t->npeak, 4); /* the block, the mapping in three pieces */
		}
		if (skips[i] & MMS_TRACE_SKIP_END) {
			ck_assert_uint_eq(t->nend, 0);
			ck_assert_ptr_null(t->end);
		} else {
			ck_assert_uint_eq(t->nend, 3); /* the block, two pieces */
		}
		mms_trace_free(t);
		mms_log_close(log);
	}
}
END_TEST

/* Counting one kind leaves the others out of the figures and the lists. */
START_TEST(test_kinds)
{
	struct lb *b = one_thread();
	mms_trace_options_t opt = { .kinds = 1u << MMS_MEM_HOST };
	mms_log_t *log;
	mms_trace_t *t;

	lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x1000, 100, 0);
	lb_mmap(b, 21, 0x10000, 0x1000);
	lb_free(b, 22, MMS_FREE_FREE, 0x1000);
	lb_alloc(b, 23, MMS_ALLOC_MALLOC, 0x2000, 300, 0);
	t = run(b, &opt, &log);
	ck_assert_uint_eq(t->peak_bytes, 300);
	ck_assert_uint_eq(t->peak_event, 4);
	ck_assert_uint_eq(t->npeak, 1);
	ck_assert_uint_eq(t->nend, 1);
	ck_assert_uint_eq(t->end_bytes, 300);
	ck_assert_uint_eq(t->changes, 3);
	mms_trace_free(t);
	mms_log_close(log);
}
END_TEST

/* usage.tsv: one row per change (each at a time of its own here), or the highest of each time bucket
 * (the value carried into a bucket counts). The span runs from the
 * recording's start (1e9 ns) to the last stamp, 43 ns. */
START_TEST(test_usage_file)
{
	mms_trace_options_t opt = { .usage_path = "usage.tsv" };
	mms_log_t *log;
	mms_trace_t *t;

	for (int buckets = 0; buckets <= 4; buckets += 4) {
		struct lb *b = one_thread();

		lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x1000, 100, 0);
		lb_alloc(b, 30, MMS_ALLOC_MALLOC, 0x2000, 50, 0);
		lb_free(b, 40, MMS_FREE_FREE, 0x1000);
		lb_alloc(b, 41, MMS_ALLOC_MALLOC, 0x3000, 1000, 0);
		lb_free(b, 42, MMS_FREE_FREE, 0x3000);
		opt.buckets = (uint64_t)buckets;
		opt.plot_buckets = 4;
		t = run(b, &opt, &log);
		if (!buckets) {
			ck_assert_str_eq(slurp("usage.tsv"), "time_ns\tlive_bytes\n"
								 "1000000020\t100\n1000000030\t150\n1000000040\t50\n"
								 "1000000041\t1050\n1000000042\t50\n");
			ck_assert_uint_eq(t->usage_rows, 5);
		} else {
			ck_assert_str_eq(slurp("usage.tsv"), "time_ns\tlive_bytes\n"
								 "1000000000\t0\n1000000010\t100\n1000000021\t150\n"
								 "1000000032\t1050\n");
			ck_assert_uint_eq(t->usage_rows, 4);
		}
		ck_assert_uint_eq(t->npoints, 4);
		ck_assert_uint_eq(t->points[3].bytes, 1050);
		ck_assert_uint_eq(t->points[3].time_ns, 1000000032);
		/* The file exists now: refused without overwrite. */
		mms_trace_free(t);
		t = NULL;
		ck_assert_int_eq(mms_trace_run(log, &opt, &t), -EEXIST);
		ck_assert_ptr_null(t);
		mms_log_close(log);
		unlink("usage.tsv");
	}
}
END_TEST

/* usage.tsv's buckets at their edges: 4 buckets over 43 ns start at 0,
 * 10, 21 and 32 ns, and a time belongs to bucket floor(4 * t / 43), so
 * 11, 22 and 33 ns open the next one while 21 and 32 do not: the blocks'
 * sizes (1, 2, 4, ... bytes) tell which bucket counted which. */
START_TEST(test_usage_bucket_edges)
{
	mms_trace_options_t opt = { .usage_path = "usage.tsv", .buckets = 4 };
	static const uint64_t at[] = { 11, 21, 22, 32, 33 };
	struct lb *b = one_thread();
	mms_log_t *log;
	mms_trace_t *t;
	size_t i;

	for (i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		lb_alloc(b, at[i], MMS_ALLOC_MALLOC, 0x1000 * (i + 1), 1u << i, 0);
	lb_free(b, 42, MMS_FREE_FREE, 0x5000);
	t = run(b, &opt, &log);
	ck_assert_str_eq(slurp("usage.tsv"), "time_ns\tlive_bytes\n"
					     "1000000000\t0\n1000000010\t3\n1000000021\t15\n1000000032\t31\n");
	mms_trace_free(t);
	mms_log_close(log);
	unlink("usage.tsv");
}
END_TEST

/* usage.tsv: the changes of one time (events that share a stamp) make at
 * most two rows, the highest live bytes among them when the last change
 * left fewer, then the last; the file's highest row is the peak. */
START_TEST(test_usage_same_time)
{
	mms_trace_options_t opt = { .usage_path = "usage.tsv" };
	struct lb *b = one_thread();
	mms_log_t *log;
	mms_trace_t *t;

	/* 20: up to 100 and back to 60 (two rows). */
	lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x1000, 40, 0);
	lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x2000, 60, 0);
	lb_free(b, 20, MMS_FREE_FREE, 0x1000);
	/* 30: up only, 60 -> 90 -> 1090 (one row, the last). */
	lb_alloc(b, 30, MMS_ALLOC_MALLOC, 0x3000, 30, 0);
	lb_alloc(b, 30, MMS_ALLOC_MALLOC, 0x4000, 1000, 0);
	/* 31: alone, down to 90. */
	lb_free(b, 31, MMS_FREE_FREE, 0x4000);
	/* 40: down then up again below the start, 90 -> 60 -> 80 (one row). */
	lb_free(b, 40, MMS_FREE_FREE, 0x3000);
	lb_alloc(b, 40, MMS_ALLOC_MALLOC, 0x5000, 20, 0);
	t = run(b, &opt, &log);
	ck_assert_str_eq(slurp("usage.tsv"), "time_ns\tlive_bytes\n"
					     "1000000020\t100\n1000000020\t60\n1000000030\t1090\n"
					     "1000000031\t90\n1000000040\t80\n");
	ck_assert_uint_eq(t->usage_rows, 5);
	ck_assert_uint_eq(t->changes, 8);
	ck_assert_uint_eq(t->peak_bytes, 1090);
	ck_assert_uint_eq(t->end_bytes, 80);
	mms_trace_free(t);
	mms_log_close(log);
}
END_TEST

/* The lists' files, written by the pass from its compact records, are
 * what mms_trace_write_tsv() writes of the whole lists, with top or
 * without; the totals count every block. */
START_TEST(test_list_files)
{
	static const size_t tops[3] = { 0, 3, 1000 };
	mms_trace_options_t opt = { 0 };
	mms_log_t *log;
	mms_trace_t *all, *t;

	all = run(many_blocks(), NULL, &log);
	ck_assert_int_eq(all->status, 0);
	ck_assert_uint_eq(all->peak_event, 46);
	ck_assert_uint_eq(all->peak_blocks, 45); /* 40, the pool's, the mapping in four pieces */
	ck_assert_uint_eq(all->npeak, 45);
	ck_assert_uint_eq(all->end_blocks, 14);  /* 10, two pieces, the new mapping, the new block */
	ck_assert_uint_eq(all->nend, 14);
	ck_assert_int_eq(mms_trace_write_tsv(log, all->peak, all->npeak, "wm-all.tsv", NULL), 0);
	ck_assert_int_eq(mms_trace_write_tsv(log, all->end, all->nend, "lk-all.tsv", NULL), 0);
	ck_assert_uint_eq(lines("wm-all.tsv"), 45);
	/* The owner's blocks, freed after the peak, keep its name and their
	 * stacks; the pool's, its name. */
	ck_assert_ptr_nonnull(strstr(slurp("wm-all.tsv"), "\tHOST\tALLOCATION\tweights\t0x402000 (?\?); 0x401000 (?\?)\n"));
	ck_assert_ptr_nonnull(strstr(slurp("wm-all.tsv"), "\t24\tPOOL\tALLOCATION\tpool-a\t0x402000 (?\?); 0x401000 (?\?)\n"));
	for (int i = 0; i < 3; i++) {
		opt.watermark_path = "watermark.tsv";
		opt.leakage_path = "leakage.tsv";
		opt.top = tops[i];
		t = NULL;
		ck_assert_int_eq(mms_trace_run(log, &opt, &t), 0);
		ck_assert_int_eq(t->status, 0);
		ck_assert_int_eq(t->watermark_rc, 0);
		ck_assert_int_eq(t->leakage_rc, 0);
		same_file("watermark.tsv", "wm-all.tsv");
		same_file("leakage.tsv", "lk-all.tsv");
		ck_assert_uint_eq(t->peak_blocks, 45);
		ck_assert_uint_eq(t->end_blocks, 14);
		ck_assert_uint_eq(t->peak_bytes, all->peak_bytes);
		ck_assert_uint_eq(t->end_bytes, all->end_bytes);
		mms_trace_free(t);
		unlink("watermark.tsv");
		unlink("leakage.tsv");
	}
	mms_trace_free(all);
	mms_log_close(log);
	unlink("wm-all.tsv");
	unlink("lk-all.tsv");
}
END_TEST

/* top keeps the first top records of each list, in order, whichever of
 * them were freed after the peak, live at the end or mapping pieces. */
START_TEST(test_top)
{
	static const size_t tops[] = { 1, 2, 3, 5, 10, 13, 14, 15, 30, 44, 45, 46, 1000 };
	mms_log_t *log;
	mms_trace_t *all, *t;

	all = run(many_blocks(), NULL, &log);
	for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++) {
		mms_trace_options_t opt = { .top = tops[i] };
		size_t np = tops[i] < 45 ? tops[i] : 45, ne = tops[i] < 14 ? tops[i] : 14;

		t = NULL;
		ck_assert_int_eq(mms_trace_run(log, &opt, &t), 0);
		ck_assert_uint_eq(t->peak_blocks, 45);
		ck_assert_uint_eq(t->end_blocks, 14);
		ck_assert_uint_eq(t->npeak, np);
		ck_assert_uint_eq(t->nend, ne);
		for (size_t k = 0; k < np; k++)
			same_record(&t->peak[k], &all->peak[k]);
		for (size_t k = 0; k < ne; k++)
			same_record(&t->end[k], &all->end[k]);
		mms_trace_free(t);
	}
	/* The whole list is in the lists' order. */
	for (size_t k = 1; k < all->npeak; k++) {
		const mms_block_t *x = &all->peak[k - 1].b, *y = &all->peak[k].b;

		ck_assert(x->size > y->size ||
			  (x->size == y->size && (x->alloc_event < y->alloc_event ||
						  (x->alloc_event == y->alloc_event && x->addr < y->addr))));
	}
	mms_trace_free(all);
	mms_log_close(log);
}
END_TEST

/* A log of n blocks, two thirds of them of size >= 4096 (97 sizes), the
 * rest small (13 sizes); every other one of the first half freed and
 * their slots taken again by the second half, so that slots are not in
 * the order of allocation; every block live at the end. */
static struct lb *sized_blocks(size_t n)
{
	struct lb *b = one_thread_in(4u << 20);
	uint64_t t = 20;
	size_t i;

	for (i = 0; i < n / 2; i++)
		lb_alloc(b, t++, MMS_ALLOC_MALLOC, 0x10000000 + (uint64_t)i * 0x10000,
			 i % 3 ? 4096 + (uint64_t)(i * 7 % 97) * 64 : 16 + (uint64_t)(i % 13) * 8, 0);
	for (i = 0; i < n / 2; i += 2)
		lb_free(b, t++, MMS_FREE_FREE, 0x10000000 + (uint64_t)i * 0x10000);
	for (i = 0; i < n / 2; i += 2)
		lb_alloc(b, t++, MMS_ALLOC_MALLOC, 0x10000000 + (uint64_t)i * 0x10000,
			 i % 3 ? 4096 + (uint64_t)(i * 11 % 97) * 64 : 16 + (uint64_t)(i % 13) * 8, 0);
	for (i = n / 2; i < n; i++)
		lb_alloc(b, t++, MMS_ALLOC_MALLOC, 0x10000000 + (uint64_t)i * 0x10000,
			 i % 3 ? 4096 + (uint64_t)(i * 5 % 97) * 64 : 16 + (uint64_t)(i % 13) * 8, 0);
	return b;
}

/* The lists' order on a list of few blocks of large sizes, whose sizes
 * the pass ranks (one 64-bit value a block sorted), and on one of more
 * than it ranks (65536: pairs of 16 bytes sorted): every block, largest
 * first, then by allocation event. */
START_TEST(test_order_large)
{
	static const size_t sizes[2] = { 3000, 100000 };
	mms_trace_options_t opt = { .skip = MMS_TRACE_SKIP_PEAK };
	mms_log_t *log;
	mms_trace_t *t;

	for (int k = 0; k < 2; k++) {
		uint64_t bytes = 0;

		t = run(sized_blocks(sizes[k]), &opt, &log);
		ck_assert_uint_eq(t->end_blocks, sizes[k]);
		ck_assert_uint_eq(t->nend, sizes[k]);
		for (size_t i = 0; i < t->nend; i++)
			bytes += t->end[i].b.size;
		ck_assert_uint_eq(bytes, t->end_bytes);
		for (size_t i = 1; i < t->nend; i++) {
			const mms_block_t *x = &t->end[i - 1].b, *y = &t->end[i].b;

			ck_assert_msg(x->size > y->size || (x->size == y->size && x->alloc_event < y->alloc_event),
				      "%zu blocks: block %zu (%llu bytes, event %llu) after (%llu, %llu)", sizes[k], i,
				      (unsigned long long)y->size, (unsigned long long)y->alloc_event,
				      (unsigned long long)x->size, (unsigned long long)x->alloc_event);
		}
		mms_trace_free(t);
		mms_log_close(log);
	}
}
END_TEST

/* Thousands of blocks freed since the peak, some before the log's first
 * step event and some after it, while others are allocated: the trace
 * that holds their slots (walked by a bitmap of the slots) and one of the
 * same pass that keeps copies list the same records, in the lists'
 * order, the first freed saying no step. */
#define HELD_MANY 6000
START_TEST(test_held_many)
{
	struct lb *b = one_thread_in(1u << 20);
	mms_pass_t *pass;
	mms_log_t *log;
	mms_trace_t *t[2];
	uint64_t ns = 100, first_after = 0, last_before = 0, bytes = 0;
	size_t i, j, k;

	for (i = 0; i < HELD_MANY; i++) { /* the last makes the peak */
		lb_alloc(b, ns++, MMS_ALLOC_MALLOC, 0x100000 + (uint64_t)i * 0x100, 16 + (uint64_t)(i * 7 % 5) * 8, 0);
		bytes += 16 + (uint64_t)(i * 7 % 5) * 8;
	}
	for (i = 0; i < HELD_MANY; i++) {
		j = i * 17 % HELD_MANY;
		if (i == 3000)
			lb_event0(b, MMS_TAG_STEP, ns++);
		if (j % 6) /* 5,000 freed */
			lb_free(b, ns++, MMS_FREE_FREE, 0x100000 + (uint64_t)j * 0x100);
		if (i < 3000 && j % 6)
			last_before = 0x100000 + (uint64_t)j * 0x100;
		if (i > 3000 && j % 6 && !first_after)
			first_after = 0x100000 + (uint64_t)j * 0x100;
		if (i % 4 == 3) /* 1,500 allocated meanwhile, smaller */
			lb_alloc(b, ns++, MMS_ALLOC_MALLOC, 0x900000 + (uint64_t)i * 0x100, 8, 0);
	}
	pass = two_traces(b, &log, t);
	for (k = 0; k < 2; k++) {
		ck_assert_int_eq(t[k]->status, 0);
		ck_assert_uint_eq(t[k]->peak_bytes, bytes);
		ck_assert_uint_eq(t[k]->peak_ns, 1000000000ull + 100 + HELD_MANY - 1);
		ck_assert_uint_eq(t[k]->npeak, HELD_MANY);
		ck_assert_uint_eq(t[k]->nend, 1000 + 1500);
	}
	for (i = 0; i < HELD_MANY; i++) {
		const mms_block_t *x = &t[0]->peak[i].b;

		same_record(&t[0]->peak[i], &t[1]->peak[i]);
		if (i)
			ck_assert(t[0]->peak[i - 1].b.size > x->size ||
				  (t[0]->peak[i - 1].b.size == x->size &&
				   t[0]->peak[i - 1].b.alloc_event < x->alloc_event));
		if (x->addr == last_before)
			ck_assert_uint_eq(x->step, 0);
		if (x->addr == first_after)
			ck_assert_uint_eq(x->step, 1);
	}
	/* With top (its first records made as the list is written, from
	 * the held slots): the same first records, the same file as
	 * mms_trace_write_tsv() writes of every record. */
	ck_assert_int_eq(mms_trace_write_tsv(log, t[0]->peak, t[0]->npeak, "wm-all.tsv", NULL), 0);
	for (k = 0; k < 2; k++) {
		mms_trace_options_t opt = { .top = k ? 3000 : 7, .watermark_path = "watermark.tsv" };
		mms_trace_t *top = NULL;

		ck_assert_int_eq(mms_trace_run(log, &opt, &top), 0);
		ck_assert_int_eq(top->status, 0);
		ck_assert_int_eq(top->watermark_rc, 0);
		ck_assert_uint_eq(top->peak_blocks, HELD_MANY);
		ck_assert_uint_eq(top->npeak, opt.top);
		for (i = 0; i < top->npeak; i++)
			same_record(&top->peak[i], &t[0]->peak[i]);
		same_file("watermark.tsv", "wm-all.tsv");
		mms_trace_free(top);
		unlink("watermark.tsv");
	}
	unlink("wm-all.tsv");
	mms_pass_close(pass);
	mms_trace_free(t[0]);
	mms_trace_free(t[1]);
	mms_log_close(log);
}
END_TEST

/* A record of a block freed after the peak says the step it was in as
 * the replay counted steps when it was freed: before the log's first
 * step event, none. */
START_TEST(test_step_at_free)
{
	static const size_t tops[] = { 0, 1, 2 };
	mms_log_t *log;
	mms_trace_t *t;
	struct lb *b = one_thread();

	lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x1000, 100, 0); /* event 1 */
	lb_alloc(b, 21, MMS_ALLOC_MALLOC, 0x2000, 200, 0); /* 2: the peak */
	lb_free(b, 22, MMS_FREE_FREE, 0x1000);
	lb_event0(b, MMS_TAG_STEP, 23);
	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	lb_destroy(b);
	ck_assert_int_eq(mms_log_open(LOG, &log), 0);
	for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++) {
		mms_trace_options_t opt = { .top = tops[i] };

		t = NULL;
		ck_assert_int_eq(mms_trace_run(log, &opt, &t), 0);
		ck_assert_uint_eq(t->peak_blocks, 2);
		ck_assert_uint_eq(t->npeak, tops[i] ? tops[i] : 2);
		ck_assert_uint_eq(t->peak[0].b.addr, 0x2000);
		ck_assert_uint_eq(t->peak[0].b.step, 1); /* live: as the end counts */
		if (t->npeak > 1) {
			ck_assert_uint_eq(t->peak[1].b.addr, 0x1000);
			ck_assert_uint_eq(t->peak[1].b.step, 0);
		}
		mms_trace_free(t);
	}
	mms_log_close(log);
}
END_TEST

/* A list's file follows the overwrite rule of usage_path, and one that
 * cannot be written leaves the lists and the other file as they are. A
 * path for a list not made is refused. */
START_TEST(test_list_files_refused)
{
	mms_trace_options_t opt = { .watermark_path = "watermark.tsv", .leakage_path = "leakage.tsv", .top = 2 };
	mms_log_t *log;
	mms_trace_t *t;
	FILE *f = fopen("watermark.tsv", "w");

	ck_assert_ptr_nonnull(f);
	fputs("mine\n", f);
	fclose(f);
	t = run(many_blocks(), &opt, &log);
	ck_assert_int_eq(t->status, 0);
	ck_assert_int_eq(t->watermark_rc, -EEXIST);
	ck_assert_int_eq(t->leakage_rc, 0);
	ck_assert_str_eq(slurp("watermark.tsv"), "mine\n");
	ck_assert_uint_eq(lines("leakage.tsv"), 14);
	ck_assert_uint_eq(t->npeak, 2);
	ck_assert_uint_eq(t->peak_blocks, 45);
	mms_trace_free(t);
	unlink("leakage.tsv");
	opt.out.overwrite = 1;
	t = NULL;
	ck_assert_int_eq(mms_trace_run(log, &opt, &t), 0);
	ck_assert_int_eq(t->watermark_rc, 0);
	ck_assert_uint_eq(lines("watermark.tsv"), 45);
	mms_trace_free(t);
	opt.skip = MMS_TRACE_SKIP_PEAK;
	t = NULL;
	ck_assert_int_eq(mms_trace_run(log, &opt, &t), MMS_EUSAGE);
	ck_assert_ptr_null(t);
	opt.skip = MMS_TRACE_SKIP_END;
	ck_assert_int_eq(mms_trace_run(log, &opt, &t), MMS_EUSAGE);
	mms_log_close(log);
	unlink("watermark.tsv");
	unlink("leakage.tsv");
}
END_TEST

static Suite *trace_suite(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("trace");

	scratch_add(tc);
	tcase_add_test(tc, test_peak_first);
	tcase_add_test(tc, test_mmap_pieces);
	tcase_add_test(tc, test_mmap_piece_freed_first);
	tcase_add_test(tc, test_held_slots);
	tcase_add_test(tc, test_held_many);
	tcase_add_test(tc, test_skip_lists);
	tcase_add_test(tc, test_kinds);
	tcase_add_test(tc, test_usage_file);
	tcase_add_test(tc, test_usage_same_time);
	tcase_add_test(tc, test_usage_bucket_edges);
	tcase_add_test(tc, test_list_files);
	tcase_add_test(tc, test_top);
	tcase_add_test(tc, test_list_files_refused);
	tcase_add_test(tc, test_step_at_free);
	tcase_add_test(tc, test_order_large);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(trace_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
