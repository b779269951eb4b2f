/* SPDX-License-Identifier: MIT */
/* nextlib.c: built twice, as libnexta.so (NEXTLIB 1) and libnextb.so
 * (NEXTLIB 2), both linked into dlsymnext in that order: each defines
 * which() and cu_which() (a name the recorder's dlsym() looks at), and
 * libnexta.so asks dlsym(RTLD_NEXT) for the next definition, which is
 * libnextb.so's only when dlsym() knows its caller is libnexta.so. */
#define _GNU_SOURCE
#include <dlfcn.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int which(void);
EXPORT int cu_which(void);

EXPORT int which(void)
{
	return NEXTLIB;
}

EXPORT int cu_which(void)
{
	return 10 * NEXTLIB;
}

#if NEXTLIB == 1
EXPORT int next_which(const char *name);

/* The next definition of name after this library, called; -1 if none. */
EXPORT int next_which(const char *name)
{
	int (*f)(void);

	*(void **)&f = dlsym(RTLD_NEXT, name);
	return f ? f() : -1;
}
#endif
