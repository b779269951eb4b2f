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

/* Functions named as Rust mangles them, legacy (with its hash) and v0:
 * the reports give Rust's names, symprog::legacy and symprog::rust_like
 * (with libiberty). External (GCC gives a static function's DWARF no
 * linkage name), never cloned (its constant propagation would name a
 * clone rust_like.constprop.0), and unlike sym_direct (identical code
 * would be folded into one). */
#ifdef __clang__
#define SYM_NOCLONE __attribute__((noinline))
#else
#define SYM_NOCLONE __attribute__((noinline, noclone))
#endif
SYM_NOCLONE void *sym_rust_legacy(size_t n) __asm__("_ZN7symprog6legacy17h0123456789abcdefE");
SYM_NOCLONE void *sym_rust_v0(size_t n) __asm__("_RNvCs1234_7symprog9rust_like");

void *sym_rust_legacy(size_t n)
{
	char *p = malloc(n); /* SYM-RUST-ALLOC */

	if (p)
		p[0] = 'R';
	sym_keep(p);
	return p;
}

void *sym_rust_v0(size_t n)
{
	void *p = sym_rust_legacy(n); /* SYM-RUST-CALL */

	sym_keep(p);
	return p;
}

int main(int argc, char **argv)
{
	void *(*lib_alloc)(unsigned n);
	void *lib, *sym, *a, *b, *c, *d;

	if (argc != 2) {
		prog_say(2, "usage: symprog LIBRARY");
		return 2;
	}
	a = sym_direct(SYM_SIZE_DIRECT); /* SYM-MAIN-DIRECT */
	b = sym_outer(SYM_SIZE_INLINE);  /* SYM-MAIN-INLINE */
	d = sym_rust_v0(SYM_SIZE_RUST);  /* SYM-MAIN-RUST */
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
	if (!a || !b || !c || !d)
		return 1;
	free(d);
	free(a);
	free(b);
	free(c);
	prog_say(1, "symprog done");
	return 0;
}
