/* SPDX-License-Identifier: MIT */
/* drvprog.c: a driver-API program for cuda.sh, linked against libcuda (the
 * test double, tests/cuda/driver/libcuda.so.1) and calling the driver's
 * functions by name, through its PLT and GOT, as programs built with
 * -lcuda do, besides one entry point fetched with cuGetProcAddress as the
 * runtime fetches them. It prints its own accounting, the same under the
 * recorder; every call must leave errno as the driver set it (ENOMSG).
 *
 * The sequence (sizes in bytes): cuMemAlloc_v2 4096 (leaky_direct, never
 * freed) and 65536, cuMemAllocManaged 8192, cuMemHostAlloc 4096,
 * cuArray3DCreate_v2 of 64 x 64 bytes, and 1024 by the cuMemAlloc that
 * cuGetProcAddress_v2 hands out; all freed but leaky_direct's; one launch
 * of vector_add by cuLaunchKernel. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "cuda-types.h"

typedef struct CUmod_st *CUmodule;

/* cuda.h's declarations, under the exported names its macros give. */
CUresult cuInit(unsigned flags);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned flags);
CUresult cuMemHostAlloc(void **pp, size_t size, unsigned flags);
CUresult cuMemFreeHost(void *p);
CUresult cuArray3DCreate_v2(void **handle, const CUDA_ARRAY3D_DESCRIPTOR *desc);
CUresult cuArrayDestroy(void *handle);
CUresult cuModuleGetFunction(CUfunction *f, CUmodule mod, const char *name);
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
			unsigned shared, CUstream stream, void **params, void **extra);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status);

static int failures;

static void check(const char *what, CUresult r)
{
	if (r != 0) {
		printf("%s: error %d\n", what, r);
		failures++;
	}
	if (errno != ENOMSG) {
		printf("%s: errno %d, not the driver's\n", what, errno);
		failures++;
	}
	errno = 0;
}

__attribute__((noinline)) static CUdeviceptr leaky_direct(size_t size)
{
	CUdeviceptr d = 0;

	check("cuMemAlloc_v2 (leaky_direct)", cuMemAlloc_v2(&d, size));
	__asm__ volatile("" ::: "memory"); /* no tail call: leaky_direct stays on the stack */
	return d;
}

int main(void)
{
	CUDA_ARRAY3D_DESCRIPTOR image = { .Width = 64, .Height = 64, .Format = 0x01, .NumChannels = 1 };
	CUresult (*fetched)(CUdeviceptr *, size_t) = NULL;
	CUdeviceptr a = 0, m = 0, f = 0;
	void *pin = NULL, *arr = NULL;
	CUfunction vector_add;

	errno = 0;
	check("cuInit", cuInit(0));
	(void)leaky_direct(4096);
	check("cuMemAlloc_v2", cuMemAlloc_v2(&a, 65536));
	check("cuMemAllocManaged", cuMemAllocManaged(&m, 8192, 1));
	check("cuMemHostAlloc", cuMemHostAlloc(&pin, 4096, 0));
	check("cuArray3DCreate_v2", cuArray3DCreate_v2(&arr, &image));
	check("cuGetProcAddress_v2", cuGetProcAddress_v2("cuMemAlloc", (void **)&fetched, 12000, 0, NULL));
	check("cuMemAlloc (cuGetProcAddress)", fetched(&f, 1024));
	check("cuModuleGetFunction", cuModuleGetFunction(&vector_add, NULL, "vector_add"));
	check("cuLaunchKernel", cuLaunchKernel(vector_add, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	check("cuMemFree_v2", cuMemFree_v2(a));
	check("cuMemFree_v2 (managed)", cuMemFree_v2(m));
	check("cuMemFreeHost", cuMemFreeHost(pin));
	check("cuArrayDestroy", cuArrayDestroy(arr));
	check("cuMemFree_v2 (fetched's)", cuMemFree_v2(f));
	printf("direct allocs=6 frees=5 launches=1 failures=%d\n", failures);
	return failures ? 1 : 0;
}
