/* SPDX-License-Identifier: MIT */
/* cuda.c: CUDA device memory and kernel launches, captured at the driver
 * entry points the program obtains from libcuda.
 *
 * The CUDA runtime (libcudart, shared or static) does not link against the
 * driver: it dlopen()s libcuda.so.1, looks up cuGetProcAddress_v2 with
 * dlsym() and fetches every other entry point by name through it, itself
 * included. So the recorder wraps two doors: dlsym() (dlsym.c sends it
 * the lookups of "cu" names in real handles) and the driver's
 * cuGetProcAddress (v1 and v2 ABIs), whose wrappers hand out ours. A
 * program linked against libcuda (-lcuda) calls the exports through its
 * GOT instead: redirect.c points those GOT entries (from start-up, or once
 * libcuda is seen loaded) to the x_ twins of the wrappers, which call the
 * exports themselves (slots EXP(slot)), never what cuGetProcAddress
 * handed out under the same name.
 *
 * An entry point has several ABIs under one name (cuMemAlloc with 32-bit
 * sizes, cuMemAlloc_v2; cuLaunchKernel and cuLaunchKernel_ptsz), each
 * exported under its own name. A pointer is wrapped only when its ABI is
 * known: by the exported name dladdr() finds at exactly that address, or,
 * when the driver hands out an address no export names, by the name asked
 * for, the CUDA version and the flags, as the driver's own table maps
 * them. Each exported name has one slot for the real function; a pointer
 * that differs from what its slot holds is handed back unwrapped. Older
 * ABIs are not wrapped.
 *
 * The wrappers record (format.h, version 6):
 *   DEV_ALLOC | kind    after the driver's call returned success: the
 *                       device, the address, the size and the stack;
 *   DEV_FREE | kind     before the driver's call: the device, the address
 *                       (freeing 0 records nothing);
 *   DEV_ALLOC | ARRAY   (version 15) after cuArrayCreate, cuArray3DCreate or
 *                       cuMipmappedArrayCreate returned success: at the
 *                       handle, of its elements' bytes; DEV_FREE | ARRAY
 *                       before cuArrayDestroy, cuMipmappedArrayDestroy;
 *   DEV_ALLOC | VMM     after a successful cuMemMap, of the mapped range, on
 *                       the device of the handle's cuMemCreate (vmm.c
 *                       keeps both tables);
 *   DEV_FREE | VMM      before cuMemUnmap, for every mapping the range
 *                       meets; after it, DEV_ALLOC | VMM of what is left
 *                       outside the range, or of all of them when the
 *                       driver refused;
 *   DEV_ALLOC_FAIL | kind  after the driver refused an allocation for want
 *                       of memory (CUDA_ERROR_OUT_OF_MEMORY; version 8): the
 *                       size asked for, the stack, the device (of
 *                       cuMemCreate's location for VMM);
 *   KERNEL              after a successful launch, with the kernel's name
 *                       from cuFuncGetName (CUDA 12.3), as
 *                       msmemscope_kernel_launch() records it.
 * The device is the ordinal of the calling thread's context
 * (cuCtxGetDevice; 0 without one). Both driver calls are fetched once
 * through the real cuGetProcAddress and made inside the reentrancy guard
 * as the recorder's own (what they allocate comes from the arena).
 *
 * The promise: the program gets the driver's return values and
 * out-parameters unchanged, errno as the driver left it, and no block of
 * its heap is the recorder's. Without libcuda nothing here runs. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "hooks-int.h"
#include "log.h"
#include "objects.h"
#include "stamp.h"

/* The driver's types, as cuda.h declares them (not needed to build). */
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef int CUdevice;
typedef uint64_t cuuint64_t;
typedef struct CUstream_st *CUstream;
typedef struct CUfunc_st *CUfunction;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUarray_st *CUarray;
typedef struct CUmipmappedArray_st *CUmipmappedArray;
typedef struct {
	size_t Width, Height;
	int Format;
	unsigned NumChannels;
} CUDA_ARRAY_DESCRIPTOR;
typedef struct {
	size_t Width, Height, Depth;
	int Format;
	unsigned NumChannels, Flags;
} CUDA_ARRAY3D_DESCRIPTOR;
/* The head of CUmemAllocationProp: what the recorder reads of it. */
typedef struct {
	int type;
	int requestedHandleTypes;
	struct {
		int type;
		int id;
	} location;
} CUmemAllocationProp;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CU_MEM_LOCATION_TYPE_DEVICE 1
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2

/* The name recorded for a kernel the driver cannot name. */
#define KERNEL_UNNAMED "<cuda kernel>"

/* The wrapped entry points, one slot per exported name. */
enum cu_slot {
	CU_GETPROC,
	CU_GETPROC_V2,
	CU_MEM_ALLOC,
	CU_MEM_ALLOC_PITCH,
	CU_MEM_FREE,
	CU_MEM_ALLOC_MANAGED,
	CU_MEM_ALLOC_HOST,
	CU_MEM_HOST_ALLOC,
	CU_MEM_FREE_HOST,
	CU_MEM_ALLOC_ASYNC,
	CU_MEM_ALLOC_ASYNC_PTSZ,
	CU_MEM_ALLOC_POOL,
	CU_MEM_ALLOC_POOL_PTSZ,
	CU_MEM_FREE_ASYNC,
	CU_MEM_FREE_ASYNC_PTSZ,
	CU_MEM_CREATE,
	CU_MEM_RELEASE,
	CU_MEM_MAP,
	CU_MEM_UNMAP,
	CU_ARRAY_CREATE,
	CU_ARRAY3D_CREATE,
	CU_ARRAY_DESTROY,
	CU_MIPMAPPED_CREATE,
	CU_MIPMAPPED_DESTROY,
	CU_LAUNCH,
	CU_LAUNCH_PTSZ,
	CU_LAUNCH_EX,
	CU_LAUNCH_EX_PTSZ,
	CU_NSLOTS
};

typedef void (*cu_fn)(void);

/* What the program's entry points really are: the driver's functions,
 * filled once each (compare-and-swap from NULL). Slots from CU_NSLOTS on
 * (EXP(slot)) are those the program reaches through its GOT, linked
 * against libcuda (redirect.c): the exports themselves, apart from what
 * cuGetProcAddress hands out under the same name (which a profiler's
 * injection may have replaced, and which may differ from the export). */
#define EXP(slot) ((slot) + CU_NSLOTS)
static void *real_fn[2 * CU_NSLOTS];

#define REAL(slot, type) ((type)(cu_fn)__atomic_load_n(&real_fn[slot], __ATOMIC_ACQUIRE))

/* The driver's functions the wrappers call for themselves. */
static CUresult (*ctx_get_device)(CUdevice *);
static CUresult (*func_get_name)(const char **, CUfunction);
static CUresult (*kernel_get_name)(const char **, CUfunction);
static int driver_fetched;

/* --- recording ------------------------------------------------------------ */

/* Fetches cuCtxGetDevice, cuFuncGetName and cuKernelGetName through the
 * real cuGetProcAddress, once one is known. Inside the guard. */
static void driver_fetch(void)
{
	CUresult (*v2)(const char *, void **, int, cuuint64_t, int *) =
		REAL(CU_GETPROC_V2, CUresult (*)(const char *, void **, int, cuuint64_t, int *));
	CUresult (*v1)(const char *, void **, int, cuuint64_t) =
		REAL(CU_GETPROC, CUresult (*)(const char *, void **, int, cuuint64_t));
	void *dev = NULL, *name = NULL, *kname = NULL;
	int status;

	/* A program linked against libcuda: the exports found at start-up. */
	if (!v2 && !v1) {
		v2 = REAL(EXP(CU_GETPROC_V2), CUresult(*)(const char *, void **, int, cuuint64_t, int *));
		v1 = REAL(EXP(CU_GETPROC), CUresult(*)(const char *, void **, int, cuuint64_t));
	}

	if (v2) {
		if (v2("cuCtxGetDevice", &dev, 2000, 0, &status) != CUDA_SUCCESS)
			dev = NULL;
		if (v2("cuFuncGetName", &name, 12030, 0, &status) != CUDA_SUCCESS)
			name = NULL;
		if (v2("cuKernelGetName", &kname, 12030, 0, &status) != CUDA_SUCCESS)
			kname = NULL;
	} else if (v1) {
		if (v1("cuCtxGetDevice", &dev, 2000, 0) != CUDA_SUCCESS)
			dev = NULL;
		if (v1("cuFuncGetName", &name, 12030, 0) != CUDA_SUCCESS)
			name = NULL;
		if (v1("cuKernelGetName", &kname, 12030, 0) != CUDA_SUCCESS)
			kname = NULL;
	} else {
		return; /* entry points from dlsym() alone: try again later */
	}
	/* Two threads may fetch at once: each stores the same pointers. */
	__atomic_store_n((void **)&ctx_get_device, dev, __ATOMIC_RELAXED);
	__atomic_store_n((void **)&func_get_name, name, __ATOMIC_RELAXED);
	__atomic_store_n((void **)&kernel_get_name, kname, __ATOMIC_RELAXED);
	__atomic_store_n(&driver_fetched, 1, __ATOMIC_RELEASE);
}

/* Calls into the driver made for the recorder: its own (busy 2), so that
 * what the driver allocates there comes from the arena. */
static void driver_begin(void)
{
	mms__tls_busy = 2;
	if (unlikely(!__atomic_load_n(&driver_fetched, __ATOMIC_ACQUIRE)))
		driver_fetch();
}

static void driver_end(void)
{
	mms__tls_busy = 1;
}

/* The device ordinal of the calling thread's context, 0 without one.
 * Inside the guard. */
static unsigned device_now(void)
{
	CUresult (*get)(CUdevice *);
	CUdevice dev = 0;

	driver_begin();
	get = __atomic_load_n(&ctx_get_device, __ATOMIC_RELAXED);
	if (!get || get(&dev) != CUDA_SUCCESS || dev < 0)
		dev = 0;
	driver_end();
	return (unsigned)dev;
}

/* --- the devices recorded (the launcher's --device) ----------------------
 * With mms__config.devices set, only the device memory of those ordinals
 * is recorded. A free names the device of the freeing thread's context,
 * which may be another than the block's (unified addressing): so the
 * blocks left unrecorded are kept by address, and their frees left
 * unrecorded too (a mapping of cuMemCreate memory as any block). */
static int skipped_lock;
static struct mms_addrset skipped;
static int skipped_any; /* also without --device: an array not recorded (below) */

int mms__cuda_device_wanted(unsigned device)
{
	uint64_t m = mms__config.devices;

	return !m || (device < 64 && m >> device & 1);
}

/* Whether the allocation of addr on device is recorded; one that is not
 * is kept (without room, it is recorded: its free will be too). One that
 * is recorded drops an address kept of a block whose free was not seen,
 * which would leave its own free unrecorded. */
static int dev_alloc_wanted(unsigned device, uint64_t addr)
{
	int want, added = 0;

	if (!mms__config.devices && !__atomic_load_n(&skipped_any, __ATOMIC_ACQUIRE))
		return 1;
	want = mms__cuda_device_wanted(device);
	mms__spin_lock(&skipped_lock);
	if (want)
		(void)mms__addrset_take(&skipped, (uintptr_t)addr);
	else
		added = mms__addrset_add(&skipped, (uintptr_t)addr);
	mms__spin_unlock(&skipped_lock);
	return want || added < 0;
}

/* Whether the free of addr is recorded: not when its allocation was not. */
static int dev_free_wanted(uint64_t addr)
{
	int taken;

	if (!mms__config.devices && !__atomic_load_n(&skipped_any, __ATOMIC_ACQUIRE))
		return 1;
	mms__spin_lock(&skipped_lock);
	taken = mms__addrset_take(&skipped, (uintptr_t)addr);
	mms__spin_unlock(&skipped_lock);
	return !taken;
}

/* DEV_ALLOC and DEV_FREE have the common record shape (the address, then
 * varints; the device last). Each leaves out what --device does. */
static void rec_dev_alloc(struct mms_thread *t, unsigned fn, uint64_t stamp, unsigned device, uint64_t addr,
			  uint64_t size, uint32_t stack)
{
	if (dev_alloc_wanted(device, addr))
		mms__rec_addr_event(t, (uint8_t)(MMS_TAG_DEV_ALLOC | fn), stamp, addr, 3, size, stack, device, 0);
}

static void rec_dev_free(struct mms_thread *t, unsigned fn, uint64_t stamp, unsigned device, uint64_t addr)
{
	if (dev_free_wanted(addr))
		mms__rec_addr_event(t, (uint8_t)(MMS_TAG_DEV_FREE | fn), stamp, addr, 1, device, 0, 0, 0);
}

/* The thread, inside the guard, when memory events are recorded now. */
static struct mms_thread *dev_enter(void)
{
	return mms__collecting ? mms__api_enter() : NULL;
}

/* The driver handed out [addr, addr + size) of kind fn (enum mms_dev_fn). */
static __attribute__((noinline)) void dev_alloc(unsigned fn, uint64_t addr, uint64_t size)
{
	int saved = errno;
	struct mms_thread *t = dev_enter();

	if (t) {
		unsigned device = device_now();
		uint32_t stack = mms__capture_stack(t);

		rec_dev_alloc(t, fn, mms__stamp_obtain(), device, addr, size, stack);
		mms__api_leave();
	}
	errno = saved;
}

/* The driver refused size bytes of kind fn on device for want of memory
 * (device_now() when device is -1). Out of line and cold: the driver's
 * refusal, what the oom analysis reports. */
static __attribute__((noinline, cold)) void dev_alloc_fail(unsigned fn, uint64_t size, int device)
{
	int saved = errno;
	struct mms_thread *t = dev_enter();

	if (t) {
		unsigned dev = device >= 0 ? (unsigned)device : device_now();

		if (mms__cuda_device_wanted(dev)) {
			uint32_t stack = mms__capture_stack(t);

			mms__rec_refusal(t, (uint8_t)(MMS_TAG_DEV_ALLOC_FAIL | fn), mms__stamp_obtain(), size, stack,
					 dev);
		}
		mms__api_leave();
	}
	errno = saved;
}

/* The driver is about to take back addr, by a call of kind fn. */
static __attribute__((noinline)) void dev_free(unsigned fn, uint64_t addr)
{
	int saved = errno;
	struct mms_thread *t = addr ? dev_enter() : NULL;

	if (t) {
		unsigned device = device_now();

		rec_dev_free(t, fn, mms__stamp_release(), device, addr);
		mms__api_leave();
	}
	errno = saved;
}

/* The driver's answer r to an allocation of kind fn: [addr, addr + size)
 * handed out, or asked bytes refused for want of memory (dev_alloc_fail()
 * on the context's device); anything else records nothing. Returns r. */
static CUresult dev_answer(CUresult r, unsigned fn, uint64_t addr, uint64_t size, uint64_t asked)
{
	if (r == CUDA_SUCCESS)
		dev_alloc(fn, addr, size);
	else if (r == CUDA_ERROR_OUT_OF_MEMORY)
		dev_alloc_fail(fn, asked, -1);
	return r;
}

/* --- virtual memory management ---------------------------------------------
 * A mapping of cuMemCreate memory (cuMemMap) is a block of its own; the
 * tables of vmm.c know the live ones, and the device of each handle. All
 * under mms__vmm_lock(). */

/* handle's memory is on device. */
static void vmm_created(uint64_t handle, unsigned device)
{
	int saved = errno;

	mms__vmm_lock();
	(void)mms__vmm_handle_put(handle, device); /* without room: the context's device */
	mms__vmm_unlock();
	errno = saved;
}

/* Writes a DEV_ALLOC | MMS_DEV_VMM of m. */
static void vmm_rec_alloc(struct mms_thread *t, const struct mms_vmm_map *m)
{
	rec_dev_alloc(t, MMS_DEV_VMM, mms__stamp_obtain(), m->device, m->addr, m->size, m->stack);
}

/* The driver mapped [addr, addr + size) onto handle's memory. */
static __attribute__((noinline)) void vmm_mapped(uint64_t addr, uint64_t size, uint64_t handle)
{
	int saved = errno;
	struct mms_thread *t = dev_enter();
	struct mms_vmm_map m = { .addr = addr, .size = size };

	if (!mms__vmm_handle_device(handle, &m.device) && t)
		m.device = device_now();
	if (t)
		m.stack = mms__capture_stack(t);
	if (!mms__vmm_map_add(&m) && t)
		vmm_rec_alloc(t, &m);
	if (t)
		mms__api_leave();
	errno = saved;
}

/* The driver is about to unmap [lo, hi): every mapping that meets it is
 * freed. */
static void vmm_unmapping(uint64_t lo, uint64_t hi)
{
	int saved = errno;
	struct mms_thread *t = dev_enter();
	const struct mms_vmm_map *m;

	if (t) {
		for (size_t n = mms__vmm_find(lo, hi, &m); n; n--, m++)
			rec_dev_free(t, MMS_DEV_VMM, mms__stamp_release(), m->device, m->addr);
		mms__api_leave();
	}
	errno = saved;
}

/* The driver's unmap of [lo, hi) returned: on success, the parts of the
 * mappings freed that lie outside the range are allocated again; on
 * failure, all of them, as they were. */
static void vmm_unmapped(uint64_t lo, uint64_t hi, int ok)
{
	int saved = errno;
	struct mms_thread *t = dev_enter();
	struct mms_vmm_map pieces[2];
	const struct mms_vmm_map *m = pieces;
	size_t n;

	if (ok)
		n = mms__vmm_cut(lo, hi, pieces);
	else
		n = mms__vmm_find(lo, hi, &m);
	if (t) {
		for (; n; n--, m++)
			vmm_rec_alloc(t, m);
		mms__api_leave();
	}
	errno = saved;
}

/* A kernel of f was launched: a CUfunction, or a CUkernel (a library's
 * kernel, as the runtime launches those it loads with cudaLibraryLoad* or
 * lazily, CUDA_MODULE_LOADING=LAZY: cuFuncGetName refuses them, and
 * cuKernelGetName names them). */
static __attribute__((noinline)) void kernel_launched(CUfunction f)
{
	CUresult (*get_name)(const char **, CUfunction), (*get_kname)(const char **, CUfunction);
	int saved = errno;
	const char *name = NULL;
	unsigned device;

	if (!(mms__config.events & MMS_EVENTS_LAUNCH) || mms__tls_busy || !mms__recording_now()) {
		errno = saved;
		return;
	}
	mms__tls_busy = 1;
	driver_begin();
	get_name = __atomic_load_n(&func_get_name, __ATOMIC_RELAXED);
	get_kname = __atomic_load_n(&kernel_get_name, __ATOMIC_RELAXED);
	if ((!get_name || get_name(&name, f) != CUDA_SUCCESS || !name || !*name) &&
	    (!get_kname || get_kname(&name, f) != CUDA_SUCCESS || !name || !*name))
		name = KERNEL_UNNAMED;
	driver_end();
	device = device_now();
	mms__tls_busy = 0;
	mms__api_kernel_dev(name, device);
	errno = saved;
}

/* --- the wrappers ----------------------------------------------------------
 * Each calls its slot's real function (known before the wrapper was
 * handed out) and records around it. */

static CUresult mem_alloc(int slot, CUdeviceptr *dptr, size_t size)
{
	CUresult r = REAL(slot, CUresult(*)(CUdeviceptr *, size_t))(dptr, size);

	return dev_answer(r, MMS_DEV_DEVICE, r == CUDA_SUCCESS ? *dptr : 0, size, size);
}

static CUresult mem_alloc_pitch(int slot, CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height, unsigned elem)
{
	CUresult r = REAL(slot, CUresult(*)(CUdeviceptr *, size_t *, size_t, size_t, unsigned))(dptr, pitch, width,
												height, elem);

	return dev_answer(r, MMS_DEV_DEVICE, r == CUDA_SUCCESS ? *dptr : 0,
			  r == CUDA_SUCCESS ? (uint64_t)*pitch * height : 0, (uint64_t)width * height);
}

static CUresult mem_free(int slot, CUdeviceptr dptr)
{
	dev_free(MMS_DEV_DEVICE, dptr);
	return REAL(slot, CUresult(*)(CUdeviceptr))(dptr);
}

static CUresult mem_alloc_managed(int slot, CUdeviceptr *dptr, size_t size, unsigned flags)
{
	CUresult r = REAL(slot, CUresult(*)(CUdeviceptr *, size_t, unsigned))(dptr, size, flags);

	return dev_answer(r, MMS_DEV_MANAGED, r == CUDA_SUCCESS ? *dptr : 0, size, size);
}

/* Pinned host memory is the program's to read and write, so gdb (and
 * msmemscope_watch) can watch it: the recorder keeps each block's size,
 * for its free to drop such a watch before the memory goes. */
static void pinned_alloc(void *p, size_t size)
{
	int saved = errno;

	dev_alloc(MMS_DEV_PINNED, (uintptr_t)p, size);
	mms__vmm_lock();
	(void)mms__vmm_pinned_put((uintptr_t)p, size); /* without memory: no watch dropped */
	mms__vmm_unlock();
	errno = saved;
}

static CUresult mem_alloc_host(int slot, void **pp, size_t size)
{
	CUresult r = REAL(slot, CUresult(*)(void **, size_t))(pp, size);

	if (r == CUDA_SUCCESS)
		pinned_alloc(*pp, size);
	else if (r == CUDA_ERROR_OUT_OF_MEMORY)
		dev_alloc_fail(MMS_DEV_PINNED, size, -1);
	return r;
}

static CUresult mem_host_alloc(int slot, void **pp, size_t size, unsigned flags)
{
	CUresult r = REAL(slot, CUresult(*)(void **, size_t, unsigned))(pp, size, flags);

	if (r == CUDA_SUCCESS)
		pinned_alloc(*pp, size);
	else if (r == CUDA_ERROR_OUT_OF_MEMORY)
		dev_alloc_fail(MMS_DEV_PINNED, size, -1);
	return r;
}

static CUresult mem_free_host(int slot, void *p)
{
	int saved = errno;
	uint64_t size;

	dev_free(MMS_DEV_PINNED, (uintptr_t)p);
	mms__vmm_lock();
	size = p ? mms__vmm_pinned_take((uintptr_t)p) : 0;
	mms__vmm_unlock();
	if (size)
		mms__release_watched((uintptr_t)p, (uintptr_t)p + size);
	errno = saved;
	return REAL(slot, CUresult(*)(void *))(p);
}

/* --- CUDA arrays ------------------------------------------------------------
 * An array (textures, surfaces: cudaMallocArray, cudaMalloc3DArray,
 * cudaMallocMipmappedArray) has no device address the program sees, only
 * a handle: it is a block at the handle's value, of its elements' bytes
 * (cuda-array.c), which the driver may round up; destroyed, freed. An
 * array of a format cuda-array.c does not know is not recorded, nor its
 * destruction. */

/* The array at handle, of a format not known, is not recorded: kept by
 * address (as --device keeps the blocks of other devices), so that its
 * destruction is not recorded either (without room, it is: a free of no
 * block, which the reader names as such). */
static void array_unknown(uint64_t handle)
{
	mms__spin_lock(&skipped_lock);
	(void)mms__addrset_add(&skipped, (uintptr_t)handle);
	__atomic_store_n(&skipped_any, 1, __ATOMIC_RELEASE);
	mms__spin_unlock(&skipped_lock);
}

/* The driver's answer r to an array of a's description and levels, at
 * handle when made: recorded where its size is known. */
static CUresult array3d_made(CUresult r, uint64_t handle, const CUDA_ARRAY3D_DESCRIPTOR *a, unsigned levels)
{
	uint64_t size =
		a ? mms__cuda_array_bytes(a->Width, a->Height, a->Depth, a->Format, a->NumChannels, a->Flags, levels)
		  : 0;
	int saved = errno;

	if (size)
		return dev_answer(r, MMS_DEV_ARRAY, handle, size, size);
	if (r == CUDA_SUCCESS && a && handle)
		array_unknown(handle);
	errno = saved;
	return r;
}

static CUresult array_create(int slot, CUarray *handle, const CUDA_ARRAY_DESCRIPTOR *desc)
{
	CUresult r = REAL(slot, CUresult(*)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *))(handle, desc);
	CUDA_ARRAY3D_DESCRIPTOR a;

	if (!desc)
		return r;
	a = (CUDA_ARRAY3D_DESCRIPTOR){
		.Width = desc->Width, .Height = desc->Height, .Format = desc->Format, .NumChannels = desc->NumChannels
	};
	return array3d_made(r, r == CUDA_SUCCESS && handle ? (uintptr_t)*handle : 0, &a, 1);
}

static CUresult array3d_create(int slot, CUarray *handle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
	CUresult r = REAL(slot, CUresult(*)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *))(handle, desc);

	return array3d_made(r, r == CUDA_SUCCESS && handle ? (uintptr_t)*handle : 0, desc, 1);
}

static CUresult mipmapped_create(int slot, CUmipmappedArray *handle, const CUDA_ARRAY3D_DESCRIPTOR *desc,
				 unsigned levels)
{
	CUresult r = REAL(slot, CUresult(*)(CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR *, unsigned))(
		handle, desc, levels);

	return array3d_made(r, r == CUDA_SUCCESS && handle ? (uintptr_t)*handle : 0, desc, levels);
}

static CUresult array_destroy(int slot, CUarray handle)
{
	dev_free(MMS_DEV_ARRAY, (uintptr_t)handle);
	return REAL(slot, CUresult(*)(CUarray))(handle);
}

static CUresult mipmapped_destroy(int slot, CUmipmappedArray handle)
{
	dev_free(MMS_DEV_ARRAY, (uintptr_t)handle);
	return REAL(slot, CUresult(*)(CUmipmappedArray))(handle);
}

static CUresult alloc_async(int slot, CUdeviceptr *dptr, size_t size, CUstream stream)
{
	CUresult r = REAL(slot, CUresult (*)(CUdeviceptr *, size_t, CUstream))(dptr, size, stream);

	return dev_answer(r, MMS_DEV_ASYNC, r == CUDA_SUCCESS ? *dptr : 0, size, size);
}

static CUresult alloc_pool(int slot, CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream stream)
{
	CUresult r =
		REAL(slot, CUresult (*)(CUdeviceptr *, size_t, CUmemoryPool, CUstream))(dptr, size, pool, stream);

	return dev_answer(r, MMS_DEV_ASYNC, r == CUDA_SUCCESS ? *dptr : 0, size, size);
}

static CUresult free_async(int slot, CUdeviceptr dptr, CUstream stream)
{
	dev_free(MMS_DEV_ASYNC, dptr);
	return REAL(slot, CUresult (*)(CUdeviceptr, CUstream))(dptr, stream);
}

static CUresult mem_create(int slot, CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
			   unsigned long long flags)
{
	CUresult r = REAL(slot, CUresult(*)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
					    unsigned long long))(handle, size, prop, flags);

	if (r == CUDA_SUCCESS && prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && prop->location.id >= 0)
		vmm_created(*handle, (unsigned)prop->location.id);
	else if (r == CUDA_ERROR_OUT_OF_MEMORY)
		dev_alloc_fail(MMS_DEV_VMM, size,
			       prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1);
	return r;
}

static CUresult mem_release(int slot, CUmemGenericAllocationHandle handle)
{
	CUresult r;
	int saved;

	mms__vmm_lock();
	r = REAL(slot, CUresult(*)(CUmemGenericAllocationHandle))(handle);
	saved = errno;
	if (r == CUDA_SUCCESS)
		mms__vmm_handle_drop(handle);
	mms__vmm_unlock();
	errno = saved;
	return r;
}

static CUresult mem_map(int slot, CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
			unsigned long long flags)
{
	CUresult r;
	int saved;

	mms__vmm_lock();
	r = REAL(slot, CUresult(*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long))(
		ptr, size, offset, handle, flags);
	if (r == CUDA_SUCCESS)
		vmm_mapped(ptr, size, handle);
	saved = errno;
	mms__vmm_unlock();
	errno = saved;
	return r;
}

/* The frees are written before the driver's call, so that no address is
 * seen handed out twice; the driver's failure allocates them again. */
static CUresult mem_unmap(int slot, CUdeviceptr ptr, size_t size)
{
	uint64_t hi = size > UINT64_MAX - ptr ? UINT64_MAX : ptr + size;
	CUresult r;
	int saved = errno;

	mms__vmm_lock();
	vmm_unmapping(ptr, hi);
	errno = saved;
	r = REAL(slot, CUresult(*)(CUdeviceptr, size_t))(ptr, size);
	vmm_unmapped(ptr, hi, r == CUDA_SUCCESS);
	saved = errno;
	mms__vmm_unlock();
	errno = saved;
	return r;
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			      CUstream, void **, void **);

static CUresult launch(int slot, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		       unsigned bz, unsigned shared, CUstream stream, void **params, void **extra)
{
	CUresult r = REAL(slot, launch_fn)(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);

	if (r == CUDA_SUCCESS)
		kernel_launched(f);
	return r;
}

static CUresult launch_ex(int slot, const void *config, CUfunction f, void **params, void **extra)
{
	CUresult r = REAL(slot, CUresult (*)(const void *, CUfunction, void **, void **))(config, f, params, extra);

	if (r == CUDA_SUCCESS)
		kernel_launched(f);
	return r;
}

/* The entry points: for each slot, w_NAME, which cuGetProcAddress and
 * dlsym() hand out, and x_NAME, which a GOT entry of the program's points
 * to (redirect.c); both record the same, each calling its own real
 * function. */
#define CU_WRAP(name, body, slot, params, ...)       \
	static CUresult w_##name params              \
	{                                            \
		return body(slot, __VA_ARGS__);      \
	}                                            \
	static CUresult x_##name params              \
	{                                            \
		return body(EXP(slot), __VA_ARGS__); \
	}

CU_WRAP(mem_alloc, mem_alloc, CU_MEM_ALLOC, (CUdeviceptr * dptr, size_t size), dptr, size)
CU_WRAP(mem_alloc_pitch, mem_alloc_pitch, CU_MEM_ALLOC_PITCH,
	(CUdeviceptr * dptr, size_t *pitch, size_t width, size_t height, unsigned elem), dptr, pitch, width, height,
	elem)
CU_WRAP(mem_free, mem_free, CU_MEM_FREE, (CUdeviceptr dptr), dptr)
CU_WRAP(mem_alloc_managed, mem_alloc_managed, CU_MEM_ALLOC_MANAGED, (CUdeviceptr * dptr, size_t size, unsigned flags),
	dptr, size, flags)
CU_WRAP(mem_alloc_host, mem_alloc_host, CU_MEM_ALLOC_HOST, (void **pp, size_t size), pp, size)
CU_WRAP(mem_host_alloc, mem_host_alloc, CU_MEM_HOST_ALLOC, (void **pp, size_t size, unsigned flags), pp, size, flags)
CU_WRAP(mem_free_host, mem_free_host, CU_MEM_FREE_HOST, (void *p), p)
CU_WRAP(mem_alloc_async, alloc_async, CU_MEM_ALLOC_ASYNC, (CUdeviceptr * dptr, size_t size, CUstream stream), dptr,
	size, stream)
CU_WRAP(mem_alloc_async_ptsz, alloc_async, CU_MEM_ALLOC_ASYNC_PTSZ, (CUdeviceptr * dptr, size_t size, CUstream stream),
	dptr, size, stream)
CU_WRAP(mem_alloc_pool, alloc_pool, CU_MEM_ALLOC_POOL,
	(CUdeviceptr * dptr, size_t size, CUmemoryPool pool, CUstream stream), dptr, size, pool, stream)
CU_WRAP(mem_alloc_pool_ptsz, alloc_pool, CU_MEM_ALLOC_POOL_PTSZ,
	(CUdeviceptr * dptr, size_t size, CUmemoryPool pool, CUstream stream), dptr, size, pool, stream)
CU_WRAP(mem_free_async, free_async, CU_MEM_FREE_ASYNC, (CUdeviceptr dptr, CUstream stream), dptr, stream)
CU_WRAP(mem_free_async_ptsz, free_async, CU_MEM_FREE_ASYNC_PTSZ, (CUdeviceptr dptr, CUstream stream), dptr, stream)
CU_WRAP(mem_create, mem_create, CU_MEM_CREATE,
	(CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop, unsigned long long flags),
	handle, size, prop, flags)
CU_WRAP(mem_release, mem_release, CU_MEM_RELEASE, (CUmemGenericAllocationHandle handle), handle)
CU_WRAP(mem_map, mem_map, CU_MEM_MAP,
	(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags),
	ptr, size, offset, handle, flags)
CU_WRAP(mem_unmap, mem_unmap, CU_MEM_UNMAP, (CUdeviceptr ptr, size_t size), ptr, size)
CU_WRAP(array_create, array_create, CU_ARRAY_CREATE, (CUarray * handle, const CUDA_ARRAY_DESCRIPTOR *desc), handle,
	desc)
CU_WRAP(array3d_create, array3d_create, CU_ARRAY3D_CREATE, (CUarray * handle, const CUDA_ARRAY3D_DESCRIPTOR *desc),
	handle, desc)
CU_WRAP(array_destroy, array_destroy, CU_ARRAY_DESTROY, (CUarray handle), handle)
CU_WRAP(mipmapped_create, mipmapped_create, CU_MIPMAPPED_CREATE,
	(CUmipmappedArray * handle, const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels), handle, desc, levels)
CU_WRAP(mipmapped_destroy, mipmapped_destroy, CU_MIPMAPPED_DESTROY, (CUmipmappedArray handle), handle)
CU_WRAP(launch, launch, CU_LAUNCH,
	(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
	 CUstream stream, void **params, void **extra),
	f, gx, gy, gz, bx, by, bz, shared, stream, params, extra)
CU_WRAP(launch_ptsz, launch, CU_LAUNCH_PTSZ,
	(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
	 CUstream stream, void **params, void **extra),
	f, gx, gy, gz, bx, by, bz, shared, stream, params, extra)
CU_WRAP(launch_ex, launch_ex, CU_LAUNCH_EX, (const void *config, CUfunction f, void **params, void **extra), config, f,
	params, extra)
CU_WRAP(launch_ex_ptsz, launch_ex, CU_LAUNCH_EX_PTSZ, (const void *config, CUfunction f, void **params, void **extra),
	config, f, params, extra)

static CUresult getproc(int slot, const char *symbol, void **pfn, int version, cuuint64_t flags);
static CUresult getproc_v2(int slot, const char *symbol, void **pfn, int version, cuuint64_t flags, int *status);
CU_WRAP(getproc, getproc, CU_GETPROC, (const char *symbol, void **pfn, int version, cuuint64_t flags), symbol, pfn,
	version, flags)
CU_WRAP(getproc_v2, getproc_v2, CU_GETPROC_V2,
	(const char *symbol, void **pfn, int version, cuuint64_t flags, int *status), symbol, pfn, version, flags,
	status)

/* --- the table of entry points -------------------------------------------- */

struct cu_entry {
	const char *name;  /* the exported name: one ABI */
	const char *base;  /* the name cuGetProcAddress is asked for */
	int since;         /* the CUDA version from which the driver hands it out */
	int ptsz;          /* the per-thread default stream variant */
	cu_fn wrapper;     /* w_ (what cuGetProcAddress and dlsym() hand out) */
	cu_fn exp_wrapper; /* x_ (what a GOT entry goes to) */
};

#define ENTRY(slot, name, base, since, ptsz, stem) \
	[slot] = { name, base, since, ptsz, (cu_fn)w_##stem, (cu_fn)x_##stem }
static const struct cu_entry entries[CU_NSLOTS] = {
	ENTRY(CU_GETPROC, "cuGetProcAddress", "cuGetProcAddress", 11030, 0, getproc),
	ENTRY(CU_GETPROC_V2, "cuGetProcAddress_v2", "cuGetProcAddress", 12000, 0, getproc_v2),
	ENTRY(CU_MEM_ALLOC, "cuMemAlloc_v2", "cuMemAlloc", 3020, 0, mem_alloc),
	ENTRY(CU_MEM_ALLOC_PITCH, "cuMemAllocPitch_v2", "cuMemAllocPitch", 3020, 0, mem_alloc_pitch),
	ENTRY(CU_MEM_FREE, "cuMemFree_v2", "cuMemFree", 3020, 0, mem_free),
	ENTRY(CU_MEM_ALLOC_MANAGED, "cuMemAllocManaged", "cuMemAllocManaged", 6000, 0, mem_alloc_managed),
	ENTRY(CU_MEM_ALLOC_HOST, "cuMemAllocHost_v2", "cuMemAllocHost", 3020, 0, mem_alloc_host),
	ENTRY(CU_MEM_HOST_ALLOC, "cuMemHostAlloc", "cuMemHostAlloc", 2020, 0, mem_host_alloc),
	ENTRY(CU_MEM_FREE_HOST, "cuMemFreeHost", "cuMemFreeHost", 2000, 0, mem_free_host),
	ENTRY(CU_MEM_ALLOC_ASYNC, "cuMemAllocAsync", "cuMemAllocAsync", 11020, 0, mem_alloc_async),
	ENTRY(CU_MEM_ALLOC_ASYNC_PTSZ, "cuMemAllocAsync_ptsz", "cuMemAllocAsync", 11020, 1, mem_alloc_async_ptsz),
	ENTRY(CU_MEM_ALLOC_POOL, "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", 11020, 0, mem_alloc_pool),
	ENTRY(CU_MEM_ALLOC_POOL_PTSZ, "cuMemAllocFromPoolAsync_ptsz", "cuMemAllocFromPoolAsync", 11020, 1,
	      mem_alloc_pool_ptsz),
	ENTRY(CU_MEM_FREE_ASYNC, "cuMemFreeAsync", "cuMemFreeAsync", 11020, 0, mem_free_async),
	ENTRY(CU_MEM_FREE_ASYNC_PTSZ, "cuMemFreeAsync_ptsz", "cuMemFreeAsync", 11020, 1, mem_free_async_ptsz),
	ENTRY(CU_MEM_CREATE, "cuMemCreate", "cuMemCreate", 10020, 0, mem_create),
	ENTRY(CU_MEM_RELEASE, "cuMemRelease", "cuMemRelease", 10020, 0, mem_release),
	ENTRY(CU_MEM_MAP, "cuMemMap", "cuMemMap", 10020, 0, mem_map),
	ENTRY(CU_MEM_UNMAP, "cuMemUnmap", "cuMemUnmap", 10020, 0, mem_unmap),
	ENTRY(CU_ARRAY_CREATE, "cuArrayCreate_v2", "cuArrayCreate", 3020, 0, array_create),
	ENTRY(CU_ARRAY3D_CREATE, "cuArray3DCreate_v2", "cuArray3DCreate", 3020, 0, array3d_create),
	ENTRY(CU_ARRAY_DESTROY, "cuArrayDestroy", "cuArrayDestroy", 2000, 0, array_destroy),
	ENTRY(CU_MIPMAPPED_CREATE, "cuMipmappedArrayCreate", "cuMipmappedArrayCreate", 5000, 0, mipmapped_create),
	ENTRY(CU_MIPMAPPED_DESTROY, "cuMipmappedArrayDestroy", "cuMipmappedArrayDestroy", 5000, 0, mipmapped_destroy),
	ENTRY(CU_LAUNCH, "cuLaunchKernel", "cuLaunchKernel", 4000, 0, launch),
	ENTRY(CU_LAUNCH_PTSZ, "cuLaunchKernel_ptsz", "cuLaunchKernel", 7000, 1, launch_ptsz),
	ENTRY(CU_LAUNCH_EX, "cuLaunchKernelEx", "cuLaunchKernelEx", 11060, 0, launch_ex),
	ENTRY(CU_LAUNCH_EX_PTSZ, "cuLaunchKernelEx_ptsz", "cuLaunchKernelEx", 11060, 1, launch_ex_ptsz),
};

/* The slot whose exported name is name, or -1. */
static int slot_named(const char *name)
{
	for (int i = 0; i < CU_NSLOTS; i++)
		if (!strcmp(entries[i].name, name))
			return i;
	return -1;
}

/* The base name cuGetProcAddress is asked for when a program asks for
 * symbol (a base name, or an exported one), or NULL when no entry point of
 * that name is wrapped: the common case, a few compares of the prefix. */
static const char *wrapped_base(const char *symbol)
{
	if (strncmp(symbol, "cuMem", 5) && strncmp(symbol, "cuLaunchKernel", 14) &&
	    strncmp(symbol, "cuGetProcAddress", 16) && strncmp(symbol, "cuArray", 7) &&
	    strncmp(symbol, "cuMipmappedArray", 16))
		return NULL;
	for (int i = 0; i < CU_NSLOTS; i++)
		if (!strcmp(entries[i].base, symbol) || !strcmp(entries[i].name, symbol))
			return entries[i].base;
	return NULL;
}

/* True when p lies in the driver, a library named libcuda.so*; with the
 * name of the export at exactly p, if any, in *sname. The first time,
 * the driver's code becomes known (mms__cuda_code): the runtime looks up
 * its entry points before it calls cuInit, so what the driver allocates
 * for itself from then on is marked its own, though no module scan has
 * run since the dlopen. */
static int in_driver(void *p, const char **sname)
{
	Dl_info di;
	const char *file, *slash;
	uintptr_t lo, hi;

	if (!dladdr(p, &di) || !di.dli_fname)
		return 0;
	file = di.dli_fname;
	slash = strrchr(file, '/');
	if (slash)
		file = slash + 1;
	*sname = di.dli_saddr == p ? di.dli_sname : NULL;
	if (strncmp(file, "libcuda.so", 10))
		return 0;
	if (!mms__in_cuda((uintptr_t)p)) {
		mms__code_range((uintptr_t)p, &lo, &hi);
		mms__cuda_code_set(lo, hi);
	}
	return 1;
}

/* Whether real_fn[slot] holds p: filled now, or before (1); 0 when it
 * holds another function. */
static int slot_fill(int slot, void *p)
{
	void *expect = NULL;

	return __atomic_compare_exchange_n(&real_fn[slot], &expect, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
	       expect == p;
}

/* The wrapper of slot for the driver's function p: fills the slot, or
 * returns p itself when the slot holds another function. */
static void *wrap_slot(int slot, void *p)
{
	return slot_fill(slot, p) ? *(void **)&entries[slot].wrapper : p;
}

/* The slot of the ABI the driver hands out for base at version and flags,
 * by its own rules (the newest ABI the version has; _ptsz variants for
 * the per-thread default stream): for a function no export names. */
static int slot_by_version(const char *base, int version, cuuint64_t flags)
{
	int want_ptsz = 0, best = -1;

	for (int i = 0; i < CU_NSLOTS; i++)
		if (!strcmp(entries[i].base, base) && entries[i].ptsz)
			want_ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	for (int i = 0; i < CU_NSLOTS; i++)
		if (!strcmp(entries[i].base, base) && entries[i].ptsz == want_ptsz && version >= entries[i].since &&
		    (best < 0 || entries[i].since > entries[best].since))
			best = i;
	return best; /* -1 for an ABI older than the table's: not wrapped */
}

/* What cuGetProcAddress hands the program for symbol: p, or our wrapper
 * of it. */
static void *wrap_proc(const char *symbol, void *p, int version, cuuint64_t flags)
{
	const char *base = wrapped_base(symbol), *sname;
	int saved, slot;

	if (!base)
		return p;
	saved = errno;
	if (in_driver(p, &sname)) {
		slot = sname ? slot_named(sname) : slot_by_version(base, version, flags);
		if (slot >= 0 && !strcmp(entries[slot].base, base))
			p = wrap_slot(slot, p);
	}
	errno = saved;
	return p;
}

/* The driver's cuGetProcAddress returned r, *pfn for symbol. */
static CUresult proc_result(CUresult r, const char *symbol, void **pfn, int version, cuuint64_t flags)
{
	if (r == CUDA_SUCCESS && symbol && pfn && *pfn)
		*pfn = wrap_proc(symbol, *pfn, version, flags);
	return r;
}

static CUresult getproc(int slot, const char *symbol, void **pfn, int version, cuuint64_t flags)
{
	return proc_result(REAL(slot, CUresult(*)(const char *, void **, int, cuuint64_t))(symbol, pfn, version, flags),
			   symbol, pfn, version, flags);
}

static CUresult getproc_v2(int slot, const char *symbol, void **pfn, int version, cuuint64_t flags, int *status)
{
	return proc_result(REAL(slot, CUresult(*)(const char *, void **, int, cuuint64_t, int *))(symbol, pfn, version,
												  flags, status),
			   symbol, pfn, version, flags);
}

#if defined(__x86_64__) || defined(__aarch64__)
int mms__cuda_wants(const char *name)
{
	return slot_named(name) >= 0;
}

void *mms__cuda_dlsym(void *handle, const char *name)
{
	void *p = mms__real_dlsym(handle, name);
	const char *sname;
	int slot, saved;

	if (!p || (slot = slot_named(name)) < 0)
		return p;
	saved = errno;
	if (in_driver(p, &sname))
		p = wrap_slot(slot, p);
	errno = saved;
	return p;
}

int mms__cuda_export_count(void)
{
	return CU_NSLOTS;
}

const char *mms__cuda_export_name(int i)
{
	return i >= 0 && i < CU_NSLOTS ? entries[i].name : NULL;
}

void *mms__cuda_export_wrapper(int i, void *real)
{
	if (i < 0 || i >= CU_NSLOTS || !real || !slot_fill(EXP(i), real))
		return NULL;
	return *(void **)&entries[i].exp_wrapper;
}
#endif

void mms__cuda_init(void)
{
#if defined(__x86_64__) || defined(__aarch64__)
	/* The program's first lookup may race another thread's: know the
	 * real dlsym() before the program runs. */
	(void)mms__dlsym_resolve();
#endif
}
