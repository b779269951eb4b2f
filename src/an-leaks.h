/* SPDX-License-Identifier: MIT */
/* an-leaks.h: what the two files of the leaks report share: the report
 * being written (an-leaks.c: the leaks, an-leaks-apart.c: what is set
 * apart as no leak, and the bad frees). */
#ifndef MMS_AN_LEAKS_H
#define MMS_AN_LEAKS_H

#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "replay-show.h"

struct leaks_out {
	struct an_ctx *c;
	struct show s;
	mms_leaks_t *l;
	mms_suppressions_t *supp;
	size_t nsupp;
	mms_log_info_t info; /* how the log ends: exit, exec, a cut, damage */
	mms_config_t cfg;    /* how it was recorded */
	int parts;           /* recorded in parts: --steps, collect=deferred, msmemscope_stop() */
	uint64_t collects;   /* its COLLECT events */
	int stopped;         /* recording stopped somewhere (mms_summary_t's gap_event) */
};

/* l[0, n) as a JSON list. */
void an_leaks_json_list(FILE *f, const mms_leak_t *l, size_t n);
/* "Of them N allocation(s) ... were inherited from the parent", when a
 * fork child's blocks of l[0, n) (not suppressed) came from its parent. */
void an_leaks_inherited(FILE *f, const mms_leak_t *l, size_t n);
/* Shows l[0, n) (not suppressed) grouped by allocation stack under title;
 * adds their blocks and bytes to *blocks and *bytes when not NULL. */
void an_leaks_by_stack(struct leaks_out *o, const mms_leak_t *l, size_t n, const char *title, uint64_t *blocks,
		       uint64_t *bytes);

/* an-leaks-apart.c: the sections of what is no leak (text, or JSON
 * members), and the bad frees (text: JSON has them from the log words). */
void an_leaks_print_runtime(struct leaks_out *o);
void an_leaks_print_reachable(struct leaks_out *o);
void an_leaks_print_unrecorded(struct leaks_out *o);
/* stacks: the log has stacks. */
void an_leaks_print_step_apart(struct leaks_out *o, int stacks);
void an_leaks_print_bad_frees(struct leaks_out *o);

#endif
