/* SPDX-License-Identifier: MIT */
/* drvplug.c: for cuda.sh, a program not linked against libcuda that loads
 * libdrvuse.so (drvuse.c) with dlopen(); the library, linked against the
 * driver's test double, brings the driver in with it, as a Python
 * extension built against libcuda does, and calls it by name. The
 * recorder looks at what was loaded at its next look at the loader's list
 * (once per chunk of its log): some heap work comes first, then the
 * library's calls: 8192 bytes kept (leaky_plugin), 2048 allocated and
 * freed, a launch of reduce_sum. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	void *h = dlopen("libdrvuse.so", RTLD_NOW | RTLD_LOCAL);
	int (*work)(void);
	int bad;

	if (!h) {
		printf("dlopen: %s\n", dlerror());
		return 1;
	}
	/* Kept through a volatile pointer: free(malloc(n)) may be elided. */
	for (int i = 0; i < 50000; i++) {
		char *volatile p = malloc(16 + (size_t)(i % 64));

		free(p);
	}
	*(void **)&work = dlsym(h, "drv_work");
	bad = work ? work() : 1;
	printf("plugin allocs=2 frees=1 launches=1 failures=%d\n", bad);
	return bad ? 1 : 0;
}
