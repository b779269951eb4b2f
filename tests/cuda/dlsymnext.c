/* SPDX-License-Identifier: MIT */
/* dlsymnext.c: dlsym() as the loader defines it, for cuda.sh: the
 * recorder interposes dlsym() (hooks/dlsym.c), and this program's output
 * must be the same with it as without. RTLD_NEXT is relative to the
 * caller (libnexta.so, see nextlib.c), RTLD_DEFAULT finds the first
 * definition, a real handle its own, a "cu" name in a real handle what
 * the loader finds (the recorder's C path), and a missing name NULL with
 * the same dlerror(). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int next_which(const char *name);

static int call(void *handle, const char *name)
{
	int (*f)(void);

	*(void **)&f = dlsym(handle, name);
	return f ? f() : -1;
}

int main(void)
{
	void *b = dlopen("libnextb.so", RTLD_NOW | RTLD_NOLOAD);
	const char *err;

	printf("next which=%d cu_which=%d\n", next_which("which"), next_which("cu_which"));
	printf("default which=%d cu_which=%d\n", call(RTLD_DEFAULT, "which"), call(RTLD_DEFAULT, "cu_which"));
	printf("next from main which=%d\n", call(RTLD_NEXT, "which"));
	if (!b) {
		printf("no handle: %s\n", dlerror());
		return 1;
	}
	printf("handle which=%d cu_which=%d\n", call(b, "which"), call(b, "cu_which"));
	dlerror();
	printf("missing=%d", call(b, "cuNoSuchEntryPoint"));
	err = dlerror();
	printf(" error=%s\n", err && strstr(err, "cuNoSuchEntryPoint") ? "names it" : "other");
	dlclose(b);
	return 0;
}
