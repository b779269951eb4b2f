// SPDX-License-Identifier: MIT
// deletemalloc.cc: delete of a malloc'ed block (guard: mismatched free of
// a 32-byte block).
#include <cstdio>
#include <cstdlib>

static char *volatile kept;

int main()
{
	char *p = static_cast<char *>(std::malloc(32)); /* ALLOC */

	p[0] = 'x';
	kept = p;
	std::printf("%c\n", p[0]);
	delete kept;
	return 0;
}
