/* SPDX-License-Identifier: MIT */
/* check-trace.c: unit tests of the watermark, usage and leakage pass
 * (replay/analyses/trace.c) over synthetic logs: the first moment of the peak,
 * blocks and mapping pieces freed after it, kinds, and the usage file. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logbuild.h"
#include "msmemscope-replay.h"

#define LOG "t.mms"
#define CS 4096u

static char tmpdir[] = "/tmp/check-trace.XXXXXX";

static void dir_setup(void)
{
	strcpy(tmpdir, "/tmp/check-trace.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	ck_assert_int_eq(chdir(tmpdir), 0);
}

static void dir_teardown(void)
{
	unlink(LOG);
	unlink("usage.tsv");
	if (chdir("/") == 0)
		rmdir(tmpdir);
}

/* A one-thread log with its SEGMENT, THREAD and SYSTEM init (event 0). */
static struct lb *one_thread(void)
{
	struct lb *b = lb_new(CS);

	lb_chunk(b);
	lb_segment(b, 0, 10);
	lb_thread(b, 10, 0, 1000);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_INIT, 11);
	return b;
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

/* usage.tsv: one row per change, or the highest of each time bucket
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

static Suite *trace_suite(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("trace");

	tcase_add_checked_fixture(tc, dir_setup, dir_teardown);
	tcase_add_test(tc, test_peak_first);
	tcase_add_test(tc, test_mmap_pieces);
	tcase_add_test(tc, test_skip_lists);
	tcase_add_test(tc, test_kinds);
	tcase_add_test(tc, test_usage_file);
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
