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

/* A live block as the rules follow it: what they need and what they
 * found; the rest of the block comes from the replay when it is kept. */
struct iblk {
	uint64_t alloc_id, addr, size; /* addr chains free slots */
	uint64_t malloc_op, first_access_op;
	uint64_t last_access_op; /* 0: never accessed */
	uint64_t early_free_op, late_access_op, late_malloc_op, idle_from_op, idle_to_op;
	uint16_t mem;
	uint8_t types;
	uint8_t last_was_access; /* the block's last event was an access */
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
	uint64_t ops; /* the counter: launches and lone memory events */
	uint64_t launches; /* operator launches */
	uint64_t last_malloc_op, last_free_op;
	struct ithread *threads;
	size_t nthreads;
	struct mms__map live; /* alloc_id -> slot + 1 */
	struct iblk *blks;    /* slots; free ones chained through addr */
	size_t nblks, blks_cap;
	uint64_t free_slot; /* head of the free chain + 1 */
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
	if (mms__table_fit(&p->threads, &p->nthreads, thread, sizeof(*p->threads)))
		return NULL;
	return &p->threads[thread];
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

/* Counts a flagged block, and keeps it when it is among the largest;
 * blk is the block as the replay gives it, free_op 0 while live. */
static int keep(struct ipass *p, const struct iblk *b, const mms_block_t *blk, uint64_t free_op)
{
	mms_inefficient_t *res = p->res;
	mms_inefficient_block_t r;
	size_t max = p->o->keep;
	unsigned i;

	if (!b->types)
		return 0;
	res->flagged++;
	for (i = 0; i < MMS_INEFF_TYPES; i++) {
		if (b->types & 1u << i) {
			res->count[i]++;
			res->bytes[i] += b->size;
		}
	}
	if (p->o->tags && tag_set(p, b->alloc_id, b->types))
		return -ENOMEM;
	memset(&r, 0, sizeof(r));
	r.block = *blk;
	/* A mapping's whole extent, as allocated (the replay gives the
	 * range a munmap removed, or a live piece). */
	r.block.addr = b->addr;
	r.block.size = b->size;
	r.types = b->types;
	r.malloc_op = b->malloc_op;
	r.first_access_op = b->first_access_op;
	r.free_op = free_op;
	r.early_free_op = b->early_free_op;
	r.late_access_op = b->late_access_op;
	r.late_malloc_op = b->late_malloc_op;
	r.idle_from_op = b->idle_from_op;
	r.idle_to_op = b->idle_to_op;
	if (max && res->n == max) {
		/* Full: replace the worst kept block if this one is better. */
		if (better(&r, &res->blocks[0])) {
			res->blocks[0] = r;
			sift_down(res->blocks, res->n, 0);
		}
		return 0;
	}
	if (mms__grow(&res->blocks, &p->res_cap, res->n, sizeof(*res->blocks)))
		return -ENOMEM;
	res->blocks[res->n++] = r;
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
		p->free_slot = p->blks[slot].addr;
	} else {
		if (mms__grow(&p->blks, &p->blks_cap, p->nblks, sizeof(*p->blks)))
			return -ENOMEM;
		slot = p->nblks++;
	}
	v = mms__map_put(&p->live, b->alloc_id, &isnew);
	if (!v) {
		p->blks[slot].addr = p->free_slot;
		p->free_slot = slot + 1;
		return -ENOMEM;
	}
	*v = slot + 1;
	n = &p->blks[slot];
	memset(n, 0, sizeof(*n));
	n->alloc_id = b->alloc_id;
	n->addr = b->addr;
	n->size = b->size;
	n->mem = b->mem;
	n->malloc_op = op;
	return 0;
}

static void blk_release(struct ipass *p, struct iblk *b)
{
	uint64_t slot = (uint64_t)(b - p->blks);

	mms__map_del(&p->live, b->alloc_id, NULL);
	b->addr = p->free_slot;
	p->free_slot = slot + 1;
}

/* An access to block b in operator op. */
static void on_access(struct ipass *p, struct iblk *b, uint64_t op)
{
	if (!b->first_access_op && op != b->malloc_op) {
		b->first_access_op = op;
		/* Memory given back between the allocation and the first use
		 * could have served this block. */
		if (b->malloc_op < p->last_free_op && p->last_free_op < op) {
			b->types |= MMS_INEFF_EARLY_ALLOCATION;
			b->early_free_op = p->last_free_op;
		}
	}
	if (b->last_access_op && op - b->last_access_op > p->threshold && b->size >= p->o->min_size &&
	    !(b->types & MMS_INEFF_TEMPORARY_IDLENESS)) {
		b->types |= MMS_INEFF_TEMPORARY_IDLENESS;
		b->idle_from_op = b->last_access_op;
		b->idle_to_op = op;
	}
	b->last_access_op = op;
	b->last_was_access = 1;
}

/* The free of block b in operator op; freed is the block as the FREE
 * event left it. */
static int on_free(struct ipass *p, struct iblk *b, const mms_block_t *freed, uint64_t op)
{
	int rc;

	/* The last use was in an earlier operator, and memory was allocated
	 * after it that this block could have served. */
	if (b->last_was_access && b->last_access_op != op && b->last_access_op < p->last_malloc_op &&
	    p->last_malloc_op < op) {
		b->types |= MMS_INEFF_LATE_DEALLOCATION;
		b->late_access_op = b->last_access_op;
		b->late_malloc_op = p->last_malloc_op;
	}
	rc = keep(p, b, freed, op);
	blk_release(p, b);
	return rc;
}

/* Whether a FREE of [addr, addr + size) ends block b: a munmap may cut
 * only part of a mapping. */
static int frees_whole(const mms_event_t *ev, const struct iblk *b)
{
	if (b->mem != MMS_MEM_MMAP)
		return 1;
	return ev->addr <= b->addr && ev->addr + ev->size >= b->addr + b->size;
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
			p->launches++;
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

/* A block live at the end (or a live piece of a mapping), once. */
static int keep_live(const mms_block_t *blk, void *ctx)
{
	struct ipass *p = ctx;
	struct iblk *b = blk_get(p, blk->alloc_id);
	int rc;

	if (!b)
		return 0;
	rc = keep(p, b, blk, 0);
	blk_release(p, b);
	return rc;
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
	rc = mms_replay_blocks(r, keep_live, &p);
	if (rc)
		goto fail;
	p.res->ops = p.ops;
	p.res->launches = p.launches;
	if (p.res->n)
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
