/* SPDX-License-Identifier: MIT */
/* decode-int.h: the record decoder (decode.c). */
#ifndef MMS_DECODE_INT_H
#define MMS_DECODE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format.h"
#include "msmemscope/log.h"

/* --- record decoder (decode.c) ------------------------------------------ */

/* One decoded record. Unsigned fields are stored in u[] in the order the
 * format lists them, skipping the address, which goes to addr (absolute). */
struct mms__rec {
	uint8_t tag;        /* the tag byte as written */
	uint8_t type;       /* the tag with its sub-code cleared (enum mms_tag) */
	uint8_t sub;        /* the sub-code (allocator function, mode, phase) */
	uint64_t off;       /* file offset of the tag byte */
	uint64_t stamp;     /* absolute stamp */
	uint64_t addr;      /* absolute address, for tags with a daddr field */
	uint64_t u[6];
	const char *s[2];   /* string fields, not NUL-terminated */
	uint64_t slen[2];
};

/* A position inside one chunk's records, with the segment's delta state. */
struct mms__cursor {
	const uint8_t *base; /* with base_off: p - base + base_off is p's file offset */
	uint64_t base_off;
	const uint8_t *p;    /* next record */
	const uint8_t *end;  /* end of the records to decode */
	uint64_t stamp;      /* stamp of the previous record */
	uint64_t prev_addr;  /* previous address of the segment */
	uint32_t thread;     /* thread of the current segment */
};

/* Decode results besides 1 (a record) and 0 (end reached). */
#define MMS__DEC_CORRUPT (-1) /* bytes that do not decode; *why says how */
#define MMS__DEC_ORDER (-2)   /* the stamp delta wraps around */
#define MMS__DEC_UNKNOWN (-3) /* a tag this version does not know */

/* Decodes the record at c->p into *r and advances. A SEGMENT record resets
 * the cursor's delta state and thread. On damage c->p is left at the bad
 * record and *why points at a static description. */
int mms__decode(struct mms__cursor *c, struct mms__rec *r, const char **why);

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Decodes a varint of at most 8 bytes from the 8 bytes at p, a word at a
 * time: the first byte with its top bit clear ends it, and its 7-bit
 * groups are packed together in three steps. Returns its length in
 * bytes, or 0 when it is longer (*out is then not set). */
static inline unsigned mms__word_u(const uint8_t *p, uint64_t *out)
{
	uint64_t w, stops;
	unsigned bits;

	memcpy(&w, p, 8);
	stops = ~w & 0x8080808080808080ull;
	if (!stops)
		return 0;
	bits = (unsigned)__builtin_ctzll(stops) + 1; /* a multiple of 8 */
	w &= ~0ull >> (64 - bits);
	w &= 0x7f7f7f7f7f7f7f7full;
	w = (w & 0x007f007f007f007full) | ((w & 0x7f007f007f007f00ull) >> 1);
	w = (w & 0x00003fff00003fffull) | ((w & 0x3fff00003fff0000ull) >> 2);
	w = (w & 0x000000000fffffffull) | ((w & 0x0fffffff00000000ull) >> 4);
	*out = w;
	return bits / 8;
}
#endif

/* For mms__decode_heap(): the varints after the tag of each heap record
 * (stamp delta first), per the format's rows FREE "a", ALLOC and ALLOC_CXX
 * "auu", ALLOC_RT and ALLOC_CXX_RT "auuu"; 0 for the other tags. FREE_STACK "au" is
 * 3 | MMS__HEAP_FREE: its third varint is the stack. */
#define MMS__HEAP_FREE 0x80
extern const uint8_t mms__heap_fields[256];
/* And their sub-codes (enum mms_alloc_fn, enum mms_free_fn): the tag's
 * low three bits, four for a C++ operator's ALLOC (ALLOC_CXX). */
extern const uint8_t mms__heap_sub[256];

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* One varint at *pp into *v, advancing *pp: those of one to three bytes
 * (most fields; mallocbench's log has two of three bytes an event) by
 * hand, longer ones a word at a time. Returns 0, or -1 for one over 8
 * bytes (left to the careful path). */
static inline int mms__heap_u(const uint8_t **pp, uint64_t *v)
{
	const uint8_t *p = *pp;
	unsigned len;

	if (p[0] < 0x80) {
		*v = p[0];
		*pp = p + 1;
	} else if (p[1] < 0x80) {
		*v = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
		*pp = p + 2;
	} else if (p[2] < 0x80) {
		*v = (uint64_t)(p[0] & 0x7f) | (uint64_t)(p[1] & 0x7f) << 7 | (uint64_t)p[2] << 14;
		*pp = p + 3;
	} else {
		len = mms__word_u(p, v);
		if (!len)
			return -1;
		*pp = p + len;
	}
	return 0;
}
#endif

/* The fast path for the records most logs are made of, the heap's ALLOC,
 * ALLOC_RT and FREE: decodes the one at c->p straight into the event it
 * is (stamp, thread, file_offset, kind, sub, addr, size, stack, runtime;
 * the other fields 0) and advances c. Returns 1, or 0 leaving c as it was
 * when the record is of another tag or not one this path reads (near the
 * end of the records, a field over 8 bytes, a stamp that wraps):
 * mms__decode() reads those. With whole 0 it stores only the fields
 * named, leaving id, time_ns and the others as they are: for an event
 * that only ever holds heap events, whose other fields stay 0. */
static inline __attribute__((always_inline)) int mms__decode_heap_to(struct mms__cursor *c, mms_event_t *ev, int whole)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint8_t *p = c->p;
	uint64_t delta, zz, size = 0, stack = 0, runtime = 0;
	unsigned n, is_free;
	uint8_t tag;

	/* Room for the tag and five fields of 8 bytes each, read as words
	 * whatever their length: nothing below checks the end. */
	if (c->end - p < 1 + 5 * 8)
		return 0;
	tag = *p++;
	n = mms__heap_fields[tag] & ~MMS__HEAP_FREE;
	is_free = mms__heap_fields[tag] & MMS__HEAP_FREE;
	if (!n)
		return 0;
	if (mms__heap_u(&p, &delta) || mms__heap_u(&p, &zz))
		return 0;
	if (is_free) {
		if (n > 2 && mms__heap_u(&p, &stack))
			return 0;
	} else if (mms__heap_u(&p, &size) || mms__heap_u(&p, &stack) || (n > 4 && mms__heap_u(&p, &runtime))) {
		return 0;
	}
	if (c->stamp + delta < c->stamp)
		return 0; /* the careful path says what is wrong */
	/* Every field stored (whole), no zeroing first; or those a heap
	 * event sets, into an event whose others are 0 already. */
	if (whole) {
		ev->id = 0;
		ev->time_ns = 0;
		ev->mem = MMS_MEM_HOST;
		ev->device = 0;
		ev->total = 0;
		ev->used = 0;
		ev->range_id = 0;
		ev->name = NULL;
		ev->flags = 0;
	}
	ev->stamp = c->stamp + delta;
	ev->thread = c->thread;
	ev->kind = is_free ? MMS_EV_FREE : MMS_EV_MALLOC;
	ev->sub = mms__heap_sub[tag];
	ev->addr = c->prev_addr + (uint64_t)mms_unzigzag(zz);
	ev->size = size;
	ev->stack = (uint32_t)stack;
	ev->runtime = (uint32_t)runtime;
	ev->file_offset = (uint64_t)(c->p - c->base) + c->base_off;
	c->stamp = ev->stamp;
	c->prev_addr = ev->addr;
	c->p = p;
	return 1;
#else
	(void)c;
	(void)ev;
	(void)whole;
	return 0;
#endif
}

static inline __attribute__((always_inline)) int mms__decode_heap(struct mms__cursor *c, mms_event_t *ev)
{
	return mms__decode_heap_to(c, ev, 1);
}

/* Whether the record at c->p (before c->end) is an event's: returns 1
 * with the event's stamp in *stamp, c left at the record; 0 for a record
 * of another kind; or an MMS__DEC_* code for a tag this version does not
 * know or a stamp that does not decode. */
int mms__decode_peek(const struct mms__cursor *c, uint64_t *stamp);

/* Like mms__decode(), for the open pass: of an event record it reads only
 * the tag and stamp and checks the shape of the other fields, which it
 * skips (r->addr, r->u[] are not set, the cursor's address delta state is
 * not kept). Other records are decoded in full. */
int mms__decode_skim(struct mms__cursor *c, struct mms__rec *r, const char **why);

/* Skims the run of common event records at c->p (those the fast path
 * reads: see decode.c), advancing c and its stamp, and counting the
 * malloc-family blocks they leave live into *live (mms__live_delta()) and
 * its highest value into *peak. Returns how many. */
size_t mms__skim_events(struct mms__cursor *c, int64_t *live, int64_t *peak);

/* What an event with this tag does to the count of live malloc-family
 * blocks: +1 an allocation, -1 a free (free(NULL) is never recorded),
 * 0 anything else. */
int mms__live_delta(uint8_t tag);

/* Whether a record type is an event of the program (not metadata). */
static inline int mms__is_event(uint8_t type)
{
	return type >= MMS_TAG_ALLOC;
}

#endif /* MMS_DECODE_INT_H */
