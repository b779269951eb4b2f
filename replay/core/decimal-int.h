/* SPDX-License-Identifier: MIT */
/* decimal-int.h: unsigned integers in decimal, two digits a step from a
 * table, and in hexadecimal, eight digits a step by bit operations: the
 * exports and the analyses' TSVs write millions of them. */
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

/* The 8 nibbles of x (32 bits) as 8 hexadecimal digits, the highest
 * first in memory order (bytes of a little-endian word). */
static inline uint64_t mms__hex8(uint32_t x)
{
	uint64_t v = x, nine;

	/* Each nibble into a byte of its own, the lowest in byte 0 ... */
	v = (v | v << 16) & 0x0000ffff0000ffffull;
	v = (v | v << 8) & 0x00ff00ff00ff00ffull;
	v = (v | v << 4) & 0x0f0f0f0f0f0f0f0full;
	/* ... '0' to '9', and 'a' to 'f' for bytes above 9 ... */
	nine = (v + 0x0606060606060606ull) >> 4 & 0x0101010101010101ull;
	v += 0x3030303030303030ull + nine * ('a' - '0' - 10);
	/* ... the highest first. */
	return __builtin_bswap64(v);
}

/* "0x" and the hexadecimal digits of v (lower case, no leading zeros) at
 * out (room for 18: all 16 digits of v shifted to drop the leading zeros
 * are stored); returns how many characters. */
static inline unsigned mms__hex(char *out, uint64_t v)
{
	unsigned n = (64u - (unsigned)__builtin_clzll(v | 1) + 3) / 4;
	uint64_t top = v << (64 - 4 * n), w;

	out[0] = '0';
	out[1] = 'x';
	w = mms__hex8((uint32_t)(top >> 32));
	memcpy(out + 2, &w, 8);
	w = mms__hex8((uint32_t)top);
	memcpy(out + 10, &w, 8);
	return n + 2;
}

#endif /* MMS_DECIMAL_INT_H */
