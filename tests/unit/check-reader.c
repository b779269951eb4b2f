/* SPDX-License-Identifier: MIT */
/* check-reader.c: unit tests of the log reader, iterator and summary over
 * synthetic logs built with logbuild, each test in its own directory. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "logbuild.h"
#include "scratch.h"
#include "msmemscope-replay.h"

#define LOG "t.mms"
#define CS 4096u

static void expect_open_error(struct lb *b, size_t len, int code);

static mms_log_t *write_open(const struct lb *b, size_t len)
{
	mms_log_t *log = NULL;
	int rc;

	ck_assert_int_eq(lb_write(b, LOG, len), 0);
	rc = mms_log_open(LOG, &log);
	ck_assert_msg(rc == 0, "open: %s", mms_strerror(rc));
	return log;
}

/* Opens the first len bytes of b's log, checks it reports damage code at
 * offset, and that the summary still has the malloc figures before it. */
static void expect_damage(struct lb *b, size_t len, int code, uint64_t offset, const char *what, uint64_t allocs,
			  uint64_t live_bytes)
{
	mms_log_t *log = write_open(b, len);
	mms_log_info_t info;
	mms_summary_t s;

	mms_log_get_info(log, &info);
	ck_assert_int_eq(info.damaged, 1);
	ck_assert_int_eq(info.damage_error, code);
	if (offset != UINT64_MAX)
		ck_assert_uint_eq(info.damage_offset, offset);
	if (what)
		ck_assert_str_eq(info.damage, what);
	ck_assert_uint_eq(info.damage_count, 1);
	ck_assert_int_eq(mms_summarize(log, &s), 0);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].allocs, allocs);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_bytes, live_bytes);
	mms_log_close(log);
}

static void summarize(struct lb *b, mms_summary_t *s, mms_log_info_t *info)
{
	mms_log_t *log = write_open(b, SIZE_MAX);

	ck_assert_int_eq(mms_summarize(log, s), 0);
	if (info)
		mms_log_get_info(log, info);
	mms_log_close(log);
}

/* A one-thread log with its SEGMENT, THREAD and SYSTEM init written. */
static struct lb *one_thread(void)
{
	struct lb *b = lb_new(CS);

	lb_chunk(b);
	lb_segment(b, 0, 10);
	lb_thread(b, 10, 0, 1000);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_INIT, 11);
	return b;
}

START_TEST(test_order_merge)
{
	struct lb *b = lb_new(CS);
	static const struct {
		uint64_t stamp;
		uint32_t thread;
	} want[] = { { 5, 0 }, { 6, 1 }, { 7, 0 }, { 7, 1 }, { 8, 1 }, { 9, 0 }, { 20, 0 }, { 21, 1 }, { 30, 0 } };
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;
	mms_log_info_t info;
	size_t n = 0;
	uint32_t c0, c1, c2;

	/* Thread 1's chunk comes first in the file, thread 0 writes two
	 * chunks; equal stamps order by thread. */
	c1 = lb_chunk(b);
	c0 = lb_chunk(b);
	c2 = lb_chunk(b);
	lb_use(b, c1);
	lb_segment(b, 1, 6);
	lb_alloc(b, 6, 0, 0x2000, 16, 0);
	lb_alloc(b, 7, 0, 0x2100, 16, 0);
	lb_alloc(b, 8, 0, 0x2200, 16, 0);
	lb_free(b, 21, 0, 0x2000);
	lb_use(b, c0);
	lb_segment(b, 0, 5);
	lb_alloc(b, 5, 0, 0x1000, 8, 0);
	lb_alloc(b, 7, 0, 0x1100, 8, 0);
	lb_alloc(b, 9, 0, 0x1200, 8, 0);
	lb_use(b, c2);
	/* A segment begins at its thread's last stamp, as the writer's. */
	lb_segment(b, 0, 9);
	lb_free(b, 20, 0, 0x1000);
	lb_free(b, 30, 0, 0x1100);
	log = write_open(b, SIZE_MAX);
	mms_log_get_info(log, &info);
	ck_assert_int_eq(info.damaged, 0);
	ck_assert_uint_eq(info.events, 9);
	ck_assert_uint_eq(info.threads, 2);
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	while (mms_iter_next(it, &ev) == 1) {
		ck_assert_uint_lt(n, 9);
		ck_assert_uint_eq(ev.id, n);
		ck_assert_uint_eq(ev.stamp, want[n].stamp);
		ck_assert_uint_eq(ev.thread, want[n].thread);
		n++;
	}
	ck_assert_uint_eq(n, 9);
	ck_assert_int_eq(mms_iter_next(it, &ev), 0);
	mms_iter_close(it);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* A thread that waits (one event at the start, one at the end) while
 * another allocates: a replay takes the busy thread's events in runs up
 * to the waiting thread's next one (the same stamp goes to the lower
 * thread first), in the order the iterator gives one at a time, and a
 * seek to any event finds the state a forward replay had there. */
START_TEST(test_order_span)
{
	struct lb *b = lb_new(CS);
	uint64_t stamps[64], live[64];
	uint32_t threads[64];
	mms_replay_options_t opt = { .forward_only = 1 };
	mms_replay_t *r;
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;
	mms_where_t w;
	size_t n = 0, k, i;
	uint32_t c0, c1;

	c1 = lb_chunk(b);
	c0 = lb_chunk(b);
	/* Thread 0 waits, thread 1 works. */
	lb_use(b, c0);
	lb_segment(b, 0, 6);
	lb_alloc(b, 6, 0, 0x9000, 1000, 0);
	lb_alloc(b, 30, 0, 0x9100, 500, 0); /* amid thread 1's, at a stamp it has too */
	lb_free(b, 90, 0, 0x9000);
	lb_use(b, c1);
	lb_segment(b, 1, 5);
	for (i = 0; i < 20; i++) {
		lb_alloc(b, 10 + 2 * i, 0, 0x1000 + 0x100 * i, 8 + i, 0);
		lb_free(b, 11 + 2 * i, 0, 0x1000 + 0x100 * i);
	}
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	while (mms_iter_next(it, &ev) == 1) {
		ck_assert_uint_lt(n, 64);
		/* (stamp, thread) never goes back */
		if (n)
			ck_assert(ev.stamp > stamps[n - 1] ||
				  (ev.stamp == stamps[n - 1] && ev.thread > threads[n - 1]));
		stamps[n] = ev.stamp;
		threads[n++] = ev.thread;
	}
	mms_iter_close(it);
	ck_assert_uint_eq(n, 43);
	/* Thread 0's event at 30 comes before thread 1's (an allocation). */
	ck_assert_uint_eq(stamps[21], 30);
	ck_assert_uint_eq(stamps[22], 30);
	ck_assert_uint_eq(threads[21], 0);
	ck_assert_uint_eq(threads[22], 1);
	ck_assert_int_eq(mms_replay_open_ex(log, &opt, &r), 0);
	for (k = 0; mms_replay_next(r, &ev) == 1; k++) {
		ck_assert_uint_lt(k, n);
		ck_assert_uint_eq(ev.id, k);
		ck_assert_uint_eq(ev.stamp, stamps[k]);
		ck_assert_uint_eq(ev.thread, threads[k]);
		mms_replay_where(r, &w);
		live[k] = w.live_bytes;
	}
	ck_assert_uint_eq(k, n);
	mms_replay_close(r);
	ck_assert_int_eq(mms_replay_open(log, &r), 0);
	for (k = n; k-- > 0;) {
		ck_assert_int_eq(mms_replay_seek(r, k + 1), 0);
		mms_replay_where(r, &w);
		ck_assert_uint_eq(w.live_bytes, live[k]);
	}
	mms_replay_close(r);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

START_TEST(test_realloc_counting)
{
	struct lb *b = one_thread();
	mms_summary_t s;

	lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x1000, 100, 0);
	/* realloc(0x1000, 200) moved to 0x2000: FREE then ALLOC. */
	lb_free(b, 21, MMS_FREE_REALLOC, 0x1000);
	lb_alloc(b, 22, MMS_ALLOC_REALLOC, 0x2000, 200, 0);
	lb_alloc(b, 23, MMS_ALLOC_CALLOC, 0x3000, 50, 0);
	lb_free(b, 24, MMS_FREE_FREE, 0x2000);
	lb_free(b, 25, MMS_FREE_FREE, 0); /* free(NULL): not counted */
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 26);
	summarize(b, &s, NULL);
	ck_assert_uint_eq(s.events, 8);
	ck_assert_uint_eq(s.by_kind[MMS_EV_MALLOC], 3);
	ck_assert_uint_eq(s.by_kind[MMS_EV_FREE], 3);
	ck_assert_uint_eq(s.by_kind[MMS_EV_SYSTEM], 2);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].allocs, 3);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].frees, 2);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].bytes_allocated, 350);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].peak_bytes, 250);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_blocks, 1);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_bytes, 50);
	ck_assert_uint_eq(s.unmatched_frees, 0);
	ck_assert_uint_eq(s.double_allocs, 0);
	ck_assert_uint_eq(s.threads, 1);
	lb_destroy(b);
}
END_TEST

START_TEST(test_unmatched_and_double)
{
	struct lb *b = one_thread();
	mms_summary_t s;

	lb_free(b, 20, 0, 0xdead0);
	lb_alloc(b, 21, 0, 0x1000, 10, 0);
	lb_alloc(b, 22, 0, 0x1000, 30, 0);
	lb_free(b, 23, 0, 0x1000);
	lb_free(b, 24, 0, 0x1000);
	summarize(b, &s, NULL);
	ck_assert_uint_eq(s.unmatched_frees, 2);
	ck_assert_uint_eq(s.double_allocs, 1);
	/* Event 1 frees an address that was never a block; event 5 frees
	 * again the block event 4 freed (allocated by event 3). */
	ck_assert_uint_eq(s.invalid_frees, 1);
	ck_assert_uint_eq(s.double_frees, 1);
	ck_assert_uint_eq(s.nbad_frees, 2);
	ck_assert_uint_eq(s.bad_frees[0].event, 1);
	ck_assert_uint_eq(s.bad_frees[0].addr, 0xdead0);
	ck_assert_uint_eq(s.bad_frees[0].freed_event, UINT64_MAX);
	ck_assert_uint_eq(s.bad_frees[1].event, 5);
	ck_assert_uint_eq(s.bad_frees[1].addr, 0x1000);
	ck_assert_uint_eq(s.bad_frees[1].freed_event, 4);
	ck_assert_uint_eq(s.bad_frees[1].alloc_event, 3);
	ck_assert_uint_eq(s.bad_frees[1].size, 30);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].allocs, 2);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].frees, 3);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].peak_bytes, 30);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_bytes, 0);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_blocks, 0);
	lb_destroy(b);
}
END_TEST

/* The C++ operators (format 16): blocks of new and new[] read back with
 * their functions (ALLOC_CXX tags), and each release by another family's
 * function is a mismatched free, told in the summary, the leaks report
 * and a seek's figures; the block is freed all the same, and a release by
 * its own family (delete of new, delete[] of new[], free of malloc, a
 * realloc of calloc) is none. */
START_TEST(test_mismatched_frees)
{
	mms_replay_options_t ro = { .no_index_file = 1, .checkpoint_every = 4 };
	struct lb *b = one_thread();
	mms_summary_t s;
	mms_where_t w;
	mms_leaks_t *l;
	mms_replay_t *r;
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;

	lb_alloc(b, 20, MMS_ALLOC_NEW_ARRAY, 0x1000, 40, 0); /* event 1 */
	lb_free(b, 21, MMS_FREE_DELETE, 0x1000);             /* 2: delete of new[] */
	lb_alloc(b, 22, MMS_ALLOC_NEW, 0x2000, 8, 0);        /* 3 */
	lb_free(b, 23, MMS_FREE_FREE, 0x2000);               /* 4: free of new */
	lb_alloc(b, 24, MMS_ALLOC_MALLOC, 0x3000, 24, 0);    /* 5 */
	lb_free(b, 25, MMS_FREE_DELETE_ARRAY, 0x3000);       /* 6: delete[] of malloc */
	lb_alloc(b, 26, MMS_ALLOC_NEW, 0x4000, 16, 0);       /* 7 */
	lb_free(b, 27, MMS_FREE_DELETE, 0x4000);             /* 8: fine */
	lb_alloc(b, 28, MMS_ALLOC_NEW_ARRAY, 0x5000, 16, 0); /* 9 */
	lb_free(b, 29, MMS_FREE_DELETE_ARRAY, 0x5000);       /* 10: fine */
	lb_alloc(b, 30, MMS_ALLOC_CALLOC, 0x6000, 16, 0);    /* 11 */
	lb_free(b, 31, MMS_FREE_REALLOC, 0x6000);            /* 12: fine */
	lb_alloc(b, 32, MMS_ALLOC_REALLOC, 0x6000, 32, 0);   /* 13 */
	lb_free(b, 33, MMS_FREE_DELETE, 0x7000);             /* 14: no block: invalid */
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 34);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_uint_eq(ev.kind, MMS_EV_MALLOC);
	ck_assert_uint_eq(ev.sub, MMS_FN_NEW_ARRAY);
	ck_assert_str_eq(mms_alloc_func_name(ev.sub), "new[]");
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_uint_eq(ev.kind, MMS_EV_FREE);
	ck_assert_str_eq(mms_free_func_name(ev.sub), "delete");
	mms_iter_close(it);
	ck_assert_int_eq(mms_summarize(log, &s), 0);
	ck_assert_uint_eq(s.mismatched_frees, 3);
	ck_assert_uint_eq(s.unmatched_frees, 1);
	ck_assert_uint_eq(s.invalid_frees, 1);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_blocks, 1);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].frees, 7);
	ck_assert_uint_eq(s.nbad_frees, 4);
	ck_assert_uint_eq(s.bad_frees[0].event, 2);
	ck_assert_uint_eq(s.bad_frees[0].kind, MMS_BAD_FREE_MISMATCHED);
	ck_assert_uint_eq(s.bad_frees[0].alloc_fn, MMS_FN_NEW_ARRAY);
	ck_assert_uint_eq(s.bad_frees[0].free_fn, MMS_FN_DELETE);
	ck_assert_uint_eq(s.bad_frees[0].alloc_event, 1);
	ck_assert_uint_eq(s.bad_frees[0].size, 40);
	ck_assert_uint_eq(s.bad_frees[1].event, 4);
	ck_assert_uint_eq(s.bad_frees[1].alloc_fn, MMS_FN_NEW);
	ck_assert_uint_eq(s.bad_frees[1].free_fn, MMS_FN_FREE);
	ck_assert_uint_eq(s.bad_frees[2].event, 6);
	ck_assert_uint_eq(s.bad_frees[2].alloc_fn, MMS_FN_MALLOC);
	ck_assert_uint_eq(s.bad_frees[2].free_fn, MMS_FN_DELETE_ARRAY);
	ck_assert_uint_eq(s.bad_frees[3].event, 14);
	ck_assert_uint_eq(s.bad_frees[3].kind, MMS_BAD_FREE_INVALID);
	ck_assert_int_eq(mms_leaks_run(log, NULL, &l), 0);
	ck_assert_uint_eq(l->mismatched_frees, 3);
	ck_assert_uint_eq(l->nbad_frees, 4);
	ck_assert_uint_eq(l->bad_frees[2].kind, MMS_BAD_FREE_MISMATCHED);
	mms_leaks_free(l);
	/* Through checkpoints (every 4 events) and back. */
	ck_assert_int_eq(mms_replay_open_ex(log, &ro, &r), 0);
	ck_assert_int_eq(mms_replay_seek(r, 16), 0);
	mms_replay_where(r, &w);
	ck_assert_uint_eq(w.mismatched_frees, 3);
	ck_assert_int_eq(mms_replay_seek(r, 5), 0);
	mms_replay_where(r, &w);
	ck_assert_uint_eq(w.mismatched_frees, 2);
	ck_assert_int_eq(mms_replay_seek(r, 16), 0);
	mms_replay_where(r, &w);
	ck_assert_uint_eq(w.mismatched_frees, 3);
	mms_replay_close(r);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* The reader remembers the last MMS__RECENT_FREES frees: a free of a
 * block freed longer ago than that is told as what is known, a free of no
 * live block. A realloc in place (free + alloc of one address) is no
 * double free, and neither is a free of an address handed out again. The
 * figures are the same through checkpoints and seeks. */
START_TEST(test_recent_frees)
{
	mms_replay_options_t ro = { .no_index_file = 1, .checkpoint_every = 16 };
	struct lb *b = lb_new(1u << 20);
	mms_replay_t *r;
	mms_summary_t s;
	mms_where_t w;
	mms_leaks_t *l;
	mms_log_t *log;
	uint64_t i, stamp = 10;

	lb_chunk(b);
	lb_segment(b, 0, 0);
	lb_alloc(b, stamp++, 0, 0x10, 8, 0);            /* event 0 */
	lb_free(b, stamp++, 0, 0x10);                   /* 1 */
	for (i = 0; i < 5000; i++) {                    /* 2 .. 10001 */
		lb_alloc(b, stamp++, 0, 0x100000 + 16 * i, 8, 0);
		lb_free(b, stamp++, 0, 0x100000 + 16 * i);
	}
	lb_free(b, stamp++, 0, 0x10);                   /* 10002: forgotten */
	lb_free(b, stamp++, 0, 0x100000 + 16 * 4999);   /* 10003: double, freed by 10001 */
	lb_alloc(b, stamp++, 0, 0x20, 8, 0);            /* 10004 */
	lb_free(b, stamp++, MMS_FREE_REALLOC, 0x20);    /* 10005: realloc in place */
	lb_alloc(b, stamp++, MMS_ALLOC_REALLOC, 0x20, 16, 0); /* 10006 */
	lb_free(b, stamp++, 0, 0x20);                   /* 10007 */
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, stamp++);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_summarize(log, &s), 0);
	ck_assert_uint_eq(s.invalid_frees, 1);
	ck_assert_uint_eq(s.double_frees, 1);
	ck_assert_uint_eq(s.nbad_frees, 2);
	ck_assert_uint_eq(s.bad_frees[0].event, 10002);
	ck_assert_uint_eq(s.bad_frees[0].freed_event, UINT64_MAX);
	ck_assert_uint_eq(s.bad_frees[1].event, 10003);
	ck_assert_uint_eq(s.bad_frees[1].freed_event, 10001);
	ck_assert_uint_eq(s.bad_frees[1].alloc_event, 10000);
	ck_assert_int_eq(mms_leaks_run(log, NULL, &l), 0);
	ck_assert_uint_eq(l->double_frees, 1);
	ck_assert_uint_eq(l->invalid_frees, 1);
	ck_assert_uint_eq(l->nbad_frees, 2);
	ck_assert_uint_eq(l->bad_frees[1].freed_event, 10001);
	mms_leaks_free(l);
	ck_assert_int_eq(mms_replay_open_ex(log, &ro, &r), 0);
	ck_assert_int_eq(mms_replay_seek(r, 10004), 0);
	mms_replay_where(r, &w);
	ck_assert_uint_eq(w.double_frees, 1);
	ck_assert_uint_eq(w.invalid_frees, 1);
	ck_assert_int_eq(mms_replay_seek(r, 10003), 0);
	mms_replay_where(r, &w);
	ck_assert_uint_eq(w.double_frees, 0);
	ck_assert_uint_eq(w.invalid_frees, 1);
	mms_replay_close(r);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

START_TEST(test_cut_log)
{
	struct lb *b = one_thread();
	struct mms_file_header *h = lb_header(b);
	mms_log_info_t info;
	mms_summary_t s;
	uint64_t used;

	lb_alloc(b, 20, 0, 0x1000, 10, 0);
	lb_alloc(b, 21, 0, 0x2000, 20, 0);
	used = lb_offset(b) - MMS_HEADER_SIZE - sizeof(struct mms_chunk_header);
	/* Bytes after `used` were never published: the reader ignores them. */
	lb_alloc(b, 22, 0, 0x3000, 40, 0);
	lb_set_used(b, 0, used);
	h->flags = MMS_FLAG_CUT;
	h->cut_errno = ENOSPC;
	summarize(b, &s, &info);
	ck_assert_int_eq(info.cut, 1);
	ck_assert_int_eq(info.complete, 0);
	ck_assert_int_eq(info.cut_errno, ENOSPC);
	ck_assert_int_eq(info.damaged, 0);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].allocs, 2);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_bytes, 30);
	lb_destroy(b);
}
END_TEST

/* Around a cut, other threads may still record events whose neighbours
 * were lost: thread 0's free of 0x1000 (stamp 30) found no room, thread 1
 * got the block back at 35. The writer's cut_stamp (30) drops every event
 * from there on, so the replay never sees 0x1000 handed out twice. */
START_TEST(test_cut_stamp)
{
	struct lb *b = lb_new(CS);
	struct mms_file_header *h;
	mms_log_info_t info;
	mms_summary_t s;
	uint32_t c0, c1;

	c0 = lb_chunk(b);
	c1 = lb_chunk(b);
	lb_use(b, c0);
	lb_segment(b, 0, 10);
	lb_alloc(b, 10, 0, 0x1000, 16, 0);
	lb_alloc(b, 20, 0, 0x2000, 16, 0);
	lb_use(b, c1);
	lb_segment(b, 1, 15);
	lb_alloc(b, 15, 0, 0x3000, 32, 0);
	lb_alloc(b, 35, 0, 0x1000, 16, 0);
	lb_free(b, 36, 0, 0x3000);
	h = lb_header(b); /* the buffer moves as the log grows */
	h->flags = MMS_FLAG_CUT;
	h->cut_errno = EFBIG;
	h->cut_stamp = 30;
	summarize(b, &s, &info);
	ck_assert_int_eq(info.cut, 1);
	ck_assert_int_eq(info.damaged, 0);
	ck_assert_uint_eq(s.events, 3);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].allocs, 3);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].frees, 0);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_bytes, 64);
	ck_assert_uint_eq(s.double_allocs, 0);
	/* Without the cut stamp (a log of an older writer) the late events
	 * are read, and the double allocation shows. */
	lb_header(b)->cut_stamp = 0;
	summarize(b, &s, &info);
	ck_assert_uint_eq(s.events, 5);
	ck_assert_uint_eq(s.double_allocs, 1);
	lb_destroy(b);
}
END_TEST

/* msMemScope's per-step rule over a cut log: step 4 was running when
 * recording stopped (the free of 0x2000 at stamp 8 is past the cut), so it
 * did not end, and the block of step 3 still live then is no leak of it;
 * the block of step 2 live when step 3 ended is. */
START_TEST(test_cut_step)
{
	struct lb *b = one_thread();
	mms_leaks_t *l;
	mms_log_t *log;

	lb_event0(b, MMS_TAG_STEP, 12);
	lb_alloc(b, 13, 0, 0x1000, 16, 0);
	lb_event0(b, MMS_TAG_STEP, 14);
	lb_alloc(b, 15, 0, 0x2000, 32, 0);
	lb_event0(b, MMS_TAG_STEP, 16);
	lb_alloc(b, 17, 0, 0x3000, 64, 0);
	lb_free(b, 18, 0, 0x2000);
	lb_header(b)->flags = MMS_FLAG_CUT;
	lb_header(b)->cut_stamp = 18;
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_leaks_run(log, NULL, &l), 0);
	ck_assert_uint_eq(l->nstep_leaks, 1);
	ck_assert_uint_eq(l->step_leaks[0].b.addr, 0x1000);
	ck_assert_uint_eq(l->step_leaks[0].found_step, 3);
	ck_assert_uint_eq(l->nexit_leaks, 3);
	mms_leaks_free(l);
	mms_log_close(log);
	/* The whole log: step 4 ends with it, and 0x2000 was freed in it. */
	lb_header(b)->flags = MMS_FLAG_COMPLETE;
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 19);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_leaks_run(log, NULL, &l), 0);
	ck_assert_uint_eq(l->nstep_leaks, 1);
	ck_assert_uint_eq(l->nexit_leaks, 2);
	mms_leaks_free(l);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* What the per-step rule finds and the program frees before its last step
 * ends is held, not leaked: of three blocks of step 2 found at the end of
 * step 3, 0x1000 is freed in step 4, which the program ends (held);
 * 0x2000 only after its last step (in the tail, as at exit) and 0x3000
 * never: leaks. */
START_TEST(test_step_held)
{
	struct lb *b = one_thread();
	mms_leaks_t *l;
	mms_log_t *log;

	lb_event0(b, MMS_TAG_STEP, 12);
	lb_alloc(b, 13, 0, 0x1000, 16, 0);
	lb_alloc(b, 14, 0, 0x2000, 32, 0);
	lb_alloc(b, 15, 0, 0x3000, 64, 0);
	lb_event0(b, MMS_TAG_STEP, 16);
	lb_event0(b, MMS_TAG_STEP, 17);
	lb_free(b, 18, 0, 0x1000);
	lb_event0(b, MMS_TAG_STEP, 19);
	lb_free(b, 20, 0, 0x2000);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 21);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_leaks_run(log, NULL, &l), 0);
	ck_assert_uint_eq(l->nstep_held, 1);
	ck_assert_uint_eq(l->step_held[0].b.addr, 0x1000);
	ck_assert_uint_eq(l->step_held[0].found_step, 3);
	ck_assert_uint_eq(l->step_held[0].freed_step, 4);
	ck_assert_uint_eq(l->nstep_leaks, 2);
	ck_assert_uint_eq(l->step_leaks[0].b.addr, 0x2000);
	ck_assert_uint_eq(l->step_leaks[0].freed_step, 5);
	ck_assert_uint_ne(l->step_leaks[0].freed_event, 0);
	ck_assert_uint_eq(l->step_leaks[1].b.addr, 0x3000);
	ck_assert_uint_eq(l->step_leaks[1].freed_step, 0);
	ck_assert_uint_eq(l->nexit_leaks, 1);
	mms_leaks_free(l);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* A mapping found as a per-step leak is followed to its unmapping, piece
 * by piece: held once nothing of it is left in a step the program ended
 * (unmapped in two calls, or replaced by a MAP_FIXED mapping); an
 * mprotect that opens what is open takes nothing; unmapped only after
 * the last step mark, a leak. */
START_TEST(test_step_held_mmap)
{
	struct lb *b = one_thread();
	mms_leaks_t *l;
	mms_log_t *log;

	lb_event0(b, MMS_TAG_STEP, 12);
	lb_mmap(b, 13, 0x100000, 0x3000);
	lb_mmap(b, 14, 0x200000, 0x2000);
	lb_mmap(b, 15, 0x300000, 0x1000);
	lb_event0(b, MMS_TAG_STEP, 16);
	lb_event0(b, MMS_TAG_STEP, 17);
	lb_munmap(b, 18, 0x101000, 0x1000); /* a hole: two pieces left */
	lb_munmap(b, 19, 0x100000, 0x1000);
	lb_mprotect(b, 20, 0x300000, 0x1000, 3);
	lb_event0(b, MMS_TAG_STEP, 21);
	lb_munmap(b, 22, 0x102000, 0x1000); /* the last piece */
	lb_mmap(b, 23, 0x200000, 0x2000);   /* MAP_FIXED over it */
	lb_event0(b, MMS_TAG_STEP, 24);
	lb_munmap(b, 25, 0x300000, 0x1000);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 26);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_leaks_run(log, NULL, &l), 0);
	ck_assert_uint_eq(l->nstep_held, 2);
	ck_assert_uint_eq(l->step_held[0].b.addr, 0x100000);
	ck_assert_uint_eq(l->step_held[0].b.size, 0x3000);
	ck_assert_uint_eq(l->step_held[0].found_step, 3);
	ck_assert_uint_eq(l->step_held[0].freed_step, 5);
	ck_assert_uint_eq(l->step_held[1].b.addr, 0x200000);
	ck_assert_uint_eq(l->step_held[1].freed_step, 5);
	/* C, and the mapping that replaced B (of step 5, live at the end of
	 * the last step). */
	ck_assert_uint_eq(l->nstep_leaks, 2);
	ck_assert_uint_eq(l->step_leaks[0].b.addr, 0x300000);
	ck_assert_uint_eq(l->step_leaks[0].freed_step, 6);
	ck_assert_uint_eq(l->step_leaks[1].b.addr, 0x200000);
	ck_assert_uint_eq(l->step_leaks[1].found_step, 6);
	ck_assert_uint_eq(l->step_leaks[1].freed_step, 0);
	mms_leaks_free(l);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* l's per-step leaks are n blocks at addrs, in that order. */
static void expect_step_leaks(const mms_leaks_t *l, size_t n, const uint64_t *addrs)
{
	ck_assert_uint_eq(l->nstep_leaks, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(l->step_leaks[i].b.addr, addrs[i]);
}

/* The Python package's sweep at exit (format 14): a per-step leak that its
 * thread frees between SWEEP_BEGIN and SWEEP_END is set apart in
 * step_swept; one freed before or after the sweep, or by another thread
 * while it runs, stays a leak. */
START_TEST(test_step_swept)
{
	struct lb *b = one_thread();
	uint32_t c0 = 0, c1;
	mms_leaks_t *l;
	mms_log_t *log;

	lb_header(b)->version = MMS_FORMAT_VERSION;
	lb_event0(b, MMS_TAG_STEP, 12);
	lb_alloc(b, 13, 0, 0x1000, 10, 0);
	lb_alloc(b, 14, 0, 0x2000, 20, 0);
	lb_alloc(b, 15, 0, 0x3000, 30, 0);
	c1 = lb_chunk(b);
	lb_segment(b, 1, 16);
	lb_thread(b, 16, 1, 1001);
	lb_alloc(b, 17, 0, 0x4000, 40, 0);
	lb_use(b, c0);
	lb_event0(b, MMS_TAG_STEP, 18);
	lb_event0(b, MMS_TAG_STEP, 19);
	lb_free(b, 20, 0, 0x3000); /* before the sweep */
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_SWEEP_BEGIN, 21);
	lb_free(b, 22, 0, 0x1000); /* the sweep's */
	lb_use(b, c1);
	lb_free(b, 23, 0, 0x4000); /* another thread's, meanwhile */
	lb_use(b, c0);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_SWEEP_END, 24);
	lb_free(b, 25, 0, 0x2000); /* after it */
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 26);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_leaks_run(log, NULL, &l), 0);
	ck_assert_uint_eq(l->nstep_swept, 1);
	ck_assert_uint_eq(l->step_swept[0].b.addr, 0x1000);
	ck_assert_uint_eq(l->step_swept[0].found_step, 3);
	ck_assert_uint_eq(l->step_swept[0].freed_step, 4);
	ck_assert_uint_eq(l->nstep_held, 0);
	expect_step_leaks(l, 3, (const uint64_t[]){ 0x2000, 0x3000, 0x4000 });
	mms_leaks_free(l);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* Growth or a one-time increase: of the per-step leaks, those of a stack
 * that kept blocks in one step only, with at least 3 steps between it
 * and the last, are set apart in step_once; a stack that kept blocks in
 * two steps, or in one step too near the end to tell, stays a leak. */
/* The inefficient analysis's counter (launches and lone memory events)
 * in a log without accesses, where it is not fed the memory events while
 * no thread is in a launch and counts them from the state instead: the
 * same count as one fed every event. */
START_TEST(test_inefficient_counter)
{
	struct lb *b = lb_new(CS);
	mms_inefficient_t *r;
	mms_log_t *log;
	uint32_t c0, c1;

	c0 = lb_chunk(b);
	c1 = lb_chunk(b);
	lb_use(b, c0);
	lb_segment(b, 0, 10);
	lb_thread(b, 10, 0, 1000);
	lb_meta(b, 10, "config", "events=alloc,free,launch");
	lb_string(b, 10, 1, "matmul");
	lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0xa000, 16, 0); /* lone: 1 */
	lb_free(b, 21, MMS_FREE_FREE, 0);                 /* free(NULL): no block */
	lb_free(b, 22, MMS_FREE_FREE, 0x9990);            /* no block */
	lb_event1(b, MMS_TAG_OP_BEGIN, 23, 1);            /* a launch: 2 */
	lb_alloc(b, 24, MMS_ALLOC_MALLOC, 0xb000, 16, 0); /* in it */
	lb_event0(b, MMS_TAG_OP_END, 25);
	lb_free(b, 26, MMS_FREE_FREE, 0xa000);            /* 3 */
	lb_event0(b, MMS_TAG_OP_END, 27);                 /* ends nothing */
	lb_alloc(b, 28, MMS_ALLOC_MALLOC, 0xc000, 16, 0); /* 4 */
	lb_alloc(b, 31, MMS_ALLOC_MALLOC, 0xd000, 16, 0); /* 6: thread 1 is in a launch, not this one */
	lb_free(b, 34, MMS_FREE_FREE, 0xd000);            /* 7 */
	lb_mmap(b, 35, 0x100000, 4096);                   /* 8 */
	lb_munmap(b, 36, 0x100000, 4096);                 /* 9 */
	lb_free(b, 37, MMS_FREE_FREE, 0xb000);            /* 10 */
	lb_use(b, c1);
	lb_segment(b, 1, 30);
	lb_event1(b, MMS_TAG_OP_BEGIN, 30, 1);            /* 5 */
	lb_alloc(b, 32, MMS_ALLOC_MALLOC, 0xe000, 16, 0); /* in it */
	lb_event0(b, MMS_TAG_OP_END, 33);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_inefficient_run(log, NULL, &r), 0);
	ck_assert_uint_eq(r->launches, 2);
	ck_assert_uint_eq(r->ops, 10);
	ck_assert_uint_eq(r->n, 0);
	mms_inefficient_free(r);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* Asserts two decompose trees are the same. */
static void same_tree(const mms_decompose_tree_t *a, const mms_decompose_tree_t *b)
{
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(a->position, b->position);
	ck_assert_uint_eq(a->bytes, b->bytes);
	ck_assert_uint_eq(a->blocks, b->blocks);
	ck_assert_uint_eq(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		ck_assert_str_eq(a->nodes[i].name, b->nodes[i].name);
		ck_assert_uint_eq(a->nodes[i].depth, b->nodes[i].depth);
		ck_assert_uint_eq(a->nodes[i].bytes, b->nodes[i].bytes);
		ck_assert_uint_eq(a->nodes[i].blocks, b->nodes[i].blocks);
	}
}

/* Decompose by kind, not fed the HOST blocks' events (the default kinds:
 * the pass tells it of each new peak), gives the trees it gives when fed
 * every event (every kind named: the peak of all four together, the same
 * in a log without device memory): peaks reached by HOST blocks, a double
 * alloc, a mapping, and a pool's block that ends the by-kind way, at a new
 * peak (first log) or after the peak (second). */
START_TEST(test_decompose_quiet)
{
	static const mms_decompose_options_t all = { .kinds = 15 };
	mms_decompose_t *d[2];
	mms_log_t *log;

	for (int pool_peak = 0; pool_peak < 2; pool_peak++) {
		struct lb *b = one_thread();

		lb_string(b, 12, 1, "arena");
		lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x1000, 100, 0);
		lb_alloc(b, 21, MMS_ALLOC_MALLOC, 0x2000, 300, 0);
		lb_free(b, 22, MMS_FREE_FREE, 0x1000);
		lb_alloc(b, 23, MMS_ALLOC_MALLOC, 0x2000, 50, 0); /* a double alloc */
		lb_mmap(b, 24, 0x100000, 4096);
		lb_alloc(b, 25, MMS_ALLOC_MALLOC, 0x3000, 700, 0); /* a peak: 4846 */
		lb_free(b, 26, MMS_FREE_FREE, 0x3000);
		if (pool_peak) {
			lb_pool_alloc(b, 27, 1, 0x9000, 5000, 8192, 5000, 0); /* a peak, then one more at the end */
		} else {
			lb_pool_alloc(b, 27, 1, 0x9000, 10, 8192, 10, 0);
			lb_free(b, 28, MMS_FREE_FREE, 0x2000);
		}
		lb_alloc(b, 29, MMS_ALLOC_MALLOC, 0x4000, 20, 0);
		log = write_open(b, SIZE_MAX);
		ck_assert_int_eq(mms_decompose_run(log, NULL, &d[0]), 0);
		ck_assert_int_eq(mms_decompose_run(log, &all, &d[1]), 0);
		ck_assert_uint_eq(d[0]->peak->bytes, (pool_peak ? 9166 : 4846));
		same_tree(d[0]->peak, d[1]->peak);
		same_tree(d[0]->end, d[1]->end);
		mms_decompose_free(d[0]);
		mms_decompose_free(d[1]);
		mms_log_close(log);
		lb_destroy(b);
	}
}
END_TEST

START_TEST(test_step_once)
{
	struct lb *b = one_thread();
	uint64_t t = 12;
	mms_leaks_t *l;
	mms_log_t *log;

	lb_header(b)->version = MMS_FORMAT_VERSION;
	lb_stack(b, t++, 1, 0, 0x401000);
	lb_stack(b, t++, 2, 0, 0x402000);
	lb_stack(b, t++, 3, 0, 0x403000);
	for (int step = 1; step <= 8; step++) {
		if (step == 2)
			lb_alloc(b, t++, 0, 0x1000, 10, 1);
		if (step == 3) {
			lb_alloc(b, t++, 0, 0x2000, 20, 2);
			lb_alloc(b, t++, 0, 0x3000, 30, 1);
		}
		if (step == 6)
			lb_alloc(b, t++, 0, 0x4000, 40, 3);
		lb_event0(b, MMS_TAG_STEP, t++);
	}
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, t++);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_leaks_run(log, NULL, &l), 0);
	ck_assert_uint_eq(l->nsteps, 8);
	ck_assert_uint_eq(l->nstep_once, 1);
	ck_assert_uint_eq(l->step_once[0].b.addr, 0x2000);
	ck_assert_uint_eq(l->step_once[0].b.step, 3);
	expect_step_leaks(l, 3, (const uint64_t[]){ 0x1000, 0x3000, 0x4000 });
	mms_leaks_free(l);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* A cache of three entries, one added per step and the oldest freed (each
 * held three step ends), beside blocks kept from steps 2 and 3 (no
 * stacks: one group): of the per-step leaks, the entries still cached
 * when the steps end, no older than those freed, are set apart in
 * step_cached; the kept blocks, older than the cache's turnover, stay
 * leaks. */
START_TEST(test_step_cached)
{
	struct lb *b = one_thread();
	uint64_t t = 12;
	mms_leaks_t *l;
	mms_log_t *log;

	lb_header(b)->version = MMS_FORMAT_VERSION;
	for (int step = 1; step <= 12; step++) {
		if (step == 2 || step == 3)
			lb_alloc(b, t++, 0, 0x100 * (uint64_t)step, 10, 0);
		if (step >= 5)
			lb_free(b, t++, 0, 0x1000 * (uint64_t)(step - 3));
		if (step >= 2)
			lb_alloc(b, t++, 0, 0x1000 * (uint64_t)step, 20, 0);
		lb_event0(b, MMS_TAG_STEP, t++);
	}
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, t++);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_leaks_run(log, NULL, &l), 0);
	ck_assert_uint_eq(l->nstep_held, 8);
	ck_assert_uint_eq(l->nstep_cached, 2);
	ck_assert_uint_eq(l->step_cached[0].b.addr, 0xa000);
	ck_assert_uint_eq(l->step_cached[1].b.addr, 0xb000);
	ck_assert_uint_eq(l->nstep_once, 0);
	expect_step_leaks(l, 2, (const uint64_t[]){ 0x200, 0x300 });
	mms_leaks_free(l);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* A stack whose records do not resolve (its parent was never defined: a
 * bit flipped in the log) does not stop a report: it has no frames, and
 * the log's info counts it. */
START_TEST(test_bad_stack)
{
	struct lb *b = one_thread();
	mms_transform_options_t to = { .format = MMS_TRANSFORM_FLAMEGRAPH, .path = "leaks.svg",
					.selection = MMS_TRANSFORM_LEAKS };
	mms_export_options_t eo = { .format = MMS_EXPORT_CSV, .path = "dump.csv" };
	mms_transform_t *tr;
	mms_export_t *x;
	mms_trace_t *t;
	mms_log_info_t info;
	mms_log_t *log;
	uint64_t ips[4];

	lb_begin(b, MMS_TAG_STACK, 11);
	lb_u(b, 7);
	lb_u(b, 99); /* no stack 99 */
	lb_u(b, 0x401000);
	lb_end(b);
	lb_alloc(b, 20, 0, 0x1000, 16, 7);
	lb_alloc(b, 21, 0, 0x2000, 32, 0);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 22);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_log_stack(log, 7, ips, 4), MMS_ECORRUPT);
	mms_log_get_info(log, &info);
	ck_assert_uint_eq(info.bad_stacks, 1);
	ck_assert_int_eq(info.damaged, 0);
	ck_assert_int_eq(mms_export_run(log, &eo, &x), 0);
	mms_export_free(x);
	ck_assert_int_eq(mms_trace_run(log, NULL, &t), 0);
	ck_assert_uint_eq(t->nend, 2);
	ck_assert_int_eq(mms_trace_write_tsv(log, t->end, t->nend, "leakage.tsv", NULL), 0);
	mms_trace_free(t);
	ck_assert_int_eq(mms_transform_run(log, &to, &tr), 0);
	mms_transform_free(tr);
	mms_log_get_info(log, &info);
	ck_assert_uint_ge(info.bad_stacks, 4);
	unlink("dump.csv");
	unlink("leakage.tsv");
	unlink("leaks.svg");
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

START_TEST(test_lost_events)
{
	struct lb *b = one_thread();
	mms_log_info_t info;
	mms_summary_t s;

	/* The header holds the total; LOST records say where they were lost
	 * and count the same events again. */
	lb_header(b)->lost_events = 3;
	lb_event1(b, MMS_TAG_LOST, 20, 2);
	lb_event1(b, MMS_TAG_LOST, 21, 1);
	summarize(b, &s, &info);
	ck_assert_uint_eq(info.lost_events, 3);
	ck_assert_uint_eq(s.events, 1); /* LOST is metadata, not an event */
	lb_destroy(b);
}
END_TEST

START_TEST(test_truncated_file)
{
	struct lb *b = one_thread();
	mms_log_info_t info;
	mms_summary_t s;
	mms_log_t *log;
	uint64_t cut;
	uint32_t c1;

	lb_alloc(b, 20, 0, 0x1000, 10, 0);
	c1 = lb_chunk(b);
	lb_segment(b, 0, 20);
	lb_alloc(b, 30, 0, 0x2000, 20, 0);
	cut = lb_offset(b);
	lb_alloc(b, 31, 0, 0x3000, 40, 0);
	lb_chunk(b);
	lb_segment(b, 1, 25);
	lb_alloc(b, 32, 0, 0x4000, 80, 0);
	ck_assert_uint_eq(c1, 1);
	/* The file ends inside chunk 1's last record, as after a crash of the
	 * file system or a copy cut short: the log is cut there, not
	 * damaged, and what may follow in time is left out. */
	log = write_open(b, cut + 2);
	mms_log_get_info(log, &info);
	ck_assert_int_eq(info.cut, 1);
	ck_assert_int_eq(info.complete, 0);
	ck_assert_int_eq(info.damaged, 0);
	ck_assert_int_eq(info.stopped, 1);
	ck_assert_uint_eq(info.cut_offset, cut + 2);
	ck_assert_str_eq(info.cut_what, "chunk 1 is cut: the file holds 12 of its 16 bytes of records");
	ck_assert_int_eq(mms_summarize(log, &s), 0);
	ck_assert_uint_eq(info.events, 3);
	ck_assert_uint_eq(s.events, 3);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].allocs, 2);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_bytes, 30);
	mms_log_close(log);

	/* Cut at the chunk boundary: chunk 2 is missing although the header
	 * counts it. What chunk 2 held was stamped after chunk 1's first
	 * event (30): the replay stops there. */
	log = write_open(b, MMS_HEADER_SIZE + 2 * CS);
	mms_log_get_info(log, &info);
	ck_assert_int_eq(info.cut, 1);
	ck_assert_int_eq(info.damaged, 0);
	ck_assert_uint_eq(info.cut_offset, MMS_HEADER_SIZE + 2 * CS);
	ck_assert_str_eq(info.cut_what, "the file ends after 2 of the 3 chunks its header counts");
	ck_assert_uint_eq(info.events, 3);
	mms_log_close(log);

	/* The whole file with its exit record: not cut. */
	lb_use(b, 1);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 40);
	log = write_open(b, SIZE_MAX);
	mms_log_get_info(log, &info);
	ck_assert_int_eq(info.cut, 0);
	ck_assert_int_eq(info.complete, 1);
	ck_assert_int_eq(info.stopped, 0);
	ck_assert_uint_eq(info.events, 6);
	mms_log_close(log);

	/* Cut after the last chunk's records, in its unused tail: every
	 * record is there, but the writer grows the file a whole chunk at a
	 * time, so the file lost its end. */
	lb_use(b, 2);
	log = write_open(b, lb_offset(b) + 10);
	mms_log_get_info(log, &info);
	ck_assert_int_eq(info.cut, 1);
	ck_assert_str_eq(info.cut_what, "the file ends inside chunk 2 of the 3 its header counts, after its records");
	ck_assert_uint_eq(info.events, 6);
	mms_log_close(log);

	/* A header that claims more chunks than any file holds is refused. */
	lb_header(b)->nchunks = UINT64_MAX;
	expect_open_error(b, SIZE_MAX, MMS_ECORRUPT);
	lb_destroy(b);
}
END_TEST

/* Records lost in the middle: thread 0's second segment begins at stamp
 * 30, after its first one ended at 20 (a segment begins at its thread's
 * last stamp), so what it recorded between is lost, a free perhaps: the
 * replay stops after stamp 20. */
START_TEST(test_gap)
{
	struct lb *b = lb_new(CS);
	mms_log_info_t info;
	mms_summary_t s;
	uint64_t at;

	lb_chunk(b);
	lb_segment(b, 0, 0);
	lb_alloc(b, 10, 0, 0x1000, 10, 0);
	lb_alloc(b, 20, 0, 0x2000, 20, 0);
	lb_chunk(b);
	lb_segment(b, 1, 0);
	lb_alloc(b, 15, 0, 0x3000, 40, 0);
	lb_free(b, 40, 0, 0x3000);
	lb_chunk(b);
	lb_segment(b, 0, 30);
	at = lb_offset(b);
	lb_free(b, 35, 0, 0x1000);
	summarize(b, &s, &info);
	ck_assert_int_eq(info.damaged, 1);
	ck_assert_int_eq(info.damage_error, MMS_ECORRUPT);
	ck_assert_uint_eq(info.damage_offset, at);
	ck_assert_int_eq(info.stopped, 1);
	ck_assert_int_eq(info.cut, 0);
	ck_assert_uint_eq(info.events, 3);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].allocs, 3);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].frees, 0);
	ck_assert_uint_eq(s.unmatched_frees, 0);
	lb_destroy(b);
}
END_TEST

/* A file cut at a chunk boundary: thread 0 filled chunk 0 and went on in
 * chunk 2, which the file lost; thread 1, in chunk 1, recorded long
 * after. Thread 0's lost records may be stamped from its last one on:
 * thread 1's later events are left out. */
START_TEST(test_full_chunk_lost)
{
	struct lb *b = lb_new(CS);
	mms_log_info_t info;
	mms_log_t *log;
	uint64_t stamp = 10, n = 0;

	lb_chunk(b);
	lb_segment(b, 0, 0);
	/* Full: no room for one more event of the largest kind. */
	while (CS - sizeof(struct mms_chunk_header) - b->ch[0].pos >= MMS_MAX_EVENT_RECORD) {
		if (n++ % 2)
			lb_free(b, stamp++, 0, 0x1000);
		else
			lb_alloc(b, stamp++, 0, 0x1000, 10, 0);
	}
	lb_chunk(b);
	lb_segment(b, 1, 0);
	lb_alloc(b, 100000, 0, 0x2000, 20, 0);
	lb_chunk(b);
	lb_segment(b, 0, stamp - 1);
	lb_alloc(b, stamp, 0, 0x3000, 30, 0);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, stamp + 1);
	log = write_open(b, MMS_HEADER_SIZE + 2 * CS);
	mms_log_get_info(log, &info);
	ck_assert_int_eq(info.cut, 1);
	ck_assert_int_eq(info.damaged, 0);
	ck_assert_uint_eq(info.events, n);
	mms_log_close(log);
	/* Whole, the log reads to its end. */
	log = write_open(b, SIZE_MAX);
	mms_log_get_info(log, &info);
	ck_assert_int_eq(info.stopped, 0);
	ck_assert_int_eq(info.complete, 1);
	ck_assert_uint_eq(info.events, n + 3);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

START_TEST(test_corrupt_tag)
{
	struct lb *b = one_thread();
	static const uint8_t bad[] = { 0xbe, 0x01, 0x02 };
	uint64_t at;

	lb_alloc(b, 20, 0, 0x1000, 10, 0);
	at = lb_offset(b);
	lb_raw(b, bad, sizeof(bad));
	lb_alloc(b, 22, 0, 0x2000, 10, 0); /* lost with the rest of chunk 0 */
	lb_chunk(b);
	lb_segment(b, 1, 15);
	lb_alloc(b, 15, 0, 0x3000, 40, 0);
	expect_damage(b, SIZE_MAX, MMS_ECORRUPT, at, "record tag 0xbe unknown", 2, 50);
	lb_destroy(b);
}
END_TEST

START_TEST(test_overlong_varint)
{
	struct lb *b = one_thread();
	static const uint8_t bad[] = { MMS_TAG_ALLOC, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
				       0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 1, 0 };
	uint64_t at;

	lb_alloc(b, 20, 0, 0x1000, 10, 0);
	at = lb_offset(b);
	lb_raw(b, bad, sizeof(bad));
	expect_damage(b, SIZE_MAX, MMS_ECORRUPT, at, NULL, 1, 10);
	lb_destroy(b);
}
END_TEST

START_TEST(test_bad_chunks)
{
	struct lb *b = lb_new(CS);
	mms_log_info_t info;
	mms_summary_t s;

	lb_chunk(b);
	lb_alloc(b, 5, 0, 0x1000, 10, 0); /* no SEGMENT first */
	lb_chunk(b);
	lb_segment(b, 0, 1);
	lb_alloc(b, 5, 0, 0x1000, 10, 0);
	lb_chunk(b);
	/* Chunk 2 is reserved but never written: magic and used are 0. */
	memset(b->data + MMS_HEADER_SIZE + 2 * CS, 0, sizeof(struct mms_chunk_header));
	lb_chunk(b);
	lb_segment(b, 0, 9);
	lb_alloc(b, 9, 0, 0x2000, 10, 0);
	memcpy(b->data + MMS_HEADER_SIZE + 3 * CS, "XXXX", 4);
	summarize(b, &s, &info);
	ck_assert_int_eq(info.damaged, 1);
	ck_assert_uint_eq(info.damage_offset, MMS_HEADER_SIZE + sizeof(struct mms_chunk_header));
	ck_assert_uint_eq(info.damage_count, 2); /* no SEGMENT; bad magic */
	/* What chunk 0 held may be stamped from the start on: nothing after
	 * the start can be trusted. */
	ck_assert_int_eq(info.stopped, 1);
	ck_assert_uint_eq(s.events, 0);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].allocs, 0);
	lb_destroy(b);
}
END_TEST

START_TEST(test_order_violation)
{
	struct lb *b = lb_new(CS);
	mms_log_info_t info;
	mms_summary_t s;

	/* Thread 0's second segment starts before its first one ended. */
	lb_chunk(b);
	lb_segment(b, 0, 10);
	lb_alloc(b, 10, 0, 0x1000, 10, 0);
	lb_alloc(b, 50, 0, 0x2000, 10, 0);
	lb_chunk(b);
	lb_segment(b, 0, 20);
	lb_free(b, 20, 0, 0x1000);
	summarize(b, &s, &info);
	ck_assert_int_eq(info.damaged, 1);
	ck_assert_int_eq(info.damage_error, MMS_EORDER);
	ck_assert_uint_eq(s.events, 3);
	lb_destroy(b);
}
END_TEST

static void expect_open_error(struct lb *b, size_t len, int code)
{
	mms_open_error_t err = { 0 };
	mms_log_t *log = (mms_log_t *)&err;

	ck_assert_int_eq(lb_write(b, LOG, len), 0);
	ck_assert_int_eq(mms_log_open_ex(LOG, &log, &err), code);
	ck_assert_ptr_null(log);
	ck_assert_msg(err.what[0], "no explanation for %s", mms_strerror(code));
}

START_TEST(test_bad_headers)
{
	struct lb *b = one_thread();

	expect_open_error(b, 0, MMS_ETRUNCATED);
	expect_open_error(b, 5, MMS_ETRUNCATED);
	expect_open_error(b, 100, MMS_ETRUNCATED);
	lb_header(b)->version = MMS_FORMAT_VERSION + 1;
	expect_open_error(b, SIZE_MAX, MMS_EVERSION);
	lb_header(b)->version = 0;
	expect_open_error(b, SIZE_MAX, MMS_EVERSION);
	lb_header(b)->version = MMS_FORMAT_VERSION;
	lb_header(b)->chunk_size = 1000;
	expect_open_error(b, SIZE_MAX, MMS_ECORRUPT);
	b->data[0] = 'X';
	expect_open_error(b, SIZE_MAX, MMS_EBADMAGIC);
	ck_assert_int_eq(mms_log_open("does-not-exist.mms", &(mms_log_t *){ NULL }), -ENOENT);
	ck_assert_str_eq(mms_strerror(-ENOENT), strerror(ENOENT));
	ck_assert_str_eq(mms_strerror(MMS_EBADMAGIC), "not a msmemscope log");
	lb_destroy(b);
}
END_TEST

START_TEST(test_mmap_partial_munmap)
{
	struct lb *b = one_thread();
	mms_summary_t s;
	const mms_kind_summary_t *k = &s.mem[MMS_MEM_MMAP];

	lb_mmap(b, 20, 0x10000, 0x4000);
	lb_munmap(b, 21, 0x11000, 0x1000); /* a hole: two mappings remain */
	lb_mmap(b, 22, 0x20000, 0x2000);
	lb_munmap(b, 23, 0x13000, 0xe000); /* cuts 0x13000.. and 0x20000.. */
	summarize(b, &s, NULL);
	ck_assert_uint_eq(k->allocs, 2);
	ck_assert_uint_eq(k->frees, 2);
	ck_assert_uint_eq(k->bytes_allocated, 0x6000);
	ck_assert_uint_eq(k->peak_bytes, 0x5000);
	ck_assert_uint_eq(k->live_blocks, 3); /* [0x10000,0x11000) [0x12000,0x13000) [0x21000,0x22000) */
	ck_assert_uint_eq(k->live_bytes, 0x3000);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].allocs, 0);
	ck_assert_uint_eq(s.unmatched_frees, 0);
	lb_destroy(b);
}
END_TEST

/* Format 9: a PROT_NONE mapping is address space, mprotect opens and
 * closes memory in it; an older log counts every mapping. */
START_TEST(test_mmap_reserved)
{
	struct lb *b = one_thread();
	mms_summary_t s;
	const mms_kind_summary_t *k = &s.mem[MMS_MEM_MMAP];

	lb_mmap_prot(b, 20, 0x100000, 0x100000, 0);         /* reserved: nothing */
	lb_mprotect(b, 21, 0x100000, 0x4000, 3);            /* opens 16 KiB */
	lb_mprotect(b, 22, 0x102000, 0x4000, 3);            /* opens the 8 KiB past it */
	lb_mprotect(b, 23, 0x100000, 0x6000, 1);            /* read-only: nothing */
	lb_mprotect(b, 24, 0x101000, 0x1000, 0);            /* closes 4 KiB */
	lb_mmap_prot(b, 25, 0x104000, 0x1000, 0);           /* MAP_FIXED PROT_NONE: closes 4 KiB */
	lb_mprotect(b, 26, 0x1f0000, 0x1000, 0);            /* closes what was never open */
	lb_mmap_prot(b, 27, 0x300000, 0x2000, 0x80000000u); /* an mremap's: counts */
	summarize(b, &s, NULL);
	ck_assert_uint_eq(k->allocs, 3);
	ck_assert_uint_eq(k->bytes_allocated, 0x8000);
	ck_assert_uint_eq(k->peak_bytes, 0x6000);
	ck_assert_uint_eq(k->frees, 2);
	ck_assert_uint_eq(k->live_bytes, 0x6000);
	/* [0x100000,0x101000) [0x102000,0x104000) [0x105000,0x106000), the mremap's */
	ck_assert_uint_eq(k->live_blocks, 4);
	lb_destroy(b);

	/* Version 8: the same mapping with prot 0 (an mremap's then) counts. */
	b = one_thread();
	lb_header(b)->version = 8;
	lb_mmap_prot(b, 20, 0x100000, 0x100000, 0);
	summarize(b, &s, NULL);
	ck_assert_uint_eq(k->live_bytes, 0x100000);
	ck_assert_uint_eq(k->allocs, 1);
	lb_destroy(b);
}
END_TEST

START_TEST(test_pools_and_names)
{
	struct lb *b = one_thread();
	mms_summary_t s;
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;
	const char *name = NULL;
	uint64_t tid = 0, ips[4];
	size_t len = 0;

	lb_string(b, 12, 1, "pool-a");
	lb_string(b, 12, 2, "matmul");
	lb_string(b, 12, 3, "main");
	lb_begin(b, MMS_TAG_THREAD_NAME, 12);
	lb_u(b, 0);
	lb_u(b, 3);
	lb_end(b);
	lb_meta(b, 12, "exe", "/usr/bin/prog");
	lb_stack(b, 12, 1, 0, 0x401000);
	lb_stack(b, 12, 2, 1, 0x402000);
	lb_event1(b, MMS_TAG_OP_BEGIN, 20, 2);
	lb_pool_alloc(b, 21, 1, 0x100, 64, 1024, 64, 2);
	lb_event0(b, MMS_TAG_OP_END, 22);
	lb_pool_free(b, 23, 1, 0x100, 64, 1024, 0);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_log_thread(log, 0, &tid, &name), 0);
	ck_assert_uint_eq(tid, 1000);
	ck_assert_str_eq(name, "main");
	ck_assert_int_eq(mms_log_thread(log, 7, &tid, &name), MMS_EUSAGE);
	ck_assert_int_eq(mms_log_meta(log, "exe", &name, &len), 0);
	ck_assert_str_eq(name, "/usr/bin/prog");
	ck_assert_uint_eq(len, 13);
	ck_assert_int_eq(mms_log_stack(log, 2, ips, 4), 2);
	ck_assert_uint_eq(ips[0], 0x402000);
	ck_assert_uint_eq(ips[1], 0x401000);
	ck_assert_int_eq(mms_log_stack(log, 9, ips, 4), MMS_ECORRUPT);
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1); /* SYSTEM init */
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(ev.kind, MMS_EV_OP_LAUNCH);
	ck_assert_str_eq(ev.name, "matmul");
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(ev.kind, MMS_EV_MALLOC);
	ck_assert_int_eq(ev.mem, MMS_MEM_POOL);
	ck_assert_str_eq(ev.name, "pool-a");
	ck_assert_uint_eq(ev.addr, 0x100);
	ck_assert_uint_eq(ev.total, 1024);
	ck_assert_uint_eq(ev.stack, 2);
	mms_iter_close(it);
	ck_assert_int_eq(mms_summarize(log, &s), 0);
	ck_assert_uint_eq(s.mem[MMS_MEM_POOL].allocs, 1);
	ck_assert_uint_eq(s.mem[MMS_MEM_POOL].frees, 1);
	ck_assert_uint_eq(s.mem[MMS_MEM_POOL].peak_bytes, 64);
	ck_assert_uint_eq(s.mem[MMS_MEM_POOL].live_bytes, 0);
	ck_assert_uint_eq(s.by_kind[MMS_EV_OP_LAUNCH], 2);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* Graft nodes (format version 11): an event's Python frames interned on
 * their own and hung on its C stack by one node; walked, they give what
 * a version 10 stack gave: the Python frames innermost first, then the C
 * frames. Two grafts in one stack, or a graft below a graft, are damage. */
START_TEST(test_graft_stacks)
{
	struct lb *b = one_thread();
	mms_log_info_t info;
	mms_log_t *log;
	uint64_t ips[8];

	lb_stack(b, 12, 1, 0, 0x401000);              /* C: main */
	lb_stack(b, 12, 2, 1, 0x402000);              /* C: main <- eval */
	lb_stack(b, 12, 3, 0, mms_pyframe(1, 10, 1)); /* Python: <module> */
	lb_stack(b, 12, 4, 3, mms_pyframe(2, 20, 0)); /* Python: <module> <- f */
	lb_stack(b, 12, 5, 2, MMS_PYGRAFT | 4);       /* f's frames on the C stack 2 */
	lb_stack(b, 12, 6, 1, MMS_PYGRAFT | 3);       /* <module>'s on the C stack 1 */
	lb_stack(b, 12, 7, 5, MMS_PYGRAFT | 3);       /* a graft above a graft */
	lb_stack(b, 12, 8, 0, MMS_PYGRAFT | 6);       /* a graft naming a graft */
	lb_stack(b, 12, 9, 2, MMS_PYGRAFT | 0);       /* no Python frames */
	lb_alloc(b, 20, 0, 0x1000, 16, 5);
	log = write_open(b, SIZE_MAX);
	ck_assert(mms_is_pygraft(MMS_PYGRAFT | 4));
	ck_assert(!mms_is_pygraft(mms_pyframe(MMS_PYCODE_MAX - 1, 7, 1)));
	ck_assert_int_eq(mms_log_stack(log, 5, ips, 8), 4);
	ck_assert_uint_eq(ips[0], mms_pyframe(2, 20, 0));
	ck_assert_uint_eq(ips[1], mms_pyframe(1, 10, 1));
	ck_assert_uint_eq(ips[2], 0x402000);
	ck_assert_uint_eq(ips[3], 0x401000);
	ck_assert_int_eq(mms_log_stack(log, 5, ips, 1), 4); /* the depth, one frame given */
	ck_assert_uint_eq(ips[0], mms_pyframe(2, 20, 0));
	ck_assert_int_eq(mms_log_stack(log, 6, ips, 8), 2);
	ck_assert_uint_eq(ips[0], mms_pyframe(1, 10, 1));
	ck_assert_uint_eq(ips[1], 0x401000);
	ck_assert_int_eq(mms_log_stack(log, 9, ips, 8), 2);
	ck_assert_uint_eq(ips[0], 0x402000);
	ck_assert_int_eq(mms_log_stack(log, 7, ips, 8), MMS_ECORRUPT);
	ck_assert_int_eq(mms_log_stack(log, 8, ips, 8), MMS_ECORRUPT);
	mms_log_get_info(log, &info);
	ck_assert_uint_eq(info.bad_stacks, 2);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* FREE_STACK records (format version 5): a free with the stack of the call
 * that freed. The iterator gives the stack on the FREE event; a replay
 * (its fast heap decoder) gives it as the freed block's free_stack; a
 * plain FREE, and a realloc's FREE_STACK of the old block, alike. */
static void free_stack(struct lb *b, uint64_t stamp, int fn, uint64_t addr, uint64_t stack)
{
	lb_begin(b, (uint8_t)(MMS_TAG_FREE_STACK | fn), stamp);
	lb_addr(b, addr);
	lb_u(b, stack);
	lb_end(b);
}

START_TEST(test_free_stacks)
{
	struct lb *b = one_thread();
	mms_replay_t *r;
	mms_block_t blk;
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;

	lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x1000, 64, 0);
	lb_alloc(b, 21, MMS_ALLOC_MALLOC, 0x2000, 32, 0);
	lb_alloc(b, 22, MMS_ALLOC_MALLOC, 0x3000, 16, 0);
	free_stack(b, 30, MMS_FREE_FREE, 0x1000, 7);
	free_stack(b, 31, MMS_FREE_REALLOC, 0x2000, 300);
	lb_alloc(b, 32, MMS_ALLOC_REALLOC, 0x4000, 48, 0);
	lb_free(b, 33, MMS_FREE_FREE, 0x3000);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	for (int k = 0; k < 5; k++)
		ck_assert_int_eq(mms_iter_next(it, &ev), 1); /* SYSTEM, 3 MALLOC, FREE */
	ck_assert_int_eq(ev.kind, MMS_EV_FREE);
	ck_assert_int_eq(ev.sub, MMS_FREE_FREE);
	ck_assert_uint_eq(ev.addr, 0x1000);
	ck_assert_uint_eq(ev.stack, 7);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(ev.kind, MMS_EV_FREE);
	ck_assert_int_eq(ev.sub, MMS_FREE_REALLOC);
	ck_assert_uint_eq(ev.addr, 0x2000);
	ck_assert_uint_eq(ev.stack, 300);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(ev.kind, MMS_EV_MALLOC);
	ck_assert_uint_eq(ev.addr, 0x4000);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(ev.kind, MMS_EV_FREE);
	ck_assert_uint_eq(ev.stack, 0);
	mms_iter_close(it);
	ck_assert_int_eq(mms_replay_open(log, &r), 0);
	ck_assert_int_eq(mms_replay_seek(r, 8), 0);
	ck_assert_int_eq(mms_replay_freed_block_at(r, 0x1010, &blk), 1);
	ck_assert_uint_eq(blk.addr, 0x1000);
	ck_assert_uint_eq(blk.free_stack, 7);
	ck_assert_int_eq(mms_replay_freed_block_at(r, 0x2000, &blk), 1);
	ck_assert_uint_eq(blk.free_stack, 300);
	ck_assert_int_eq(mms_replay_freed_block_at(r, 0x3000, &blk), 1);
	ck_assert_uint_eq(blk.free_stack, 0);
	ck_assert_int_eq(mms_replay_block_at(r, 0x4000, &blk), 1);
	ck_assert_uint_eq(blk.free_stack, 0);
	mms_replay_close(r);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* ALLOC_FAIL records (format version 7): an allocation refused is an
 * event of its own with the size, alignment and stack asked for; the heap
 * stays as it was (a refused realloc keeps its block), and the summary
 * counts it by kind. */
static void alloc_fail(struct lb *b, uint64_t stamp, int fn, uint64_t size, uint64_t stack, uint64_t align)
{
	lb_begin(b, (uint8_t)(MMS_TAG_ALLOC_FAIL | fn), stamp);
	lb_u(b, size);
	lb_u(b, stack);
	lb_u(b, align);
	lb_end(b);
}

START_TEST(test_alloc_fail)
{
	struct lb *b = one_thread();
	mms_summary_t s;
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;
	mms_oom_t *o;

	lb_stack(b, 19, 1, 0, 0xabc);
	lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x1000, 100, 0);
	lb_alloc(b, 21, MMS_ALLOC_MALLOC, 0x2000, 300, 0);
	alloc_fail(b, 22, MMS_ALLOC_POSIX_MEMALIGN, (uint64_t)1 << 50, 1, 64);
	alloc_fail(b, 23, MMS_ALLOC_CALLOC, UINT64_MAX, 0, 0);
	lb_free(b, 24, MMS_FREE_FREE, 0x1000);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1); /* SYSTEM init */
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(ev.kind, MMS_EV_ALLOC_FAIL);
	ck_assert_int_eq(ev.sub, MMS_FN_POSIX_MEMALIGN);
	ck_assert_uint_eq(ev.size, (uint64_t)1 << 50);
	ck_assert_uint_eq(ev.flags, 64);
	ck_assert_uint_eq(ev.stack, 1);
	ck_assert_uint_eq(ev.addr, 0);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(ev.kind, MMS_EV_ALLOC_FAIL);
	ck_assert_uint_eq(ev.size, UINT64_MAX);
	mms_iter_close(it);

	ck_assert_int_eq(mms_summarize(log, &s), 0);
	ck_assert_uint_eq(s.by_kind[MMS_EV_ALLOC_FAIL], 2);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].allocs, 2);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_bytes, 300);

	/* The oom analysis: both refusals, with what was live then. */
	ck_assert_int_eq(mms_oom_run(log, &(mms_oom_options_t){ .k = 1 }, &o), 0);
	ck_assert_uint_eq(o->failures, 2);
	ck_assert_uint_eq(o->n, 2);
	ck_assert_uint_eq(o->list[0].live_blocks, 2);
	ck_assert_uint_eq(o->list[0].live_bytes, 400);
	ck_assert_uint_eq(o->list[0].nrecent, 1);
	ck_assert_uint_eq(o->list[0].recent[0].addr, 0x2000);
	ck_assert_uint_eq(o->list[0].nlargest, 1);
	ck_assert_uint_eq(o->list[0].largest[0].size, 300);
	ck_assert_uint_eq(o->list[0].align, 64);
	ck_assert_uint_eq(o->list[0].stack, 1);
	mms_oom_free(o);
	ck_assert_int_eq(mms_oom_run(log, &(mms_oom_options_t){ .max_failures = 1 }, &o), 0);
	ck_assert_uint_eq(o->failures, 2);
	ck_assert_uint_eq(o->n, 1);
	mms_oom_free(o);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* DEV_ALLOC and DEV_FREE records (format version 6): CUDA memory as the
 * DEVICE kind, keyed apart from the heap (a host block at the same address
 * lives beside a device block), its sub-kind and device ordinal on events
 * and blocks; a free of no device block is an invalid free. */
static void dev_alloc(struct lb *b, uint64_t stamp, int fn, uint64_t device, uint64_t addr, uint64_t size)
{
	lb_begin(b, (uint8_t)(MMS_TAG_DEV_ALLOC | fn), stamp);
	lb_addr(b, addr);
	lb_u(b, size);
	lb_u(b, 0);
	lb_u(b, device);
	lb_end(b);
}

static void dev_free(struct lb *b, uint64_t stamp, int fn, uint64_t device, uint64_t addr)
{
	lb_begin(b, (uint8_t)(MMS_TAG_DEV_FREE | fn), stamp);
	lb_addr(b, addr);
	lb_u(b, device);
	lb_end(b);
}

static void dev_alloc_fail(struct lb *b, uint64_t stamp, int fn, uint64_t device, uint64_t size)
{
	lb_begin(b, (uint8_t)(MMS_TAG_DEV_ALLOC_FAIL | fn), stamp);
	lb_u(b, size);
	lb_u(b, 1);
	lb_u(b, device);
	lb_end(b);
}

/* DEV_ALLOC_FAIL records (format 8): an ALLOC_FAIL event of DEVICE memory;
 * the oom analysis counts as live then the device memory on the device
 * refused (not the host's, not another device's, not pinned memory), and
 * for a pinned refusal the pinned memory. */
START_TEST(test_dev_alloc_fail)
{
	struct lb *b = one_thread();
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;
	mms_oom_t *o;

	lb_stack(b, 19, 1, 0, 0xabc);
	lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x1000, 100, 0);
	dev_alloc(b, 21, MMS_DEV_DEVICE, 1, 0x7e0000000000, 1 << 20);
	dev_alloc(b, 22, MMS_DEV_ASYNC, 1, 0x7e0000100000, 1 << 21);
	dev_alloc(b, 23, MMS_DEV_DEVICE, 2, 0x7f0000000000, 1 << 22);
	dev_alloc(b, 24, MMS_DEV_PINNED, 1, 0x50000, 8192);
	dev_alloc_fail(b, 25, MMS_DEV_DEVICE, 1, 1 << 30);
	dev_alloc_fail(b, 26, MMS_DEV_PINNED, 1, 1 << 20);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(ev.kind, MMS_EV_ALLOC_FAIL);
	ck_assert_int_eq(ev.mem, MMS_MEM_DEVICE);
	ck_assert_int_eq(ev.sub, MMS_DEVICE_MEMORY);
	ck_assert_uint_eq(ev.device, 1);
	ck_assert_uint_eq(ev.size, 1 << 30);
	ck_assert_uint_eq(ev.stack, 1);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(ev.sub, MMS_DEVICE_PINNED);
	mms_iter_close(it);

	ck_assert_int_eq(mms_oom_run(log, NULL, &o), 0);
	ck_assert_uint_eq(o->failures, 2);
	ck_assert_uint_eq(o->list[0].mem, MMS_MEM_DEVICE);
	ck_assert_uint_eq(o->list[0].device, 1);
	ck_assert_uint_eq(o->list[0].live_blocks, 2);
	ck_assert_uint_eq(o->list[0].live_bytes, (1 << 20) + (1 << 21));
	ck_assert_uint_eq(o->list[0].largest[0].size, 1 << 21);
	ck_assert_uint_eq(o->list[1].live_blocks, 1);
	ck_assert_uint_eq(o->list[1].live_bytes, 8192);
	mms_oom_free(o);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* The next event is a DEVICE event of kind and sub-kind sub at addr on
 * device (size: a MALLOC's). */
static void next_dev_event(mms_iter_t *it, int kind, int sub, unsigned device, uint64_t addr, uint64_t size)
{
	mms_event_t ev;

	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(ev.kind, kind);
	ck_assert_int_eq(ev.mem, MMS_MEM_DEVICE);
	ck_assert_int_eq(ev.sub, sub);
	ck_assert_int_eq(ev.device, device);
	ck_assert_uint_eq(ev.addr, addr);
	if (kind == MMS_EV_MALLOC)
		ck_assert_uint_eq(ev.size, size);
}

START_TEST(test_device_memory)
{
	struct lb *b = one_thread();
	mms_summary_t s;
	mms_replay_t *r;
	mms_block_t blk;
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;

	dev_alloc(b, 20, MMS_DEV_DEVICE, 1, 0x7e0000000000, 1 << 20);
	lb_alloc(b, 21, MMS_ALLOC_MALLOC, 0x7e0000000000, 16, 0);
	dev_alloc(b, 22, MMS_DEV_MANAGED, 1, 0x7e0000200000, 4096);
	dev_alloc(b, 23, MMS_DEV_PINNED, 0, 0x7f0000000000, 8192);
	dev_free(b, 30, MMS_DEV_DEVICE, 1, 0x7e0000000000);
	dev_free(b, 31, MMS_DEV_PINNED, 0, 0x7f0000000000);
	dev_free(b, 32, MMS_DEV_DEVICE, 0, 0x7e0000400000);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1); /* SYSTEM init */
	next_dev_event(it, MMS_EV_MALLOC, MMS_DEVICE_MEMORY, 1, 0x7e0000000000, 1 << 20);
	mms_iter_close(it);
	ck_assert_str_eq(mms_mem_kind_name(MMS_MEM_DEVICE), "DEVICE");
	ck_assert_str_eq(mms_device_sub_name(MMS_DEVICE_PINNED), "pinned");
	ck_assert_ptr_null(mms_device_sub_name(MMS_DEVICE_SUB_COUNT));

	ck_assert_int_eq(mms_summarize(log, &s), 0);
	ck_assert_uint_eq(s.mem[MMS_MEM_DEVICE].allocs, 3);
	ck_assert_uint_eq(s.mem[MMS_MEM_DEVICE].frees, 3);
	ck_assert_uint_eq(s.mem[MMS_MEM_DEVICE].peak_bytes, (1 << 20) + 4096 + 8192);
	ck_assert_uint_eq(s.mem[MMS_MEM_DEVICE].live_blocks, 1);
	ck_assert_uint_eq(s.mem[MMS_MEM_DEVICE].live_bytes, 4096);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_bytes, 16);
	ck_assert_uint_eq(s.invalid_frees, 1);
	ck_assert_uint_eq(s.double_frees, 0);

	ck_assert_int_eq(mms_replay_open(log, &r), 0);
	ck_assert_int_eq(mms_replay_seek(r, 5), 0);
	/* The heap block and the device block at one address both live. */
	ck_assert_int_eq(mms_replay_block_at(r, 0x7e0000200000, &blk), 1);
	ck_assert_int_eq(blk.mem, MMS_MEM_DEVICE);
	ck_assert_int_eq(blk.fn, MMS_DEVICE_MANAGED);
	ck_assert_uint_eq(blk.device, 1);
	ck_assert_str_eq(blk.pool, "cuda:1");
	ck_assert_int_eq(mms_replay_seek(r, 6), 0);
	ck_assert_int_eq(mms_replay_block_at(r, 0x7e0000000000, &blk), 1);
	ck_assert_int_eq(blk.mem, MMS_MEM_HOST);
	ck_assert_uint_eq(blk.size, 16);
	mms_replay_close(r);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* CUDA arrays (MMS_DEV_ARRAY, format 15): device memory of sub-kind
 * "array" at the handle; an address lookup finds one by its handle only,
 * never inside (its range is no memory the program reaches): there the
 * heap block the address lies in. */
START_TEST(test_device_array)
{
	struct lb *b = one_thread();
	mms_summary_t s;
	mms_replay_t *r;
	mms_block_t blk;
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;

	lb_alloc(b, 20, MMS_ALLOC_MALLOC, 0x55550000, 4096, 0);
	dev_alloc(b, 21, MMS_DEV_ARRAY, 1, 0x55550100, 1 << 20);
	dev_alloc_fail(b, 22, MMS_DEV_ARRAY, 1, 1 << 30);
	dev_free(b, 30, MMS_DEV_ARRAY, 1, 0x55550100);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1); /* SYSTEM init */
	ck_assert_int_eq(mms_iter_next(it, &ev), 1); /* the heap block */
	next_dev_event(it, MMS_EV_MALLOC, MMS_DEVICE_ARRAY, 1, 0x55550100, 1 << 20);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1);
	ck_assert_int_eq(ev.kind, MMS_EV_ALLOC_FAIL);
	ck_assert_int_eq(ev.mem, MMS_MEM_DEVICE);
	ck_assert_int_eq(ev.sub, MMS_DEVICE_ARRAY);
	next_dev_event(it, MMS_EV_FREE, MMS_DEVICE_ARRAY, 1, 0x55550100, 0);
	mms_iter_close(it);
	ck_assert_str_eq(mms_device_sub_name(MMS_DEVICE_ARRAY), "array");

	ck_assert_int_eq(mms_summarize(log, &s), 0);
	ck_assert_uint_eq(s.mem[MMS_MEM_DEVICE].allocs, 1);
	ck_assert_uint_eq(s.mem[MMS_MEM_DEVICE].frees, 1);
	ck_assert_uint_eq(s.mem[MMS_MEM_DEVICE].peak_bytes, 1 << 20);
	ck_assert_uint_eq(s.invalid_frees, 0);

	ck_assert_int_eq(mms_replay_open(log, &r), 0);
	ck_assert_int_eq(mms_replay_seek(r, 3), 0);
	ck_assert_int_eq(mms_replay_block_at(r, 0x55550100, &blk), 1);
	ck_assert_int_eq(blk.mem, MMS_MEM_DEVICE);
	ck_assert_int_eq(blk.fn, MMS_DEVICE_ARRAY);
	ck_assert_uint_eq(blk.size, 1 << 20);
	ck_assert_int_eq(mms_replay_block_at(r, 0x55550180, &blk), 1);
	ck_assert_int_eq(blk.mem, MMS_MEM_HOST);
	ck_assert_uint_eq(blk.addr, 0x55550000);
	ck_assert_int_eq(mms_replay_block_at(r, 0x55560000, &blk), 0);
	mms_replay_close(r);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* VMM mappings (MMS_DEV_VMM): a mapping of 3 chunks whose middle one is
 * unmapped (freed, its two ends allocated again) is decoded as device
 * memory of sub-kind "vmm", on the handle's device. */
START_TEST(test_device_vmm)
{
	struct lb *b = one_thread();
	mms_summary_t s;
	mms_replay_t *r;
	mms_block_t blk;
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;

	dev_alloc(b, 20, MMS_DEV_VMM, 2, 0x7d0000200000, 3 << 21);
	dev_free(b, 21, MMS_DEV_VMM, 2, 0x7d0000200000);
	dev_alloc(b, 22, MMS_DEV_VMM, 2, 0x7d0000200000, 1 << 21);
	dev_alloc(b, 23, MMS_DEV_VMM, 2, 0x7d0000600000, 1 << 21);
	dev_free(b, 24, MMS_DEV_VMM, 2, 0x7d0000600000);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	ck_assert_int_eq(mms_iter_next(it, &ev), 1); /* SYSTEM init */
	next_dev_event(it, MMS_EV_MALLOC, MMS_DEVICE_VMM, 2, 0x7d0000200000, 3 << 21);
	next_dev_event(it, MMS_EV_FREE, MMS_DEVICE_VMM, 2, 0x7d0000200000, 0);
	next_dev_event(it, MMS_EV_MALLOC, MMS_DEVICE_VMM, 2, 0x7d0000200000, 1 << 21);
	mms_iter_close(it);
	ck_assert_str_eq(mms_device_sub_name(MMS_DEVICE_VMM), "vmm");
	ck_assert_ptr_null(mms_device_sub_name(MMS_DEVICE_SUB_COUNT + 1));

	ck_assert_int_eq(mms_summarize(log, &s), 0);
	ck_assert_uint_eq(s.mem[MMS_MEM_DEVICE].allocs, 3);
	ck_assert_uint_eq(s.mem[MMS_MEM_DEVICE].frees, 2);
	ck_assert_uint_eq(s.mem[MMS_MEM_DEVICE].peak_bytes, 3 << 21);
	ck_assert_uint_eq(s.mem[MMS_MEM_DEVICE].live_bytes, 1 << 21);
	ck_assert_uint_eq(s.invalid_frees, 0);

	ck_assert_int_eq(mms_replay_open(log, &r), 0);
	ck_assert_int_eq(mms_replay_seek(r, 5), 0);
	ck_assert_int_eq(mms_replay_block_at(r, 0x7d0000200000, &blk), 1);
	ck_assert_int_eq(blk.fn, MMS_DEVICE_VMM);
	ck_assert_uint_eq(blk.size, 1 << 21);
	ck_assert_str_eq(blk.pool, "cuda:2");
	mms_replay_close(r);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* WATCH checksum records (format version 2): decoded into events, and the
 * watch analysis over them: a block changed by launch 2 (softmax), after
 * an unchanged launch 1 and a change between launches 2 and 3. A version 1
 * header opens too. */
static void watch_sum(struct lb *b, uint8_t phase, uint64_t stamp, uint64_t launch, uint64_t crc)
{
	lb_begin(b, (uint8_t)(MMS_TAG_WATCH | phase), stamp);
	lb_addr(b, 0x200);
	lb_u(b, 8);
	lb_u(b, 2);
	lb_u(b, 1);
	lb_u(b, launch);
	lb_u(b, crc);
	lb_end(b);
}

START_TEST(test_watch_sums)
{
	struct lb *b = one_thread();
	mms_watch_t *r;
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;
	char info[128];

	lb_string(b, 12, 1, "softmax");
	lb_string(b, 12, 2, "w/1");
	lb_event1(b, MMS_TAG_OP_BEGIN, 20, 1);
	watch_sum(b, MMS_WATCH_AFTER, 21, 1, 0xaa);
	lb_event0(b, MMS_TAG_OP_END, 22);
	lb_event1(b, MMS_TAG_OP_BEGIN, 30, 1);
	watch_sum(b, MMS_WATCH_BEFORE, 31, 2, 0xaa);
	watch_sum(b, MMS_WATCH_AFTER, 32, 2, 0xbb);
	lb_event0(b, MMS_TAG_OP_END, 33);
	lb_event1(b, MMS_TAG_OP_BEGIN, 40, 1);
	watch_sum(b, MMS_WATCH_BEFORE, 41, 3, 0xcc);
	watch_sum(b, MMS_WATCH_AFTER, 42, 3, 0xcc);
	lb_event0(b, MMS_TAG_OP_END, 43);
	lb_header(b)->version = 1;
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	for (int k = 0; k < 3; k++)
		ck_assert_int_eq(mms_iter_next(it, &ev), 1); /* SYSTEM, OP begin, sum */
	ck_assert_int_eq(ev.kind, MMS_EV_WATCH);
	ck_assert_int_eq(ev.sub, 2);
	ck_assert_uint_eq(ev.addr, 0x200);
	ck_assert_uint_eq(ev.size, 8);
	ck_assert_str_eq(ev.name, "w/1");
	ck_assert_uint_eq(ev.used, 1);
	ck_assert_uint_eq(ev.total, 1);
	ck_assert_uint_eq(ev.flags, 0xaa);
	mms_iter_close(it);
	ck_assert_int_eq(mms_watch_run(log, NULL, &r), 0);
	ck_assert_uint_eq(r->sums, 5);
	ck_assert_uint_eq(r->nblocks, 1);
	ck_assert_uint_eq(r->blocks[0].sums, 5);
	ck_assert_uint_eq(r->blocks[0].first_launch, 1);
	ck_assert_uint_eq(r->blocks[0].out, 1);
	ck_assert_uint_eq(r->blocks[0].nchanges, 2);
	ck_assert_uint_eq(r->blocks[0].changes[0].launch, 2);
	ck_assert_str_eq(r->blocks[0].changes[0].op, "softmax");
	ck_assert_uint_eq(r->blocks[0].changes[0].before, 0xaa);
	ck_assert_uint_eq(r->blocks[0].changes[0].after, 0xbb);
	ck_assert_uint_eq(r->blocks[0].changes[1].launch, 0);
	ck_assert_uint_eq(r->blocks[0].changes[1].found_at, 3);
	ck_assert_uint_eq(r->blocks[0].changes[1].before, 0xbb);
	ck_assert_uint_eq(r->blocks[0].changes[1].after, 0xcc);
	ck_assert_uint_eq(r->blocks[0].last_crc, 0xcc);
	mms_watch_free(r);
	ck_assert_int_eq(mms_watch_tensor_info(info, sizeof info, 77, "soft max", 2, "w/1", 1, 1), 30);
	ck_assert_str_eq(info, "host_77/soft_max_2-w_1_1_after");
	ck_assert_int_eq(mms_watch_tensor_info(info, 8, 77, "soft max", 2, "w/1", 1, 0), 31);
	ck_assert_str_eq(info, "host_77");
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

START_TEST(test_steps)
{
	struct lb *b = one_thread();
	mms_summary_t s;

	lb_event0(b, MMS_TAG_STEP, 20);
	lb_event0(b, MMS_TAG_STEP, 21);
	lb_string(b, 22, 5, "step start");
	lb_begin(b, MMS_TAG_RANGE_START, 22); /* ignored: STEP came first */
	lb_u(b, 1);
	lb_u(b, 5);
	lb_end(b);
	summarize(b, &s, NULL);
	ck_assert_uint_eq(s.steps, 3);
	lb_destroy(b);

	/* Two steps, each ended by msmemscope_step(): the third, begun by the
	 * last call, saw nothing and is not counted. */
	b = one_thread();
	lb_event0(b, MMS_TAG_OP_END, 19);
	lb_event0(b, MMS_TAG_STEP, 20);
	lb_event0(b, MMS_TAG_OP_END, 21);
	lb_event0(b, MMS_TAG_STEP, 22);
	summarize(b, &s, NULL);
	ck_assert_uint_eq(s.steps, 2);
	lb_destroy(b);

	b = one_thread();
	lb_string(b, 12, 5, "step start");
	lb_string(b, 12, 6, "other");
	for (uint64_t i = 0; i < 4; i++) {
		lb_begin(b, MMS_TAG_RANGE_START, 20 + 2 * i);
		lb_u(b, i + 1);
		lb_u(b, i == 3 ? 6 : 5);
		lb_end(b);
		lb_event1(b, MMS_TAG_RANGE_END, 21 + 2 * i, i + 1);
	}
	summarize(b, &s, NULL);
	ck_assert_uint_eq(s.steps, 3);
	ck_assert_uint_eq(s.by_kind[MMS_EV_MSTX], 8);
	lb_destroy(b);
}
END_TEST

/* COLLECT records the --steps filter wrote (format 17: on | 2) read as
 * stops and starts with flags 1; a block of step 2 still live when step
 * 3, not recorded, ended is set apart by the per-step rule (the program
 * may have freed it then), one of step 4 live at the end of step 5 is a
 * per-step leak. */
START_TEST(test_collect_by_steps)
{
	struct lb *b = one_thread();
	mms_leaks_options_t opt = { 0 };
	mms_leaks_t *l;
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;
	int collects = 0;

	lb_event0(b, MMS_TAG_STEP, 20);
	lb_event1(b, MMS_TAG_COLLECT, 21, MMS_COLLECT_BY_STEPS | 1);
	lb_alloc(b, 22, MMS_ALLOC_MALLOC, 0x1000, 100, 0);
	lb_event0(b, MMS_TAG_STEP, 23);
	lb_event1(b, MMS_TAG_COLLECT, 24, MMS_COLLECT_BY_STEPS);
	lb_event0(b, MMS_TAG_STEP, 25);
	lb_event1(b, MMS_TAG_COLLECT, 26, MMS_COLLECT_BY_STEPS | 1);
	lb_alloc(b, 27, MMS_ALLOC_MALLOC, 0x2000, 200, 0);
	lb_event0(b, MMS_TAG_STEP, 28);
	lb_event0(b, MMS_TAG_STEP, 29);
	lb_event1(b, MMS_TAG_COLLECT, 30, 0); /* the program's msmemscope_stop(), after step 5 ended */
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	while (mms_iter_next(it, &ev) == 1) {
		if (ev.kind != MMS_EV_COLLECT)
			continue;
		/* start, stop, start by the filter; the program's stop */
		ck_assert_int_eq(ev.sub, collects % 2 ? MMS_COLLECT_STOP : MMS_COLLECT_START);
		ck_assert_uint_eq(ev.flags, collects < 3);
		collects++;
	}
	mms_iter_close(it);
	ck_assert_int_eq(collects, 4);

	ck_assert_int_eq(mms_leaks_run(log, &opt, &l), 0);
	ck_assert_uint_eq(l->nstep_unrecorded, 1);
	ck_assert_uint_eq(l->step_unrecorded[0].b.addr, 0x1000);
	ck_assert_uint_eq(l->step_unrecorded[0].found_step, 3);
	/* Step 4's: no stop from its allocation to the end of step 5. */
	ck_assert_uint_eq(l->nstep_leaks, 1);
	ck_assert_uint_eq(l->step_leaks[0].b.addr, 0x2000);
	ck_assert_uint_eq(l->step_leaks[0].found_step, 5);
	/* How much of each step the log has: step 3 none (the filter's stop
	 * at its edge), step 6 part (the program's stop inside it). */
	{
		static const mms_step_recorded_t want[] = { MMS_STEP_RECORDED_ALL,  MMS_STEP_RECORDED_ALL,
							    MMS_STEP_RECORDED_NONE, MMS_STEP_RECORDED_ALL,
							    MMS_STEP_RECORDED_ALL,  MMS_STEP_RECORDED_PART };

		ck_assert_uint_eq(l->nsteps, 6);
		for (size_t i = 0; i < 6; i++)
			ck_assert_msg(l->steps[i].recorded == want[i], "step %zu: recorded %d, expected %d", i + 1,
				      (int)l->steps[i].recorded, (int)want[i]);
	}
	mms_leaks_free(l);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* Every field of the heap's records in every varint length, 1 to 9
 * bytes (address deltas, zigzagged, to 10): the fast decoders (the
 * iterator's, the replay's runs, the open's skim) read what the careful
 * one would. Each record's fields take the least and the most value of
 * one length in turn (a stamp delta of 9 bytes once, in the round of 9:
 * the stamps stay below 2^64). */
static uint64_t width_value(unsigned w, int most)
{
	return most ? (w == 9 ? UINT64_MAX >> 1 : ((uint64_t)1 << (7 * w)) - 1) : (uint64_t)1 << (7 * (w - 1));
}

struct widths_ev {
	uint64_t stamp, addr, size;
	int is_free;
};

static void widths_check(mms_event_t *ev, const struct widths_ev *want, size_t i)
{
	ck_assert_msg(ev->kind == (want->is_free ? MMS_EV_FREE : MMS_EV_MALLOC), "event %zu: kind %d", i, ev->kind);
	ck_assert_msg(ev->stamp == want->stamp, "event %zu: stamp %llx, not %llx", i, (unsigned long long)ev->stamp,
		      (unsigned long long)want->stamp);
	ck_assert_msg(ev->addr == want->addr, "event %zu: addr %llx, not %llx", i, (unsigned long long)ev->addr,
		      (unsigned long long)want->addr);
	if (!want->is_free)
		ck_assert_msg(ev->size == want->size, "event %zu: size %llx, not %llx", i, (unsigned long long)ev->size,
			      (unsigned long long)want->size);
}

START_TEST(test_varint_widths)
{
	struct lb *b = lb_new(1u << 16);
	struct widths_ev want[64];
	uint64_t stamp = 20, addr = 0x1000, bytes = 0;
	size_t n = 0, i;
	mms_log_t *log;
	mms_iter_t *it;
	mms_replay_t *r;
	mms_replay_options_t ro = { .no_index_file = 1 };
	mms_log_info_t info;
	mms_summary_t s;
	mms_event_t ev;
	unsigned w;
	int most;

	lb_chunk(b);
	lb_segment(b, 0, 10);
	lb_thread(b, 10, 0, 1000);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_INIT, 11);
	for (w = 1; w <= 9; w++) {
		for (most = 0; most < 2; most++) {
			uint64_t v = width_value(w, most);

			/* The stamp's delta, the size and the address's move
			 * (zigzag: one length up or down) of this length. */
			stamp += w == 9 ? (most ? (uint64_t)1 << 62 : 1) : v;
			addr = addr + v ? addr + v : addr + 1;
			lb_alloc(b, stamp, MMS_ALLOC_MALLOC, addr, v, 0);
			want[n++] = (struct widths_ev){ stamp, addr, v, 0 };
			bytes += v;
			stamp += w < 9 ? v : 1;
			lb_free(b, stamp, MMS_FREE_FREE, addr);
			want[n++] = (struct widths_ev){ stamp, addr, 0, 1 };
		}
	}
	/* And the same again with the address going down. */
	for (w = 1; w <= 8; w++) {
		uint64_t v = width_value(w, 1);

		stamp += 1;
		addr = addr - v ? addr - v : addr - 1;
		lb_alloc(b, stamp, MMS_ALLOC_CALLOC, addr, w, 0);
		want[n++] = (struct widths_ev){ stamp, addr, w, 0 };
		bytes += w;
		stamp += 3;
		lb_free(b, stamp, MMS_FREE_FREE, addr);
		want[n++] = (struct widths_ev){ stamp, addr, 0, 1 };
	}
	ck_assert_uint_le(n, sizeof(want) / sizeof(want[0]));
	log = write_open(b, SIZE_MAX);

	/* The iterator, event by event. */
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	for (i = 0; i < n;) {
		ck_assert_int_eq(mms_iter_next(it, &ev), 1);
		if (ev.kind == MMS_EV_MALLOC || ev.kind == MMS_EV_FREE) {
			widths_check(&ev, &want[i], i);
			i++;
		}
	}
	mms_iter_close(it);

	/* The replay, through the state (its runs of heap events). */
	ck_assert_int_eq(mms_replay_open_ex(log, &ro, &r), 0);
	for (i = 0; i < n;) {
		ck_assert_int_eq(mms_replay_next(r, &ev), 1);
		if (ev.kind == MMS_EV_MALLOC || ev.kind == MMS_EV_FREE) {
			widths_check(&ev, &want[i], i);
			i++;
		}
	}
	ck_assert_int_eq(mms_replay_next(r, &ev), 0);
	mms_replay_close(r);

	/* The open's count of events (its skim of the records), the
	 * summary's, and every block freed. */
	mms_log_get_info(log, &info);
	ck_assert_int_eq(info.damaged, 0);
	ck_assert_uint_eq(info.events, n + 1); /* and SYSTEM's init */
	ck_assert_int_eq(mms_summarize(log, &s), 0);
	ck_assert_uint_eq(s.events, n + 1);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].allocs, n / 2);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].frees, n / 2);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].bytes_allocated, bytes);
	ck_assert_uint_eq(s.mem[MMS_MEM_HOST].live_blocks, 0);
	ck_assert_uint_eq(s.unmatched_frees, 0);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

START_TEST(test_time_conversion)
{
	struct lb *b = one_thread();
	struct mms_file_header *h = lb_header(b);
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;

	lb_alloc(b, 1500, 0, 0x1000, 1, 0);
	h->start_stamp = 1000;
	h->start_realtime_ns = 5000000000ull;
	h->last_stamp = 3000;
	h->last_realtime_ns = 5000000000ull + 1000; /* 2 stamps per ns */
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	while (mms_iter_next(it, &ev) == 1 && ev.kind != MMS_EV_MALLOC)
		;
	ck_assert_uint_eq(ev.time_ns, 5000000000ull + 250);
	mms_iter_close(it);
	mms_log_close(log);

	/* Without two distinct pairs a stamp counts as one nanosecond. */
	h->last_stamp = 1000;
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_iter_open(log, &it), 0);
	while (mms_iter_next(it, &ev) == 1 && ev.kind != MMS_EV_MALLOC)
		;
	ck_assert_uint_eq(ev.time_ns, 5000000000ull + 500);
	mms_iter_close(it);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* --- following a log that grows (mms_log_follow, mms_pass_feed) -------- */

/* A pass over a followed log, with the leaks analysis. */
struct fol {
	mms_log_t *log;
	mms_pass_t *p;
	mms_leaks_t *leaks;
};

static void fol_open(struct fol *f, const struct lb *b)
{
	int rc;

	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	rc = mms_log_follow(LOG, &f->log, NULL);
	ck_assert_msg(rc == 0, "follow: %s", mms_strerror(rc));
	ck_assert_int_eq(mms_pass_open(f->log, NULL, &f->p), 0);
	ck_assert_int_eq(mms_leaks_add(f->p, NULL, &f->leaks), 0);
}

/* Writes b again, looks at the log and feeds the pass; returns the events
 * fed so far. */
static uint64_t fol_feed(struct fol *f, const struct lb *b, int look)
{
	mms_pass_info_t pi;
	int rc;

	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	if (look) {
		rc = mms_log_follow_refresh(f->log);
		ck_assert_msg(rc >= 0, "refresh: %s", mms_strerror(rc));
	}
	rc = mms_pass_feed(f->p);
	ck_assert_msg(rc == 0, "feed: %s", mms_strerror(rc));
	mms_pass_get_info(f->p, &pi);
	return pi.events;
}

/* Ends the pass after the last look and checks it gives what a pass over
 * the written log gives: the summary and the leaks. */
static void fol_end(struct fol *f, struct lb *b)
{
	mms_summary_t fs, s;
	mms_leaks_t *l;
	mms_log_t *log;

	lb_header(b)->flags |= MMS_FLAG_COMPLETE;
	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	ck_assert_int_eq(mms_log_follow_end(f->log), 0);
	ck_assert_int_eq(mms_pass_feed(f->p), 0);
	ck_assert_int_eq(mms_pass_run(f->p), 0);
	ck_assert_int_eq(mms_pass_summary(f->p, &fs), 0);
	ck_assert_int_eq(mms_log_open(LOG, &log), 0);
	ck_assert_int_eq(mms_summarize(log, &s), 0);
	ck_assert_int_eq(mms_leaks_run(log, NULL, &l), 0);
	ck_assert_uint_eq(fs.events, s.events);
	for (int k = 0; k < MMS_MEM_KIND_COUNT; k++) {
		ck_assert_uint_eq(fs.mem[k].allocs, s.mem[k].allocs);
		ck_assert_uint_eq(fs.mem[k].frees, s.mem[k].frees);
		ck_assert_uint_eq(fs.mem[k].live_bytes, s.mem[k].live_bytes);
		ck_assert_uint_eq(fs.mem[k].peak_bytes, s.mem[k].peak_bytes);
	}
	ck_assert_uint_eq(fs.steps, s.steps);
	ck_assert_uint_eq(f->leaks->nexit_leaks, l->nexit_leaks);
	ck_assert_uint_eq(f->leaks->nstep_leaks, l->nstep_leaks);
	for (size_t i = 0; i < l->nexit_leaks; i++) {
		ck_assert_uint_eq(f->leaks->exit_leaks[i].b.addr, l->exit_leaks[i].b.addr);
		ck_assert_uint_eq(f->leaks->exit_leaks[i].b.alloc_event, l->exit_leaks[i].b.alloc_event);
	}
	for (size_t i = 0; i < l->nstep_leaks; i++)
		ck_assert_uint_eq(f->leaks->step_leaks[i].b.addr, l->step_leaks[i].b.addr);
	mms_leaks_free(l);
	mms_log_close(log);
	mms_pass_close(f->p);
	mms_leaks_free(f->leaks);
	mms_log_close(f->log);
}

/* One thread, read in three looks: each feed reads what was written, a
 * new chunk included, and the steps and per-step leak come out as from
 * the written log. */
START_TEST(test_follow_one_thread)
{
	struct lb *b = one_thread();
	struct fol f;

	lb_header(b)->flags &= ~(uint32_t)MMS_FLAG_COMPLETE;
	lb_alloc(b, 12, 0, 0x1000, 10, 0);
	lb_alloc(b, 13, 0, 0x2000, 20, 0);
	lb_event0(b, MMS_TAG_STEP, 14);
	fol_open(&f, b);
	/* Below the last stamp (14): init, 2 mallocs; the step waits (the
	 * thread may write more records of its stamp). */
	ck_assert_uint_eq(fol_feed(&f, b, 0), 3);
	ck_assert_uint_eq(fol_feed(&f, b, 1), 3); /* nothing new */
	lb_alloc(b, 15, 0, 0x3000, 30, 0);
	lb_free(b, 16, 0, 0x1000);
	lb_event0(b, MMS_TAG_STEP, 17);
	ck_assert_uint_eq(fol_feed(&f, b, 1), 6);
	/* The thread goes on in a new chunk. */
	lb_chunk(b);
	lb_segment(b, 0, 17);
	lb_alloc(b, 18, 0, 0x4000, 40, 0);
	lb_event0(b, MMS_TAG_STEP, 19);
	lb_free(b, 20, 0, 0x2000);
	ck_assert_uint_eq(fol_feed(&f, b, 1), 9);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 21);
	fol_end(&f, b);
	lb_destroy(b);
}
END_TEST

/* Two threads: a feed reads no further than the lowest of their last
 * stamps, since the other may still write records stamped before. */
START_TEST(test_follow_two_threads)
{
	struct lb *b = one_thread();
	struct fol f;
	uint32_t c0, c1;

	lb_header(b)->flags &= ~(uint32_t)MMS_FLAG_COMPLETE;
	c0 = 0;
	lb_alloc(b, 12, 0, 0x1000, 10, 0);
	c1 = lb_chunk(b);
	lb_segment(b, 1, 13);
	lb_thread(b, 13, 1, 1001);
	lb_alloc(b, 14, 0, 0x2000, 20, 0);
	lb_use(b, c0);
	lb_alloc(b, 15, 0, 0x3000, 30, 0);
	lb_alloc(b, 16, 0, 0x4000, 40, 0);
	fol_open(&f, b);
	/* Below stamp 14, thread 1's last. */
	ck_assert_uint_eq(fol_feed(&f, b, 0), 2);
	lb_use(b, c1);
	lb_free(b, 17, 0, 0x3000);
	/* Below 16, thread 0's last now. */
	ck_assert_uint_eq(fol_feed(&f, b, 1), 4);
	lb_use(b, c0);
	lb_free(b, 18, 0, 0x2000);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 19);
	fol_end(&f, b);
	lb_destroy(b);
}
END_TEST

/* A look that read a chunk before its thread published its last record
 * there, and the thread's next chunk after it wrote on (a look reads the
 * chunks one after the other while the program writes): the record
 * between is not lost yet. The feed stops before it, and the next look,
 * which finds it, goes on; the report is the written log's. */
START_TEST(test_follow_chunk_tail)
{
	struct lb *b = one_thread();
	const uint64_t chunk0 = MMS_HEADER_SIZE + sizeof(struct mms_chunk_header);
	mms_replay_options_t opt = { .forward_only = 1 };
	uint64_t seen, whole;
	mms_replay_t *r;
	mms_log_t *log;
	mms_where_t w;
	struct fol f;

	lb_header(b)->flags &= ~(uint32_t)MMS_FLAG_COMPLETE;
	lb_alloc(b, 12, 0, 0x1000, 10, 0);
	lb_alloc(b, 13, 0, 0x2000, 20, 0);
	seen = lb_offset(b) - chunk0;
	lb_alloc(b, 14, 0, 0x3000, 30, 0);
	whole = lb_offset(b) - chunk0;
	lb_chunk(b);
	lb_segment(b, 0, 14);
	lb_alloc(b, 15, 0, 0x4000, 40, 0);
	lb_free(b, 16, 0, 0x1000);
	lb_set_used(b, 0, seen);
	fol_open(&f, b);
	/* Below 13, the thread's last record before the gap: init and the
	 * first malloc (another record of stamp 13 may be in the gap). */
	ck_assert_uint_eq(fol_feed(&f, b, 0), 2);
	ck_assert_uint_eq(fol_feed(&f, b, 1), 2);
	/* A replay that follows the log stops there too. */
	ck_assert_int_eq(mms_log_follow(LOG, &log, NULL), 0);
	ck_assert_int_eq(mms_replay_open_ex(log, &opt, &r), 0);
	while (mms_replay_next(r, NULL) == 1)
		;
	mms_replay_where(r, &w);
	ck_assert_uint_eq(w.position, 2);
	lb_set_used(b, 0, whole);
	/* Below 16 now; the replay reads to the end. */
	ck_assert_uint_eq(fol_feed(&f, b, 1), 5);
	ck_assert_int_eq(mms_replay_follow_refresh(r), 1);
	while (mms_replay_next(r, NULL) == 1)
		;
	mms_replay_where(r, &w);
	ck_assert_uint_eq(w.position, 6);
	ck_assert_uint_eq(w.live_bytes, 90);
	mms_replay_close(r);
	mms_log_close(log);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 17);
	fol_end(&f, b);
	lb_destroy(b);
}
END_TEST

/* A thread whose records come after events stamped later were fed: the
 * feed says so, and the pass cannot go on; a damaged record stops the
 * following. */
START_TEST(test_follow_late_thread)
{
	struct lb *b = one_thread();
	mms_log_t *log;
	mms_pass_t *p;

	lb_header(b)->flags &= ~(uint32_t)MMS_FLAG_COMPLETE;
	lb_alloc(b, 12, 0, 0x1000, 10, 0);
	lb_alloc(b, 20, 0, 0x2000, 20, 0);
	lb_alloc(b, 25, 0, 0x4000, 40, 0);
	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	ck_assert_int_eq(mms_log_follow(LOG, &log, NULL), 0);
	ck_assert_int_eq(mms_pass_open(log, NULL, &p), 0);
	ck_assert_int_eq(mms_pass_feed(p), 0);
	lb_chunk(b);
	lb_segment(b, 1, 15);
	lb_thread(b, 15, 1, 1001);
	lb_alloc(b, 16, 0, 0x3000, 30, 0);
	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	ck_assert_int_eq(mms_log_follow_refresh(log), 1);
	ck_assert_int_eq(mms_pass_feed(p), MMS_EORDER);
	ck_assert_int_eq(mms_pass_run(p), MMS_EUSAGE);
	mms_pass_close(p);
	/* Bytes that do not decode: the log cannot be followed further. */
	lb_raw(b, "\xff\xff", 2);
	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	ck_assert_int_lt(mms_log_follow_refresh(log), 0);
	mms_log_close(log);
	/* Not a followed log. */
	ck_assert_int_eq(mms_log_open(LOG, &log), 0);
	ck_assert_int_eq(mms_log_follow_refresh(log), MMS_EUSAGE);
	ck_assert_int_eq(mms_pass_open(log, NULL, &p), 0);
	ck_assert_int_eq(mms_pass_feed(p), MMS_EUSAGE);
	mms_pass_close(p);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* Feeds p, which must return want; returns the events fed so far. */
static uint64_t feed_events(mms_pass_t *p, int want)
{
	mms_pass_info_t pi;

	ck_assert_int_eq(mms_pass_feed(p), want);
	mms_pass_get_info(p, &pi);
	return pi.events;
}

/* The events a replay of the log written at LOG holds. */
static uint64_t written_events(void)
{
	mms_summary_t s;
	mms_log_t *log;

	ck_assert_int_eq(mms_log_open(LOG, &log), 0);
	ck_assert_int_eq(mms_summarize(log, &s), 0);
	mms_log_close(log);
	return s.events;
}

#ifdef MMS_HAVE_TSC
/* A thread's hook guard, as the recorder's META tls_busy names it: this
 * process plays the recorded one, its thread always outside its hooks. */
static volatile int32_t idle_guard;

/* A thread a look finds outside its hooks holds no feed back: the feed
 * goes past its last record. When the last look then finds the log ends
 * before what was fed (here, a chunk the header counts that the file does
 * not hold: the replay of the written log stops after the chunk's first
 * event), the feed says so, rather than a pass that holds events the
 * written log's replay leaves out. */
START_TEST(test_follow_idle_cut)
{
	struct lb *b = one_thread();
	uint8_t v[16], *p = v;
	struct timespec ts;
	mms_log_t *log;
	mms_pass_t *p1;

	clock_gettime(CLOCK_REALTIME, &ts);
	lb_header(b)->flags &= ~(uint32_t)MMS_FLAG_COMPLETE;
	lb_header(b)->clock = MMS_CLOCK_TSC;
	lb_header(b)->pid = (uint64_t)getpid();
	lb_header(b)->start_stamp = 1;
	lb_header(b)->start_realtime_ns = (uint64_t)ts.tv_sec * 1000000000u - 10000000000u;
	p = mms_put_u(p, 0);
	p = mms_put_u(p, (uint64_t)(uintptr_t)&idle_guard);
	lb_begin(b, MMS_TAG_META, 11);
	lb_str(b, "tls_busy");
	lb_bytes(b, v, (size_t)(p - v));
	lb_end(b);
	lb_alloc(b, 12, 0, 0x1000, 10, 0);
	lb_alloc(b, 13, 0, 0x2000, 20, 0);
	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	ck_assert_int_eq(mms_log_follow(LOG, &log, NULL), 0);
	ck_assert_int_eq(mms_pass_open(log, NULL, &p1), 0);
	/* The first look: below the thread's last stamp (13). */
	ck_assert_uint_eq(feed_events(p1, 0), 2);
	/* The next finds the thread outside its hooks: all of it. */
	ck_assert_int_eq(mms_log_follow_refresh(log), 0);
	ck_assert_uint_eq(feed_events(p1, 0), 3);
	/* The header counts a second chunk the file never holds. */
	lb_header(b)->nchunks = 2;
	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	ck_assert_int_eq(mms_log_follow_end(log), 0);
	feed_events(p1, MMS_ETRUNCATED);
	mms_pass_close(p1);
	mms_log_close(log);
	ck_assert_uint_lt(written_events(), 3);
	lb_destroy(b);
}
END_TEST
#endif

/* The last look reads the chunk the file ends inside (a look while the
 * program runs leaves it for later) and finds damage there, in a segment
 * of the thread stamped before everything it wrote: the written log's
 * replay holds no event, and the thread no record left to check the
 * feed's position against. The feed says the log is damaged (the
 * fuzzer's finding: a pass that had fed an allocation the replay of the
 * written log leaves out, and said nothing). */
START_TEST(test_follow_end_damage)
{
	struct lb *b = one_thread();
	const size_t cs = lb_header(b)->chunk_size;
	mms_log_t *log;
	mms_pass_t *p;

	lb_header(b)->flags &= ~(uint32_t)MMS_FLAG_COMPLETE;
	lb_alloc(b, 12, 0, 0x1000, 10, 0);
	lb_alloc(b, 13, 0, 0x2000, 20, 0);
	lb_chunk(b);
	lb_segment(b, 0, 5);
	lb_raw(b, "\x00", 1); /* no such tag */
	ck_assert_int_eq(lb_write(b, LOG, MMS_HEADER_SIZE + cs + 512), 0);
	ck_assert_int_eq(mms_log_follow(LOG, &log, NULL), 0);
	ck_assert_int_eq(mms_pass_open(log, NULL, &p), 0);
	/* Below 13: the init and the first malloc. */
	ck_assert_uint_eq(feed_events(p, 0), 2);
	ck_assert_int_eq(mms_log_follow_end(log), 0);
	feed_events(p, MMS_ECORRUPT);
	ck_assert_int_eq(mms_pass_run(p), MMS_EUSAGE);
	mms_pass_close(p);
	mms_log_close(log);
	ck_assert_uint_eq(written_events(), 0);
	lb_destroy(b);
}
END_TEST

/* The recorder gives back the room reserved past its last chunk when the
 * program exits, and a thread still running counts its next chunk before
 * the file grows to hold it: a look then reads the chunks the file holds
 * (it read the one counted, past the file's end: SIGBUS in the reader),
 * and the next look the new one. */
START_TEST(test_follow_trimmed)
{
	struct lb *b = one_thread();
	const size_t cs = lb_header(b)->chunk_size;
	mms_log_info_t info;
	mms_log_t *log;

	lb_header(b)->flags &= ~(uint32_t)MMS_FLAG_COMPLETE;
	lb_alloc(b, 12, 0, 0x1000, 10, 0);
	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	/* Room reserved past the chunk, as the recorder grows the file ahead. */
	ck_assert_int_eq(truncate(LOG, (off_t)(MMS_HEADER_SIZE + 4 * cs)), 0);
	ck_assert_int_eq(mms_log_follow(LOG, &log, NULL), 0);
	mms_log_get_info(log, &info);
	ck_assert_uint_eq(info.events, 2);
	/* Trimmed to its one chunk, with a second one counted. */
	lb_chunk(b);
	lb_segment(b, 0, 12);
	lb_alloc(b, 13, 0, 0x2000, 20, 0);
	ck_assert_int_eq(lb_write(b, LOG, MMS_HEADER_SIZE + cs), 0);
	ck_assert_int_eq(mms_log_follow_refresh(log), 0);
	/* Grown to hold it. */
	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	ck_assert_int_eq(mms_log_follow_refresh(log), 1);
	mms_log_get_info(log, &info);
	ck_assert_uint_eq(info.events, 3);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* The scan at exit's REACH_REGIONS record at stamp: a module's data
 * (0x1000, a root), then the anonymous memory of the blocks (0x10000 on,
 * 0x40000 bytes). */
static void scan_regions(struct lb *b, uint64_t stamp)
{
	uint8_t rgn[64], *p;

	p = mms_put_u(rgn, 0x1000);
	p = mms_put_u(p, 0x1000);
	p = mms_put_u(p, MMS_RGN_FILE);
	p = mms_put_u(p, 0x10000);
	p = mms_put_u(p, 0x40000);
	p = mms_put_u(p, 0);
	lb_begin(b, MMS_TAG_REACH_REGIONS, stamp);
	lb_bytes(b, rgn, (size_t)(p - rgn));
	lb_end(b);
}

/* The scan at exit's REACH_REFS record at stamp: two words, at a1 (then
 * a2, above it) holding v1 (v2), delta-coded as the recorder writes them. */
static void scan_refs(struct lb *b, uint64_t stamp, uint64_t a1, uint64_t v1, uint64_t a2, uint64_t v2)
{
	uint8_t refs[64], *p;

	p = mms_put_u(refs, a1 / 8);
	p = mms_put_u(p, mms_zigzag((int64_t)v1));
	p = mms_put_u(p, (a2 - a1) / 8);
	p = mms_put_u(p, mms_zigzag((int64_t)(v2 - v1)));
	lb_begin(b, MMS_TAG_REACH_REFS, stamp);
	lb_bytes(b, refs, (size_t)(p - refs));
	lb_end(b);
}

/* META "reach" at stamp: the scan done, with its start (the eighth
 * field, stamp 20) when with_start. */
static void scan_meta(struct lb *b, uint64_t stamp, int with_start)
{
	uint64_t f[8] = { MMS_SCAN_DONE, 2, 1, 1, 0x1000, 1, 5000, 20 };
	uint8_t val[96], *p = val;

	for (int i = 0; i < (with_start ? 8 : 7); i++)
		p = mms_put_u(p, f[i]);
	lb_begin(b, MMS_TAG_META, stamp);
	lb_str(b, "reach");
	lb_bytes(b, val, (size_t)(p - val));
	lb_end(b);
}

/* A log of a process that exited with the scan at exit's records (format
 * 12): A (stamp 12) nothing points to; B (30) and C (31), made by another
 * thread after the scan began (at stamp 20, where the eighth field of
 * META "reach" says so), B pointed to from a module's data, C from
 * nowhere; D (13) only from C. */
static struct lb *scanned(int with_start)
{
	struct lb *b = one_thread();

	lb_alloc(b, 12, 0, 0x10000, 64, 0);
	lb_alloc(b, 13, 0, 0x40000, 64, 0);
	lb_alloc(b, 30, 0, 0x20000, 64, 0);
	lb_alloc(b, 31, 0, 0x30000, 64, 0);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 32);
	scan_regions(b, 33);
	/* 0x1010 -> B, and C's second word -> D. */
	scan_refs(b, 33, 0x1010, 0x20000, 0x30008, 0x40000);
	scan_meta(b, 34, with_start);
	return b;
}

/* The blocks a thread still running made as the scan at exit ran have no
 * verdict unless the scan found a pointer to them, and their words are
 * roots; a log without the scan's start judges them all. */
START_TEST(test_reach_late_blocks)
{
	static const uint64_t with[MMS_REACH_COUNT] = {
		[MMS_REACH_UNKNOWN] = 1, [MMS_REACH_LEAKED] = 1, [MMS_REACH_REACHABLE] = 2
	};
	static const uint64_t without[MMS_REACH_COUNT] = {
		[MMS_REACH_LEAKED] = 2, [MMS_REACH_INDIRECT] = 1, [MMS_REACH_REACHABLE] = 1
	};
	for (int start = 0; start < 2; start++) {
		struct lb *b = scanned(start);
		mms_log_info_t info;
		mms_summary_t s;

		summarize(b, &s, &info);
		ck_assert_int_eq(info.reach_scan, MMS_REACH_SCAN_WHOLE);
		ck_assert_int_eq(s.reach_known, 1);
		for (unsigned r = 0; r < MMS_REACH_COUNT; r++)
			ck_assert_uint_eq(s.reach_blocks[r], (start ? with : without)[r]);
		lb_destroy(b);
	}
}
END_TEST

/* What each leaked block lost with it (valgrind's cliques): A (0x10000)
 * points to B, C (0x30000) to A, D to nothing, and nothing to any. A is
 * found first, with B lost with it; then C, which leads to A: A and all
 * it had are C's. C: 2 blocks, 128 bytes lost with it; D and the
 * indirectly leaked A and B none. */
START_TEST(test_reach_lost_with)
{
	struct lb *b = one_thread();
	static const struct {
		uint64_t addr;
		unsigned reach;
		uint64_t blocks, bytes;
	} want[] = { { 0x10000, MMS_REACH_INDIRECT, 0, 0 },
		     { 0x20000, MMS_REACH_INDIRECT, 0, 0 },
		     { 0x30000, MMS_REACH_LEAKED, 2, 128 },
		     { 0x40000, MMS_REACH_LEAKED, 0, 0 } };
	mms_leaks_t *l;
	mms_log_t *log;
	size_t i, k;

	for (i = 0; i < 4; i++)
		lb_alloc(b, 12 + i, 0, 0x10000 * (i + 1), 64, 0);
	lb_event0(b, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, 20);
	scan_regions(b, 21);
	/* A's first word -> B; C's first word -> A. */
	scan_refs(b, 21, 0x10000, 0x20000, 0x30000, 0x10000);
	scan_meta(b, 22, 0);
	log = write_open(b, SIZE_MAX);
	ck_assert_int_eq(mms_leaks_run(log, NULL, &l), 0);
	ck_assert_uint_eq(l->nexit_leaks, 4);
	for (i = 0; i < 4; i++) {
		for (k = 0; k < l->nexit_leaks && l->exit_leaks[k].b.addr != want[i].addr; k++)
			;
		ck_assert_uint_lt(k, l->nexit_leaks);
		ck_assert_uint_eq(l->exit_leaks[k].b.reach, want[i].reach);
		ck_assert_uint_eq(l->exit_leaks[k].b.indirect_blocks, want[i].blocks);
		ck_assert_uint_eq(l->exit_leaks[k].b.indirect_bytes, want[i].bytes);
	}
	mms_leaks_free(l);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* --- a replay that follows the log (mms_replay_follow_refresh) --------- */

/* The replay r, moved to the end of what its log holds now, stands where
 * a replay of the log as written stands at the same event. */
static void expect_where_as_written(mms_replay_t *r)
{
	mms_log_info_t fi;
	mms_where_t fw, w;
	mms_replay_options_t opt = { .forward_only = 1 };
	mms_replay_t *r2;
	mms_log_t *log;

	mms_log_get_info(mms_replay_log(r), &fi);
	ck_assert_int_eq(mms_replay_seek(r, fi.events), 0);
	mms_replay_where(r, &fw);
	ck_assert_int_eq(mms_log_open(LOG, &log), 0);
	ck_assert_int_eq(mms_replay_open_ex(log, &opt, &r2), 0);
	ck_assert_int_eq(mms_replay_seek(r2, fi.events), 0);
	mms_replay_where(r2, &w);
	ck_assert_uint_eq(fw.position, fi.events);
	ck_assert_uint_eq(fw.position, w.position);
	ck_assert_uint_eq(fw.step, w.step);
	ck_assert_int_eq(fw.in_step, w.in_step);
	ck_assert_uint_eq(fw.live_bytes, w.live_bytes);
	ck_assert_uint_eq(fw.peak_bytes, w.peak_bytes);
	ck_assert_uint_eq(fw.mem[MMS_MEM_HOST].live_blocks, w.mem[MMS_MEM_HOST].live_blocks);
	ck_assert_uint_eq(fw.unmatched_frees, w.unmatched_frees);
	mms_replay_close(r2);
	mms_log_close(log);
}

/* One thread read in three looks, a new chunk included: after each, the
 * replay goes on from where it stood to the new end, and stands where a
 * replay of the written log stands; a look that finds nothing says 0. */
START_TEST(test_replay_follow)
{
	struct lb *b = one_thread();
	mms_replay_options_t opt = { .forward_only = 1 };
	mms_replay_t *r;
	mms_log_t *log;
	mms_where_t w;

	lb_header(b)->flags &= ~(uint32_t)MMS_FLAG_COMPLETE;
	lb_alloc(b, 12, 0, 0x1000, 10, 0);
	lb_alloc(b, 13, 0, 0x2000, 20, 0);
	lb_event0(b, MMS_TAG_STEP, 14);
	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	ck_assert_int_eq(mms_log_follow(LOG, &log, NULL), 0);
	ck_assert_int_eq(mms_replay_open_ex(log, &opt, &r), 0);
	expect_where_as_written(r);
	ck_assert_int_eq(mms_replay_follow_refresh(r), 0); /* nothing new */
	expect_where_as_written(r);
	lb_alloc(b, 15, 0, 0x3000, 30, 0);
	lb_free(b, 16, 0, 0x1000);
	lb_event0(b, MMS_TAG_STEP, 17);
	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	ck_assert_int_eq(mms_replay_follow_refresh(r), 1);
	expect_where_as_written(r);
	mms_replay_where(r, &w);
	ck_assert_uint_eq(w.mem[MMS_MEM_HOST].live_blocks, 2);
	ck_assert_uint_eq(w.live_bytes, 50);
	lb_chunk(b);
	lb_segment(b, 0, 17);
	lb_alloc(b, 18, 0, 0x4000, 40, 0);
	lb_free(b, 19, 0, 0x2000);
	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	ck_assert_int_eq(mms_replay_follow_refresh(r), 1);
	expect_where_as_written(r);
	mms_replay_where(r, &w);
	ck_assert_uint_eq(w.live_bytes, 70);
	mms_replay_close(r);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

/* A thread whose records come before what the replay applied: the look
 * says so and the replay goes no further; an indexed replay, or one of a
 * log not followed, is refused. */
START_TEST(test_replay_follow_late)
{
	struct lb *b = one_thread();
	mms_replay_options_t opt = { .forward_only = 1 };
	mms_log_info_t info;
	mms_replay_t *r;
	mms_log_t *log;

	lb_header(b)->flags &= ~(uint32_t)MMS_FLAG_COMPLETE;
	lb_alloc(b, 12, 0, 0x1000, 10, 0);
	lb_alloc(b, 20, 0, 0x2000, 20, 0);
	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	ck_assert_int_eq(mms_log_follow(LOG, &log, NULL), 0);
	ck_assert_int_eq(mms_replay_open_ex(log, &opt, &r), 0);
	mms_log_get_info(log, &info);
	ck_assert_int_eq(mms_replay_seek(r, info.events), 0);
	lb_chunk(b);
	lb_segment(b, 1, 15);
	lb_thread(b, 15, 1, 1001);
	lb_alloc(b, 16, 0, 0x3000, 30, 0);
	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	ck_assert_int_eq(mms_replay_follow_refresh(r), MMS_EORDER);
	ck_assert_int_eq(mms_replay_next(r, NULL), MMS_EORDER);
	ck_assert_int_eq(mms_replay_follow_refresh(r), MMS_EUSAGE);
	mms_replay_close(r);
	ck_assert_int_eq(mms_replay_open_ex(log, NULL, &r), 0);
	ck_assert_int_eq(mms_replay_follow_refresh(r), MMS_EUSAGE);
	mms_replay_close(r);
	mms_log_close(log);
	ck_assert_int_eq(mms_log_open(LOG, &log), 0);
	ck_assert_int_eq(mms_replay_open_ex(log, &opt, &r), 0);
	ck_assert_int_eq(mms_replay_follow_refresh(r), MMS_EUSAGE);
	mms_replay_close(r);
	mms_log_close(log);
	lb_destroy(b);
}
END_TEST

static Suite *reader_suite(void)
{
	Suite *s = suite_create("reader");
	TCase *tc = tcase_create("synthetic logs");

	scratch_add(tc);
	tcase_add_test(tc, test_order_merge);
	tcase_add_test(tc, test_order_span);
	tcase_add_test(tc, test_realloc_counting);
	tcase_add_test(tc, test_unmatched_and_double);
	tcase_add_test(tc, test_recent_frees);
	tcase_add_test(tc, test_mismatched_frees);
	tcase_add_test(tc, test_cut_log);
	tcase_add_test(tc, test_cut_stamp);
	tcase_add_test(tc, test_cut_step);
	tcase_add_test(tc, test_step_held);
	tcase_add_test(tc, test_step_held_mmap);
	tcase_add_test(tc, test_step_swept);
	tcase_add_test(tc, test_step_once);
	tcase_add_test(tc, test_inefficient_counter);
	tcase_add_test(tc, test_decompose_quiet);
	tcase_add_test(tc, test_step_cached);
	tcase_add_test(tc, test_bad_stack);
	tcase_add_test(tc, test_lost_events);
	tcase_add_test(tc, test_truncated_file);
	tcase_add_test(tc, test_gap);
	tcase_add_test(tc, test_full_chunk_lost);
	tcase_add_test(tc, test_corrupt_tag);
	tcase_add_test(tc, test_overlong_varint);
	tcase_add_test(tc, test_varint_widths);
	tcase_add_test(tc, test_bad_chunks);
	tcase_add_test(tc, test_order_violation);
	tcase_add_test(tc, test_bad_headers);
	tcase_add_test(tc, test_mmap_partial_munmap);
	tcase_add_test(tc, test_mmap_reserved);
	tcase_add_test(tc, test_pools_and_names);
	tcase_add_test(tc, test_steps);
	tcase_add_test(tc, test_collect_by_steps);
	tcase_add_test(tc, test_watch_sums);
	tcase_add_test(tc, test_free_stacks);
	tcase_add_test(tc, test_graft_stacks);
	tcase_add_test(tc, test_device_memory);
	tcase_add_test(tc, test_alloc_fail);
	tcase_add_test(tc, test_dev_alloc_fail);
	tcase_add_test(tc, test_device_vmm);
	tcase_add_test(tc, test_device_array);
	tcase_add_test(tc, test_time_conversion);
	tcase_add_test(tc, test_reach_late_blocks);
	tcase_add_test(tc, test_reach_lost_with);
	tcase_add_test(tc, test_follow_one_thread);
	tcase_add_test(tc, test_follow_two_threads);
	tcase_add_test(tc, test_follow_chunk_tail);
	tcase_add_test(tc, test_follow_late_thread);
	tcase_add_test(tc, test_follow_trimmed);
	tcase_add_test(tc, test_follow_end_damage);
#ifdef MMS_HAVE_TSC
	tcase_add_test(tc, test_follow_idle_cut);
#endif
	tcase_add_test(tc, test_replay_follow);
	tcase_add_test(tc, test_replay_follow_late);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(reader_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
