/* SPDX-License-Identifier: MIT */
/* slotmap.c: the heap state's live-block tables, address -> slot, in 8-byte
 * entries (lookups are inline in slotmap-int.h). */
#include <stddef.h>
#include <stdint.h>

#include "map-int.h"
#include "probe-int.h"
#include "slotmap-int.h"
#include "table-int.h"

#define SLOTMAP_MIN_BITS 6u
#define SLOTMAP_MAX_BITS 32u /* the home is the top bits of 32 */

void mms__slotmap_init(struct mms__slotmap *m)
{
	*m = (struct mms__slotmap){ 0 };
}

void mms__slotmap_free(struct mms__slotmap *m)
{
	mms__table_free(m->ents, m->ents ? (m->mask + 1) * sizeof(*m->ents) : 0);
	mms__slotmap_init(m);
}

#define SLOT_USED(e) ((e)->slot1)
#define SLOT_HOME(m, e) mms__slotmap_home(m, (e)->hash)

/* Doubles the array (or makes the first, as large as the hint asks),
 * moving every entry: the home of each is in its hash bits. */
int mms__slotmap_grow(struct mms__slotmap *m)
{
	struct mms__slotmap n = *m;
	unsigned bits;

#define NEW_HOME(e) SLOT_HOME(&n, e)
	n.ents = mms__probe_array(m->bits, SLOTMAP_MIN_BITS, SLOTMAP_MAX_BITS, m->hint, sizeof(*n.ents), &bits);
	if (!n.ents)
		return -1;
	n.hint = 0;
	n.bits = bits;
	n.mask = ((size_t)1 << bits) - 1;
	n.room = mms__map_room(bits, sizeof(*n.ents));
	MMS__PROBE_REHASH(m->ents, m->mask, n.ents, n.mask, SLOT_USED, NEW_HOME);
#undef NEW_HOME
	mms__table_free(m->ents, m->ents ? (m->mask + 1) * sizeof(*m->ents) : 0);
	*m = n;
	return 0;
}

void *mms__slotmap_shrink(struct mms__slotmap *m, size_t min, size_t *bytes)
{
	struct mms__slotmap n = { .hint = m->count };
	size_t size = m->ents ? (m->mask + 1) * sizeof(*m->ents) : 0;
	void *old = m->ents;

	if (!size || size < min || mms__slotmap_grow(&n))
		return NULL;
#define NEW_HOME(e) SLOT_HOME(&n, e)
	MMS__PROBE_REHASH(m->ents, m->mask, n.ents, n.mask, SLOT_USED, NEW_HOME);
#undef NEW_HOME
	n.count = m->count;
	*m = n;
	*bytes = size;
	return old;
}

/* Empties entry e: backward-shift deletion (probe-int.h). */
void mms__slotmap_erase_run(struct mms__slotmap *m, struct mms__slotmap_ent *e)
{
#define OLD_HOME(e) SLOT_HOME(m, e)
#define SLOT_CLEAR(e) ((e)->slot1 = 0)
	MMS__PROBE_ERASE(m->ents, m->mask, (size_t)(e - m->ents), SLOT_USED, OLD_HOME, SLOT_CLEAR);
#undef OLD_HOME
#undef SLOT_CLEAR
	m->count--;
}
