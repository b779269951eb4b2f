// SPDX-License-Identifier: MIT
// runtimes.cc: a C++ program whose heap at exit is what the C and C++
// runtimes keep for themselves, and what it leaks on purpose.
//
// Usage: runtimes clean|alive|quick|abort
//   clean  iostream, stdio and 8 std::threads, all joined; frees all of
//          its own blocks
//   alive  the same, then leaks one 77-byte block and leaves a detached
//          thread sleeping when main returns (so no freeres can run)
//   quick  the same as clean, then ends with _exit (no destructor, no
//          freeres; stdout is flushed first)
//   abort  the same as clean, then dies of SIGABRT (stdout flushed first)
// Prints what it did, one line.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {
void *volatile leaked;
}

int main(int argc, char **argv)
{
	std::string mode = argc > 1 ? argv[1] : "clean";
	std::vector<std::thread> threads;
	long sum = 0;

	for (int i = 0; i < 8; i++)
		threads.emplace_back([i, &sum] {
			std::string s(100 + i, 'x');
			__atomic_fetch_add(&sum, (long)s.size(), __ATOMIC_RELAXED);
		});
	for (auto &t : threads)
		t.join();
	std::cout << "threads " << threads.size() << " sum " << sum << std::endl;
	printf("mode %s\n", mode.c_str());
	if (mode == "alive") {
		leaked = malloc(77);
		std::thread([] { sleep(1000); }).detach();
	} else if (mode == "quick") {
		fflush(stdout);
		_exit(0);
	} else if (mode == "abort") {
		fflush(stdout);
		abort();
	}
	return 0;
}
