// SPDX-License-Identifier: MIT
// unwindxx.cc: C++ allocations around exceptions, for unwind.sh: each
// round throws through a recursion whose frames own strings and run
// destructors that allocate while the exception unwinds them, and the
// handler allocates too; a second std::thread does the same.
//
// Usage: unwindxx ROUNDS
// Prints "caught=N".
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

void *volatile sink;

struct Guard {
	int n;
	~Guard()
	{
		// Runs in a landing pad while the exception propagates.
		void *p = std::malloc(48 + static_cast<size_t>(n));
		sink = p;
		std::free(p);
	}
};

__attribute__((noinline)) unsigned long thrower(int n)
{
	Guard g{n};
	std::string s(64 + static_cast<size_t>(n), 'x');

	if (n == 0)
		throw std::runtime_error(std::string(100, 'e'));
	unsigned long r = thrower(n - 1);
	return r + s.size();
}

unsigned long rounds(int count)
{
	unsigned long caught = 0;

	for (int i = 0; i < count; i++) {
		try {
			thrower(i % 17);
		} catch (const std::exception &e) {
			std::string m(e.what());
			m += std::to_string(i);
			caught += m.size() > 0;
		}
	}
	return caught;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: unwindxx ROUNDS\n");
		return 99;
	}
	int count = std::atoi(argv[1]);
	unsigned long other = 0;
	std::thread th([&other, count] { other = rounds(count); });
	unsigned long caught = rounds(count);
	th.join();
	std::printf("caught=%lu\n", caught + other);
	return 0;
}
