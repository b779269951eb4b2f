/* SPDX-License-Identifier: MIT */
/* extplug.c: a plugin that allocates through jemalloc's functions of its
 * own, loaded with dlopen(RTLD_LAZY) by `extalloc je-plugin` (extalloc.sh)
 * where jemalloc is loaded: its calls are redirected once the program
 * reaches its code through dlsym(), the PLT's entries not bound yet. The
 * names stay undefined here (a shared library may leave them so): the
 * plugin is built without jemalloc. */
#include <stddef.h>

void *mallocx(size_t size, int flags);
void sdallocx(void *ptr, size_t size, int flags);
int extplug_run(long n);

/* n mallocx/sdallocx pairs, then one 77-byte block kept; 0, or 1 when a
 * call failed. */
int extplug_run(long n)
{
	static void *kept;

	for (long i = 0; i < n; i++) {
		char *p = mallocx(100, 0);

		if (!p)
			return 1;
		p[99] = 1;
		sdallocx(p, 100, 0);
	}
	kept = mallocx(77, 0);
	return kept == NULL;
}
