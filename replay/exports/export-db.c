/* SPDX-License-Identifier: MIT */
/* export-db.c: msMemScope's memscope_dump as an SQLite database, with
 * normalized tables beside it (blocks, stacks and frames, operator
 * launches, steps, threads) that doc/export.md describes. */
#define _GNU_SOURCE
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msmemscope/export.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "msmemscope/symbolize.h"
#include "export-int.h"
#include "log-int.h"
#include "map-int.h"
#include "outfile-int.h"
#include "pass-int.h"
#include "track-int.h"

#define DB_MAX_FRAMES 64

static const char db_schema[] =
	"PRAGMA journal_mode=OFF;"
	"PRAGMA synchronous=OFF;"
	"PRAGMA locking_mode=EXCLUSIVE;"
	"PRAGMA cache_size=-65536;"
	"PRAGMA temp_store=MEMORY;"
	"BEGIN;"
	"CREATE TABLE memscope_dump (\"ID\" INTEGER PRIMARY KEY, \"Event\" TEXT, \"Event Type\" TEXT,"
	" \"Name\" TEXT, \"Timestamp(ns)\" INTEGER, \"Process Id\" INTEGER, \"Thread Id\" INTEGER,"
	" \"Device Id\" TEXT, \"Ptr\" TEXT, \"Attr\" TEXT, \"Call Stack(Python)\" TEXT, \"Call Stack(C)\" TEXT);"
	"CREATE TABLE blocks (alloc_id INTEGER PRIMARY KEY, kind TEXT NOT NULL, fn TEXT, pool TEXT,"
	" addr INTEGER NOT NULL, size INTEGER NOT NULL, thread INTEGER, stack_id INTEGER,"
	" alloc_event INTEGER NOT NULL, free_event INTEGER, free_thread INTEGER, alloc_step INTEGER,"
	" op TEXT, op_launch INTEGER, owner TEXT);"
	"CREATE TABLE stack_frames (stack_id INTEGER NOT NULL, depth INTEGER NOT NULL, ip INTEGER NOT NULL,"
	" PRIMARY KEY (stack_id, depth)) WITHOUT ROWID;"
	"CREATE TABLE frames (ip INTEGER PRIMARY KEY, function TEXT, file TEXT, line INTEGER, module TEXT,"
	" module_offset INTEGER, inlined INTEGER NOT NULL, inlined_chain TEXT);"
	"CREATE TABLE launches (launch INTEGER PRIMARY KEY, name TEXT, thread INTEGER, begin_event INTEGER NOT NULL,"
	" end_event INTEGER, step INTEGER, allocs INTEGER, frees INTEGER, bytes_allocated INTEGER,"
	" bytes_freed INTEGER, delta_bytes INTEGER);"
	"CREATE TABLE steps (step INTEGER PRIMARY KEY, begin_event INTEGER, end_event INTEGER, events INTEGER,"
	" launches INTEGER, allocs INTEGER, frees INTEGER, bytes_allocated INTEGER, bytes_freed INTEGER,"
	" live_bytes_begin INTEGER, live_bytes_end INTEGER, peak_bytes INTEGER, peak_event INTEGER, recorded TEXT);"
	"CREATE TABLE threads (thread INTEGER PRIMARY KEY, tid INTEGER, name TEXT);"
	"CREATE TABLE log_info (key TEXT PRIMARY KEY, value);"
	"CREATE VIEW block_sites AS SELECT b.*, f.function, f.file, f.line, f.module FROM blocks b"
	" LEFT JOIN stack_frames s ON s.stack_id = b.stack_id AND s.depth = 0 LEFT JOIN frames f ON f.ip = s.ip;";

/* Built once the rows are in. Partial where most rows would hold NULL
 * (no stacks, no operators, no steps), and for the blocks still live. */
static const char db_indexes[] = "CREATE INDEX blocks_live ON blocks (size) WHERE free_event IS NULL;"
				 "CREATE INDEX blocks_stack ON blocks (stack_id) WHERE stack_id IS NOT NULL;"
				 "CREATE INDEX blocks_launch ON blocks (op_launch) WHERE op_launch IS NOT NULL;"
				 "CREATE INDEX blocks_step ON blocks (alloc_step) WHERE alloc_step IS NOT NULL;"
				 "CREATE INDEX stack_frames_ip ON stack_frames (ip);"
				 "CREATE INDEX launches_name ON launches (name);"
				 "CREATE INDEX launches_step ON launches (step);";

enum db_stmt {
	ST_DUMP,
	ST_BLOCK,
	ST_FREE,
	ST_LIVE,
	ST_STACK,
	ST_FRAME,
	ST_LAUNCH,
	ST_STEP,
	ST_THREAD,
	ST_INFO,
	ST_COUNT
};

static const char *const db_sql[ST_COUNT] = {
	[ST_DUMP] = "INSERT INTO memscope_dump VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
	[ST_BLOCK] = "INSERT INTO blocks VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[ST_FREE] = "UPDATE blocks SET free_event = ?, free_thread = ? WHERE alloc_id = ?",
	[ST_LIVE] = "UPDATE blocks SET free_event = NULL, free_thread = NULL WHERE alloc_id = ?",
	[ST_STACK] = "INSERT INTO stack_frames VALUES (?,?,?)",
	[ST_FRAME] = "INSERT INTO frames VALUES (?,?,?,?,?,?,?,?)",
	[ST_LAUNCH] = "INSERT INTO launches VALUES (?,?,?,?,?,?,?,?,?,?,?)",
	[ST_STEP] = "INSERT INTO steps VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[ST_THREAD] = "INSERT INTO threads VALUES (?,?,?)",
	[ST_INFO] = "INSERT INTO log_info VALUES (?,?)",
};

struct db {
	struct mms__xpass x; /* first: the subscriber */
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
	struct mms__map stacks; /* stack ids written */
	struct mms__map ips;    /* frames written */
	struct mms__xbuf chain; /* scratch for inlined_chain */
	/* Blocks and launches made before the first step mark, whose step
	 * is written NULL and becomes 1 if the log turns out to count STEP
	 * events: alloc_id and launch numbers up to these. */
	uint64_t pending_blocks, pending_launches;
	int err; /* the first errno-style failure outside SQLite */
};

/* An SQLite failure as a negative errno. */
static int db_error(struct db *d, int rc)
{
	int e = d->db ? sqlite3_system_errno(d->db) : 0;

	switch (rc & 0xff) {
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_INTERRUPT:
		return -ECANCELED;
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
		return e > 0 ? -e : -EIO;
	default:
		return -EIO;
	}
}

static int run(struct db *d, enum db_stmt i)
{
	sqlite3_stmt *s = d->st[i];
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	return rc == SQLITE_DONE ? 0 : db_error(d, rc);
}

static void bind_u64(sqlite3_stmt *s, int col, uint64_t v)
{
	sqlite3_bind_int64(s, col, (sqlite3_int64)v);
}

/* A value where 0 or UINT64_MAX means "none": NULL. */
static void bind_opt(sqlite3_stmt *s, int col, uint64_t v)
{
	if (v == 0 || v == UINT64_MAX)
		sqlite3_bind_null(s, col);
	else
		bind_u64(s, col, v);
}

static void bind_text(sqlite3_stmt *s, int col, const char *t)
{
	if (t)
		sqlite3_bind_text(s, col, t, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, col);
}

/* A step, NULL when none or not known yet (then *pending takes id). */
static void bind_step(sqlite3_stmt *s, int col, uint64_t step, uint64_t *pending, uint64_t id)
{
	if (step == MMS__STEP_PENDING && id > *pending)
		*pending = id;
	bind_opt(s, col, step == MMS__STEP_PENDING ? 0 : step);
}

/* --- rows ------------------------------------------------------------------------- */

static int put_dump(struct db *d, const struct mms__xrow *row)
{
	sqlite3_stmt *s = d->st[ST_DUMP];

	bind_u64(s, 1, row->id);
	sqlite3_bind_text(s, 2, row->event, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, row->type, -1, SQLITE_STATIC);
	if (row->name)
		sqlite3_bind_text(s, 4, row->name, (int)row->name_len, SQLITE_STATIC);
	else
		sqlite3_bind_text(s, 4, "N/A", 3, SQLITE_STATIC);
	bind_u64(s, 5, row->time_ns);
	bind_u64(s, 6, row->pid);
	bind_u64(s, 7, row->tid);
	sqlite3_bind_text(s, 8, row->device, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 9, row->ptr, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 10, row->attr, (int)row->attr_len, SQLITE_STATIC);
	sqlite3_bind_text(s, 11, row->pystack, (int)row->pystack_len, SQLITE_STATIC);
	sqlite3_bind_text(s, 12, row->cstack, (int)row->cstack_len, SQLITE_STATIC);
	return run(d, ST_DUMP);
}

static const char *alloc_fn_name(const mms_block_t *b)
{
	if (b->mem == MMS_MEM_MMAP)
		return "mmap";
	if (b->mem == MMS_MEM_DEVICE)
		return mms_device_sub_name(b->fn);
	return b->mem == MMS_MEM_HOST ? mms_alloc_func_name(b->fn) : NULL;
}

/* One frame row: the ip's innermost (source) function, file and line, its
 * module, and the inlined chain when the ip expands to several frames. */
static int put_frame(struct db *d, uint64_t ip)
{
	sqlite3_stmt *s = d->st[ST_FRAME];
	mms_frame_t f[DB_MAX_FRAMES];
	mms_module_t m;
	int n = 0, i, len, rc;
	size_t k, nmods;

	bind_u64(s, 1, ip);
	for (i = 2; i <= 8; i++)
		sqlite3_bind_null(s, i);
	sqlite3_bind_int(s, 7, 0);
	if (d->x.sym) {
		n = mms_symbolize(d->x.sym, ip, f, DB_MAX_FRAMES);
		if (n < 0)
			return n;
	}
	if (n > 0) {
		bind_text(s, 2, f[0].function);
		bind_text(s, 3, f[0].file);
		if (f[0].line)
			sqlite3_bind_int64(s, 4, f[0].line);
		bind_text(s, 5, f[0].module);
		if (f[0].module)
			bind_u64(s, 6, f[0].module_offset);
		sqlite3_bind_int(s, 7, n - 1);
	} else {
		/* No symbolizer: the module from the log's map still helps. */
		nmods = (size_t)mms_log_module(d->x.log, 0, NULL);
		for (k = 0; k < nmods; k++) {
			if (mms_log_module(d->x.log, k, &m) == 0 && ip >= m.lo && ip < m.hi) {
				bind_text(s, 5, m.path);
				bind_u64(s, 6, ip - m.base);
				break;
			}
		}
	}
	d->chain.len = 0;
	for (i = 0; n > 1 && i < n; i++) {
		len = mms_frame_format(&f[i], NULL, 0);
		if (len < 0 || mms__xbuf_reserve(&d->chain, (size_t)len + 2))
			return -ENOMEM;
		if (i)
			d->chain.p[d->chain.len++] = '|';
		mms_frame_format(&f[i], d->chain.p + d->chain.len, (size_t)len + 1);
		d->chain.len += (size_t)len;
	}
	if (d->chain.len)
		sqlite3_bind_text(s, 8, d->chain.p, (int)d->chain.len, SQLITE_STATIC);
	rc = run(d, ST_FRAME);
	return rc;
}

/* Writes stack id's frames, once per stack and once per ip. */
static int put_stack(struct db *d, uint32_t id)
{
	const uint64_t *ips;
	int depth, i, isnew, rc;
	uint64_t ip;

	if (!id)
		return 0;
	if (!mms__map_put(&d->stacks, id, &isnew))
		return -ENOMEM;
	if (!isnew)
		return 0;
	depth = mms__xpass_ips(&d->x, id, &ips);
	if (depth < 0)
		return depth;
	for (i = 0; i < depth; i++) {
		ip = ips[i];
		bind_u64(d->st[ST_STACK], 1, id);
		sqlite3_bind_int(d->st[ST_STACK], 2, i);
		bind_u64(d->st[ST_STACK], 3, ip);
		rc = run(d, ST_STACK);
		if (rc)
			return rc;
		if (!mms__map_put(&d->ips, ip, &isnew))
			return -ENOMEM;
		if (isnew) {
			/* put_frame() may symbolize, which leaves ips alone. */
			rc = put_frame(d, ip);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* A block's row. Blocks of the malloc family and pools are written once
 * they are freed (free_event set) or at the end (still live), so each row
 * is written once; a mapping, which munmap may cut in pieces, is written
 * at its MALLOC and updated by each munmap (put_unmap()). */
static int put_block(struct db *d, const mms_block_t *b, uint64_t free_event, uint32_t free_thread)
{
	sqlite3_stmt *s = d->st[ST_BLOCK];
	int rc;

	bind_u64(s, 1, b->alloc_id);
	sqlite3_bind_text(s, 2, mms_mem_kind_name(b->mem) ? mms_mem_kind_name(b->mem) : "HOST", -1, SQLITE_STATIC);
	bind_text(s, 3, alloc_fn_name(b));
	bind_text(s, 4, b->mem == MMS_MEM_POOL || b->mem == MMS_MEM_DEVICE ? (b->pool ? b->pool : "") : NULL);
	bind_u64(s, 5, b->addr);
	bind_u64(s, 6, b->size);
	bind_u64(s, 7, mms__xpass_tid(&d->x, b->thread));
	bind_opt(s, 8, b->stack);
	bind_u64(s, 9, b->alloc_event);
	if (free_event == UINT64_MAX) {
		sqlite3_bind_null(s, 10);
		sqlite3_bind_null(s, 11);
	} else {
		bind_u64(s, 10, free_event);
		bind_u64(s, 11, mms__xpass_tid(&d->x, free_thread));
	}
	bind_step(s, 12, mms__xpass_step_of(&d->x, b->alloc_event), &d->pending_blocks, b->alloc_id);
	bind_text(s, 13, b->op);
	bind_opt(s, 14, b->op_launch);
	bind_text(s, 15, b->owner);
	rc = run(d, ST_BLOCK);
	return rc ? rc : put_stack(d, b->stack);
}

static int put_unmap(struct db *d)
{
	sqlite3_stmt *s = d->st[ST_FREE];

	bind_u64(s, 1, d->x.ev.id);
	bind_u64(s, 2, mms__xpass_tid(&d->x, d->x.ev.thread));
	bind_u64(s, 3, d->x.blk.alloc_id);
	return run(d, ST_FREE);
}

static int put_launch(struct db *d, const struct mms__tlaunch *l)
{
	sqlite3_stmt *s = d->st[ST_LAUNCH];

	bind_u64(s, 1, l->launch);
	bind_text(s, 2, l->name);
	bind_u64(s, 3, mms__xpass_tid(&d->x, l->thread));
	bind_u64(s, 4, l->begin_event);
	if (l->end_event == UINT64_MAX)
		sqlite3_bind_null(s, 5);
	else
		bind_u64(s, 5, l->end_event);
	bind_step(s, 6, l->step, &d->pending_launches, l->launch);
	bind_u64(s, 7, l->m.allocs);
	bind_u64(s, 8, l->m.frees);
	bind_u64(s, 9, l->m.bytes_allocated);
	bind_u64(s, 10, l->m.bytes_freed);
	sqlite3_bind_int64(s, 11, (sqlite3_int64)(l->m.bytes_allocated - l->m.bytes_freed));
	return run(d, ST_LAUNCH);
}

/* Everything one event adds to the database. */
static int put_event(struct db *d)
{
	struct mms__xpass *x = &d->x;
	struct mms__xrow row;
	int rc;

	rc = mms__xpass_row(x, &row);
	if (rc == 1) {
		x->res->rows++;
		rc = put_dump(d, &row);
	}
	if (rc)
		return rc;
	if (x->track->has_ended)
		return put_launch(d, &x->track->ended);
	if (!x->has_blk)
		return 0;
	if (x->ev.kind == MMS_EV_MALLOC)
		return x->blk.mem == MMS_MEM_MMAP ? put_block(d, &x->blk, UINT64_MAX, 0) : 0;
	if (x->ev.kind == MMS_EV_FREE)
		return x->blk.mem == MMS_MEM_MMAP ? put_unmap(d) : put_block(d, &x->blk, x->ev.id, x->ev.thread);
	return 0;
}

/* --- after the pass -------------------------------------------------------------- */

/* Blocks live at the end: written now, with no free_event; a mapping
 * partly unmapped got one from the munmap, which a live piece undoes. */
static int put_live(const mms_block_t *b, void *ctx)
{
	struct db *d = ctx;

	if (b->mem != MMS_MEM_MMAP) {
		d->err = put_block(d, b, UINT64_MAX, 0);
	} else {
		bind_u64(d->st[ST_LIVE], 1, b->alloc_id);
		d->err = run(d, ST_LIVE);
	}
	return d->err != 0;
}

static int put_info(struct db *d, const char *key, const char *text, uint64_t v)
{
	sqlite3_stmt *s = d->st[ST_INFO];

	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	if (text)
		sqlite3_bind_text(s, 2, text, -1, SQLITE_STATIC);
	else
		bind_u64(s, 2, v);
	return run(d, ST_INFO);
}

static int pending_steps(struct db *d, const char *sql, uint64_t upto)
{
	sqlite3_stmt *s;
	int rc;

	rc = sqlite3_prepare_v2(d->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return db_error(d, rc);
	bind_u64(s, 1, upto);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : db_error(d, rc);
}

static int put_tail(struct db *d)
{
	static const char *const step_kinds[] = { "none", "step", "mstx" };
	struct mms__xpass *x = &d->x;
	const mms_log_info_t *info = &x->info;
	const struct mms__track *tr = x->track;
	const struct mms__tstep *st;
	const struct mms__thread *t;
	sqlite3_stmt *s;
	size_t i, j;
	int rc = 0;

	/* Launches that never ended, innermost last on each thread. */
	for (i = 0; i < tr->nthreads && !rc; i++)
		for (j = 0; j < tr->threads[i].n && !rc; j++)
			rc = put_launch(d, &tr->threads[i].ops[j]);
	if (!rc && mms__xpass_each_live(x, put_live, d))
		rc = d->err ? d->err : -EIO;
	s = d->st[ST_STEP];
	for (i = 0; i < tr->nsteps && !rc; i++) {
		st = &tr->steps[i];
		bind_u64(s, 1, i + 1);
		bind_u64(s, 2, st->begin);
		if (st->end > st->begin)
			bind_u64(s, 3, st->end - 1);
		else
			sqlite3_bind_null(s, 3);
		bind_u64(s, 4, st->events);
		bind_u64(s, 5, st->launches);
		bind_u64(s, 6, st->m.allocs);
		bind_u64(s, 7, st->m.frees);
		bind_u64(s, 8, st->m.bytes_allocated);
		bind_u64(s, 9, st->m.bytes_freed);
		bind_u64(s, 10, st->live_begin);
		bind_u64(s, 11, st->live_end);
		bind_u64(s, 12, st->m.peak_bytes);
		bind_u64(s, 13, st->m.peak_event);
		sqlite3_bind_text(s, 14, mms_step_recorded_name(mms__collect_recorded(st->collect)), -1, SQLITE_STATIC);
		rc = run(d, ST_STEP);
	}
	s = d->st[ST_THREAD];
	for (i = 0; i < x->log->nthreads && !rc; i++) {
		t = &x->log->threads[i];
		bind_u64(s, 1, i); /* the thread number events carry */
		bind_u64(s, 2, t->tid);
		bind_text(s, 3, mms__log_string(x->log, t->name_id));
		rc = run(d, ST_THREAD);
	}
	if (!rc && tr->step_kind == 1 && (d->pending_blocks || d->pending_launches)) {
		/* Rows made before the first STEP event are in step 1. */
		rc = pending_steps(d, "UPDATE blocks SET alloc_step = 1 WHERE alloc_id <= ?", d->pending_blocks);
		if (!rc)
			rc = pending_steps(d, "UPDATE launches SET step = 1 WHERE launch <= ?", d->pending_launches);
	}
	if (!rc)
		rc = put_info(d, "pid", NULL, info->pid);
	if (!rc)
		rc = put_info(d, "ppid", NULL, info->ppid);
	if (!rc)
		rc = put_info(d, "exe", info->exe, 0);
	if (!rc)
		rc = put_info(d, "start_realtime_ns", NULL, info->start_realtime_ns);
	if (!rc)
		rc = put_info(d, "events", NULL, x->st->pos);
	if (!rc)
		rc = put_info(d, "call_stack_depth", NULL, info->call_stack_depth);
	if (!rc)
		rc = put_info(d, "complete", NULL, (uint64_t)info->complete);
	if (!rc)
		rc = put_info(d, "step_marks", step_kinds[tr->step_kind], 0);
	return rc;
}

/* --- the export ------------------------------------------------------------------- */

static int db_open(struct db *d, const char *path)
{
	/* One thread uses the connection: no mutexes. */
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, rc, i;

#ifdef SQLITE_OPEN_NOFOLLOW
	flags |= SQLITE_OPEN_NOFOLLOW;
#endif
	rc = sqlite3_open_v2(path, &d->db, flags, NULL);
	if (rc != SQLITE_OK)
		return db_error(d, rc);
	rc = sqlite3_exec(d->db, db_schema, NULL, NULL, NULL);
	for (i = 0; i < ST_COUNT && rc == SQLITE_OK; i++)
		rc = sqlite3_prepare_v3(d->db, db_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &d->st[i], NULL);
	if (rc != SQLITE_OK)
		return db_error(d, rc);
	/* The same in every row. */
	sqlite3_bind_text(d->st[ST_DUMP], 11, "", 0, SQLITE_STATIC);
	return 0;
}

static void db_close(struct db *d)
{
	int i;

	for (i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(d->st[i]);
	sqlite3_close(d->db);
	d->db = NULL;
}

static int db_begin(struct mms__sub *sub, struct mms_pass *p)
{
	struct db *d = (struct db *)sub;

	mms__xpass_begin(&d->x, p);
	/* Created by the pass, so mode, O_EXCL and O_NOFOLLOW are ours;
	 * SQLite takes the empty file as an empty database. */
	close(d->x.fd);
	d->x.fd = -1;
	return db_open(d, d->x.f.tmp);
}

static int db_event(struct mms__sub *sub, struct mms_pass *p, const mms_event_t *ev)
{
	struct db *d = (struct db *)sub;

	(void)p;
	mms__xpass_event(&d->x, ev);
	return put_event(d);
}

static int db_end(struct mms__sub *sub, struct mms_pass *p)
{
	struct db *d = (struct db *)sub;
	int rc;

	(void)p;
	rc = put_tail(d);
	if (!rc && sqlite3_exec(d->db, db_indexes, NULL, NULL, NULL) != SQLITE_OK)
		rc = db_error(d, sqlite3_errcode(d->db));
	if (!rc && sqlite3_exec(d->db, "COMMIT;", NULL, NULL, NULL) != SQLITE_OK)
		rc = db_error(d, sqlite3_errcode(d->db));
	if (!rc) {
		for (int i = 0; i < ST_COUNT; i++) {
			sqlite3_finalize(d->st[i]);
			d->st[i] = NULL;
		}
		rc = sqlite3_close(d->db);
		rc = rc == SQLITE_OK ? 0 : db_error(d, rc);
		if (!rc)
			d->db = NULL;
	}
	if (!rc) {
		rc = mms__outfile_commit(&d->x.f);
		d->x.committed = !rc;
	}
	return rc;
}

static void db_drop(struct mms__sub *sub)
{
	struct db *d = (struct db *)sub;

	db_close(d);
	mms__xpass_free(&d->x);
	mms__map_free(&d->stacks);
	mms__map_free(&d->ips);
	mms__xbuf_free(&d->chain);
	free(d);
}

int mms__export_db_add(mms_pass_t *p, const mms_export_options_t *opt, mms_export_t *res)
{
	struct db *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return -ENOMEM;
	rc = mms__xpass_init(&d->x, p, opt, res);
	if (rc) {
		free(d);
		return rc;
	}
	mms__map_init(&d->stacks);
	mms__map_init(&d->ips);
	d->x.sub.name = "export db";
	d->x.sub.begin = db_begin;
	d->x.sub.event = db_event;
	d->x.sub.end = db_end;
	d->x.sub.drop = db_drop;
	return mms__pass_add(p, &d->x.sub);
}
