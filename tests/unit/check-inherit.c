/* SPDX-License-Identifier: MIT */
/* check-inherit.c: unit tests of a fork child's start (replay/core/inherit.c)
 * over synthetic parent and child logs built with logbuild: the blocks it
 * inherits, their stacks and origin, seeks and the index, a chain of
 * parents, and every way the parent's log can fail to say. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logbuild.h"
#include "scratch.h"
#include "msmemscope-replay.h"

#define CS 4096u
#define PARENT_PID 100
#define CHILD_PID 101

/* A log of pid with one thread, format version 3. */
static struct lb *new_log(uint64_t pid, int forked)
{
	struct lb *b = lb_new(CS);

	lb_header(b)->version = MMS_FORMAT_VERSION;
	lb_header(b)->pid = pid;
	if (forked)
		lb_header(b)->flags |= MMS_FLAG_FORKED;
	lb_chunk(b);
	lb_segment(b, 0, 1);
	lb_thread(b, 1, 0, pid);
	return b;
}

/* The parent (pid 100): blocks A (0x1000, 10 bytes, stack 7: ips 0xa1
 * then 0xa2), B (0x2000, 20, stack 9: a graft of Python frame 8 on stack
 * 7, format 11) and a mapping (0x10000, 8192), then FORK event 1 (stamp
 * 40; its id is 3), then it frees A itself. */
static void write_parent(const char *path, uint64_t pid)
{
	struct lb *b = new_log(pid, 0);
	uint8_t tag = MMS_TAG_STACK;

	lb_begin(b, tag, 2);
	lb_u(b, 6);
	lb_u(b, 0);
	lb_u(b, 0xa2);
	lb_end(b);
	lb_begin(b, tag, 2);
	lb_u(b, 7);
	lb_u(b, 6);
	lb_u(b, 0xa1);
	lb_end(b);
	lb_stack(b, 2, 8, 0, mms_pyframe(3, 33, 1));
	lb_stack(b, 2, 9, 7, MMS_PYGRAFT | 8);
	lb_alloc(b, 10, MMS_ALLOC_MALLOC, 0x1000, 10, 7);
	lb_alloc(b, 20, MMS_ALLOC_CALLOC, 0x2000, 20, 9);
	lb_mmap(b, 30, 0x10000, 8192);
	lb_event1(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FORK, 40, 1);
	lb_free(b, 50, MMS_FREE_FREE, 0x1000);
	ck_assert_int_eq(lb_write(b, path, SIZE_MAX), 0);
	lb_destroy(b);
}

/* A child (pid) naming parent_log (NULL: no META) and its FORK event;
 * it frees B, unmaps half of the mapping, allocates C (0x3000, 30 bytes)
 * and frees A. */
static void write_child(const char *path, uint64_t pid, const char *parent_log, uint64_t ppid, const char *number,
			const char *stamp)
{
	struct lb *b = new_log(pid, 1);

	if (parent_log) {
		lb_meta(b, 1, MMS_META_PARENT_LOG, parent_log);
		lb_meta(b, 1, MMS_META_PARENT_PID, ppid == PARENT_PID ? "100" : "101");
		lb_meta(b, 1, MMS_META_FORK_NUMBER, number);
		lb_meta(b, 1, MMS_META_FORK_STAMP, stamp);
	}
	lb_free(b, 100, MMS_FREE_FREE, 0x2000);
	lb_munmap(b, 110, 0x11000, 4096);
	lb_alloc(b, 120, MMS_ALLOC_MALLOC, 0x3000, 30, 0);
	lb_free(b, 130, MMS_FREE_FREE, 0x1000);
	ck_assert_int_eq(lb_write(b, path, SIZE_MAX), 0);
	lb_destroy(b);
}

static char *abs_path(const char *name)
{
	static char buf[2][PATH_MAX + 64];
	static int k;

	k ^= 1;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", scratch_dir(), name);
	return buf[k];
}

static mms_log_t *open_log(const char *path)
{
	mms_log_t *log = NULL;
	int rc = mms_log_open(path, &log);

	ck_assert_msg(rc == 0, "open %s: %s", path, mms_strerror(rc));
	return log;
}

START_TEST(test_inherit_blocks)
{
	mms_log_fork_t fk;
	mms_summary_t s;
	mms_replay_t *r;
	mms_block_t blk;
	mms_log_t *log;
	uint64_t ips[4];

	write_parent("p.mms", PARENT_PID);
	write_child("c.mms", CHILD_PID, abs_path("p.mms"), PARENT_PID, "1", "40");
	log = open_log("c.mms");
	ck_assert_int_eq(mms_log_fork(log, &fk), 0);
	ck_assert_int_eq(fk.state, MMS_FORK_INHERITED);
	ck_assert_uint_eq(fk.parent_pid, PARENT_PID);
	ck_assert_str_eq(fk.parent_log, abs_path("p.mms"));
	ck_assert_uint_eq(fk.fork_event, 3);
	ck_assert_uint_eq(fk.blocks[MMS_MEM_HOST], 2);
	ck_assert_uint_eq(fk.bytes[MMS_MEM_HOST], 30);
	ck_assert_uint_eq(fk.blocks[MMS_MEM_MMAP], 1);
	ck_assert_uint_eq(fk.bytes[MMS_MEM_MMAP], 8192);
	ck_assert_ptr_null(fk.why);

	/* The parent's free of A after the fork is not the child's: the
	 * child frees A and B, both matched. */
	ck_assert_int_eq(mms_summarize(log, &s), 0);
	ck_assert_uint_eq(s.unmatched_frees, 0);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].allocs, 1);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].frees, 2);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_blocks, 1);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_bytes, 30);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].peak_bytes, 40);
	ck_assert_uint_eq(s.mem[MMS_MEM_MMAP].live_bytes, 4096);
	ck_assert_uint_eq(s.inherited_live_blocks[MMS_MEM_HOST], 0);
	ck_assert_uint_eq(s.inherited_live_blocks[MMS_MEM_MMAP], 1);
	ck_assert_uint_eq(s.inherited_live_bytes[MMS_MEM_MMAP], 4096);

	/* At position 0: A keeps its parent's stack (copied into the
	 * child's table) and says where it was allocated; the child's own
	 * block C is allocation 4, after the three inherited. */
	ck_assert_int_eq(mms_replay_open(log, &r), 0);
	ck_assert_int_eq(mms_replay_block_at(r, 0x1000, &blk), 1);
	ck_assert_int_eq(blk.inherited, 1);
	ck_assert_uint_eq(blk.alloc_id, 1);
	ck_assert_uint_eq(blk.alloc_event, 0);
	ck_assert_uint_eq(blk.origin_pid, PARENT_PID);
	ck_assert_uint_eq(blk.origin_event, 0);
	ck_assert_uint_eq(blk.fn, MMS_ALLOC_MALLOC);
	ck_assert_int_eq(mms_log_stack(log, blk.stack, ips, 4), 2);
	ck_assert_uint_eq(ips[0], 0xa1);
	ck_assert_uint_eq(ips[1], 0xa2);
	ck_assert_int_eq(mms_replay_block_at(r, 0x2000, &blk), 1);
	ck_assert_uint_eq(blk.origin_event, 1);
	/* B's graft: its Python frame copied too, under a child's id. */
	ck_assert_int_eq(mms_log_stack(log, blk.stack, ips, 4), 3);
	ck_assert_uint_eq(ips[0], mms_pyframe(3, 33, 1));
	ck_assert_uint_eq(ips[1], 0xa1);
	ck_assert_uint_eq(ips[2], 0xa2);
	ck_assert_int_eq(mms_replay_seek(r, 4), 0);
	ck_assert_int_eq(mms_replay_block_at(r, 0x3000, &blk), 1);
	ck_assert_int_eq(blk.inherited, 0);
	ck_assert_uint_eq(blk.alloc_id, 4);
	ck_assert_uint_eq(blk.alloc_event, 2);
	/* Back to the start: the inherited heap again. */
	ck_assert_int_eq(mms_replay_seek(r, 0), 0);
	ck_assert_int_eq(mms_replay_block_at(r, 0x2000, &blk), 1);
	mms_replay_close(r);
	{
		/* Peeking reads the child alone: the same events, no strings
		 * kept, the executable copied; even with its parent's log gone. */
		mms_log_info_t full, peek;
		char exe[8];

		mms_log_get_info(log, &full);
		ck_assert_int_eq(rename("p.mms", "gone.mms"), 0);
		ck_assert_int_eq(mms_log_peek("c.mms", &peek, exe, sizeof exe), 0);
		ck_assert_uint_eq(peek.events, full.events);
		ck_assert_uint_eq(peek.pid, CHILD_PID);
		ck_assert_int_eq(peek.complete, full.complete);
		ck_assert_ptr_null(peek.exe);
		ck_assert_int_eq(strncmp(exe, full.exe, sizeof exe - 1), 0);
		ck_assert_uint_eq(strlen(exe), strlen(full.exe) < sizeof exe ? strlen(full.exe) : sizeof exe - 1);
		ck_assert_int_eq(mms_log_peek("nothing.mms", &peek, NULL, 0), -ENOENT);
		ck_assert_int_eq(mms_log_peek(NULL, &peek, NULL, 0), MMS_EUSAGE);
	}
	mms_log_close(log);
}
END_TEST

/* A grandchild's blocks keep their first origin; an index of the child
 * built with checkpoints at every event holds its inherited blocks. */
START_TEST(test_inherit_chain)
{
	mms_replay_options_t ro = { .checkpoint_every = 1 };
	mms_log_fork_t fk;
	mms_replay_t *r;
	mms_block_t blk;
	mms_log_t *log;
	mms_summary_t s;
	struct lb *b;

	write_parent("p.mms", PARENT_PID);
	/* The child, with a FORK event of its own before its last free. */
	b = new_log(CHILD_PID, 1);
	lb_meta(b, 1, MMS_META_PARENT_LOG, abs_path("p.mms"));
	lb_meta(b, 1, MMS_META_PARENT_PID, "100");
	lb_meta(b, 1, MMS_META_FORK_NUMBER, "1");
	lb_meta(b, 1, MMS_META_FORK_STAMP, "40");
	lb_free(b, 100, MMS_FREE_FREE, 0x2000);
	lb_alloc(b, 120, MMS_ALLOC_MALLOC, 0x3000, 30, 0);
	lb_event1(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FORK, 125, 1);
	lb_free(b, 130, MMS_FREE_FREE, 0x1000);
	ck_assert_int_eq(lb_write(b, "c.mms", SIZE_MAX), 0);
	lb_destroy(b);
	/* The grandchild frees A (the grandparent's) and C (the child's). */
	b = new_log(102, 1);
	lb_meta(b, 1, MMS_META_PARENT_LOG, abs_path("c.mms"));
	lb_meta(b, 1, MMS_META_PARENT_PID, "101");
	lb_meta(b, 1, MMS_META_FORK_NUMBER, "1");
	lb_meta(b, 1, MMS_META_FORK_STAMP, "125");
	lb_free(b, 200, MMS_FREE_FREE, 0x1000);
	lb_free(b, 210, MMS_FREE_FREE, 0x3000);
	ck_assert_int_eq(lb_write(b, "g.mms", SIZE_MAX), 0);
	lb_destroy(b);

	log = open_log("g.mms");
	ck_assert_int_eq(mms_log_fork(log, &fk), 0);
	ck_assert_int_eq(fk.state, MMS_FORK_INHERITED);
	ck_assert_uint_eq(fk.fork_event, 2);
	ck_assert_uint_eq(fk.blocks[MMS_MEM_HOST], 2);
	ck_assert_uint_eq(fk.bytes[MMS_MEM_HOST], 40);
	ck_assert_int_eq(mms_summarize(log, &s), 0);
	ck_assert_uint_eq(s.unmatched_frees, 0);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_blocks, 0);
	ck_assert_uint_eq(s.mem[MMS_MEM_MMAP].live_bytes, 8192);
	ck_assert_int_eq(mms_replay_open_ex(log, &ro, &r), 0);
	ck_assert_int_eq(mms_replay_block_at(r, 0x1000, &blk), 1);
	ck_assert_uint_eq(blk.origin_pid, PARENT_PID);
	ck_assert_uint_eq(blk.origin_event, 0);
	ck_assert_int_eq(mms_replay_block_at(r, 0x3000, &blk), 1);
	ck_assert_uint_eq(blk.origin_pid, CHILD_PID);
	ck_assert_uint_eq(blk.origin_event, 1);
	/* From the checkpoint after event 0, then back before it. */
	ck_assert_int_eq(mms_replay_seek(r, 2), 0);
	ck_assert_int_eq(mms_replay_block_at(r, 0x1000, &blk), 0);
	ck_assert_int_eq(mms_replay_block_at(r, 0x10000, &blk), 1);
	ck_assert_int_eq(mms_replay_seek(r, 1), 0);
	ck_assert_int_eq(mms_replay_block_at(r, 0x3000, &blk), 1);
	ck_assert_int_eq(blk.inherited, 1);
	mms_replay_close(r);
	mms_log_close(log);
}
END_TEST

/* Opens c.mms and checks that its inherited blocks are unknown for why
 * and that its frees of them count as unmatched. */
static void expect_unknown(const char *why, uint64_t unmatched)
{
	mms_log_t *log = open_log("c.mms");
	mms_log_fork_t fk;
	mms_summary_t s;

	ck_assert_int_eq(mms_log_fork(log, &fk), 0);
	ck_assert_int_eq(fk.state, MMS_FORK_UNKNOWN);
	ck_assert_str_eq(fk.why, why);
	ck_assert_uint_eq(fk.blocks[MMS_MEM_HOST], 0);
	ck_assert_int_eq(mms_summarize(log, &s), 0);
	ck_assert_uint_eq(s.unmatched_frees, unmatched);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_blocks, 1);
	mms_log_close(log);
}

START_TEST(test_inherit_unknown)
{
	char why[PATH_MAX + 200];
	struct lb *b;

	/* No parent log there, nor beside the child. */
	write_child("c.mms", CHILD_PID, "/nonexistent/p.mms", PARENT_PID, "1", "40");
	expect_unknown("parent log /nonexistent/p.mms not found", 2);
	/* Moved beside the child: found by its name. */
	write_parent("p.mms", PARENT_PID);
	{
		mms_log_t *log = open_log("c.mms");
		mms_log_fork_t fk;

		ck_assert_int_eq(mms_log_fork(log, &fk), 0);
		ck_assert_int_eq(fk.state, MMS_FORK_INHERITED);
		mms_log_close(log);
	}
	/* Another process's log in its place. */
	write_child("c.mms", CHILD_PID, abs_path("p.mms"), PARENT_PID, "1", "40");
	write_parent("p.mms", 999);
	snprintf(why, sizeof(why), "parent log %s is pid 999's, not pid 100's (replaced since?)", abs_path("p.mms"));
	expect_unknown(why, 2);
	/* A fork the parent's log does not hold (cut before it). */
	write_parent("p.mms", PARENT_PID);
	write_child("c.mms", CHILD_PID, abs_path("p.mms"), PARENT_PID, "2", "40");
	snprintf(why, sizeof(why), "parent log %s holds no fork event 2 (it was cut or damaged before it)",
		 abs_path("p.mms"));
	expect_unknown(why, 2);
	/* Its fork 1 at another stamp: not this child's. */
	write_child("c.mms", CHILD_PID, abs_path("p.mms"), PARENT_PID, "1", "41");
	snprintf(why, sizeof(why),
		 "parent log %s holds another fork event 1 than the one this process came from (replaced since?)",
		 abs_path("p.mms"));
	expect_unknown(why, 2);
	/* The parent's recording had stopped: no fork event named. */
	b = new_log(CHILD_PID, 1);
	lb_meta(b, 1, MMS_META_PARENT_LOG, abs_path("p.mms"));
	lb_free(b, 100, MMS_FREE_FREE, 0x2000);
	lb_alloc(b, 120, MMS_ALLOC_MALLOC, 0x3000, 30, 0);
	ck_assert_int_eq(lb_write(b, "c.mms", SIZE_MAX), 0);
	lb_destroy(b);
	snprintf(why, sizeof(why), "the parent wrote no fork event into its log %s (its recording had stopped)",
		 abs_path("p.mms"));
	expect_unknown(why, 1);
	/* A FORKED log of format version 2 names no parent. */
	write_child("c.mms", CHILD_PID, NULL, 0, NULL, NULL);
	b = NULL;
	{
		FILE *f = fopen("c.mms", "r+b");
		uint32_t v = 2;

		ck_assert_ptr_nonnull(f);
		ck_assert_int_eq(fseek(f, 8, SEEK_SET), 0);
		ck_assert_uint_eq(fwrite(&v, sizeof(v), 1, f), 1);
		fclose(f);
	}
	expect_unknown("the log does not name its parent's log (its recorder predates format version 3)", 2);
}
END_TEST

/* Replays c.mms to its end with an index built now, and checks its
 * unmatched frees there. */
static void expect_built_replay(uint64_t unmatched)
{
	mms_log_t *log = open_log("c.mms");
	mms_replay_t *r;
	mms_where_t w;

	ck_assert_int_eq(mms_replay_open(log, &r), 0);
	ck_assert_int_eq(mms_replay_index_state(r, NULL), MMS_INDEX_BUILT);
	ck_assert_int_eq(mms_replay_seek(r, 4), 0);
	mms_replay_where(r, &w);
	ck_assert_uint_eq(w.unmatched_frees, unmatched);
	mms_replay_close(r);
	mms_log_close(log);
}

/* The child's index is rebuilt when what it inherits changes. */
START_TEST(test_inherit_index)
{
	write_parent("p.mms", PARENT_PID);
	write_child("c.mms", CHILD_PID, abs_path("p.mms"), PARENT_PID, "1", "40");
	expect_built_replay(0);
	/* The parent's log gone: not the index built with it. */
	ck_assert_int_eq(unlink("p.mms"), 0);
	expect_built_replay(2);
}
END_TEST

static Suite *inherit_suite(void)
{
	Suite *s = suite_create("inherit");
	TCase *tc = tcase_create("fork children");

	scratch_add(tc);
	tcase_add_test(tc, test_inherit_blocks);
	tcase_add_test(tc, test_inherit_chain);
	tcase_add_test(tc, test_inherit_unknown);
	tcase_add_test(tc, test_inherit_index);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(inherit_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
