/* SPDX-License-Identifier: MIT */
/* cxxlocal.c: dlopen()s the C++ plugin named by argv[1] with RTLD_LOCAL,
 * as Python loads a C++ extension (PyTorch), and runs its allocation
 * loop: new, new[], aligned new and new[] (alignas(256)), nothrow new and
 * their deletes, N times. Prints "cxxlocal N STATUS": STATUS 0, or 1 when
 * an aligned new came back misaligned, 2 when a value was lost.
 *
 * With two more arguments, it dlopen()s MISSING (a library that does not
 * exist), which fails, before it runs the loop, whose first new finds
 * the C++ runtime through the recorder; then it leaves glibc's dlerror()
 * state unread ("unread") or prints it ("read": the state stays allocated
 * until the thread's next dlfcn call), as programs that try optional
 * plugins do. The message must be the one native runs print (the
 * recorder's own lookups must not change it), and the state is glibc's,
 * never the program's leak.
 *
 * Usage: cxxlocal PLUGIN N [read|unread MISSING] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int (*run)(int);
	void *h;
	int n;

	if (argc != 3 && argc != 5) {
		fprintf(stderr, "usage: cxxlocal PLUGIN N [read|unread MISSING]\n");
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
	if (argc == 5 && dlopen(argv[4], RTLD_NOW)) {
		fprintf(stderr, "cxxlocal: %s loaded\n", argv[4]);
		return 2;
	}
	printf("cxxlocal %d %d\n", n, run(n));
	if (argc == 5 && !strcmp(argv[3], "read")) {
		const char *e = dlerror();

		printf("cxxlocal: %s\n", e ? e : "no error");
	}
	return 0;
}
