/* SPDX-License-Identifier: MIT */
/* oom.c: allocations the allocator refuses, for the oom analysis and the
 * recorder's ALLOC_FAIL records. Step 1 allocates five blocks of 1000 to
 * 5000 bytes (in that order) and keeps them; step 2, inside operator
 * "grow", asks malloc for 2^60 bytes (REFUSED_LINE), calloc for 2^40 x
 * 2^40, posix_memalign for 2^60 aligned to 64, realloc of the first block
 * to 2^61, and posix_memalign with a bad alignment (EINVAL: not refused
 * for want of memory). Prints what each call returned and errno, which
 * must be as native: ENOMEM. Frees everything. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope.h"
#include "progs.h"

static void *volatile sink;

int main(void)
{
	void *keep[5], *p, *q = NULL;
	size_t huge = (size_t)1 << 60, big = (size_t)1 << 40;
	volatile size_t n = big; /* no compile-time overflow warning */
	int i, rc;

	for (i = 0; i < 5; i++) {
		keep[i] = malloc(1000 * (size_t)(i + 1));
		if (!keep[i])
			prog_die("out of memory");
		memset(keep[i], 1, 1000 * (size_t)(i + 1));
	}
	msmemscope_step();
	msmemscope_op_begin("grow");
	errno = 0;
	p = malloc(huge); /* REFUSED_LINE */
	prog_say(1, "malloc %s errno %d\n", p ? "ok" : "null", errno);
	sink = p;
	errno = 0;
	p = calloc(n, n);
	prog_say(1, "calloc %s errno %d\n", p ? "ok" : "null", errno);
	sink = p;
	rc = posix_memalign(&q, 64, huge);
	prog_say(1, "posix_memalign %d\n", rc);
	errno = 0;
	p = realloc(keep[0], huge * 2);
	prog_say(1, "realloc %s errno %d\n", p ? "ok" : "null", errno);
	sink = p;
	rc = posix_memalign(&q, 3, 100);
	prog_say(1, "posix_memalign bad %d\n", rc);
	msmemscope_op_end();
	for (i = 0; i < 5; i++)
		free(keep[i]);
	return 0;
}
