/* SPDX-License-Identifier: MIT */
/* trace-list.c: the trace subscriber's two lists of blocks, made at the
 * end of its pass (trace.c): the blocks live at the high-water mark
 * (watermark: those still live, and those freed since the peak, kept as
 * they are freed) and those live at the end (leakage). Each list is
 * sorted, its first records made and all its rows written to its TSV. */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope/analysis.h"
#include "msmemscope/log.h"
#include "format.h"
#include "base-int.h"
#include "intervals-int.h"
#include "map-int.h"
#include "outfile-int.h"
#include "pass-int.h"
#include "sort-int.h"
#include "state-int.h"
#include "table-int.h"
#include "trace-int.h"

/* --- the blocks freed since the peak ------------------------------------------ */

static void row_of(const struct mms__state *st, const struct mms__blk *b, struct row *r)
{
	const struct mms__origin *o = mms__blk_origin(st, b);
	const char *var = o->owner ? o->owner : o->pool ? o->pool : "";

	*r = (struct row){ .addr = b->addr,
			   .size = b->size,
			   .event = b->alloc_event,
			   .time_ns = b->time_ns,
			   .var = var,
			   .stack = b->stack,
			   .mem = b->mem };
}

static void block_out(struct trace_pass *p, const struct mms__blk *b, mms_trace_block_t *out)
{
	mms__state_blk_export(p->st, b, &out->b);
	out->time_ns = b->time_ns;
}

/* The lists' order: largest first, then the oldest (by allocation event),
 * then the lowest address; no two blocks of a list are equal in it. */
static int order_cmp(uint64_t size_a, uint64_t event_a, uint64_t addr_a, uint64_t size_b, uint64_t event_b,
		     uint64_t addr_b)
{
	if (size_a != size_b)
		return size_a > size_b ? -1 : 1;
	if (event_a != event_b)
		return event_a < event_b ? -1 : 1;
	return addr_a < addr_b ? -1 : addr_a > addr_b;
}

static void kept_out(struct trace_pass *p, const struct kept *k, mms_trace_block_t *out)
{
	block_out(p, &k->b, out);
	if (!out->b.inherited)
		out->b.step = k->step;
}

static int kept_cmp(const struct kept *x, const struct kept *y)
{
	return order_cmp(x->b.size, x->b.alloc_event, x->b.addr, y->b.size, y->b.alloc_event, y->b.addr);
}

static int kept_qsort_cmp(const void *x, const void *y)
{
	return kept_cmp(x, y);
}

/* Keeps block b, freed since the peak: every one with top 0; else only
 * while it is among the first top of those freed, in a heap whose root
 * is the last of them (most blocks freed compare with the root only). */
static int kept_add(struct trace_pass *p, const struct mms__blk *b)
{
	struct kept x = { .b = *b, .step = mms__state_blk_step(p->st, b) }, *k;
	size_t i, c;

	if (!p->top || p->nkept < p->top) {
		if (mms__grow(&p->kept, &p->kept_cap, p->nkept, sizeof(*p->kept)))
			return -ENOMEM;
		k = p->kept;
		i = p->nkept++;
		k[i] = x;
		for (; p->top && i && kept_cmp(&k[(i - 1) / 2], &k[i]) < 0; i = (i - 1) / 2) {
			x = k[i];
			k[i] = k[(i - 1) / 2];
			k[(i - 1) / 2] = x;
		}
		return 0;
	}
	k = p->kept;
	if (kept_cmp(&x, &k[0]) >= 0)
		return 0; /* after all those kept */
	for (i = 0; (c = 2 * i + 1) < p->nkept; i = c) {
		if (c + 1 < p->nkept && kept_cmp(&k[c + 1], &k[c]) > 0)
			c++;
		if (kept_cmp(&k[c], &x) < 0)
			break;
		k[i] = k[c];
	}
	k[i] = x;
	return 0;
}

/* The number of var string s in gone's rows (0 for ""), or -ENOMEM. */
static int64_t var_number(struct trace_pass *p, const char *s)
{
	uint64_t *ix;
	int isnew;

	if (!*s)
		return 0;
	ix = mms__map_put(&p->var_ix, (uint64_t)(uintptr_t)s, &isnew);
	if (!ix)
		return -ENOMEM;
	if (isnew) {
		if (mms__grow(&p->vars, &p->vars_cap, p->nvars, sizeof(*p->vars))) {
			mms__map_del(&p->var_ix, (uint64_t)(uintptr_t)s, NULL);
			return -ENOMEM;
		}
		p->vars[p->nvars++] = s;
		*ix = p->nvars;
	}
	return (int64_t)*ix;
}

/* Row r as varints at the end of gone: its address, size, allocation
 * event, time from the start of the log (zigzag), stack, and var number
 * and memory kind together. */
#define GONE_MAX (6 * 10) /* bytes a row takes at most */
_Static_assert(MMS_MEM_KIND_COUNT <= 8, "a memory kind fits 3 bits");

static int gone_put(struct trace_pass *p, const struct row *r)
{
	int64_t var = var_number(p, r->var);
	uint8_t *q;

	if (var < 0)
		return (int)var;
	while (p->gone_cap - p->gone_len < GONE_MAX)
		if (mms__table_grow(&p->gone, &p->gone_cap, p->gone_cap, 1))
			return -ENOMEM;
	q = p->gone + p->gone_len;
	q = mms_put_u(q, r->addr);
	q = mms_put_u(q, r->size);
	q = mms_put_u(q, r->event);
	q = mms_put_u(q, mms_zigzag((int64_t)(r->time_ns - p->t->first_ns)));
	q = mms_put_u(q, r->stack);
	q = mms_put_u(q, (uint64_t)var << 3 | r->mem);
	p->gone_len = (size_t)(q - p->gone);
	p->ngone++;
	return 0;
}

/* The row at offset off of gone into *r; returns the next row's offset. */
static size_t gone_get(const struct trace_pass *p, size_t off, struct row *r)
{
	const uint8_t *q = p->gone + off, *end = p->gone + p->gone_len;
	uint64_t v[6] = { 0 };

	/* The format's varints, as gone_put() wrote them with mms_put_u(). */
	for (int i = 0; i < 6; i++)
		(void)mms_get_u(&q, end, &v[i]);
	r->addr = v[0];
	r->size = v[1];
	r->event = v[2];
	r->time_ns = p->t->first_ns + (uint64_t)mms_unzigzag(v[3]);
	r->stack = (uint32_t)v[4];
	r->mem = (uint8_t)(v[5] & 7);
	r->var = v[5] >> 3 ? p->vars[(v[5] >> 3) - 1] : "";
	return (size_t)(q - p->gone);
}

int mms__trace_freed_add(struct trace_pass *p, const struct mms__blk *b)
{
	struct row r;
	int rc;

	if (!(p->peak_kinds & 1u << b->mem))
		return 0;
	if (p->top) {
		row_of(p->st, b, &r);
		rc = gone_put(p, &r);
		if (rc)
			return rc;
	}
	return kept_add(p, b);
}

int mms__trace_freed_more(struct trace_pass *p)
{
	const struct mms__blk *b = p->st->last_blk;
	int64_t slot;

	if (mms__grow(&p->held, &p->held_cap, p->nheld, sizeof(*p->held)))
		return -ENOMEM;
	slot = mms__pass_hold(p->pass);
	if (slot < 0)
		return mms__trace_freed_add(p, b);
	mms__trace_held_add(p, slot);
	return 0;
}

void mms__trace_held_release(struct trace_pass *p)
{
	mms__pass_unhold(p->pass, p->held, p->nheld);
	p->nheld = p->held_nostep = 0;
}

/* --- the lists ---------------------------------------------------------------- */

/* A list of blocks being made: the blocks' sort keys and where each is,
 * in k[i].ix: a live or held block's slot (with REF_NOSTEP for a held
 * one of held_nostep), a piece of a live mapping (REF_PIECE | its index
 * in the state's maps) or a block freed since the peak whose slot was
 * not held (REF_GONE | its row's offset in gone, or with top 0 its index
 * in kept). Only these 16 bytes a block are sorted; the rows are written
 * and the first records made from where the blocks are. */
#define REF_PIECE ((size_t)1 << (sizeof(size_t) * 8 - 1))
#define REF_GONE ((size_t)1 << (sizeof(size_t) * 8 - 2))
#define REF_NOSTEP ((size_t)1 << (sizeof(size_t) * 8 - 3)) /* a held slot of held_nostep */
#define REF_IX (REF_NOSTEP - 1)

struct list {
	struct trace_pass *p;
	uint64_t limit;          /* only blocks allocated at or before it */
	int gone;                /* with the blocks freed since the peak */
	struct mms__keyed *k;    /* room for every block the list may have
				    (the caller's, for both lists: fresh
				    pages are time on a VM) */
	size_t n;
	uint64_t bytes, most, last; /* their bytes, the largest size, the last event */
	size_t pieces;              /* pieces of mappings among them, live or freed
				       since the peak (only two of one mapping
				       can have equal keys: a block is allocated
				       by one event) */
	unsigned ebits;             /* the bits an event may have (of limit) */
	uint64_t *pk;               /* the blocks packed (list_pack()), or NULL */
	unsigned ib;                /* the bits of a packed block's index */
};

/* Block ref: its key is size << ebits | event, made (most - size) <<
 * ebits | event by list_sort() once the largest size is known. */
static void list_one(struct list *l, uint64_t size, uint64_t event, size_t ref)
{
	l->k[l->n].key = l->ebits < 64 ? size << l->ebits | event : 0;
	l->k[l->n++].ix = ref;
	l->bytes += size;
	l->most = size > l->most ? size : l->most;
	l->last = event > l->last ? event : l->last;
}

static int list_visit(const struct mms__blk *b, void *ctx)
{
	struct list *l = ctx;
	const struct mms__state *st = l->p->st;

	if (b->alloc_event > l->limit || !(l->p->kinds & 1u << b->mem))
		return 0;
	if (b >= st->blks && b < st->blks + st->nblks)
		list_one(l, b->size, b->alloc_event, (size_t)(b - st->blks));
	else { /* a piece of a mapping, a copy: its range's index */
		list_one(l, b->size, b->alloc_event, REF_PIECE | mms__ivset_find(&st->maps, b->addr));
		l->pieces++;
	}
	return 0;
}

/* How many blocks ahead of the one being read the next is asked for:
 * the lists take the blocks at random, and a block is read in less time
 * than a cache miss takes. */
#define AHEAD 16
/* The same for the loop over the slots freed since the peak, which does
 * little else. */
#define HELD_AHEAD 64

/* Below this many held slots the walk takes them as they were freed. */
#define HELD_BITMAP_MIN 4096

/* The held slots from to to (with flag) into l->k: by bits, a bitmap of
 * the state's slots (one bit a slot, in the caches; left all 0 again), in
 * the order of their slots: their lines are read nearly in order then,
 * where the order of their frees is random (perl's log: 2 M held slots,
 * about 25 -> 20 ms on a VM where the reads are bound by the memory's
 * bandwidth); without bits (a few, or no memory) as they were freed. */
static void held_range(struct list *l, size_t from, size_t to, size_t flag, uint64_t *bits)
{
	const struct trace_pass *p = l->p;
	const struct mms__blk *blks = p->st->blks;
	size_t i, w, s, nw = (p->st->nblks + 63) / 64;
	uint64_t m;

	if (!bits) {
		for (i = from; i < to; i++) {
			/* Each a miss but for this. */
			if (i + HELD_AHEAD < to)
				__builtin_prefetch(&blks[p->held[i + HELD_AHEAD]]);
			list_one(l, blks[p->held[i]].size, blks[p->held[i]].alloc_event, p->held[i] | flag);
		}
		return;
	}
	for (i = from; i < to; i++)
		bits[p->held[i] / 64] |= (uint64_t)1 << (p->held[i] % 64);
	for (w = 0; w < nw; w++) {
		for (m = bits[w]; m; m &= m - 1) {
			s = w * 64 + (size_t)__builtin_ctzll(m);
			list_one(l, blks[s].size, blks[s].alloc_event, s | flag);
		}
		bits[w] = 0;
	}
}

/* The held slots into l->k: those freed before the state knew how steps
 * are marked (held_nostep: every one in a log without steps), then the
 * others. */
static void held_walk(struct list *l)
{
	const struct trace_pass *p = l->p;
	uint64_t *bits = p->nheld >= HELD_BITMAP_MIN ? calloc((p->st->nblks + 63) / 64, sizeof(*bits)) : NULL;

	held_range(l, 0, p->held_nostep, REF_NOSTEP, bits);
	held_range(l, p->held_nostep, p->nheld, 0, bits);
	free(bits);
}

/* Walks the list's blocks once into l->k, which has room for them. */
static void list_walk(struct list *l)
{
	size_t i, next;
	struct row r;

	l->n = l->pieces = 0;
	mms__state_each(l->p->st, list_visit, l);
	if (!l->gone)
		return;
	held_walk(l);
	for (i = 0; !l->p->top && i < l->p->nkept; i++) {
		list_one(l, l->p->kept[i].b.size, l->p->kept[i].b.alloc_event, REF_GONE | i);
		l->pieces += l->p->kept[i].b.mem == MMS_MEM_MMAP;
	}
	for (i = 0; l->p->top && i < l->p->gone_len; i = next) {
		next = gone_get(l->p, i, &r);
		list_one(l, r.size, r.event, REF_GONE | i);
		l->pieces += r.mem == MMS_MEM_MMAP;
	}
}

/* The most blocks list l may have: every slot not free (live or held),
 * every piece of a mapping, every copy of a block freed since the peak
 * (list_table()'s, all its pages written or faulted in). */
static size_t list_room(const struct list *l)
{
	const struct trace_pass *p = l->p;

	return p->st->nblks - p->st->nfree + p->st->maps.n + (l->gone ? (p->top ? p->ngone : p->nkept) : 0);
}

/* The slot of the live or held block, or of the live mapping, that ref
 * is of. */
static const struct mms__blk *ref_blk(const struct trace_pass *p, size_t ref)
{
	return &p->st->blks[ref & REF_PIECE ? p->st->maps.iv[ref & REF_IX].val : ref & REF_IX];
}

/* The row of the block at ref. */
static void ref_row(struct trace_pass *p, size_t ref, struct row *r)
{
	const struct mms__blk *b;
	const struct mms__iv *iv;

	if (ref & REF_GONE) {
		if (p->top)
			gone_get(p, ref & REF_IX, r);
		else
			row_of(p->st, &p->kept[ref & REF_IX].b, r);
		return;
	}
	b = ref_blk(p, ref);
	row_of(p->st, b, r);
	if (ref & REF_PIECE) {
		iv = &p->st->maps.iv[ref & REF_IX];
		r->addr = iv->lo;
		r->size = iv->hi - iv->lo;
	}
}

static int ref_cmp(const void *a, const void *b, void *ctx)
{
	struct trace_pass *p = ctx;
	struct row x, y;

	ref_row(p, ((const struct mms__keyed *)a)->ix, &x);
	ref_row(p, ((const struct mms__keyed *)b)->ix, &y);
	return order_cmp(x.size, x.event, x.addr, y.size, y.event, y.addr);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The ref a packed block v of list l has. */
static inline size_t list_ref_of(const struct list *l, uint64_t v)
{
	return (size_t)(v >> l->ib & 7) << (sizeof(size_t) * 8 - 3) | (size_t)(v & (((uint64_t)1 << l->ib) - 1));
}

/* The ref of the ith block of the list in its order. */
static inline size_t list_ref(const struct list *l, size_t i)
{
	return l->pk ? list_ref_of(l, l->pk[i]) : l->k[i].ix;
}

/* Sizes below this have their rank in a table; the list's larger sizes
 * are sorted, where there are at most BIG_MAX blocks of them. */
#define SMALL_SIZES 4096
#define BIG_MAX 65536

/* Packs the list's blocks, keyed size << ebits | event in l->k, into one
 * 64-bit value each where they fit: the rank of the size among the
 * list's sizes (largest first), the event, the ref's three flags, its
 * index; and sorts them by rank and event (mms__sort_bits(), in the half
 * of l->k the values leave free): a list of many blocks of few sizes
 * moves half the bytes, over the bits its keys have. Returns 0 (l->pk
 * set), 1 when they do not fit (l->k as it was), or -ENOMEM. */
static int list_pack(struct list *l)
{
	uint32_t *rank = NULL;
	uint64_t *big = NULL, size, x, ixs = 0, ranks;
	size_t i, nbig = 0, nsizes = 0, j;
	unsigned rbits, ib;
	int rc = 1;

	rank = calloc(SMALL_SIZES, sizeof(*rank));
	if (!rank)
		return -ENOMEM;
	for (i = 0; i < l->n; i++) {
		size = l->k[i].key >> l->ebits;
		ixs |= l->k[i].ix & REF_IX;
		if (size < SMALL_SIZES) {
			rank[size] = 1;
		} else {
			if (nbig == BIG_MAX)
				goto out;
			if (!big && !(big = malloc(BIG_MAX * sizeof(*big)))) {
				rc = -ENOMEM;
				goto out;
			}
			big[nbig++] = size;
		}
	}
	/* The large sizes, each once, ascending: the largest ranks 0. */
	if (nbig)
		qsort(big, nbig, sizeof(*big), u64_cmp);
	for (i = 0; i < nbig; i++)
		if (!nsizes || big[nsizes - 1] != big[i])
			big[nsizes++] = big[i];
	ranks = nsizes;
	for (j = SMALL_SIZES; j-- > 0;)
		if (rank[j])
			rank[j] = (uint32_t)ranks++;
	rbits = ranks > 1 ? mms__bits(ranks - 1) : 0;
	ib = mms__bits(ixs);
	if (rbits + l->ebits + 3 + ib > 64)
		goto out;
	l->pk = (uint64_t *)l->k;
	l->ib = ib;
	for (i = 0; i < l->n; i++) {
		size_t ref = l->k[i].ix;
		uint64_t r;

		size = l->k[i].key >> l->ebits;
		if (size < SMALL_SIZES) {
			r = rank[size];
		} else {
			/* nsizes - 1 - its index in big[] */
			size_t a = 0, b = nsizes;

			while (a < b) {
				j = a + (b - a) / 2;
				if (big[j] < size)
					a = j + 1;
				else
					b = j;
			}
			r = nsizes - 1 - a;
		}
		x = (r << l->ebits | (l->k[i].key & (((uint64_t)1 << l->ebits) - 1))) << (3 + ib) |
		    (uint64_t)(ref >> (sizeof(size_t) * 8 - 3)) << ib | (ref & REF_IX);
		/* The ith value lies in the bytes of pairs before i, or of
		 * the ith itself, read already. */
		l->pk[i] = x;
	}
	mms__sort_bits(l->pk, l->pk + l->n, l->n, 3 + ib, 3 + ib + l->ebits + rbits);
	rc = 0;
out:
	free(rank);
	free(big);
	return rc;
}

/* Two packed blocks of list ctx in the lists' order. */
static int packed_cmp(const void *a, const void *b, void *ctx)
{
	struct list *l = ctx;
	struct row x, y;

	ref_row(l->p, list_ref_of(l, *(const uint64_t *)a), &x);
	ref_row(l->p, list_ref_of(l, *(const uint64_t *)b), &y);
	return order_cmp(x.size, x.event, x.addr, y.size, y.event, y.addr);
}

/* Runs of equal keys in the packed list (pieces of one mapping), by
 * address. */
static void packed_runs(struct list *l)
{
	unsigned shift = 3 + l->ib;
	size_t i, lo;

	for (lo = 0; lo < l->n; lo = i) {
		for (i = lo + 1; i < l->n && l->pk[i] >> shift == l->pk[lo] >> shift; i++)
			;
		if (i - lo > 1)
			qsort_r(l->pk + lo, i - lo, sizeof(*l->pk), packed_cmp, l);
	}
}

/* Puts the list's blocks in l->k in their order (l->k, a table of
 * list_room() pairs, list_table()'s: the walk writes it in
 * order, the sort's passes read it in order): packed with
 * their sizes' ranks where that fits (list_pack()); else a radix sort of
 * one key of the size and the event where both fit in 64 bits; runs of
 * equal keys (pieces of one mapping) by address; else a qsort().
 * Returns 0 or -ENOMEM. */
static int list_sort(struct list *l)
{
	uint64_t emask;
	size_t i, lo;
	int wide, rc;

	l->ebits = mms__bits(l->limit == UINT64_MAX ? l->p->st->pos : l->limit);
	list_walk(l);
	wide = l->ebits >= 64 || mms__bits(l->most) + l->ebits > 64 || mms__bits(l->last) > l->ebits;
	if (!wide && (rc = list_pack(l)) <= 0) {
		if (!rc && l->pieces > 1)
			packed_runs(l);
		return rc;
	}
	if (!wide) {
		emask = ((uint64_t)1 << l->ebits) - 1;
		for (i = 0; i < l->n; i++)
			l->k[i].key = (l->most - (l->k[i].key >> l->ebits)) << l->ebits | (l->k[i].key & emask);
		mms__sort_keyed(l->k, l->n);
	} else {
		for (i = 0; i < l->n; i++)
			l->k[i].key = 0;
	}
	for (lo = 0; lo < l->n; lo = i) {
		for (i = lo + 1; i < l->n && l->k[i].key == l->k[lo].key; i++)
			;
		if (i - lo > 1)
			qsort_r(l->k + lo, i - lo, sizeof(*l->k), ref_cmp, l->p);
	}
	return 0;
}

/* The record of the block at ref, the first in the list to be made of
 * those freed since the peak when nth (from 0). */
static void ref_record(struct trace_pass *p, size_t ref, size_t nth, mms_trace_block_t *out)
{
	const struct mms__blk *b;
	struct mms__blk piece;
	const struct mms__iv *iv;

	if (ref & REF_GONE) {
		/* With top 0 every one was kept; else the kept are the
		 * first of them, sorted: the nth freed block of the list is
		 * the nth kept (nth < nkept, as the list's first top hold at
		 * most top of them). */
		kept_out(p, &p->kept[p->top ? nth : ref & REF_IX], out);
		return;
	}
	b = ref_blk(p, ref);
	if (ref & REF_PIECE) {
		iv = &p->st->maps.iv[ref & REF_IX];
		piece = *b;
		piece.addr = iv->lo;
		piece.size = iv->hi - iv->lo;
		block_out(p, &piece, out);
	} else {
		block_out(p, b, out);
		if (ref & REF_NOSTEP && !out->b.inherited)
			out->b.step = 0; /* as kept_out() says it */
	}
}

/* Asks for the memory of the block at ref ahead of its turn: the list's
 * order takes the blocks at random, and a row is written in less time
 * than a cache miss takes. Inlined always: GCC takes a function that only
 * prefetches for one without effects and drops its calls. */
static inline __attribute__((always_inline)) void ref_prefetch(const struct trace_pass *p, size_t ref)
{
	const struct mms__state *st = p->st;
	const char *q;

	if (ref & REF_GONE) {
		q = p->top ? (const char *)p->gone + (ref & REF_IX) : (const char *)&p->kept[ref & REF_IX];
		__builtin_prefetch(q);
		__builtin_prefetch(q + GONE_MAX - 1);
	} else if (!(ref & REF_PIECE)) {
		q = (const char *)&st->blks[ref & REF_IX];
		__builtin_prefetch(q);
		__builtin_prefetch(q + sizeof(st->blks[0]) - 1);
	}
}

/* Makes list l: its first top blocks as records in *out (*nout of them;
 * NULL when none), every block's row into f (when open), and sets *total
 * and *bytes. Returns 0 or -ENOMEM. */
static int list_make(struct list *l, struct tsv *f, mms_trace_block_t **out, size_t *nout, size_t *total,
		     uint64_t *bytes)
{
	struct trace_pass *p = l->p;
	mms_trace_block_t *v = NULL;
	size_t i, keep, nth = 0;
	struct row r;
	int rc;

	rc = list_sort(l);
	keep = p->top && p->top < l->n ? p->top : l->n;
	if (!rc && keep && !(v = malloc(keep * sizeof(*v))))
		rc = -ENOMEM;
	if (!rc && l->gone && p->top && p->nkept)
		qsort(p->kept, p->nkept, sizeof(*p->kept), kept_qsort_cmp);
	for (i = 0; !rc && i < l->n && (i < keep || (f->w && !f->rc)); i++) {
		size_t ref = list_ref(l, i);

		if (i + AHEAD < l->n)
			ref_prefetch(p, list_ref(l, i + AHEAD));
		if (i < keep)
			ref_record(p, ref, ref & REF_GONE ? nth++ : 0, &v[i]);
		if (f->w && !f->rc) {
			ref_row(p, ref, &r);
			mms__trace_tsv_row(f, &r);
		}
	}
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*nout = keep;
	*total = l->n;
	*bytes = l->bytes;
	return 0;
}

/* Opens the TSV file at path (none when NULL) into f: a file that cannot
 * be made is said in *rc, and its list is made without it. */
static void tsv_open(struct trace_pass *p, struct tsv *f, const char *path, int *rc)
{
	mms_log_info_t info;

	memset(f, 0, sizeof(*f));
	*rc = 0;
	if (!path)
		return;
	mms_log_get_info(p->log, &info);
	f->log = p->log;
	f->pid = info.pid;
	f->sym = p->out.sym;
	f->w = mms__wfile_open(path, mms__out_flags(&p->out), rc);
}

/* A table of room sort keys for the lists, of *bytes: the array of the
 * heap state's map of live blocks, sized for the most there were, where
 * far fewer are left (a list of the peak's) and it is large enough, the
 * map moved into a small one; else one of its own. Pages already
 * written: a new table's first writes cost a fault in the hypervisor a
 * page on a VM even when faulted in at once (perl's log: 32 MiB, the
 * walk 63 -> 16 ms). NULL without memory. */
static struct mms__keyed *list_table(struct trace_pass *p, size_t room, size_t *bytes)
{
	struct mms__keyed *k = NULL;

	if (p->hold_st && p->hold_st->host.count < room / 2)
		k = mms__slotmap_shrink(&p->hold_st->host, room * sizeof(*k), bytes);
	if (!k) {
		*bytes = room * sizeof(*k);
		k = mms__table_alloc_seq(*bytes);
	}
	return k;
}

/* See trace-int.h. Both files are moved into place once both lists are
 * made (none when the analysis fails). */
int mms__trace_lists_finish(struct trace_pass *p)
{
	mms_trace_t *t = p->t;
	struct tsv f[2];
	struct list l, end = { .p = p, .limit = UINT64_MAX }, peak = { .p = p, .limit = t->peak_event, .gone = 1 };
	int want_end = !(p->skip & MMS_TRACE_SKIP_END), want_peak = !(p->skip & MMS_TRACE_SKIP_PEAK) && t->peak_bytes;
	uint64_t bytes;
	size_t room = 1, kbytes = 0;
	int rc = 0;

	tsv_open(p, &f[0], p->tsv_path[0], &t->watermark_rc);
	tsv_open(p, &f[1], p->tsv_path[1], &t->leakage_rc);
	/* One table for both lists, made one after the other. */
	if (want_end && list_room(&end) > room)
		room = list_room(&end);
	if (want_peak && list_room(&peak) > room)
		room = list_room(&peak);
	if (want_end || want_peak) {
		end.k = list_table(p, room, &kbytes);
		if (!end.k)
			rc = -ENOMEM;
	}
	peak.k = end.k;
	/* Leakage: everything live at the end (its bytes also when the list
	 * is not wanted). */
	if (!want_end) {
		t->end_bytes = mms__trace_live_total(p);
	} else if (!rc) {
		l = end;
		rc = list_make(&l, &f[1], &t->end, &t->nend, &t->end_blocks, &t->end_bytes);
	}
	/* Watermark: what is still live of the peak, and what was freed
	 * since (none without a peak). */
	if (!rc && want_peak) {
		l = peak;
		rc = list_make(&l, &f[0], &t->peak, &t->npeak, &t->peak_blocks, &bytes); /* peak_bytes's */
	}
	if (end.k)
		mms__table_free(end.k, kbytes);
	mms__trace_held_release(p);
	mms__table_free(p->gone, p->gone_cap);
	free(p->kept);
	p->gone = NULL;
	p->kept = NULL;
	p->gone_len = p->gone_cap = p->ngone = p->nkept = p->kept_cap = 0;
	if (f[0].w)
		t->watermark_rc = mms__wfile_close(f[0].w, rc ? rc : f[0].rc);
	if (f[1].w)
		t->leakage_rc = mms__wfile_close(f[1].w, rc ? rc : f[1].rc);
	return rc;
}


void mms__trace_lists_free(struct trace_pass *p)
{
	mms__table_free(p->gone, p->gone_cap);
	free(p->held);
	free(p->vars);
	mms__map_free(&p->var_ix);
	free(p->kept);
	p->gone = NULL;
	p->held = NULL;
	p->vars = NULL;
	p->kept = NULL;
}
