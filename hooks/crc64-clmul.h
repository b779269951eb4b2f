/* SPDX-License-Identifier: MIT */
/* crc64-clmul.h: CRC-64/XZ (format.h's mms_crc64) by carry-less
 * multiplication (PCLMULQDQ) on x86-64, for the watched blocks the
 * recorder checksums: several times faster than the tables on large
 * blocks, and the same value.
 *
 * Method (the folding of Intel's "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ"). The message is taken 16 bytes at a time,
 * four blocks in flight. A block in an XMM register, as loaded from memory,
 * is a polynomial of degree < 128 in reflected order: bit j is the
 * coefficient of x^(127 - j). Keeping an accumulator A with CRC(message so
 * far) == A * x^64 mod P, moving A over d more bits is A * x^d mod P: with
 * A = H * x^64 + L (H its low quadword), H * (x^(d+64) mod P) + L * (x^d mod
 * P), two carry-less products of 64-bit halves. A reflected product comes
 * out multiplied by x once more, so the constants are x^(d+63) mod P and
 * x^(d-1) mod P, reflected; they are computed at start, not copied. The
 * final 16-byte accumulator and the bytes left over go through the
 * tables: the bytewise CRC of A's 16 bytes from 0 is A * x^64 mod P. */
#ifndef MMS_CRC64_CLMUL_H
#define MMS_CRC64_CLMUL_H

#include <stdint.h>
#include <string.h>

#include "format.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

struct mms_crc64_clmul {
	int ok;           /* the CPU has PCLMULQDQ */
	uint64_t k512[2]; /* fold one block 512 bits ahead: lo, hi */
	uint64_t k384[2], k256[2], k128[2];
};

/* x^n mod P (P = CRC-64/XZ's polynomial), bit-reflected. */
static inline uint64_t mms_crc64_xn(unsigned n)
{
	uint64_t r = 1, out = 0;

	while (n--)
		r = (r << 1) ^ (r >> 63 ? 0x42F0E1EBA9EA3693ull : 0);
	for (int i = 0; i < 64; i++)
		out |= ((r >> i) & 1) << (63 - i);
	return out;
}

static inline void mms_crc64_clmul_init(struct mms_crc64_clmul *c)
{
	unsigned a, b, cx, d;

	memset(c, 0, sizeof *c);
	c->ok = __get_cpuid(1, &a, &b, &cx, &d) && (cx & bit_PCLMUL) && (d & bit_SSE2);
	c->k512[0] = mms_crc64_xn(512 + 63), c->k512[1] = mms_crc64_xn(512 - 1);
	c->k384[0] = mms_crc64_xn(384 + 63), c->k384[1] = mms_crc64_xn(384 - 1);
	c->k256[0] = mms_crc64_xn(256 + 63), c->k256[1] = mms_crc64_xn(256 - 1);
	c->k128[0] = mms_crc64_xn(128 + 63), c->k128[1] = mms_crc64_xn(128 - 1);
}

/* a moved d bits ahead, k the constants for d. */
__attribute__((target("pclmul,sse2"))) static inline __m128i mms_crc64_fold(__m128i a, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11));
}

/* Continues crc (0 to start) over len bytes at data, as mms_crc64(). */
__attribute__((target("pclmul,sse2"))) static inline uint64_t mms_crc64_clmul(const struct mms_crc64_clmul *c,
									      const uint64_t table[8][256],
									      uint64_t crc, const void *data,
									      size_t len)
{
	const uint8_t *p = data;
	__m128i a0, a1, a2, a3, k;
	uint8_t acc[16];

	if (!c->ok || len < 128)
		return mms_crc64(table, crc, data, len);
	a0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi64_si128((long long)~crc));
	a1 = _mm_loadu_si128((const __m128i *)(p + 16));
	a2 = _mm_loadu_si128((const __m128i *)(p + 32));
	a3 = _mm_loadu_si128((const __m128i *)(p + 48));
	p += 64;
	len -= 64;
	k = _mm_loadu_si128((const __m128i *)c->k512);
	for (; len >= 64; len -= 64, p += 64) {
		a0 = _mm_xor_si128(mms_crc64_fold(a0, k), _mm_loadu_si128((const __m128i *)p));
		a1 = _mm_xor_si128(mms_crc64_fold(a1, k), _mm_loadu_si128((const __m128i *)(p + 16)));
		a2 = _mm_xor_si128(mms_crc64_fold(a2, k), _mm_loadu_si128((const __m128i *)(p + 32)));
		a3 = _mm_xor_si128(mms_crc64_fold(a3, k), _mm_loadu_si128((const __m128i *)(p + 48)));
	}
	a3 = _mm_xor_si128(a3, mms_crc64_fold(a0, _mm_loadu_si128((const __m128i *)c->k384)));
	a3 = _mm_xor_si128(a3, mms_crc64_fold(a1, _mm_loadu_si128((const __m128i *)c->k256)));
	a3 = _mm_xor_si128(a3, mms_crc64_fold(a2, _mm_loadu_si128((const __m128i *)c->k128)));
	_mm_storeu_si128((__m128i *)acc, a3);
	/* The tables from a register of 0 (mms_crc64() complements its
	 * argument and its result) over the accumulator, then the rest. */
	crc = mms_crc64(table, ~0ull, acc, sizeof acc);
	return mms_crc64(table, crc, p, len);
}

#endif /* __x86_64__ */
#endif /* MMS_CRC64_CLMUL_H */
