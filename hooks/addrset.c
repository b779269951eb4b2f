/* SPDX-License-Identifier: MIT */
/* addrset.c: a set of addresses in the recorder's own memory (never the
 * program's heap): open addressing with linear probing, grown to keep it
 * at most half full, a removal shifting the entries after it back. The
 * caller holds its lock. Used for the objects whose calls redirect.c
 * redirected, and the device blocks cuda.c left unrecorded (--device). */
#include "hooks-int.h"

/* An entry holds key + 1: 0 marks a free one (an object's base may be 0). */
static size_t home(uintptr_t key, size_t cap)
{
	return (size_t)(((uint64_t)key >> 4) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

static size_t find(const struct mms_addrset *s, uintptr_t key)
{
	size_t i = home(key, s->cap);

	while (s->tab[i] && s->tab[i] != key + 1)
		i = (i + 1) & (s->cap - 1);
	return i;
}

static int grow(struct mms_addrset *s)
{
	size_t cap = s->cap ? s->cap * 2 : 256;
	uintptr_t *old = s->tab, *tab = mms__map_anon(cap * sizeof(*tab));
	size_t old_cap = s->cap;

	if (!tab)
		return -1;
	s->tab = tab;
	s->cap = cap;
	for (size_t k = 0; k < old_cap; k++)
		if (old[k])
			tab[find(s, old[k] - 1)] = old[k];
	if (old)
		mms__unmap_own(old, old_cap * sizeof(*old));
	return 0;
}

int mms__addrset_add(struct mms_addrset *s, uintptr_t key)
{
	size_t i;

	if ((s->n + 1) * 2 > s->cap && grow(s))
		return -1;
	i = find(s, key);
	if (s->tab[i])
		return 0;
	s->tab[i] = key + 1;
	s->n++;
	return 1;
}

int mms__addrset_take(struct mms_addrset *s, uintptr_t key)
{
	size_t i, j, h;

	if (!s->n)
		return 0;
	i = find(s, key);
	if (!s->tab[i])
		return 0;
	s->tab[i] = 0;
	s->n--;
	/* The entries after it that probed past i move back into the gap. */
	for (j = (i + 1) & (s->cap - 1); s->tab[j]; j = (j + 1) & (s->cap - 1)) {
		h = home(s->tab[j] - 1, s->cap);
		if (((j - h) & (s->cap - 1)) >= ((j - i) & (s->cap - 1))) {
			s->tab[i] = s->tab[j];
			s->tab[j] = 0;
			i = j;
		}
	}
	return 1;
}

void mms__addrset_clear(struct mms_addrset *s)
{
	for (size_t k = 0; k < s->cap; k++)
		s->tab[k] = 0;
	s->n = 0;
}
