/* SPDX-License-Identifier: MIT */
/* owners.c: the heap state's owner strings: msmemscope_owner_push() tags
 * joined by '@' per thread, interned once per replay so that blocks and
 * reports share one copy of each; and the blocks' origins (names and
 * thread), interned there too, so that a block slot keeps an index. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base-int.h"
#include "map-int.h"
#include "state-int.h"

static uint64_t str_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (len--)
		h = (h ^ (uint8_t)*s++) * 0x100000001b3ull;
	return h;
}

void mms__owners_free(struct mms__owners *o)
{
	size_t i;

	mms__map_free(&o->ix);
	for (i = 0; i < o->n; i++)
		free(o->strs[i]);
	free(o->strs);
	mms__map_free(&o->oix);
	free(o->origins);
	memset(o, 0, sizeof(*o));
}

const char *mms__state_owner(struct mms__state *st, const char *s, size_t len)
{
	struct mms__owners *o = st->ow;
	uint64_t h = str_hash(s, len), *v;
	int isnew;
	char *copy;

	/* Probe on from the hash until the string or an empty key: two owner
	 * strings with one FNV hash are not worth a better scheme. */
	for (;; h++) {
		v = mms__map_put(&o->ix, h, &isnew);
		if (!v)
			return NULL;
		if (isnew)
			break;
		copy = o->strs[*v - 1];
		if (strlen(copy) == len && !memcmp(copy, s, len))
			return copy;
	}
	if (mms__grow(&o->strs, &o->cap, o->n, sizeof(*o->strs)))
		goto fail;
	copy = malloc(len + 1);
	if (!copy)
		goto fail;
	memcpy(copy, s, len);
	copy[len] = '\0';
	o->strs[o->n++] = copy;
	*v = o->n;
	return copy;
fail:
	mms__map_del(&o->ix, h, NULL);
	return NULL;
}

static int origin_eq(const struct mms__origin *a, const struct mms__origin *b)
{
	return a->op == b->op && a->owner == b->owner && a->pool == b->pool && a->thread == b->thread &&
	       a->device == b->device;
}

/* Names are compared as pointers: each is the log's or an interned one,
 * so an origin has few spellings, and a table bounded by the log's. */
uint64_t mms__owners_index(const struct mms__owners *o, const char *s)
{
	uint64_t h = str_hash(s, strlen(s));
	const uint64_t *v;

	/* Probe on from the hash as interning did, until s or an empty key. */
	for (;; h++) {
		v = mms__map_get(&o->ix, h);
		if (!v)
			return UINT64_MAX;
		if (o->strs[*v - 1] == s)
			return *v - 1;
	}
}

int64_t mms__state_origin(struct mms__state *st, const struct mms__origin *x)
{
	static const struct mms__origin none;
	struct mms__owners *o = st->ow;
	uint64_t h, *v;
	int isnew;

	if (origin_eq(x, &none))
		return 0;
	h = (uint64_t)(uintptr_t)x->op * 0x9e3779b97f4a7c15ull;
	h = (h ^ (uint64_t)(uintptr_t)x->owner) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (uint64_t)(uintptr_t)x->pool) * 0x94d049bb133111ebull;
	h ^= (uint64_t)x->thread << 8 | x->device;
	/* Probe on from the hash until the origin or an empty key, as for
	 * the strings. */
	for (;; h++) {
		v = mms__map_put(&o->oix, h, &isnew);
		if (!v)
			return -1;
		if (isnew)
			break;
		if (origin_eq(&o->origins[*v], x))
			return (int64_t)*v;
	}
	if (!o->norigins) {
		/* Index 0 is none. */
		if (mms__grow(&o->origins, &o->origins_cap, 0, sizeof(*o->origins)))
			goto fail;
		o->origins[0] = none;
		o->norigins = 1;
	}
	if (o->norigins > UINT32_MAX || mms__grow(&o->origins, &o->origins_cap, o->norigins, sizeof(*o->origins)))
		goto fail;
	o->origins[o->norigins] = *x;
	*v = o->norigins++;
	return (int64_t)*v;
fail:
	mms__map_del(&o->oix, h, NULL);
	return -1;
}

int mms__state_owner_join(struct mms__state *st, struct mms__tstate *t)
{
	size_t i, len = 0, n;
	char buf[1024];

	t->owner = NULL;
	t->origin_ok = 0;
	if (!t->ntags)
		return 0;
	for (i = 0; i < t->ntags; i++) {
		n = strlen(t->tags[i]);
		if (len + n + 1 >= sizeof(buf))
			break; /* absurdly deep: keep the outer levels */
		if (len)
			buf[len++] = '@';
		memcpy(buf + len, t->tags[i], n);
		len += n;
	}
	t->owner = mms__state_owner(st, buf, len);
	return t->owner ? 0 : -ENOMEM;
}
