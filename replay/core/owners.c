/* SPDX-License-Identifier: MIT */
/* owners.c: the heap state's owner strings: msmemscope_owner_push() tags
 * joined by '@' per thread, interned once per replay so that blocks and
 * reports share one copy of each. */
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

int mms__state_owner_join(struct mms__state *st, struct mms__tstate *t)
{
	size_t i, len = 0, n;
	char buf[1024];

	t->owner = NULL;
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
