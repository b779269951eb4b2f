/* SPDX-License-Identifier: MIT */
/* mapsafe.c: a program that unmaps, protects, remaps and maps over memory
 * it does not own: here the recorder's log mapping (a MAP_SHARED mapping
 * of a file ending in .mms, found in /proc/self/maps), the way a wild
 * munmap past a program's own mapping can reach the recorder's. The
 * recorder must run on (own.c): munmap, mprotect and madvise (MADV_REMOVE,
 * which would punch a hole in the log) succeed and leave its memory alone,
 * mmap(MAP_FIXED) over it fails with ENOMEM, mremap of it with EFAULT. Then 100,000 allocations and frees, written to the log
 * through the mapping the program tried to take. Prints one line per
 * call ("munmap 0", "mprotect 0", "madvise 0", "mmap ENOMEM",
 * "mremap EFAULT"), or
 * "no log mapping" natively, then "done". Also, when the pages below the
 * log's are free, maps two there and unmaps them and the log's mapping in
 * one call ("wide munmap 0, its pages unmapped": the rest of the range
 * goes, the recorder's stays). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <sys/mman.h>

#include "progs.h"

/* The first mapping of a file whose name ends in .mms: [*lo, *hi). */
static int find_log(uintptr_t *lo, uintptr_t *hi)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);

		if (n > 5 && !strcmp(line + n - 5, ".mms\n") && sscanf(line, "%" SCNxPTR "-%" SCNxPTR, lo, hi) == 2)
			found = 1;
	}
	fclose(f);
	return found;
}

static const char *err_name(int e)
{
	return e == ENOMEM ? "ENOMEM" : e == EFAULT ? "EFAULT" : e == EINVAL ? "EINVAL" : strerror(e);
}

int main(void)
{
	uintptr_t lo, hi;
	char *own;
	void *p;
	size_t len;

	if (!find_log(&lo, &hi)) {
		prog_say(1, "no log mapping\n");
	} else {
		len = hi - lo;
		prog_say(1, "munmap %d\n", munmap((void *)lo, len));
		prog_say(1, "mprotect %d\n", mprotect((void *)lo, len, PROT_NONE));
		/* MADV_REMOVE frees a shared mapping's backing store: the
		 * log's records would read back as zeros. */
		prog_say(1, "madvise %d\n", madvise((void *)lo, len, MADV_REMOVE));
		p = mmap((void *)lo, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		prog_say(1, "mmap %s\n", p == MAP_FAILED ? err_name(errno) : "placed");
		p = mremap((void *)lo, len, 2 * len, MREMAP_MAYMOVE);
		prog_say(1, "mremap %s\n", p == MAP_FAILED ? err_name(errno) : "moved");
		/* A mapping of its own just below the log's, when there is
		 * room, then one munmap from its start to past the log's end:
		 * its pages go, the log's stay. */
		own = mmap((void *)(lo - 8192), 8192, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (own == (void *)(lo - 8192)) {
			unsigned char vec[2];
			int r = munmap(own, 8192 + len);

			prog_say(1, "wide munmap %d, its pages %s\n", r,
				 mincore(own, 8192, vec) && errno == ENOMEM ? "unmapped" : "still mapped");
		} else if (own != MAP_FAILED) {
			munmap(own, 8192);
		}
	}
	for (int i = 0; i < 100000; i++)
		free(prog_malloc(16 + (size_t)i % 512));
	prog_say(1, "done\n");
	return 0;
}
