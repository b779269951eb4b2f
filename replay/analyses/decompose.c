/* SPDX-License-Identifier: MIT */
/* decompose.c: live bytes broken down as a tree, memory kind (or pool)
 * first, then the levels of the owner tag ("A@B@C"), at any position of a
 * replay, and at the end of a log together with its peak: the groups are
 * followed on the way, so the peak's tree needs no second read unless an
 * event the groups cannot follow (a mapping over others, an munmap, an
 * address handed out twice) came before the peak. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope/analysis.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "base-int.h"
#include "index-int.h"
#include "map-int.h"
#include "pass-int.h"
#include "state-int.h"

/* What blocks without an owner tag are filed under. */
#define NO_OWNER "(no owner)"

/* --- live blocks grouped by (kind, pool, owner) ---------------------------------- */

struct dgroup {
	uint16_t mem;
	const char *pool, *owner; /* log arena and interned owner strings */
	uint64_t bytes, blocks;
};

struct dgroups {
	const struct mms__state *st;
	unsigned kinds;     /* bit 1 << mem: the kinds grouped */
	struct mms__map ix; /* hash of the key -> index in g + 1 */
	struct dgroup *g;
	size_t n, cap;
	int err;
};

static uint64_t key_hash(uint16_t mem, const char *pool, const char *owner)
{
	uint64_t h = (uint64_t)(uintptr_t)owner * 0x9e3779b97f4a7c15ull;

	h ^= ((uint64_t)(uintptr_t)pool + mem) * 0xc2b2ae3d27d4eb4full;
	return h;
}

static int group_blk(const struct mms__blk *b, void *ctx)
{
	struct dgroups *d = ctx;
	const struct mms__origin *o = mms__blk_origin(d->st, b);
	const char *pool = b->mem == MMS_MEM_POOL || b->mem == MMS_MEM_DEVICE ? o->pool : NULL;
	uint64_t h = key_hash(b->mem, pool, o->owner), *v;
	struct dgroup *g;
	int isnew;

	if (!(d->kinds & 1u << b->mem))
		return 0;
	/* Owner strings are interned and pool names are the log's: equal
	 * keys are equal pointers. Probe on past another key's hash. */
	for (;; h++) {
		v = mms__map_put(&d->ix, h, &isnew);
		if (!v)
			goto oom;
		if (isnew)
			break;
		g = &d->g[*v - 1];
		if (g->mem == b->mem && g->pool == pool && g->owner == o->owner)
			goto found;
	}
	if (mms__grow(&d->g, &d->cap, d->n, sizeof(*d->g)))
		goto oom;
	g = &d->g[d->n++];
	memset(g, 0, sizeof(*g));
	g->mem = b->mem;
	g->pool = pool;
	g->owner = o->owner;
	*v = d->n;
found:
	g->bytes += b->size;
	g->blocks++;
	return 0;
oom:
	d->err = -ENOMEM;
	return 1;
}

/* --- the tree ----------------------------------------------------------------------- */

/* A node while the tree is built: children chained, names as offsets
 * into the text until the nodes stop moving. */
struct tnode {
	size_t name, name_len;
	unsigned depth;
	uint64_t bytes, blocks, self_bytes, self_blocks;
	size_t first, next; /* child and sibling indices + 1, 0 = none */
};

struct tree {
	struct tnode *t;
	size_t n, cap;
	char *text;
	size_t text_len, text_cap;
};

/* The child of parent (index + 1, 0 = the root list) named s, made when
 * missing. Returns its index, or -1 when out of memory. */
static ptrdiff_t tree_child(struct tree *tr, size_t parent, size_t *roots, const char *s, size_t len, unsigned depth)
{
	size_t *link = parent ? &tr->t[parent - 1].first : roots, i;
	struct tnode *c;

	for (i = *link; i; i = tr->t[i - 1].next) {
		c = &tr->t[i - 1];
		if (c->name_len == len && !memcmp(tr->text + c->name, s, len))
			return (ptrdiff_t)i - 1;
	}
	if (mms__grow(&tr->t, &tr->cap, tr->n, sizeof(*tr->t)))
		return -1;
	while (tr->text_cap - tr->text_len < len + 1) {
		size_t cap = tr->text_cap ? tr->text_cap * 2 : 256;
		char *p = realloc(tr->text, cap);

		if (!p)
			return -1;
		tr->text = p;
		tr->text_cap = cap;
	}
	c = &tr->t[tr->n];
	memset(c, 0, sizeof(*c));
	c->name = tr->text_len;
	c->name_len = len;
	c->depth = depth;
	memcpy(tr->text + tr->text_len, s, len);
	tr->text[tr->text_len + len] = '\0';
	tr->text_len += len + 1;
	/* Link it where the loop ended: the end of the sibling list. */
	link = parent ? &tr->t[parent - 1].first : roots;
	while (*link)
		link = &tr->t[*link - 1].next;
	*link = ++tr->n;
	return (ptrdiff_t)tr->n - 1;
}

static const char *kind_name(const struct dgroup *g)
{
	if (g->mem == MMS_MEM_POOL || g->mem == MMS_MEM_DEVICE || !mms_mem_kind_name(g->mem))
		return g->pool && *g->pool ? g->pool : "POOL";
	return mms_mem_kind_name(g->mem);
}

/* Files one group under its kind and each level of its owner. */
static int tree_add(struct tree *tr, size_t *roots, const struct dgroup *g)
{
	const char *kind = kind_name(g), *p = g->owner ? g->owner : NO_OWNER, *at;
	ptrdiff_t node;
	unsigned depth = 0;

	node = tree_child(tr, 0, roots, kind, strlen(kind), depth);
	for (;;) {
		if (node < 0)
			return -ENOMEM;
		tr->t[node].bytes += g->bytes;
		tr->t[node].blocks += g->blocks;
		if (!p)
			break;
		at = strchr(p, '@');
		node = tree_child(tr, (size_t)node + 1, roots, p, at ? (size_t)(at - p) : strlen(p), ++depth);
		p = at ? at + 1 : NULL;
	}
	tr->t[node].self_bytes += g->bytes;
	tr->t[node].self_blocks += g->blocks;
	return 0;
}

/* Largest first, then by name: the order the nodes are listed in. */
static int node_cmp(const struct tree *tr, size_t a, size_t b)
{
	const struct tnode *x = &tr->t[a - 1], *y = &tr->t[b - 1];

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(tr->text + x->name, tr->text + y->name);
}

/* Sorts a sibling list (insertion sort: owner levels have few children). */
static size_t sort_siblings(const struct tree *tr, size_t head)
{
	size_t sorted = 0, next, *link;

	while (head) {
		next = tr->t[head - 1].next;
		link = &sorted;
		while (*link && node_cmp(tr, *link, head) <= 0)
			link = &tr->t[*link - 1].next;
		tr->t[head - 1].next = *link;
		*link = head;
		head = next;
	}
	return sorted;
}

/* Writes the subtrees of the list at head in pre-order into out. */
static void flatten(struct tree *tr, size_t head, mms_decompose_node_t *out, size_t *n)
{
	struct tnode *c;

	for (head = sort_siblings(tr, head); head; head = tr->t[head - 1].next) {
		c = &tr->t[head - 1];
		out[*n].depth = c->depth;
		out[*n].bytes = c->bytes;
		out[*n].blocks = c->blocks;
		out[*n].self_bytes = c->self_bytes;
		out[*n].self_blocks = c->self_blocks;
		/* The text follows the nodes in the result: the offset now,
		 * the pointer once the text has its place. */
		out[*n].name = (const char *)(uintptr_t)c->name;
		(*n)++;
		flatten(tr, c->first, out, n);
	}
}

/* Builds a tree at position from n groups. */
static int groups_tree(const struct dgroup *g, size_t ng, uint64_t position, mms_decompose_tree_t **out)
{
	struct tree tr = { 0 };
	mms_decompose_tree_t *res = NULL;
	size_t roots = 0, i, n = 0;
	int rc = 0;

	*out = NULL;
	for (i = 0; !rc && i < ng; i++)
		rc = tree_add(&tr, &roots, &g[i]);
	if (rc)
		goto done;
	/* One allocation: the header, the nodes, then their names. */
	res = malloc(sizeof(*res) + tr.n * sizeof(*res->nodes) + tr.text_len);
	if (!res) {
		rc = -ENOMEM;
		goto done;
	}
	memset(res, 0, sizeof(*res));
	res->position = position;
	res->nodes = (mms_decompose_node_t *)(res + 1);
	flatten(&tr, roots, res->nodes, &n);
	res->n = n;
	if (tr.text_len)
		memcpy(res->nodes + n, tr.text, tr.text_len);
	for (i = 0; i < n; i++) {
		res->nodes[i].name = (const char *)(res->nodes + n) + (uintptr_t)res->nodes[i].name;
		if (!res->nodes[i].depth) {
			res->bytes += res->nodes[i].bytes;
			res->blocks += res->nodes[i].blocks;
		}
	}
	*out = res;
done:
	free(tr.t);
	free(tr.text);
	return rc;
}

/* Builds the tree of a state's live blocks. */
static int decompose_state(const struct mms__state *st, unsigned kinds, mms_decompose_tree_t **out)
{
	struct dgroups d = { 0 };
	int rc;

	*out = NULL;
	d.st = st;
	d.kinds = kinds;
	mms__map_init(&d.ix);
	mms__state_each(st, group_blk, &d);
	rc = d.err;
	if (!rc)
		rc = groups_tree(d.g, d.n, st->pos, out);
	mms__map_free(&d.ix);
	free(d.g);
	return rc;
}

MMS__EXPORT int mms_decompose_replay(const mms_replay_t *r, mms_decompose_tree_t **out)
{
	if (!out)
		return MMS_EUSAGE;
	*out = NULL;
	if (!r)
		return MMS_EUSAGE;
	return decompose_state(mms__replay_state(r), ~0u, out);
}

MMS__EXPORT void mms_decompose_tree_free(mms_decompose_tree_t *d)
{
	free(d);
}

/* The kinds a peak counts by default: the process's memory. */
#define PROCESS_KINDS (1u << MMS_MEM_HOST | 1u << MMS_MEM_MMAP | 1u << MMS_MEM_POOL)

/* --- the end and the peak of a log ------------------------------------------------- */

/* A group followed through the pass, with its figures at the last peak:
 * those are pk_* once the group changed after that peak (ver is the
 * peak's number then), else its figures now. */
struct fgroup {
	struct dgroup d;
	uint64_t pk_bytes, pk_blocks;
	uint64_t ver;
};

struct dpass {
	struct mms__sub sub;
	const struct mms__state *st;
	mms_decompose_options_t o;
	mms_decompose_t *res;
	struct mms__map ix;       /* hash of the key -> index in g + 1 */
	struct fgroup *g;
	size_t n, cap;
	size_t last;              /* the group used last, + 1 (blocks come in runs) */
	uint64_t ver;             /* peaks so far, + 1 */
	unsigned kinds;           /* bit 1 << mem: the kinds followed (the trees') */
	unsigned peak_kinds;      /* the kinds whose live bytes together make the peak */
	uint64_t peak, peak_pos;  /* their highest live bytes, first reached at peak_pos */
	uint64_t inexact;         /* the position after the first event the groups could not
	                             follow; UINT64_MAX: none */
	uint64_t double_allocs, mmap_bytes, mmap_blocks; /* the state's, before the event */
	/* By kind: until the first OWNER event or block of a pool or device
	 * (from an empty heap, no thread with an owner tag), each kind's
	 * group is the state's figures for the kind, and nothing is followed
	 * per block: only each kind's figures at the peak, in snap. Then the
	 * groups are made from the state (bykind_end()) and followed. */
	int bykind;
	uint64_t snap_bytes[MMS_MEM_KIND_COUNT], snap_blocks[MMS_MEM_KIND_COUNT];
	/* Kinds whose figures may have moved since snap was taken: those of
	 * the events fed since (only a MALLOC or FREE of a kind moves its
	 * figures), and always HOST, whose events a quiet pass does not
	 * feed. */
	unsigned snap_dirty;
	/* By kind with the process's kinds as the peak's, where its peak and
	 * double allocs start as the state's: not fed HOST blocks' events,
	 * which then change nothing but those (the pass calls dpass_peak()
	 * at each new peak, and the state keeps the first double alloc). */
	int quiet;
};

static __attribute__((noinline)) struct fgroup *fgroup_find(struct dpass *p, uint16_t mem, const char *pool,
							    const char *owner)
{
	uint64_t h, *v;
	struct fgroup *g;
	int isnew;

	/* Owner strings are interned and pool names are the log's: equal
	 * keys are equal pointers. Probe on past another key's hash. */
	for (h = key_hash(mem, pool, owner);; h++) {
		v = mms__map_put(&p->ix, h, &isnew);
		if (!v)
			return NULL;
		if (isnew)
			break;
		g = &p->g[*v - 1];
		if (g->d.mem == mem && g->d.pool == pool && g->d.owner == owner)
			goto found;
	}
	if (mms__grow(&p->g, &p->cap, p->n, sizeof(*p->g)))
		return NULL;
	g = &p->g[p->n++];
	memset(g, 0, sizeof(*g));
	g->d.mem = mem;
	g->d.pool = pool;
	g->d.owner = owner;
	*v = p->n;
found:
	p->last = (size_t)(g - p->g) + 1;
	return g;
}

/* The group of the key, most often the last one's (inline, the rest a
 * call: it runs at every memory event). */
static inline struct fgroup *fgroup_of(struct dpass *p, uint16_t mem, const char *pool, const char *owner)
{
	struct fgroup *g;

	if (mem != MMS_MEM_POOL && mem != MMS_MEM_DEVICE)
		pool = NULL;
	if (p->last) {
		g = &p->g[p->last - 1];
		if (g->d.mem == mem && g->d.pool == pool && g->d.owner == owner)
			return g;
	}
	return fgroup_find(p, mem, pool, owner);
}

/* Moves the figures of the group of a block of kind mem in pool, owned by
 * owner, by bytes and blocks, keeping those of the last peak first. */
static inline int fgroup_move(struct dpass *p, unsigned mem, const char *pool, const char *owner, int64_t bytes,
			      int64_t blocks)
{
	struct fgroup *g;

	if (!(p->kinds & 1u << mem))
		return 0;
	g = fgroup_of(p, (uint16_t)mem, pool, owner);
	if (!g)
		return -ENOMEM;
	if (g->ver != p->ver) {
		g->pk_bytes = g->d.bytes;
		g->pk_blocks = g->d.blocks;
		g->ver = p->ver;
	}
	g->d.bytes += (uint64_t)bytes;
	g->d.blocks += (uint64_t)blocks;
	return 0;
}

/* fgroup_move() for block b of the pass's state. */
static inline int fgroup_move_blk(struct dpass *p, const struct mms__blk *b, int64_t bytes, int64_t blocks)
{
	const struct mms__origin *o = mms__blk_origin(p->st, b);

	return fgroup_move(p, b->mem, o->pool, o->owner, bytes, blocks);
}

static int seed_blk(const struct mms__blk *b, void *ctx)
{
	return fgroup_move_blk(ctx, b, (int64_t)b->size, 1) ? 1 : 0;
}

static void note_state(struct dpass *p)
{
	p->double_allocs = p->st->double_allocs;
	p->mmap_bytes = p->st->mem[MMS_MEM_MMAP].live_bytes;
	p->mmap_blocks = p->st->mem[MMS_MEM_MMAP].live_blocks;
}

/* The live bytes whose high-water mark is the peak. */
static inline uint64_t live_counted(const struct dpass *p)
{
	uint64_t n = 0;

	if (p->peak_kinds == PROCESS_KINDS)
		return mms__state_live_total(p->st);
	for (unsigned k = 0; k < MMS_MEM_KIND_COUNT; k++)
		if (p->peak_kinds & 1u << k)
			n += p->st->mem[k].live_bytes;
	return n;
}

static int dpass_begin(struct mms__sub *sub, struct mms_pass *pass)
{
	struct dpass *p = (struct dpass *)sub;

	p->st = mms__pass_state(pass);
	p->ver = 1;
	p->inexact = UINT64_MAX;
	p->snap_dirty = ~0u & ((1u << MMS_MEM_KIND_COUNT) - 1);
	/* A fork child starts with its inherited heap: position 0 may be
	 * the peak. */
	p->peak = live_counted(p);
	p->peak_pos = 0;
	note_state(p);
	if (mms__state_each(p->st, seed_blk, p))
		return -ENOMEM;
	/* By kind from an empty heap where no thread has an owner tag. */
	p->bykind = !p->n;
	for (size_t i = 0; i < p->st->nthreads; i++)
		p->bykind &= !p->st->threads[i].owner;
	p->quiet = p->bykind && p->peak_kinds == PROCESS_KINDS && p->peak == p->st->peak_total && !p->st->double_allocs;
	if (p->quiet)
		mms__pass_quiet(pass, sub, 1u << MMS_MEM_HOST);
	return 0;
}

/* Each followed kind's group as the kind's figures at the peak (its
 * figures now: the groups' figures at the last peak are their pk_* only
 * once they changed since). */
static int bykind_groups(struct dpass *p, int now_empty)
{
	struct fgroup *g;

	for (unsigned k = 0; k < MMS_MEM_KIND_COUNT; k++) {
		if (!(p->kinds & 1u << k) || !p->snap_blocks[k])
			continue;
		g = fgroup_of(p, (uint16_t)k, NULL, NULL);
		if (!g)
			return -ENOMEM;
		if (now_empty) {
			/* The groups are made from the state next: what they
			 * had at the peak is kept as changed since. */
			g->pk_bytes = p->snap_bytes[k];
			g->pk_blocks = p->snap_blocks[k];
			g->ver = p->ver;
		} else {
			g->d.bytes = p->snap_bytes[k];
			g->d.blocks = p->snap_blocks[k];
		}
	}
	return 0;
}

/* Block now, tagged from owner old to its origin's, was live at the last
 * peak: its bytes move there too, from old's group to its owner's (whose
 * peak figures are kept: both changed since the peak). */
static int peak_retag(struct dpass *p, const struct mms__blk *now, const struct mms__origin *o, const char *old)
{
	struct fgroup *from = fgroup_of(p, now->mem, o->pool, old), *to;
	size_t ifrom = from ? (size_t)(from - p->g) : 0;

	/* Both groups exist (the callers moved or made them): were one
	 * made here, the array might move, hence the index. */
	to = from ? fgroup_of(p, now->mem, o->pool, o->owner) : NULL;
	if (!to)
		return -ENOMEM;
	from = &p->g[ifrom];
	from->pk_bytes -= now->size;
	from->pk_blocks--;
	to->pk_bytes += now->size;
	to->pk_blocks++;
	return 0;
}

/* After bykind_end() at an OWNER tag: the block it retagged, when live at
 * the peak, moves there too from its kind's group to its owner's, as
 * dpass_retag() moves it. */
static int bykind_retag_peak(struct dpass *p)
{
	const struct mms__state *st = p->st;
	const struct mms__blk *now = st->last_blk;
	const struct mms__origin *o = st->last_blk_valid ? mms__blk_origin(st, now) : NULL;

	if (!o || !o->owner || !(p->kinds & 1u << now->mem) || now->alloc_event >= p->peak_pos)
		return 0;
	return peak_retag(p, now, o, NULL);
}

/* The end of the by-kind way: the groups as they were at the peak, then
 * what the state holds now (with the event just applied). */
static int bykind_end(struct dpass *p)
{
	p->bykind = 0;
	if (bykind_groups(p, 1))
		return -ENOMEM;
	return mms__state_each(p->st, seed_blk, p) ? -ENOMEM : 0;
}

/* A block tagged with an owner after the fact (msmemscope_owner_tag):
 * its bytes move from its old owner's group to the new one's, now, and
 * at the last peak too when the block was live there: a block live now
 * that was allocated before the peak was live at the peak. */
static int dpass_retag(struct dpass *p, const mms_event_t *ev)
{
	const struct mms__state *st = p->st;
	const struct mms__blk *now = st->last_blk;
	const struct mms__origin *o = st->last_blk_valid ? mms__blk_origin(st, now) : NULL;

	if (!o || st->last_old_owner == o->owner)
		return 0;
	if (fgroup_move(p, now->mem, o->pool, st->last_old_owner, -(int64_t)now->size, -1) ||
	    fgroup_move(p, now->mem, o->pool, o->owner, (int64_t)now->size, 1))
		return -ENOMEM;
	/* fgroup_move() kept both groups' peak figures: move them too. */
	return now->alloc_event < p->peak_pos ? peak_retag(p, now, o, st->last_old_owner) : 0;
}

/* The double allocs since the last event it saw, when quiet: the groups
 * are inexact from the first. */
static void quiet_sync(struct dpass *p)
{
	const struct mms__state *st = p->st;

	if (p->quiet && st->double_allocs != p->double_allocs) {
		if (!p->double_allocs)
			p->inexact = p->inexact < st->double_alloc_first ? p->inexact : st->double_alloc_first;
		p->double_allocs = st->double_allocs;
	}
}

/* After an event: the double alloc it made, and the peak it reached. */
static void dpass_note(struct dpass *p)
{
	const struct mms__state *st = p->st;
	uint64_t live;

	/* An address handed out while live replaced its block unseen. (Only
	 * MMAP events move the mappings' figures: note_state()'s others.) */
	if (st->double_allocs != p->double_allocs) {
		p->inexact = p->inexact < st->pos ? p->inexact : st->pos;
		p->double_allocs = st->double_allocs;
	}
	live = live_counted(p);
	if (live > p->peak) {
		p->peak = live;
		p->peak_pos = st->pos;
		p->ver++;
		if (p->bykind) {
			for (unsigned d = p->snap_dirty | 1u << MMS_MEM_HOST, k; d; d &= d - 1) {
				k = (unsigned)__builtin_ctz(d);
				p->snap_bytes[k] = st->mem[k].live_bytes;
				p->snap_blocks[k] = st->mem[k].live_blocks;
			}
			p->snap_dirty = 0;
		}
	}
}

/* A new peak, which the last event (maybe one of those it is not fed)
 * reached. */
static int dpass_peak(struct mms__sub *sub, struct mms_pass *pass)
{
	struct dpass *p = (struct dpass *)sub;

	(void)pass;
	quiet_sync(p);
	dpass_note(p);
	return 0;
}

static int dpass_event(struct mms__sub *sub, struct mms_pass *pass, const mms_event_t *ev)
{
	struct dpass *p = (struct dpass *)sub;
	const struct mms__state *st = p->st;
	const struct mms__blk *b = st->last_blk;
	int malloc = ev->kind == MMS_EV_MALLOC, rc = 0;

	quiet_sync(p);
	p->snap_dirty |= 1u << (ev->mem & (MMS_MEM_KIND_COUNT - 1));
	if (p->bykind && (ev->kind == MMS_EV_OWNER ||
			  (st->last_blk_valid && (b->mem == MMS_MEM_POOL || b->mem == MMS_MEM_DEVICE)))) {
		/* The first block of another group, or the first owner tag
		 * (a block can have an owner only after one): the state has
		 * the block (or no longer has it), as it has a block an OWNER
		 * tag retagged. From here on every block is followed. */
		if (p->quiet)
			mms__pass_quiet(pass, sub, 0);
		p->quiet = 0;
		rc = bykind_end(p);
		if (!rc && ev->kind == MMS_EV_OWNER)
			rc = bykind_retag_peak(p);
		if (rc)
			return rc;
	} else if (ev->kind == MMS_EV_OWNER) {
		return ev->sub == MMS_OWNER_TAG ? dpass_retag(p, ev) : 0;
	} else if (ev->mem == MMS_MEM_MMAP) {
		/* A new mapping where nothing was mapped is a block more;
		 * anything else may have cut or covered other mappings. */
		if (malloc && st->last_blk_valid && st->mem[MMS_MEM_MMAP].live_bytes == p->mmap_bytes + ev->size &&
		    st->mem[MMS_MEM_MMAP].live_blocks == p->mmap_blocks + 1)
			rc = p->bykind ? 0 : fgroup_move_blk(p, b, (int64_t)ev->size, 1);
		else if (st->mem[MMS_MEM_MMAP].live_bytes != p->mmap_bytes ||
			 st->mem[MMS_MEM_MMAP].live_blocks != p->mmap_blocks)
			p->inexact = p->inexact < st->pos ? p->inexact : st->pos;
		p->mmap_bytes = st->mem[MMS_MEM_MMAP].live_bytes;
		p->mmap_blocks = st->mem[MMS_MEM_MMAP].live_blocks;
	} else if (st->last_blk_valid && !p->bykind) {
		rc = fgroup_move_blk(p, b, malloc ? (int64_t)b->size : -(int64_t)b->size, malloc ? 1 : -1);
	}
	dpass_note(p);
	return rc;
}

/* The tree of the groups as they were at the last peak. */
static int peak_tree(struct dpass *p, mms_decompose_tree_t **out)
{
	struct dgroup *g = malloc((p->n ? p->n : 1) * sizeof(*g));
	size_t i, n = 0;
	int rc;

	if (!g)
		return -ENOMEM;
	for (i = 0; i < p->n; i++) {
		const struct fgroup *f = &p->g[i];

		g[n] = f->d;
		if (f->ver == p->ver) {
			g[n].bytes = f->pk_bytes;
			g[n].blocks = f->pk_blocks;
		}
		n += g[n].blocks != 0;
	}
	rc = groups_tree(g, n, p->peak_pos, out);
	free(g);
	return rc;
}

/* At the end of the log (a damaged log ends where its readable events
 * end): the end's tree, and the peak's from the groups followed, or, when
 * they could not follow an event before the peak, from a second look. */
static int dpass_end(struct mms__sub *sub, struct mms_pass *pass)
{
	struct dpass *p = (struct dpass *)sub;

	if (pass->round)
		return decompose_state(mms__pass_state(pass), p->kinds, &p->res->peak);
	quiet_sync(p);
	if (decompose_state(p->st, p->kinds, &p->res->end))
		return -ENOMEM;
	if (p->o.end_only)
		return 0;
	if (p->inexact > p->peak_pos) {
		if (p->bykind && bykind_groups(p, 0))
			return -ENOMEM;
		return peak_tree(p, &p->res->peak);
	}
	mms__pass_again(pass, sub, p->peak_pos, 0);
	return 0;
}

static void dpass_drop(struct mms__sub *sub)
{
	struct dpass *p = (struct dpass *)sub;

	mms__map_free(&p->ix);
	free(p->g);
	free(p);
}

MMS__EXPORT void mms_decompose_free(mms_decompose_t *d)
{
	if (!d)
		return;
	mms_decompose_tree_free(d->end);
	mms_decompose_tree_free(d->peak);
	free(d);
}

MMS__EXPORT int mms_decompose_add(mms_pass_t *pass, const mms_decompose_options_t *opt, mms_decompose_t **out)
{
	struct dpass *p;
	int rc;

	if (!out)
		return MMS_EUSAGE;
	*out = NULL;
	if (!pass)
		return MMS_EUSAGE;
	p = calloc(1, sizeof(*p));
	*out = calloc(1, sizeof(**out));
	if (!p || !*out) {
		free(p);
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	if (opt)
		p->o = *opt;
	p->kinds = p->o.kinds ? p->o.kinds : ~0u;
	p->peak_kinds = p->o.kinds ? p->o.kinds : PROCESS_KINDS;
	p->res = *out;
	mms__map_init(&p->ix);
	p->sub.name = "decompose";
	p->sub.kinds = 1u << MMS_EV_MALLOC | 1u << MMS_EV_FREE | 1u << MMS_EV_OWNER;
	p->sub.begin = dpass_begin;
	p->sub.event = dpass_event;
	p->sub.peak = dpass_peak;
	p->sub.end = dpass_end;
	p->sub.drop = dpass_drop;
	p->sub.status = &(*out)->status;
	rc = mms__pass_add(pass, &p->sub);
	if (rc) {
		mms_decompose_free(*out);
		*out = NULL;
	}
	return rc;
}

MMS__RUN_ONE(decompose, mms_decompose_options_t, mms_decompose_t)
