/* SPDX-License-Identifier: MIT */
/* decode.c: decodes one record of a chunk, driven by a table of each tag's
 * field layout taken from common/format.h. */
#include <string.h>

#include "format.h"
#include "msmemscope/log.h"
#include "base-int.h"
#include "decode-int.h"

/* Events carry the subtypes of the format's tags as they are: the public
 * names of msmemscope/log.h are the same numbers. */
#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME(MMS_FN_MALLOC, MMS_ALLOC_MALLOC) && SAME(MMS_FN_CALLOC, MMS_ALLOC_CALLOC) &&
		       SAME(MMS_FN_REALLOC, MMS_ALLOC_REALLOC) &&
		       SAME(MMS_FN_POSIX_MEMALIGN, MMS_ALLOC_POSIX_MEMALIGN) &&
		       SAME(MMS_FN_ALIGNED_ALLOC, MMS_ALLOC_ALIGNED_ALLOC) &&
		       SAME(MMS_FN_MEMALIGN, MMS_ALLOC_MEMALIGN) && SAME(MMS_FN_VALLOC, MMS_ALLOC_VALLOC) &&
		       SAME(MMS_FN_PVALLOC, MMS_ALLOC_PVALLOC) && SAME(MMS_FN_NEW, MMS_ALLOC_NEW) &&
		       SAME(MMS_FN_NEW_ARRAY, MMS_ALLOC_NEW_ARRAY),
	       "enum mms_alloc_func is enum mms_alloc_fn");
_Static_assert(SAME(MMS_FN_FREE, MMS_FREE_FREE) && SAME(MMS_FN_REALLOC_FREE, MMS_FREE_REALLOC) &&
		       SAME(MMS_FN_DELETE, MMS_FREE_DELETE) && SAME(MMS_FN_DELETE_ARRAY, MMS_FREE_DELETE_ARRAY),
	       "enum mms_free_func is enum mms_free_fn");
_Static_assert(SAME(MMS_ACC_UNKNOWN, MMS_ACCESS_UNKNOWN) && SAME(MMS_ACC_READ, MMS_ACCESS_READ) &&
		       SAME(MMS_ACC_WRITE, MMS_ACCESS_WRITE),
	       "enum mms_access_sub is enum mms_access_mode");
_Static_assert(SAME(MMS_WATCH_API, MMS_WATCH_REGISTER) && SAME(MMS_WATCH_SUM_BEFORE, MMS_WATCH_BEFORE) &&
		       SAME(MMS_WATCH_SUM_AFTER, MMS_WATCH_AFTER),
	       "enum mms_watch_sub is enum mms_watch_phase");
_Static_assert(SAME(MMS_SYS_INIT, MMS_SYSTEM_INIT) && SAME(MMS_SYS_FINI, MMS_SYSTEM_FINI) &&
		       SAME(MMS_SYS_FORK, MMS_SYSTEM_FORK) && SAME(MMS_SYS_SWEEP_BEGIN, MMS_SYSTEM_SWEEP_BEGIN) &&
		       SAME(MMS_SYS_SWEEP_END, MMS_SYSTEM_SWEEP_END),
	       "enum mms_system_sub is enum mms_system_phase");
_Static_assert(SAME(MMS_DEVICE_MEMORY, MMS_DEV_DEVICE) && SAME(MMS_DEVICE_ASYNC, MMS_DEV_ASYNC) &&
		       SAME(MMS_DEVICE_MANAGED, MMS_DEV_MANAGED) && SAME(MMS_DEVICE_PINNED, MMS_DEV_PINNED) &&
		       SAME(MMS_DEVICE_ARRAY, MMS_DEV_ARRAY) &&
		       SAME(MMS_DEVICE_VMM, MMS_DEV_VMM) && SAME(MMS_DEVICE_SUB_COUNT, MMS_DEV_FN_COUNT),
	       "enum mms_device_sub is enum mms_dev_fn");

MMS__EXPORT const char *mms_mem_kind_name(unsigned kind)
{
	static const char *const names[MMS_MEM_KIND_COUNT] = { "HOST", "MMAP", "POOL", "DEVICE" };

	return kind < MMS_MEM_KIND_COUNT ? names[kind] : NULL;
}

MMS__EXPORT const char *mms_device_sub_name(unsigned sub)
{
	static const char *const names[MMS_DEVICE_SUB_COUNT] = { "device", "async", "managed",
								 "pinned", "array",   "vmm" };

	return sub < MMS_DEVICE_SUB_COUNT ? names[sub] : NULL;
}

MMS__EXPORT const char *mms_alloc_func_name(unsigned fn)
{
	static const char *const names[] = {
		[MMS_FN_MALLOC] = "malloc",
		[MMS_FN_CALLOC] = "calloc",
		[MMS_FN_REALLOC] = "realloc",
		[MMS_FN_POSIX_MEMALIGN] = "posix_memalign",
		[MMS_FN_ALIGNED_ALLOC] = "aligned_alloc",
		[MMS_FN_MEMALIGN] = "memalign",
		[MMS_FN_VALLOC] = "valloc",
		[MMS_FN_PVALLOC] = "pvalloc",
		[MMS_FN_NEW] = "new",
		[MMS_FN_NEW_ARRAY] = "new[]",
	};

	return fn < sizeof(names) / sizeof(*names) ? names[fn] : NULL;
}

MMS__EXPORT const char *mms_free_func_name(unsigned fn)
{
	static const char *const names[] = {
		[MMS_FN_FREE] = "free",
		[MMS_FN_REALLOC_FREE] = "realloc",
		[MMS_FN_DELETE] = "delete",
		[MMS_FN_DELETE_ARRAY] = "delete[]",
	};

	return fn < sizeof(names) / sizeof(*names) ? names[fn] : NULL;
}

/* Field layout per tag byte: 'u' unsigned varint, 'a' zigzag address
 * delta, 's' string. NULL marks a tag this version does not know. */
static const char *const layouts[256] = {
	[MMS_TAG_SEGMENT] = "uu",
	[MMS_TAG_THREAD] = "uu",
	[MMS_TAG_THREAD_NAME] = "uu",
	[MMS_TAG_STRING] = "us",
	[MMS_TAG_STACK] = "uuu",
	[MMS_TAG_MODULE] = "uuuss",
	[MMS_TAG_META] = "ss",
	[MMS_TAG_LOST] = "u",
	[MMS_TAG_PYCODE] = "ussu",
	[MMS_TAG_REACH_REGIONS] = "s",
	[MMS_TAG_REACH_REFS] = "s",
	[MMS_TAG_ALLOC + MMS_ALLOC_MALLOC ... MMS_TAG_ALLOC + MMS_ALLOC_PVALLOC] = "auu",
	[MMS_TAG_ALLOC_CXX ... MMS_TAG_ALLOC_CXX + 1] = "auu",
	[MMS_TAG_FREE + MMS_FREE_FREE ... MMS_TAG_FREE + MMS_FREE_DELETE_ARRAY] = "a",
	[MMS_TAG_MMAP] = "auuu",
	[MMS_TAG_MMAP_RT] = "auuuu",
	[MMS_TAG_MUNMAP] = "au",
	[MMS_TAG_MPROTECT] = "auuu",
	[MMS_TAG_POOL_ALLOC] = "uauuuu",
	[MMS_TAG_POOL_FREE] = "uauuu",
	[MMS_TAG_ACCESS + MMS_ACCESS_UNKNOWN ... MMS_TAG_ACCESS + MMS_ACCESS_WRITE] = "au",
	[MMS_TAG_OP_BEGIN] = "u",
	[MMS_TAG_OP_END] = "",
	[MMS_TAG_KERNEL] = "u",
	[MMS_TAG_KERNEL_DEV] = "uu",
	[MMS_TAG_MARK] = "u",
	[MMS_TAG_RANGE_START] = "uu",
	[MMS_TAG_RANGE_END] = "u",
	[MMS_TAG_STEP + MMS_STEP_BY_PROGRAM ... MMS_TAG_STEP + MMS_STEP_BY_OPTIMIZER] = "",
	[MMS_TAG_OWNER_PUSH] = "u",
	[MMS_TAG_OWNER_POP] = "",
	[MMS_TAG_OWNER_TAG] = "au",
	[MMS_TAG_WATCH + MMS_WATCH_REGISTER] = "auu",
	[MMS_TAG_WATCH + MMS_WATCH_BEFORE ... MMS_TAG_WATCH + MMS_WATCH_AFTER] = "auuuuu",
	[MMS_TAG_COLLECT] = "u",
	[MMS_TAG_SYSTEM + MMS_SYSTEM_INIT ... MMS_TAG_SYSTEM + MMS_SYSTEM_FINI] = "",
	[MMS_TAG_SYSTEM + MMS_SYSTEM_FORK] = "u",
	[MMS_TAG_SYSTEM + MMS_SYSTEM_SWEEP_BEGIN ... MMS_TAG_SYSTEM + MMS_SYSTEM_SWEEP_END] = "",
	[MMS_TAG_ALLOC_RT + MMS_ALLOC_MALLOC ... MMS_TAG_ALLOC_RT + MMS_ALLOC_PVALLOC] = "auuu",
	[MMS_TAG_ALLOC_CXX_RT ... MMS_TAG_ALLOC_CXX_RT + 1] = "auuu",
	[MMS_TAG_GUARD + MMS_GUARD_CHECK] = "",
	[MMS_TAG_GUARD + MMS_GUARD_OVERFLOW ... MMS_TAG_GUARD + MMS_GUARD_MISMATCHED_FREE] = "auuuuuu",
	[MMS_TAG_FREE_STACK + MMS_FREE_FREE ... MMS_TAG_FREE_STACK + MMS_FREE_DELETE_ARRAY] = "au",
	[MMS_TAG_DEV_ALLOC + MMS_DEV_DEVICE ... MMS_TAG_DEV_ALLOC + MMS_DEV_ARRAY] = "auuu",
	[MMS_TAG_DEV_ALLOC + MMS_DEV_VMM] = "auuu",
	[MMS_TAG_DEV_FREE + MMS_DEV_DEVICE ... MMS_TAG_DEV_FREE + MMS_DEV_ARRAY] = "au",
	[MMS_TAG_DEV_FREE + MMS_DEV_VMM] = "au",
	[MMS_TAG_ALLOC_FAIL + MMS_ALLOC_MALLOC ... MMS_TAG_ALLOC_FAIL + MMS_ALLOC_PVALLOC] = "uuu",
	[MMS_TAG_DEV_ALLOC_FAIL + MMS_DEV_DEVICE ... MMS_TAG_DEV_ALLOC_FAIL + MMS_DEV_ARRAY] = "uuu",
	[MMS_TAG_DEV_ALLOC_FAIL + MMS_DEV_VMM] = "uuu",
};

/* For each event tag, 1 + the number of fields after the stamp (the
 * length of its layout); 0 for the other tags. For the open pass's skim,
 * which leaves the exit record (SYSTEM fini) to the slow path: the open
 * pass notes it. */
static const uint8_t event_fields[256] = {
	[MMS_TAG_ALLOC + MMS_ALLOC_MALLOC ... MMS_TAG_ALLOC + MMS_ALLOC_PVALLOC] = 1 + 3,
	[MMS_TAG_ALLOC_CXX ... MMS_TAG_ALLOC_CXX + 1] = 1 + 3,
	[MMS_TAG_FREE + MMS_FREE_FREE ... MMS_TAG_FREE + MMS_FREE_DELETE_ARRAY] = 1 + 1,
	[MMS_TAG_MMAP] = 1 + 4,
	[MMS_TAG_MMAP_RT] = 1 + 5,
	[MMS_TAG_MUNMAP] = 1 + 2,
	[MMS_TAG_MPROTECT] = 1 + 4,
	[MMS_TAG_POOL_ALLOC] = 1 + 6,
	[MMS_TAG_POOL_FREE] = 1 + 5,
	[MMS_TAG_ACCESS + MMS_ACCESS_UNKNOWN ... MMS_TAG_ACCESS + MMS_ACCESS_WRITE] = 1 + 2,
	[MMS_TAG_OP_BEGIN] = 1 + 1,
	[MMS_TAG_OP_END] = 1,
	[MMS_TAG_KERNEL] = 1 + 1,
	[MMS_TAG_KERNEL_DEV] = 1 + 2,
	[MMS_TAG_MARK] = 1 + 1,
	/* Not RANGE_START and STEP: the open pass counts those (step marks). */
	[MMS_TAG_RANGE_END] = 1 + 1,
	[MMS_TAG_OWNER_PUSH] = 1 + 1,
	[MMS_TAG_OWNER_POP] = 1,
	/* Not OWNER_TAG: the open pass counts those (log.c). */
	[MMS_TAG_WATCH + MMS_WATCH_REGISTER] = 1 + 3,
	[MMS_TAG_WATCH + MMS_WATCH_BEFORE ... MMS_TAG_WATCH + MMS_WATCH_AFTER] = 1 + 6,
	[MMS_TAG_COLLECT] = 1 + 1,
	[MMS_TAG_SYSTEM + MMS_SYSTEM_INIT] = 1,
	[MMS_TAG_SYSTEM + MMS_SYSTEM_FORK] = 1 + 1,
	[MMS_TAG_SYSTEM + MMS_SYSTEM_SWEEP_BEGIN ... MMS_TAG_SYSTEM + MMS_SYSTEM_SWEEP_END] = 1,
	[MMS_TAG_ALLOC_RT + MMS_ALLOC_MALLOC ... MMS_TAG_ALLOC_RT + MMS_ALLOC_PVALLOC] = 1 + 4,
	[MMS_TAG_ALLOC_CXX_RT ... MMS_TAG_ALLOC_CXX_RT + 1] = 1 + 4,
	[MMS_TAG_GUARD + MMS_GUARD_CHECK] = 1,
	[MMS_TAG_GUARD + MMS_GUARD_OVERFLOW ... MMS_TAG_GUARD + MMS_GUARD_MISMATCHED_FREE] = 1 + 7,
	[MMS_TAG_FREE_STACK + MMS_FREE_FREE ... MMS_TAG_FREE_STACK + MMS_FREE_DELETE_ARRAY] = 1 + 2,
	[MMS_TAG_DEV_ALLOC + MMS_DEV_DEVICE ... MMS_TAG_DEV_ALLOC + MMS_DEV_ARRAY] = 1 + 4,
	[MMS_TAG_DEV_ALLOC + MMS_DEV_VMM] = 1 + 4,
	[MMS_TAG_DEV_FREE + MMS_DEV_DEVICE ... MMS_TAG_DEV_FREE + MMS_DEV_ARRAY] = 1 + 2,
	[MMS_TAG_DEV_FREE + MMS_DEV_VMM] = 1 + 2,
	[MMS_TAG_ALLOC_FAIL + MMS_ALLOC_MALLOC ... MMS_TAG_ALLOC_FAIL + MMS_ALLOC_PVALLOC] = 1 + 3,
	[MMS_TAG_DEV_ALLOC_FAIL + MMS_DEV_DEVICE ... MMS_TAG_DEV_ALLOC_FAIL + MMS_DEV_ARRAY] = 1 + 3,
	[MMS_TAG_DEV_ALLOC_FAIL + MMS_DEV_VMM] = 1 + 3,
};

/* The tag with its sub-code cleared, for the tags that carry one; a C++
 * operator's ALLOC or ALLOC_RT is one of those. */
static inline uint8_t tag_type(uint8_t tag)
{
	switch (tag & 0xf8) {
	case MMS_TAG_ALLOC_CXX:
		return MMS_TAG_ALLOC;
	case MMS_TAG_ALLOC_CXX_RT:
		return MMS_TAG_ALLOC_RT;
	case MMS_TAG_ALLOC:
	case MMS_TAG_FREE:
	case MMS_TAG_ACCESS:
	case MMS_TAG_WATCH:
	case MMS_TAG_SYSTEM:
	case MMS_TAG_ALLOC_RT:
	case MMS_TAG_GUARD:
	case MMS_TAG_FREE_STACK:
	case MMS_TAG_DEV_ALLOC:
	case MMS_TAG_DEV_FREE:
	case MMS_TAG_ALLOC_FAIL:
	case MMS_TAG_DEV_ALLOC_FAIL:
	case MMS_TAG_STEP:
		return tag & 0xf8;
	default:
		return tag;
	}
}

/* The sub-code of a tag of type `type`: a C++ operator's ALLOC has fn
 * (enum mms_alloc_fn) in its low four bits. */
static inline uint8_t tag_sub(uint8_t tag, uint8_t type)
{
	return (tag & 0xe8) == MMS_TAG_ALLOC_CXX ? (uint8_t)(tag & 15) : (uint8_t)(tag - type);
}

/* mms_get_u(), a word at a time where 8 bytes remain. */
static inline int get_u(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	unsigned n;

	if (end - *pp >= 8 && (n = mms__word_u(*pp, out))) {
		*pp += n;
		return 0;
	}
#endif
	return mms_get_u(pp, end, out);
}

int mms__decode(struct mms__cursor *c, struct mms__rec *r, const char **why)
{
	const uint8_t *p = c->p;
	const char *layout;
	uint64_t v, addr = c->prev_addr;
	unsigned nu = 0, ns = 0;

	if (p >= c->end)
		return 0;
	r->off = (uint64_t)(p - c->base) + c->base_off;
	r->tag = *p++;
	layout = layouts[r->tag];
	if (!layout) {
		*why = "unknown record tag";
		return MMS__DEC_UNKNOWN;
	}
	r->type = tag_type(r->tag);
	r->sub = tag_sub(r->tag, r->type);
	r->stamp = c->stamp;
	if (r->type != MMS_TAG_SEGMENT) {
		if (get_u(&p, c->end, &v))
			goto cut;
		r->stamp = c->stamp + v;
		if (r->stamp < c->stamp) {
			*why = "stamp delta wraps around";
			return MMS__DEC_ORDER;
		}
	}
	for (; *layout; layout++) {
		switch (*layout) {
		case 'u':
			if (get_u(&p, c->end, &r->u[nu++]))
				goto cut;
			break;
		case 'a':
			if (get_u(&p, c->end, &v))
				goto cut;
			addr += (uint64_t)mms_unzigzag(v);
			r->addr = addr;
			break;
		default: /* 's' */
			if (mms_get_s(&p, c->end, &r->s[ns], &r->slen[ns]))
				goto cut;
			ns++;
			break;
		}
	}
	if (r->type == MMS_TAG_SEGMENT) {
		if (r->u[0] > UINT32_MAX) {
			*why = "segment thread index out of range";
			return MMS__DEC_CORRUPT;
		}
		c->thread = (uint32_t)r->u[0];
		r->stamp = r->u[1];
	}
	c->stamp = r->stamp;
	c->prev_addr = r->type == MMS_TAG_SEGMENT ? 0 : addr;
	c->p = p;
	return 1;
cut:
	/* The writer publishes only whole records, so a field that runs past
	 * `used` means the bytes are not what the writer wrote. */
	*why = "record runs past the end of its chunk or holds a bad field";
	return MMS__DEC_CORRUPT;
}


/* See decode-int.h. */
const uint8_t mms__heap_fields[256] = {
	[MMS_TAG_ALLOC + MMS_ALLOC_MALLOC ... MMS_TAG_ALLOC + MMS_ALLOC_PVALLOC] = 4,
	[MMS_TAG_ALLOC_CXX ... MMS_TAG_ALLOC_CXX + 1] = 4,
	[MMS_TAG_FREE + MMS_FREE_FREE ... MMS_TAG_FREE + MMS_FREE_DELETE_ARRAY] = 2 | MMS__HEAP_FREE,
	[MMS_TAG_ALLOC_RT + MMS_ALLOC_MALLOC ... MMS_TAG_ALLOC_RT + MMS_ALLOC_PVALLOC] = 5,
	[MMS_TAG_ALLOC_CXX_RT ... MMS_TAG_ALLOC_CXX_RT + 1] = 5,
	[MMS_TAG_FREE_STACK + MMS_FREE_FREE ... MMS_TAG_FREE_STACK + MMS_FREE_DELETE_ARRAY] = 3 | MMS__HEAP_FREE,
};

/* The sub-codes of tags tag to tag + 3 (SUBS2: FREE's fns, which are 0 to
 * 3) or tag + 7 (SUBS8: ALLOC's). */
#define SUBS2(tag) [(tag)] = 0, [(tag) + 1] = 1, [(tag) + 2] = 2, [(tag) + 3] = 3
#define SUBS8(tag) SUBS2(tag), [(tag) + 4] = 4, [(tag) + 5] = 5, [(tag) + 6] = 6, [(tag) + 7] = 7
const uint8_t mms__heap_sub[256] = {
	SUBS8(MMS_TAG_ALLOC),
	SUBS2(MMS_TAG_FREE),
	SUBS8(MMS_TAG_ALLOC_RT),
	SUBS2(MMS_TAG_FREE_STACK),
	[MMS_TAG_ALLOC_CXX] = MMS_ALLOC_NEW,
	[MMS_TAG_ALLOC_CXX + 1] = MMS_ALLOC_NEW_ARRAY,
	[MMS_TAG_ALLOC_CXX_RT] = MMS_ALLOC_NEW,
	[MMS_TAG_ALLOC_CXX_RT + 1] = MMS_ALLOC_NEW_ARRAY,
};
#undef SUBS2
#undef SUBS8

int mms__decode_peek(const struct mms__cursor *c, uint64_t *stamp)
{
	const uint8_t *p = c->p;
	uint64_t v;

	if (!layouts[*p])
		return MMS__DEC_UNKNOWN;
	if (!mms__is_event(tag_type(*p)))
		return 0;
	p++;
	if (get_u(&p, c->end, &v))
		return MMS__DEC_CORRUPT;
	if (c->stamp + v < c->stamp)
		return MMS__DEC_ORDER;
	*stamp = c->stamp + v;
	return 1;
}

/* Skips one varint: at most 10 bytes, the 10th at most 1 (64 bits).
 * Returns 0, or -1 when it is cut by end or too long. */
static inline int skip_u(const uint8_t **pp, const uint8_t *end)
{
	const uint8_t *p = *pp, *lim = end - p > 10 ? p + 10 : end;

	while (p < lim && (*p & 0x80))
		p++;
	if (p >= lim || (p - *pp == 9 && *p > 1))
		return -1;
	*pp = p + 1;
	return 0;
}

int mms__decode_skim(struct mms__cursor *c, struct mms__rec *r, const char **why)
{
	const uint8_t *p = c->p;
	const char *layout;
	uint64_t v;
	uint8_t type;

	if (p >= c->end)
		return 0;
	layout = layouts[*p];
	type = tag_type(*p);
	/* Metadata and segments are read in full; so are tags this version
	 * does not know, for the message. */
	if (!layout || !mms__is_event(type))
		return mms__decode(c, r, why);
	r->off = (uint64_t)(p - c->base) + c->base_off;
	r->tag = *p++;
	r->type = type;
	r->sub = tag_sub(r->tag, type);
	if (mms_get_u(&p, c->end, &v))
		goto cut;
	r->stamp = c->stamp + v;
	if (r->stamp < c->stamp) {
		*why = "stamp delta wraps around";
		return MMS__DEC_ORDER;
	}
	/* Event records hold varints only ('u' and 'a'). */
	for (; *layout; layout++)
		if (skip_u(&p, c->end))
			goto cut;
	c->stamp = r->stamp;
	c->p = p;
	return 1;
cut:
	*why = "record runs past the end of its chunk or holds a bad field";
	return MMS__DEC_CORRUPT;
}

/* mms__live_delta() for each tag. */
static const int8_t live_delta[256] = {
	[MMS_TAG_ALLOC + MMS_ALLOC_MALLOC ... MMS_TAG_ALLOC + MMS_ALLOC_PVALLOC] = 1,
	[MMS_TAG_ALLOC_CXX ... MMS_TAG_ALLOC_CXX + 1] = 1,
	[MMS_TAG_FREE + MMS_FREE_FREE ... MMS_TAG_FREE + MMS_FREE_DELETE_ARRAY] = -1,
};

int mms__live_delta(uint8_t tag)
{
	return live_delta[tag];
}

size_t mms__skim_events(struct mms__cursor *c, int64_t *livep, int64_t *peakp)
{
	int64_t live = *livep, peak = *peakp;
	const uint8_t *p = c->p, *q, *end = c->end;
	uint64_t stamp = c->stamp, delta, w, stops;
	unsigned k, n;
	size_t count = 0;

	/* The stamp delta (mms__heap_u(): those of one to three bytes by
	 * hand, longer ones as a word), then the record's other fields
	 * one word at a time: each byte with its top bit clear ends a
	 * varint, and n - 1 fields after the stamp end at the (n - 1)-th of
	 * them. Anything unusual (a varint over 8 bytes, fields over 8
	 * bytes in all, a tag that is not an event) is left to
	 * mms__decode_skim(). The tag, 8 bytes of stamp and 8 of fields are
	 * read: 17 bytes. */
	while (end - p > 17) {
		n = event_fields[*p];
		if (!n)
			break;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		q = p + 1;
		if (mms__heap_u(&q, &delta))
			break;
#else
		if (p[1] >= 0x80)
			break;
		delta = p[1];
		q = p + 2;
#endif
		if (stamp + delta < stamp)
			break;
		if (n > 1) {
			memcpy(&w, q, 8);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
			/* Byte k of the record in bits 8k to 8k + 7, as the
			 * count of trailing zeros below takes them. */
			w = __builtin_bswap64(w);
#endif
			stops = ~w & 0x8080808080808080ull;
			for (k = 2; k < n && stops; k++)
				stops &= stops - 1;
			if (!stops)
				break;
			q += 1 + (__builtin_ctzll(stops) >> 3);
		}
		stamp += delta;
		live += live_delta[*p];
		peak = live > peak ? live : peak;
		p = q;
		count++;
	}
	c->p = p;
	c->stamp = stamp;
	*livep = live;
	*peakp = peak;
	return count;
}
