/* SPDX-License-Identifier: MIT */
/* stubs.c: the no-op instrumentation API that -lmsmemscope links, so an
 * annotated program runs unchanged without the recorder; the preloaded
 * recorder interposes the real functions. */
#include <stdint.h>

#include "msmemscope.h"

#define MMS_STUB __attribute__((visibility("default"), noinline))

MMS_STUB void msmemscope_step(void) {}
MMS_STUB void msmemscope_op_begin(const char *name) { (void)name; }
MMS_STUB void msmemscope_op_end(void) {}
MMS_STUB void msmemscope_kernel_launch(const char *name) { (void)name; }
MMS_STUB void msmemscope_mark(const char *name) { (void)name; }
MMS_STUB uint64_t msmemscope_range_start(const char *name)
{
	(void)name;
	return 0;
}
MMS_STUB void msmemscope_range_end(uint64_t id) { (void)id; }
MMS_STUB void msmemscope_access(const void *ptr, size_t size, int mode)
{
	(void)ptr, (void)size, (void)mode;
}
MMS_STUB void msmemscope_owner_push(const char *tag) { (void)tag; }
MMS_STUB void msmemscope_owner_pop(void) {}
MMS_STUB void msmemscope_owner_tag(const void *ptr, const char *tag) { (void)ptr, (void)tag; }
MMS_STUB int msmemscope_recording(void) { return 0; }
MMS_STUB void msmemscope_pool_alloc(const char *pool, const void *ptr, size_t size, size_t total, size_t used)
{
	(void)pool, (void)ptr, (void)size, (void)total, (void)used;
}
MMS_STUB void msmemscope_pool_free(const char *pool, const void *ptr, size_t size, size_t total, size_t used)
{
	(void)pool, (void)ptr, (void)size, (void)total, (void)used;
}
MMS_STUB void msmemscope_watch(const void *ptr, size_t size, const char *name)
{
	(void)ptr, (void)size, (void)name;
}
MMS_STUB int msmemscope_guard_check(void)
{
	return 0;
}
MMS_STUB void msmemscope_start(void) {}
MMS_STUB void msmemscope_stop(void) {}
MMS_STUB void mstxMarkA(const char *message, void *stream) { (void)message, (void)stream; }
MMS_STUB uint64_t mstxRangeStartA(const char *message, void *stream)
{
	(void)message, (void)stream;
	return 0;
}
MMS_STUB void mstxRangeEnd(uint64_t id) { (void)id; }
