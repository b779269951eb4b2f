/* SPDX-License-Identifier: MIT */
/* mkseeds.c: writes the synthetic seed logs of the fuzz corpus into the
 * current directory: small logs (4 KiB chunks) that between them use every
 * record tag, header flag and kind of damage the reader knows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logbuild.h"

#define CHDR sizeof(struct mms_chunk_header)

static int failed;

static void emit(struct lb *b, const char *name, size_t len)
{
	if (lb_write(b, name, len)) {
		perror(name);
		failed = 1;
	}
	lb_destroy(b);
}

/* Metadata of thread 0: name, strings, a three-frame stack, a module. */
static void meta_records(struct lb *b)
{
	static const char argv[] = "prog\0--flag";

	lb_thread(b, 1, 0, 100);
	lb_string(b, 1, 1, "main");
	lb_event1(b, MMS_TAG_THREAD_NAME, 1, 0);
	lb_u(b, 1);
	lb_end(b);
	lb_string(b, 1, 2, "matmul");
	lb_string(b, 1, 3, "pool0");
	lb_string(b, 1, 4, "step start");
	lb_string(b, 1, 5, "owner@x");
	lb_meta(b, 1, "exe", "/usr/bin/prog");
	lb_begin(b, MMS_TAG_META, 1);
	lb_str(b, "argv");
	lb_raw(b, "\x0b", 1);
	lb_raw(b, argv, sizeof(argv) - 1);
	lb_meta(b, 1, "config", "call_stack=8");
	lb_event1(b, MMS_TAG_STACK, 1, 1);
	lb_u(b, 0);
	lb_u(b, 0x401000);
	lb_end(b);
	lb_event1(b, MMS_TAG_STACK, 1, 2);
	lb_u(b, 1);
	lb_u(b, 0x401100);
	lb_end(b);
	lb_event1(b, MMS_TAG_STACK, 1, 3);
	lb_u(b, 2);
	lb_u(b, 0x401200);
	lb_end(b);
	/* (version 5) A Python code object, and a stack whose innermost
	 * frame is its line 5, over the C stack 3; a frame of a code never
	 * defined. */
	lb_event1(b, MMS_TAG_PYCODE, 1, 1);
	lb_str(b, "prog.py");
	lb_str(b, "main");
	lb_u(b, 3);
	lb_end(b);
	lb_event1(b, MMS_TAG_STACK, 1, 4);
	lb_u(b, 3);
	lb_u(b, mms_pyframe(1, 5, 1));
	lb_end(b);
	lb_event1(b, MMS_TAG_STACK, 1, 5);
	lb_u(b, 4);
	lb_u(b, mms_pyframe(77, 9, 0));
	lb_end(b);
	/* (version 11) Python frames of their own, grafted on the C stack 3. */
	lb_event1(b, MMS_TAG_STACK, 1, 6);
	lb_u(b, 0);
	lb_u(b, mms_pyframe(1, 7, 1));
	lb_end(b);
	lb_event1(b, MMS_TAG_STACK, 1, 7);
	lb_u(b, 3);
	lb_u(b, MMS_PYGRAFT | 6);
	lb_end(b);
	lb_event1(b, MMS_TAG_MODULE, 1, 0x400000);
	lb_u(b, 0x401000);
	lb_u(b, 0x402000);
	lb_str(b, "/usr/bin/prog");
	lb_raw(b, "\x04\xde\xad\xbe\xef", 5);
	lb_event1(b, MMS_TAG_LOST, 1, 2);
}

/* Every event tag once, on thread 0, from stamp s. Returns the next stamp. */
static uint64_t all_events(struct lb *b, uint64_t s)
{
	int fn;

	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_INIT, s++);
	for (fn = MMS_ALLOC_MALLOC; fn <= MMS_ALLOC_PVALLOC; fn++)
		lb_alloc(b, s++, fn, 0x10000 + (uint64_t)fn * 0x100, 16u << fn, (uint64_t)(fn % 4));
	lb_free(b, s++, MMS_FREE_REALLOC, 0x10000);
	lb_free(b, s++, MMS_FREE_FREE, 0x10100);
	lb_free(b, s++, MMS_FREE_FREE, 0);       /* free(NULL) */
	lb_free(b, s++, MMS_FREE_FREE, 0xdead0); /* never allocated */
	lb_mmap(b, s++, 0x7f0000000000, 0x4000);
	lb_munmap(b, s++, 0x7f0000001000, 0x1000); /* splits the mapping */
	lb_event1(b, MMS_TAG_POOL_ALLOC, s++, 3);
	lb_addr(b, 0x20000);
	lb_u(b, 64);
	lb_u(b, 4096);
	lb_u(b, 64);
	lb_u(b, 2);
	lb_end(b);
	lb_event1(b, MMS_TAG_POOL_FREE, s++, 3);
	lb_addr(b, 0x20000);
	lb_u(b, 64);
	lb_u(b, 4096);
	lb_u(b, 0);
	lb_end(b);
	for (fn = MMS_ACCESS_UNKNOWN; fn <= MMS_ACCESS_WRITE; fn++) {
		lb_begin(b, (uint8_t)(MMS_TAG_ACCESS | fn), s++);
		lb_addr(b, 0x10200);
		lb_u(b, 8);
		lb_end(b);
	}
	lb_event1(b, MMS_TAG_RANGE_START, s++, 7);
	lb_u(b, 4);
	lb_end(b);
	lb_event1(b, MMS_TAG_OP_BEGIN, s++, 2);
	lb_event1(b, MMS_TAG_KERNEL, s++, 2);
	lb_event0(b, MMS_TAG_OP_END, s++);
	lb_event1(b, MMS_TAG_MARK, s++, 99); /* unknown string id */
	lb_event1(b, MMS_TAG_RANGE_END, s++, 7);
	lb_event1(b, MMS_TAG_OWNER_PUSH, s++, 5);
	lb_event0(b, MMS_TAG_OWNER_POP, s++);
	lb_begin(b, MMS_TAG_OWNER_TAG, s++);
	lb_addr(b, 0x10208);
	lb_u(b, 5);
	lb_end(b);
	lb_begin(b, MMS_TAG_WATCH, s++);
	lb_addr(b, 0x10300);
	lb_u(b, 32);
	lb_u(b, 2);
	lb_end(b);
	for (unsigned phase = MMS_WATCH_BEFORE; phase <= MMS_WATCH_AFTER; phase++) {
		lb_begin(b, (uint8_t)(MMS_TAG_WATCH | phase), s++);
		lb_addr(b, 0x10300);
		lb_u(b, 32);
		lb_u(b, 2);
		lb_u(b, 0);
		lb_u(b, 1);
		lb_u(b, 0x995dc9bbdf1939faull + phase);
		lb_end(b);
	}
	lb_event1(b, MMS_TAG_COLLECT, s++, 0);
	lb_event1(b, MMS_TAG_COLLECT, s++, 1);
	lb_event0(b, MMS_TAG_STEP, s++);
	/* (version 5) A free with the stack that freed, a Python one. */
	lb_begin(b, (uint8_t)(MMS_TAG_FREE_STACK | MMS_FREE_FREE), s++);
	lb_addr(b, 0x10300);
	lb_u(b, 5);
	lb_end(b);
	return s;
}

/* Every tag, two threads over three chunks (thread 0 continues in a second
 * segment), a finished process. */
static void all_tags(void)
{
	struct lb *b = lb_new(4096);
	uint64_t s;

	lb_chunk(b);
	lb_segment(b, 0, 1);
	meta_records(b);
	s = all_events(b, 10);
	lb_chunk(b);
	lb_segment(b, 1, 12);
	lb_thread(b, 12, 1, 101);
	lb_alloc(b, 13, MMS_ALLOC_MALLOC, 0x30000, 40, 7);
	lb_free(b, s + 5, MMS_FREE_FREE, 0x10200);
	lb_chunk(b);
	lb_segment(b, 0, s);
	lb_alloc(b, s + 1, MMS_ALLOC_MALLOC, 0x10000, 10, 2); /* reuses a freed address */
	lb_alloc(b, s + 2, MMS_ALLOC_MALLOC, 0x10000, 20, 0); /* and again: a double alloc */
	lb_event0(b, MMS_TAG_STEP, s + 3);
	lb_event1(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FORK, s + 4, 1);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, s + 10);
	lb_header(b)->call_stack_depth = 8;
	lb_header(b)->events_mask = MMS_EVENTS_ALLOC | MMS_EVENTS_FREE | MMS_EVENTS_LAUNCH | MMS_EVENTS_ACCESS;
	lb_header(b)->last_stamp = s + 10;
	emit(b, "all-tags.mms", SIZE_MAX);
}

/* A TSC log (stamps scale to ns), lost events in the header, still running,
 * with a reserved chunk never written and one more reserved than the file
 * holds. */
static void tsc_running(void)
{
	struct lb *b = lb_new(4096);

	lb_chunk(b);
	lb_segment(b, 0, 1000);
	lb_thread(b, 1000, 0, 7);
	lb_alloc(b, 1500, MMS_ALLOC_MALLOC, 0x1000, 100, 0);
	lb_alloc(b, 2600, MMS_ALLOC_CALLOC, 0x2000, 200, 0);
	lb_chunk(b);
	lb_set_used(b, 1, 0);
	((struct mms_chunk_header *)(b->data + MMS_HEADER_SIZE + 4096))->magic = 0;
	lb_chunk(b);
	lb_segment(b, 0, 3000);
	lb_free(b, 3100, MMS_FREE_FREE, 0x1000);
	lb_header(b)->clock = MMS_CLOCK_TSC;
	lb_header(b)->flags = 0;
	lb_header(b)->start_stamp = 1000;
	lb_header(b)->last_stamp = 4000;
	lb_header(b)->last_realtime_ns = 1000000000ull + 1000;
	lb_header(b)->lost_events = 5;
	lb_header(b)->nchunks = 4;
	emit(b, "tsc-running.mms", SIZE_MAX);
}

/* Eight threads, one chunk each, stamps interleaved: the iterator's merge. */
static void threads8(void)
{
	struct lb *b = lb_new(4096);
	uint32_t t;
	uint64_t i;

	for (t = 0; t < 8; t++) {
		lb_chunk(b);
		lb_segment(b, t, 1 + t);
		lb_thread(b, 1 + t, t, 1000 + t);
		for (i = 0; i < 8; i++) {
			lb_alloc(b, 10 + i * 16 + t, MMS_ALLOC_MALLOC, 0x100000 * (t + 1) + i * 64, 48, 0);
			lb_free(b, 10 + i * 16 + t + 8, MMS_FREE_FREE, 0x100000 * (t + 1) + i * 64);
		}
	}
	lb_header(b)->flags = MMS_FLAG_COMPLETE | MMS_FLAG_FORKED;
	emit(b, "threads8.mms", SIZE_MAX);
}

/* One 16 KiB chunk nearly full of a realloc chain and an mmap churn, and a
 * string of the longest length the format allows. */
static void busy(void)
{
	struct lb *b = lb_new(16384);
	char *big = malloc(MMS_MAX_STRING + 1);
	uint64_t s = 2, addr = 0x5000;
	int i;

	if (!big)
		abort();
	memset(big, 'x', MMS_MAX_STRING);
	big[MMS_MAX_STRING] = '\0';
	lb_chunk(b);
	lb_segment(b, 0, 1);
	lb_string(b, 1, 1, big);
	free(big);
	lb_alloc(b, s++, MMS_ALLOC_MALLOC, addr, 1, 0);
	for (i = 0; i < 600; i++) {
		lb_free(b, s, MMS_FREE_REALLOC, addr);
		addr += (uint64_t)(i % 3) * 0x40 - 0x20;
		lb_alloc(b, s++, MMS_ALLOC_REALLOC, addr, (uint64_t)i + 2, 0);
		if (i % 50 == 0) {
			lb_mmap(b, s++, 0x7f0000000000 + (uint64_t)i * 0x1000, 0x3000);
			lb_munmap(b, s++, 0x7f0000000000 + (uint64_t)i * 0x1000 + 0x1000, 0x800);
		}
	}
	emit(b, "busy.mms", SIZE_MAX);
}

/* A thread whose second segment is stamped before the end of its first:
 * the ordering rule broken. */
static void order(void)
{
	struct lb *b = lb_new(4096);

	lb_chunk(b);
	lb_segment(b, 0, 10);
	lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x1000, 8, 0);
	lb_alloc(b, 30, MMS_ALLOC_MALLOC, 0x2000, 8, 0);
	lb_chunk(b);
	lb_segment(b, 0, 25);
	lb_free(b, 26, MMS_FREE_FREE, 0x1000);
	emit(b, "order.mms", SIZE_MAX);
}

/* Stacks that are not a tree: a cycle, a missing parent, id 0 redefined. */
static void bad_stacks(void)
{
	struct lb *b = lb_new(4096);

	lb_chunk(b);
	lb_segment(b, 0, 1);
	lb_event1(b, MMS_TAG_STACK, 1, 1);
	lb_u(b, 2);
	lb_u(b, 0x1111);
	lb_end(b);
	lb_event1(b, MMS_TAG_STACK, 1, 2);
	lb_u(b, 1);
	lb_u(b, 0x2222);
	lb_end(b);
	lb_event1(b, MMS_TAG_STACK, 1, 3);
	lb_u(b, 77);
	lb_u(b, 0x3333);
	lb_end(b);
	lb_event1(b, MMS_TAG_STACK, 1, 0);
	lb_u(b, 1);
	lb_u(b, 0x4444);
	lb_end(b);
	lb_alloc(b, 2, MMS_ALLOC_MALLOC, 0x1000, 8, 1);
	lb_alloc(b, 3, MMS_ALLOC_MALLOC, 0x2000, 8, 3);
	emit(b, "bad-stacks.mms", SIZE_MAX);
}

/* Chunk-level damage: bad magic, records before any SEGMENT, `used` past
 * the chunk, and a last chunk the file cuts inside its records. */
static void damaged_chunks(void)
{
	struct lb *b = lb_new(4096);
	struct mms_chunk_header *ch;

	lb_chunk(b);
	lb_segment(b, 0, 1);
	lb_alloc(b, 2, MMS_ALLOC_MALLOC, 0x1000, 8, 0);
	ch = (void *)(b->data + MMS_HEADER_SIZE);
	ch->magic ^= 0x20;
	lb_chunk(b);
	lb_alloc(b, 3, MMS_ALLOC_MALLOC, 0x2000, 8, 0); /* no SEGMENT first */
	lb_chunk(b);
	lb_segment(b, 1, 4);
	lb_alloc(b, 5, MMS_ALLOC_MALLOC, 0x3000, 8, 0);
	lb_set_used(b, 2, 5000);
	lb_chunk(b);
	lb_segment(b, 2, 6);
	lb_alloc(b, 7, MMS_ALLOC_MALLOC, 0x4000, 8, 0);
	lb_alloc(b, 8, MMS_ALLOC_MALLOC, 0x5000, 8, 0);
	lb_header(b)->flags = MMS_FLAG_CUT;
	lb_header(b)->cut_errno = EFBIG;
	emit(b, "damaged-chunks.mms", (size_t)lb_offset(b) - 3);
}

/* Record-level damage: a field running past `used`, an unknown tag, a
 * stamp delta that wraps, a varint too long, a string too long. */
static void damaged_records(void)
{
	/* An address varint of 10 bytes whose last byte carries bits past 64. */
	static const uint8_t longvar[] = {
		MMS_TAG_ALLOC, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f
	};
	static const uint8_t longstr[] = { MMS_TAG_STRING, 1, 9, 0x81, 0x20, 'a' };
	static const uint8_t torn[] = { MMS_TAG_MMAP, 1, 2 };
	static const uint8_t wrap[] = { MMS_TAG_STEP, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	static const uint8_t unknown[] = { 0xbe, 0 };
	const struct {
		const uint8_t *b;
		size_t n;
	} bad[] = {
		{ longvar, sizeof(longvar) }, { longstr, sizeof(longstr) }, { torn, sizeof(torn) },
		{ wrap, sizeof(wrap) },       { unknown, sizeof(unknown) },
	};
	struct lb *b = lb_new(4096);
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		lb_chunk(b);
		lb_segment(b, (uint32_t)i, 10);
		lb_alloc(b, 11, MMS_ALLOC_MALLOC, 0x1000 * (i + 1), 8, 0);
		lb_raw(b, bad[i].b, bad[i].n);
	}
	emit(b, "damaged-records.mms", SIZE_MAX);
}

/* Header-only logs: no chunks, a process that exec'd away; and a header
 * whose nchunks promises more than the file has. */
static void header_only(void)
{
	struct lb *b = lb_new(4096);

	lb_header(b)->flags = MMS_FLAG_EXEC_AWAY | MMS_FLAG_EXECED;
	emit(b, "exec-away.mms", SIZE_MAX);
	b = lb_new(65536);
	lb_header(b)->nchunks = 1000;
	lb_header(b)->flags = MMS_FLAG_STACKS_FULL | MMS_FLAG_STRINGS_FULL | MMS_FLAG_CLOCK_BACKWARDS;
	emit(b, "no-chunks.mms", SIZE_MAX);
}

int main(void)
{
	all_tags();
	tsc_running();
	threads8();
	busy();
	order();
	bad_stacks();
	damaged_chunks();
	damaged_records();
	header_only();
	return failed;
}
