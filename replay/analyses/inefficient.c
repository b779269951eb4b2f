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

#include "msmemscope/analysis.h"
#include "msmemscope/config.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "analysis-int.h"
#include "base-int.h"
#include "pass-int.h"
#include "state-int.h"
#include "table-int.h"

#define IDLE_THRESHOLD_DEFAULT 3000

/* A live block as the rules follow it: what they need and what they
 * found; the rest of the block comes from the replay when it is kept. */
struct iblk {
	uint64_t alloc_id, addr, size; /* alloc_id 0: not followed (freed) */
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

/* The result, with what it keeps besides: the types of every flagged
 * allocation (for the dump) and the owner strings its blocks name. */
struct ineff_res {
	mms_inefficient_t pub;
	uint8_t *tags; /* four bits per allocation id */
	uint64_t ntags;
	struct mms__strs *strs;
	const struct mms_pass *filling; /* the pass filling it, until it ended */
};

struct ipass {
	struct mms__sub sub;
	const struct mms__state *st;
	mms_inefficient_options_t o;
	uint64_t threshold;
	uint64_t ops; /* the counter: launches and lone memory events */
	uint64_t launches; /* operator launches */
	uint64_t last_malloc_op, last_free_op;
	struct ithread *threads;
	size_t nthreads;
	struct mms_pass *pass;
	/* The log can hold accesses (its recorder's events had access, or it
	 * does not say): each live block's struct iblk is kept, at off in
	 * the pass's data. Without accesses no block can be found
	 * inefficient, and only the counter is kept. */
	int blocks;
	size_t off;
	/* Without blocks, while no thread is in a launch, every memory event
	 * with a block is lone and only counts: not fed them (quiet), it
	 * counts them from the state (blk_events since quiet_base) at its
	 * next event and at the end. */
	uint64_t open; /* launches begun and not ended, on every thread */
	int quiet;
	uint64_t quiet_base;
	struct ineff_res *res;
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
	struct ineff_res *res = p->res;
	size_t need = (size_t)(id / 2 + 1), cap;
	uint8_t *t;

	if (need > p->tags_cap) {
		cap = p->tags_cap ? p->tags_cap : 4096;
		while (cap < need)
			cap *= 2;
		t = realloc(res->tags, cap);
		if (!t)
			return -ENOMEM;
		memset(t + p->tags_cap, 0, cap - p->tags_cap);
		res->tags = t;
		p->tags_cap = cap;
	}
	res->tags[id / 2] |= (uint8_t)(types << (id % 2 * 4));
	if (need > res->ntags)
		res->ntags = need;
	return 0;
}

/* Counts a flagged block, and keeps it when it is among the largest;
 * blk is the block as the replay gives it, free_op 0 while live. */
static int keep(struct ipass *p, const struct iblk *b, const mms_block_t *blk, uint64_t free_op)
{
	mms_inefficient_t *res = &p->res->pub;
	mms_inefficient_block_t r;
	size_t max = p->o.keep;
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
	if (p->o.tags && tag_set(p, b->alloc_id, b->types))
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

/* The followed block of live block k (a slot of the state or a copy of
 * one), or NULL. */
static struct iblk *blk_get(struct ipass *p, const struct mms__blk *k)
{
	struct iblk *b = mms__pass_data_of(p->pass, k, p->off);

	return b && b->alloc_id ? b : NULL;
}

/* The block the current event allocated, followed from now on. */
static void blk_new(struct ipass *p, const struct mms__blk *b, uint64_t op)
{
	struct iblk *n = mms__pass_data(p->pass, p->off);

	if (!n)
		return;
	n->alloc_id = b->alloc_id;
	n->addr = b->addr;
	n->size = b->size;
	n->mem = b->mem;
	n->malloc_op = op;
}

static void blk_release(struct iblk *b)
{
	b->alloc_id = 0;
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
	/* An access in an enclosing launch, after accesses in launches it
	 * ran (an operator's outputs written at its end), has a lower
	 * operator number than those: no idle time, and the later number
	 * stays the last use. */
	if (op <= b->last_access_op) {
		b->last_was_access = 1;
		return;
	}
	if (b->last_access_op && op - b->last_access_op > p->threshold && b->size >= p->o.min_size &&
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
static int on_free(struct ipass *p, struct iblk *b, const mms_event_t *ev, uint64_t op)
{
	mms_block_t freed;
	int rc = 0;

	/* The last use was in an earlier operator, and memory was allocated
	 * after it that this block could have served. */
	if (b->last_was_access && b->last_access_op != op && b->last_access_op < p->last_malloc_op &&
	    p->last_malloc_op < op) {
		b->types |= MMS_INEFF_LATE_DEALLOCATION;
		b->late_access_op = b->last_access_op;
		b->late_malloc_op = p->last_malloc_op;
	}
	/* The block as the FREE event left it, made only for one kept. */
	if (b->types) {
		mms__state_event_block(p->st, ev, &freed);
		rc = keep(p, b, &freed, op);
	}
	blk_release(b);
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

static int on_event_any(struct mms__sub *sub, struct mms_pass *pass, const mms_event_t *ev);

/* The lone memory events that went by while it was quiet: counted, and
 * quiet again (or fed again where a launch is open). */
static void quiet_count(struct ipass *p, struct mms_pass *pass)
{
	int quiet = !p->blocks && !p->open;

	if (p->quiet)
		p->ops += p->st->blk_events - p->quiet_base;
	p->quiet_base = p->st->blk_events;
	if (quiet != p->quiet) {
		p->quiet = quiet;
		mms__pass_quiet(pass, &p->sub, quiet ? ~0u : 0);
	}
}

/* A memory event where no block is kept (a log without accesses): only
 * the operator steps are counted, one more for an event outside any
 * operator (a thread not yet seen has none open), in a call that does
 * only that. */
static int on_event(struct mms__sub *sub, struct mms_pass *pass, const mms_event_t *ev)
{
	struct ipass *p = (struct ipass *)sub;

	if (p->blocks || (ev->kind != MMS_EV_MALLOC && ev->kind != MMS_EV_FREE))
		return on_event_any(sub, pass, ev);
	if (p->st->last_blk_valid && (ev->thread >= p->nthreads || !p->threads[ev->thread].n))
		p->ops++;
	return 0;
}

static __attribute__((noinline)) int on_event_any(struct mms__sub *sub, struct mms_pass *pass, const mms_event_t *ev)
{
	struct ipass *p = (struct ipass *)sub;
	const struct mms__blk *k = p->st->last_blk;
	struct ithread *t;
	struct iframe *f;
	struct iblk *b;
	uint64_t op;
	int rc = 0, lone;

	quiet_count(p, pass);
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
			p->open++;
		} else if (t->n) {
			f = &t->f[--t->n];
			if (f->allocated)
				p->last_malloc_op = f->op;
			if (f->freed)
				p->last_free_op = f->op;
			p->open--;
		}
		quiet_count(p, pass);
		return 0;
	}
	if (ev->kind == MMS_EV_ACCESS)
		p->res->pub.accesses++;
	if (!p->st->last_blk_valid)
		return 0; /* free(NULL), an unknown address */
	t = thread_of(p, ev->thread);
	if (!t)
		return -ENOMEM;
	/* A memory event outside any operator is a step of the counter of
	 * its own, as if an operator had run just it. */
	lone = !t->n;
	op = lone ? ++p->ops : t->f[t->n - 1].op;
	if (!p->blocks)
		return 0;
	f = lone ? NULL : &t->f[t->n - 1];
	if (ev->kind == MMS_EV_MALLOC) {
		blk_new(p, k, op);
		if (f)
			f->allocated = 1;
		else
			p->last_malloc_op = op;
		return rc;
	}
	b = mms__pass_data(p->pass, p->off); /* the block freed or accessed */
	if (b && !b->alloc_id)
		b = NULL;
	if (ev->kind == MMS_EV_ACCESS) {
		if (b)
			on_access(p, b, op);
		return 0;
	}
	if (b && frees_whole(ev, b)) {
		rc = on_free(p, b, ev, op);
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
static int keep_live(const struct mms__blk *k, void *ctx)
{
	struct ipass *p = ctx;
	struct iblk *b = blk_get(p, k);
	mms_block_t blk;
	int rc;

	if (!b)
		return 0;
	rc = 0;
	/* The block as the replay gives it, made only for one kept. */
	if (b->types) {
		mms__state_blk_export(p->st, k, &blk);
		rc = keep(p, b, &blk, 0);
	}
	blk_release(b);
	return rc;
}

static int pass_begin(struct mms__sub *sub, struct mms_pass *pass)
{
	struct ipass *p = (struct ipass *)sub;

	p->st = mms__pass_state(pass);
	quiet_count(p, pass);
	return 0;
}

/* At the end (a damaged log is judged up to where its readable events
 * end): blocks still live keep what their accesses showed. */
static int pass_end(struct mms__sub *sub, struct mms_pass *pass)
{
	struct ipass *p = (struct ipass *)sub;
	mms_inefficient_t *res = &p->res->pub;
	int rc;

	quiet_count(p, pass);
	rc = p->blocks ? mms__state_each(p->st, keep_live, p) : 0;
	if (rc)
		return rc;
	res->ops = p->ops;
	res->launches = p->launches;
	p->res->filling = NULL;
	if (res->n)
		qsort(res->blocks, res->n, sizeof(*res->blocks), by_order);
	return 0;
}

static void pass_drop(struct mms__sub *sub)
{
	struct ipass *p = (struct ipass *)sub;
	size_t i;

	for (i = 0; i < p->nthreads; i++)
		free(p->threads[i].f);
	free(p->threads);
	free(p);
}

MMS__EXPORT int mms_inefficient_add(mms_pass_t *pass, const mms_inefficient_options_t *opt, mms_inefficient_t **out)
{
	struct ineff_res *res;
	mms_config_t cfg;
	struct ipass *p;
	int rc;

	if (!out)
		return MMS_EUSAGE;
	*out = NULL;
	if (!pass)
		return MMS_EUSAGE;
	res = calloc(1, sizeof(*res));
	p = calloc(1, sizeof(*p));
	if (!res || !p) {
		free(res);
		free(p);
		return -ENOMEM;
	}
	if (opt)
		p->o = *opt;
	p->threshold = p->o.idle_threshold ? p->o.idle_threshold : IDLE_THRESHOLD_DEFAULT;
	p->res = res;
	res->pub.idle_threshold = p->threshold;
	res->pub.min_size = p->o.min_size;
	/* The blocks' owner strings are the pass's. */
	res->strs = mms__strs_ref(pass->strs);
	res->filling = pass;
	p->pass = pass;
	p->blocks = mms_log_config(pass->log, &cfg) || (cfg.events & MMS_CONFIG_EV_ACCESS);
	if (p->blocks)
		p->off = mms__pass_attach(pass, sizeof(struct iblk));
	p->sub.name = "inefficient";
	p->sub.kinds = 1u << MMS_EV_OP_LAUNCH | 1u << MMS_EV_MALLOC | 1u << MMS_EV_FREE | 1u << MMS_EV_ACCESS;
	p->sub.begin = pass_begin;
	p->sub.event = on_event;
	p->sub.end = pass_end;
	p->sub.drop = pass_drop;
	p->sub.status = &res->pub.status;
	*out = &res->pub;
	rc = mms__pass_add(pass, &p->sub);
	if (rc) {
		mms_inefficient_free(*out);
		*out = NULL;
	}
	return rc;
}

MMS__RUN_ONE(inefficient, mms_inefficient_options_t, mms_inefficient_t)

unsigned mms__inefficient_tags(const mms_inefficient_t *pub, uint64_t alloc_id)
{
	const struct ineff_res *res = (const struct ineff_res *)pub;

	if (!res->tags || alloc_id / 2 >= res->ntags)
		return 0;
	return res->tags[alloc_id / 2] >> (alloc_id % 2 * 4) & 15u;
}

const struct mms_pass *mms__inefficient_filling(const mms_inefficient_t *pub)
{
	return ((const struct ineff_res *)pub)->filling;
}

MMS__EXPORT void mms_inefficient_free(mms_inefficient_t *pub)
{
	struct ineff_res *res = (struct ineff_res *)pub;

	if (!pub)
		return;
	free(pub->blocks);
	free(res->tags);
	mms__strs_unref(res->strs);
	free(res);
}
