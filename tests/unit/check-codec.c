/* SPDX-License-Identifier: MIT */
/* check-codec.c: unit tests of format.h's varint, zigzag and string codec
 * and CRC-64/XZ, and of the replay library's hash map, interval set,
 * radix sort of keyed pairs, decimal writer, and fast decoders of the heap's
 * records. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc64-clmul.h"
#include "decimal-int.h"
#include "decode-int.h"
#include "format.h"
#include "intervals-int.h"
#include "map-int.h"
#include "slotmap-int.h"
#include "table-int.h"
#include "sort-int.h"

/* mms__dec() and mms__hex() write what printf's %llu and 0x%llx do:
 * every power of ten and its neighbours, every power of two less one, and
 * pseudo-random values of every width. */
START_TEST(test_decimal)
{
	uint64_t vals[300], x = 88172645463325252ull, p;
	char buf[24], ref[24];
	size_t n = 0, i;
	unsigned len;

	for (p = 1;; p *= 10) {
		vals[n++] = p - 1;
		vals[n++] = p;
		vals[n++] = p + 1;
		if (p > UINT64_MAX / 10)
			break;
	}
	vals[n++] = UINT64_MAX;
	for (i = 0; i < 64; i++)
		vals[n++] = (2ull << i) - 1;
	while (n < sizeof(vals) / sizeof(vals[0])) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		vals[n++] = x >> (x % 64);
	}
	for (i = 0; i < n; i++) {
		len = mms__dec(buf, vals[i]);
		buf[len] = 0;
		snprintf(ref, sizeof(ref), "%llu", (unsigned long long)vals[i]);
		ck_assert_str_eq(buf, ref);
		len = mms__hex(buf, vals[i]);
		buf[len] = 0;
		snprintf(ref, sizeof(ref), "0x%llx", (unsigned long long)vals[i]);
		ck_assert_str_eq(buf, ref);
	}
	/* The 8 zero-padded digits of mms__dec8() (every value below 10^8
	 * was compared when it was written; here a stride of them and the
	 * last). */
	for (x = 0; x<100000000; x = x + 9973> 99999999 && x < 99999999 ? 99999999 : x + 9973) {
		mms__dec8(buf, (uint32_t)x);
		buf[8] = 0;
		snprintf(ref, sizeof(ref), "%08u", (unsigned)x);
		ck_assert_str_eq(buf, ref);
	}
}
END_TEST

START_TEST(test_varint_roundtrip)
{
	static const uint64_t vals[] = { 0, 1, 127, 128, 255, 300, 16383, 16384, (1ull << 32) - 1, 1ull << 32,
					 (1ull << 56) + 3, 1ull << 63, UINT64_MAX - 1, UINT64_MAX };
	static const size_t lens[] = { 1, 1, 1, 2, 2, 2, 2, 3, 5, 5, 9, 10, 10, 10 };
	uint8_t buf[16];
	const uint8_t *p;
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint8_t *end = mms_put_u(buf, vals[i]);

		ck_assert_uint_eq((size_t)(end - buf), lens[i]);
		p = buf;
		ck_assert_int_eq(mms_get_u(&p, end, &v), 0);
		ck_assert_uint_eq(v, vals[i]);
		ck_assert_ptr_eq(p, end);
	}
}
END_TEST

START_TEST(test_varint_truncated)
{
	uint8_t buf[16];
	uint8_t *end = mms_put_u(buf, UINT64_MAX);
	const uint8_t *p;
	uint64_t v = 77;
	size_t cut;

	/* Every proper prefix of a varint is cut: -1, nothing consumed. */
	for (cut = 0; cut < (size_t)(end - buf); cut++) {
		p = buf;
		ck_assert_int_eq(mms_get_u(&p, buf + cut, &v), -1);
		ck_assert_ptr_eq(p, buf);
		ck_assert_uint_eq(v, 77);
	}
}
END_TEST

START_TEST(test_varint_overlong)
{
	uint8_t buf[16];
	const uint8_t *p = buf;
	uint64_t v;

	/* Eleven bytes with continuation bits: longer than any 64-bit value. */
	memset(buf, 0x80, 11);
	buf[11] = 0x01;
	ck_assert_int_eq(mms_get_u(&p, buf + 12, &v), -1);
	ck_assert_ptr_eq(p, buf);
	/* A padded but ten-byte encoding of 1 still decodes. */
	memset(buf, 0x80, 9);
	buf[0] = 0x81;
	buf[9] = 0x00;
	p = buf;
	ck_assert_int_eq(mms_get_u(&p, buf + 10, &v), 0);
	ck_assert_uint_eq(v, 1);
}
END_TEST

START_TEST(test_zigzag)
{
	static const int64_t vals[] = { 0, -1, 1, -2, 2, 63, -64, INT64_MAX, INT64_MIN, INT64_MIN + 1 };
	size_t i;

	ck_assert_uint_eq(mms_zigzag(0), 0);
	ck_assert_uint_eq(mms_zigzag(-1), 1);
	ck_assert_uint_eq(mms_zigzag(1), 2);
	ck_assert_uint_eq(mms_zigzag(INT64_MIN), UINT64_MAX);
	ck_assert_uint_eq(mms_zigzag(INT64_MAX), UINT64_MAX - 1);
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		ck_assert_int_eq(mms_unzigzag(mms_zigzag(vals[i])), vals[i]);
	/* Address deltas wrap modulo 2^64 both ways. */
	ck_assert_uint_eq(0x1000 + (uint64_t)mms_unzigzag(mms_zigzag((int64_t)(0x10ull - 0x1000ull))), 0x10);
}
END_TEST

START_TEST(test_strings)
{
	static uint8_t buf[MMS_MAX_STRING + 64];
	static char big[MMS_MAX_STRING + 10];
	const uint8_t *p;
	const char *s;
	uint64_t len;
	uint8_t *end;

	end = mms_put_s(buf, "hello", 5);
	p = buf;
	ck_assert_int_eq(mms_get_s(&p, end, &s, &len), 0);
	ck_assert_uint_eq(len, 5);
	ck_assert_int_eq(memcmp(s, "hello", 5), 0);
	ck_assert_ptr_eq(p, end);

	end = mms_put_s(buf, "", 0);
	p = buf;
	ck_assert_int_eq(mms_get_s(&p, end, &s, &len), 0);
	ck_assert_uint_eq(len, 0);

	/* Longer strings are truncated by the writer. */
	memset(big, 'x', sizeof(big));
	end = mms_put_s(buf, big, sizeof(big));
	p = buf;
	ck_assert_int_eq(mms_get_s(&p, end, &s, &len), 0);
	ck_assert_uint_eq(len, MMS_MAX_STRING);

	/* A length running past the end, or over the maximum, is corrupt. */
	end = mms_put_s(buf, "hello", 5);
	p = buf;
	ck_assert_int_eq(mms_get_s(&p, end - 1, &s, &len), -1);
	end = mms_put_u(buf, MMS_MAX_STRING + 1);
	p = buf;
	ck_assert_int_eq(mms_get_s(&p, buf + sizeof(buf), &s, &len), -1);
}
END_TEST

START_TEST(test_map)
{
	enum { N = 20000 };
	struct mms__map m;
	uint64_t *v, out;
	int isnew, i;

	mms__map_init(&m);
	ck_assert_ptr_null(mms__map_get(&m, 5));
	ck_assert_int_eq(mms__map_del(&m, 5, NULL), 0);
	/* Keys that share low bits, like heap addresses. */
	for (i = 0; i < N; i++) {
		v = mms__map_put(&m, 0x7f0000000000ull + (uint64_t)i * 64, &isnew);
		ck_assert_ptr_nonnull(v);
		ck_assert_int_eq(isnew, 1);
		*v = (uint64_t)i;
	}
	ck_assert_uint_eq(m.count, N);
	v = mms__map_put(&m, 0x7f0000000000ull, &isnew);
	ck_assert_int_eq(isnew, 0);
	ck_assert_uint_eq(*v, 0);
	/* Delete every other key, then check all lookups. */
	for (i = 0; i < N; i += 2) {
		ck_assert_int_eq(mms__map_del(&m, 0x7f0000000000ull + (uint64_t)i * 64, &out), 1);
		ck_assert_uint_eq(out, (uint64_t)i);
	}
	ck_assert_uint_eq(m.count, N / 2);
	for (i = 0; i < N; i++) {
		v = mms__map_get(&m, 0x7f0000000000ull + (uint64_t)i * 64);
		if (i % 2)
			ck_assert(v && *v == (uint64_t)i);
		else
			ck_assert_ptr_null(v);
	}
	/* Any 64-bit key works, 0 and all-ones included. */
	ck_assert_ptr_nonnull(mms__map_put(&m, 0, NULL));
	ck_assert_ptr_nonnull(mms__map_put(&m, UINT64_MAX, NULL));
	ck_assert_ptr_nonnull(mms__map_get(&m, 0));
	ck_assert_int_eq(mms__map_del(&m, UINT64_MAX, NULL), 1);
	ck_assert_ptr_null(mms__map_get(&m, UINT64_MAX));
	mms__map_free(&m);
}
END_TEST

/* The inverse of the slot map's multiplier mod 2^64 (Newton's iteration):
 * key + inverse hashes one more, so its top 32 bits are key's. */
static uint64_t phi_inverse(void)
{
	uint64_t phi = 0x9e3779b97f4a7c15ull, x = phi;

	for (int i = 0; i < 6; i++)
		x *= 2 - phi * x;
	return x;
}

START_TEST(test_slotmap)
{
	enum { N = 20000, STRIDE = 64 };
	struct rec {
		uint64_t addr, pad[STRIDE / 8 - 1];
	} *recs = calloc(2 * N, sizeof(*recs));
	struct mms__slotmap m;
	struct mms__map ref;
	struct mms__slotmap_ent *e;
	uint64_t x = 88172645463325252ull, key, *v, inv = phi_inverse();
	uint32_t hash;
	int i, live;

	ck_assert_ptr_nonnull(recs);
	ck_assert_uint_eq(0x9e3779b97f4a7c15ull * inv, 1);
	mms__slotmap_init(&m);
	mms__map_init(&ref);
	ck_assert_int_eq(mms__slotmap_get(&m, 5, recs, STRIDE), -1);
	ck_assert_int_eq(mms__slotmap_del(&m, 5, recs, STRIDE), -1);
	/* Heap-like keys (sharing low bits) in random order, half of them
	 * with a twin whose 32 hash bits are the same, put and removed at
	 * random against the generic map. */
	for (i = 0; i < 8 * N; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		key = 0x7f0000000000ull + (x % N) * 64;
		if (x >> 63)
			key += inv;
		v = mms__map_get(&ref, key);
		if (v) {
			ck_assert_int_eq(mms__slotmap_del(&m, key, recs, STRIDE), (int64_t)*v);
			ck_assert_int_eq(mms__map_del(&ref, key, NULL), 1);
			continue;
		}
		/* The key's record (slot = its index among 2N), then the entry. */
		hash = mms__slotmap_hash(key);
		ck_assert_int_eq(mms__slotmap_reserve(&m), 0);
		e = mms__slotmap_find(&m, key, hash, recs, STRIDE);
		ck_assert_uint_eq(e->slot1, 0);
		live = (int)((x % N) * 2 + (x >> 63));
		recs[live].addr = key;
		mms__slotmap_set(&m, e, hash, (uint32_t)live);
		v = mms__map_put(&ref, key, NULL);
		ck_assert_ptr_nonnull(v);
		*v = (uint64_t)live;
	}
	ck_assert_uint_eq(m.count, ref.count);
	for (i = 0; i < 2 * N; i++) {
		key = 0x7f0000000000ull + (uint64_t)(i / 2) * 64 + (i % 2 ? inv : 0);
		v = mms__map_get(&ref, key);
		ck_assert_int_eq(mms__slotmap_get(&m, key, recs, STRIDE), v ? (int64_t)*v : -1);
		ck_assert_uint_eq(mms__slotmap_hash(key), mms__slotmap_hash(0x7f0000000000ull + (uint64_t)(i / 2) * 64));
	}
	/* Shrunk to the few keys left, the old array given over. */
	for (i = 0; i < 2 * N; i++) {
		key = 0x7f0000000000ull + (uint64_t)(i / 2) * 64 + (i % 2 ? inv : 0);
		if (i % 16 && mms__map_get(&ref, key)) {
			ck_assert_int_ge(mms__slotmap_del(&m, key, recs, STRIDE), 0);
			ck_assert_int_eq(mms__map_del(&ref, key, NULL), 1);
		}
	}
	{
		size_t old_size = (m.mask + 1) * sizeof(*m.ents), got = 0;
		void *old = mms__slotmap_shrink(&m, old_size + 1, &got);

		ck_assert_ptr_null(old);
		old = mms__slotmap_shrink(&m, old_size, &got);
		ck_assert_ptr_nonnull(old);
		ck_assert_uint_eq(got, old_size);
		mms__table_free(old, got);
		ck_assert_uint_lt((m.mask + 1) * sizeof(*m.ents), old_size);
		ck_assert_uint_eq(m.count, ref.count);
		ck_assert_uint_ge(m.room, m.count);
	}
	for (i = 0; i < 2 * N; i++) {
		key = 0x7f0000000000ull + (uint64_t)(i / 2) * 64 + (i % 2 ? inv : 0);
		v = mms__map_get(&ref, key);
		ck_assert_int_eq(mms__slotmap_get(&m, key, recs, STRIDE), v ? (int64_t)*v : -1);
	}
	/* A hint sizes the first array at once. */
	mms__slotmap_free(&m);
	m.hint = 100000;
	ck_assert_int_eq(mms__slotmap_reserve(&m), 0);
	ck_assert_uint_ge(m.room, 100000);
	mms__slotmap_free(&m);
	mms__map_free(&ref);
	free(recs);
}
END_TEST

static uint64_t iv_total(const struct mms__ivset *s)
{
	uint64_t t = 0;
	size_t i;

	for (i = 0; i < s->n; i++) {
		ck_assert_uint_lt(s->iv[i].lo, s->iv[i].hi);
		if (i)
			ck_assert_uint_le(s->iv[i - 1].hi, s->iv[i].lo);
		t += s->iv[i].hi - s->iv[i].lo;
	}
	return t;
}

START_TEST(test_intervals)
{
	struct mms__ivset s = { 0 };
	uint64_t r;

	ck_assert_int_eq(mms__ivset_add(&s, 100, 200, &r), 0);
	ck_assert_int_eq(mms__ivset_add(&s, 300, 400, &r), 0);
	ck_assert_int_eq(mms__ivset_add(&s, 200, 300, &r), 0); /* adjacent: stays apart */
	ck_assert_uint_eq(r, 0);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_int_eq(mms__ivset_remove(&s, 150, 160, &r), 0); /* split */
	ck_assert_uint_eq(r, 10);
	ck_assert_uint_eq(s.n, 4);
	ck_assert_int_eq(mms__ivset_remove(&s, 0, 50, &r), 0); /* nothing there */
	ck_assert_uint_eq(r, 0);
	ck_assert_int_eq(mms__ivset_remove(&s, 155, 350, &r), 0); /* spans three */
	ck_assert_uint_eq(r, 40 + 100 + 50);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_uint_eq(iv_total(&s), 50 + 50);
	ck_assert_int_eq(mms__ivset_add(&s, 120, 380, &r), 0); /* replaces overlap */
	ck_assert_uint_eq(r, 30 + 30);
	ck_assert_uint_eq(iv_total(&s), 20 + 260 + 20);
	ck_assert_int_eq(mms__ivset_remove(&s, 0, UINT64_MAX, &r), 0);
	ck_assert_uint_eq(r, 300);
	ck_assert_uint_eq(s.n, 0);
	mms__ivset_free(&s);
}
END_TEST

/* CRC-64/XZ against its catalogue check value ("123456789", as `xz
 * --check=crc64` gives it) and values computed bit by bit, at every
 * alignment and split: the tables (slicing by 8) and, on x86-64, the
 * recorder's carry-less multiplication (hooks/crc64-clmul.h). */
static uint64_t crc64_bitwise(const uint8_t *p, size_t n)
{
	uint64_t c = ~0ull;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xC96C5795D7870F42ull : c >> 1;
	}
	return ~c;
}

/* The order qsort() gives pairs by key, then by index: what a stable
 * sort of pairs given in index order must give. */
static int pair_cmp(const void *a, const void *b)
{
	const struct mms__keyed *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->ix < y->ix ? -1 : x->ix > y->ix;
}

/* mms__sort_keyed() against qsort() over keys of every shape: none, one,
 * all equal, few distinct (ties, whose order must be kept), narrow and
 * full 64-bit, sorted and reversed. */
START_TEST(test_sort_keyed)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 255, 256, 257, 5000 };
	struct mms__keyed *v, *w;
	uint64_t x = 88172645463325252ull;
	size_t si, i, n;
	int shape;

	v = malloc(5000 * sizeof(*v));
	w = malloc(5000 * sizeof(*w));
	ck_assert(v && w);
	for (shape = 0; shape < 7; shape++) {
		for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
			n = sizes[si];
			for (i = 0; i < n; i++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				v[i].ix = i;
				v[i].key = shape == 0 ? 42 : shape == 1 ? x % 7 : shape == 2 ? x & 0xffff :
					   shape == 3 ? x : shape == 4 ? i : shape == 5 ? UINT64_MAX - i :
					   x >> 40 << 40 | (x & 3);
			}
			memcpy(w, v, n * sizeof(*v));
			qsort(w, n, sizeof(*w), pair_cmp);
			ck_assert_int_eq(mms__sort_keyed(v, n), 0);
			for (i = 0; i < n; i++) {
				ck_assert_uint_eq(v[i].key, w[i].key);
				ck_assert_uint_eq(v[i].ix, w[i].ix);
			}
		}
	}
	free(v);
	free(w);
}
END_TEST

/* mms__sort_keyed() on many pairs shaped like the lists of blocks'
 * keys (a size's rank over an event: the top bytes the same in most, many
 * of one size) and with runs of equal keys longer than its insertion
 * sort takes, against qsort(); pairs not given in the order of their
 * index end in it too. */
START_TEST(test_sort_keyed_large)
{
	enum { N = 200000 };
	static const uint64_t sizes[] = { 16, 24, 32, 48, 64, 4096, 8388608 };
	struct mms__keyed *v, *w;
	uint64_t x = 88172645463325252ull;
	size_t i;
	int shape;

	v = malloc(N * sizeof(*v));
	w = malloc(N * sizeof(*w));
	ck_assert(v && w);
	for (shape = 0; shape < 3; shape++) {
		for (i = 0; i < N; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			v[i].ix = shape == 2 ? N - i : i;
			v[i].key = shape == 0 ? (8388608 - sizes[x % 7]) << 23 | (x >> 8) % 6000000 :
				   (x % 3) << 40;
		}
		memcpy(w, v, N * sizeof(*v));
		qsort(w, N, sizeof(*w), pair_cmp);
		ck_assert_int_eq(mms__sort_keyed(v, N), 0);
		/* One assertion for the lot: Check reports each to its parent. */
		for (i = 0; i < N && v[i].key == w[i].key && v[i].ix == w[i].ix; i++)
			;
		ck_assert_msg(i == N, "shape %d: pair %zu is (%llu, %zu), qsort() has (%llu, %zu)", shape, i,
			      i < N ? (unsigned long long)v[i].key : 0, i < N ? v[i].ix : 0,
			      i < N ? (unsigned long long)w[i].key : 0, i < N ? w[i].ix : 0);
	}
	free(v);
	free(w);
}
END_TEST

/* mms__sort_bits() against qsort() of (the bits sorted by, the value's
 * place before): stable, the bits outside lo..hi - 1 carried along, on
 * fields that are not whole digits, all of 64 bits, one bit, fields
 * every value has the same, few distinct values, a digit every value
 * has the same between two that differ (the pass it skips counts the
 * next digit itself), and n from 0. */
static unsigned bits_lo, bits_hi;

static uint64_t bits_field(uint64_t v)
{
	return bits_hi - bits_lo == 64 ? v : v >> bits_lo & (((uint64_t)1 << (bits_hi - bits_lo)) - 1);
}

static int bits_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	uint64_t fx = bits_field(x[0]), fy = bits_field(y[0]);

	if (fx != fy)
		return fx < fy ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

START_TEST(test_sort_bits)
{
	static const unsigned fields[][2] = { { 0, 64 }, { 24, 55 }, { 3, 4 }, { 10, 21 }, { 0, 11 }, { 40, 64 } };
	static const size_t sizes[] = { 0, 1, 2, 100, 5000, 70000 };
	uint64_t *v, *tmp, *w, x = 88172645463325252ull;
	size_t fi, si, i, n;
	int shape;

	v = malloc(70000 * sizeof(*v));
	tmp = malloc(70000 * sizeof(*tmp));
	w = malloc(2 * 70000 * sizeof(*w));
	ck_assert(v && tmp && w);
	for (fi = 0; fi < sizeof(fields) / sizeof(fields[0]); fi++) {
		bits_lo = fields[fi][0];
		bits_hi = fields[fi][1];
		for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
			for (shape = 0; shape < 4; shape++) {
				n = sizes[si];
				for (i = 0; i < n; i++) {
					x ^= x << 13;
					x ^= x >> 7;
					x ^= x << 17;
					/* random; few distinct in the field; the field the
					 * same; the field's second digit (bits 11 to 21 of
					 * it) the same */
					v[i] = shape == 0           ? x
					       : shape == 1         ? (x % 5) << bits_lo | (x >> 59)
					       : shape == 2         ? ((uint64_t)7 << bits_lo) ^ (x & 0x7)
					       : bits_lo + 22 <= 64 ? x & ~((uint64_t)0x7ff << (bits_lo + 11))
								    : x;
					w[2 * i] = v[i];
					w[2 * i + 1] = i;
				}
				qsort(w, n, 2 * sizeof(*w), bits_cmp);
				mms__sort_bits(v, tmp, n, bits_lo, bits_hi);
				for (i = 0; i < n && v[i] == w[2 * i]; i++)
					;
				ck_assert_msg(i == n, "bits %u..%u, n %zu, shape %d: value %zu differs", bits_lo,
					      bits_hi, n, shape, i);
			}
		}
	}
	free(v);
	free(tmp);
	free(w);
}
END_TEST

/* The heap's fast decoders (mms__decode_heap(), the open's
 * mms__skim_events()) read what mms__decode() reads, or leave the record
 * to it: records of the four heap tags, their fields (stamp delta,
 * address delta, size, stack, runtime) of every varint length from 1 to
 * 10 bytes, in one buffer. */
static uint64_t len_value(unsigned w, int most)
{
	if (most)
		return w == 10 ? UINT64_MAX : ((uint64_t)1 << (7 * w)) - 1;
	return w == 1 ? 0 : (uint64_t)1 << (7 * (w - 1));
}

START_TEST(test_heap_decoders)
{
	static const uint8_t tags[] = { MMS_TAG_ALLOC | MMS_ALLOC_MALLOC,
					MMS_TAG_FREE | MMS_FREE_FREE,
					MMS_TAG_ALLOC_RT | MMS_ALLOC_CALLOC,
					MMS_TAG_FREE_STACK | MMS_FREE_REALLOC,
					MMS_TAG_ALLOC | MMS_ALLOC_REALLOC,
					MMS_TAG_ALLOC_CXX | (MMS_ALLOC_NEW_ARRAY & 7),
					MMS_TAG_FREE | MMS_FREE_DELETE,
					MMS_TAG_ALLOC_CXX_RT | (MMS_ALLOC_NEW & 7),
					MMS_TAG_FREE_STACK | MMS_FREE_DELETE_ARRAY };
	static uint8_t buf[1 << 15];
	static struct mms__rec ref[600];
	uint64_t vals[20], stamp = 0;
	struct mms__cursor c0 = { .base = buf, .p = buf }, c;
	struct mms__rec r;
	mms_event_t ev;
	const char *why;
	int64_t live = 0, peak = 0, slive = 0, speak = 0;
	size_t nv = 0, n = 0, i, fast = 0, got;
	uint8_t *p = buf;
	unsigned w;

	for (w = 1; w <= 10; w++) {
		vals[nv++] = len_value(w, 0);
		vals[nv++] = len_value(w, 1);
	}
	for (i = 0; i < sizeof(ref) / sizeof(ref[0]); i++) {
		uint8_t tag = tags[i % (sizeof(tags) / sizeof(tags[0]))];
		/* Stamp deltas of 1 to 8 bytes (the stamps stay below 2^63),
		 * the other fields of any length, each index stepping
		 * through the lengths at its own pace. */
		uint64_t delta = vals[(i * 7) % 16];

		/* The tag and at most five fields of 10 bytes. */
		ck_assert_uint_le((size_t)(p - buf) + 1 + 5 * 10, sizeof(buf));
		*p++ = tag;
		p = mms_put_u(p, delta);
		p = mms_put_u(p, vals[(i * 3) % nv]);
		if ((tag & ~7) == MMS_TAG_ALLOC || (tag & ~7) == MMS_TAG_ALLOC_RT || (tag & ~7) == MMS_TAG_ALLOC_CXX ||
		    (tag & ~7) == MMS_TAG_ALLOC_CXX_RT) {
			p = mms_put_u(p, vals[(i * 5 + 1) % nv]);
			p = mms_put_u(p, vals[(i * 11 + 2) % nv]);
			if ((tag & ~7) == MMS_TAG_ALLOC_RT || (tag & ~7) == MMS_TAG_ALLOC_CXX_RT)
				p = mms_put_u(p, vals[(i * 13 + 3) % nv]);
		} else if ((tag & ~7) == MMS_TAG_FREE_STACK) {
			p = mms_put_u(p, vals[(i * 17 + 4) % nv]);
		}
		stamp += delta;
	}
	c0.end = p;

	/* What the careful decoder reads. */
	while (mms__decode(&c0, &ref[n], &why) == 1) {
		/* A C++ operator's ALLOC reads as an ALLOC of fn new or new[]. */
		if ((ref[n].tag & ~7) == MMS_TAG_ALLOC_CXX || (ref[n].tag & ~7) == MMS_TAG_ALLOC_CXX_RT)
			ck_assert_uint_eq(ref[n].sub, ref[n].tag & 15);
		live += mms__live_delta(ref[n].tag);
		peak = live > peak ? live : peak;
		n++;
	}
	ck_assert_uint_eq(n, sizeof(ref) / sizeof(ref[0]));
	ck_assert_ptr_eq(c0.p, p);
	ck_assert_uint_eq(c0.stamp, stamp);

	/* The fast path, record by record, the careful one where it
	 * declines (a field over 8 bytes, the last 40 bytes). */
	c = (struct mms__cursor){ .base = buf, .p = buf, .end = p };
	for (i = 0; i < n; i++) {
		if (mms__decode_heap(&c, &ev)) {
			fast++;
			ck_assert_msg(ev.stamp == ref[i].stamp && ev.addr == ref[i].addr, "record %zu", i);
			ck_assert_uint_eq(ev.sub, ref[i].sub);
			ck_assert_uint_eq(ev.file_offset, ref[i].off);
			if (ev.kind == MMS_EV_MALLOC) {
				ck_assert_msg(ref[i].type == MMS_TAG_ALLOC || ref[i].type == MMS_TAG_ALLOC_RT,
					      "record %zu", i);
				ck_assert_msg(ev.size == ref[i].u[0], "record %zu", i);
				ck_assert_uint_eq(ev.stack, (uint32_t)ref[i].u[1]);
				ck_assert_uint_eq(ev.runtime,
						  ref[i].type == MMS_TAG_ALLOC_RT ? (uint32_t)ref[i].u[2] : 0);
			} else {
				ck_assert_msg(ref[i].type == MMS_TAG_FREE || ref[i].type == MMS_TAG_FREE_STACK,
					      "record %zu", i);
				ck_assert_uint_eq(ev.stack,
						  ref[i].type == MMS_TAG_FREE_STACK ? (uint32_t)ref[i].u[0] : 0);
			}
		} else {
			ck_assert_int_eq(mms__decode(&c, &r, &why), 1);
			ck_assert_msg(r.stamp == ref[i].stamp && r.addr == ref[i].addr, "record %zu", i);
		}
	}
	ck_assert_ptr_eq(c.p, p);
	ck_assert_uint_ge(fast, n / 4);

	/* The open's skim: runs of records, the skim of one record between
	 * them; the same count, end stamp and live blocks. */
	c = (struct mms__cursor){ .base = buf, .p = buf, .end = p };
	for (i = 0, fast = 0; c.p < p;) {
		got = mms__skim_events(&c, &slive, &speak);
		fast += got;
		i += got;
		if (c.p < p) {
			ck_assert_int_eq(mms__decode_skim(&c, &r, &why), 1);
			slive += mms__live_delta(r.tag);
			speak = slive > speak ? slive : speak;
			i++;
		}
	}
	ck_assert_uint_eq(i, n);
	ck_assert_uint_eq(c.stamp, stamp);
	ck_assert_int_eq(slive, live);
	ck_assert_int_eq(speak, peak);
	ck_assert_uint_ge(fast, n / 4);
}
END_TEST

START_TEST(test_crc64)
{
	static uint64_t table[8][256];
	uint8_t buf[600];
#if defined(__x86_64__)
	struct mms_crc64_clmul clmul;

	mms_crc64_clmul_init(&clmul);
	if (!clmul.ok)
		fprintf(stderr, "check-codec: no PCLMULQDQ on this CPU: its CRC path falls back to the tables\n");
#endif
	unsigned long long x = 88172645463325252ull;

	mms_crc64_table(table);
	ck_assert_uint_eq(mms_crc64((const uint64_t(*)[256])table, 0, "123456789", 9), 0x995DC9BBDF1939FAull);
	ck_assert_uint_eq(mms_crc64((const uint64_t(*)[256])table, 0, "", 0), 0);
	/* 64 bytes of 0x11: the weights block of tests/progs/watchstomp. */
	memset(buf, 0x11, 64);
	ck_assert_uint_eq(mms_crc64((const uint64_t(*)[256])table, 0, buf, 64), 0x6791EBE708B11AF9ull);
	for (size_t i = 0; i < sizeof buf; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; off + len <= sizeof buf; len += 7) {
			uint64_t want = crc64_bitwise(buf + off, len);
			size_t half = len / 3;
			uint64_t c;

			ck_assert_uint_eq(mms_crc64((const uint64_t(*)[256])table, 0, buf + off, len), want);
#if defined(__x86_64__)
			ck_assert_uint_eq(mms_crc64_clmul(&clmul, (const uint64_t(*)[256])table, 0, buf + off, len),
					  want);
			c = mms_crc64_clmul(&clmul, (const uint64_t(*)[256])table, 0, buf + off, half);
			ck_assert_uint_eq(
				mms_crc64_clmul(&clmul, (const uint64_t(*)[256])table, c, buf + off + half, len - half),
				want);
#endif
			c = mms_crc64((const uint64_t(*)[256])table, 0, buf + off, half);
			ck_assert_uint_eq(mms_crc64((const uint64_t(*)[256])table, c, buf + off + half, len - half), want);
		}
}
END_TEST

static Suite *codec_suite(void)
{
	Suite *s = suite_create("codec");
	TCase *tc = tcase_create("codec");

	/* Check's default 4 s is a guess at a quiet machine: the slot map's
	 * 160,000 random operations ran past it beside a full make check -j2
	 * and two builds on this 2-core machine. */
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_decimal);
	tcase_add_test(tc, test_varint_roundtrip);
	tcase_add_test(tc, test_varint_truncated);
	tcase_add_test(tc, test_varint_overlong);
	tcase_add_test(tc, test_zigzag);
	tcase_add_test(tc, test_strings);
	tcase_add_test(tc, test_map);
	tcase_add_test(tc, test_slotmap);
	tcase_add_test(tc, test_intervals);
	tcase_add_test(tc, test_sort_keyed);
	tcase_add_test(tc, test_sort_keyed_large);
	tcase_add_test(tc, test_sort_bits);
	tcase_add_test(tc, test_crc64);
	tcase_add_test(tc, test_heap_decoders);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(codec_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
