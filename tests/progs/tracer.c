/* SPDX-License-Identifier: MIT */
/* tracer.c: a known peak and known leaks for the watermark, usage and
 * leakage analyses (tests/progs/trace.sh): three steps, two operators, a
 * mapping cut by munmap after the peak, and blocks freed after it.
 * With "none" it only returns (what the C runtime does by itself). With
 * "heap" it leaves out the mapping (heaptrack sees only the malloc family). */
#include <sys/mman.h>

#include "msmemscope.h"
#include "progs.h"

/* The compiler must not drop allocations whose contents nobody reads. */
static void touch(void *p, size_t n)
{
	if (!p)
		exit(2);
	memset(p, 1, n);
}

int main(int argc, char **argv)
{
	int heap_only = argc > 1 && !strcmp(argv[1], "heap");
	char *a, *b, *c, *d, *e, *m = NULL;
	long page = sysconf(_SC_PAGESIZE);

	if (argc > 1 && !strcmp(argv[1], "none"))
		return 0;
	/* Step 1: 1000 and 2000, 3000 in operator "conv", 4 pages mapped;
	 * 1000 freed. */
	a = malloc(1000);
	touch(a, 1000);
	b = malloc(2000);
	touch(b, 2000);
	msmemscope_op_begin("conv");
	c = malloc(3000);
	touch(c, 3000);
	msmemscope_op_end();
	if (!heap_only) {
		m = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return 2;
		touch(m, 4 * page);
	}
	free(a);
	msmemscope_step();
	/* Step 2: 5000 in operator "matmul" reaches the peak; then the second
	 * page is unmapped and 2000 freed (both still count at the peak), and
	 * 6000 comes and goes below it. */
	msmemscope_op_begin("matmul");
	d = malloc(5000);
	touch(d, 5000);
	msmemscope_op_end();
	if (m)
		munmap(m + page, page);
	free(b);
	e = malloc(6000);
	touch(e, 6000);
	free(e);
	msmemscope_step();
	/* Step 3: nothing more; 3000, 5000 and 3 pages stay. */
	msmemscope_op_begin("relu");
	msmemscope_op_end();
	prog_say(1, "tracer done %d\n", c[0] + d[0]);
	return 0;
}
