/* SPDX-License-Identifier: MIT */
/* fakecuda.c: a TEST DOUBLE of the CUDA driver (libcuda.so.1), for make
 * check on machines without a GPU. It is not a driver: it has no device,
 * runs no kernel and gives out no device memory. Built as
 * tests/cuda/driver/libcuda.so.1, which the test programs find with
 * LD_LIBRARY_PATH; never installed.
 *
 * What it does like the real driver, for the recorder's sake (hooks/cuda.c):
 * it exports the entry points under their real names and ABIs
 * (cuMemAlloc_v2 and the old cuMemAlloc with 32-bit sizes, _ptsz
 * variants), and its cuGetProcAddress and cuGetProcAddress_v2 resolve a
 * name as the driver does: the _v2 ABI from CUDA version 3020 on, the
 * _ptsz variant with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (2)
 * where one exists, cuGetProcAddress_v2 for cuGetProcAddress from 12000.
 * Device memory is a made-up address range (0x7e0000000000 up; 32-bit
 * addresses for the old ABI); pinned host memory is real, from mmap.
 * Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap
 * and the others) works on made-up address ranges (0x7d0000000000 up) in
 * granules of 2 MiB; cuMemUnmap takes any granule-aligned range of a
 * reservation whose granules are all mapped, also part of one mapping,
 * which the driver documents that it refuses: so that the recorder's
 * split of a mapping can be tried.
 * cuCtxGetDevice says device 1, so that the ordinal can be seen in the log.
 * Its first cuInit keeps state of its own to the end, as the real driver
 * does (its contexts and modules): a malloc'd block, a mapping and a
 * string from strdup(), which no report may call the program's leaks.
 * Every entry point sets errno to ENOMSG, which the test program checks
 * reaches it unchanged. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define EXPORT __attribute__((visibility("default")))

#include "cuda-types.h"

typedef unsigned int CUdeviceptr_v1;
typedef int CUdevice;
typedef uint64_t cuuint64_t;
typedef struct CUmod_st *CUmodule;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_FOUND = 500,
};

/* A kernel: its name, NULL for one the driver cannot name. */
struct CUfunc_st {
	const char *name;
};
static struct CUfunc_st kernels[] = { { "vector_add" }, { "reduce_sum" }, { NULL } };
/* A library's kernels (CUkernel, cuLibraryGetKernel): cuFuncGetName
 * refuses them, as the driver does, and cuKernelGetName names them. */
static struct CUfunc_st lib_kernels[] = { { "scale_rows" } };

/* The blocks handed out and not yet freed: a free of anything else fails,
 * as the driver's does. One thread at a time (the test program's). */
#define LIVE_MAX 64
static struct {
	uint64_t addr;
	size_t size;
	int host; /* pinned host memory: unmapped on free */
} live[LIVE_MAX];
static uint64_t next_addr = 0x7e0000000000ull, next_addr_v1 = 0x10000000u;

static CUresult give(uint64_t *counter, size_t size, uint64_t *out)
{
	for (int i = 0; i < LIVE_MAX; i++)
		if (!live[i].addr) {
			live[i].addr = *counter;
			live[i].size = size;
			live[i].host = 0;
			*out = *counter;
			*counter += (size + 511) & ~(size_t)511;
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult take(uint64_t addr, int host)
{
	errno = ENOMSG;
	if (!addr)
		return CUDA_SUCCESS;
	for (int i = 0; i < LIVE_MAX; i++)
		if (live[i].addr == addr && live[i].host == host) {
			/* Pinned memory goes away by the driver's own means, not
			 * through a munmap the recorder sees (so a watch on it must
			 * end at cuMemFreeHost): here, made unreadable (and its
			 * pages left mapped, in a double that lives for a test). */
			if (host)
				mprotect((void *)(uintptr_t)addr, live[i].size, PROT_NONE);
			live[i].addr = 0;
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_INVALID_VALUE;
}

/* Device memory from *counter: its address in *out. */
static CUresult device_alloc_from(uint64_t *counter, size_t size, uint64_t *out)
{
	errno = ENOMSG;
	return size ? give(counter, size, out) : CUDA_ERROR_INVALID_VALUE;
}

static CUresult device_alloc(CUdeviceptr *dptr, size_t size)
{
	uint64_t a;
	CUresult r = dptr ? device_alloc_from(&next_addr, size, &a) : CUDA_ERROR_INVALID_VALUE;

	if (r == CUDA_SUCCESS)
		*dptr = a;
	return r;
}

static CUresult host_alloc(void **pp, size_t size)
{
	void *p;

	errno = ENOMSG;
	if (!pp || !size)
		return CUDA_ERROR_INVALID_VALUE;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (int i = 0; i < LIVE_MAX; i++)
		if (!live[i].addr) {
			live[i].addr = (uintptr_t)p;
			live[i].size = size;
			live[i].host = 1;
			*pp = p;
			errno = ENOMSG;
			return CUDA_SUCCESS;
		}
	munmap(p, size);
	errno = ENOMSG;
	return CUDA_ERROR_OUT_OF_MEMORY;
}

/* The driver's own state, kept to the end (never freed). */
static struct {
	void *heap, *map;
	char *name;
} driver_state;

EXPORT CUresult cuInit(unsigned flags)
{
	if (!flags && !driver_state.heap) {
		driver_state.heap = malloc(4000);
		driver_state.map = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		driver_state.name = strdup("fakecuda: a test double of the CUDA driver");
	}
	errno = ENOMSG;
	return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *dev)
{
	errno = ENOMSG;
	*dev = 1;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule mod, const char *name)
{
	(void)mod;
	errno = ENOMSG;
	for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
		if (kernels[i].name ? !strcmp(kernels[i].name, name) : !strcmp(name, "anonymous")) {
			*f = &kernels[i];
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuFuncGetName(const char **name, CUfunction f)
{
	errno = ENOMSG;
	if (f < kernels || f >= kernels + sizeof kernels / sizeof kernels[0])
		return CUDA_ERROR_INVALID_HANDLE;
	if (!f->name)
		return CUDA_ERROR_INVALID_VALUE;
	*name = f->name;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryGetKernel(CUfunction *k, void *library, const char *name)
{
	(void)library;
	errno = ENOMSG;
	if (strcmp(name, lib_kernels[0].name))
		return CUDA_ERROR_NOT_FOUND;
	*k = &lib_kernels[0];
	return CUDA_SUCCESS;
}

EXPORT CUresult cuKernelGetName(const char **name, CUfunction k)
{
	errno = ENOMSG;
	if (k != &lib_kernels[0])
		return CUDA_ERROR_INVALID_HANDLE;
	*name = k->name;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned size)
{
	uint64_t a;
	CUresult r = dptr ? device_alloc_from(&next_addr_v1, size, &a) : CUDA_ERROR_INVALID_VALUE;

	if (r == CUDA_SUCCESS)
		*dptr = (CUdeviceptr_v1)a;
	return r;
}

EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
	return take(dptr, 0);
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
	return device_alloc(dptr, size);
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height, unsigned elem)
{
	size_t p = (width + 511) & ~(size_t)511;

	errno = ENOMSG;
	if (!pitch || !height || (elem != 4 && elem != 8 && elem != 16))
		return CUDA_ERROR_INVALID_VALUE;
	*pitch = p;
	return device_alloc(dptr, p * height);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	return take(dptr, 0);
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned flags)
{
	(void)flags;
	return device_alloc(dptr, size);
}

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t size)
{
	return host_alloc(pp, size);
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t size, unsigned flags)
{
	(void)flags;
	return host_alloc(pp, size);
}

EXPORT CUresult cuMemFreeHost(void *p)
{
	return take((uintptr_t)p, 1);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream stream)
{
	(void)stream;
	return device_alloc(dptr, size);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream stream)
{
	(void)stream;
	return device_alloc(dptr, size);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream stream)
{
	(void)pool, (void)stream;
	return device_alloc(dptr, size);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream stream)
{
	(void)pool, (void)stream;
	return device_alloc(dptr, size);
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream)
{
	(void)stream;
	return take(dptr, 0);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream)
{
	(void)stream;
	return take(dptr, 0);
}

/* Virtual memory management: each reservation's mapped granules are a bit
 * mask (64 granules at most). */
#define GRANULE (2ull << 20)
#define VMM_MAX 16


static struct {
	uint64_t base, size;
	uint64_t mapped; /* one bit per granule */
} reserved[VMM_MAX];
static struct {
	size_t size; /* 0: a free slot */
} handles[VMM_MAX];
static uint64_t next_reserve = 0x7d0000000000ull;

/* The reservation that holds [ptr, ptr + size), granule-aligned, or -1. */
static int reservation_of(CUdeviceptr ptr, size_t size)
{
	if (!size || ptr % GRANULE || size % GRANULE)
		return -1;
	for (int i = 0; i < VMM_MAX; i++)
		if (reserved[i].size && ptr >= reserved[i].base && size <= reserved[i].size &&
		    ptr - reserved[i].base <= reserved[i].size - size)
			return i;
	return -1;
}

/* The bits of [ptr, ptr + size) in reservation r's mask. */
static uint64_t granules(int r, CUdeviceptr ptr, size_t size)
{
	uint64_t n = size / GRANULE, first = (ptr - reserved[r].base) / GRANULE;

	return (n >= 64 ? ~0ull : (1ull << n) - 1) << first;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
				    unsigned long long flags)
{
	(void)alignment, (void)addr;
	errno = ENOMSG;
	if (!ptr || !size || size % GRANULE || size / GRANULE > 64 || flags)
		return CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; i < VMM_MAX; i++)
		if (!reserved[i].size) {
			reserved[i].base = *ptr = next_reserve;
			reserved[i].size = size;
			reserved[i].mapped = 0;
			next_reserve += size + GRANULE; /* a hole between reservations */
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	int r = reservation_of(ptr, size);

	errno = ENOMSG;
	if (r < 0 || reserved[r].base != ptr || reserved[r].size != size || reserved[r].mapped)
		return CUDA_ERROR_INVALID_VALUE;
	reserved[r].size = 0;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
			    unsigned long long flags)
{
	errno = ENOMSG;
	if (!handle || !prop || prop->location.type != 1 || !size || size % GRANULE || flags)
		return CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; i < VMM_MAX; i++)
		if (!handles[i].size) {
			handles[i].size = size;
			*handle = 0xc0de0000ull + (unsigned)i; /* opaque to the program */
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_OUT_OF_MEMORY;
}

/* The slot of handle h, or -1. */
static int handle_slot(CUmemGenericAllocationHandle h)
{
	uint64_t i = h - 0xc0de0000ull;

	return i < VMM_MAX && handles[i].size ? (int)i : -1;
}

/* Released while mapped, as the driver allows: the memory goes with its
 * last mapping, which the double does not follow. */
EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	int h = handle_slot(handle);

	errno = ENOMSG;
	if (h < 0)
		return CUDA_ERROR_INVALID_VALUE;
	handles[h].size = 0;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
			 unsigned long long flags)
{
	int r = reservation_of(ptr, size), h = handle_slot(handle);

	errno = ENOMSG;
	if (r < 0 || h < 0 || flags || offset > handles[h].size || size > handles[h].size - offset ||
	    reserved[r].mapped & granules(r, ptr, size))
		return CUDA_ERROR_INVALID_VALUE;
	reserved[r].mapped |= granules(r, ptr, size);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	int r = reservation_of(ptr, size);

	errno = ENOMSG;
	if (r < 0 || (reserved[r].mapped & granules(r, ptr, size)) != granules(r, ptr, size))
		return CUDA_ERROR_INVALID_VALUE;
	reserved[r].mapped &= ~granules(r, ptr, size);
	return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f)
{
	errno = ENOMSG;
	return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			       unsigned bz, unsigned shared, CUstream stream, void **params, void **extra)
{
	(void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)stream, (void)params,
		(void)extra;
	return launch(f);
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
				    unsigned bz, unsigned shared, CUstream stream, void **params, void **extra)
{
	(void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)stream, (void)params,
		(void)extra;
	return launch(f);
}

EXPORT CUresult cuLaunchKernelEx(const void *config, CUfunction f, void **params, void **extra)
{
	(void)config, (void)params, (void)extra;
	return launch(f);
}

EXPORT CUresult cuLaunchKernelEx_ptsz(const void *config, CUfunction f, void **params, void **extra)
{
	(void)config, (void)params, (void)extra;
	return launch(f);
}

/* CUDA arrays: handles into a table of the double's own (no memory
 * behind them); any format is taken, a width of 0 refused. */
struct CUarray_st {
	int used;
};
static struct CUarray_st arrays[16];

static CUresult array_new(void **handle, size_t width)
{
	errno = ENOMSG;
	if (!handle || !width)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
		if (!arrays[i].used) {
			arrays[i].used = 1;
			*handle = &arrays[i];
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult array_drop(void *handle)
{
	struct CUarray_st *a = handle;

	errno = ENOMSG;
	if (!a || a < arrays || a >= arrays + sizeof arrays / sizeof arrays[0] || !a->used)
		return CUDA_ERROR_INVALID_HANDLE;
	a->used = 0;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuArrayCreate_v2(void **handle, const CUDA_ARRAY_DESCRIPTOR *d)
{
	return array_new(handle, d ? d->Width : 0);
}

EXPORT CUresult cuArray3DCreate_v2(void **handle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	return array_new(handle, d ? d->Width : 0);
}

EXPORT CUresult cuMipmappedArrayCreate(void **handle, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
	return array_new(handle, d && levels ? d->Width : 0);
}

EXPORT CUresult cuArrayDestroy(void *handle)
{
	return array_drop(handle);
}

EXPORT CUresult cuMipmappedArrayDestroy(void *handle)
{
	return array_drop(handle);
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags, int *status);

/* The driver's table: each exported function under its exported name. */
#define FN(name) { #name, (void *)name }
static const struct {
	const char *name;
	void *fn;
} exports[] = {
	FN(cuInit),
	FN(cuCtxGetDevice),
	FN(cuModuleGetFunction),
	FN(cuFuncGetName),
	FN(cuLibraryGetKernel),
	FN(cuKernelGetName),
	FN(cuMemAlloc),
	FN(cuMemFree),
	FN(cuMemAlloc_v2),
	FN(cuMemAllocPitch_v2),
	FN(cuMemFree_v2),
	FN(cuMemAllocManaged),
	FN(cuMemAllocHost_v2),
	FN(cuMemHostAlloc),
	FN(cuMemFreeHost),
	FN(cuMemAllocAsync),
	FN(cuMemAllocAsync_ptsz),
	FN(cuMemAllocFromPoolAsync),
	FN(cuMemAllocFromPoolAsync_ptsz),
	FN(cuMemFreeAsync),
	FN(cuMemFreeAsync_ptsz),
	FN(cuMemAddressReserve),
	FN(cuMemAddressFree),
	FN(cuMemCreate),
	FN(cuMemRelease),
	FN(cuMemMap),
	FN(cuMemUnmap),
	FN(cuLaunchKernel),
	FN(cuLaunchKernel_ptsz),
	FN(cuLaunchKernelEx),
	FN(cuLaunchKernelEx_ptsz),
	FN(cuArrayCreate_v2),
	FN(cuArray3DCreate_v2),
	FN(cuMipmappedArrayCreate),
	FN(cuArrayDestroy),
	FN(cuMipmappedArrayDestroy),
	FN(cuGetProcAddress),
	FN(cuGetProcAddress_v2),
};

static void *exported(const char *name)
{
	for (size_t i = 0; i < sizeof exports / sizeof exports[0]; i++)
		if (!strcmp(exports[i].name, name))
			return exports[i].fn;
	return NULL;
}

/* The driver's resolution of a name at a CUDA version and flags. */
static void *resolve(const char *symbol, int version, cuuint64_t flags)
{
	static const char *const v2[] = { "cuMemAlloc",     "cuMemAllocPitch", "cuMemFree",
					  "cuMemAllocHost", "cuArrayCreate",   "cuArray3DCreate" };
	char name[128];
	void *p;

	if (strlen(symbol) + 6 > sizeof name)
		return NULL;
	if (!strcmp(symbol, "cuGetProcAddress"))
		return exported(version >= 12000 ? "cuGetProcAddress_v2" : "cuGetProcAddress");
	if (flags & 2) {
		strcpy(name, symbol);
		strcat(name, "_ptsz");
		if ((p = exported(name)))
			return p;
	}
	for (size_t i = 0; i < sizeof v2 / sizeof v2[0]; i++)
		if (version >= 3020 && !strcmp(symbol, v2[i])) {
			strcpy(name, symbol);
			strcat(name, "_v2");
			return exported(name);
		}
	return exported(symbol);
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
	return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags, int *status)
{
	void *p = symbol && pfn ? resolve(symbol, version, flags) : NULL;

	errno = ENOMSG;
	if (pfn)
		*pfn = p;
	if (status)
		*status = p ? 0 : 1; /* CU_GET_PROC_ADDRESS_SUCCESS, _SYMBOL_NOT_FOUND */
	return p ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
