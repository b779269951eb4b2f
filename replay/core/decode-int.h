/* SPDX-License-Identifier: MIT */
/* decode-int.h: the record decoder (decode.c). */
#ifndef MMS_DECODE_INT_H
#define MMS_DECODE_INT_H

#include <stddef.h>
#include <stdint.h>

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

/* The fast path for the records most logs are made of, the heap's ALLOC,
 * ALLOC_RT and FREE: decodes the one at c->p straight into the event it
 * is (stamp, thread, file_offset, kind, sub, addr, size, stack, flags;
 * the other fields 0) and advances c. Returns 1, or 0 leaving c as it was
 * when the record is of another tag or not one this path reads (near the
 * end of the records, a field over 8 bytes, a stamp that wraps):
 * mms__decode() reads those. */
int mms__decode_heap(struct mms__cursor *c, mms_event_t *ev);

/* Whether the record at c->p (before c->end) is an event's: returns 1
 * with the event's stamp in *stamp, c left at the record; 0 for a record
 * of another kind; or an MMS__DEC_* code for a tag this version does not
 * know or a stamp that does not decode. */
int mms__decode_peek(const struct mms__cursor *c, uint64_t *stamp);

/* For looking ahead: steps c over the heap event record at c->p (ALLOC,
 * ALLOC_RT, FREE), decoding only its address, into *addr. Returns
 * MMS_EV_MALLOC or MMS_EV_FREE, or 0 leaving c as it was for any other
 * record and those mms__decode_heap() leaves to mms__decode(). */
int mms__skim_heap(struct mms__cursor *c, uint64_t *addr);

/* Like mms__decode(), for the open pass: of an event record it reads only
 * the tag and stamp and checks the shape of the other fields, which it
 * skips (r->addr, r->u[] are not set, the cursor's address delta state is
 * not kept). Other records are decoded in full. */
int mms__decode_skim(struct mms__cursor *c, struct mms__rec *r, const char **why);

/* Skims the run of common event records at c->p (those the fast path
 * reads: see decode.c), advancing c and its stamp. Returns how many. */
size_t mms__skim_events(struct mms__cursor *c);

/* Whether a record type is an event of the program (not metadata). */
static inline int mms__is_event(uint8_t type)
{
	return type >= MMS_TAG_ALLOC;
}

#endif /* MMS_DECODE_INT_H */
