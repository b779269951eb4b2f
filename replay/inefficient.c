/* SPDX-License-Identifier: MIT */
/* inefficient.c: msMemScope's inefficient memory over operator-launch
 * indices: blocks allocated before memory was given back that could have
 * served them (early_allocation), freed after memory was allocated that
 * they could have served (late_deallocation), or left untouched for more
 * than a threshold of launches between two accesses (temporary_idleness).
 * One forward pass; memory follows the live blocks, plus the blocks kept
 * for the report (opt->keep) and, for the dump, four bits per allocation. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "replay-int.h"

#define IDLE_THRESHOLD_DEFAULT 3000

/* A live block as the rules follow it. */
struct iblk {
	mms_inefficient_block_t r; /* the block and what was found, as reported */
	uint64_t last_access_op;   /* 0: never accessed */
	int last_was_access;       /* the block's last event was an access */
};

/* An operator running on a thread, and what it did to memory. */
struct iframe {
	uint64_t op;
	int allocated, freed;
};

struct ithread {
	struct iframe *f;
	size_t n, cap;
};

struct ipass {
	const mms_inefficient_options_t *o;
	uint64_t threshold;
	uint64_t ops;              /* the counter: launches and lone memory events */
	uint64_t last_malloc_op, last_free_op;
	struct ithread *threads;
	size_t nthreads;
	struct mms__map live;      /* alloc_id -> slot + 1 */
	struct iblk *blks;         /* slots; free ones chained through r.block.addr */
	size_t nblks, blks_cap;
	uint64_t free_slot;        /* head of the free chain + 1 */
	mms_inefficient_t *res;
	size_t res_cap;
	size_t tags_cap;
};

MMS__EXPORT const char *mms_inefficient_type_name(unsigned type)
{
	switch (type) {
	case MMS_INEFF_EARLY_ALLOCATION:
		return "early_allocation";
	case MMS_INEFF_LATE_DEALLOCATION:
		return "late_deallocation";
	case MMS_INEFF_TEMPORARY_IDLENESS:
		return "temporary_idleness";
	default:
		return NULL;
	}
}

static struct ithread *thread_of(struct ipass *p, uint32_t thread)
{
	struct ithread *t;
	size_t n;

	if (thread < p->nthreads)
		return &p->threads[thread];
	n = p->nthreads ? p->nthreads : 8;
	while (n <= thread)
		n *= 2;
	t = realloc(p->threads, n * sizeof(*t));
	if (!t)
		return NULL;
	memset(t + p->nthreads, 0, (n - p->nthreads) * sizeof(*t));
	p->threads = t;
	p->nthreads = n;
	return &t[thread];
}

/* Orders kept blocks: larger first, then by allocation. */
static int better(const mms_inefficient_block_t *x, const mms_inefficient_block_t *y)
{
	if (x->block.size != y->block.size)
		return x->block.size > y->block.size;
	return x->block.alloc_id < y->block.alloc_id;
}

/* Restores the heap of kept blocks (the worst at the root) below i. */
static void sift_down(mms_inefficient_block_t *h, size_t n, size_t i)
{
	mms_inefficient_block_t tmp;
	size_t c;

	for (; (c = 2 * i + 1) < n; i = c) {
		if (c + 1 < n && better(&h[c], &h[c + 1]))
			c++;
		if (!better(&h[i], &h[c]))
			break;
		tmp = h[i];
		h[i] = h[c];
		h[c] = tmp;
	}
}

static void sift_up(mms_inefficient_block_t *h, size_t i)
{
	mms_inefficient_block_t tmp;

	for (; i && better(&h[(i - 1) / 2], &h[i]); i = (i - 1) / 2) {
		tmp = h[i];
		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = tmp;
	}
}

/* Sets the types of allocation id in the tags: four bits each. */
static int tag_set(struct ipass *p, uint64_t id, unsigned types)
{
	mms_inefficient_t *res = p->res;
	size_t need = (size_t)(id / 2 + 1), cap;
	uint8_t *t;

	if (need > p->tags_cap) {
		cap = p->tags_cap ? p->tags_cap : 4096;
		while (cap < need)
			cap *= 2;
		t = realloc(res->tags_, cap);
		if (!t)
			return -ENOMEM;
		memset(t + p->tags_cap, 0, cap - p->tags_cap);
		res->tags_ = t;
		p->tags_cap = cap;
	}
	res->tags_[id / 2] |= (uint8_t)(types << (id % 2 * 4));
	if (need > res->ntags_)
		res->ntags_ = need;
	return 0;
}

/* Counts a flagged block, and keeps it when it is among the largest. */
static int keep(struct ipass *p, const struct iblk *b)
{
	mms_inefficient_t *res = p->res;
	size_t max = p->o->keep;
	unsigned i;

	if (!b->r.types)
		return 0;
	res->flagged++;
	for (i = 0; i < MMS_INEFF_TYPES; i++) {
		if (b->r.types & 1u << i) {
			res->count[i]++;
			res->bytes[i] += b->r.block.size;
		}
	}
	if (p->o->tags && tag_set(p, b->r.block.alloc_id, b->r.types))
		return -ENOMEM;
	if (max && res->n == max) {
		/* Full: replace the worst kept block if this one is better. */
		if (better(&b->r, &res->blocks[0])) {
			res->blocks[0] = b->r;
			sift_down(res->blocks, res->n, 0);
		}
		return 0;
	}
	if (mms__grow(&res->blocks, &p->res_cap, res->n, sizeof(*res->blocks)))
		return -ENOMEM;
	res->blocks[res->n++] = b->r;
	if (max)
		sift_up(res->blocks, res->n - 1);
	return 0;
}

static struct iblk *blk_get(struct ipass *p, uint64_t alloc_id)
{
	uint64_t *v = mms__map_get(&p->live, alloc_id);

	return v ? &p->blks[*v - 1] : NULL;
}

static int blk_new(struct ipass *p, const mms_block_t *b, uint64_t op)
{
	struct iblk *n;
	uint64_t *v, slot;
	int isnew;

	if (p->free_slot) {
		slot = p->free_slot - 1;
		p->free_slot = p->blks[slot].r.block.addr;
	} else {
		if (mms__grow(&p->blks, &p->blks_cap, p->nblks, sizeof(*p->blks)))
			return -ENOMEM;
		slot = p->nblks++;
	}
	v = mms__map_put(&p->live, b->alloc_id, &isnew);
	if (!v) {
		p->blks[slot].r.block.addr = p->free_slot;
		p->free_slot = slot + 1;
		return -ENOMEM;
	}
	*v = slot + 1;
	n = &p->blks[slot];
	memset(n, 0, sizeof(*n));
	n->r.block = *b;
	n->r.malloc_op = op;
	return 0;
}

static void blk_release(struct ipass *p, struct iblk *b)
{
	uint64_t slot = (uint64_t)(b - p->blks);

	mms__map_del(&p->live, b->r.block.alloc_id, NULL);
	b->r.block.addr = p->free_slot;
	p->free_slot = slot + 1;
}

/* An access to block b in operator op. */
static void on_access(struct ipass *p, struct iblk *b, uint64_t op)
{
	mms_inefficient_block_t *r = &b->r;

	if (!r->first_access_op && op != r->malloc_op) {
		r->first_access_op = op;
		/* Memory given back between the allocation and the first use
		 * could have served this block. */
		if (r->malloc_op < p->last_free_op && p->last_free_op < op && !(r->types & MMS_INEFF_EARLY_ALLOCATION)) {
			r->types |= MMS_INEFF_EARLY_ALLOCATION;
			r->early_free_op = p->last_free_op;
		}
	}
	if (b->last_access_op && op - b->last_access_op > p->threshold && r->block.size >= p->o->min_size &&
	    !(r->types & MMS_INEFF_TEMPORARY_IDLENESS)) {
		r->types |= MMS_INEFF_TEMPORARY_IDLENESS;
		r->idle_from_op = b->last_access_op;
		r->idle_to_op = op;
	}
	b->last_access_op = op;
	b->last_was_access = 1;
}

/* The free of block b in operator op; freed is the block as the FREE
 * event left it. */
static int on_free(struct ipass *p, struct iblk *b, const mms_block_t *freed, uint64_t op)
{
	mms_inefficient_block_t *r = &b->r;
	int rc;

	/* The last use was in an earlier operator, and memory was allocated
	 * after it that this block could have served. */
	if (b->last_was_access && b->last_access_op != op && b->last_access_op < p->last_malloc_op &&
	    p->last_malloc_op < op) {
		r->types |= MMS_INEFF_LATE_DEALLOCATION;
		r->late_access_op = b->last_access_op;
		r->late_malloc_op = p->last_malloc_op;
	}
	r->free_op = op;
	r->block.free_event = freed->free_event;
	r->block.free_thread = freed->free_thread;
	rc = keep(p, b);
	blk_release(p, b);
	return rc;
}

/* Whether a FREE of [addr, addr + size) ends block b: a munmap may cut
 * only part of a mapping. */
static int frees_whole(const mms_event_t *ev, const struct iblk *b)
{
	const mms_block_t *k = &b->r.block;

	if (k->mem != MMS_MEM_MMAP)
		return 1;
	return ev->addr <= k->addr && ev->addr + ev->size >= k->addr + k->size;
}

static int on_event(struct ipass *p, mms_replay_t *r, const mms_event_t *ev)
{
	struct ithread *t;
	struct iframe *f;
	struct iblk *b;
	mms_block_t blk;
	uint64_t op;
	int rc = 0, lone;

	if (ev->kind == MMS_EV_OP_LAUNCH) {
		t = thread_of(p, ev->thread);
		if (!t)
			return -ENOMEM;
		if (ev->sub == 0) {
			if (mms__grow(&t->f, &t->cap, t->n, sizeof(*t->f)))
				return -ENOMEM;
			t->f[t->n].op = ++p->ops;
			t->f[t->n].allocated = t->f[t->n].freed = 0;
			t->n++;
		} else if (t->n) {
			f = &t->f[--t->n];
			if (f->allocated)
				p->last_malloc_op = f->op;
			if (f->freed)
				p->last_free_op = f->op;
		}
		return 0;
	}
	if (ev->kind != MMS_EV_MALLOC && ev->kind != MMS_EV_FREE && ev->kind != MMS_EV_ACCESS)
		return 0;
	if (mms_replay_event_block(r, &blk) != 1)
		return 0; /* free(NULL), an unknown address */
	t = thread_of(p, ev->thread);
	if (!t)
		return -ENOMEM;
	/* A memory event outside any operator is a step of the counter of
	 * its own, as if an operator had run just it. */
	lone = !t->n;
	op = lone ? ++p->ops : t->f[t->n - 1].op;
	f = lone ? NULL : &t->f[t->n - 1];
	if (ev->kind == MMS_EV_MALLOC) {
		rc = blk_new(p, &blk, op);
		if (f)
			f->allocated = 1;
		else
			p->last_malloc_op = op;
		return rc;
	}
	b = blk_get(p, blk.alloc_id);
	if (ev->kind == MMS_EV_ACCESS) {
		if (b)
			on_access(p, b, op);
		return 0;
	}
	if (b && frees_whole(ev, b)) {
		rc = on_free(p, b, &blk, op);
	} else if (b) {
		b->last_was_access = 0;
	}
	if (f)
		f->freed = 1;
	else
		p->last_free_op = op;
	return rc;
}

static int by_order(const void *a, const void *b)
{
	return better(a, b) ? -1 : better(b, a) ? 1 : 0;
}

static void pass_free(struct ipass *p)
{
	size_t i;

	for (i = 0; i < p->nthreads; i++)
		free(p->threads[i].f);
	free(p->threads);
	mms__map_free(&p->live);
	free(p->blks);
}

MMS__EXPORT int mms_inefficient_run(mms_log_t *log, const mms_inefficient_options_t *opt, mms_inefficient_t **out)
{
	static const mms_inefficient_options_t defaults = { 0 };
	mms_replay_options_t ro = { .forward_only = 1 };
	struct ipass p = { 0 };
	mms_event_t ev;
	mms_replay_t *r;
	size_t i;
	int rc;

	if (!out)
		return MMS_EUSAGE;
	*out = NULL;
	if (!log)
		return MMS_EUSAGE;
	p.o = opt ? opt : &defaults;
	p.threshold = p.o->idle_threshold ? p.o->idle_threshold : IDLE_THRESHOLD_DEFAULT;
	p.res = calloc(1, sizeof(*p.res));
	if (!p.res)
		return -ENOMEM;
	p.res->idle_threshold = p.threshold;
	p.res->min_size = p.o->min_size;
	mms__map_init(&p.live);
	rc = mms_replay_open_ex(log, &ro, &r);
	if (rc)
		goto fail;
	while ((rc = mms_replay_next(r, &ev)) == 1) {
		if (ev.kind == MMS_EV_ACCESS)
			p.res->accesses++;
		rc = on_event(&p, r, &ev);
		if (rc)
			break;
	}
	/* The blocks' owner strings live as long as the replay. */
	p.res->replay_ = r;
	/* A damaged log is judged up to where its readable events end. */
	if (rc && rc != MMS_ECORRUPT && rc != MMS_EORDER)
		goto fail;
	/* Blocks still live at the end keep what their accesses showed. */
	rc = 0;
	for (i = 0; !rc && i < p.nblks; i++) {
		const uint64_t *v = mms__map_get(&p.live, p.blks[i].r.block.alloc_id);

		if (v && *v == i + 1)
			rc = keep(&p, &p.blks[i]);
	}
	if (rc)
		goto fail;
	p.res->ops = p.ops;
	qsort(p.res->blocks, p.res->n, sizeof(*p.res->blocks), by_order);
	pass_free(&p);
	*out = p.res;
	return 0;
fail:
	pass_free(&p);
	mms_inefficient_free(p.res);
	return rc;
}

unsigned mms__inefficient_tags(const mms_inefficient_t *res, uint64_t alloc_id)
{
	if (!res->tags_ || alloc_id / 2 >= res->ntags_)
		return 0;
	return res->tags_[alloc_id / 2] >> (alloc_id % 2 * 4) & 15u;
}

MMS__EXPORT void mms_inefficient_free(mms_inefficient_t *res)
{
	if (!res)
		return;
	free(res->blocks);
	free(res->tags_);
	mms_replay_close(res->replay_);
	free(res);
}
