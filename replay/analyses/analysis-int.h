/* SPDX-License-Identifier: MIT */
/* analysis-int.h: what the analyses give each other: blocks grouped by
 * allocation stack (report.c), suppressed leaks (suppress.c) and the
 * inefficient tags an export reads (inefficient.c). */
#ifndef MMS_ANALYSIS_INT_H
#define MMS_ANALYSIS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope/analysis.h"
#include "msmemscope/log.h"
#include "msmemscope/replay.h"
#include "msmemscope/symbolize.h"
#include "map-int.h"

/* --- blocks grouped by allocation stack (report.c) ----------------------- */
struct mms__groups {
	struct mms__map ix;       /* stack id -> index in groups */
	mms_stack_group_t *groups;
	size_t n, cap;
};

void mms__groups_init(struct mms__groups *g);
void mms__groups_free(struct mms__groups *g);
/* Counts block b in its stack's group. Returns 0 or -ENOMEM. */
int mms__groups_add(struct mms__groups *g, const mms_block_t *b);
/* Hands out the groups, largest bytes first (then more blocks, then by
 * stack id): the caller frees *out. Frees the rest of g. */
void mms__groups_finish(struct mms__groups *g, mms_stack_group_t **out, size_t *n);

/* Marks the leaks of l that a suppression of s matches (suppress.c).
 * Returns 0, MMS_EUSAGE or -ENOMEM. */
int mms__leaks_suppress(mms_leaks_t *l, const mms_log_t *log, mms_suppressions_t *s, mms_symbolizer_t *sym);
/* The types (enum mms_inefficient_type bits) an inefficient result run
 * with tags noted for allocation id, 0 when none (inefficient.c). */
unsigned mms__inefficient_tags(const mms_inefficient_t *res, uint64_t alloc_id);

#endif /* MMS_ANALYSIS_INT_H */
