/* SPDX-License-Identifier: MIT */
/* cxxlocal.c: dlopen()s the C++ plugin named by argv[1] with RTLD_LOCAL,
 * as Python loads a C++ extension (PyTorch), and runs its allocation
 * loop: new, new[], aligned new and new[] (alignas(256)), nothrow new and
 * their deletes, N times. Prints "cxxlocal N STATUS": STATUS 0, or 1 when
 * an aligned new came back misaligned, 2 when a value was lost.
 *
 * Usage: cxxlocal PLUGIN N */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int (*run)(int);
	void *h;
	int n;

	if (argc != 3) {
		fprintf(stderr, "usage: cxxlocal PLUGIN N\n");
		return 2;
	}
	n = atoi(argv[2]);
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "cxxlocal: %s\n", dlerror());
		return 2;
	}
	*(void **)&run = dlsym(h, "cxxplug_run");
	if (!run) {
		fprintf(stderr, "cxxlocal: %s\n", dlerror());
		return 2;
	}
	printf("cxxlocal %d %d\n", n, run(n));
	return 0;
}
