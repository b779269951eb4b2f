/* SPDX-License-Identifier: MIT */
/* wildfree.c: frees what is not a live block, with a block watched, as a
 * program with a heap bug does. The recorder must never dereference such a
 * pointer itself: it records the free and hands it to libc, which reacts
 * as it does natively (here: abort with "free(): invalid pointer" or
 * "double free detected"), whatever is watched.
 *
 * Usage: wildfree invalid|double none|gdb|api
 *   invalid  frees a pointer into a static array whose word before it
 *            holds a huge size (malloc_usable_size() reads past it)
 *   double   frees a block twice
 *   gdb      a watch armed in the gdb descriptor (hooks/gdbif.h), as gdb
 *            arms it, when the recorder is there
 *   api      a block watched with msmemscope_watch() */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gdbif.h"
#include "msmemscope.h"
#include "progs.h"

static _Alignas(16) uint64_t fake[8];
static char *volatile twice;

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "invalid";
	const char *watch = argc > 2 ? argv[2] : "none";
	char *watched = malloc(256);
	char *p;

	memset(watched, 1, 256);
	if (!strcmp(watch, "gdb")) {
		struct msmemscope_gdb *d = dlsym(RTLD_DEFAULT, "msmemscope_gdb");
		if (d) {
			d->watch[0].addr = (uintptr_t)watched;
			d->watch[0].size = 256;
			d->watch[0].generation = 1;
			__atomic_store_n(&d->armed, 1, __ATOMIC_RELEASE);
		}
	} else if (!strcmp(watch, "api")) {
		msmemscope_watch(watched, 256, "watched");
	}
	msmemscope_op_begin("op");
	watched[0] = 2;
	msmemscope_op_end();
	if (!strcmp(what, "double")) {
		twice = malloc(48); /* volatile: the compiler keeps both frees */
		free(twice);
		prog_say(1, "freeing a block twice\n");
		free(twice);
	} else {
		/* A chunk header claiming a size that runs far past the array. */
		fake[1] = (uint64_t)1 << 40;
		prog_say(1, "freeing a pointer that is not a block\n");
		p = (char *)&fake[2];
		__asm__("" : "+r"(p)); /* the compiler must not see what p is */
		free(p);
	}
	prog_say(1, "libc let it pass\n");
	free(watched);
	return 0;
}
