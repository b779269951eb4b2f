/* SPDX-License-Identifier: MIT */
/* gdbwatch.c: a program with a buffer overrun for the gdb interface test
 * (gdbwatch.sh): six operator launches in two steps, each writing its own
 * 64-byte buffer, gdbwatch_blocks[0..64); launch 3 (softmax) writes 72
 * bytes, 8 past its buffer, into the neighbour block gdbwatch_blocks[64..128)
 * that the test watches. Linked against the no-op stubs, it runs the same
 * without the recorder.
 *
 * Usage: gdbwatch          the six launches:
 *                            step 1: 1 embed, 2 matmul, 3 softmax (overrun)
 *                            step 2: 4 embed, 5 matmul, 6 softmax
 *        gdbwatch more     the same, and the neighbour's bytes 16..19 are
 *                          written between launches 4 and 5 (outside any
 *                          launch); then launch 7 (layer) writes its bytes
 *                          32..35 before it launches 8 (inner) nested in it
 *        gdbwatch threads  4 threads of 2000 launches each; thread 2 writes
 *                          one byte of the neighbour (bytes 1 to 4) in
 *                          its launches 500, 1000, 1500 and 2000
 *        gdbwatch offsets  prints the offsets of the gdb descriptor's
 *                          fields (hooks/gdbif.h), as shell assignments
 *        gdbwatch sizes    with the recorder: arms the descriptor itself
 *                          (as gdb would) on blocks of 1 byte to 68 KiB at
 *                          three alignments, changes the first, middle and
 *                          last byte in three launches, and checks that
 *                          the hooks counted exactly those three changes
 *                          (every length the compare's rounds and tail
 *                          can see); prints "sizes ok", or each miss */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "gdbif.h"
#include "msmemscope.h"
#include "progs.h"

#define BUF 64

/* The operators' buffer, then the neighbour block. One array, so that the
 * overrun is a defined write the compiler keeps. Not static: the test
 * takes its address in gdb. */
__attribute__((aligned(64))) unsigned char gdbwatch_blocks[2 * BUF];

static void launch(const char *name, int fill, size_t len)
{
	msmemscope_op_begin(name);
	memset(gdbwatch_blocks, fill, len);
	msmemscope_op_end();
}

#define THREADS 4
#define THREAD_LAUNCHES 2000

static void *thread_main(void *arg)
{
	unsigned long id = (unsigned long)arg;

	for (unsigned i = 1; i <= THREAD_LAUNCHES; i++) {
		msmemscope_op_begin(id == 2 ? "writer" : "other");
		if (id == 2 && i % 500 == 0)
			gdbwatch_blocks[BUF + i / 500] = (unsigned char)(0xa0 + i / 500);
		msmemscope_op_end();
	}
	return NULL;
}

static void threads(void)
{
	pthread_t t[THREADS];

	for (unsigned long i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, thread_main, (void *)i))
			prog_die("gdbwatch: pthread_create failed");
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	prog_say(1, "gdbwatch done\n");
}

static unsigned char sizes_block[70000 + 64];

static void sizes(void)
{
	static const size_t size[] = { 1, 31, 32, 127, 128, 129, 255, 256, 300, 4097, 65535, 65536, 70000 };
	struct msmemscope_gdb *d = dlsym(RTLD_DEFAULT, "msmemscope_gdb");
	int bad = 0;

	if (!d)
		prog_die("gdbwatch sizes: no recorder (msmemscope_gdb not found)");
	for (unsigned s = 0; s < sizeof size / sizeof *size; s++)
		for (unsigned off = 0; off < 3; off++) {
			unsigned char *p = sizes_block + off * 7;
			size_t n = size[s], at[3] = { 0, n / 2, n - 1 };
			uint64_t before;

			d->watch[0].addr = (uintptr_t)p;
			d->watch[0].size = n;
			d->watch[0].generation++;
			__atomic_store_n(&d->armed, 1, __ATOMIC_RELEASE);
			launch("arm", 0, 0); /* the snapshot is taken */
			before = d->watch[0].changes;
			for (unsigned k = 0; k < 3; k++) {
				msmemscope_op_begin("change");
				p[at[k]] ^= 0x40;
				msmemscope_op_end();
			}
			launch("same", 0, 0);
			if (d->watch[0].changes - before != 3) {
				prog_say(1, "size %zu at +%u: %llu changes, not 3\n", n, off * 7,
				         (unsigned long long)(d->watch[0].changes - before));
				bad = 1;
			}
		}
	d->watch[0].size = 0;
	__atomic_store_n(&d->armed, 0, __ATOMIC_RELEASE);
	if (!bad)
		prog_say(1, "sizes ok\n");
}

static void offsets(void)
{
#define OFF(var, field) prog_say(1, "%s=%zu\n", var, offsetof(struct msmemscope_gdb, field))
#define WOFF(var, field) prog_say(1, "%s=%zu\n", var, offsetof(struct mms_gdb_watch, field))
	OFF("off_version", version);
	OFF("off_armed", armed);
	OFF("off_watch", watch);
	prog_say(1, "watch_stride=%zu\n", sizeof(struct mms_gdb_watch));
	WOFF("w_addr", addr);
	WOFF("w_size", size);
	WOFF("w_generation", generation);
	WOFF("w_seen", seen);
	WOFF("w_snapshot", snapshot);
	WOFF("w_previous", previous);
	WOFF("w_capacity", capacity);
	WOFF("w_changes", changes);
	OFF("off_break_op", break_op);
	OFF("off_break_step", break_step);
	OFF("off_break_end", break_end);
	OFF("off_reason", reason);
	OFF("off_hit_watch", hit_watch);
	OFF("off_op_launch", op_launch);
	OFF("off_op_name", op_name);
	OFF("off_step", step);
	OFF("off_tid", tid);
	OFF("off_launches", launches);
	OFF("off_log_path", log_path);
	prog_say(1, "gdb_size=%zu\n", sizeof(struct msmemscope_gdb));
	prog_say(1, "gdb_version=%d\n", MMS_GDB_VERSION);
}

int main(int argc, char **argv)
{
	int more = argc == 2 && !strcmp(argv[1], "more");

	if (argc == 2 && !strcmp(argv[1], "offsets")) {
		offsets();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "sizes")) {
		sizes();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "threads")) {
		threads();
		return 0;
	}
	if (argc > 2 || (argc == 2 && !more))
		prog_die("usage: gdbwatch [more|threads|offsets|sizes]");

	launch("embed", 0x11, BUF);
	launch("matmul", 0x22, BUF);
	launch("softmax", 0x33, BUF + 8); /* the overrun */
	msmemscope_step();
	launch("embed", 0x44, BUF);
	if (more)
		memset(gdbwatch_blocks + BUF + 16, 0x55, 4);
	launch("matmul", 0x66, BUF);
	launch("softmax", 0x77, BUF);
	if (more) {
		msmemscope_op_begin("layer");
		memset(gdbwatch_blocks + BUF + 32, 0x88, 4);
		launch("inner", 0x99, BUF);
		msmemscope_op_end();
	}
	prog_say(1, "gdbwatch done\n");
	return 0;
}
