// SPDX-License-Identifier: MIT
// symlib.cc: the library tests/progs/symprog dlopen()s: a C++ method that
// allocates on a known line, for names demangled from DWARF and, in a
// stripped copy, from the dynamic symbol table.
#include <cstdlib>

namespace symns
{

struct Pool {
	void *take(unsigned n);
};

__attribute__((noinline)) void *Pool::take(unsigned n)
{
	void *p = std::malloc(n); // SYM-LIB-ALLOC

	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

} // namespace symns

extern "C" void *symlib_alloc(unsigned n)
{
	symns::Pool pool;
	void *p = pool.take(n); // SYM-LIB-CALL

	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}
