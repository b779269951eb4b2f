/* SPDX-License-Identifier: MIT */
/* cudamem.c: a CUDA program with a known sequence of device memory calls,
 * for checking what msmemscope records on a machine with a GPU
 * (tests/cuda/gpu.sh; built when configure finds the CUDA runtime). Plain
 * C through the CUDA runtime API: its kernel is PTX text loaded with
 * cudaLibraryLoadData, so no nvcc is needed to build it.
 *
 * The sequence: three cudaMalloc (1, 2 and 4 MiB), one cudaMallocAsync
 * (8 MiB, on a stream), one cudaMallocManaged (16 MiB), one cudaMallocHost
 * (1 MiB of pinned host memory); the kernel `fill` launched on each device
 * block; then everything freed but the 2 MiB block, which
 * upload_weights() keeps: the leak the report must name.
 *
 * It prints its own accounting: the bytes it asked for per kind, what
 * cudaMemGetInfo says the device lost while the blocks were live and at
 * the end, and the launches. Exit status 0; 2 when there is no usable GPU
 * (the message says why). */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "fill-ptx.h"

#define MiB (1024u * 1024u)

static cudaKernel_t fill;
static unsigned launches;

static void check(cudaError_t rc, const char *what)
{
	if (rc == cudaSuccess)
		return;
	fprintf(stderr, "cudamem: %s: %s\n", what, cudaGetErrorString(rc));
	exit(rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver ? 2 : 1);
}

static void fill_block(void *p, size_t bytes, cudaStream_t s)
{
	unsigned n = (unsigned)(bytes / sizeof(float));
	float v = 1.0f;
	void *args[] = { &p, &v, &n };
	dim3 block = { 256, 1, 1 }, grid = { (n + 255) / 256, 1, 1 };

	check(cudaLaunchKernel((const void *)fill, grid, block, args, 0, s), "cudaLaunchKernel");
	launches++;
}

/* The leak: kept past the end of the program. */
static __attribute__((noinline)) void *upload_weights(size_t bytes)
{
	void *p;

	check(cudaMalloc(&p, bytes), "cudaMalloc");
	fill_block(p, bytes, 0);
	return p;
}

static size_t device_used(void)
{
	size_t free_b, total_b;

	check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
	return total_b - free_b;
}

int main(void)
{
	cudaLibrary_t lib;
	cudaStream_t s;
	void *a, *c, *async, *managed, *pinned, *kept;
	size_t base, live;
	int n = 0;

	check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
	check(cudaSetDevice(0), "cudaSetDevice");
	check(cudaLibraryLoadData(&lib, fill_ptx, NULL, NULL, 0, NULL, NULL, 0), "cudaLibraryLoadData");
	check(cudaLibraryGetKernel(&fill, lib, "fill"), "cudaLibraryGetKernel");
	check(cudaStreamCreate(&s), "cudaStreamCreate");
	check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	base = device_used();

	check(cudaMalloc(&a, 1 * MiB), "cudaMalloc");
	kept = upload_weights(2 * MiB);
	check(cudaMalloc(&c, 4 * MiB), "cudaMalloc");
	check(cudaMallocAsync(&async, 8 * MiB, s), "cudaMallocAsync");
	check(cudaMallocManaged(&managed, 16 * MiB, cudaMemAttachGlobal), "cudaMallocManaged");
	check(cudaMallocHost(&pinned, 1 * MiB), "cudaMallocHost");
	fill_block(a, 1 * MiB, 0);
	fill_block(c, 4 * MiB, 0);
	fill_block(async, 8 * MiB, s);
	fill_block(managed, 16 * MiB, 0);
	check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	live = device_used();

	check(cudaFree(a), "cudaFree");
	check(cudaFree(c), "cudaFree");
	check(cudaFreeAsync(async, s), "cudaFreeAsync");
	check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
	check(cudaFree(managed), "cudaFree");
	check(cudaFreeHost(pinned), "cudaFreeHost");
	check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

	printf("device: 3 cudaMalloc, %u bytes\n", 7 * MiB);
	printf("async: 1 cudaMallocAsync, %u bytes\n", 8 * MiB);
	printf("managed: 1 cudaMallocManaged, %u bytes\n", 16 * MiB);
	printf("pinned: 1 cudaMallocHost, %u bytes\n", 1 * MiB);
	printf("kept: %p, %u bytes (upload_weights)\n", kept, 2 * MiB);
	printf("launches: %u\n", launches);
	printf("cudaMemGetInfo: %zu bytes more in use with the blocks live, %zu at the end\n", live - base,
	       device_used() - base);
	check(cudaStreamDestroy(s), "cudaStreamDestroy");
	return 0;
}
