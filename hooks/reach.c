/* SPDX-License-Identifier: MIT */
/* reach.c: at the end of exit, the words of the process's writable memory
 * that point into its anonymous memory, so that a reader can tell the
 * blocks live at exit that nothing points to any more (leaked) from those
 * the program still reaches from its globals, its stacks and the blocks
 * they reach (valgrind's "still reachable"). The recorder knows no block
 * boundaries: it writes the ranges it read (REACH_REGIONS) and the
 * pointer-like words (REACH_REFS, where and what), and the reader builds
 * the graph over the blocks live at the end (replay/core/reach.c).
 *
 * What is read: every private writable mapping (modules' data and .bss,
 * the heap, anonymous memory, the exiting thread's stack from the
 * recorder's outermost frame up, another thread's from its stack pointer too where the
 * kernel tells it (peer_dead()), else whole), but the
 * recorder's own (its module's writable segments, its arena, the log),
 * and of those only the pages present or swapped out (the pagemap says;
 * a page never touched holds no pointer). The memory is read with
 * process_vm_readv, which fails where a page went away under another
 * thread instead of faulting. A word is written when it points into an
 * anonymous mapping (where heap blocks live), 8-byte aligned, at most
 * MMS_REACH_MAX_PAIRS of them (of MAX_RANGES ranges, MMS_REACH_MAX_BYTES
 * read); so is a word of anonymous memory that holds the address of what
 * looks like a C++ vtable, as valgrind tells one (see is_vtable()): the
 * reader takes a pointer into a block's middle for one to its start
 * where both that word and the block's first are vtable pointers
 * (valgrind's "multipleinheritance" heuristic: a pointer to an object's
 * second base class). [heap] and glibc's
 * other arenas, and the main arena's state in libc's data, are marked
 * malloc's, for the reader to leave their freed chunks and bookkeeping
 * out. META "reach" ends the scan: its status
 * and counts, by which a reader knows it read every record. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "exe.h"
#include "hooks-int.h"
#include "log.h"
#include "stamp.h"
#include "unwind.h"

#define MAX_RANGES 65536 /* ranges read; more, and the scan tells nothing */
#define MAX_SELF 8
#define BUF_PAGES 64
#define REC_MAX 4000 /* bytes of a record's value (MMS_MAX_STRING at most) */
#define MAX_FILES 16384 /* readable file mappings kept, for telling vtables */
#define VT_CACHE 8192   /* addresses told vtables or not, by their bits */
#define VT_WORDS 21     /* words of a vtable candidate read, as valgrind */
#define MAX_SPANS 8
#define SPAN_GAP ((uintptr_t)1 << 30)
#define MAX_PEERS 1024 /* other threads whose stacks are read from their stack pointers */
#define RED_ZONE 128   /* bytes below a stack pointer a function may use (x86-64's ABI) */

struct range {
	uintptr_t lo, hi;
	unsigned flags; /* enum mms_reach_region */
};

/* A readable mapping of a file. */
struct fmap {
	uintptr_t lo, hi;
	int exec;
};

/* Another thread of the process, off its CPU as the scan began (blocked
 * in a system call, or waiting for a CPU): its stack pointer then, the
 * CPU time it had run, and the part of its stack below the pointer the
 * scan left unread (dead frames; hi 0: none). */
struct peer {
	long tid;
	uintptr_t sp;
	uint64_t run_ns;
	uintptr_t lo, hi; /* its stack, as glibc tells it at its registration (hi 0: not known) */
	uintptr_t dead_lo, dead_hi;
};

struct scan {
	struct mms_thread *t;
	struct range *r; /* the ranges to read, in address order */
	size_t n;
	unsigned flags; /* of the ranges add_piece adds */
	uintptr_t sp;
	uintptr_t self_lo[MAX_SELF], self_hi[MAX_SELF]; /* the recorder's writable segments */
	size_t nself;
	uintptr_t cmin, cmax; /* the anonymous ranges' extent */
	struct peer *peers;   /* the other threads off their CPUs, by stack pointer */
	size_t npeers;
	size_t hint;          /* the range the last word pointed into */
	struct fmap *f;       /* the readable file mappings, in address order */
	size_t nf;
	/* Their extent in a few spans (mappings less than SPAN_GAP apart in
	 * one): a word between them, a number or a pointer to the heap, is
	 * no vtable's address at the cost of a few comparisons. */
	uintptr_t span_lo[MAX_SPANS], span_hi[MAX_SPANS];
	size_t nspans;
	uintptr_t fmin, fmax;       /* the whole extent (read_run() tests it inline) */
	uintptr_t vt_key[VT_CACHE]; /* is_vtable()'s answers (key 0: none) */
	uint8_t vt_is[VT_CACHE];
	uint8_t *buf;         /* BUF_PAGES pages read at a time */
	uintptr_t page;
	int pagemap;
	/* The record being filled. */
	uint8_t rec[REC_MAX];
	size_t len;
	uintptr_t prev_where, prev_value;
	uint64_t pairs, refs_recs, region_recs, bytes;
	int status; /* enum mms_reach_scan, -1: the log took no more */
};

/* --- the ranges ------------------------------------------------------------- */

/* The recorder's own module's writable segments (its .data and .bss): what
 * it keeps there is its own, copies of the program's addresses among it. */
static int self_segments(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct scan *s = ctx;
	int ours = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum && !ours; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		ours = ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && mms__self_lo >= lo &&
		       mms__self_lo < lo + ph->p_memsz;
	}
	if (!ours)
		return 0;
	for (int i = 0; i < info->dlpi_phnum && s->nself < MAX_SELF; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		s->self_lo[s->nself] = lo & ~(s->page - 1);
		s->self_hi[s->nself++] = (lo + ph->p_memsz + s->page - 1) & ~(s->page - 1);
	}
	return 1;
}

static int add_piece(uintptr_t lo, uintptr_t hi, void *ctx)
{
	struct scan *s = ctx;

	if (s->n >= MAX_RANGES)
		return 1;
	s->r[s->n++] = (struct range){ lo, hi, s->flags };
	return 0;
}

/* Adds [lo, hi) with flags, less the recorder's own ranges. */
static void add_range(struct scan *s, uintptr_t lo, uintptr_t hi, unsigned flags)
{
	for (size_t i = 0; i < s->nself; i++)
		if (lo < s->self_hi[i] && s->self_lo[i] < hi) {
			if (lo < s->self_lo[i])
				add_range(s, lo, s->self_lo[i], flags);
			if (s->self_hi[i] < hi)
				add_range(s, s->self_hi[i], hi, flags);
			return;
		}
	s->flags = flags;
	mms__own_outside(lo, hi, add_piece, s);
}

/* Reads n bytes at `at` of the process into out, without faulting where
 * a page went away: the bytes read, or -1 with errno. */
static long read_self(uintptr_t at, void *out, size_t n)
{
	struct iovec local = { out, n }, remote = { (void *)at, n };

	return syscall(SYS_process_vm_readv, (long)getpid(), &local, 1L, &remote, 1L, 0L);
}

/* Reads n bytes at `at`; 0, or -1 where they cannot all be read. */
static int peek(uintptr_t at, void *out, size_t n)
{
	return read_self(at, out, n) == (long)n ? 0 : -1;
}

/* glibc's arenas other than the first keep their memory in heaps of at
 * most HEAP_MAX, each aligned to HEAP_MAX and begun by a heap_info: the
 * arena, the previous heap, the size in use and the size made writable
 * (glibc's arena.c). Returns the end of the writable part of the heap at
 * a when a holds one, else 0. */
#define HEAP_MAX (64ull << 20)
static uintptr_t arena_heap_end(uintptr_t a)
{
	uint64_t h[4]; /* ar_ptr, prev, size, mprotect_size */

	if (peek(a, h, sizeof h) || !h[0] || (h[0] & 7) || !h[2] || (h[2] & 4095) || h[2] > HEAP_MAX || h[3] < h[2] ||
	    h[3] > HEAP_MAX)
		return 0;
	/* The first heap of an arena holds the arena right after its
	 * heap_info (32 or 48 bytes, by glibc's version); a later one
	 * points to the heap before it. */
	if (h[1] ? h[1] % HEAP_MAX != 0 : h[0] <= a || h[0] > a + 64)
		return 0;
	return a + h[3];
}

/* Adds anonymous memory [lo, hi): glibc's arena heaps in it as theirs. */
static void add_anon(struct scan *s, uintptr_t lo, uintptr_t hi)
{
	uintptr_t a = (lo + HEAP_MAX - 1) & ~(uintptr_t)(HEAP_MAX - 1), end;

	for (; a >= lo && a < hi; a += HEAP_MAX) {
		end = arena_heap_end(a);
		if (!end)
			continue;
		if (end > hi)
			end = hi;
		add_range(s, lo, a, 0);
		add_range(s, a, end, MMS_RGN_ARENA);
		lo = end;
	}
	add_range(s, lo, hi, 0);
}

/* --- other threads' stacks --------------------------------------------------
 * The scan reads the exiting thread's stack from the recorder's frame up:
 * what lies below is dead frames, which keep the addresses of blocks the
 * program has let go (valgrind reads every thread's from its stack
 * pointer). Another thread's stack pointer is in /proc/self/task/TID/
 * syscall while the thread is off its CPU, blocked in a system call or
 * waiting for one (an idle worker of a pool, nearly always); its stack is
 * then read from RED_ZONE bytes below it. A thread that ran during the
 * scan (its CPU time in schedstat moved) may have used that part since:
 * it is read at the end, after the rest. */

/* The numbers of a line of hexadecimal and decimal fields ("202 0x7f..
 * 0x80 ..."): up to max of them; returns how many. */
static size_t proc_numbers(const char *p, uint64_t *v, size_t max)
{
	size_t n = 0;

	while (*p && n < max) {
		char *end;

		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			break;
		v[n] = (uint64_t)strtoull(p, &end, 0);
		if (end == p)
			return 0;
		n++;
		p = end;
	}
	return n;
}

/* The CPU time thread tid has run, nanoseconds (schedstat's first field),
 * or -1 when it cannot be read. */
static int peer_run_ns(long tid, uint64_t *run_ns)
{
	char path[64], buf[128];
	uint64_t v[3];

	snprintf(path, sizeof path, "/proc/self/task/%ld/schedstat", tid);
	if (mms__proc_read(path, buf, sizeof buf) <= 0 || proc_numbers(buf, v, 3) < 1)
		return -1;
	*run_ns = v[0];
	return 0;
}

/* Thread tid's stack pointer while it is off its CPU, else -1: its
 * syscall file holds "running", or the call's number (-1: none, the
 * thread waits for a CPU), its six arguments when there is a call, the
 * stack pointer and the program counter. */
static int peer_sp(long tid, uintptr_t *sp)
{
	char path[64], buf[256];
	uint64_t v[9];
	size_t n;

	snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", tid);
	if (mms__proc_read(path, buf, sizeof buf) <= 0 || !strncmp(buf, "running", 7) ||
	    (n = proc_numbers(buf, v, 9)) < 3)
		return -1;
	*sp = (uintptr_t)v[n - 2];
	return 0;
}

/* A task of /proc/self/task: kept among the peers when it is off its CPU
 * with a stack pointer the kernel tells. */
static int peer_step(const char *name, void *ctx)
{
	struct scan *s = ctx;
	long tid = strtol(name, NULL, 10);
	struct peer *p;

	if (s->npeers >= MAX_PEERS || tid == (long)syscall(SYS_gettid))
		return 0;
	p = &s->peers[s->npeers];
	/* The time first: a thread that runs after it changes it (when it
	 * leaves its CPU; meanwhile its syscall file says "running"). */
	if (peer_run_ns(tid, &p->run_ns) || peer_sp(tid, &p->sp) || p->sp <= RED_ZONE)
		return 0;
	p->tid = tid;
	p->lo = p->hi = p->dead_lo = p->dead_hi = 0;
	s->npeers++;
	return 0;
}

/* A recording thread's stack, for its peer. */
static void peer_stack(const struct mms_thread *t, void *ctx)
{
	struct scan *s = ctx;

	for (size_t i = 0; i < s->npeers; i++)
		if (s->peers[i].tid == t->tid) {
			s->peers[i].lo = t->bounds_lo;
			s->peers[i].hi = t->bounds_hi;
		}
}

/* Whether peer p has run no instruction since find_peers(): off its CPU
 * at the same stack pointer, its CPU time the same (a thread that ran and
 * left its CPU again has more). */
static int peer_still(const struct peer *p)
{
	uintptr_t sp;
	uint64_t run_ns;

	return !peer_sp(p->tid, &sp) && sp == p->sp && !peer_run_ns(p->tid, &run_ns) && run_ns == p->run_ns;
}

static int peer_cmp(const void *a, const void *b)
{
	const struct peer *x = a, *y = b;

	return x->sp < y->sp ? -1 : x->sp > y->sp;
}

/* The peers, in the order of their stack pointers, with the stacks of
 * those that recorded. */
static void find_peers(struct scan *s)
{
	if (mms__tasks_each(peer_step, s) || !s->npeers || mms__threads_each_live(s->t, peer_stack, s)) {
		s->npeers = 0;
		return;
	}
	/* Few: an insertion sort, no library call that may allocate. */
	for (size_t i = 1; i < s->npeers; i++)
		for (size_t j = i; j > 0 && peer_cmp(&s->peers[j - 1], &s->peers[j]) > 0; j--) {
			struct peer t = s->peers[j];

			s->peers[j] = s->peers[j - 1];
			s->peers[j - 1] = t;
		}
}

/* The part of [lo, hi) (a mapping, or what is left of one) that is the
 * dead part of a peer's stack: from the stack's start (glibc's word for
 * a recording thread's, the whole [stack] for the first thread's) to
 * RED_ZONE bytes below the peer's stack pointer; *dlo == *dhi: none. One
 * stack pointer per stack: where two peers' fall in one, neither is
 * clipped. */
static void peer_dead(struct scan *s, uintptr_t lo, uintptr_t hi, int stack, uintptr_t *dlo, uintptr_t *dhi)
{
	struct peer *p;
	uintptr_t from, to;
	size_t i;

	*dlo = *dhi = lo;
	for (i = 0; i < s->npeers && s->peers[i].sp < lo; i++)
		;
	if (i == s->npeers || s->peers[i].sp >= hi || (i + 1 < s->npeers && s->peers[i + 1].sp < hi))
		return;
	p = &s->peers[i];
	if (stack)
		from = lo;
	else if (p->hi && p->sp >= p->lo && p->sp < p->hi)
		from = p->lo > lo ? p->lo : lo;
	else
		return;
	to = (p->sp - RED_ZONE) & ~(uintptr_t)7;
	if (to <= from)
		return;
	p->dead_lo = *dlo = from;
	p->dead_hi = *dhi = to;
}

static int maps_step(char *line, void *ctx)
{
	struct scan *s = ctx;
	uintptr_t lo, hi;
	int exec, kind;
	unsigned flags;
	uintptr_t dlo, dhi;

	/* Where vtables and code are (is_vtable()). */
	if (s->nf < MAX_FILES && mms__maps_file(line, &lo, &hi, &exec) && lo < hi)
		s->f[s->nf++] = (struct fmap){ lo, hi, exec };
	kind = mms__maps_line(line, &lo, &hi);
	flags = kind == MMS_MAPS_FILE    ? MMS_RGN_FILE
		: kind == MMS_MAPS_STACK ? MMS_RGN_STACK
		: kind == MMS_MAPS_HEAP  ? MMS_RGN_HEAP
					 : 0;

	if (kind == MMS_MAPS_OTHER || hi <= lo)
		return 0;
	/* The exiting thread's stack: from the recorder's frame (what lies
	 * below is dead frames); another's that is off its CPU, from a
	 * little below its pointer. */
	if (s->sp >= lo && s->sp < hi) {
		flags |= MMS_RGN_SP;
		lo = s->sp & ~(uintptr_t)7;
	} else if (kind == MMS_MAPS_ANON) {
		/* Less a peer's dead frames. */
		peer_dead(s, lo, hi, 0, &dlo, &dhi);
		if (dlo > lo)
			add_anon(s, lo, dlo);
		add_anon(s, dhi, hi);
		return s->n >= MAX_RANGES;
	} else if (kind == MMS_MAPS_STACK) {
		peer_dead(s, lo, hi, 1, &dlo, &dhi);
		lo = dhi;
	}
	add_range(s, lo, hi, flags);
	return s->n >= MAX_RANGES;
}

/* The first of n ranges (of stride bytes, in address order, their ends
 * at offset hi_off) that ends above v, or n. */
static size_t first_ending_above(const void *base, size_t n, size_t stride, size_t hi_off, uintptr_t v)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		uintptr_t end;

		memcpy(&end, (const char *)base + mid * stride + hi_off, sizeof(end));
		if (end <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The range of the anonymous memory a word points into, or NULL. */
static const struct range *pointee(struct scan *s, uintptr_t v)
{
	const struct range *r = &s->r[s->hint];
	size_t lo;

	if (v - s->cmin >= s->cmax - s->cmin)
		return NULL;
	if (v >= r->lo && v < r->hi)
		return r->flags & MMS_RGN_FILE ? NULL : r;
	lo = first_ending_above(s->r, s->n, sizeof(*s->r), offsetof(struct range, hi), v);
	if (lo == s->n || v < s->r[lo].lo)
		return NULL;
	s->hint = lo;
	return s->r[lo].flags & MMS_RGN_FILE ? NULL : &s->r[lo];
}

/* The readable file mapping holding v, or NULL. */
static const struct fmap *fmap_at(const struct scan *s, uintptr_t v)
{
	size_t lo = first_ending_above(s->f, s->nf, sizeof(*s->f), offsetof(struct fmap, hi), v);

	return lo < s->nf && v >= s->f[lo].lo ? &s->f[lo] : NULL;
}

/* Whether v is the address of what looks like a vtable, as valgrind
 * tells one: in a readable mapping of a file (a private one, not a
 * device's: mms__maps_file()), where of the 21 words from
 * v (less past the mapping's end) the non-null ones point into
 * executable mappings of files, two at least before any that does not. */
static int is_vtable(struct scan *s, uintptr_t v)
{
	uintptr_t w[VT_WORDS];
	const struct fmap *m;
	size_t slot = (v >> 3) % VT_CACHE, n, i = 0;
	int fns = 0, is = 0;

	if (v & 7)
		return 0;
	while (i < s->nspans && v - s->span_lo[i] >= s->span_hi[i] - s->span_lo[i])
		i++;
	if (i == s->nspans)
		return 0;
	if (s->vt_key[slot] == v)
		return s->vt_is[slot];
	m = fmap_at(s, v);
	if (m && m->hi - v >= sizeof(w[0])) {
		n = (m->hi - v) / sizeof(w[0]);
		if (n > VT_WORDS)
			n = VT_WORDS;
		if (!peek(v, w, n * sizeof(w[0])))
			for (i = 0; i < n && fns < 2; i++) {
				const struct fmap *c;

				if (!w[i])
					continue;
				c = fmap_at(s, w[i]);
				if (!c || !c->exec)
					break;
				fns++;
			}
		is = fns == 2;
	}
	s->vt_key[slot] = v;
	s->vt_is[slot] = (uint8_t)is;
	return is;
}

/* --- glibc's main arena ------------------------------------------------------
 * The first arena's state (struct malloc_state) is a variable of libc's
 * .data, not in a heap: its top and last remainder point to chunk headers,
 * its fast bins and bins to free chunks' headers, and a chunk's header
 * lies in the last 8 bytes of the block before it when that block fills
 * its chunk. Read as a root, the word made such a block, leaked, possibly
 * leaked (a 100-byte block before the stdout buffer that freeres freed
 * into the top chunk). libc has no symbol for it, but its layout has been
 * the same since glibc 2.26 around the top pointer: 10 fast bins before
 * it; after it, the last remainder, 127 bins of two pointers, each empty
 * one pointing to itself (16 bytes before its own place), a bitmap of 16
 * bytes and five words. The top pointer is told by the chunk it points
 * to, which ends where the memory it is in ends (glibc grows and trims
 * the heap at its top). The range is marked malloc's, as the other
 * arenas' heaps are. */
#define ARENA_BEFORE_TOP (10 * 8)
#define ARENA_BINS 127
#define ARENA_AFTER_TOP (2 * 8 + ARENA_BINS * 16 + 16 + 5 * 8)

struct arena_find {
	struct scan *s;
	uintptr_t malloc_at; /* an address of malloc's code */
	uintptr_t lo;        /* the arena's state, [lo, lo + ARENA_BEFORE_TOP + ARENA_AFTER_TOP); 0: not found */
};

/* Whether the words w, read at address at, begin with the top pointer of
 * an arena (n of them at least ARENA_AFTER_TOP / 8), the module's data
 * being [dlo, dhi). */
static int arena_top_at(struct scan *s, const uintptr_t *w, uintptr_t at, uintptr_t dlo, uintptr_t dhi)
{
	const struct range *r;
	uintptr_t size;
	size_t empty = 0;

	if (!w[0] || (w[0] & 15) || w[1] - dlo < dhi - dlo)
		return 0;
	for (size_t k = 0; k < ARENA_BINS; k++) {
		uintptr_t self = at + 16 + 16 * k - 16, fd = w[2 + 2 * k], bk = w[3 + 2 * k];

		if (fd == self && bk == self)
			empty++;
		else if (!fd || !bk || fd - dlo < dhi - dlo || bk - dlo < dhi - dlo)
			return 0; /* a bin with free chunks points to them, in a heap */
	}
	/* Most bins are empty; the top chunk ends with its memory. */
	if (empty < 8 || !(r = pointee(s, w[0])) || peek(w[0] + 8, &size, sizeof size))
		return 0;
	size &= ~(uintptr_t)7;
	return size >= 32 && w[0] + size > w[0] && ((w[0] + size + s->page - 1) & ~(s->page - 1)) == r->hi;
}

/* Looks for the main arena in the writable segments of the module whose
 * code holds malloc. */
static int arena_module(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct arena_find *a = ctx;
	struct scan *s = a->s;
	size_t cap = BUF_PAGES * s->page / sizeof(uintptr_t), need = (ARENA_AFTER_TOP + 7) / 8;
	int ours = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum && !ours; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		ours = ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && a->malloc_at - lo < ph->p_memsz;
	}
	if (!ours)
		return 0;
	for (int i = 0; i < info->dlpi_phnum && !a->lo; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t dlo = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)7,
			  dhi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		/* In windows of the buffer, each overlapping the last by an
		 * arena's state. */
		for (uintptr_t at = dlo; at < dhi && !a->lo; at += (cap - need) * 8) {
			size_t n = (size_t)(dhi - at) / 8 < cap ? (size_t)(dhi - at) / 8 : cap;
			const uintptr_t *w = (const uintptr_t *)s->buf;

			if (n < need || peek(at, s->buf, n * 8))
				break;
			for (size_t j = 0; j + need <= n; j++)
				if (at + j * 8 - dlo >= ARENA_BEFORE_TOP &&
				    arena_top_at(s, w + j, at + j * 8, dlo, dhi)) {
					a->lo = at + j * 8 - ARENA_BEFORE_TOP;
					break;
				}
			if (n < cap)
				break;
		}
	}
	return 1;
}

/* Marks [lo, hi) of the ranges read as malloc's (MMS_RGN_ARENA), each
 * range it meets split there. */
static void mark_malloc(struct scan *s, uintptr_t lo, uintptr_t hi)
{
	for (size_t i = 0; i < s->n; i++) {
		struct range r = s->r[i];
		struct range part[3] = { { r.lo, lo, r.flags },
					 { lo, hi, r.flags | MMS_RGN_ARENA },
					 { hi, r.hi, r.flags } };
		size_t k = 0;

		if (r.hi <= lo || hi <= r.lo)
			continue;
		if (part[1].lo < r.lo)
			part[1].lo = r.lo;
		if (part[1].hi > r.hi)
			part[1].hi = r.hi;
		for (size_t j = 0; j < 3; j++)
			k += part[j].lo < part[j].hi;
		if (s->n + k - 1 > MAX_RANGES)
			return;
		memmove(&s->r[i + k], &s->r[i + 1], (s->n - i - 1) * sizeof(*s->r));
		s->n += k - 1;
		for (size_t j = 0; j < 3; j++)
			if (part[j].lo < part[j].hi)
				s->r[i++] = part[j];
		i--;
	}
}

/* Finds glibc's main arena and marks it malloc's. */
static void mark_main_arena(struct scan *s)
{
	struct arena_find a = { s, (uintptr_t)mms__real.malloc, 0 };

	if (!a.malloc_at)
		return;
	dl_iterate_phdr(arena_module, &a);
	if (a.lo)
		mark_malloc(s, a.lo, a.lo + ARENA_BEFORE_TOP + ARENA_AFTER_TOP);
}

/* --- the threads still running ------------------------------------------------ */

/* The last address each other thread still running gave to or got from
 * the allocator (its prev_addr), read as a range of memory:
 * a block such a thread has just allocated may be only in its registers,
 * which the scan cannot read (valgrind reads every thread's), and would
 * read leaked (a program that exits while another thread is between a
 * malloc and its free). In .bss: left out of the scan but as added here. */
#define MAX_RUNNING 256
static uintptr_t running_last[MAX_RUNNING];

/* A thread's last address, into running_last[*(size_t *)ctx]. */
static void last_addr(const struct mms_thread *t, void *ctx)
{
	size_t *n = ctx;
	uint64_t a = __atomic_load_n(&t->prev_addr, __ATOMIC_RELAXED);

	if (a && *n < MAX_RUNNING)
		running_last[(*n)++] = (uintptr_t)a;
}

/* Adds the range of running_last[] that holds those addresses, in
 * address order (a range of anonymous memory: its words are roots). */
static void add_running(struct scan *s)
{
	uintptr_t lo = (uintptr_t)running_last;
	size_t n = 0, i;

	if (mms__threads_each_live(s->t, last_addr, &n) || !n || s->n >= MAX_RANGES)
		return;
	for (i = s->n; i > 0 && s->r[i - 1].lo > lo; i--)
		s->r[i] = s->r[i - 1];
	s->r[i] = (struct range){ lo, lo + n * sizeof(running_last[0]), 0 };
	s->n++;
}

/* A live vector of a thread's thread-local storage (dtv.c): in the
 * recorder's arena, which the scan leaves out, where natively it is in
 * the heap; its words point to the thread's blocks of dynamic TLS. */
static int add_dtv(uintptr_t lo, uintptr_t hi, void *ctx)
{
	struct scan *s = ctx;
	size_t i;

	if (s->n >= MAX_RANGES)
		return 1;
	for (i = s->n; i > 0 && s->r[i - 1].lo > lo; i--)
		s->r[i] = s->r[i - 1];
	s->r[i] = (struct range){ lo, hi, 0 };
	s->n++;
	return 0;
}

/* --- the records ------------------------------------------------------------- */

static void flush(struct scan *s, uint8_t tag)
{
	uint8_t *p;

	if (!s->len)
		return;
	p = mms__meta_begin(s->t, tag, s->len + 10);
	if (!p) {
		s->status = -1;
	} else {
		p = mms_put_s(p, s->rec, s->len);
		mms__rec_commit(s->t, p);
		if (tag == MMS_TAG_REACH_REFS)
			s->refs_recs++;
		else
			s->region_recs++;
	}
	s->len = 0;
	s->prev_where = s->prev_value = 0;
}

/* Range r into the REGIONS record being filled (written first when
 * full). */
static void put_region(struct scan *s, const struct range *r)
{
	uint8_t *p;

	if (s->len + 3 * 10 > sizeof s->rec)
		flush(s, MMS_TAG_REACH_REGIONS);
	p = s->rec + s->len;
	p = mms_put_u(p, r->lo);
	p = mms_put_u(p, r->hi - r->lo);
	p = mms_put_u(p, r->flags);
	s->len = (size_t)(p - s->rec);
}

static void write_regions(struct scan *s)
{
	for (size_t i = 0; i < s->n && s->status >= 0; i++)
		put_region(s, &s->r[i]);
	flush(s, MMS_TAG_REACH_REGIONS);
}

static void emit(struct scan *s, uintptr_t where, uintptr_t value)
{
	uint8_t *p;

	if (s->len + 2 * 10 > sizeof s->rec)
		flush(s, MMS_TAG_REACH_REFS);
	p = s->rec + s->len;
	p = mms_put_u(p, (where - s->prev_where) >> 3);
	p = mms_put_u(p, mms_zigzag((int64_t)(value - s->prev_value)));
	s->len = (size_t)(p - s->rec);
	s->prev_where = where;
	s->prev_value = value;
	if (++s->pairs >= MMS_REACH_MAX_PAIRS)
		s->status = MMS_SCAN_LIMIT;
}

/* --- reading ------------------------------------------------------------------ */

/* Reads [lo, hi) (8-byte aligned, at most BUF_PAGES pages) of a range
 * with flags and writes its pointer-like words, and in anonymous memory
 * (where blocks are) its vtable pointers. Returns -1 when the process may
 * not read itself. */
static int read_run(struct scan *s, uintptr_t lo, uintptr_t hi, unsigned flags)
{
	long got = read_self(lo, s->buf, hi - lo);
	const uintptr_t *w = (const uintptr_t *)s->buf;
	int blocks = !(flags & (MMS_RGN_FILE | MMS_RGN_STACK | MMS_RGN_SP));

	if (got < 0)
		return errno == EFAULT || errno == ENOMEM || errno == ESRCH ? 0 : -1;
	s->bytes += (uint64_t)got;
	for (size_t i = 0; i < (size_t)got / sizeof(*w) && !s->status; i++)
		if (pointee(s, w[i]) || (blocks && w[i] - s->fmin < s->fmax - s->fmin && is_vtable(s, w[i])))
			emit(s, lo + i * sizeof(*w), w[i]);
	return 0;
}

/* Reads the resident pages of range r. */
static void read_range(struct scan *s, const struct range *r)
{
	uint64_t ent[BUF_PAGES];
	uintptr_t at = r->lo & ~(s->page - 1);

	while (at < r->hi && !s->status) {
		/* A bound on the exit's delay: some 2 s at the rate measured. */
		if (s->bytes >= MMS_REACH_MAX_BYTES) {
			s->status = MMS_SCAN_LIMIT;
			return;
		}
		size_t n = (size_t)((r->hi - at + s->page - 1) / s->page), i = 0;

		if (n > BUF_PAGES)
			n = BUF_PAGES;
		if (s->pagemap < 0 || syscall(SYS_pread64, s->pagemap, ent, n * sizeof(ent[0]),
					      (off_t)(at / s->page * sizeof(ent[0]))) != (long)(n * sizeof(ent[0])))
			for (i = 0; i < n; i++)
				ent[i] = 3ull << 62; /* unknown: read it */
		for (i = 0; i < n && !s->status;) {
			size_t j = i;
			uintptr_t lo, hi;

			/* Present (bit 63) or swapped out (bit 62). */
			while (j < n && (ent[j] >> 62))
				j++;
			lo = at + i * s->page;
			hi = at + j * s->page;
			if (lo < r->lo)
				lo = r->lo;
			if (hi > r->hi)
				hi = r->hi;
			if (j > i && lo < hi && read_run(s, lo, hi, r->flags)) {
				s->status = MMS_SCAN_NOREAD;
				return;
			}
			i = j + 1;
		}
		at += n * s->page;
	}
}

/* After the scan: the dead part of the stack of each peer that ran
 * meanwhile (or that can no longer be told), read now. */
static void read_woken(struct scan *s)
{
	for (size_t i = 0; i < s->npeers && !s->status; i++) {
		struct peer *p = &s->peers[i];
		struct range r = { p->dead_lo, p->dead_hi, 0 };

		if (!p->dead_hi || peer_still(p))
			continue;
		flush(s, MMS_TAG_REACH_REFS);
		put_region(s, &r);
		flush(s, MMS_TAG_REACH_REGIONS);
		read_range(s, &r);
	}
}

/* An interpreter that keeps its state to the end (CPython, perl,
 * Node.js, the JVM), recorded without C stacks: the reader calls every
 * heap block live at exit its own, and asks no verdict. perl's hash work
 * of bench/ left 181 MiB to read, 8.7 million pointers. */
static int all_runtime_kept(void)
{
	static char exe[512];

	if (mms__config.call_stack || !mms__self_exe(exe, sizeof(exe)))
		return 0;
	return mms_python_exe(exe) || mms_perl_exe(exe) || mms_node_exe(exe) || mms_jvm_exe(exe);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void mms__reach_scan(struct mms_thread *t, long others, uintptr_t sp)
{
	static struct scan scan; /* one exit per process: in .bss, left out of the scan */
	static int scanned;      /* once: a destructor may call _exit after exit's scan */
	struct scan *s = &scan;
	uint8_t buf[96], val[80], *p, *v;
	uint64_t t0 = now_ns(), start = 0;
	volatile uintptr_t here = 0;

	if (!mms__config.reach || !mms__recording_now() || all_runtime_kept() ||
	    __atomic_exchange_n(&scanned, 1, __ATOMIC_RELAXED))
		return;
	memset(s, 0, sizeof(*s));
	/* A malloc that replaces glibc's keeps pointers to blocks where the
	 * scan cannot tell them from the program's: jemalloc's thread caches
	 * keep the slot of each block they handed out, its extents' metadata
	 * each large block's start, so every leaked block read as reachable.
	 * No verdicts rather than "no leaks". */
	if (mms__alloc_code.hi > mms__alloc_code.lo) {
		s->status = MMS_SCAN_ALLOCATOR;
		goto meta;
	}
	s->t = t;
	s->page = (uintptr_t)sysconf(_SC_PAGESIZE);
	s->sp = sp ? sp : (uintptr_t)&here;
	s->r = mms__arena_alloc(MAX_RANGES * sizeof(*s->r), 16);
	s->buf = mms__arena_alloc(BUF_PAGES * s->page, 16);
	s->f = mms__arena_alloc(MAX_FILES * sizeof(*s->f), 16);
	if (!s->r || !s->buf || !s->f)
		goto out;
	dl_iterate_phdr(self_segments, s);
	s->peers = mms__arena_alloc(MAX_PEERS * sizeof(*s->peers), 16);
	if (s->peers)
		find_peers(s);
	if (mms__proc_lines("/proc/self/maps", maps_step, s) < 0 || !s->n)
		goto out;
	/* Memory left unread holds roots: no verdicts rather than leaks
	 * that are not. */
	if (s->n >= MAX_RANGES)
		s->status = MMS_SCAN_RANGES;
	s->cmin = UINTPTR_MAX;
	for (size_t i = 0; i < s->n; i++)
		if (!(s->r[i].flags & MMS_RGN_FILE)) {
			if (s->r[i].lo < s->cmin)
				s->cmin = s->r[i].lo;
			if (s->r[i].hi > s->cmax)
				s->cmax = s->r[i].hi;
		}
	if (s->cmin >= s->cmax)
		s->cmin = s->cmax = 0;
	for (size_t i = 0; i < s->nf; i++) {
		size_t k = s->nspans;

		if (k && (s->f[i].lo - s->span_hi[k - 1] < SPAN_GAP || k == MAX_SPANS)) {
			s->span_hi[k - 1] = s->f[i].hi;
			continue;
		}
		s->span_lo[k] = s->f[i].lo;
		s->span_hi[k] = s->f[i].hi;
		s->nspans++;
	}
	if (s->nspans) {
		s->fmin = s->span_lo[0];
		s->fmax = s->span_hi[s->nspans - 1];
	}
	/* glibc's own bookkeeping, no root of the program's. */
	mark_main_arena(s);
	/* Before the first read, and the running threads' last addresses:
	 * a block another thread still running makes from here on may be
	 * pointed to only from memory read before it existed, and its stamp
	 * is later (taken after its allocation returned): the reader judges
	 * no such block leaked. */
	start = mms__stamp_obtain();
	/* After the anonymous extent was taken: the recorder's .bss holds
	 * no block. */
	add_running(s);
	mms__dtv_each(add_dtv, s);
	if (!s->status)
		write_regions(s);
	s->pagemap = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	for (size_t i = 0; i < s->n && !s->status; i++)
		read_range(s, &s->r[i]);
	if (!s->status)
		read_woken(s);
	if (s->pagemap >= 0)
		syscall(SYS_close, s->pagemap);
	flush(s, MMS_TAG_REACH_REFS);
	if (s->status < 0)
		goto out; /* the log is full: no META, so no reader trusts a part */
meta:
	v = mms_put_u(val, (uint64_t)s->status);
	v = mms_put_u(v, s->pairs);
	v = mms_put_u(v, s->refs_recs);
	v = mms_put_u(v, s->region_recs);
	v = mms_put_u(v, s->bytes);
	v = mms_put_u(v, others > 0 ? (uint64_t)others : 0);
	v = mms_put_u(v, now_ns() - t0);
	if (start)
		v = mms_put_u(v, start);
	p = mms_put_s(buf, "reach", 5);
	p = mms_put_s(p, val, (size_t)(v - val));
	mms__write_meta(t, MMS_TAG_META, buf, (size_t)(p - buf));
out:
	if (s->r)
		mms__arena_free(s->r);
	if (s->buf)
		mms__arena_free(s->buf);
	if (s->f)
		mms__arena_free(s->f);
	if (s->peers)
		mms__arena_free(s->peers);
}
