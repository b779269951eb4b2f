/* SPDX-License-Identifier: MIT */
/* c10stub.c: a stand-in for PyTorch's CUDA library, built as
 * tests/cuda/libc10_cuda.so for cuda.sh (not PyTorch's code): device memory
 * that a function of a library of that name allocates, as PyTorch's
 * caching allocator allocates its segments, is the caching allocator's
 * at exit, not the program's leak. */
#include <stddef.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef CUresult (*alloc_t)(CUdeviceptr *, size_t);

CUdeviceptr c10_cache_segment(alloc_t alloc, size_t size);

__attribute__((noinline)) CUdeviceptr c10_cache_segment(alloc_t alloc, size_t size)
{
	CUdeviceptr d = 0;

	if (alloc(&d, size))
		return 0;
	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays on the stack */
	return d;
}
