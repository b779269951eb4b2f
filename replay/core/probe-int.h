/* SPDX-License-Identifier: MIT */
/* probe-int.h: what the two open-addressing tables share (struct mms__map,
 * map.c, and struct mms__slotmap, slotmap.c): linear probing over an array
 * of a power-of-two entries, backward-shift deletion, the array's sizing.
 * The entries differ (16 bytes of key and value; 8 of hash bits and slot),
 * so the loops are macros over the caller's USED(e) (entry e holds a key)
 * and HOME(e) (the index where e's probe starts). */
#ifndef MMS_PROBE_INT_H
#define MMS_PROBE_INT_H

#include <stddef.h>

/* Moves every used entry of from (from_mask + 1 entries; none when from
 * is NULL) to its place in to (to_mask + 1 empty entries), HOME being
 * to's. The new array is too big for the cache when it matters: the line
 * of an entry some way on is asked for. */
#define MMS__PROBE_REHASH(from, from_mask, to, to_mask, USED, HOME)                                           \
	do {                                                                                                   \
		for (size_t i_ = 0; (from) && i_ <= (from_mask); i_++) {                                        \
			size_t j_;                                                                             \
                                                                                                               \
			if (i_ + 16 <= (from_mask) && USED(&(from)[i_ + 16]))                                   \
				__builtin_prefetch(&(to)[HOME(&(from)[i_ + 16])], 1);                          \
			if (!USED(&(from)[i_]))                                                                 \
				continue;                                                                      \
			for (j_ = HOME(&(from)[i_]); USED(&(to)[j_]); j_ = (j_ + 1) & (to_mask))               \
				;                                                                              \
			(to)[j_] = (from)[i_];                                                                 \
		}                                                                                              \
	} while (0)

/* Empties entry at of ents (mask + 1 entries), moving later entries of
 * its probe run back into the hole when their home does not lie between
 * the hole and them: no tombstones. CLEAR(e) empties an entry. Without a
 * branch, which would go either way at random: an entry that stays is
 * copied onto itself. */
#define MMS__PROBE_ERASE(ents, mask, at, USED, HOME, CLEAR)                                                    \
	do {                                                                                                   \
		size_t i_ = (at), j_, home_, dst_;                                                             \
		int move_;                                                                                     \
                                                                                                               \
		for (j_ = (i_ + 1) & (mask); USED(&(ents)[j_]); j_ = (j_ + 1) & (mask)) {                      \
			home_ = HOME(&(ents)[j_]);                                                             \
			move_ = ((j_ - home_) & (mask)) >= ((j_ - i_) & (mask));                               \
			dst_ = move_ ? i_ : j_;                                                                \
			(ents)[dst_] = (ents)[j_];                                                             \
			i_ = move_ ? j_ : i_;                                                                  \
		}                                                                                              \
		CLEAR(&(ents)[i_]);                                                                            \
	} while (0)

/* A new array of entries of ent_size bytes for a table that had 2^bits
 * (0: none) and expects hint entries (0: unknown): as many as the hint asks
 * at once, else twice as many (2^min_bits for a first), at most
 * 2^max_bits; room(bits) is the entries 2^bits take. Returns the array
 * (zeroed) and its log2 size in *out_bits, or NULL. */
void *mms__probe_array(unsigned bits, unsigned min_bits, unsigned max_bits, size_t hint, size_t ent_size,
		       unsigned *out_bits);

#endif /* MMS_PROBE_INT_H */
