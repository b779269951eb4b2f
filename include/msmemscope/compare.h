/* SPDX-License-Identifier: MIT */
/* msmemscope/compare.h: msMemScope's compare of the operator launches of
 * two logs, two steps or two dumps, and the launches of one side. */
#ifndef MSMEMSCOPE_API_COMPARE_H
#define MSMEMSCOPE_API_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope/log.h"
#include "msmemscope/output.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- compare (compare.c) ---------------------------------------------------
 * msMemScope's compare: the operator launches (or kernel launches) of two
 * sides, base and compare, each with the net bytes allocated during it,
 * aligned by name with a Myers diff (an optimal alignment when the sides
 * differ by fewer than about 4000 launches; a good one, in bounded time,
 * beyond). A side is a whole log, a step of one, or a dump CSV as
 * mms_export_csv() writes it. An operator launch's bytes are those its
 * thread allocated minus those it freed between the launch's begin and
 * end (nested launches included); launches are listed in the order they
 * end, as msMemScope lists them. A kernel launch's bytes are those its
 * thread moved from the launch to the thread's next kernel launch or the
 * end of the operator it was launched in. See doc/analyses.md. */
typedef struct mms_compare mms_compare_t;

enum mms_compare_level {
	MMS_COMPARE_OP = 0,      /* OP_LAUNCH: operator launches */
	MMS_COMPARE_KERNEL = 1,  /* KERNEL_LAUNCH: msmemscope_kernel_launch() */
};

/* One row of the comparison: a launch on one side or both. */
typedef struct mms_compare_row {
	const char *name;         /* valid until the next add or align, or close */
	uint64_t base_launch;     /* its place in base's launches, from 1; 0: not in base */
	uint64_t compare_launch;  /* the same in compare */
	int64_t base, compare;    /* net bytes allocated; 0 on the side without it */
	int64_t diff;             /* compare - base */
	int32_t device;           /* base's launch's device ordinal (compare's when base has
	                             none): the CSV's Device Id; -1: the host */
} mms_compare_row_t;

typedef struct mms_compare_stats {
	uint64_t launches[2];     /* launches of base, of compare */
	int64_t bytes[2];         /* their net bytes, summed */
	uint64_t paired;          /* rows with a launch on both sides */
	uint64_t only[2];         /* rows with a launch only in base, only in compare */
	int64_t outside[2];       /* net bytes moved outside every launch, on each side
	                             (mms_launches_t.outside_bytes) */
} mms_compare_stats_t;

/* Where a dump CSV is malformed. */
typedef struct mms_compare_error {
	uint64_t line;            /* line of the file, from 1 (0: none) */
	char what[160];
} mms_compare_error_t;

/* Opens an empty comparison at level (enum mms_compare_level). Returns 0
 * and sets *out, or MMS_EUSAGE, -ENOMEM. Free with mms_compare_close(). */
int mms_compare_open(int level, mms_compare_t **out);
void mms_compare_close(mms_compare_t *c);
/* The operator launches (or kernel launches) of a log, or of one step of
 * it, as a side of a comparison reads them: at op level the launches that
 * ended, in the order they end, each with the memory its thread moved
 * while it ran (nested launches included); at kernel level every kernel
 * launch (launch: its number, from 1; begin_event: its event), with the
 * memory its thread moved up to its next kernel launch or the end of the
 * operator it was launched in. A launch belongs to the step it began in. */
typedef struct mms_launches_options {
	int level;                /* enum mms_compare_level */
	uint64_t step;            /* 0: the whole log; N: the launches begun in step N */
} mms_launches_options_t;

typedef struct mms_launches {
	mms_launch_t *launches;   /* names are the log's (valid until mms_log_close()) */
	size_t n;
	uint64_t steps;           /* the log's steps (as far as it is readable) */
	mms_step_recorded_t recorded; /* how much of the step asked for the log has
	                             (--steps, collect=deferred); ALL for a whole log */
	int64_t outside_bytes;    /* net bytes (allocated minus freed, every memory kind)
	                             of the memory events outside every launch: at op
	                             level on a thread with no operator launch open, at
	                             kernel level outside every kernel launch's span; of
	                             the step asked for, or of the whole log */
	int status;               /* 0; MMS_EUSAGE when the log has no step `step`; or the
	                             error that stopped this analysis */
} mms_launches_t;

/* Follows the launches of the log the pass reads (memory: the launch
 * list). Returns 0 and sets *out, filled once mms_pass_run() returned
 * (free it with mms_launches_free()), or a negative code. Two of them in
 * one pass read two steps of a log at once. */
int mms_launches_add(mms_pass_t *p, const mms_launches_options_t *opt, mms_launches_t **out);
/* The same in a pass of its own. */
int mms_launches_run(mms_log_t *log, const mms_launches_options_t *opt, mms_launches_t **out);
void mms_launches_free(mms_launches_t *l);

/* Makes the launches l (at the comparison's level) side (0 base, 1
 * compare). Returns 0, MMS_EUSAGE when that side is already read or l
 * failed, or -ENOMEM. */
int mms_compare_set(mms_compare_t *c, int side, const mms_launches_t *l);
/* Reads side from a memscope_dump CSV in event order (OP_LAUNCH,
 * KERNEL_LAUNCH, MALLOC and FREE rows; quoted fields as RFC 4180). Returns
 * 0, -errno when it cannot be read, or MMS_ECORRUPT with the line and the
 * reason in *err (when not NULL). */
int mms_compare_add_csv(mms_compare_t *c, int side, const char *path, mms_compare_error_t *err);
/* Launches read so far on side. */
size_t mms_compare_launches(const mms_compare_t *c, int side);
/* Aligns the two sides: *rows (owned by c, valid until the next align or
 * close) gets one row per launch pair or unpaired launch, in the order of
 * both sides, and *stats (when not NULL) the totals. Returns 0, MMS_EUSAGE
 * when a side is missing, or -ENOMEM. */
int mms_compare_align(mms_compare_t *c, const mms_compare_row_t **rows, size_t *nrows, mms_compare_stats_t *stats);
/* Writes the aligned rows as msMemScope's memory_compare CSV (two header
 * lines, N/A for a launch missing on a side, Device Id "host"), created
 * as every output file is (see mms_output_options_t). Returns 0 or a
 * negative code. */
int mms_compare_write_csv(const mms_compare_t *c, const char *path, const mms_output_options_t *out);
/* msMemScope's name for the file, from the current local time:
 * "memory_compare_{YYYYmmddHHMMSS}.csv". Returns the length like snprintf. */
int mms_compare_name(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* MSMEMSCOPE_API_COMPARE_H */
