/* SPDX-License-Identifier: MIT */
/* check-compare.c: unit tests of compare (replay/analyses/compare.c) through the
 * public API, over small dump CSVs written here: what a launch's bytes
 * are (its thread, nested launches, frees without a size), where a
 * kernel launch's bytes end, the order of the rows, the CSV written, and
 * the messages for malformed files. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msmemscope-replay.h"

static char dir[] = "/tmp/check-compare.XXXXXX";

static const char header[] = "ID,Event,Event Type,Name,Timestamp(ns),Process Id,Thread Id,Device Id,Ptr,Attr,"
			     "Call Stack(Python),Call Stack(C)\n";

/* Writes header + rows to a file in dir; returns its path (static). */
static const char *csv(const char *name, const char *rows)
{
	static char path[2][256];
	static int k;
	FILE *f;

	k ^= 1;
	snprintf(path[k], sizeof(path[k]), "%s/%s", dir, name);
	f = fopen(path[k], "w");
	ck_assert_ptr_nonnull(f);
	fputs(header, f);
	fputs(rows, f);
	ck_assert_int_eq(fclose(f), 0);
	return path[k];
}

static char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* An operator launch's rows; memory rows; a kernel. */
#define OPB(id, tid, name) #id ",OP_LAUNCH,OP_START," name ",1,1," #tid ",host,N/A,,,\n"
#define OPE(id, tid, name) #id ",OP_LAUNCH,OP_END," name ",1,1," #tid ",host,N/A,,,\n"
#define MAL(id, tid, addr, size) #id ",MALLOC,HOST,N/A,1,1," #tid ",host," #addr ",\"{addr:" #addr ",size:" #size "}\",,\n"
#define FRE(id, tid, addr) #id ",FREE,HOST,N/A,1,1," #tid ",host," #addr ",\"{addr:" #addr "}\",,\n"
#define KER(id, tid, name) #id ",KERNEL_LAUNCH,KERNEL_LAUNCH," name ",1,1," #tid ",host,N/A,,,\n"
/* A CUDA kernel's launch on device dev (format 11's dumps). */
#define KERD(id, tid, name, dev) #id ",KERNEL_LAUNCH,KERNEL_LAUNCH," name ",1,1," #tid "," #dev ",N/A,,,\n"

static mms_compare_t *compare(int level, const char *a, const char *b, const mms_compare_row_t **rows, size_t *n,
			      mms_compare_stats_t *st)
{
	mms_compare_error_t err;
	mms_compare_t *c;

	ck_assert_int_eq(mms_compare_open(level, &c), 0);
	ck_assert_msg(mms_compare_add_csv(c, 0, a, &err) == 0, "%s:%llu: %s", a, (unsigned long long)err.line,
		      err.what);
	ck_assert_msg(mms_compare_add_csv(c, 1, b, &err) == 0, "%s:%llu: %s", b, (unsigned long long)err.line,
		      err.what);
	ck_assert_int_eq(mms_compare_align(c, rows, n, st), 0);
	return c;
}

START_TEST(test_launch_bytes)
{
	/* Thread 7's conv allocates 100, frees 30 of it inside a nested
	 * launch (counted in both), while thread 8 allocates 5000 (not
	 * counted): conv +70, pad -30. A free without a size takes its
	 * block's. Thread 8's 5000 bytes, with no launch of its own open,
	 * moved outside the launches, as does b's 9 after its conv. */
	const char *a = csv("a.csv", OPB(1, 7, "conv") MAL(2, 7, 0x10, 100) MAL(3, 7, 0x20, 30) MAL(4, 8, 0x30, 5000)
					     OPB(5, 7, "pad") FRE(6, 7, 0x20) OPE(7, 7, "pad") OPE(8, 7, "conv"));
	const char *b = csv("b.csv", OPB(1, 7, "conv") MAL(2, 7, 0x10, 200) OPE(3, 7, "conv") MAL(4, 7, 0x40, 9));
	const mms_compare_row_t *rows;
	mms_compare_stats_t st;
	mms_compare_t *c;
	size_t n;

	c = compare(MMS_COMPARE_OP, a, b, &rows, &n, &st);
	/* Launches in the order they end: pad, then conv. */
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(rows[0].name, "pad");
	ck_assert_int_eq(rows[0].base, -30);
	ck_assert_uint_eq(rows[0].base_launch, 1);
	ck_assert_uint_eq(rows[0].compare_launch, 0);
	ck_assert_int_eq(rows[0].diff, 30);
	ck_assert_str_eq(rows[1].name, "conv");
	ck_assert_int_eq(rows[1].base, 100);
	ck_assert_int_eq(rows[1].compare, 200);
	ck_assert_int_eq(rows[1].diff, 100);
	ck_assert_uint_eq(st.launches[0], 2);
	ck_assert_uint_eq(st.launches[1], 1);
	ck_assert_int_eq(st.bytes[0], 70);
	ck_assert_int_eq(st.bytes[1], 200);
	ck_assert_uint_eq(st.paired, 1);
	ck_assert_uint_eq(st.only[0], 1);
	ck_assert_uint_eq(st.only[1], 0);
	ck_assert_int_eq(st.outside[0], 5000);
	ck_assert_int_eq(st.outside[1], 9);
	mms_compare_close(c);
}
END_TEST

START_TEST(test_kernel_bytes)
{
	/* k1 runs to the next kernel launch (k2), k2 to the end of its
	 * operator; what follows counts for no kernel. k2 is a CUDA kernel
	 * on device 3: the row says so, as does the CSV's Device Id. */
	const char *a = csv("k.csv", OPB(1, 7, "op") KER(2, 7, "k1") MAL(3, 7, 0x10, 10) KERD(4, 7, "k2", 3)
					     MAL(5, 7, 0x20, 20) OPE(6, 7, "op") MAL(7, 7, 0x30, 40));
	const mms_compare_row_t *rows;
	mms_compare_stats_t st;
	mms_compare_t *c;
	char path[256];
	size_t n;

	c = compare(MMS_COMPARE_KERNEL, a, a, &rows, &n, &st);
	/* After op's end, no kernel's span: 40 bytes outside the launches. */
	ck_assert_int_eq(st.outside[0], 40);
	ck_assert_int_eq(st.outside[1], 40);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(rows[0].name, "k1");
	ck_assert_int_eq(rows[0].base, 10);
	ck_assert_int_eq(rows[0].device, -1);
	ck_assert_str_eq(rows[1].name, "k2");
	ck_assert_int_eq(rows[1].compare, 20);
	ck_assert_int_eq(rows[1].diff, 0);
	ck_assert_int_eq(rows[1].device, 3);
	snprintf(path, sizeof(path), "%s/kd.csv", dir);
	ck_assert_int_eq(mms_compare_write_csv(c, path, NULL), 0);
	ck_assert_str_eq(slurp(path), ",,,Base,Compare\n"
				      "Event,Name,Device Id,Allocated Memory(byte),Allocated Memory(byte),"
				      "Diff Memory(byte)\n"
				      "KERNEL_LAUNCH,k1,host,10,10,0\n"
				      "KERNEL_LAUNCH,k2,3,20,20,0\n");
	mms_compare_close(c);
}
END_TEST

START_TEST(test_rows_and_file)
{
	/* base: a b c d, compare: a x c y z d: b then x at the first gap
	 * (base's first), y and z at the second. */
	const char *a = csv("r1.csv", OPB(1, 1, "a") OPE(2, 1, "a") OPB(3, 1, "b") OPE(4, 1, "b") OPB(5, 1, "c")
					      OPE(6, 1, "c") OPB(7, 1, "d") MAL(8, 1, 0x10, 5) OPE(9, 1, "d"));
	const char *b = csv("r2.csv", OPB(1, 1, "a") OPE(2, 1, "a") OPB(3, 1, "\"x,\"\"y\"\"\"") OPE(4, 1, "x")
					      OPB(5, 1, "c") OPE(6, 1, "c") OPB(7, 1, "y") OPE(8, 1, "y")
						      OPB(9, 1, "z") OPE(10, 1, "z") OPB(11, 1, "d") OPE(12, 1, "d"));
	const mms_compare_row_t *rows;
	char path[256];
	mms_compare_t *c;
	size_t n;

	c = compare(MMS_COMPARE_OP, a, b, &rows, &n, NULL);
	ck_assert_uint_eq(n, 7);
	snprintf(path, sizeof(path), "%s/out.csv", dir);
	ck_assert_int_eq(mms_compare_write_csv(c, path, NULL), 0);
	ck_assert_str_eq(slurp(path), ",,,Base,Compare\n"
				      "Event,Name,Device Id,Allocated Memory(byte),Allocated Memory(byte),"
				      "Diff Memory(byte)\n"
				      "OP_LAUNCH,a,host,0,0,0\n"
				      "OP_LAUNCH,b,host,0,N/A,0\n"
				      "OP_LAUNCH,\"x,\"\"y\"\"\",host,N/A,0,0\n"
				      "OP_LAUNCH,c,host,0,0,0\n"
				      "OP_LAUNCH,y,host,N/A,0,0\n"
				      "OP_LAUNCH,z,host,N/A,0,0\n"
				      "OP_LAUNCH,d,host,5,0,-5\n");
	/* Never over a file without overwrite. */
	ck_assert_int_eq(mms_compare_write_csv(c, path, NULL), -EEXIST);
	ck_assert_int_eq(mms_compare_write_csv(c, path, &(mms_output_options_t){ .overwrite = 1 }), 0);
	unlink(path);
	mms_compare_close(c);
}
END_TEST

/* The message for a malformed file: its line and what. */
static void expect_bad(const char *rows, uint64_t line, const char *what)
{
	mms_compare_error_t err;
	mms_compare_t *c;

	ck_assert_int_eq(mms_compare_open(MMS_COMPARE_OP, &c), 0);
	ck_assert_int_eq(mms_compare_add_csv(c, 0, csv("bad.csv", rows), &err), MMS_ECORRUPT);
	ck_assert_uint_eq(err.line, line);
	ck_assert_msg(strstr(err.what, what), "'%s' does not say '%s'", err.what, what);
	/* The side stays unread: aligning is refused. */
	ck_assert_uint_eq(mms_compare_launches(c, 0), 0);
	mms_compare_close(c);
}

START_TEST(test_bad_files)
{
	mms_compare_error_t err;
	mms_compare_t *c;

	expect_bad(OPB(1, 1, "a") "2,OP_LAUNCH,OP_END\n", 3, "3 fields; the header has 12");
	expect_bad(OPB(2, 1, "a") OPE(1, 1, "a"), 3, "ID 1 after ID 2");
	expect_bad(OPB(1, 1, "a") "2,MALLOC,HOST,N/A,1,1,1,host,0x10,\"{size:x}\",,\n", 3, "size in Attr");
	expect_bad("1,OP_LAUNCH,OP_START,\"a\nb,1,1,1,host,N/A,,,\n", 2, "ends inside a quoted field");
	expect_bad("1,OP_LAUNCH,OP_START,a\"b,1,1,1,host,N/A,,,\n", 2, "a quote inside a field");
	/* Not a dump at all. */
	ck_assert_int_eq(mms_compare_open(MMS_COMPARE_OP, &c), 0);
	{
		char path[256];
		FILE *f;

		snprintf(path, sizeof(path), "%s/notdump.csv", dir);
		f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs("a,b,c\n1,2,3\n", f);
		fclose(f);
		ck_assert_int_eq(mms_compare_add_csv(c, 0, path, &err), MMS_ECORRUPT);
		ck_assert_uint_eq(err.line, 1);
		ck_assert_ptr_nonnull(strstr(err.what, "no 'ID' column"));
		snprintf(path, sizeof(path), "%s/missing.csv", dir);
		ck_assert_int_eq(mms_compare_add_csv(c, 0, path, &err), -ENOENT);
	}
	ck_assert_int_eq(mms_compare_align(c, &(const mms_compare_row_t *){ NULL }, &(size_t){ 0 }, NULL),
			 MMS_EUSAGE);
	mms_compare_close(c);
}
END_TEST

static Suite *compare_suite(void)
{
	Suite *s = suite_create("compare");
	TCase *tc = tcase_create("compare");

	tcase_add_test(tc, test_launch_bytes);
	tcase_add_test(tc, test_kernel_bytes);
	tcase_add_test(tc, test_rows_and_file);
	tcase_add_test(tc, test_bad_files);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(compare_suite());
	char cmd[64];
	int failed;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 99;
	}
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (!failed && system(cmd))
		failed = 1;
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
