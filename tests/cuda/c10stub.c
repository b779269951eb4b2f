/* SPDX-License-Identifier: MIT */
/* c10stub.c: stand-ins for PyTorch's CUDA libraries and NVIDIA's cuBLAS,
 * for cuda.sh (not their code; only their names matter): built as
 * tests/cuda/libc10_cuda.so, libtorch_cuda.so and libcublas.so.13. Device
 * memory that PyTorch's CUDA libraries allocate, themselves (the caching
 * allocator's segments, through libc10_cuda) or through a CUDA library
 * they call (a cuBLAS handle's workspace, through libtorch_cuda), is
 * PyTorch's at exit, not the program's leak. */
#include <stddef.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef CUresult (*alloc_t)(CUdeviceptr *, size_t);
typedef CUdeviceptr (*stub_alloc_t)(alloc_t, size_t);

CUdeviceptr stub_alloc(alloc_t alloc, size_t size);
CUdeviceptr stub_through(stub_alloc_t next, alloc_t alloc, size_t size);

/* size bytes from alloc (cuMemAlloc), by a function of this library. */
__attribute__((noinline)) CUdeviceptr stub_alloc(alloc_t alloc, size_t size)
{
	CUdeviceptr d = 0;

	if (alloc(&d, size))
		return 0;
	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays on the stack */
	return d;
}

/* The same through next, another library's stub_alloc. */
__attribute__((noinline)) CUdeviceptr stub_through(stub_alloc_t next, alloc_t alloc, size_t size)
{
	CUdeviceptr d = next(alloc, size);

	__asm__ volatile("" ::: "memory");
	return d;
}
