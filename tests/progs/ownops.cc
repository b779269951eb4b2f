// SPDX-License-Identifier: MIT
// ownops.cc: a program that replaces one C++ allocation operator and not
// its partner (ownops.sh), as the language allows: built twice, with
// OWN_NEW (its own operator new(std::size_t), the rest the runtime's)
// and with OWN_DELETE (its own operator delete(void*) and the sized one).
// Its new and delete pairs are matched; it leaks one new[] of 3 ints.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#ifdef OWN_NEW
void *operator new(std::size_t n)
{
	void *p = std::malloc(n ? n : 1);

	if (!p)
		throw std::bad_alloc();
	return p;
}
#endif

#ifdef OWN_DELETE
void operator delete(void *p) noexcept
{
	std::free(p);
}

void operator delete(void *p, std::size_t) noexcept
{
	std::free(p);
}
#endif

// Every block passes through here, so that the compiler keeps each new
// and delete (it may drop a pair whose block nobody sees).
void *volatile sink;

int main()
{
	for (int i = 0; i < 100; i++) {
		int *p = new int(i);

		sink = p;
		delete p;
	}
	for (int i = 0; i < 20; i++) {
		char *a = new char[40];

		sink = a;
		delete[] a;
	}
	std::vector<std::string> v;
	for (int i = 0; i < 50; i++)
		v.push_back(std::string(100, 'x'));
	auto u = std::make_unique<double[]>(16);
	sink = u.get();
	void *m = std::malloc(24);
	sink = m;
	std::free(m);
	sink = new int[3]; // leaked: nothing points to it at exit
	sink = nullptr;
	std::printf("ok %zu\n", v.size());
	return 0;
}
