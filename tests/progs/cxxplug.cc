// SPDX-License-Identifier: MIT
// cxxplug.cc: a C++ plugin that tests/progs/cxxlocal dlopen()s with
// RTLD_LOCAL, as Python loads PyTorch: its C++ runtime (libstdc++ as a
// dependency, or linked in statically) is then not in the global scope,
// while its calls of the allocation operators come to the recorder's.
#include <cstdint>
#include <new>

struct alignas(256) wide {
	char b[300];
};

extern "C" int cxxplug_run(int n)
{
	for (int i = 0; i < n; i++) {
		int *p = new int(i);
		int *a = new int[8];
		wide *w = new wide;     // operator new(size_t, align_val_t)
		wide *wa = new wide[2]; // operator new[](size_t, align_val_t)
		int *q = new (std::nothrow) int(i);
		if ((uintptr_t)w % 256 || (uintptr_t)wa % 256)
			return 1; // an aligned new that lost its alignment
		if (!q || *p != i || *q != i)
			return 2;
		a[7] = i;
		w->b[299] = 1;
		delete p;
		delete[] a;
		delete w;
		delete[] wa;
		delete q;
	}
	return 0;
}
