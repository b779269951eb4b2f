// SPDX-License-Identifier: MIT
// cxx.cc: C++ allocation through operator new/delete from several
// std::threads, to check the recorder under libstdc++.
//
// Usage: cxx THREADS ITERATIONS
// Each iteration makes exactly two heap allocations (a Node and a string
// too long for the small-string buffer) and frees both. Prints the
// checksum and "allocs=2*THREADS*ITERATIONS".
#include <cstdio>
#include <cstdlib>
#include <memory>
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
	if (argc != 3) {
		std::fprintf(stderr, "usage: cxx THREADS ITERATIONS\n");
		return 99;
	}
	unsigned nthreads = static_cast<unsigned>(std::strtoul(argv[1], nullptr, 10));
	unsigned long iterations = std::strtoul(argv[2], nullptr, 10);
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
	std::printf("sum=%ld allocs=%lu\n", total, 2ul * nthreads * iterations);
	return 0;
}
