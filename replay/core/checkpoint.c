/* SPDX-License-Identifier: MIT */
/* checkpoint.c: saves a heap state and the iterator position that goes
 * with it as a compact byte string, and restores them, so a seek starts
 * from the nearest checkpoint instead of the beginning of the log. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "base-int.h"
#include "index-int.h"
#include "iter-int.h"
#include "map-int.h"
#include "state-int.h"

#define CKPT_MAGIC 0x4b43534dU /* "MSCK" */

/* --- writing ---------------------------------------------------------------- */

struct wbuf {
	uint8_t *p;
	size_t len, cap;
	int oom;
};

static void w_u(struct wbuf *w, uint64_t v)
{
	size_t ncap;
	uint8_t *np;

	if (w->oom)
		return;
	if (w->cap - w->len < 10) {
		ncap = w->cap ? w->cap * 2 : 4096;
		np = realloc(w->p, ncap);
		if (!np) {
			w->oom = 1;
			return;
		}
		w->p = np;
		w->cap = ncap;
	}
	w->len = (size_t)(mms_put_u(w->p + w->len, v) - w->p);
}

static void w_bytes(struct wbuf *w, const char *s, size_t n)
{
	size_t i;

	w_u(w, n);
	for (i = 0; i < n; i++)
		w_u(w, (uint8_t)s[i]); /* owner strings are short and ASCII */
}

/* A string pointer as a number: 0 NULL, 1 "" (a literal of state.c),
 * 2 + 2 * index for an owner string, 3 + 2 * offset for the log's arena. */
static uint64_t str_ref(const struct mms__state *st, const char *s)
{
	const char *arena = st->log->arena;

	if (!s)
		return 0;
	if (arena && s >= arena && s < arena + st->log->arena_len)
		return 3 + 2 * (uint64_t)(s - arena);
	if (!*s)
		return 1;
	return 2 + 2 * mms__owners_index(st->ow, s);
}

/* A block as the format has kept it since before origins: both step
 * counters (the one of the state's kind; the other 0: restoring reads the
 * one of its kind), the names and thread; then (index version 7) its
 * allocation time. */
static void w_blk(struct wbuf *w, const struct mms__state *st, const struct mms__blk *b)
{
	const struct mms__origin *o = mms__blk_origin(st, b);

	w_u(w, b->addr);
	w_u(w, b->size);
	w_u(w, b->alloc_id);
	w_u(w, b->alloc_event);
	w_u(w, b->op_launch);
	w_u(w, b->kernels);
	w_u(w, st->step_kind == 2 ? 0 : b->step);
	w_u(w, st->step_kind == 2 ? b->step : 0);
	w_u(w, str_ref(st, o->op));
	w_u(w, str_ref(st, o->owner));
	w_u(w, str_ref(st, o->pool));
	w_u(w, b->stack);
	w_u(w, o->thread);
	w_u(w, b->mem);
	w_u(w, b->fn);
	w_u(w, b->runtime);
	w_u(w, o->device);
	w_u(w, b->time_ns);
}

int mms__ckpt_save(const struct mms__state *st, const mms_iter_t *it, uint8_t **out, size_t *outlen)
{
	struct mms__src_pos *pos;
	struct wbuf w = { 0 };
	struct mms__map seen;
	uint64_t next_id, *v;
	size_t i, j, nlive = 0, nmaps = 0;
	int isnew;

	pos = calloc(st->log->nruns + 1, sizeof(*pos));
	if (!pos)
		return -ENOMEM;
	mms__iter_save(it, st->pos, &next_id, pos);
	w_u(&w, CKPT_MAGIC);
	w_u(&w, st->log->nruns);
	w_u(&w, next_id);
	for (i = 0; i < st->log->nruns; i++) {
		w_u(&w, pos[i].seg == UINT64_MAX ? 0 : pos[i].seg + 1);
		w_u(&w, pos[i].off);
		w_u(&w, pos[i].stamp);
		w_u(&w, pos[i].prev_addr);
	}
	free(pos);

	w_u(&w, st->pos);
	w_u(&w, (uint64_t)st->step_kind);
	w_u(&w, st->steps_seen);
	w_u(&w, st->ranges_seen);
	w_u(&w, st->step_range_id);
	w_u(&w, (uint64_t)st->in_range);
	w_u(&w, (uint64_t)st->after_step);
	w_u(&w, st->op_launches);
	w_u(&w, st->kernel_launches);
	w_u(&w, st->alloc_ids);
	for (i = 0; i < MMS_MEM_KIND_COUNT; i++) {
		w_u(&w, st->mem[i].allocs);
		w_u(&w, st->mem[i].frees);
		w_u(&w, st->mem[i].bytes_allocated);
		w_u(&w, st->mem[i].peak_bytes);
		w_u(&w, st->mem[i].live_blocks);
		w_u(&w, st->mem[i].live_bytes);
	}
	for (i = 0; i < MMS_EV_KIND_COUNT; i++)
		w_u(&w, st->by_kind[i]);
	w_u(&w, st->peak_total);
	w_u(&w, st->unmatched_frees);
	w_u(&w, st->double_allocs);
	w_u(&w, st->double_frees);
	w_u(&w, st->invalid_frees);
	w_u(&w, st->mismatched_frees);
	w_u(&w, st->unchecked_frees);
	w_u(&w, st->gap_event);
	w_u(&w, st->collect);
	w_u(&w, st->unrecorded_frees);
	w_u(&w, st->last_thread);
	/* The recent frees, oldest first. */
	w_u(&w, st->nfreed);
	for (i = 0; i < st->nfreed; i++) {
		const struct mms__freed *f = &st->freed[(st->freed_head + i) % MMS__RECENT_FREES];

		w_u(&w, f->addr);
		w_u(&w, f->size);
		w_u(&w, f->alloc_event);
		w_u(&w, f->free_event);
		w_u(&w, str_ref(st, f->pool));
		w_u(&w, f->stack);
		w_u(&w, f->free_stack);
		w_u(&w, f->mem);
	}

	w_u(&w, st->ow->n);
	for (i = 0; i < st->ow->n; i++)
		w_bytes(&w, st->ow->strs[i], strlen(st->ow->strs[i]));

	w_u(&w, st->nthreads);
	for (i = 0; i < st->nthreads; i++) {
		const struct mms__tstate *t = &st->threads[i];

		w_u(&w, t->nops);
		for (j = 0; j < t->nops; j++) {
			w_u(&w, str_ref(st, t->ops[j].name));
			w_u(&w, t->ops[j].launch);
		}
		w_u(&w, t->ntags);
		for (j = 0; j < t->ntags; j++)
			w_u(&w, str_ref(st, t->tags[j]));
		w_u(&w, str_ref(st, t->owner));
		w_u(&w, t->realloc_runtime);
	}

	w_u(&w, st->npools);
	for (i = 0; i < st->npools; i++)
		w_u(&w, str_ref(st, st->pools[i].name));

	/* Keyed blocks (HOST and POOL), then each mapping's block once, then
	 * the mapped ranges naming their block by its rank. */
	for (i = 0; i < st->nblks; i++)
		nlive += st->blks[i].live && st->blks[i].mem != MMS_MEM_MMAP;
	w_u(&w, nlive);
	for (i = 0; i < st->nblks; i++)
		if (st->blks[i].live && st->blks[i].mem != MMS_MEM_MMAP)
			w_blk(&w, st, &st->blks[i]);
	mms__map_init(&seen);
	for (i = 0; i < st->maps.n; i++) {
		v = mms__map_put(&seen, st->maps.iv[i].val, &isnew);
		if (!v) {
			w.oom = 1;
			break;
		}
		if (isnew)
			*v = nmaps++;
	}
	w_u(&w, nmaps);
	for (i = 0; i < st->nblks && !w.oom; i++) {
		v = mms__map_get(&seen, i);
		if (!v)
			continue;
		w_u(&w, *v);
		w_blk(&w, st, &st->blks[i]);
	}
	w_u(&w, st->maps.n);
	for (i = 0; i < st->maps.n && !w.oom; i++) {
		w_u(&w, st->maps.iv[i].lo);
		w_u(&w, st->maps.iv[i].hi - st->maps.iv[i].lo);
		w_u(&w, *mms__map_get(&seen, st->maps.iv[i].val));
	}
	mms__map_free(&seen);
	if (w.oom) {
		free(w.p);
		return -ENOMEM;
	}
	*out = w.p;
	*outlen = w.len;
	return 0;
}

/* --- reading ---------------------------------------------------------------- */

struct rbuf {
	const uint8_t *p, *end;
	int bad;
	const char **owners;      /* the checkpoint's owner strings, interned */
	size_t nowners;
};

static uint64_t r_u(struct rbuf *r)
{
	uint64_t v = 0;

	if (!r->bad && mms_get_u(&r->p, r->end, &v))
		r->bad = 1;
	return r->bad ? 0 : v;
}

/* A count of items each taking at least one byte: no more than remain. */
static uint64_t r_count(struct rbuf *r)
{
	uint64_t n = r_u(r);

	if (n > (uint64_t)(r->end - r->p))
		r->bad = 1;
	return r->bad ? 0 : n;
}

static const char *str_deref(struct rbuf *r, const struct mms__state *st, uint64_t ref)
{
	uint64_t i = (ref - 2) / 2;

	if (ref == 0)
		return NULL;
	if (ref == 1)
		return "";
	if (ref & 1) {
		i = (ref - 3) / 2;
		if (i < st->log->arena_len)
			return st->log->arena + i;
	} else if (i < r->nowners) {
		return r->owners[i];
	}
	r->bad = 1;
	return NULL;
}

/* Reads a block into b, its origin interned among st's. Returns 0 or
 * -ENOMEM (r->bad is set on a damaged one). */
static int r_blk(struct rbuf *r, struct mms__state *st, struct mms__blk *b)
{
	struct mms__origin o = { 0 };
	uint32_t steps, ranges;
	int64_t origin;

	memset(b, 0, sizeof(*b));
	b->addr = r_u(r);
	b->size = r_u(r);
	b->alloc_id = r_u(r);
	b->alloc_event = r_u(r);
	b->op_launch = r_u(r);
	b->kernels = r_u(r);
	steps = (uint32_t)r_u(r);
	ranges = (uint32_t)r_u(r);
	b->step = st->step_kind == 2 ? ranges : steps;
	o.op = str_deref(r, st, r_u(r));
	o.owner = str_deref(r, st, r_u(r));
	o.pool = str_deref(r, st, r_u(r));
	b->stack = (uint32_t)r_u(r);
	o.thread = (uint32_t)r_u(r);
	b->mem = (uint8_t)r_u(r);
	b->fn = (uint8_t)r_u(r);
	b->runtime = (uint8_t)r_u(r);
	o.device = (uint8_t)r_u(r);
	b->time_ns = r_u(r);
	b->live = 1;
	if (b->mem >= MMS_MEM_KIND_COUNT)
		r->bad = 1;
	if (r->bad)
		return 0;
	origin = mms__state_origin(st, &o);
	if (origin < 0)
		return -ENOMEM;
	b->origin = (uint32_t)origin;
	return 0;
}

/* Reads the state part of a checkpoint into st (initialized, empty). */
static int restore_state(struct rbuf *r, struct mms__state *st)
{
	struct mms__pool *pool;
	struct mms__blk b;
	uint64_t n, i, j, nmaps, lo, len, rank, pool_ref, *slots = NULL;
	int rc = -ENOMEM;
	char *s;

	st->pos = r_u(r);
	st->step_kind = (int)r_u(r);
	st->steps_seen = r_u(r);
	st->ranges_seen = r_u(r);
	st->step_range_id = r_u(r);
	st->in_range = (int)r_u(r);
	st->after_step = (int)r_u(r);
	st->op_launches = r_u(r);
	st->kernel_launches = r_u(r);
	st->alloc_ids = r_u(r);
	for (i = 0; i < MMS_MEM_KIND_COUNT; i++) {
		st->mem[i].allocs = r_u(r);
		st->mem[i].frees = r_u(r);
		st->mem[i].bytes_allocated = r_u(r);
		st->mem[i].peak_bytes = r_u(r);
		st->mem[i].live_blocks = r_u(r);
		st->mem[i].live_bytes = r_u(r);
	}
	for (i = 0; i < MMS_EV_KIND_COUNT; i++)
		st->by_kind[i] = r_u(r);
	st->peak_total = r_u(r);
	st->unmatched_frees = r_u(r);
	st->double_allocs = r_u(r);
	st->double_frees = r_u(r);
	st->invalid_frees = r_u(r);
	st->mismatched_frees = r_u(r);
	st->unchecked_frees = r_u(r);
	st->gap_event = r_u(r);
	st->collect = (unsigned)r_u(r);
	st->unrecorded_frees = r_u(r);
	st->last_thread = (uint32_t)r_u(r);
	n = r_count(r);
	if (n > MMS__RECENT_FREES)
		r->bad = 1;
	for (i = 0; i < n && !r->bad; i++) {
		struct mms__freed f;

		f.addr = r_u(r);
		f.size = r_u(r);
		f.alloc_event = r_u(r);
		f.free_event = r_u(r);
		f.pool = NULL;
		pool_ref = r_u(r);
		f.stack = (uint32_t)r_u(r);
		f.free_stack = (uint32_t)r_u(r);
		f.mem = (uint16_t)r_u(r);
		/* Pool names are in the log's arena (or ""): owner strings
		 * come after. */
		if (pool_ref >= 2 && !(pool_ref & 1))
			r->bad = 1;
		else
			f.pool = str_deref(r, st, pool_ref);
		if (!r->bad && mms__state_freed_add(st, &f))
			return -ENOMEM;
	}

	n = r_count(r);
	if (n && !(r->owners = calloc(n, sizeof(*r->owners))))
		return -ENOMEM;
	for (i = 0; i < n && !r->bad; i++) {
		len = r_count(r);
		s = malloc(len + 1);
		if (!s)
			return -ENOMEM;
		for (j = 0; j < len; j++)
			s[j] = (char)r_u(r);
		s[len] = '\0';
		r->owners[i] = mms__state_owner(st, s, len);
		free(s);
		if (!r->owners[i])
			return -ENOMEM;
		r->nowners++;
	}

	n = r_count(r);
	if (n > st->log->nthreads)
		r->bad = 1;
	if (n && !r->bad) {
		st->threads = calloc(n, sizeof(*st->threads));
		if (!st->threads)
			return -ENOMEM;
		st->nthreads = n;
	}
	for (i = 0; i < n && !r->bad; i++) {
		struct mms__tstate *t = &st->threads[i];

		t->nops = t->ops_cap = r_count(r);
		if (t->nops && !(t->ops = calloc(t->nops, sizeof(*t->ops))))
			return -ENOMEM;
		for (j = 0; j < t->nops; j++) {
			t->ops[j].name = str_deref(r, st, r_u(r));
			t->ops[j].launch = r_u(r);
		}
		t->ntags = t->tags_cap = r_count(r);
		if (t->ntags && !(t->tags = calloc(t->ntags, sizeof(*t->tags))))
			return -ENOMEM;
		for (j = 0; j < t->ntags; j++)
			t->tags[j] = str_deref(r, st, r_u(r));
		t->owner = str_deref(r, st, r_u(r));
		t->realloc_runtime = (uint8_t)r_u(r);
	}

	n = r_count(r);
	for (i = 0; i < n && !r->bad; i++) {
		if (mms__grow(&st->pools, &st->pools_cap, st->npools, sizeof(*st->pools)))
			return -ENOMEM;
		pool = &st->pools[st->npools++];
		mms__slotmap_init(&pool->live);
		pool->name = str_deref(r, st, r_u(r));
		if (!pool->name)
			r->bad = 1;
	}

	n = r_count(r);
	for (i = 0; i < n && !r->bad; i++) {
		struct mms__slotmap *m = &st->host;

		if (r_blk(r, st, &b))
			return -ENOMEM;
		if (r->bad)
			break;
		if (b.mem == MMS_MEM_DEVICE)
			m = &st->dev;
		if (b.mem == MMS_MEM_POOL) {
			const char *name = mms__blk_origin(st, &b)->pool;

			for (j = 0; j < st->npools && strcmp(st->pools[j].name, name ? name : ""); j++)
				;
			if (j == st->npools) {
				r->bad = 1;
				break;
			}
			m = &st->pools[j].live;
		}
		if (mms__state_blks_grow(st))
			return -ENOMEM;
		/* The record first: the table reads its address. */
		st->blks[st->nblks] = b;
		if (mms__state_slot_put(st, m, b.addr, st->nblks))
			return -ENOMEM;
		st->nblks++;
	}

	nmaps = r_count(r);
	if (nmaps && !(slots = calloc(nmaps, sizeof(*slots))))
		return -ENOMEM;
	for (i = 0; i < nmaps && !r->bad; i++) {
		rank = r_u(r);
		if (r_blk(r, st, &b))
			goto out;
		if (rank >= nmaps || b.mem != MMS_MEM_MMAP) {
			r->bad = 1;
			break;
		}
		if (mms__state_blks_grow(st))
			goto out;
		b.live = 0;
		slots[rank] = st->nblks;
		st->blks[st->nblks++] = b;
	}
	n = r_count(r);
	for (i = 0; i < n && !r->bad; i++) {
		lo = r_u(r);
		len = r_u(r);
		rank = r_u(r);
		if (rank >= nmaps || !len || lo + len < lo || (st->maps.n && st->maps.iv[st->maps.n - 1].hi > lo)) {
			r->bad = 1;
			break;
		}
		if (mms__grow(&st->maps.iv, &st->maps.cap, st->maps.n, sizeof(*st->maps.iv)))
			goto out;
		st->maps.iv[st->maps.n].lo = lo;
		st->maps.iv[st->maps.n].hi = lo + len;
		st->maps.iv[st->maps.n].val = slots[rank];
		st->maps.n++;
		/* The pieces of a mapping: its first makes it live, the
		 * second on are counted in mrefs. */
		if (st->blks[slots[rank]].live && mms__state_map_piece(st, slots[rank]))
			goto out;
		st->blks[slots[rank]].live = 1;
	}
	rc = 0;
out:
	free(slots);
	return rc;
}

int mms__ckpt_restore(mms_log_t *log, const uint8_t *buf, size_t len, struct mms__owners *ow, struct mms__state *st,
		      mms_iter_t **it)
{
	struct rbuf r = { buf, buf + len, 0, NULL, 0 };
	struct mms__src_pos *pos;
	uint64_t next_id, n, i, seg;
	int rc;

	*it = NULL;
	if (r_u(&r) != CKPT_MAGIC || r_u(&r) != log->nruns)
		return MMS_ECORRUPT;
	pos = calloc(log->nruns + 1, sizeof(*pos));
	if (!pos)
		return -ENOMEM;
	next_id = r_u(&r);
	n = log->nruns;
	for (i = 0; i < n; i++) {
		seg = r_u(&r);
		pos[i].seg = seg ? seg - 1 : UINT64_MAX;
		pos[i].off = r_u(&r);
		pos[i].stamp = r_u(&r);
		pos[i].prev_addr = r_u(&r);
	}
	mms__state_init(st, log);
	if (ow)
		st->ow = ow;
	rc = r.bad ? MMS_ECORRUPT : restore_state(&r, st);
	free(r.owners);
	/* Event ids past 48 bits: no log has so many (struct mms__blk). */
	if (!rc && (r.bad || st->pos != next_id || next_id >> 48))
		rc = MMS_ECORRUPT;
	if (!rc)
		rc = mms__iter_open_at(log, next_id, pos, it);
	free(pos);
	if (rc)
		mms__state_free(st);
	return rc;
}
