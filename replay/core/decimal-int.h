/* SPDX-License-Identifier: MIT */
/* decimal-int.h: unsigned integers in decimal and in hexadecimal, eight
 * digits a step by bit operations: the exports and the analyses' TSVs
 * write millions of them. */
#ifndef MMS_DECIMAL_INT_H
#define MMS_DECIMAL_INT_H

#include <stdint.h>
#include <string.h>

/* Stores the 8 characters of word w at out, its lowest byte first. */
static inline void mms__store8(char *out, uint64_t w)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	memcpy(out, &w, 8);
}

/* The 8 decimal digits of x (below 10^8), zero-padded, as the bytes of
 * a word, the highest digit in its lowest byte, made by bit
 * operations: the two halves of 4 digits in lanes of 32 bits, split into
 * lanes of 2 digits, then of 1 (a quotient by 100 or 10 is a product and
 * a shift, exact below 10^4 and 10^2; no lane overflows into the next). */
static inline uint64_t mms__dec8_word(uint32_t x)
{
	uint64_t v = (uint64_t)(x / 10000) | (uint64_t)(x % 10000) << 32, t;

	t = (v * 10486) >> 20 & 0x0000007f0000007full;
	v = t | (v - t * 100) << 16;
	t = (v * 103) >> 10 & 0x000f000f000f000full;
	v = t | (v - t * 10) << 8;
	return v + 0x3030303030303030ull;
}

/* The 8 decimal digits of x (below 10^8), zero-padded, at out. */
static inline void mms__dec8(char *out, uint32_t x)
{
	mms__store8(out, mms__dec8_word(x));
}

/* The last n (1 to 8) of the 8 digits of x at out, and 8 - n bytes of
 * zeros after them (out has room for 8). */
static inline void mms__dec8_last(char *out, uint32_t x, unsigned n)
{
	mms__store8(out, mms__dec8_word(x) >> (8 * (8 - n)));
}

/* The decimal digits of v at out (room for 20: 8 bytes are stored where
 * fewer digits are), without leading zeros; returns how many. */
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
	unsigned n = (64u - (unsigned)__builtin_clzll(v | 1)) * 1233u >> 12;

	n += n < 20 && v >= pow10[n];
	n += !n;
	/* Groups of 8 digits, the first as many as are left. */
	if (n <= 8) {
		mms__dec8_last(out, (uint32_t)v, n);
	} else if (n <= 16) {
		mms__dec8_last(out, (uint32_t)(v / 100000000), n - 8);
		mms__dec8(out + n - 8, (uint32_t)(v % 100000000));
	} else {
		mms__dec8_last(out, (uint32_t)(v / 10000000000000000ull), n - 16);
		mms__dec8(out + n - 16, (uint32_t)(v / 100000000 % 100000000));
		mms__dec8(out + n - 8, (uint32_t)(v % 100000000));
	}
	return n;
}

/* The 8 nibbles of x (32 bits) as 8 hexadecimal digits, the bytes of a
 * word, the highest digit in its lowest byte (mms__store8()). */
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
	uint64_t top = v << (64 - 4 * n);

	out[0] = '0';
	out[1] = 'x';
	mms__store8(out + 2, mms__hex8((uint32_t)(top >> 32)));
	mms__store8(out + 10, mms__hex8((uint32_t)top));
	return n + 2;
}

#endif /* MMS_DECIMAL_INT_H */
