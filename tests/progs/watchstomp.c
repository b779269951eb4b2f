/* SPDX-License-Identifier: MIT */
/* watchstomp.c: a program for the watch test (watchstomp.sh): six operator
 * launches, one of which overruns its buffer into a watched neighbour.
 *
 *   launch 1 embed:   allocates `hidden` (32 bytes, 0x21) and keeps it;
 *                     allocates and frees a 16-byte temporary; writes
 *                     `weights` (64 bytes, 0x11) and declares it written
 *                     (msmemscope_access WRITE): its outputs are out0 =
 *                     hidden, out1 = weights
 *   launch 2 matmul:  writes hidden (0x22)
 *   launch 3 softmax: writes 72 bytes of 0x5a into scratch, its 64-byte
 *                     buffer: the last 8 land on weights[0..8)
 *   launch 4 norm:    adds 1 to `counter`
 *   (between launches 4 and 5, main adds 1 to counter, and step 2 begins)
 *   launch 5 gelu:    reads weights and hidden
 *   launch 6 proj:    writes weights (0x33): after the watched range
 *
 * With the argument "free", matmul frees hidden after writing it (a watched
 * block released inside the range). With "wild", it also asks to watch
 * ranges it cannot read: 8 bytes at address 16, and a range running from
 * a readable page into a PROT_NONE one: the recorder must not watch them
 * (a checksum there would fault where the program does not).
 *
 * `counter` (8 bytes, little-endian, from 0) is watched with
 * msmemscope_watch(counter, 8, "counter") before launch 1. Linked against
 * the no-op stubs, the program runs the same without the recorder. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "msmemscope.h"
#include "progs.h"

#define BUF 64

/* softmax's buffer, then weights. One array, so that the overrun is a
 * defined write the compiler keeps. */
__attribute__((aligned(64))) unsigned char watchstomp_arena[2 * BUF];
static volatile uint64_t counter;

static unsigned char *const scratch = watchstomp_arena;
static unsigned char *const weights = watchstomp_arena + BUF;

int main(int argc, char **argv)
{
	unsigned char *hidden, *tmp;
	unsigned sum = 0;
	int do_free = argc == 2 && !strcmp(argv[1], "free");

	msmemscope_watch((const void *)&counter, sizeof counter, "counter");
	if (argc == 2 && !strcmp(argv[1], "wild")) {
		long page = sysconf(_SC_PAGESIZE);
		unsigned char *two =
			mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (two == MAP_FAILED || mprotect(two + page, (size_t)page, PROT_NONE))
			return 1;
		msmemscope_watch((const void *)16, 8, "wild");
		msmemscope_watch(two + page - 8, 16, "half");
	}

	msmemscope_op_begin("embed");
	hidden = malloc(32);
	tmp = malloc(16);
	if (!hidden || !tmp)
		return 1;
	memset(tmp, 1, 16);
	memset(hidden, 0x21, 32);
	free(tmp);
	memset(weights, 0x11, BUF);
	msmemscope_access(weights, BUF, MSMEMSCOPE_ACCESS_WRITE);
	msmemscope_op_end();

	msmemscope_op_begin("matmul");
	memset(hidden, 0x22, 32);
	if (do_free) {
		free(hidden);
		hidden = NULL;
	}
	msmemscope_op_end();

	msmemscope_op_begin("softmax");
	memset(scratch, 0x5a, BUF + 8); /* the overrun */
	msmemscope_op_end();

	msmemscope_op_begin("norm");
	counter++;
	msmemscope_op_end();

	counter++; /* between launches */
	msmemscope_step();

	msmemscope_op_begin("gelu");
	for (unsigned i = 0; i < BUF; i++)
		sum += weights[i] + (i < 32 && hidden ? hidden[i] : 0);
	msmemscope_op_end();

	msmemscope_op_begin("proj");
	memset(weights, 0x33, BUF);
	msmemscope_op_end();

	prog_say(1, "watchstomp sum=%u counter=%llu\n", sum, (unsigned long long)counter);
	free(hidden);
	return 0;
}
