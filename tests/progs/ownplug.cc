// SPDX-License-Identifier: MIT
// ownplug.cc: a program and the C++ plugin it dlopen()s (built from this
// file with -DOWNPLUG_PLUGIN), exchanging blocks made with new[] across
// the boundary (ownplug.sh). Built so that one side calls its own copy
// of the C++ runtime's operators (a plugin linked with -static-libstdc++
// and -Wl,--exclude-libs,ALL, stripped or not; or the program linked with
// -static-libstdc++), its new[] is the malloc it calls: the recorder sees
// a malloc released by delete[], which is no mismatched free. The
// program's own new[] released by delete is one, whoever defines them.
//
// Usage: ownplug PLUGIN   (prints "ownplug 10": values read from the
// blocks of both sides; or why it failed)
#ifdef OWNPLUG_PLUGIN
extern "C" int *ownplug_make(int n)
{
	int *p = new int[n];

	for (int i = 0; i < n; i++)
		p[i] = i;
	return p;
}

extern "C" void ownplug_drop(int *p)
{
	delete[] p;
}
#else
#include <dlfcn.h>
#include <cstdio>

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: ownplug PLUGIN\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		std::fprintf(stderr, "ownplug: %s\n", dlerror());
		return 2;
	}
	int *(*make)(int) = reinterpret_cast<int *(*)(int)>(dlsym(h, "ownplug_make"));
	void (*drop)(int *) = reinterpret_cast<void (*)(int *)>(dlsym(h, "ownplug_drop"));
	if (!make || !drop) {
		std::fprintf(stderr, "ownplug: %s\n", dlerror());
		return 2;
	}
	int *a = make(8); // the plugin's new[], the program's delete[]
	int sum = a[7];
	delete[] a;
	int *b = new int[8]; // the program's new[], the plugin's delete[]
	b[0] = 1;
	drop(b);
	int *c = make(8); // both the plugin's
	sum += c[3];
	drop(c);
	int *d = new int[4]; // a mismatched free: new[] released by delete
	d[0] = sum;
	int out = d[0];
	delete d;
	std::printf("ownplug %d\n", out);
	return 0;
}
#endif
