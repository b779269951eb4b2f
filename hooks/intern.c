/* SPDX-License-Identifier: MIT */
/* intern.c: lock-free tables that give strings and stack frames small ids,
 * defining each in the log the first time it is seen. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>

#include "hooks-int.h"
#include "log.h"

/* An id is its slot's index + 1. A slot is claimed by CAS on `state`
 * (EMPTY -> BUSY), filled, defined in the log, then published (READY). */
enum { SLOT_EMPTY = 0, SLOT_BUSY = 1, SLOT_READY = 2 };

struct frame_slot {
	uint32_t state;
	uint32_t parent;
	uint64_t ip;
};

struct string_slot {
	uint32_t state;
	uint32_t len;
	uint64_t hash;
	const char *bytes;
};

#define FRAME_SLOTS (1u << 22) /* 4M frames, 64 MiB of address space */
#define FRAME_MAX (FRAME_SLOTS / 4 * 3)
/* When the first table is full (a C++ or Python program with deep C
 * stacks: a PyTorch script with --call-stack=c:12 fills it in 2 M
 * events), a second, four times larger, mapped then: its ids follow the
 * first table's. The first is not written again; a lookup that misses
 * there goes on in the second. */
#define FRAME2_SLOTS (1u << 24) /* 16M frames, 256 MiB of address space */
#define FRAME2_MAX (FRAME2_SLOTS / 4 * 3)
#define STRING_SLOTS (1u << 16)
#define STRING_MAX (STRING_SLOTS / 4 * 3)
#define STRING_ARENA (16u << 20)

static struct frame_slot *frames, *frames2;
static uint32_t nframes, nframes2;
static struct string_slot *strings;
static uint32_t nstrings;
static char *arena;
static uint64_t arena_used;

static void *table(void *old, size_t size)
{
	if (old) {
		/* After fork: forget what the parent's log defined. */
		mms__advise(old, size, MADV_DONTNEED);
		return old;
	}
	return mms__map_anon(size);
}

int mms__intern_init(void)
{
	/* The frames' table only where events carry stacks: its 64 MiB of
	 * address space count against a limit the program may set
	 * (RLIMIT_AS). */
	if (mms__stacks_on)
		frames = table(frames, sizeof(struct frame_slot) * FRAME_SLOTS);
	if (frames2)
		table(frames2, sizeof(struct frame_slot) * FRAME2_SLOTS);
	nframes2 = 0;
	strings = table(strings, sizeof(struct string_slot) * STRING_SLOTS);
	arena = table(arena, STRING_ARENA);
	nframes = nstrings = 0;
	arena_used = 0;
	return (frames || !mms__stacks_on) && strings && arena ? 0 : -1;
}

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static void wait_ready(const uint32_t *state)
{
	while (__atomic_load_n(state, __ATOMIC_ACQUIRE) == SLOT_BUSY)
		__builtin_ia32_pause();
}

/* Looks (parent, ip) up in the table tab of `slots` entries, whose ids
 * begin after `base`, and adds it while the table holds fewer than `max`
 * (counted in *count). Returns its id, or 0 when it is absent and the
 * table full. */
static uint32_t frame_lookup(struct mms_thread *t, struct frame_slot *tab, uint32_t slots, uint32_t max,
			     uint32_t *count, uint32_t base, uint32_t parent, uintptr_t ip)
{
	uint32_t i = (uint32_t)mix64(ip ^ ((uint64_t)parent << 40) ^ parent) & (slots - 1);

	for (;;) {
		struct frame_slot *s = &tab[i];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

		if (st == SLOT_EMPTY) {
			uint32_t expect = SLOT_EMPTY;
			if (__atomic_load_n(count, __ATOMIC_RELAXED) >= max)
				return 0;
			if (!__atomic_compare_exchange_n(&s->state, &expect, SLOT_BUSY, 0, __ATOMIC_ACQ_REL,
							 __ATOMIC_ACQUIRE))
				continue; /* lost the race: look at what the winner put */
			__atomic_fetch_add(count, 1, __ATOMIC_RELAXED);
			s->parent = parent;
			s->ip = ip;
			uint8_t buf[32], *p = buf;
			p = mms_put_u(p, base + i + 1);
			p = mms_put_u(p, parent);
			p = mms_put_u(p, ip);
			mms__write_meta(t, MMS_TAG_STACK, buf, (size_t)(p - buf));
			__atomic_store_n(&s->state, SLOT_READY, __ATOMIC_RELEASE);
			return base + i + 1;
		}
		if (st == SLOT_BUSY)
			wait_ready(&s->state);
		if (s->ip == ip && s->parent == parent)
			return base + i + 1;
		i = (i + 1) & (slots - 1);
	}
}

/* The second table, mapped by the first thread that needs it; NULL when
 * the address space has no room for it (a limit the program set). */
static __attribute__((noinline, cold)) struct frame_slot *frames2_get(void)
{
	static int failed;
	struct frame_slot *tab = __atomic_load_n(&frames2, __ATOMIC_ACQUIRE), *none = NULL;

	if (tab || __atomic_load_n(&failed, __ATOMIC_RELAXED))
		return tab;
	tab = mms__map_anon(sizeof(struct frame_slot) * FRAME2_SLOTS);
	if (!tab) {
		__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	if (!__atomic_compare_exchange_n(&frames2, &none, tab, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		mms__unmap_own(tab, sizeof(struct frame_slot) * FRAME2_SLOTS);
		tab = none;
	}
	return tab;
}

uint32_t mms__intern_frame(struct mms_thread *t, uint32_t parent, uintptr_t ip)
{
	struct frame_slot *tab2;
	uint32_t id;

	if (!frames)
		return parent;
	id = frame_lookup(t, frames, FRAME_SLOTS, FRAME_MAX, &nframes, 0, parent, ip);
	if (likely(id))
		return id;
	tab2 = frames2_get();
	id = tab2 ? frame_lookup(t, tab2, FRAME2_SLOTS, FRAME2_MAX, &nframes2, FRAME_SLOTS, parent, ip) : 0;
	if (id)
		return id;
	__atomic_fetch_or(&mms__header->flags, MMS_FLAG_STACKS_FULL, __ATOMIC_RELAXED);
	return parent; /* a truncated stack beats none */
}

uint32_t mms__intern_string(struct mms_thread *t, const char *str)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t len;
	uint32_t i;

	if (!str || !strings)
		return 0;
	for (len = 0; str[len] && len < MMS_MAX_STRING; len++)
		h = (h ^ (uint8_t)str[len]) * 0x100000001b3ull;
	h = mix64(h ^ len);
	for (i = (uint32_t)h & (STRING_SLOTS - 1);; i = (i + 1) & (STRING_SLOTS - 1)) {
		struct string_slot *s = &strings[i];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

		if (st == SLOT_EMPTY) {
			uint32_t expect = SLOT_EMPTY;
			uint64_t off;
			if (__atomic_load_n(&nstrings, __ATOMIC_RELAXED) >= STRING_MAX)
				goto full;
			if (!__atomic_compare_exchange_n(&s->state, &expect, SLOT_BUSY, 0, __ATOMIC_ACQ_REL,
							 __ATOMIC_ACQUIRE)) {
				i = (i - 1) & (STRING_SLOTS - 1); /* look at this slot again */
				continue;
			}
			off = __atomic_fetch_add(&arena_used, len + 1, __ATOMIC_RELAXED);
			if (off + len + 1 > STRING_ARENA) {
				/* The slot stays claimed but never matches. */
				s->len = UINT32_MAX;
				__atomic_store_n(&s->state, SLOT_READY, __ATOMIC_RELEASE);
				goto full;
			}
			__atomic_fetch_add(&nstrings, 1, __ATOMIC_RELAXED);
			memcpy(arena + off, str, len);
			arena[off + len] = 0;
			s->bytes = arena + off;
			s->len = (uint32_t)len;
			s->hash = h;
			uint8_t *p = mms__meta_begin(t, MMS_TAG_STRING, 2 * 10 + len);
			if (p) {
				p = mms_put_u(p, i + 1);
				p = mms_put_s(p, str, len);
				mms__rec_commit(t, p);
			}
			__atomic_store_n(&s->state, SLOT_READY, __ATOMIC_RELEASE);
			return i + 1;
		}
		if (st == SLOT_BUSY)
			wait_ready(&s->state);
		if (s->hash == h && s->len == len && !memcmp(s->bytes, str, len))
			return i + 1;
	}
full:
	__atomic_fetch_or(&mms__header->flags, MMS_FLAG_STRINGS_FULL, __ATOMIC_RELAXED);
	return 0;
}
