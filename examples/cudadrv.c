/* SPDX-License-Identifier: MIT */
/* cudadrv.c: a CUDA program that calls the driver API by name, linked with
 * -lcuda as such programs are, and the CUDA runtime beside it: the
 * driver's functions go through the program's PLT and GOT, the runtime's
 * through the pointers cuGetProcAddress hands it. For checking on a
 * machine with a GPU that msmemscope records each of the program's device
 * blocks once, whichever way it came (tests/cuda/gpudrv.sh; built when
 * configure finds cuda.h, the driver's link stub and the runtime). Plain
 * C: its kernel is PTX text (fill-ptx.h) loaded with cuModuleLoadData.
 *
 * The sequence, each size used once so that a block recorded twice shows:
 * by the driver, cuMemAlloc of 5 MiB and of 6 MiB (the one kept:
 * leaky_driver()), cuMemAllocManaged of 7 MiB, cuMemAllocAsync of 9 MiB on
 * a stream, cuMemHostAlloc of 3 MiB of pinned host memory, cuArray3DCreate
 * of a 512 x 256 float image (512 KiB); by the runtime, cudaMalloc of 11
 * MiB; the kernel `fill` launched with cuLaunchKernel on each device block
 * (5 launches); then everything freed but the 6 MiB block, the leak the
 * report must name.
 *
 * It prints its own accounting, as cudamem does: the bytes it asked for
 * per kind, what cuMemGetInfo says the device lost while the blocks were
 * live and at the end, and the launches. Exit status 0; 2 when there is
 * no usable GPU (the message says why). Where the driver itself is not
 * installed, the loader refuses to start it (libcuda.so.1 not found, 127). */
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "fill-ptx.h"

#define MiB ((size_t)1024 * 1024)

static CUfunction fill;
static unsigned launches;

static void check(CUresult rc, const char *what)
{
	const char *msg = NULL;

	if (rc == CUDA_SUCCESS)
		return;
	if (cuGetErrorString(rc, &msg) != CUDA_SUCCESS || !msg)
		msg = "unknown error";
	fprintf(stderr, "cudadrv: %s: %s (%d)\n", what, msg, (int)rc);
	exit(rc == CUDA_ERROR_NO_DEVICE || rc == CUDA_ERROR_STUB_LIBRARY || rc == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
		     ? 2
		     : 1);
}

static void check_rt(cudaError_t rc, const char *what)
{
	if (rc == cudaSuccess)
		return;
	fprintf(stderr, "cudadrv: %s: %s\n", what, cudaGetErrorString(rc));
	exit(1);
}

static void fill_block(CUdeviceptr p, size_t bytes, CUstream s)
{
	unsigned n = (unsigned)(bytes / sizeof(float));
	float v = 1.0f;
	void *args[] = { &p, &v, &n };

	check(cuLaunchKernel(fill, (n + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, NULL), "cuLaunchKernel");
	launches++;
}

/* The leak: kept past the end of the program. */
static __attribute__((noinline)) CUdeviceptr leaky_driver(size_t bytes)
{
	CUdeviceptr p;

	check(cuMemAlloc(&p, bytes), "cuMemAlloc");
	fill_block(p, bytes, NULL);
	return p;
}

static size_t device_used(void)
{
	size_t free_b, total_b;

	check(cuMemGetInfo(&free_b, &total_b), "cuMemGetInfo");
	return total_b - free_b;
}

int main(void)
{
	CUDA_ARRAY3D_DESCRIPTOR image = { .Width = 512, .Height = 256, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1 };
	CUdeviceptr a, kept, managed, async;
	CUcontext ctx;
	CUmodule mod;
	CUstream s;
	CUdevice dev;
	CUarray arr;
	void *pinned, *rt;
	size_t base, live;

	check(cuInit(0), "cuInit");
	check(cuDeviceGet(&dev, 0), "cuDeviceGet");
	/* The primary context, which the runtime uses too. */
	check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
	check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	check(cuModuleLoadData(&mod, fill_ptx), "cuModuleLoadData");
	check(cuModuleGetFunction(&fill, mod, "fill"), "cuModuleGetFunction");
	check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	check_rt(cudaSetDevice(0), "cudaSetDevice");
	check_rt(cudaFree(NULL), "cudaFree (the runtime's start)");
	check(cuCtxSynchronize(), "cuCtxSynchronize");
	base = device_used();

	check(cuMemAlloc(&a, 5 * MiB), "cuMemAlloc");
	kept = leaky_driver(6 * MiB);
	check(cuMemAllocManaged(&managed, 7 * MiB, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
	check(cuMemAllocAsync(&async, 9 * MiB, s), "cuMemAllocAsync");
	check(cuMemHostAlloc(&pinned, 3 * MiB, 0), "cuMemHostAlloc");
	check(cuArray3DCreate(&arr, &image), "cuArray3DCreate");
	check_rt(cudaMalloc(&rt, 11 * MiB), "cudaMalloc");
	fill_block(a, 5 * MiB, NULL);
	fill_block(managed, 7 * MiB, NULL);
	fill_block(async, 9 * MiB, s);
	fill_block((CUdeviceptr)rt, 11 * MiB, NULL);
	check(cuStreamSynchronize(s), "cuStreamSynchronize");
	check(cuCtxSynchronize(), "cuCtxSynchronize");
	live = device_used();

	check(cuMemFree(a), "cuMemFree");
	check(cuMemFree(managed), "cuMemFree (managed)");
	check(cuMemFreeAsync(async, s), "cuMemFreeAsync");
	check(cuStreamSynchronize(s), "cuStreamSynchronize");
	check(cuMemFreeHost(pinned), "cuMemFreeHost");
	check(cuArrayDestroy(arr), "cuArrayDestroy");
	check_rt(cudaFree(rt), "cudaFree");
	check(cuCtxSynchronize(), "cuCtxSynchronize");

	printf("device: 2 cuMemAlloc, %zu bytes; 1 cudaMalloc, %zu bytes\n", 11 * MiB, 11 * MiB);
	printf("async: 1 cuMemAllocAsync, %zu bytes\n", 9 * MiB);
	printf("managed: 1 cuMemAllocManaged, %zu bytes\n", 7 * MiB);
	printf("pinned: 1 cuMemHostAlloc, %zu bytes\n", 3 * MiB);
	printf("array: 1 cuArray3DCreate, %zu bytes\n", (size_t)512 * 256 * sizeof(float));
	printf("kept: 0x%llx, %zu bytes (leaky_driver)\n", (unsigned long long)kept, 6 * MiB);
	printf("launches: %u\n", launches);
	printf("cuMemGetInfo: %zu bytes more in use with the blocks live, %zu at the end\n", live - base,
	       device_used() - base);
	check(cuStreamDestroy(s), "cuStreamDestroy");
	check(cuModuleUnload(mod), "cuModuleUnload");
	return 0;
}
