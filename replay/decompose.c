/* SPDX-License-Identifier: MIT */
/* decompose.c: live bytes broken down as a tree, memory kind (or pool)
 * first, then the levels of the owner tag ("A@B@C"), at any position of a
 * replay, and at the end of a log together with its peak. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "replay-int.h"

/* What blocks without an owner tag are filed under. */
#define NO_OWNER "(no owner)"

/* --- live blocks grouped by (kind, pool, owner) ---------------------------------- */

struct dgroup {
	uint16_t mem;
	const char *pool, *owner; /* log arena and interned owner strings */
	uint64_t bytes, blocks;
};

struct dgroups {
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
	const char *pool = b->mem == MMS_MEM_POOL ? b->pool : NULL;
	uint64_t h = key_hash(b->mem, pool, b->owner), *v;
	struct dgroup *g;
	int isnew;

	/* Owner strings are interned and pool names are the log's: equal
	 * keys are equal pointers. Probe on past another key's hash. */
	for (;; h++) {
		v = mms__map_put(&d->ix, h, &isnew);
		if (!v)
			goto oom;
		if (isnew)
			break;
		g = &d->g[*v - 1];
		if (g->mem == b->mem && g->pool == pool && g->owner == b->owner)
			goto found;
	}
	if (mms__grow(&d->g, &d->cap, d->n, sizeof(*d->g)))
		goto oom;
	g = &d->g[d->n++];
	memset(g, 0, sizeof(*g));
	g->mem = b->mem;
	g->pool = pool;
	g->owner = b->owner;
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
	switch (g->mem) {
	case MMS_MEM_HOST:
		return "HOST";
	case MMS_MEM_MMAP:
		return "MMAP";
	default:
		return g->pool && *g->pool ? g->pool : "POOL";
	}
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

/* Builds the result from the groups of a state. */
static int decompose_state(const struct mms__state *st, mms_decompose_t **out)
{
	struct dgroups d = { 0 };
	struct tree tr = { 0 };
	mms_decompose_t *res = NULL;
	size_t roots = 0, i, n = 0;
	int rc;

	*out = NULL;
	mms__map_init(&d.ix);
	mms__state_each(st, group_blk, &d);
	rc = d.err;
	for (i = 0; !rc && i < d.n; i++)
		rc = tree_add(&tr, &roots, &d.g[i]);
	if (rc)
		goto done;
	/* One allocation: the header, the nodes, then their names. */
	res = malloc(sizeof(*res) + tr.n * sizeof(*res->nodes) + tr.text_len);
	if (!res) {
		rc = -ENOMEM;
		goto done;
	}
	memset(res, 0, sizeof(*res));
	res->position = st->pos;
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
	mms__map_free(&d.ix);
	free(d.g);
	free(tr.t);
	free(tr.text);
	return rc;
}

MMS__EXPORT int mms_decompose_replay(const mms_replay_t *r, mms_decompose_t **out)
{
	if (!out)
		return MMS_EUSAGE;
	*out = NULL;
	if (!r)
		return MMS_EUSAGE;
	return decompose_state(mms__replay_state(r), out);
}

MMS__EXPORT void mms_decompose_free(mms_decompose_t *d)
{
	free(d);
}

/* --- the end and the peak of a log ------------------------------------------------- */

/* Replays a fresh forward-only replay up to position `to` (UINT64_MAX: the
 * end), noting where the live bytes of all kinds first reached their
 * highest in *peak_pos when not NULL. Decomposes the state there. */
static int pass(mms_log_t *log, uint64_t to, uint64_t *peak_pos, mms_decompose_t **out)
{
	mms_replay_options_t ro = { .forward_only = 1 };
	const struct mms__state *st;
	mms_replay_t *r;
	uint64_t peak = 0;
	int rc;

	rc = mms_replay_open_ex(log, &ro, &r);
	if (rc)
		return rc;
	st = mms__replay_state(r);
	/* A fork child starts with its inherited heap: position 0 may be
	 * the peak. */
	peak = st->peak_total;
	if (peak_pos)
		*peak_pos = 0;
	while (st->pos < to) {
		rc = mms_replay_next(r, NULL);
		if (rc <= 0)
			break;
		if (peak_pos && st->peak_total > peak) {
			peak = st->peak_total;
			*peak_pos = st->pos;
		}
	}
	/* The end of a damaged log is where its readable events end. */
	if (rc >= 0 || rc == MMS_ECORRUPT || rc == MMS_EORDER)
		rc = decompose_state(st, out);
	mms_replay_close(r);
	return rc;
}

MMS__EXPORT int mms_decompose_log(mms_log_t *log, mms_decompose_t **end, mms_decompose_t **peak)
{
	uint64_t peak_pos;
	int rc;

	if (!end || !peak)
		return MMS_EUSAGE;
	*end = *peak = NULL;
	if (!log)
		return MMS_EUSAGE;
	rc = pass(log, UINT64_MAX, &peak_pos, end);
	if (rc)
		return rc;
	/* The state at the peak is replayed again rather than copied at
	 * every new high, which a growing heap reaches at each allocation. */
	rc = pass(log, peak_pos, NULL, peak);
	if (rc) {
		mms_decompose_free(*end);
		*end = NULL;
	}
	return rc;
}
