/* SPDX-License-Identifier: MIT */
/* cleanlibc.c: blocks the C library and the loader allocate and free for
 * themselves or hand to the program (dlerror's strings, which glibc frees
 * with its internal free; strdup, getline, asprintf), freed as they must
 * be (guard: no finding, no crash). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char *line = NULL, *s, *msg;
	size_t cap = 0;
	FILE *f;

	for (int i = 0; i < 3; i++)
		if (!dlsym(RTLD_DEFAULT, "no_such_symbol_anywhere") && dlerror())
			printf("dlsym %d failed as it should\n", i);
	s = strdup("a copy");
	if (asprintf(&msg, "%s and %d", s, 42) < 0)
		return 1;
	f = fopen("/proc/self/status", "r");
	if (f && getline(&line, &cap, f) > 0)
		printf("read a line\n");
	if (f)
		fclose(f);
	printf("%s\n", msg);
	free(line);
	free(msg);
	free(s);
	return 0;
}
