/* SPDX-License-Identifier: MIT */
/* torch.c: the blocks PyTorch's CUDA caching allocator hands out (the
 * tensors inside the segments it takes from the CUDA driver, which cuda.c
 * records as device memory), as blocks of the pool "PyTorch cuda:N".
 *
 * The allocator tells c10's profiler hook of each block it hands out and
 * takes back: libc10_cuda calls c10::reportMemoryUsageToProfiler(ptr,
 * size, allocated, reserved, device) in libc10 (size < 0: taken back; the
 * device's allocated and reserved bytes after it), which passes it to the
 * thread's profiler if one runs. The call goes from one library to the
 * other through the PLT, so the recorder, first in the global scope,
 * defines that function under libc10's names: each CUDA block is a
 * POOL_ALLOC or POOL_FREE record (the reserved bytes the pool's total,
 * the allocated bytes used), and the call goes on to libc10's definition
 * (read from its tables), so torch.profiler sees what it sees without the
 * recorder. Every thread, whoever started it, and no Python needed (a C++
 * program over libtorch too). Host memory is not taken (the CPU
 * allocator reports only to a profiler that asks; its blocks are the
 * heap's), nor another device type's.
 *
 * Why not the thread's profiler slot (a MemoryReportingInfoBase pushed as
 * PROFILER_STATE): torch reads that slot as its profiler's, and refuses
 * to start torch.profiler while anything is in it ("Profiler is already
 * enabled on this thread", torch 1.13): the recorder would change what
 * the program does. Why not the CUDA allocator's trace trackers
 * (attachAllocatorTraceTracker, torch 2.1 on): C++ callbacks of an ABI
 * that changes from release to release, compiled against one torch.
 *
 * The function's parameters changed once: libtorch 1.13 declares the
 * totals int64_t, later releases size_t (mangled l and m); both names are
 * defined here, each going on to its own. c10::Device is two signed bytes
 * (its type, CUDA = 1, and its index), trivially copyable, so passed as
 * this struct is. --device leaves out the blocks of the devices not
 * recorded, both ends: the allocator names each block's own device when
 * it takes it back. */
#include <stdint.h>
#include <stdio.h>

#include "hooks-int.h"
#include "msmemscope.h"
#include "objects.h"

struct c10_device {
	int8_t type, index;
};

enum { C10_CUDA = 1 };

#define NAME_I64 "_ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE"
#define NAME_U64 "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE"

static void report(void *ptr, int64_t size, uint64_t allocated, uint64_t reserved, struct c10_device dev)
{
	char pool[32];

	if (dev.type != C10_CUDA || dev.index < 0 || !ptr || !size || !mms__cuda_device_wanted((unsigned)dev.index))
		return;
	/* MMS_TORCH_POOL, then the ordinal. */
	snprintf(pool, sizeof(pool), "PyTorch cuda:%d", dev.index);
	if (size > 0)
		msmemscope_pool_alloc(pool, ptr, (size_t)size, reserved, allocated);
	else
		msmemscope_pool_free(pool, ptr, (size_t)(0 - (uint64_t)size), reserved, allocated);
}

/* Any object loaded after start-up may hold the definition. */
static int any_object(const char *path)
{
	(void)path;
	return 1;
}

/* The definition under name after ours (libc10's, or whichever library
 * libtorch was built into), found once; NULL when there is none, which
 * is remembered too. Python loads torch with RTLD_LOCAL, out of the global
 * scope that dlsym(RTLD_NEXT) searches: the loaded objects' own tables
 * are read (elfsym.c, which allocates nothing and leaves dlerror()). */
static void *next(void **slot, const char *name)
{
	static char none;
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!f) {
		f = mms__elfsym_next(name, any_object);
		__atomic_store_n(slot, f ? f : &none, __ATOMIC_RELEASE);
	}
	return f == &none ? NULL : f;
}

/* c10::reportMemoryUsageToProfiler under its name, with totals of type
 * T: records, then goes on to libc10's definition. */
#define TORCH_REPORT(fn, name, T)                                                                                  \
	MMS_EXPORT void fn(void *ptr, int64_t size, T allocated, T reserved, struct c10_device dev) __asm__(name); \
	MMS_EXPORT void fn(void *ptr, int64_t size, T allocated, T reserved, struct c10_device dev)                \
	{                                                                                                          \
		static void *real;                                                                                 \
		void (*f)(void *, int64_t, T, T, struct c10_device);                                               \
                                                                                                                   \
		report(ptr, size, (uint64_t)allocated, (uint64_t)reserved, dev);                                   \
		*(void **)&f = next(&real, name);                                                                  \
		if (f)                                                                                             \
			f(ptr, size, allocated, reserved, dev);                                                    \
	}

TORCH_REPORT(mms__torch_report_i64, NAME_I64, int64_t)
TORCH_REPORT(mms__torch_report_u64, NAME_U64, uint64_t)
