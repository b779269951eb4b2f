/* SPDX-License-Identifier: MIT */
/* objects.h: the program's loaded objects as the recorder follows them:
 * the loader's counts and lock (process.c), the log's module records
 * (modules.c), symbols read from the objects' tables (elfsym.c), the
 * interposed dlsym() (dlsym.c) and the calls of a replacement allocator's
 * own functions pointed to the recorder's (redirect.c). */
#ifndef MMS_OBJECTS_H
#define MMS_OBJECTS_H

#include <stddef.h>

#include "hooks-int.h"

struct mms_thread;

/* modules.c: the log's MODULE records (at start-up, at a thread's next
 * chunk when the loader's count moved, before dlclose(), at dlsym() and
 * at exit). process.c: the loader's counts and lock. */
void mms__modules_scan(struct mms_thread *t) MMS_HIDDEN;
void mms__modules_reset(void) MMS_HIDDEN;
/* The loader's counts of objects loaded and unloaded so far (dlpi_adds,
 * dlpi_subs): a change in either means the set of modules changed. */
void mms__loader_counts(unsigned long long v[2]) MMS_HIDDEN;
/* dl_iterate_phdr() for the recorder: none in a fork child until its own
 * dlclose went through the loader (glibc leaves the loader's lock as the
 * fork found it: held, when another thread was in dlopen, dlclose or
 * dl_iterate_phdr, and the child's first event waited for it forever). */
struct dl_phdr_info;
int mms__phdr_iterate(int (*fn)(struct dl_phdr_info *, size_t, void *), void *data) MMS_HIDDEN;
/* Whether this is a fork child whose loader lock may be held (no
 * dl_iterate_phdr, nor libunwind, which calls it). */
int mms__phdr_unsafe(void) MMS_HIDDEN;
void mms__phdr_safe(void) MMS_HIDDEN;
/* The forking thread lists the modules for the child's log, and holds
 * the scans back until the fork is done (mms__modules_after_fork, in the
 * parent and in the child). */
void mms__modules_snapshot(void) MMS_HIDDEN;
void mms__modules_after_fork(int child) MMS_HIDDEN;

/* elfsym.c: name's definition in the first object after the recorder's in
 * the global scope that has one (dlsym(RTLD_NEXT) without its effect on
 * dlerror()), or, among objects loaded after start-up, in one whose path
 * late() accepts (late may be NULL: none); NULL when none. */
void *mms__elfsym_next(const char *name, int (*late)(const char *path)) MMS_HIDDEN;
/* The first of names[0..n) that an object ahead of the recorder's in the
 * global scope defines (the program, a library preloaded before it: its
 * definition wins over the recorder's), its file's path in path; -1 when
 * none. After mms__elfsym_init(). */
int mms__elfsym_ahead(const char *const *names, size_t n, char *path, size_t cap) MMS_HIDDEN;
/* name's definition in the object info describes, or NULL. */
void *mms__elfsym_in(const struct dl_phdr_info *info, const char *name) MMS_HIDDEN;
/* Notes where the recorder's object is among the loaded ones, and how many
 * the global scope holds: once, at start-up. */
void mms__elfsym_init(void) MMS_HIDDEN;

/* dlsym.c: the interposed dlsym() (x86-64 and aarch64 only). */
/* The real dlsym(), once known (found at the first call). */
extern void *(*mms__real_dlsym)(void *, const char *) MMS_HIDDEN;
/* Finds the real dlsym(): returns it, or NULL. */
void *mms__dlsym_resolve(void) MMS_HIDDEN;
/* The entry point's one call into C (see dlsym.c). */
int mms__dlsym_slow(void *handle, const char *name, const void *caller, void **result) MMS_HIDDEN;

/* redirect.c: finds a replacement allocator's functions of its own
 * (jemalloc's, struct mms_je in hooks-int.h; tcmalloc's tc_ functions, mimalloc's mi_ ones), and libcuda's entry
 * points that cuda.c wraps, at start-up, after
 * mms__runtime_code_init() and mms__elfsym_init(), and points the calls
 * of each loaded object to the recorder's; mms__redirect_rescan() does
 * that for the objects loaded since (modules.c's scans, and dlsym() while
 * mms__dlsym_watch is set: dlsym.c). */
void mms__redirect_init(void) MMS_HIDDEN;
void mms__redirect_rescan(void) MMS_HIDDEN;
/* dlsym(handle, name) for caller (not RTLD_NEXT) where name is one of
 * those functions: 1 with the answer in *result, the recorder's function
 * where the real dlsym() finds the allocator's; 0 for any other name (or
 * a caller in another namespace). */
int mms__redirect_dlsym(void *handle, const char *name, const void *caller, void **result) MMS_HIDDEN;
extern int mms__dlsym_watch MMS_HIDDEN;
/* Bits of mms__dlsym_watch: what dlsym() looks at first (dlsym.c): the
 * objects loaded since to redirect (redirect.c), and the modules to
 * record (modules.c). */
#define MMS_DLSYM_WATCH_REDIRECT 1
#define MMS_DLSYM_WATCH_MODULES 2
/* Sets bits of mms__dlsym_watch (nothing where dlsym() is not
 * interposed). */
void mms__dlsym_watch_set(int bits) MMS_HIDDEN;
/* Records the modules loaded since the last scan, when there are any
 * (dlsym() asks: a program reaches a library it loaded through dlsym(),
 * so its MODULE records come before its first events, where a thread's
 * next chunk would be later; a live replay, gdb's, then knows it). */
void mms__modules_check(void) MMS_HIDDEN;

#endif
