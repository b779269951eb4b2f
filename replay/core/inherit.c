/* SPDX-License-Identifier: MIT */
/* inherit.c: where a forked child's heap came from: opens the parent's log
 * that the child's log names, seeks its replay to the FORK event the parent
 * wrote just before the fork, and keeps the blocks live there (their
 * stacks copied into the child's stack table), which every replay of the
 * child then starts from. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/replay.h"
#include "base-int.h"
#include "index-int.h"
#include "log-int.h"
#include "map-int.h"
#include "sort-int.h"
#include "state-int.h"
#include "table-int.h"

/* Parents of parents are followed this far (a shell's subshells nest a
 * few levels); a longer chain leaves the blocks unknown. */
#define INHERIT_MAX_DEPTH 32

/* The first id given to a stack copied from the parent: above any id the
 * recorder hands out (at most 2^22 + 2^24: its two tables of frames). */
#define IMPORTED_STACK_BASE 0x80000000u

void mms__inherit_free(struct mms__inherit *inh)
{
	free(inh->parent_log);
	free(inh->why);
	mms__table_free(inh->blks, inh->cap * sizeof(*inh->blks));
	free(inh->strs);
	memset(inh, 0, sizeof(*inh));
}

/* The blocks are unknown: says why. Returns 0 or -ENOMEM. */
static int unknown(struct mms__inherit *inh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int unknown(struct mms__inherit *inh, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	free(inh->why);
	inh->why = malloc((size_t)n + 1);
	if (!inh->why)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(inh->why, (size_t)n + 1, fmt, ap);
	va_end(ap);
	inh->state = MMS_FORK_UNKNOWN;
	inh->n = 0;
	memset(inh->blocks, 0, sizeof(inh->blocks));
	memset(inh->bytes, 0, sizeof(inh->bytes));
	return 0;
}

/* A decimal META value. Returns 0, or -1 when absent or not a number. */
static int meta_u(const mms_log_t *log, const char *key, uint64_t *out)
{
	const char *v;
	char *end;

	if (mms_log_meta(log, key, &v, NULL) || *v < '0' || *v > '9')
		return -1;
	errno = 0;
	*out = strtoull(v, &end, 10);
	return *end || errno ? -1 : 0;
}

/* --- copying the parent's blocks ------------------------------------------- */

struct collect {
	mms_log_t *child;
	const mms_log_t *parent;
	const struct mms__state *pst;
	struct mms__inherit *inh;
	uint64_t *keys;            /* the parent's alloc_id of each block, for the order */
	size_t keys_cap;
	struct mms__map stacks;    /* parent stack id -> child stack id */
	struct mms__map names;     /* parent string pointer -> 1 + offset in strs */
	uint32_t next_id;
	uint32_t *chain;           /* scratch: a stack's nodes still to copy */
	size_t chain_cap;
};

/* A name copied once into inh->strs; *ref gets 1 + its offset (0: NULL). */
static int name_copy(struct collect *c, const char *s, size_t *ref)
{
	struct mms__inherit *inh = c->inh;
	uint64_t *v;
	size_t len, ncap;
	char *p;
	int isnew;

	*ref = 0;
	if (!s)
		return 0;
	v = mms__map_put(&c->names, (uint64_t)(uintptr_t)s, &isnew);
	if (!v)
		return -ENOMEM;
	if (!isnew) {
		*ref = (size_t)*v;
		return 0;
	}
	len = strlen(s) + 1;
	if (inh->strs_cap - inh->strs_len < len) {
		ncap = inh->strs_cap ? inh->strs_cap : 256;
		while (ncap - inh->strs_len < len)
			ncap *= 2;
		p = realloc(inh->strs, ncap);
		if (!p) {
			mms__map_del(&c->names, (uint64_t)(uintptr_t)s, NULL);
			return -ENOMEM;
		}
		inh->strs = p;
		inh->strs_cap = ncap;
	}
	memcpy(inh->strs + inh->strs_len, s, len);
	*v = *ref = inh->strs_len + 1;
	inh->strs_len += len;
	return 0;
}

/* Copies the parent's stack id (and the nodes it hangs from) into the
 * child's stack table under ids of its own; *out gets the child's id. A
 * node the parent's log does not define ends the copied stack there. A
 * graft node's Python frames (format 11) are copied too, with c->chain
 * from `at` on (grafted: inside those, where another graft is damage
 * and ends the copy). */
static int stack_copy_at(struct collect *c, uint32_t id, uint32_t *out, size_t at, int grafted)
{
	const uint64_t *v;
	int64_t slot;
	uint64_t parent = 0, ip;
	size_t n = 0;
	uint32_t cur = id;
	int isnew, rc;

	/* The nodes not yet copied, innermost first. */
	while (cur && !(v = mms__map_get(&c->stacks, cur))) {
		slot = mms__log_stack_ix(c->parent, cur);
		if (slot < 0 || n > c->parent->nstacks)
			break; /* undefined, or a cycle in a damaged log */
		if (grafted && mms_is_pygraft(c->parent->stack_nodes[slot][1]))
			break;
		if (mms__grow(&c->chain, &c->chain_cap, at + n, sizeof(*c->chain)))
			return -ENOMEM;
		c->chain[at + n++] = cur;
		cur = (uint32_t)c->parent->stack_nodes[slot][0];
	}
	if (cur && (v = mms__map_get(&c->stacks, cur)))
		parent = *v;
	while (n--) {
		uint64_t *nv;
		uint32_t py;

		slot = mms__log_stack_ix(c->parent, c->chain[at + n]);
		ip = c->parent->stack_nodes[slot][1];
		if (mms_is_pygraft(ip)) {
			rc = stack_copy_at(c, (uint32_t)ip, &py, at + n + 1, 1);
			if (rc)
				return rc;
			ip = MMS_PYGRAFT | py;
		}
		while (mms__log_stack_ix(c->child, c->next_id) >= 0)
			c->next_id++;
		rc = mms__log_stack_add(c->child, c->next_id, parent, ip);
		if (rc)
			return rc;
		nv = mms__map_put(&c->stacks, c->chain[at + n], &isnew);
		if (!nv)
			return -ENOMEM;
		*nv = parent = c->next_id++;
	}
	*out = (uint32_t)parent;
	return 0;
}

static int stack_copy(struct collect *c, uint32_t id, uint32_t *out)
{
	return stack_copy_at(c, id, out, 0, 0);
}

static int collect_blk(const struct mms__blk *b, void *ctx)
{
	struct collect *c = ctx;
	struct mms__inherit *inh = c->inh;
	const struct mms__inherit *pinh = &c->parent->inh;
	struct mms__iblk *ib;
	int rc;

	/* A child has none of its parent's CUDA memory: a context does not
	 * survive fork (and the driver keeps pinned memory out of the
	 * child's address space). */
	if (b->mem == MMS_MEM_DEVICE)
		return 0;
	if (mms__table_grow(&inh->blks, &inh->cap, inh->n, sizeof(*inh->blks)) ||
	    mms__table_grow(&c->keys, &c->keys_cap, inh->n, sizeof(*c->keys)))
		return -ENOMEM;
	ib = &inh->blks[inh->n];
	memset(ib, 0, sizeof(*ib));
	ib->addr = b->addr;
	ib->size = b->size;
	ib->mem = b->mem;
	ib->fn = b->fn;
	ib->runtime = b->runtime;
	/* A block the parent inherited itself keeps its first origin. */
	if (pinh->state == MMS_FORK_INHERITED && b->alloc_id && b->alloc_id <= pinh->n) {
		ib->origin_pid = pinh->blks[b->alloc_id - 1].origin_pid;
		ib->origin_event = pinh->blks[b->alloc_id - 1].origin_event;
	} else {
		ib->origin_pid = c->parent->hdr.pid;
		ib->origin_event = b->alloc_event;
	}
	rc = name_copy(c, mms__blk_origin(c->pst, b)->owner, &ib->owner);
	if (!rc)
		rc = name_copy(c, b->mem == MMS_MEM_POOL ? mms__blk_origin(c->pst, b)->pool : NULL, &ib->pool);
	if (!rc)
		rc = stack_copy(c, b->stack, &ib->stack);
	if (rc)
		return rc;
	c->keys[inh->n] = b->alloc_id;
	inh->blocks[b->mem]++;
	inh->bytes[b->mem] += b->size;
	inh->n++;
	return 0;
}

/* Puts the blocks in the order the parent allocated them: a radix sort of
 * (allocation id, index) pairs, then one pass that copies each block to
 * its place. The pieces of one mapping share an allocation id; they come
 * from mms__state_each() by address, an order ties by index keep. The
 * arrays are tables (table.c): fresh memory in huge pages, not in 4 KiB
 * page faults. */
static int sort_blocks(struct collect *c)
{
	struct mms__inherit *inh = c->inh;
	struct mms__iblk *sorted;
	struct mms__keyed *o;
	size_t i;

	if (inh->n < 2)
		return 0;
	o = mms__table_alloc(inh->n * sizeof(*o));
	sorted = mms__table_alloc(inh->n * sizeof(*sorted));
	if (!o || !sorted) {
		mms__table_free(o, inh->n * sizeof(*o));
		mms__table_free(sorted, inh->n * sizeof(*sorted));
		return -ENOMEM;
	}
	for (i = 0; i < inh->n; i++)
		o[i] = (struct mms__keyed){ c->keys[i], i };
	mms__sort_keyed(o, inh->n);
	for (i = 0; i < inh->n; i++) {
		if (i + 8 < inh->n)
			__builtin_prefetch(&inh->blks[o[i + 8].ix]);
		memcpy(&sorted[i], &inh->blks[o[i].ix], sizeof(*sorted));
	}
	mms__table_free(inh->blks, inh->cap * sizeof(*inh->blks));
	inh->blks = sorted;
	inh->cap = inh->n;
	mms__table_free(o, inh->n * sizeof(*o));
	return 0;
}

/* --- the parent -------------------------------------------------------------- */

/* Opens path as a log, if it is a regular file (a log names it: a FIFO
 * there must not block the reader). */
static int open_file(const char *path, mms_log_t **out)
{
	struct stat st;

	*out = NULL;
	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : MMS_EBADMAGIC;
	return mms__log_open_file(path, out, NULL);
}

/* Opens the parent's log at the path the child recorded, or, when nothing
 * is there (the logs were moved together), by its file name in the child
 * log's folder, which *found then names (the caller frees it; else NULL).
 * Returns what opening the recorded path returned, or 0. */
static int open_parent(const mms_log_t *log, const char *path, mms_log_t **out, char **found)
{
	const char *base = strrchr(path, '/'), *dir_end;
	char *alt;
	size_t n;
	int rc;

	*found = NULL;
	rc = open_file(path, out);
	if (rc != -ENOENT || !log->path || !base)
		return rc;
	dir_end = strrchr(log->path, '/');
	n = dir_end ? (size_t)(dir_end - log->path) : 1;
	alt = malloc(n + strlen(base) + 1);
	if (!alt)
		return -ENOMEM;
	memcpy(alt, dir_end ? log->path : ".", n);
	strcpy(alt + n, base);
	if (!open_file(alt, out)) {
		*found = alt;
		return 0;
	}
	free(alt);
	return rc;
}

/* Copies the blocks live in the parent's replay r into log->inh. */
static int collect_all(mms_log_t *log, const mms_log_t *parent, mms_replay_t *r)
{
	struct collect c = { .child = log, .parent = parent, .pst = mms__replay_state(r), .inh = &log->inh };
	int rc;

	mms__map_init(&c.stacks);
	mms__map_init(&c.names);
	c.next_id = IMPORTED_STACK_BASE;
	rc = mms__state_each(c.pst, collect_blk, &c);
	if (!rc)
		rc = sort_blocks(&c);
	mms__map_free(&c.stacks);
	mms__map_free(&c.names);
	mms__table_free(c.keys, c.keys_cap * sizeof(*c.keys));
	free(c.chain);
	return rc;
}

/* The parent's step counters at the fork (state pst), which the child's
 * continue: its steps are numbered as the parent's, where --steps and the
 * program number them (the recorder's count is copied by fork()). */
static void steps_at_fork(struct mms__inherit *inh, const struct mms__state *pst)
{
	inh->step_kind = pst->step_kind;
	inh->steps_seen = pst->steps_seen;
	inh->ranges_seen = pst->ranges_seen;
	inh->in_range = pst->in_range;
	inh->step_range_id = pst->step_range_id;
}

int mms__inherit_load(mms_log_t *log, unsigned depth)
{
	struct mms__inherit *inh = &log->inh;
	uint64_t number, stamp, id;
	mms_log_t *parent = NULL;
	mms_replay_t *r = NULL;
	const char *path;
	char *found;
	mms_event_t ev;
	int rc;

	if (!(log->hdr.flags & MMS_FLAG_FORKED) || inh->state)
		return 0;
	if (mms_log_meta(log, MMS_META_PARENT_LOG, &path, NULL) || !*path)
		return unknown(inh, "the log does not name its parent's log (%s)",
			       log->hdr.version < 3 ? "its recorder predates format version 3"
						    : "the parent's log path was not known");
	inh->parent_log = strdup(path);
	if (!inh->parent_log)
		return -ENOMEM;
	if (meta_u(log, MMS_META_PARENT_PID, &inh->parent_pid))
		inh->parent_pid = 0;
	if (meta_u(log, MMS_META_FORK_NUMBER, &number) || meta_u(log, MMS_META_FORK_STAMP, &stamp))
		return unknown(inh, "the parent wrote no fork event into its log %s (its recording had stopped)",
			       path);
	if (depth >= INHERIT_MAX_DEPTH)
		return unknown(inh, "parent log %s is more than %d forks up from the log opened", path,
			       INHERIT_MAX_DEPTH);
	rc = open_parent(log, path, &parent, &found);
	/* Found beside the log (the run folder copied or moved): that is
	 * the parent's log the replay reads, and names. */
	if (found) {
		free(inh->parent_log);
		inh->parent_log = found;
		path = found;
	}
	if (rc == -ENOENT)
		return unknown(inh, "parent log %s not found", path);
	if (rc)
		return rc == -ENOMEM ? rc : unknown(inh, "parent log %s cannot be read: %s", path, mms_strerror(rc));
	if (parent->dev == log->dev && parent->ino == log->ino) {
		rc = unknown(inh, "the log names itself as its parent's log");
		goto out;
	}
	if (inh->parent_pid && parent->hdr.pid != inh->parent_pid) {
		rc = unknown(inh, "parent log %s is pid %" PRIu64 "'s, not pid %" PRIu64 "'s (replaced since?)", path,
			     parent->hdr.pid, inh->parent_pid);
		goto out;
	}
	/* The parent's own replay starts from its parent's heap. */
	rc = mms__inherit_load(parent, depth + 1);
	if (rc)
		goto out;
	rc = mms_replay_open(parent, &r);
	if (rc) {
		if (rc != -ENOMEM)
			rc = unknown(inh, "parent log %s cannot be replayed: %s", path, mms_strerror(rc));
		goto out;
	}
	if (!mms__replay_fork_event(r, number, &id)) {
		rc = unknown(inh, "parent log %s holds no fork event %" PRIu64 " (it was cut or damaged before it)", path,
			     number);
		goto out;
	}
	rc = mms_replay_seek(r, id + 1);
	if (rc == -ENOMEM)
		goto out;
	if (rc || !mms_replay_last_event(r, &ev) || ev.kind != MMS_EV_SYSTEM || ev.sub != MMS_SYSTEM_FORK ||
	    ev.total != number || ev.stamp != stamp) {
		rc = unknown(inh, "parent log %s holds another fork event %" PRIu64 " than the one this process "
			     "came from (replaced since?)", path, number);
		goto out;
	}
	inh->fork_event = id;
	steps_at_fork(inh, mms__replay_state(r));
	rc = collect_all(log, parent, r);
	if (!rc)
		inh->state = MMS_FORK_INHERITED;
out:
	mms_replay_close(r);
	mms_log_close(parent);
	return rc;
}

int mms__inherit_step_begun(const mms_log_t *log, uint64_t step)
{
	int in_step;

	return log->inh.state == MMS_FORK_INHERITED && step && step <= mms__inherit_fork_step(&log->inh, &in_step);
}

MMS__EXPORT int mms_log_fork(const mms_log_t *log, mms_log_fork_t *out)
{
	const struct mms__inherit *inh;

	if (!log || !out)
		return MMS_EUSAGE;
	inh = &log->inh;
	memset(out, 0, sizeof(*out));
	out->state = inh->state;
	out->parent_pid = inh->parent_pid;
	out->parent_log = inh->parent_log;
	out->why = inh->why;
	if (inh->state == MMS_FORK_INHERITED) {
		out->fork_event = inh->fork_event;
		memcpy(out->blocks, inh->blocks, sizeof(out->blocks));
		memcpy(out->bytes, inh->bytes, sizeof(out->bytes));
		out->fork_step = mms__inherit_fork_step(inh, &out->fork_in_step);
	}
	return 0;
}
