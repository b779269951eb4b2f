/* SPDX-License-Identifier: MIT */
/* reach.c: which heap blocks live at the end of a log the program still
 * reached when it exited, from the recorder's scan of its memory then
 * (hooks/reach.c: the ranges read, and the words in them that point into
 * anonymous memory). As valgrind's leak check, but after the fact:
 *
 *  - A word inside a live heap block is an edge from that block; one in
 *    malloc's own memory outside every live block (freed chunks, malloc's
 *    bookkeeping: the heap, glibc's arenas) is nothing; any other (a
 *    module's data and .bss, a stack, the program's own mappings, thread-
 *    local storage) is a root.
 *  - A word pointing at a block's start, or 8 bytes past it (valgrind's
 *    "newarray" and "length64" heuristics: new[]'s element count, a
 *    length prefix) unless the block's first word is a pointer (the scan
 *    listed it: no count nor length), is a start pointer; so is one into
 *    its middle that points at a vtable pointer, in a block whose first
 *    word is one too (valgrind's "multipleinheritance": a pointer to an
 *    object's second base class; the scan lists the words of anonymous
 *    memory that hold a vtable's address, their values outside it); any
 *    other into its middle is interior.
 *  - Reachable: reached from a root through start pointers only.
 *    Possibly leaked: reached only along paths with an interior pointer.
 *    The rest is leaked: indirectly when a leaked block points to it
 *    (its fate is its pointer's), definitely otherwise (the roots of the
 *    leaked structures: a cycle's first block in address order).
 *
 * Verdicts exist only for a log that reached exit whole, with a scan that
 * read everything (META "reach" says so, its record counts match): else
 * every block is MMS_REACH_UNKNOWN and the reports say what they said
 * before, "live at exit". Built once per log, over the blocks live at its
 * end, on the first question. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "base-int.h"
#include "log-int.h"
#include "state-int.h"

/* A heap block live at the end. */
struct node {
	uint64_t addr, size;
	int late; /* allocated as the scan ran or after: its words are roots,
		     and it is reachable or has no verdict */
};

struct region {
	uint64_t lo, hi;
	unsigned flags; /* enum mms_reach_region */
};

/* What a leaked block lost with it: the indirectly leaked blocks counted
 * under it. */
struct lost {
	uint64_t blocks, bytes;
};

struct mms__reach {
	struct node *nodes; /* by address */
	uint8_t *status;    /* enum mms_reach, by node */
	struct lost *lost;  /* by node: a leaked one's; NULL when none leaked */
	size_t n;
};

struct graph {
	struct node *nodes;
	size_t n;
	uint64_t late_ns; /* the scan's start (UINT64_MAX: not known) */
	struct region *rgn;
	size_t nrgn, rgn_cap;
	uint64_t *edges; /* from << 33 | to << 2 | enum edge_kind; roots' from is n */
	size_t nedges, edges_cap;
	uint8_t *first_ptr; /* by node: its first word is a pointer the scan listed */
	uint64_t *vt;       /* the places of vtable pointers, ascending */
	size_t nvt, vt_cap;
	int arena_known; /* the scan marked glibc's main arena, in libc's data */
};

/* What an edge points at in its block. */
enum edge_kind {
	EDGE_START = 0,
	EDGE_INTERIOR = 1,
	EDGE_PAST8 = 2, /* 8 bytes past the start: a start pointer unless the
			   block's first word is a pointer (first_ptr) */
};
#define EDGE_TO(e) ((size_t)((e) >> 2 & 0x7fffffffu))

int mms__reach_note(mms_log_t *log, const struct mms__rec *r)
{
	uint8_t head[20], *p = head;

	p = mms_put_u(p, r->type);
	p = mms_put_u(p, r->slen[0]);
	while (log->reach_cap - log->reach_len < (size_t)(p - head) + r->slen[0]) {
		size_t cap = log->reach_cap ? log->reach_cap * 2 : 65536;
		uint8_t *q = realloc(log->reach_recs, cap);

		if (!q)
			return -ENOMEM;
		log->reach_recs = q;
		log->reach_cap = cap;
	}
	memcpy(log->reach_recs + log->reach_len, head, (size_t)(p - head));
	log->reach_len += (size_t)(p - head);
	memcpy(log->reach_recs + log->reach_len, r->s[0], r->slen[0]);
	log->reach_len += r->slen[0];
	if (r->type == MMS_TAG_REACH_REFS)
		log->reach_nrefs++;
	else
		log->reach_nregions++;
	return 0;
}

void mms__reach_free(mms_log_t *log)
{
	if (log->reach) {
		free(log->reach->nodes);
		free(log->reach->status);
		free(log->reach->lost);
		free(log->reach);
	}
	free(log->reach_recs);
}

void mms__reach_info(mms_log_t *log)
{
	mms_log_info_t *in = &log->info;
	const uint8_t *p, *end;
	uint64_t f[8] = { 0 };
	const char *v;
	size_t len, i;

	in->reach_scan = MMS_REACH_SCAN_NONE;
	in->reach_pointers = in->reach_bytes = in->reach_ns = in->reach_threads = 0;
	log->reach_started = 0;
	if (mms_log_meta(log, "reach", &v, &len)) {
		/* Records of a scan whose end is missing. */
		if (log->reach_nrefs || log->reach_nregions)
			in->reach_scan = MMS_REACH_SCAN_LOST;
		return;
	}
	p = (const uint8_t *)v;
	end = p + len;
	for (i = 0; i < 7 && !mms_get_u(&p, end, &f[i]); i++)
		;
	if (i < 7) {
		in->reach_scan = MMS_REACH_SCAN_LOST;
		return;
	}
	/* The scan's start, where the recorder wrote it. */
	if (!mms_get_u(&p, end, &f[7])) {
		log->reach_start = f[7];
		log->reach_started = 1;
	}
	in->reach_pointers = f[1];
	in->reach_bytes = f[4];
	in->reach_threads = f[5];
	in->reach_ns = f[6];
	in->reach_scan = f[0] == MMS_SCAN_LIMIT || f[0] == MMS_SCAN_RANGES ? MMS_REACH_SCAN_LIMIT
			 : f[0] == MMS_SCAN_NOREAD                         ? MMS_REACH_SCAN_NOREAD
			 : f[0] == MMS_SCAN_ALLOCATOR                      ? MMS_REACH_SCAN_ALLOCATOR
			 : f[0] != MMS_SCAN_DONE || f[2] != log->reach_nrefs || f[3] != log->reach_nregions
				 ? MMS_REACH_SCAN_LOST
				 : MMS_REACH_SCAN_WHOLE;
}

/* Whether the scan's records are all there and it read everything, in a
 * log that reached exit whole. */
static int scan_whole(const mms_log_t *log)
{
	return log->info.reach_scan == MMS_REACH_SCAN_WHOLE && log->info.complete && !log->info.cut &&
	       !log->info.damaged;
}

static int node_cmp(const void *a, const void *b)
{
	const struct node *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int add_node(const struct mms__blk *b, void *ctx)
{
	struct graph *g = ctx;

	if (b->mem != MMS_MEM_HOST)
		return 0;
	g->nodes[g->n++] = (struct node){ b->addr, b->size, b->time_ns >= g->late_ns };
	return 0;
}

static int count_node(const struct mms__blk *b, void *ctx)
{
	*(size_t *)ctx += b->mem == MMS_MEM_HOST;
	return 0;
}

/* The first of n items of `stride` bytes at base, sorted by the uint64_t
 * at offset `off` in each, whose key is above a (n: none is). */
static size_t first_above(const void *base, size_t n, size_t stride, size_t off, uint64_t a)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		uint64_t key;

		memcpy(&key, (const char *)base + mid * stride + off, sizeof(key));
		if (key <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The node holding address a (a zero-sized block holds its own address),
 * or n. */
static size_t node_at(const struct graph *g, uint64_t a)
{
	size_t i = first_above(g->nodes, g->n, sizeof(*g->nodes), offsetof(struct node, addr), a);

	if (!i--)
		return g->n;
	return a - g->nodes[i].addr < (g->nodes[i].size ? g->nodes[i].size : 1) ? i : g->n;
}

/* The flags of the scanned range holding a, or -1. */
static long region_at(const struct graph *g, uint64_t a)
{
	size_t i = first_above(g->rgn, g->nrgn, sizeof(*g->rgn), offsetof(struct region, hi), a);

	return i < g->nrgn && a >= g->rgn[i].lo ? (long)g->rgn[i].flags : -1;
}

static int region_cmp(const void *a, const void *b)
{
	const struct region *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* One REACH_REGIONS value. */
static int add_regions(struct graph *g, const uint8_t *p, const uint8_t *end)
{
	uint64_t lo, len, flags;

	while (p < end) {
		if (mms_get_u(&p, end, &lo) || mms_get_u(&p, end, &len) || mms_get_u(&p, end, &flags))
			return MMS_ECORRUPT;
		if (mms__grow(&g->rgn, &g->rgn_cap, g->nrgn, sizeof(*g->rgn)))
			return -ENOMEM;
		g->rgn[g->nrgn++] = (struct region){ lo, lo + len, (unsigned)flags };
		if ((flags & (MMS_RGN_FILE | MMS_RGN_ARENA)) == (MMS_RGN_FILE | MMS_RGN_ARENA))
			g->arena_known = 1;
	}
	return 0;
}

/* The size of the chunk glibc's malloc cuts for a block of size bytes
 * (request2size: its 8-byte header, 16-byte aligned, 32 at least), which
 * begins 16 bytes before the block. */
static uint64_t glibc_chunk(uint64_t size)
{
	return size + 8 + 15 < 32 ? 32 : (size + 8 + 15) & ~(uint64_t)15;
}

/* Whether a is in a scanned range of anonymous memory (where a REFS word
 * that is no vtable pointer points). */
static int in_anon(const struct graph *g, uint64_t a)
{
	long flags = region_at(g, a);

	return flags >= 0 && !(flags & MMS_RGN_FILE);
}

/* One REACH_REFS value: the places of its words that hold a vtable's
 * address (their values outside the anonymous ranges), into g->vt. */
static int add_vtables(struct graph *g, const uint8_t *p, const uint8_t *end)
{
	uint64_t where = 0, value = 0, dw, dv;

	while (p < end) {
		if (mms_get_u(&p, end, &dw) || mms_get_u(&p, end, &dv))
			return MMS_ECORRUPT;
		where += dw << 3;
		value += (uint64_t)mms_unzigzag(dv);
		if (in_anon(g, value))
			continue;
		if (mms__grow(&g->vt, &g->vt_cap, g->nvt, sizeof(*g->vt)))
			return -ENOMEM;
		g->vt[g->nvt++] = where;
	}
	return 0;
}

/* Whether the word at a holds a vtable's address. */
static int vt_at(const struct graph *g, uint64_t a)
{
	size_t i = first_above(g->vt, g->nvt, sizeof(*g->vt), 0, a);

	return i && g->vt[i - 1] == a;
}

/* One REACH_REFS value: its words that point into a live block. */
static int add_refs(struct graph *g, const uint8_t *p, const uint8_t *end)
{
	uint64_t where = 0, value = 0, dw, dv;

	while (p < end) {
		size_t to, from;
		long flags;
		uint64_t off;

		if (mms_get_u(&p, end, &dw) || mms_get_u(&p, end, &dv))
			return MMS_ECORRUPT;
		where += dw << 3;
		value += (uint64_t)mms_unzigzag(dv);
		from = node_at(g, where);
		/* A block whose first word is a pointer holds no element
		 * count or length there (valgrind reads the word; the scan
		 * lists it when it points into anonymous memory). */
		if (from < g->n && where == g->nodes[from].addr)
			g->first_ptr[from] = 1;
		to = node_at(g, value);
		if (to == g->n || from == to)
			continue;
		off = value - g->nodes[to].addr;
		/* A block a running thread made while the scan ran: what it
		 * points to may have been moved there from memory already
		 * read, so its words are roots. */
		if (from < g->n && g->nodes[from].late) {
			from = g->n;
		} else if (from == g->n) {
			/* Outside every live block: in malloc's own memory,
			 * nothing; elsewhere, a root. */
			flags = region_at(g, where);
			if (flags < 0 || (flags & (MMS_RGN_HEAP | MMS_RGN_ARENA)))
				continue;
			/* glibc's main arena, in libc's data, points to chunk
			 * headers: its top chunk's, its free chunks'. A header
			 * follows a block's chunk, and lies in its last 8 bytes
			 * when the block fills its chunk. A recorder that found
			 * the arena marked it malloc's (above); for one that did
			 * not, such a word of a module's data is no pointer of
			 * the program's. */
			if (!g->arena_known && (flags & MMS_RGN_FILE) && off == glibc_chunk(g->nodes[to].size) - 16)
				continue;
		}
		if (mms__grow(&g->edges, &g->edges_cap, g->nedges, sizeof(*g->edges)))
			return -ENOMEM;
		g->edges[g->nedges++] =
			(uint64_t)from << 33 | (uint64_t)to << 2 |
			(off == 0 || (!(value & 7) && vt_at(g, value) && vt_at(g, g->nodes[to].addr)) ? EDGE_START
			 : off == 8                                                                   ? EDGE_PAST8
												      : EDGE_INTERIOR);
	}
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Marks, from the nodes in stack[0, top), every node an edge of the
 * chosen kind leads to whose status is `from`, as `to`. first[i] indexes
 * node i's first edge (first[n]: the roots'). With lost, each node
 * marked is counted in *into, with what it had lost itself (a leaked
 * block of an earlier pass, now found lost with this one). */
static void mark(const struct graph *g, const size_t *first, uint8_t *status, size_t *stack, size_t top, int any,
		 unsigned from, unsigned to, struct lost *lost, struct lost *into)
{
	while (top) {
		size_t v = stack[--top];

		for (size_t e = first[v]; e < first[v + 1]; e++) {
			size_t w = EDGE_TO(g->edges[e]);

			if ((!any && (g->edges[e] & EDGE_INTERIOR)) || status[w] != from)
				continue;
			status[w] = (uint8_t)to;
			stack[top++] = w;
			if (lost) {
				into->blocks += 1 + lost[w].blocks;
				into->bytes += g->nodes[w].size + lost[w].bytes;
				lost[w] = (struct lost){ 0, 0 };
			}
		}
	}
}

static int solve(struct graph *g, struct mms__reach *r)
{
	size_t *first = calloc(g->n + 2, sizeof(*first)), *stack = malloc((g->n + 1) * sizeof(*stack));
	uint8_t *status = malloc(g->n ? g->n : 1);
	struct lost *lost;
	size_t i, top, nleaked = 0;

	if (!first || !stack || !status) {
		free(first);
		free(stack);
		free(status);
		return -ENOMEM;
	}
	/* Every block's first word is known now. */
	for (i = 0; i < g->nedges; i++)
		if ((g->edges[i] & 3) == EDGE_PAST8)
			g->edges[i] ^= EDGE_PAST8 ^ (g->first_ptr[EDGE_TO(g->edges[i])] ? EDGE_INTERIOR : EDGE_START);
	if (g->nedges)
		qsort(g->edges, g->nedges, sizeof(*g->edges), u64_cmp);
	for (i = 0; i < g->nedges; i++)
		first[(g->edges[i] >> 33) + 1]++;
	for (i = 0; i <= g->n; i++)
		first[i + 1] += first[i];
	memset(status, MMS_REACH_LEAKED, g->n);
	/* From the roots (node n) through start pointers. */
	stack[0] = g->n;
	mark(g, first, status, stack, 1, 0, MMS_REACH_LEAKED, MMS_REACH_REACHABLE, NULL, NULL);
	/* Through any pointer, from the roots and what they reach. */
	top = 0;
	stack[top++] = g->n;
	for (i = 0; i < g->n; i++)
		if (status[i] == MMS_REACH_REACHABLE)
			stack[top++] = i;
	mark(g, first, status, stack, top, 1, MMS_REACH_LEAKED, MMS_REACH_POSSIBLE, NULL, NULL);
	/* A block made as the scan ran that it found no start pointer to:
	 * the memory it read may have held none yet (one it found is
	 * reachable). Its words were roots: what it points to is
	 * reachable. */
	for (i = 0; i < g->n; i++) {
		if (g->nodes[i].late && status[i] != MMS_REACH_REACHABLE)
			status[i] = MMS_REACH_UNKNOWN;
		nleaked += status[i] == MMS_REACH_LEAKED;
	}
	/* What a leaked block points to is lost with it, and counted with
	 * the first leaked block (by address) found to lead to it: a leaked
	 * block that a later one leads to becomes indirectly leaked, with
	 * all it had (valgrind's cliques). Without the memory to count,
	 * the verdicts only. */
	lost = nleaked ? calloc(g->n, sizeof(*lost)) : NULL;
	for (i = 0; i < g->n; i++) {
		if (status[i] != MMS_REACH_LEAKED)
			continue;
		stack[0] = i;
		status[i] = MMS_REACH_UNKNOWN; /* a cycle back to itself stops here */
		mark(g, first, status, stack, 1, 1, MMS_REACH_LEAKED, MMS_REACH_INDIRECT, lost, lost ? &lost[i] : NULL);
		status[i] = MMS_REACH_LEAKED;
	}
	free(first);
	free(stack);
	r->nodes = g->nodes;
	r->status = status;
	r->lost = lost;
	r->n = g->n;
	g->nodes = NULL;
	return 0;
}

/* Builds the verdicts over st's live heap blocks. 0, or -ENOMEM. */
static int build(const struct mms__state *st, struct mms__reach *r)
{
	const mms_log_t *log = st->log;
	struct graph g = { 0 };
	const uint8_t *p = log->reach_recs, *end;
	size_t n = 0;
	int rc = 0;

	mms__state_each(st, count_node, &n);
	if (n >= (1ull << 31) || !p)
		return 0;
	g.late_ns = log->reach_started ? mms__log_time(log, log->reach_start) : UINT64_MAX;
	end = p + log->reach_len;
	g.nodes = malloc((n ? n : 1) * sizeof(*g.nodes));
	g.first_ptr = calloc(n ? n : 1, 1);
	if (!g.nodes || !g.first_ptr) {
		free(g.nodes);
		free(g.first_ptr);
		return -ENOMEM;
	}
	mms__state_each(st, add_node, &g);
	qsort(g.nodes, g.n, sizeof(*g.nodes), node_cmp);
	/* The ranges first: the words' places are looked up in them; then
	 * the vtable pointers, which the words into blocks are looked up in. */
	for (int pass = 0; pass < 3 && !rc; pass++) {
		const uint8_t *q = p;
		uint64_t type, len;

		while (q < end && !rc) {
			if (mms_get_u(&q, end, &type) || mms_get_u(&q, end, &len) || len > (uint64_t)(end - q)) {
				rc = MMS_ECORRUPT;
				break;
			}
			if (pass == 0 && type == MMS_TAG_REACH_REGIONS)
				rc = add_regions(&g, q, q + len);
			else if (pass == 1 && type == MMS_TAG_REACH_REFS)
				rc = add_vtables(&g, q, q + len);
			else if (pass == 2 && type == MMS_TAG_REACH_REFS)
				rc = add_refs(&g, q, q + len);
			q += len;
		}
		if (!pass && g.nrgn)
			qsort(g.rgn, g.nrgn, sizeof(*g.rgn), region_cmp);
		/* In address order already (the scan reads memory in that
		 * order); vt_at() relies on it, so it is made sure. */
		if (pass == 1 && g.nvt)
			qsort(g.vt, g.nvt, sizeof(*g.vt), u64_cmp);
	}
	if (!rc)
		rc = solve(&g, r);
	free(g.nodes);
	free(g.rgn);
	free(g.edges);
	free(g.first_ptr);
	free(g.vt);
	/* A bad record: no verdicts (the reports say "live at exit"). */
	return rc == -ENOMEM ? rc : 0;
}

/* The node of heap block b in the verdicts at the end (built at the
 * first call), or -1 where it has none. */
static long reach_node(const struct mms__state *st, const struct mms__blk *b)
{
	mms_log_t *log = st->log;
	struct mms__reach *r = log->reach;
	size_t i;

	if (b->mem != MMS_MEM_HOST || !b->live)
		return -1;
	/* Built once, from the state at the end of the log. */
	if (!log->reach_built) {
		if (st->pos < log->events || !scan_whole(log))
			return -1;
		log->reach_built = 1;
		r = calloc(1, sizeof(*r));
		if (r && build(st, r)) {
			free(r);
			r = NULL;
		}
		log->reach = r;
	}
	if (!r || !r->status || !b->addr)
		return -1;
	i = first_above(r->nodes, r->n, sizeof(*r->nodes), offsetof(struct node, addr), b->addr - 1);
	return i < r->n && r->nodes[i].addr == b->addr ? (long)i : -1;
}

/* The verdict r of block b, live at the end, unless it was allocated
 * before recording last stopped: then what became of it is not in the
 * log (MMS_REACH_UNRECORDED), unless the program still pointed to it. */
static unsigned gap_verdict(const struct mms__state *st, const struct mms__blk *b, unsigned r)
{
	if (r != MMS_REACH_REACHABLE && mms__blk_before_gap(st, b))
		return MMS_REACH_UNRECORDED;
	return r;
}

unsigned mms__blk_reach_at_end(const struct mms__state *st, const struct mms__blk *b)
{
	long i = reach_node(st, b);

	return gap_verdict(st, b, i < 0 ? MMS_REACH_UNKNOWN : st->log->reach->status[i]);
}

int mms__reach_known(const struct mms__state *st)
{
	return st->pos >= st->log->events && scan_whole(st->log);
}

MMS__EXPORT const char *mms_reach_name(unsigned reach)
{
	static const char *const names[] = { "unknown", "leaked", "indirect", "possible", "reachable", "unrecorded" };

	return reach < sizeof(names) / sizeof(names[0]) ? names[reach] : NULL;
}

void mms__blk_at_end(const struct mms__state *st, struct mms__rtmemo *memo, const struct mms__blk *b, mms_block_t *out)
{
	long i;

	out->runtime = mms__blk_runtime_at_end(st, memo, b);
	if (out->runtime)
		return;
	if ((i = reach_node(st, b)) >= 0) {
		out->reach = st->log->reach->status[i];
		if (st->log->reach->lost) {
			out->indirect_blocks = st->log->reach->lost[i].blocks;
			out->indirect_bytes = st->log->reach->lost[i].bytes;
		}
	}
	out->reach = gap_verdict(st, b, out->reach);
	if (out->reach == MMS_REACH_UNRECORDED)
		out->indirect_blocks = out->indirect_bytes = 0;
}
