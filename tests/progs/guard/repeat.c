/* SPDX-License-Identifier: MIT */
/* repeat.c: one bug hit many times, as a loop does: twelve names copied
 * by a helper that leaves no room for the terminating NUL (twelve
 * overflows from one allocation stack, each found at its free), and three
 * blocks overflowed by two bytes each from another line, found at exit.
 * guard: 15 errors from 2 contexts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where each copy is seen from outside, so that the compiler keeps its
 * allocation. */
char *volatile repeat_seen;

static char *copy_name(const char *s)
{
	char *p = malloc(strlen(s)); /* ALLOC */

	strcpy(p, s);
	return p;
}

int main(void)
{
	char *kept[3];
	char name[32];
	size_t total = 0;

	for (int i = 0; i < 12; i++) {
		char *p;

		snprintf(name, sizeof(name), "name-%d", i);
		p = copy_name(name);
		repeat_seen = p;
		total += strlen(repeat_seen);
		free(p);
	}
	for (int i = 0; i < 3; i++) {
		kept[i] = malloc(33 + (size_t)i); /* ALLOC2 */
		memset(kept[i], 'k', 35 + (size_t)i);
	}
	printf("%zu bytes of names\n", total);
	return 0;
}
