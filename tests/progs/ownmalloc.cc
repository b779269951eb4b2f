// SPDX-License-Identifier: MIT
// ownmalloc.cc: a program that defines the malloc family itself
// (ownalloc.c, linked in), ahead of the recorder in the global scope: the
// recorder sees none of its malloc calls and must say so, not report "no
// leak". C++, so that libstdc++ is loaded: its start-up allocates (its
// emergency exception pool) through this malloc before the recorder's
// own start-up ran, and the arena's first mmap, under the allocator's
// lock, reaches the recorder's mmap hook then (a recorder that started
// itself there called fopen, hence this malloc, and waited for the lock
// forever). It allocates 1000 blocks and frees 900 of them, leaks 100,
// and prints what it did. (A std::string of 200 characters uses operator
// new, libstdc++'s: the program needs libstdc++ even when the linker drops
// libraries the program does not use.)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main()
{
	static void *blocks[1000];
	unsigned long sum = 0;

	for (int i = 0; i < 1000; i++) {
		blocks[i] = std::malloc(16 + i % 200);
		if (!blocks[i])
			return 1;
		std::memset(blocks[i], i & 0xff, 16);
		sum += static_cast<unsigned char *>(blocks[i])[15];
	}
	void *big = std::malloc(200000); // a mapping of its own
	if (!big)
		return 1;
	std::memset(big, 1, 200000);
	std::free(big);
	for (int i = 100; i < 1000; i++)
		std::free(blocks[i]);
	std::string line(200, '=');
	std::printf("ownmalloc: 1001 blocks, 901 freed, checksum %lu, a line of %zu\n", sum, line.size());
	return 0;
}
