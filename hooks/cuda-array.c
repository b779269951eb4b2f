/* SPDX-License-Identifier: MIT */
/* cuda-array.c: the bytes of a CUDA array (cuArrayCreate,
 * cuArray3DCreate, cuMipmappedArrayCreate), from its description: width x
 * height x depth x the element's size (CUarray_format and the channels;
 * 4x4 blocks for the block-compressed formats; bits per pixel for the YUV
 * ones), over each level of a mipmapped array. The driver may round its
 * allocation up: this is the array's data. cuda.c records an array at its
 * handle with this size; 0 (a format not known) leaves it unrecorded. */
#include <stdint.h>

#include "hooks-int.h"

/* CUDA_ARRAY3D_DESCRIPTOR's Flags, as cuda.h defines them. */
#define CUDA_ARRAY3D_LAYERED 0x01
#define CUDA_ARRAY3D_CUBEMAP 0x04

/* The bits an element of format takes (its channels' together; a pixel
 * of the YUV and block-compressed formats), or 0 when not known. */
static unsigned format_bits(int format, unsigned channels)
{
	switch (format) {
	case 0x01: /* UNSIGNED_INT8 */
	case 0x08: /* SIGNED_INT8 */
		return 8 * channels;
	case 0x02: /* UNSIGNED_INT16 */
	case 0x09: /* SIGNED_INT16 */
	case 0x10: /* HALF */
		return 16 * channels;
	case 0x03: /* UNSIGNED_INT32 */
	case 0x0a: /* SIGNED_INT32 */
	case 0x20: /* FLOAT */
		return 32 * channels;
	case 0xc0: /* UNORM_INT8X1 */
	case 0xc6: /* SNORM_INT8X1 */
		return 8;
	case 0xc1: /* UNORM_INT8X2 */
	case 0xc3: /* UNORM_INT16X1 */
	case 0xc7: /* SNORM_INT8X2 */
	case 0xc9: /* SNORM_INT16X1 */
	case 0xa2: /* NV16: 4:2:2, 8 bits */
	case 0xa5: /* YUY2 */
		return 16;
	case 0xc2: /* UNORM_INT8X4 */
	case 0xc4: /* UNORM_INT16X2 */
	case 0xc8: /* SNORM_INT8X4 */
	case 0xca: /* SNORM_INT16X2 */
	case 0x50: /* UNORM_INT_101010_2 */
	case 0xa3: /* P210: 4:2:2, 16-bit words */
	case 0xa4: /* P216 */
	case 0xa6: /* Y210 */
	case 0xa7: /* Y216 */
	case 0xa8: /* AYUV */
	case 0xa9: /* Y410 */
		return 32;
	case 0xc5: /* UNORM_INT16X4 */
	case 0xcb: /* SNORM_INT16X4 */
	case 0xb1: /* Y416 */
		return 64;
	case 0xb0: /* NV12: 4:2:0, 8 bits */
		return 12;
	case 0x9f: /* P010: 4:2:0, 16-bit words */
	case 0xa1: /* P016 */
	case 0xb2: /* Y444_PLANAR8 */
	case 0xb4: /* YUV444_8bit_SemiPlanar */
		return 24;
	case 0xb3: /* Y444_PLANAR10: 16-bit words */
	case 0xb5: /* YUV444_16bit_SemiPlanar */
		return 48;
	default:
		return 0;
	}
}

/* The bytes of a 4x4 block of the block-compressed format, or 0. */
static unsigned bc_block_bytes(int format)
{
	if (format == 0x91 || format == 0x92 || format == 0x97 || format == 0x98) /* BC1, BC4 */
		return 8;
	if (format >= 0x93 && format <= 0x9e) /* BC2, BC3, BC5, BC6H, BC7 */
		return 16;
	return 0;
}

/* The bytes of a level of w x h x d elements of format (h and d at least
 * 1), or 0 when the format is not known. */
static uint64_t level_bytes(uint64_t w, uint64_t h, uint64_t d, int format, unsigned channels)
{
	unsigned bits = format_bits(format, channels), block = bc_block_bytes(format);

	if (block)
		return (w + 3) / 4 * ((h + 3) / 4) * d * block;
	return bits ? (w * h * d * bits + 7) / 8 : 0;
}

uint64_t mms__cuda_array_bytes(uint64_t width, uint64_t height, uint64_t depth, int format, unsigned channels,
			       unsigned flags, unsigned levels)
{
	uint64_t w = width, h = height ? height : 1, d = depth ? depth : 1, sum = 0, one;
	int layers = (flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;

	for (unsigned l = 0; l < (levels ? levels : 1) && l < 64; l++) {
		one = level_bytes(w, h, d, format, channels);
		if (!one)
			return 0;
		sum += one;
		w = w > 1 ? w / 2 : 1;
		h = h > 1 ? h / 2 : 1;
		if (!layers)
			d = d > 1 ? d / 2 : 1;
	}
	return sum;
}
