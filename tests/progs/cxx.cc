// SPDX-License-Identifier: MIT
// cxx.cc: C++ allocation through operator new/delete from several
// std::threads, to check the recorder under libstdc++.
//
// Usage: cxx THREADS ITERATIONS [ALIGNED]
// Each iteration makes exactly two heap allocations (a Node and a string
// too long for the small-string buffer) and frees both; then, with
// ALIGNED, the main thread makes and deletes ALIGNED blocks of 64-byte
// alignment through the aligned nothrow operators (C++17). Prints the
// checksum and "allocs=2*THREADS*ITERATIONS+ALIGNED".
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Node {
	long value;
	char pad[40];
};

// Where each Node escapes to, so the compiler cannot elide new/delete.
Node *volatile last_node;

struct alignas(64) Wide {
	char bytes[200];
};

Wide *volatile last_wide;

// n blocks through operator new(size, align_val_t, nothrow) and
// operator delete(ptr, align_val_t, nothrow): 0, or 1 when one failed or
// was not aligned.
int aligned_nothrow(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		void *p = ::operator new(sizeof(Wide), std::align_val_t(alignof(Wide)), std::nothrow);

		if (!p || reinterpret_cast<std::uintptr_t>(p) % alignof(Wide))
			return 1;
		last_wide = static_cast<Wide *>(p);
		::operator delete(p, std::align_val_t(alignof(Wide)), std::nothrow);
	}
	return 0;
}

long work(unsigned id, unsigned long iterations)
{
	long sum = 0;

	for (unsigned long i = 0; i < iterations; i++) {
		Node *n = new Node{static_cast<long>(i + id), {}};
		last_node = n;
		std::string s(100 + i % 50, static_cast<char>('a' + id % 26));

		sum += n->value + static_cast<long>(s.size());
		delete n;
	}
	return sum;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		std::fprintf(stderr, "usage: cxx THREADS ITERATIONS [ALIGNED]\n");
		return 99;
	}
	unsigned nthreads = static_cast<unsigned>(std::strtoul(argv[1], nullptr, 10));
	unsigned long iterations = std::strtoul(argv[2], nullptr, 10);
	unsigned long aligned = argc == 4 ? std::strtoul(argv[3], nullptr, 10) : 0;
	std::vector<long> sums(nthreads);
	std::vector<std::thread> threads;

	threads.reserve(nthreads);
	for (unsigned t = 0; t < nthreads; t++)
		threads.emplace_back([&sums, t, iterations] { sums[t] = work(t, iterations); });
	for (auto &th : threads)
		th.join();
	long total = 0;
	for (long s : sums)
		total += s;
	if (aligned_nothrow(aligned)) {
		std::fprintf(stderr, "cxx: an aligned nothrow new failed\n");
		return 1;
	}
	std::printf("sum=%ld allocs=%lu\n", total, 2ul * nthreads * iterations + aligned);
	return 0;
}
