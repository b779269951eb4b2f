/* SPDX-License-Identifier: MIT */
/* scratch.c: the test case's folder and each test's inside it (scratch.h). */
#define _GNU_SOURCE /* program_invocation_short_name */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scratch.h"

static char case_dir[256], test_dir[300];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) && errno != ENOENT)
		fprintf(stderr, "%s: cannot remove %s: %s\n", program_invocation_short_name, path, strerror(errno));
	return 0; /* remove what can be */
}

/* Removes dir and all it holds (links not followed). */
static void remove_tree(const char *dir)
{
	if (dir[0])
		nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* In the runner's process, before the case's first test. */
static void case_setup(void)
{
	const char *name = program_invocation_short_name;

	/* Under libtool's wrapper the program may be lt-NAME. */
	if (!strncmp(name, "lt-", 3))
		name += 3;
	snprintf(case_dir, sizeof(case_dir), "/tmp/%s.XXXXXX", name);
	ck_assert_ptr_nonnull(mkdtemp(case_dir));
}

/* In the runner's process, after the case's last test, failed or not. */
static void case_teardown(void)
{
	if (chdir("/") == 0)
		remove_tree(case_dir);
	case_dir[0] = '\0';
}

/* In the test's process, before it. */
static void test_setup(void)
{
	snprintf(test_dir, sizeof(test_dir), "%s/test.XXXXXX", case_dir);
	ck_assert_ptr_nonnull(mkdtemp(test_dir));
	ck_assert_int_eq(chdir(test_dir), 0);
}

/* In the test's process, after it when it passed. */
static void test_teardown(void)
{
	if (chdir("/") == 0)
		remove_tree(test_dir);
}

void scratch_add(TCase *tc)
{
	tcase_add_unchecked_fixture(tc, case_setup, case_teardown);
	tcase_add_checked_fixture(tc, test_setup, test_teardown);
}

const char *scratch_dir(void)
{
	return test_dir;
}
