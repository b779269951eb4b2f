/* SPDX-License-Identifier: MIT */
/* guard.c: guard mode (guard=1, doc/guard.md): red zones around the
 * program's heap blocks, a bounded quarantine of freed ones, checks of both,
 * and bad frees caught before libc sees them; what a check finds is written
 * to the log as a GUARD finding.
 *
 * A guarded block as the real allocator holds it:
 *
 *   raw                      user                  user + size          raw + head + size + rz
 *   | head zone (pattern)    | the program's bytes | tail zone (pattern) |
 *
 * head is the red zone rounded up to the block's alignment, so memalign and
 * friends keep theirs. Nothing the recorder needs lives in the program's
 * heap: each live guarded block has an entry (its raw start, size, family,
 * allocation stamp and stack) in a hash set in memory of our own, which is
 * what tells a block of ours from any other address; an address that is not
 * there is never handed to libc. Freed blocks wait in a FIFO quarantine
 * (also ours), filled with a pattern, until the bytes it holds pass
 * guard_quarantine; the oldest then has its pattern checked and goes back
 * to libc. Every function here runs inside the reentrancy guard.
 *
 * The calls of the C library and the dynamic loader themselves (the
 * loader's malloc and free are the program's, found in the global scope)
 * get plain blocks: glibc frees some of what it allocates (dlerror's
 * strings and state) with its internal free, which never comes here and
 * would be handed a guarded block's inner address. A plain block has an
 * entry too (family MMS_GUARD_FAMILY_PLAIN), so that its free reaches
 * libc, unchecked; one that glibc freed behind our back leaves a stale
 * entry, which a later block at its address replaces, and which no check
 * reads. So what strdup, getline or asprintf allocate is not guarded. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hooks-int.h"
#include "log.h"
#include "stamp.h"

#define PAT_HEAD 0xfa  /* the head zone */
#define PAT_TAIL 0xfb  /* the tail zone */
#define PAT_FREED 0xfd /* a quarantined block's own bytes */

/* A pattern byte repeated in a word. */
#define PAT_WORD(pat) (0x0101010101010101ull * (uint8_t)(pat))

/* A run of each pattern, for memcmp(), which compares a few dozen bytes
 * a cycle (faster than any word loop of ours from some 64 bytes on: a
 * freed block's bytes are all checked when it leaves the quarantine). */
#define PAT_RUN 1024
static uint8_t pat_run[3][PAT_RUN];

/* The blocks about to leave the quarantine are asked for ahead, while the
 * program runs on (see prefetch_block): up to PREFETCH_BYTES of each of
 * the PREFETCH_AHEAD oldest. */
#define PREFETCH_BYTES 256
#define PREFETCH_AHEAD 4

#define SHARDS 64
#define SHARD_MIN 64          /* entries of a shard's first table: 64 shards of them fit the L2 cache */
#define QUARANTINE_SLOTS 65536 /* blocks in the quarantine at most */

int mms__guard_on;

/* One guarded block (user 0: an empty slot), 32 bytes: two to a cache
 * line of the set, whose probes miss the caches once it outgrows them.
 * The raw block begins head bytes before user; a size fits 56 bits (no
 * address space holds a block of 2^56 bytes: the allocation of one fails
 * before it is kept here), the top byte holds fn and family. */
struct gblk {
	uintptr_t user;
	uint64_t word;   /* size | fn << 56 | family << 60 */
	uint64_t stamp;  /* of its allocation */
	uint32_t stack;  /* of its allocation, 0: none */
	uint32_t head;   /* bytes from raw to user */
};

#define GB_SIZE_MASK ((UINT64_C(1) << 56) - 1)

static inline struct gblk gb_make(uintptr_t user, uint32_t head, uint64_t size, unsigned fn, unsigned family)
{
	return (struct gblk){ .user = user, .head = head,
			      .word = (size & GB_SIZE_MASK) | (uint64_t)(fn & 15) << 56 | (uint64_t)(family & 15) << 60 };
}

static inline uint64_t gb_size(const struct gblk *b)
{
	return b->word & GB_SIZE_MASK;
}

static inline unsigned gb_fn(const struct gblk *b)
{
	return (unsigned)(b->word >> 56) & 15;
}

static inline unsigned gb_family(const struct gblk *b)
{
	return (unsigned)(b->word >> 60);
}

static inline uintptr_t gb_raw(const struct gblk *b)
{
	return b->user - b->head;
}

struct shard {
	int lock; /* mms__spin_lock */
	struct gblk *tab;
	size_t cap, used; /* used: entries in tab (live) */
	size_t live;
};

struct qent {
	struct gblk b;
	uint64_t free_stamp;
	uint32_t free_stack;
};

static struct shard shards[SHARDS];
static int q_lock; /* mms__spin_lock */
static struct qent *q;        /* a ring of QUARANTINE_SLOTS */
static size_t q_head, q_n;    /* oldest, and how many */
static uint64_t q_bytes;      /* their sizes together */
static uint32_t rz;           /* red zone bytes */
/* The stamp of the last full check (its GUARD check record), 0: none. */
static uint64_t check_stamp;
static uint64_t findings;
int mms__guard_plain_caller(uintptr_t ra)
{
	return mms__in_code(&mms__ldso_code, ra) || mms__in_code(&mms__libc_code, ra);
}

void mms__guard_init(void)
{
	if (!mms__config.guard)
		return;
	rz = mms__config.guard_redzone ? mms__config.guard_redzone : 16;
	memset(pat_run[0], PAT_HEAD, PAT_RUN);
	memset(pat_run[1], PAT_TAIL, PAT_RUN);
	memset(pat_run[2], PAT_FREED, PAT_RUN);
	mms__guard_on = 1;
}

/* ---- the set of live guarded blocks ---- */

/* A Fibonacci hash, its high half folded into the low one: the slot in a
 * shard comes from the low bits, which the product alone leaves zero for
 * page-aligned blocks; the shard from the top six. */
static inline size_t hash_addr(uintptr_t a)
{
	uint64_t x = ((uint64_t)a >> 4) * 0x9E3779B97F4A7C15ull;

	return (size_t)(x ^ x >> 32);
}

static struct shard *shard_of(uintptr_t a)
{
	return &shards[hash_addr(a) >> 58];
}

/* Asks for a's home slot in its shard's table, before taking the lock:
 * with many live blocks the table outgrows the caches, and the probe
 * would wait on memory inside the lock. The table and its size are read
 * without the lock (set_grow stores them atomically): a table replaced
 * meanwhile costs a useless prefetch, never a fault. */
static inline void set_prefetch(uintptr_t a)
{
	struct shard *s = shard_of(a);
	struct gblk *tab = __atomic_load_n(&s->tab, __ATOMIC_RELAXED);
	size_t cap = __atomic_load_n(&s->cap, __ATOMIC_RELAXED);

	if (tab)
		__builtin_prefetch(&tab[hash_addr(a) & (cap - 1)], 1, 3);
}

/* Slot of a in s->tab, or NULL. */
static struct gblk *set_find(struct shard *s, uintptr_t a)
{
	if (!s->tab)
		return NULL;
	for (size_t i = hash_addr(a) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
		if (s->tab[i].user == a)
			return &s->tab[i];
		if (s->tab[i].user == 0)
			return NULL;
	}
}

static int set_grow(struct shard *s)
{
	size_t cap = s->cap ? (s->live * 4 > s->cap ? s->cap * 2 : s->cap) : SHARD_MIN;
	struct gblk *t = mms__map_anon(cap * sizeof *t);

	if (!t)
		return -1;
	for (size_t i = 0; i < s->cap; i++) {
		uintptr_t a = s->tab[i].user;
		size_t j;

		if (a <= 1)
			continue;
		for (j = hash_addr(a) & (cap - 1); t[j].user; j = (j + 1) & (cap - 1))
			;
		t[j] = s->tab[i];
	}
	if (s->tab)
		mms__unmap_own(s->tab, s->cap * sizeof *s->tab);
	__atomic_store_n(&s->tab, t, __ATOMIC_RELAXED);
	__atomic_store_n(&s->cap, cap, __ATOMIC_RELAXED);
	s->used = s->live;
	return 0;
}

/* Inlined: its callers build the entry field by field on the stack, and a
 * call would read it back whole, which waits for those stores to land. */
static inline __attribute__((always_inline)) int set_add(const struct gblk *b)
{
	struct shard *s = shard_of(b->user);
	size_t i;
	int rc = 0;

	mms__spin_lock(&s->lock);
	if ((s->used + 1) * 2 > s->cap && set_grow(s)) {
		rc = -1;
		goto out;
	}
	/* One probe: an entry of the same address is stale (a plain block
	 * that glibc freed with its internal free) and the new block replaces
	 * it; else the block goes into the empty slot that ends the probe. */
	for (i = hash_addr(b->user) & (s->cap - 1); s->tab[i].user && s->tab[i].user != b->user;
	     i = (i + 1) & (s->cap - 1))
		;
	if (s->tab[i].user == 0) {
		s->used++;
		s->live++;
	}
	s->tab[i] = *b;
out:
	mms__spin_unlock(&s->lock);
	return rc;
}

/* Empties slot i, moving back the entries after it that their probe
 * would no longer reach (backward-shift deletion: no deleted markers, so a
 * lookup never walks over the blocks freed before). */
static void set_erase(struct shard *s, size_t i)
{
	size_t mask = s->cap - 1, j = i, h;

	for (;;) {
		j = (j + 1) & mask;
		if (!s->tab[j].user)
			break;
		h = hash_addr(s->tab[j].user) & mask;
		/* The entry at j stays when its home is cyclically in (i, j]. */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		s->tab[i] = s->tab[j];
		i = j;
	}
	s->tab[i].user = 0;
	s->used--;
}

/* Takes a's entry out of the set into *out: 1, or 0 when a is not a live
 * guarded block. */
static int set_take(uintptr_t a, struct gblk *out)
{
	struct shard *s = shard_of(a);
	struct gblk *b;

	mms__spin_lock(&s->lock);
	b = set_find(s, a);
	if (b) {
		*out = *b;
		set_erase(s, (size_t)(b - s->tab));
		s->live--;
	}
	mms__spin_unlock(&s->lock);
	return b != NULL;
}

static int set_get(uintptr_t a, struct gblk *out)
{
	struct shard *s = shard_of(a);
	struct gblk *b;

	mms__spin_lock(&s->lock);
	b = set_find(s, a);
	if (b)
		*out = *b;
	mms__spin_unlock(&s->lock);
	return b != NULL;
}

/* ---- patterns ---- */

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof v);
	return v;
}

static inline void store64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof v);
}

/* Fills [p, p + n) with pat: a red zone of a word multiple (the default
 * 16 bytes) in word stores, which a call of memset() costs more than. */
static inline void zone_fill(uint8_t *p, size_t n, uint8_t pat)
{
	if (n == 16) {
		store64(p, PAT_WORD(pat));
		store64(p + 8, PAT_WORD(pat));
	} else {
		memset(p, pat, n);
	}
}

static const uint8_t *pattern_run(uint8_t pat)
{
	return pat_run[pat == PAT_HEAD ? 0 : pat == PAT_TAIL ? 1 : 2];
}

/* The first byte of [p, p + n) that is not pat, as an index; n when none.
 * Under 64 bytes (a red zone, a small block) the bytes are read as words,
 * the last one overlapping the one before when n is no multiple of 8, and
 * whether any differs is asked once: a call of memcmp() costs more than
 * the compare there, and so did a loop that stopped at the first word
 * that differs and went on byte by byte. */
static size_t first_bad(const uint8_t *p, size_t n, uint8_t pat)
{
	size_t i = 0, k;

	if (n < 64) {
		if (n >= 8) {
			uint64_t diff = load64(p + n - 8) ^ PAT_WORD(pat);

			for (; i + 8 <= n; i += 8)
				diff |= load64(p + i) ^ PAT_WORD(pat);
			if (!diff)
				return n;
			i = 0;
		}
	} else {
		const uint8_t *run = pattern_run(pat);

		for (; i < n; i += k) {
			k = n - i < PAT_RUN ? n - i : PAT_RUN;
			if (memcmp(p + i, run, k))
				break;
		}
	}
	for (; i < n; i++)
		if (p[i] != pat)
			return i;
	return n;
}

static size_t last_bad(const uint8_t *p, size_t n, uint8_t pat)
{
	while (n && p[n - 1] == pat)
		n--;
	return n; /* one past the last bad byte */
}

/* A damaged range [lo, hi) of a block, relative to its user start. */
struct damage {
	int64_t off;
	uint64_t len;
	uint64_t bytes; /* its first bytes, up to 8, little-endian */
};

/* Checks [p, p + n) for pat; on damage fills d (offsets from user) and
 * repairs the range, so that damage is found once. */
static __attribute__((noinline)) int zone_check_any(uint8_t *p, size_t n, uint8_t pat, uintptr_t user, struct damage *d)
{
	size_t i = first_bad(p, n, pat), j;

	if (i == n)
		return 0;
	j = last_bad(p, n, pat);
	d->off = (int64_t)((uintptr_t)(p + i) - user);
	d->len = j - i;
	d->bytes = 0;
	memcpy(&d->bytes, p + i, j - i < 8 ? j - i : 8);
	memset(p + i, pat, j - i);
	return 1;
}

/* The same, with a red zone of the default 16 bytes found intact inline:
 * two words. */
static inline int zone_check(uint8_t *p, size_t n, uint8_t pat, uintptr_t user, struct damage *d)
{
	if (n == 16 && !((load64(p) ^ PAT_WORD(pat)) | (load64(p + 8) ^ PAT_WORD(pat))))
		return 0;
	return zone_check_any(p, n, pat, user, d);
}

/* ---- findings ---- */

/* The stack of the call that makes a check (a free, realloc, delete, or
 * the free that pushed a block out of the quarantine): 0 for full checks
 * and without stacks. */
static __thread uint32_t tls_at_stack;
/* Which check is being made (enum mms_guard_by): set by the frees; 0,
 * outside them, is a full check. */
static __thread unsigned tls_by;

/* Writes a GUARD finding (t NULL: counted, not written). b may be NULL
 * (an invalid free: addr only). since: enum mms_guard_since. */
static void finding(struct mms_thread *t, unsigned kind, uintptr_t addr, const struct gblk *b, uint32_t free_stack,
		    unsigned since, const struct damage *d)
{
	uint64_t info, stamp;
	uint8_t *p;

	__atomic_fetch_add(&findings, 1, __ATOMIC_RELAXED);
	if (!t)
		return;
	stamp = mms__stamp_obtain();
	info = (b ? gb_family(b) : 0) | (uint64_t)since << 4 |
	       (uint64_t)(tls_by ? tls_by : MMS_GUARD_BY_CHECK) << 6 | (uint64_t)(b ? gb_fn(b) : 0) << 8 |
	       (uint64_t)(d ? d->len : 0) << 16;
	p = mms__rec_begin(t, 1 + 10 + 10 + 6 * 10);
	if (!p)
		return;
	p = mms__rec_head(t, p, (uint8_t)(MMS_TAG_GUARD | kind), stamp);
	p = mms__rec_addr(t, p, addr);
	p = mms_put_u(p, b ? gb_size(b) : 0);
	p = mms_put_u(p, info);
	p = mms_put_u(p, d ? mms_zigzag(d->off) : 0);
	p = mms_put_u(p, d ? d->bytes : 0);
	p = mms_put_u(p, (b ? b->stack : 0) | (uint64_t)free_stack << 32);
	p = mms_put_u(p, tls_at_stack);
	mms__rec_commit(t, p);
	mms__gdb_guard_found(kind);
}

static unsigned since_of(uint64_t stamp, unsigned what)
{
	return __atomic_load_n(&check_stamp, __ATOMIC_RELAXED) > stamp ? MMS_GUARD_SINCE_CHECK : what;
}

/* Checks a live block's zones, writing what is damaged. */
static void check_live(struct mms_thread *t, const struct gblk *b)
{
	struct damage d;
	unsigned since = since_of(b->stamp, MMS_GUARD_SINCE_ALLOC);

	if (zone_check((uint8_t *)gb_raw(b), b->head, PAT_HEAD, b->user, &d))
		finding(t, MMS_GUARD_UNDERFLOW, b->user, b, 0, since, &d);
	if (zone_check((uint8_t *)(b->user + gb_size(b)), rz, PAT_TAIL, b->user, &d))
		finding(t, MMS_GUARD_OVERFLOW, b->user, b, 0, since, &d);
}

/* Checks a quarantined block: its zones and its freed bytes. */
static void check_freed(struct mms_thread *t, const struct qent *e)
{
	const struct gblk *b = &e->b;
	struct damage d;
	unsigned since = since_of(e->free_stamp, MMS_GUARD_SINCE_FREE);

	if (zone_check((uint8_t *)gb_raw(b), b->head, PAT_HEAD, b->user, &d) ||
	    zone_check((uint8_t *)b->user, gb_size(b), PAT_FREED, b->user, &d) ||
	    zone_check((uint8_t *)(b->user + gb_size(b)), rz, PAT_TAIL, b->user, &d))
		finding(t, MMS_GUARD_WRITE_AFTER_FREE, b->user, b, e->free_stack, since, &d);
}

/* ---- allocation ---- */

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Records p (from libc; NULL: its failure, passed on) as an unguarded
 * block of the set: no zones, no quarantine, freed as it is. */
static void *keep_plain(struct mms_thread *t, unsigned fn, void *p, size_t size, uintptr_t ra)
{
	struct gblk b;

	if (!p)
		return NULL;
	b = gb_make((uintptr_t)p, 0, size, fn, MMS_GUARD_FAMILY_PLAIN);
	if (t)
		mms__guard_rec_alloc(t, fn, p, size, ra);
	if (set_add(&b)) {
		mms__real.free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void *mms__guard_alloc(struct mms_thread *t, unsigned fn, unsigned family, size_t align, size_t size, int zero,
		       uintptr_t ra)
{
	size_t head, total;
	struct gblk b;
	uint8_t *raw;

	if (align < 16)
		align = 16;
	head = round_up(rz, align);
	if (size > SIZE_MAX - head - rz - align) {
		errno = ENOMEM;
		return NULL;
	}
	if (unlikely(head > UINT32_MAX)) {
		/* An alignment of 4 GiB or more: the head would not fit the
		 * entry, and the block is kept unguarded, aligned as asked. */
		raw = mms__real.memalign(align, size);
		if (raw && zero)
			memset(raw, 0, size);
		return keep_plain(t, fn, raw, size, ra);
	}
	total = head + size + rz;
	raw = align > 16 ? mms__real.memalign(align, total) : mms__real.malloc(total);
	if (!raw)
		return NULL;
	set_prefetch((uintptr_t)(raw + head));
	zone_fill(raw, head, PAT_HEAD);
	if (zero)
		memset(raw + head, 0, size);
	zone_fill(raw + head + size, rz, PAT_TAIL);
	b = gb_make((uintptr_t)(raw + head), (uint32_t)head, size, fn, family);
	if (t) {
		mms__guard_rec_alloc(t, fn, raw + head, size, ra);
		b.stamp = t->prev_stamp;
		b.stack = mms__stacks_on ? t->last_stack : 0;
	}
	if (set_add(&b)) {
		/* No room for its entry: an unguarded block would be refused
		 * at its free, so there is no block. */
		mms__real.free(raw);
		errno = ENOMEM;
		return NULL;
	}
	return raw + head;
}

void *mms__guard_alloc_plain(struct mms_thread *t, unsigned fn, size_t size, int zero, uintptr_t ra)
{
	return keep_plain(t, fn, zero ? mms__real.calloc(1, size) : mms__real.malloc(size), size, ra);
}

/* ---- free ---- */

/* Whether a block of family `have` may be released by a call of family
 * `want`. */
static int family_ok(unsigned have, unsigned want)
{
	if (want == MMS_GUARD_FAMILY_MALLOC)
		return have == MMS_GUARD_FAMILY_MALLOC || have == MMS_GUARD_FAMILY_MEMALIGN;
	return have == want;
}

/* A free of an address that is not a live guarded block: a double free
 * when the quarantine still holds it, else an invalid free. */
static void bad_free(struct mms_thread *t, uintptr_t a)
{
	struct qent e;
	int found = 0;

	mms__spin_lock(&q_lock);
	for (size_t k = 0; k < q_n && !found; k++) {
		const struct qent *x = &q[(q_head + k) % QUARANTINE_SLOTS];

		if (x->b.user == a) {
			e = *x;
			found = 1;
		}
	}
	mms__spin_unlock(&q_lock);
	if (found)
		finding(t, MMS_GUARD_DOUBLE_FREE, a, &e.b, e.free_stack, MMS_GUARD_SINCE_FREE, NULL);
	else
		finding(t, MMS_GUARD_INVALID_FREE, a, NULL, 0, MMS_GUARD_SINCE_NONE, NULL);
}

/* Hands the raw block of e back to libc. */
static void release(struct mms_thread *t, const struct gblk *b)
{
	if (t)
		mms__note_release(b->user, t->index);
	mms__real.free((void *)gb_raw(b));
}

/* Asks for the first bytes of [p, p + n) (a block about to leave the
 * quarantine, its zones and libc's chunk header before it): the
 * quarantine outgrows the caches, and the check that reads the block back
 * would otherwise wait on memory at every free. */
static void prefetch_block(uintptr_t p, size_t n)
{
	uintptr_t end = p + n;

	if (n > PREFETCH_BYTES)
		n = PREFETCH_BYTES;
	for (uintptr_t a = (p - 16) & ~(uintptr_t)63; a < p + n; a += 64)
		__builtin_prefetch((const void *)a, 1, 3);
	/* The tail zone, where an overflow lands. */
	__builtin_prefetch((const void *)(end - 1), 1, 3);
}

/* Puts a freed block into the quarantine, filled with the pattern, and
 * lets the oldest go while there are too many bytes. */
static void quarantine(struct mms_thread *t, const struct gblk *b, uint32_t free_stack, uint64_t free_stamp)
{
	struct qent out[16];
	size_t nout = 0, nahead;
	struct {
		uintptr_t raw;
		size_t len;
	} ahead[PREFETCH_AHEAD];

	/* A block larger than the quarantine (every one without a
	 * quarantine) goes back at once, without the lock. */
	if (gb_size(b) > mms__config.guard_quarantine) {
		release(t, b);
		return;
	}
	mms__spin_lock(&q_lock);
	if (!q)
		q = mms__map_anon(QUARANTINE_SLOTS * sizeof *q);
	if (!q) {
		mms__spin_unlock(&q_lock);
		release(t, b); /* never quarantined: not filled either */
		return;
	}
	/* Filled under the lock: its stores then drain while the program
	 * runs on, not in the lock's exchange; the unlock publishes them. */
	memset((void *)b->user, PAT_FREED, gb_size(b));
	q[(q_head + q_n) % QUARANTINE_SLOTS] = (struct qent){ *b, free_stamp, free_stack };
	q_n++;
	q_bytes += gb_size(b);
	for (;;) {
		while ((q_bytes > mms__config.guard_quarantine || q_n == QUARANTINE_SLOTS) && nout < 16) {
			out[nout++] = q[q_head];
			q_bytes -= gb_size(&q[q_head].b);
			q_head = (q_head + 1) % QUARANTINE_SLOTS;
			q_n--;
		}
		/* The blocks that came among the PREFETCH_AHEAD oldest, each
		 * asked for once, some frees before its check. */
		nahead = 0;
		for (size_t k = nout < PREFETCH_AHEAD ? PREFETCH_AHEAD - nout : 0; k < PREFETCH_AHEAD && k < q_n; k++) {
			const struct gblk *x = &q[(q_head + k) % QUARANTINE_SLOTS].b;

			ahead[nahead].raw = gb_raw(x);
			ahead[nahead++].len = x->head + gb_size(x) + rz;
		}
		/* The ring's entries, read when their blocks come near. */
		__builtin_prefetch(&q[(q_head + 4 * PREFETCH_AHEAD) % QUARANTINE_SLOTS], 0, 3);
		mms__spin_unlock(&q_lock);
		for (size_t k = 0; k < nahead; k++)
			prefetch_block(ahead[k].raw, ahead[k].len);
		for (size_t k = 0; k < nout; k++) {
			check_freed(t, &out[k]);
			release(t, &out[k].b);
		}
		if (nout < 16)
			return;
		nout = 0;
		mms__spin_lock(&q_lock);
	}
}

void mms__guard_free(struct mms_thread *t, void *ptr, unsigned family, unsigned free_fn)
{
	uintptr_t a = (uintptr_t)ptr;
	int theirs = free_fn & MMS_GUARD_FREE_THEIRS;
	uint64_t stamp = 0;
	uint32_t stack = t && mms__stacks_on ? mms__capture_stack(t) : 0;
	struct gblk b;

	free_fn &= ~MMS_GUARD_FREE_THEIRS;
	tls_at_stack = stack;
	tls_by = MMS_GUARD_BY_RELEASE;
	if (!set_take(a, &b)) {
		if (theirs)
			mms__real.free(ptr);
		else
			bad_free(t, a);
		tls_at_stack = 0;
		tls_by = 0;
		return;
	}
	if (gb_family(&b) == MMS_GUARD_FAMILY_PLAIN) {
		if (t) {
			mms__release_watched(a, 0);
			mms__note_release(a, t->index);
			mms__rec_free_stack(t, free_fn, a, mms__stamp_release_heap(), stack);
		}
		mms__real.free(ptr);
		tls_at_stack = 0;
		tls_by = 0;
		return;
	}
	if (!family_ok(gb_family(&b), family))
		finding(t, MMS_GUARD_MISMATCHED_FREE, a, &b, 0, MMS_GUARD_SINCE_NONE, NULL);
	check_live(t, &b);
	if (t) {
		mms__release_watched(a, 0);
		stamp = mms__stamp_release_heap();
		mms__rec_free_stack(t, free_fn, a, stamp, stack);
	} else {
		mms__release_watched(a, 0);
	}
	tls_by = MMS_GUARD_BY_QUARANTINE; /* what this free pushes out */
	quarantine(t, &b, stack, stamp);
	tls_at_stack = 0;
	tls_by = 0;
}

void *mms__guard_realloc(struct mms_thread *t, void *ptr, size_t size, uintptr_t ra)
{
	struct gblk b;
	void *r;

	if (!ptr)
		return mms__guard_alloc(t, MMS_ALLOC_REALLOC, MMS_GUARD_FAMILY_MALLOC, 16, size, 0, ra);
	if (!set_get((uintptr_t)ptr, &b)) {
		tls_at_stack = t && mms__stacks_on ? mms__capture_stack(t) : 0;
		tls_by = MMS_GUARD_BY_RELEASE;
		bad_free(t, (uintptr_t)ptr);
		tls_at_stack = 0;
		tls_by = 0;
		errno = ENOMEM;
		return NULL;
	}
	if (size == 0) {
		mms__guard_free(t, ptr, MMS_GUARD_FAMILY_MALLOC, MMS_FREE_REALLOC);
		return NULL;
	}
	r = gb_family(&b) == MMS_GUARD_FAMILY_PLAIN ? mms__guard_alloc_plain(t, MMS_ALLOC_REALLOC, size, 0, ra)
					       : mms__guard_alloc(t, MMS_ALLOC_REALLOC, MMS_GUARD_FAMILY_MALLOC, 16, size, 0, ra);
	if (!r)
		return NULL;
	memcpy(r, ptr, gb_size(&b) < size ? gb_size(&b) : size);
	mms__guard_free(t, ptr, MMS_GUARD_FAMILY_MALLOC, MMS_FREE_REALLOC);
	return r;
}

int mms__guard_usable(const void *ptr, size_t *size)
{
	struct gblk b;

	if (!set_get((uintptr_t)ptr, &b) || gb_family(&b) == MMS_GUARD_FAMILY_PLAIN)
		return 0;
	*size = gb_size(&b);
	return 1;
}

/* ---- mimalloc's heaps (mimalloc.c) ---- */

void *mms__guard_keep_plain(struct mms_thread *t, unsigned fn, void *p, size_t size, uintptr_t ra)
{
	return keep_plain(t, fn, p, size, ra);
}

int mms__guard_knows(const void *ptr)
{
	struct gblk b;

	return set_get((uintptr_t)ptr, &b);
}

int mms__guard_forget(const void *ptr)
{
	struct gblk b;

	/* A guarded block is never a heap's (mimalloc.c makes theirs plain). */
	if (!set_get((uintptr_t)ptr, &b) || gb_family(&b) != MMS_GUARD_FAMILY_PLAIN)
		return 0;
	return set_take((uintptr_t)ptr, &b);
}

/* ---- full checks ---- */

uint64_t mms__guard_check_all(struct mms_thread *t)
{
	uint64_t before = __atomic_load_n(&findings, __ATOMIC_RELAXED), stamp = 0;
	uint8_t *p;

	if (!mms__guard_on)
		return 0;
	if (t && (p = mms__rec_begin(t, 1 + 10))) {
		p = mms__rec_head(t, p, MMS_TAG_GUARD | MMS_GUARD_CHECK, mms__stamp_obtain());
		stamp = t->prev_stamp; /* as written */
		mms__rec_commit(t, p);
	}
	for (int i = 0; i < SHARDS; i++) {
		struct shard *s = &shards[i];

		mms__spin_lock(&s->lock);
		for (size_t k = 0; k < s->cap; k++)
			if (s->tab[k].user > 1 && gb_family(&s->tab[k]) != MMS_GUARD_FAMILY_PLAIN)
				check_live(t, &s->tab[k]);
		mms__spin_unlock(&s->lock);
	}
	mms__spin_lock(&q_lock);
	for (size_t k = 0; k < q_n; k++)
		check_freed(t, &q[(q_head + k) % QUARANTINE_SLOTS]);
	mms__spin_unlock(&q_lock);
	if (stamp)
		__atomic_store_n(&check_stamp, stamp, __ATOMIC_RELAXED);
	return __atomic_load_n(&findings, __ATOMIC_RELAXED) - before;
}

/* ---- fork ---- */

void mms__guard_before_fork(void)
{
	if (!mms__guard_on)
		return;
	for (int i = 0; i < SHARDS; i++)
		mms__spin_lock(&shards[i].lock);
	mms__spin_lock(&q_lock);
}

void mms__guard_after_fork(void)
{
	if (!mms__guard_on)
		return;
	mms__spin_unlock(&q_lock);
	for (int i = SHARDS - 1; i >= 0; i--)
		mms__spin_unlock(&shards[i].lock);
}
