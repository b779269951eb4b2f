/* SPDX-License-Identifier: MIT */
/* msmemscope.h: the instrumentation API a program calls to mark its steps,
 * operators, owners, custom pools and watched blocks for msmemscope.
 *
 * Link with -lmsmemscope (pkg-config msmemscope). That library holds no-op
 * stubs, so an annotated program runs normally on its own; when it runs
 * under `msmemscope -- prog`, the preloaded recorder provides the real
 * functions by symbol interposition. Every function is safe to call from
 * any thread and never fails; strings are copied, the caller keeps them. */
#ifndef MSMEMSCOPE_H
#define MSMEMSCOPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MSMEMSCOPE_API_VERSION 2

/* Ends the current step and begins the next one. Steps are numbered from 1:
 * the code before the first call is step 1. */
void msmemscope_step(void);

/* Marks an operator launch (one phase of the program: a layer, a pass, a
 * handler). Launches may nest; op_end closes the innermost open one of the
 * calling thread. */
void msmemscope_op_begin(const char *name);
void msmemscope_op_end(void);

/* Records the launch of a kernel (a unit of work below an operator). */
void msmemscope_kernel_launch(const char *name);

/* A named instant, and named ranges. range_start returns the id to pass to
 * range_end; a range named exactly "step start" delimits a step. */
void msmemscope_mark(const char *name);
uint64_t msmemscope_range_start(const char *name);
void msmemscope_range_end(uint64_t id);

/* Declares that [ptr, ptr + size) was read or written. */
enum msmemscope_access_mode {
	MSMEMSCOPE_ACCESS_UNKNOWN = 0,
	MSMEMSCOPE_ACCESS_READ = 1,
	MSMEMSCOPE_ACCESS_WRITE = 2,
};
void msmemscope_access(const void *ptr, size_t size, int mode);

/* Owner tags: allocations made while tags are pushed belong to the owner
 * "outer@inner@..." (the tags of the calling thread, outermost first). */
void msmemscope_owner_push(const char *tag);
void msmemscope_owner_pop(void);

/* (API version 2) Tags the live block containing ptr with owner `tag`
 * after the fact: the block belongs to `tag` (replacing what was pushed
 * when it was allocated) from its allocation on, in every analysis that
 * reads the log past this call. A framework names its blocks by role this
 * way (msmemscope.torch: "weight", "gradient", "optimizer_state", ...).
 * An address inside no live block tags nothing. */
void msmemscope_owner_tag(const void *ptr, const char *tag);

/* Custom allocators report their blocks: `pool` names the allocator,
 * `total` is the bytes it reserved from the system, `used` the bytes it has
 * handed out, both after this event. */
void msmemscope_pool_alloc(const char *pool, const void *ptr, size_t size, size_t total, size_t used);
void msmemscope_pool_free(const char *pool, const void *ptr, size_t size, size_t total, size_t used);

/* Asks for [ptr, ptr + size) to be watched across operator launches. A
 * range the program cannot read (some byte of it not mapped, or mapped
 * without read access, when called) is not watched: the recorder says so
 * once on stderr and records nothing of it. */
void msmemscope_watch(const void *ptr, size_t size, const char *name);

/* Guard mode (msmemscope --guard): checks every live block's red zones
 * and the quarantine of freed blocks now, and records what is damaged in
 * the log. Returns the number of findings this check made; 0 when guard
 * mode is off or nothing is recorded. */
int msmemscope_guard_check(void);

/* Deferred collection (--collect-mode=deferred): record only between
 * start and stop. In immediate mode recording is on from the start. */
void msmemscope_start(void);
void msmemscope_stop(void);

/* 1 when the process runs under the recorder with its log open (whether
 * or not --collect-mode=deferred collects now), 0 otherwise: the no-op
 * library always returns 0. For bindings that say how to record when
 * they are not recorded. */
int msmemscope_recording(void);

/* mstx-compatible names, for programs annotated for msMemScope. The second
 * argument (a stream) is accepted and ignored. */
void mstxMarkA(const char *message, void *stream);
uint64_t mstxRangeStartA(const char *message, void *stream);
void mstxRangeEnd(uint64_t id);

#ifdef __cplusplus
}
#endif

#endif /* MSMEMSCOPE_H */
