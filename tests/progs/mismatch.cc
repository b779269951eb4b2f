// SPDX-License-Identifier: MIT
// mismatch.cc: releases of heap blocks by the wrong family's function,
// between releases by the right one in every form the C++ operators have.
//
// Mismatched, in this order (6): delete of new[]; delete[] of new; delete
// of malloc; free of new; realloc of new[] (the new block is realloc's, and
// free releases it rightly); the aligned delete of an aligned new[].
// Matched (none is a finding): new/delete, new[]/delete[], their nothrow,
// aligned and sized forms, new[] of 0 bytes, malloc/free, calloc/realloc/
// free, the standard library's containers and smart pointers, with the
// argument "refuse" a new[] the runtime refuses (std::bad_alloc, caught:
// valgrind cannot throw it, and aborts) and the allocations after it, and a
// thread that news and deletes a thousand times.
//
// Usage: mismatch [refuse]. Prints "mismatch done".
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace
{

// Where each block escapes to, so the compiler cannot elide new/delete.
void *volatile sink;

struct alignas(64) Wide {
	char c[64];
};

struct Sized {
	long v[5];
};

void mismatched()
{
	char *a = new char[40];
	sink = a;
	delete reinterpret_cast<char *>(sink); // delete of new[]
	int *b = new int(1);
	sink = b;
	delete[] static_cast<int *>(sink); // delete[] of new
	void *c = std::malloc(24);
	sink = c;
	delete static_cast<char *>(sink); // delete of malloc
	long *d = new long(2);
	sink = d;
	std::free(sink); // free of new
	char *e = new char[64];
	sink = e;
	void *f = std::realloc(sink, 4096); // realloc of new[]
	sink = f;
	std::free(f); // right: realloc's block
	Wide *w = new Wide[2];
	sink = w;
	::operator delete(sink, std::align_val_t(alignof(Wide))); // aligned delete of aligned new[]
}

void matched(bool refuse)
{
	Sized *s = new Sized();
	sink = s;
	delete s; // sized delete
	int *n = new int[10];
	sink = n;
	delete[] n;
	int *nt = new (std::nothrow) int(3);
	sink = nt;
	delete nt;
	int *nta = new (std::nothrow) int[7];
	sink = nta;
	delete[] nta;
	Wide *w = new Wide;
	sink = w;
	delete w;
	Wide *wa = new Wide[3];
	sink = wa;
	delete[] wa;
	Wide *wn = new (std::nothrow) Wide[2];
	sink = wn;
	delete[] wn;
	char *z = new char[0];
	sink = z;
	delete[] z;
	void *m = std::malloc(100);
	sink = m;
	std::free(m);
	void *c = std::calloc(4, 8);
	sink = c;
	void *r = std::realloc(c, 1000);
	sink = r;
	std::free(r);
	std::vector<std::string> v;
	for (int i = 0; i < 100; i++)
		v.push_back(std::string(40 + i, 'x'));
	auto u = std::make_unique<int[]>(50);
	sink = u.get();
	auto sh = std::make_shared<std::string>(64, 'y');
	sink = sh.get();
	if (refuse) {
		try {
			volatile size_t huge = (size_t)1 << 62;
			char *big = new char[huge];
			sink = big;
			delete[] big;
		} catch (const std::bad_alloc &) {
			// the exception's own block is the runtime's malloc, freed by free
		}
	}
	void *after = std::malloc(136);
	sink = after;
	std::free(after);
	long *l = new long(4);
	sink = l;
	delete l;
}

} // namespace

int main(int argc, char **argv)
{
	matched(argc > 1 && std::string(argv[1]) == "refuse");
	std::thread t([] {
		for (int i = 0; i < 1000; i++) {
			std::string *s = new std::string(100, 'z');
			sink = s;
			delete s;
			int *a = new int[i % 7 + 1];
			sink = a;
			delete[] a;
		}
	});
	t.join();
	mismatched();
	std::puts("mismatch done");
	return 0;
}
