/* SPDX-License-Identifier: MIT */
/* drvuse.c: libdrvuse.so, a library linked against libcuda (the test
 * double), for drvprog's plugin mode: loaded with dlopen(), it brings the
 * driver in with it, as a Python extension built against libcuda does,
 * and calls the driver by name through its GOT. */
#include <errno.h>
#include <stdint.h>

#include "cuda-types.h"

typedef struct CUmod_st *CUmodule;

CUresult cuInit(unsigned flags);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuModuleGetFunction(CUfunction *f, CUmodule mod, const char *name);
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
			unsigned shared, CUstream stream, void **params, void **extra);

int drv_work(void);

/* A block kept to the end: 8192 bytes. */
__attribute__((noinline)) static CUresult leaky_plugin(CUdeviceptr *d)
{
	CUresult r = cuMemAlloc_v2(d, 8192);

	__asm__ volatile("" ::: "memory"); /* no tail call: leaky_plugin stays on the stack */
	return r;
}

/* cuInit, 8192 bytes kept (leaky_plugin), 2048 allocated and freed, a
 * launch of reduce_sum; the number of calls that failed or lost the
 * driver's errno. */
__attribute__((visibility("default"))) int drv_work(void)
{
	CUdeviceptr kept = 0, d = 0;
	CUfunction f;
	int bad = 0;

	errno = 0;
	bad += cuInit(0) != 0 || errno != ENOMSG;
	bad += leaky_plugin(&kept) != 0 || errno != ENOMSG;
	bad += cuMemAlloc_v2(&d, 2048) != 0 || errno != ENOMSG;
	bad += cuModuleGetFunction(&f, NULL, "reduce_sum") != 0;
	bad += cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != 0 || errno != ENOMSG;
	bad += cuMemFree_v2(d) != 0 || errno != ENOMSG;
	return bad;
}
