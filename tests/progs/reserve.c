/* SPDX-License-Identifier: MIT */
/* reserve.c: address space reserved with PROT_NONE and opened piece by
 * piece with mprotect, as a JVM's or V8's heap is: only what the program
 * may access is memory. Reserves 256 MiB, opens A (1 MiB) and B (2 MiB),
 * makes A read-only (still memory), closes B with an mmap(MAP_FIXED,
 * PROT_NONE) and A with mprotect(PROT_NONE), then opens C (512 KiB)
 * with pkey_mprotect (no key; mprotect where the kernel has no
 * pkey_mprotect), which it keeps to the end with the reservation: the
 * mappings' peak is
 * 3 MiB, 512 KiB stays mapped at exit. A page watched through the API is
 * closed inside an operator: the launch's end must not read it. */
#define _GNU_SOURCE /* pkey_mprotect */
#include <sys/mman.h>

#include "msmemscope.h"
#include "progs.h"

#define MIB ((size_t)1 << 20)

/* Opens [p, p + len) with pkey_mprotect, as a program that uses protection
 * keys does (key -1: none). */
static int open_c(char *p, size_t len)
{
	int r = pkey_mprotect(p, len, PROT_READ | PROT_WRITE, -1);

	return r && errno == ENOSYS ? mprotect(p, len, PROT_READ | PROT_WRITE) : r;
}

int main(void)
{
	char *r = mmap(NULL, 256 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *page;
	unsigned sum = 0;

	if (r == MAP_FAILED)
		return prog_say(2, "reserve: mmap: %s\n", strerror(errno)), 1;
	if (mprotect(r, MIB, PROT_READ | PROT_WRITE) || mprotect(r + 8 * MIB, 2 * MIB, PROT_READ | PROT_WRITE))
		return prog_say(2, "reserve: mprotect: %s\n", strerror(errno)), 1;
	memset(r, 1, MIB);
	memset(r + 8 * MIB, 2, 2 * MIB);
	sum += (unsigned char)r[MIB - 1] + (unsigned char)r[10 * MIB - 1];
	if (mprotect(r, MIB, PROT_READ) ||
	    mmap(r + 8 * MIB, 2 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) ==
		    MAP_FAILED ||
	    mprotect(r, MIB, PROT_NONE) || open_c(r + 16 * MIB, MIB / 2))
		return prog_say(2, "reserve: closing: %s\n", strerror(errno)), 1;
	r[16 * MIB] = 3;
	sum += (unsigned char)r[16 * MIB];
	/* A watched page closed by an operator. */
	page = r + 32 * MIB;
	if (mprotect(page, 4096, PROT_READ | PROT_WRITE))
		return prog_say(2, "reserve: mprotect: %s\n", strerror(errno)), 1;
	page[0] = 4;
	msmemscope_watch(page, 4096, "page");
	msmemscope_op_begin("close");
	mprotect(page, 4096, PROT_NONE);
	msmemscope_op_end();
	/* An mprotect that fails changes nothing. */
	if (!mprotect(r + 1, 4096, PROT_READ))
		return prog_say(2, "reserve: an unaligned mprotect succeeded\n"), 1;
	prog_say(1, "sum %u errno %d\n", sum, errno);
	return 0;
}
