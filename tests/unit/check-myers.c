/* SPDX-License-Identifier: MIT */
/* check-myers.c: unit tests of the Myers alignment (replay/analyses/myers.c) that
 * compare uses: valid pairings always, optimal ones (a longest common
 * subsequence, checked by dynamic programming) without a cost bound,
 * hand-made cases, and long sequences with few edits (searches bounded in cost). */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "myers-int.h"

/* Checks that match pairs equal ids in increasing order; returns the
 * number of pairs. */
static size_t check_valid(const uint32_t *a, size_t n, const uint32_t *b, size_t m, const size_t *match)
{
	size_t i, pairs = 0, last = SIZE_MAX;

	for (i = 0; i < n; i++) {
		if (match[i] == SIZE_MAX)
			continue;
		ck_assert_uint_lt(match[i], m);
		ck_assert_uint_eq(a[i], b[match[i]]);
		if (last != SIZE_MAX)
			ck_assert_uint_gt(match[i], last);
		last = match[i];
		pairs++;
	}
	return pairs;
}

/* Length of a longest common subsequence, by dynamic programming. */
static size_t lcs_len(const uint32_t *a, size_t n, const uint32_t *b, size_t m)
{
	size_t *row = calloc(m + 1, sizeof(*row)), i, j, diag, up, r;

	ck_assert_ptr_nonnull(row);
	for (i = 1; i <= n; i++) {
		diag = 0;
		for (j = 1; j <= m; j++) {
			up = row[j];
			row[j] = a[i - 1] == b[j - 1] ? diag + 1 : (row[j - 1] > up ? row[j - 1] : up);
			diag = up;
		}
	}
	r = row[m];
	free(row);
	return r;
}

static size_t align(const uint32_t *a, size_t n, const uint32_t *b, size_t m, size_t *match, size_t max_cost)
{
	ck_assert_int_eq(mms__myers(a, n, b, m, match, max_cost), 0);
	return check_valid(a, n, b, m, match);
}

START_TEST(test_cases)
{
	/* Paper's example: ABCABBA against CBABAC, LCS 4. */
	static const uint32_t a[] = { 1, 2, 3, 1, 2, 2, 1 }, b[] = { 3, 2, 1, 2, 1, 3 };
	/* One launch more on one side, one renamed. */
	static const uint32_t c[] = { 10, 11, 12, 13, 14 }, d[] = { 10, 11, 99, 12, 13, 15 };
	size_t match[8];

	ck_assert_uint_eq(align(a, 7, b, 6, match, 0), 4);
	ck_assert_uint_eq(align(c, 5, d, 6, match, 0), 4);
	ck_assert_uint_eq(match[0], 0);
	ck_assert_uint_eq(match[1], 1);
	ck_assert_uint_eq(match[2], 3);
	ck_assert_uint_eq(match[3], 4);
	ck_assert_uint_eq(match[4], SIZE_MAX);
	/* Empty sides, identical sides, nothing in common. */
	ck_assert_uint_eq(align(c, 5, d, 0, match, 0), 0);
	ck_assert_uint_eq(align(c, 0, d, 6, match, 0), 0);
	ck_assert_uint_eq(align(c, 5, c, 5, match, 0), 5);
	ck_assert_uint_eq(align(a, 7, d, 6, match, 0), 0);
}
END_TEST

START_TEST(test_random_optimal)
{
	static uint32_t a[160], b[160];
	size_t match[160], n, m, i, round;
	unsigned seed = 12345;

	for (round = 0; round < 3000; round++) {
		uint32_t alphabet = 1 + (uint32_t)(rand_r(&seed) % 6);

		n = (size_t)rand_r(&seed) % (round < 2000 ? 24 : 160);
		m = (size_t)rand_r(&seed) % (round < 2000 ? 24 : 160);
		for (i = 0; i < n; i++)
			a[i] = (uint32_t)rand_r(&seed) % alphabet;
		/* b: a with edits half of the time, else random. */
		if (round & 1) {
			for (i = 0; i < m; i++)
				b[i] = i < n && rand_r(&seed) % 4 ? a[i] : (uint32_t)rand_r(&seed) % alphabet;
		} else {
			for (i = 0; i < m; i++)
				b[i] = (uint32_t)rand_r(&seed) % alphabet;
		}
		ck_assert_uint_eq(align(a, n, b, m, match, 0), lcs_len(a, n, b, m));
		/* A cost bound keeps the pairing valid, if not optimal. */
		align(a, n, b, m, match, 1 + round % 3);
	}
}
END_TEST

START_TEST(test_long_few_edits)
{
	size_t n = 200000, m = n + 3, i, j, *match = malloc(n * sizeof(*match));
	uint32_t *a = malloc(n * sizeof(*a)), *b = malloc(m * sizeof(*b));
	ck_assert_ptr_nonnull(match);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	/* A repeating pattern of 7 names (like the layers of a model),
	 * then b inserts 5 launches and drops 2. */
	for (i = 0; i < n; i++)
		a[i] = (uint32_t)(i % 7);
	for (i = j = 0; i < n; i++) {
		if (i == 1000 || i == 150000)
			continue;
		if (i == 50000 || i == 50001 || i == 120000 || i == 199999 || i == 3)
			b[j++] = 100;
		b[j++] = a[i];
	}
	ck_assert_uint_eq(j, m);
	/* O((N+M)D) with D = 7. Not timed (the machines are shared): a
	 * search bounded to 16 edits, which D = 7 never reaches, must find
	 * the same optimal pairing as the unbounded one. */
	ck_assert_uint_eq(align(a, n, b, m, match, 0), n - 2);
	ck_assert_uint_eq(align(a, n, b, m, match, 16), n - 2);
	/* Nothing in common at all: the bound keeps it quick and valid. */
	for (i = 0; i < m; i++)
		b[i] = 1000 + (uint32_t)i;
	ck_assert_uint_eq(align(a, 20000, b, 20000, match, 256), 0);
	free(a);
	free(b);
	free(match);
}
END_TEST

static Suite *myers_suite(void)
{
	Suite *s = suite_create("myers");
	TCase *tc = tcase_create("myers");

	tcase_add_test(tc, test_cases);
	tcase_add_test(tc, test_random_optimal);
	tcase_add_test(tc, test_long_few_edits);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(myers_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
