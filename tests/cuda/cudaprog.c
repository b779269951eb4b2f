/* SPDX-License-Identifier: MIT */
/* cudaprog.c: a CUDA program in miniature, for cuda.sh: it reaches the
 * driver the way the CUDA runtime does (dlopen libcuda.so.1, dlsym
 * cuGetProcAddress_v2, fetch cuGetProcAddress again through itself, then
 * every other entry point through that), plus one entry point found with
 * dlsym() as driver-API programs do, and makes a known sequence of device
 * memory calls and kernel launches. Run against tests/cuda/driver's test
 * double; it prints its own accounting, which must be the same under the
 * recorder. Every driver call must leave errno as the driver set it.
 *
 * The sequence (sizes in bytes):
 *   device   cuMemAlloc 4096 (leaky_upload, never freed), 1048576, 8192
 *            (through dlsym's cuMemAlloc_v2), cuMemAllocPitch 1000 x 10
 *            of 4-byte elements (pitch 1024: 10240)
 *   async    cuMemAllocAsync 65536, cuMemAllocAsync_ptsz 32768,
 *            cuMemAllocFromPoolAsync 16384; freed with cuMemFreeAsync
 *            and cuMemFreeAsync_ptsz
 *   managed  cuMemAllocManaged 2097152, freed with cuMemFree
 *   pinned   cuMemHostAlloc 8192, cuMemAllocHost 4096, cuMemFreeHost
 *   vmm      (grow_segment) cuMemAddressReserve of 4 chunks of 2 MiB
 *            (c0..c3), cuMemCreate of 3 chunks on device 2, each mapped
 *            at c0, c1, c2; cuMemUnmap of c0, then of c1 and c2 with one
 *            call; c0 mapped again, never unmapped. A handle of 3 chunks
 *            mapped at c1..c3, then c2 unmapped alone (the middle of a
 *            mapping: the recorder keeps c1 and c3), an unmap of c3 and
 *            the chunk past the reservation, which fails, then c1 and
 *            c3 unmapped; the handles released (c0's while mapped)
 *   not recorded: a failing cuMemAlloc (0 bytes), cuMemFree(0), and a
 *            cuMemAlloc of the old ABI (CUDA version 2000) and its free
 *   kernels  vector_add by cuLaunchKernel, cuLaunchKernel_ptsz and
 *            cuLaunchKernelEx; reduce_sum by cuLaunchKernelEx_ptsz; one
 *            the driver cannot name, by cuLaunchKernel; a library's
 *            kernel (cuLibraryGetKernel: scale_rows) by cuLaunchKernel
 *
 * `cudaprog cache` runs another sequence instead: a 2 MiB segment
 * allocated through libc10_cuda.so (a stand-in for PyTorch's CUDA library,
 * c10stub.c), 64 KiB through libtorch_cuda.so and libcublas.so.13 (a
 * cuBLAS handle's workspace, as PyTorch's handle pool keeps it), 32 KiB
 * through libcublas.so.13 alone (a program's own handle, never destroyed)
 * and 4096 bytes by leaky_upload, all kept to the end.
 * `cudaprog oom`: cuMemAlloc of 1 MiB blocks in fill_device() until the
 * driver refuses one (the double holds 64 blocks), then one
 * cuMemAllocAsync of 4096 bytes (refused too), then everything freed.
 * `cudaprog arrays`: CUDA arrays: a volume of 64 x 64 x 8 bytes
 * (leaky_volume, kept to the end); an image of 640 x 480 float4 (4915200
 * bytes), a line of 1000 half2 (4000), 6 layers of 32 x 32 short (12288),
 * 30 x 30 of BC1 (8 x 8 blocks of 8 bytes: 512) and 3 levels of a
 * mipmapped 64 x 64 float (21504), all destroyed; one of a format the
 * recorder does not know (0x60), destroyed, and one of width 0, refused.
 * `cudaprog watch`: 8192 bytes of pinned memory watched with
 * msmemscope_watch() (when the recorder is there), written in operator
 * "fill", freed (the double unmaps it), then an operator more: the
 * recorder must stop checksumming the block at its free. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-types.h"

typedef CUresult (*getproc_v2_t)(const char *, void **, int, uint64_t, int *);
typedef CUresult (*alloc_t)(CUdeviceptr *, size_t);
typedef CUresult (*free_t)(CUdeviceptr);
typedef CUresult (*launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			     CUstream, void **, void **);
typedef CUresult (*launch_ex_t)(const void *, CUfunction, void **, void **);

static getproc_v2_t get_proc;
static int failures;

static void die(const char *what)
{
	fprintf(stderr, "cudaprog: %s\n", what);
	exit(2);
}

/* The entry point name at a CUDA version, with flags (2: per-thread
 * default stream). */
static void *proc(const char *name, int version, uint64_t flags)
{
	void *p = NULL;
	int status = -1;

	if (get_proc(name, &p, version, flags, &status) || !p || status)
		die(name);
	return p;
}

/* Each driver call's result and errno: the driver sets ENOMSG. */
static CUresult check(const char *what, CUresult r, CUresult want)
{
	if (r != want || errno != ENOMSG) {
		fprintf(stderr, "cudaprog: %s returned %d with errno %d\n", what, r, errno);
		failures++;
	}
	errno = 0;
	return r;
}

static unsigned long long device_bytes, async_bytes, managed_bytes, pinned_bytes, live_bytes;
static unsigned long long vmm_maps, vmm_bytes, vmm_unmaps, vmm_live_bytes;

static alloc_t mem_alloc;

__attribute__((noinline)) static CUdeviceptr leaky_upload(size_t size)
{
	CUdeviceptr d = 0;

	check("cuMemAlloc (leaky_upload)", mem_alloc(&d, size), 0);
	device_bytes += size;
	live_bytes += size;
	__asm__ volatile("" ::: "memory"); /* no tail call: leaky_upload stays on the stack */
	return d;
}

#define CHUNK (2ull << 20)

static CUresult (*mem_map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
static CUresult (*mem_unmap)(CUdeviceptr, size_t);

static void vmm_map(CUdeviceptr at, size_t size, CUmemGenericAllocationHandle h)
{
	check("cuMemMap", mem_map(at, size, 0, h, 0), 0);
	vmm_maps++;
	vmm_bytes += size;
	vmm_live_bytes += size;
}

static void vmm_unmap(CUdeviceptr at, size_t size)
{
	check("cuMemUnmap", mem_unmap(at, size), 0);
	vmm_unmaps++;
	vmm_live_bytes -= size;
}

/* Maps a chunk again and leaves it mapped, as an allocator that grows a
 * segment does. */
__attribute__((noinline)) static void grow_segment(CUdeviceptr at, CUmemGenericAllocationHandle h)
{
	vmm_map(at, CHUNK, h);
	__asm__ volatile("" ::: "memory"); /* no tail call */
}

/* The virtual memory management sequence (see the top). */
static void vmm(void)
{
	CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
	CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
	CUresult (*release)(CUmemGenericAllocationHandle);
	CUmemAllocationProp prop = { .type = 1, .location = { .type = 1, .id = 2 } };
	CUmemGenericAllocationHandle h[4];
	CUdeviceptr base = 0;

	*(void **)&reserve = proc("cuMemAddressReserve", 12000, 0);
	*(void **)&create = proc("cuMemCreate", 12000, 0);
	*(void **)&release = proc("cuMemRelease", 12000, 0);
	*(void **)&mem_map = proc("cuMemMap", 12000, 0);
	*(void **)&mem_unmap = proc("cuMemUnmap", 12000, 0);

	check("cuMemAddressReserve", reserve(&base, 4 * CHUNK, 0, 0, 0), 0);
	for (int i = 0; i < 3; i++) {
		check("cuMemCreate", create(&h[i], CHUNK, &prop, 0), 0);
		vmm_map(base + i * CHUNK, CHUNK, h[i]);
	}
	vmm_unmap(base, CHUNK);
	vmm_unmap(base + CHUNK, 2 * CHUNK);
	grow_segment(base, h[0]);

	check("cuMemCreate", create(&h[3], 3 * CHUNK, &prop, 0), 0);
	vmm_map(base + CHUNK, 3 * CHUNK, h[3]);
	vmm_unmap(base + 2 * CHUNK, CHUNK);
	check("cuMemUnmap past the reservation", mem_unmap(base + 3 * CHUNK, 2 * CHUNK), 1);
	vmm_unmap(base + CHUNK, CHUNK);
	vmm_unmap(base + 3 * CHUNK, CHUNK);
	for (int i = 0; i < 4; i++)
		check("cuMemRelease", release(h[i]), 0);
}

/* `cudaprog watch` (see the top). */
static int watch_mode(void)
{
	void (*watch)(const void *, size_t, const char *);
	void (*op_begin)(const char *);
	void (*op_end)(void);
	CUresult (*host_alloc)(void **, size_t, unsigned);
	CUresult (*free_host)(void *);
	void *p = NULL;

	*(void **)&watch = dlsym(RTLD_DEFAULT, "msmemscope_watch");
	*(void **)&op_begin = dlsym(RTLD_DEFAULT, "msmemscope_op_begin");
	*(void **)&op_end = dlsym(RTLD_DEFAULT, "msmemscope_op_end");
	*(void **)&host_alloc = proc("cuMemHostAlloc", 12000, 0);
	*(void **)&free_host = proc("cuMemFreeHost", 12000, 0);
	check("cuMemHostAlloc", host_alloc(&p, 8192, 0), 0);
	if (watch)
		watch(p, 8192, "pinned");
	if (op_begin)
		op_begin("fill");
	memset(p, 1, 8192);
	if (op_end)
		op_end();
	check("cuMemFreeHost", free_host(p), 0);
	if (op_begin)
		op_begin("after");
	if (op_end)
		op_end();
	printf("watch pinned=8192 freed\n");
	return 0;
}

/* fn in the stand-in library name (c10stub.c). */
static void *stub_fn(const char *name, const char *fn)
{
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL), *p;

	if (!lib)
		die(dlerror());
	if (!(p = dlsym(lib, fn)))
		die(fn);
	return p;
}

/* `cudaprog cache`: a segment of PyTorch's caching allocator and a
 * cuBLAS handle's workspace of PyTorch's (the stand-ins'), a cuBLAS
 * handle's workspace of the program's, and a leak of the program's, all
 * live at exit. */
static int cache_mode(void)
{
	typedef CUdeviceptr (*stub_alloc_t)(alloc_t, size_t);
	stub_alloc_t segment = (stub_alloc_t)stub_fn("libc10_cuda.so", "stub_alloc");
	stub_alloc_t cublas = (stub_alloc_t)stub_fn("libcublas.so.13", "stub_alloc");
	CUdeviceptr (*torch)(stub_alloc_t, alloc_t, size_t) =
		(CUdeviceptr(*)(stub_alloc_t, alloc_t, size_t))stub_fn("libtorch_cuda.so", "stub_through");

	if (!segment(mem_alloc, 2097152) || !torch(cublas, mem_alloc, 65536) || !cublas(mem_alloc, 32768))
		die("a stand-in's allocation failed");
	(void)leaky_upload(4096);
	printf("cache segment=2097152 workspace=65536 own=32768 leaked=4096\n");
	return 0;
}

/* Device memory until the driver refuses (CUDA_ERROR_OUT_OF_MEMORY, 2,
 * with errno as the driver set it): the blocks it gave, in got. */
#define OOM_MAX 256
__attribute__((noinline)) static size_t fill_device(CUdeviceptr *got)
{
	size_t n = 0;
	CUresult r;

	while (n < OOM_MAX && (r = mem_alloc(&got[n], 1048576)) == 0 && errno == ENOMSG)
		n++;
	if (n == OOM_MAX || r != 2 || errno != ENOMSG)
		failures++;
	errno = 0;
	__asm__ volatile("" ::: "memory"); /* no tail call: fill_device stays on the stack */
	return n;
}

/* `cudaprog arrays`: CUDA arrays, as cudaMallocArray, cudaMalloc3DArray
 * and cudaMallocMipmappedArray make them. */
typedef CUresult (*array3d_t)(void **, const CUDA_ARRAY3D_DESCRIPTOR *);

/* A volume kept to the end: 64 x 64 x 8 bytes. */
__attribute__((noinline)) static void *leaky_volume(array3d_t create)
{
	CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 64, .Height = 64, .Depth = 8, .Format = 0x01, .NumChannels = 1 };
	void *v = NULL;

	check("cuArray3DCreate (leaky_volume)", create(&v, &d), 0);
	__asm__ volatile("" ::: "memory"); /* no tail call: leaky_volume stays on the stack */
	return v;
}

static int arrays_mode(void)
{
	CUresult (*create)(void **, const CUDA_ARRAY_DESCRIPTOR *);
	CUresult (*mip_create)(void **, const CUDA_ARRAY3D_DESCRIPTOR *, unsigned);
	CUresult (*destroy)(void *), (*mip_destroy)(void *);
	array3d_t create3d;
	CUDA_ARRAY_DESCRIPTOR image = { .Width = 640, .Height = 480, .Format = 0x20, .NumChannels = 4 };
	CUDA_ARRAY3D_DESCRIPTOR line = { .Width = 1000, .Format = 0x10, .NumChannels = 2 },
				layers = { .Width = 32,
					   .Height = 32,
					   .Depth = 6,
					   .Format = 0x09,
					   .NumChannels = 1,
					   .Flags = 1 },
				bc1 = { .Width = 30, .Height = 30, .Format = 0x91, .NumChannels = 4 },
				mip = { .Width = 64, .Height = 64, .Format = 0x20, .NumChannels = 1 },
				odd = { .Width = 16, .Height = 16, .Format = 0x60, .NumChannels = 1 },
				none = { .Width = 0, .Height = 16, .Format = 0x20, .NumChannels = 1 };
	void *a[6] = { NULL }, *unknown = NULL, *refused = NULL;

	*(void **)&create = proc("cuArrayCreate", 12000, 0);
	*(void **)&create3d = proc("cuArray3DCreate", 12000, 0);
	*(void **)&mip_create = proc("cuMipmappedArrayCreate", 12000, 0);
	*(void **)&destroy = proc("cuArrayDestroy", 12000, 0);
	*(void **)&mip_destroy = proc("cuMipmappedArrayDestroy", 12000, 0);
	if (!create || !create3d || !mip_create || !destroy || !mip_destroy)
		die("no array entry points");
	(void)leaky_volume(create3d);
	check("cuArrayCreate", create(&a[0], &image), 0);
	check("cuArray3DCreate (1D)", create3d(&a[1], &line), 0);
	check("cuArray3DCreate (layered)", create3d(&a[2], &layers), 0);
	check("cuArray3DCreate (BC1)", create3d(&a[3], &bc1), 0);
	check("cuMipmappedArrayCreate", mip_create(&a[4], &mip, 3), 0);
	check("cuArray3DCreate (a format the recorder does not know)", create3d(&unknown, &odd), 0);
	check("cuArray3DCreate (width 0)", create3d(&refused, &none), 1);
	for (int i = 0; i < 4; i++)
		check("cuArrayDestroy", destroy(a[i]), 0);
	check("cuMipmappedArrayDestroy", mip_destroy(a[4]), 0);
	check("cuArrayDestroy (the format not known)", destroy(unknown), 0);
	check("cuArrayDestroy (NULL)", destroy(NULL), 400);
	printf("arrays allocs=6 failures=%d\n", failures);
	return failures ? 1 : 0;
}

/* `cudaprog oom`: the driver refuses; what was live then is freed. */
static int oom_mode(void)
{
	static CUdeviceptr got[OOM_MAX];
	CUdeviceptr a = 0;
	size_t n = fill_device(got);

	check("cuMemAllocAsync (refused)",
	      ((CUresult(*)(CUdeviceptr *, size_t, CUstream))proc("cuMemAllocAsync", 12000, 0))(&a, 4096, NULL), 2);
	for (size_t i = 0; i < n; i++)
		check("cuMemFree", ((free_t)proc("cuMemFree", 12000, 0))(got[i]), 0);
	printf("oom blocks=%zu failures=%d\n", n, failures);
	return 0;
}

int main(int argc, char **argv)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	void *p;
	getproc_v2_t first;
	CUdeviceptr a = 0, b = 0, pitch_block = 0, s1 = 0, s2 = 0, s3 = 0, m = 0, zero = 0;
	unsigned old = 0;
	size_t pitch = 0;
	void *pin1 = NULL, *pin2 = NULL;
	CUfunction vector_add, reduce_sum, anonymous, scale_rows;
	alloc_t direct;
	free_t mem_free;
	launch_t launch, launch_ptsz;
	launch_ex_t launch_ex, launch_ex_ptsz;

	if (!h)
		die(dlerror());
	/* As cudart does: cuGetProcAddress_v2 by dlsym, then through itself. */
	*(void **)&first = dlsym(h, "cuGetProcAddress_v2");
	if (!first)
		die("no cuGetProcAddress_v2");
	get_proc = first;
	if (get_proc("", &p, 0, 0, NULL) == 0)
		die("the empty name resolved");
	errno = 0;
	check("cuInit", ((CUresult(*)(unsigned))proc("cuInit", 2000, 0))(0), 0);
	(void)proc("cuGetProcAddress", 11030, 0);
	*(void **)&get_proc = proc("cuGetProcAddress", 12000, 0);

	*(void **)&mem_alloc = proc("cuMemAlloc", 12000, 0);
	*(void **)&mem_free = proc("cuMemFree", 12000, 0);
	*(void **)&direct = dlsym(h, "cuMemAlloc_v2");
	if (!direct)
		die("no cuMemAlloc_v2");
	if (argc > 1 && !strcmp(argv[1], "cache"))
		return cache_mode();
	if (argc > 1 && !strcmp(argv[1], "watch"))
		return watch_mode();
	if (argc > 1 && !strcmp(argv[1], "oom"))
		return oom_mode();
	if (argc > 1 && !strcmp(argv[1], "arrays"))
		return arrays_mode();

	/* Device memory. */
	(void)leaky_upload(4096);
	check("cuMemAlloc", mem_alloc(&a, 1048576), 0);
	check("cuMemAlloc_v2 (dlsym)", direct(&b, 8192), 0);
	check("cuMemAllocPitch",
	      ((CUresult(*)(CUdeviceptr *, size_t *, size_t, size_t, unsigned))proc("cuMemAllocPitch", 12000, 0))(
		      &pitch_block, &pitch, 1000, 10, 4),
	      0);
	device_bytes += 1048576 + 8192 + pitch * 10;
	check("cuMemAlloc of 0 bytes", mem_alloc(&zero, 0), 1);
	check("cuMemFree", mem_free(a), 0);
	check("cuMemFree", mem_free(b), 0);
	check("cuMemFree", mem_free(pitch_block), 0);
	check("cuMemFree(0)", mem_free(0), 0);

	/* The old ABI: 32-bit sizes and addresses. */
	check("cuMemAlloc (version 2000)",
	      ((CUresult(*)(unsigned *, unsigned))proc("cuMemAlloc", 2000, 0))(&old, 256), 0);
	check("cuMemFree (version 2000)", ((CUresult(*)(unsigned))proc("cuMemFree", 2000, 0))(old), 0);

	/* Stream-ordered memory, also through the per-thread stream ABI. */
	check("cuMemAllocAsync",
	      ((CUresult(*)(CUdeviceptr *, size_t, CUstream))proc("cuMemAllocAsync", 12000, 0))(&s1, 65536, NULL), 0);
	check("cuMemAllocAsync_ptsz",
	      ((CUresult(*)(CUdeviceptr *, size_t, CUstream))proc("cuMemAllocAsync", 12000, 2))(&s2, 32768, NULL), 0);
	check("cuMemAllocFromPoolAsync",
	      ((CUresult(*)(CUdeviceptr *, size_t, CUmemoryPool, CUstream))proc("cuMemAllocFromPoolAsync", 12000,
										0))(&s3, 16384, NULL, NULL),
	      0);
	async_bytes += 65536 + 32768 + 16384;
	check("cuMemFreeAsync", ((CUresult(*)(CUdeviceptr, CUstream))proc("cuMemFreeAsync", 12000, 0))(s1, NULL), 0);
	check("cuMemFreeAsync_ptsz", ((CUresult(*)(CUdeviceptr, CUstream))proc("cuMemFreeAsync", 12000, 2))(s2, NULL),
	      0);
	check("cuMemFreeAsync", ((CUresult(*)(CUdeviceptr, CUstream))proc("cuMemFreeAsync", 12000, 0))(s3, NULL), 0);

	/* Managed and pinned host memory. */
	check("cuMemAllocManaged",
	      ((CUresult(*)(CUdeviceptr *, size_t, unsigned))proc("cuMemAllocManaged", 12000, 0))(&m, 2097152, 1), 0);
	managed_bytes += 2097152;
	check("cuMemFree (managed)", mem_free(m), 0);
	check("cuMemHostAlloc", ((CUresult(*)(void **, size_t, unsigned))proc("cuMemHostAlloc", 12000, 0))(&pin1, 8192, 0),
	      0);
	check("cuMemAllocHost", ((CUresult(*)(void **, size_t))proc("cuMemAllocHost", 12000, 0))(&pin2, 4096), 0);
	pinned_bytes += 8192 + 4096;
	((char *)pin1)[8191] = 1; /* real memory */
	check("cuMemFreeHost", ((CUresult(*)(void *))proc("cuMemFreeHost", 12000, 0))(pin1), 0);
	check("cuMemFreeHost", ((CUresult(*)(void *))proc("cuMemFreeHost", 12000, 0))(pin2), 0);

	vmm();

	/* Kernels. */
	{
		CUresult (*get_function)(CUfunction *, void *, const char *);

		*(void **)&get_function = proc("cuModuleGetFunction", 2000, 0);
		check("cuModuleGetFunction", get_function(&vector_add, NULL, "vector_add"), 0);
		check("cuModuleGetFunction", get_function(&reduce_sum, NULL, "reduce_sum"), 0);
		check("cuModuleGetFunction", get_function(&anonymous, NULL, "anonymous"), 0);
		/* A library's kernel (CUkernel), launched as the runtime does. */
		*(void **)&get_function = proc("cuLibraryGetKernel", 12000, 0);
		check("cuLibraryGetKernel", get_function(&scale_rows, NULL, "scale_rows"), 0);
	}
	*(void **)&launch = proc("cuLaunchKernel", 12000, 0);
	*(void **)&launch_ptsz = proc("cuLaunchKernel", 12000, 2);
	*(void **)&launch_ex = proc("cuLaunchKernelEx", 12000, 0);
	*(void **)&launch_ex_ptsz = proc("cuLaunchKernelEx", 12000, 2);
	check("cuLaunchKernel", launch(vector_add, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), 0);
	check("cuLaunchKernel_ptsz", launch_ptsz(vector_add, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), 0);
	check("cuLaunchKernelEx", launch_ex(NULL, vector_add, NULL, NULL), 0);
	check("cuLaunchKernelEx_ptsz", launch_ex_ptsz(NULL, reduce_sum, NULL, NULL), 0);
	check("cuLaunchKernel (anonymous)", launch(anonymous, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), 0);
	check("cuLaunchKernel (a library's kernel)", launch(scale_rows, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), 0);

	printf("device allocs=4 bytes=%llu\n", device_bytes);
	printf("async allocs=3 bytes=%llu\n", async_bytes);
	printf("managed allocs=1 bytes=%llu\n", managed_bytes);
	printf("pinned allocs=2 bytes=%llu\n", pinned_bytes);
	printf("vmm maps=%llu bytes=%llu unmaps=%llu still mapped bytes=%llu\n", vmm_maps, vmm_bytes, vmm_unmaps,
	       vmm_live_bytes);
	printf("still allocated bytes=%llu\n", live_bytes);
	printf("launches=6 failures=%d\n", failures);
	return failures ? 1 : 0;
}
