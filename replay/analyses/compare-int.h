/* SPDX-License-Identifier: MIT */
/* compare-int.h: what compare.c (the sides, the alignment, the output) and
 * compare-dump.c (a side read from a dump CSV) share. */
#ifndef MMS_COMPARE_INT_H
#define MMS_COMPARE_INT_H

#include "msmemscope/compare.h"
#include "export-int.h"

struct cmp_launch {
	uint32_t name;   /* interned name id */
	int64_t bytes;   /* net bytes allocated during the launch */
	uint64_t step;   /* while a log is read: the step it began in */
	int32_t device;  /* its device ordinal, -1: the host (mms_compare_row_t) */
};

struct cmp_side {
	struct cmp_launch *v;
	size_t n, cap;
	int64_t outside; /* net bytes outside every launch */
	int loaded;
};

struct mms_compare {
	int level;
	struct cmp_side side[2];
	/* Names, interned: id -> offset of a NUL-terminated copy in text. */
	char *text;
	size_t text_len, text_cap;
	size_t *off;
	size_t nnames, off_cap;
	uint32_t *slots;  /* open addressing: id + 1, 0 = empty */
	size_t nslots;
	mms_compare_row_t *rows;
	size_t nrows;
	mms_compare_stats_t stats;
};

/* The id of name s (n bytes), interned on first use. Returns 0 or -ENOMEM. */
int mms__compare_name_id(struct mms_compare *c, const char *s, size_t n, uint32_t *id);
/* Appends a launch of name to side s, with 0 bytes. Returns it, or NULL
 * when memory runs out. */
struct cmp_launch *mms__compare_side_push(struct cmp_side *s, uint32_t name, uint64_t step);

#endif /* MMS_COMPARE_INT_H */
