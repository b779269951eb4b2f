/* SPDX-License-Identifier: MIT */
/* decode.c: decodes one record of a chunk, driven by a table of each tag's
 * field layout taken from replay/format.h. */
#include "replay-int.h"

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
	[MMS_TAG_ALLOC + MMS_ALLOC_MALLOC ... MMS_TAG_ALLOC + MMS_ALLOC_PVALLOC] = "auu",
	[MMS_TAG_FREE + MMS_FREE_FREE ... MMS_TAG_FREE + MMS_FREE_REALLOC] = "a",
	[MMS_TAG_MMAP] = "auuu",
	[MMS_TAG_MUNMAP] = "au",
	[MMS_TAG_POOL_ALLOC] = "uauuuu",
	[MMS_TAG_POOL_FREE] = "uauuu",
	[MMS_TAG_ACCESS + MMS_ACCESS_UNKNOWN ... MMS_TAG_ACCESS + MMS_ACCESS_WRITE] = "au",
	[MMS_TAG_OP_BEGIN] = "u",
	[MMS_TAG_OP_END] = "",
	[MMS_TAG_KERNEL] = "u",
	[MMS_TAG_MARK] = "u",
	[MMS_TAG_RANGE_START] = "uu",
	[MMS_TAG_RANGE_END] = "u",
	[MMS_TAG_STEP] = "",
	[MMS_TAG_OWNER_PUSH] = "u",
	[MMS_TAG_OWNER_POP] = "",
	[MMS_TAG_WATCH] = "auu",
	[MMS_TAG_COLLECT] = "u",
	[MMS_TAG_SYSTEM + MMS_SYSTEM_INIT ... MMS_TAG_SYSTEM + MMS_SYSTEM_FINI] = "",
};

/* The tag with its sub-code cleared, for the tags that carry one. */
static inline uint8_t tag_type(uint8_t tag)
{
	switch (tag & 0xf8) {
	case MMS_TAG_ALLOC:
	case MMS_TAG_FREE:
	case MMS_TAG_ACCESS:
	case MMS_TAG_SYSTEM:
		return tag & 0xf8;
	default:
		return tag;
	}
}

int mms__decode(struct mms__cursor *c, struct mms__rec *r, const char **why)
{
	const uint8_t *p = c->p;
	const char *layout;
	uint64_t v, addr = c->prev_addr;
	unsigned nu = 0, ns = 0;

	if (p >= c->end)
		return 0;
	r->off = (uint64_t)(p - c->base);
	r->tag = *p++;
	layout = layouts[r->tag];
	if (!layout) {
		*why = "unknown record tag";
		return MMS__DEC_UNKNOWN;
	}
	r->type = tag_type(r->tag);
	r->sub = (uint8_t)(r->tag - r->type);
	r->stamp = c->stamp;
	if (r->type != MMS_TAG_SEGMENT) {
		if (mms_get_u(&p, c->end, &v))
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
			if (mms_get_u(&p, c->end, &r->u[nu++]))
				goto cut;
			break;
		case 'a':
			if (mms_get_u(&p, c->end, &v))
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
