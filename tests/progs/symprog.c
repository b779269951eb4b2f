/* SPDX-License-Identifier: MIT */
/* symprog.c: allocates from known lines of known functions (here, in an
 * inlined function of syminl.c, and in a library it dlopen()s) so that
 * tests/progs/symbolize.sh can check the symbolized stacks.
 *
 * Usage: symprog LIBRARY
 * The lines the test looks for carry a SYM-... marker comment. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "progs.h"
#include "symprog.h"

static __attribute__((noinline)) void *sym_direct(size_t n)
{
	void *p = malloc(n); /* SYM-DIRECT */

	sym_keep(p);
	return p;
}

int main(int argc, char **argv)
{
	void *(*lib_alloc)(unsigned n);
	void *lib, *sym, *a, *b, *c;

	if (argc != 2) {
		prog_say(2, "usage: symprog LIBRARY");
		return 2;
	}
	a = sym_direct(SYM_SIZE_DIRECT); /* SYM-MAIN-DIRECT */
	b = sym_outer(SYM_SIZE_INLINE);  /* SYM-MAIN-INLINE */
	lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		prog_say(2, "symprog: %s", dlerror());
		return 1;
	}
	sym = dlsym(lib, "symlib_alloc");
	if (!sym) {
		prog_say(2, "symprog: %s", dlerror());
		return 1;
	}
	memcpy(&lib_alloc, &sym, sizeof(sym)); /* no cast from void * to a function in ISO C */
	c = lib_alloc(SYM_SIZE_LIB);           /* SYM-MAIN-LIB */
	if (!a || !b || !c)
		return 1;
	free(a);
	free(b);
	free(c);
	prog_say(1, "symprog done");
	return 0;
}
