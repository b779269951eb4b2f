/* SPDX-License-Identifier: MIT */
/* decimal-int.h: unsigned integers in decimal, two digits a step from a
 * table, and in hexadecimal: the exports and the analyses' TSVs write
 * millions of them. */
#ifndef MMS_DECIMAL_INT_H
#define MMS_DECIMAL_INT_H

#include <stdint.h>
#include <string.h>

static const char mms__digit_pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				       "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				       "8081828384858687888990919293949596979899";

/* The 8 decimal digits of x (below 10^8), zero-padded, at out. */
static inline void mms__dec8(char *out, uint32_t x)
{
	uint32_t hi = x / 10000, lo = x % 10000;

	memcpy(out, mms__digit_pairs + hi / 100 * 2, 2);
	memcpy(out + 2, mms__digit_pairs + hi % 100 * 2, 2);
	memcpy(out + 4, mms__digit_pairs + lo / 100 * 2, 2);
	memcpy(out + 6, mms__digit_pairs + lo % 100 * 2, 2);
}

/* The decimal digits of v at out (room for 20), without leading zeros;
 * returns how many. */
static inline unsigned mms__dec(char *out, uint64_t v)
{
	static const uint64_t pow10[20] = { 1ull,
					    10ull,
					    100ull,
					    1000ull,
					    10000ull,
					    100000ull,
					    1000000ull,
					    10000000ull,
					    100000000ull,
					    1000000000ull,
					    10000000000ull,
					    100000000000ull,
					    1000000000000ull,
					    10000000000000ull,
					    100000000000000ull,
					    1000000000000000ull,
					    10000000000000000ull,
					    100000000000000000ull,
					    1000000000000000000ull,
					    10000000000000000000ull };
	/* The digits from the bits: 1233/4096 is log10(2) to a little
	 * under, so n is the count or one short, which the table's next
	 * power tells (a loop of divisions per digit was most of the cost
	 * of a time's 19 digits). */
	unsigned n = (64u - (unsigned)__builtin_clzll(v | 1)) * 1233u >> 12, i;

	n += n < 20 && v >= pow10[n];
	n += !n;
	i = n;
	if (v >= 100000000) {
		i -= 8;
		mms__dec8(out + i, (uint32_t)(v % 100000000));
		v /= 100000000;
	}
	while (v >= 100) {
		i -= 2;
		memcpy(out + i, mms__digit_pairs + v % 100 * 2, 2);
		v /= 100;
	}
	if (v >= 10)
		memcpy(out, mms__digit_pairs + v * 2, 2);
	else
		out[0] = (char)('0' + v);
	return n;
}

/* Every byte in two hexadecimal digits. */
static const char mms__hex_pairs[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2021222324252627"
				     "28292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f"
				     "505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f7071727374757677"
				     "78797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
				     "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7"
				     "c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeef"
				     "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

/* "0x" and the hexadecimal digits of v (lower case, no leading zeros) at
 * out (room for 18); returns how many characters. */
static inline unsigned mms__hex(char *out, uint64_t v)
{
	unsigned n = (64u - (unsigned)__builtin_clzll(v | 1) + 3) / 4, i;

	out[0] = '0';
	out[1] = 'x';
	/* Two digits a step from the end; the first alone when n is odd. */
	for (i = n + 2; i > 3; i -= 2, v >>= 8)
		memcpy(out + i - 2, mms__hex_pairs + (v & 0xff) * 2, 2);
	if (i == 3)
		out[2] = mms__hex_pairs[(v & 15) * 2 + 1];
	return n + 2;
}

#endif /* MMS_DECIMAL_INT_H */
