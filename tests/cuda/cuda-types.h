/* SPDX-License-Identifier: MIT */
/* cuda-types.h: the few types of cuda.h that the driver double
 * (fakecuda.c) and the program that uses it (cudaprog.c) share, declared
 * as cuda.h does (the tests build without it). */
#ifndef MMS_TESTS_CUDA_TYPES_H
#define MMS_TESTS_CUDA_TYPES_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUstream_st *CUstream;
typedef struct CUfunc_st *CUfunction;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct {
	int type, requestedHandleTypes;
	struct {
		int type, id; /* type 1: a device, id its ordinal */
	} location;
	unsigned char rest[32]; /* the rest of cuda.h's struct: zeroed */
} CUmemAllocationProp;

typedef struct {
	size_t Width, Height;
	int Format; /* CUarray_format: 0x20 float, 0x01 unsigned 8-bit, ... */
	unsigned NumChannels;
} CUDA_ARRAY_DESCRIPTOR;
typedef struct {
	size_t Width, Height, Depth;
	int Format;
	unsigned NumChannels, Flags; /* Flags 1: layered */
} CUDA_ARRAY3D_DESCRIPTOR;

#endif /* MMS_TESTS_CUDA_TYPES_H */
