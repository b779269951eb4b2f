/* SPDX-License-Identifier: MIT */
/* msmemscope/export.h: msMemScope's dump of every event (CSV, SQLite) and
 * memray-style transforms (CSV, gprof2dot JSON, flame graph). */
#ifndef MSMEMSCOPE_API_EXPORT_H
#define MSMEMSCOPE_API_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope/log.h"
#include "msmemscope/output.h"
#include "msmemscope/pass.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- exports (export-csv.c, export-db.c) ----------------------------------
 * msMemScope's dump of every event, as CSV (memscope_dump_{timestamp}.csv)
 * or as SQLite (table memscope_dump with the same columns, plus
 * normalized tables; see doc/export.md). */
enum mms_export_format {
	MMS_EXPORT_CSV = 1,
	MMS_EXPORT_DB = 2,
};

typedef struct mms_export_options {
	int format;               /* enum mms_export_format */
	const char *path;         /* the file; created with mode 0640 without following a
	                             symlink, whole or not at all */
	mms_output_options_t out; /* replace a file there; symbolize the C stacks */
	/* When not NULL (an inefficient result with tags = 1), the MALLOC row
	 * of each block it found gets inefficient_type:TYPE in its Attr
	 * (several types joined by '+'). A result the same pass fills makes
	 * the export read the log again once the analysis ended. */
	const struct mms_inefficient *inefficient;
} mms_export_options_t;

/* What an export wrote (read-only). */
typedef struct mms_export {
	uint64_t rows;            /* rows of memscope_dump */
	int status;               /* 0, or the error that stopped it (no file is left) */
} mms_export_t;

/* Writes the dump of the log the pass reads. Creates the file at once
 * (-EEXIST when it exists and overwrite is 0): on failure no partial file
 * is left. Returns 0 and sets *out, filled once mms_pass_run() returned
 * (free it with mms_export_free()), or a negative code. */
int mms_export_add(mms_pass_t *p, const mms_export_options_t *opt, mms_export_t **out);
/* The same in a pass of its own. */
int mms_export_run(mms_log_t *log, const mms_export_options_t *opt, mms_export_t **out);
void mms_export_free(mms_export_t *res);
/* The file name msMemScope gives a dump of this log, from the time the
 * recording began: "memscope_dump_{YYYYmmddHHMMSS}.{ext}" (local time).
 * Returns the length like snprintf. */
int mms_export_name(const mms_log_t *log, const char *ext, char *buf, size_t len);

/* --- memray-style transforms (transform.c, flamegraph.c) ------------------
 * One forward pass selects allocations, groups them by (allocation stack,
 * thread, allocator) and writes them as CSV (memray's columns), as
 * gprof2dot's JSON profile, or as a self-contained interactive SVG flame
 * graph. See doc/transform.md for the exact rules. */
enum mms_transform_format {
	MMS_TRANSFORM_CSV = 1,    /* allocator,num_allocations,size,tid,thread_name,stack_trace */
	MMS_TRANSFORM_GPROF2DOT,  /* gprof2dot's JSON input format */
	MMS_TRANSFORM_FLAMEGRAPH, /* SVG, bytes per frame, hover and click to zoom */
};

enum mms_transform_selection {
	MMS_TRANSFORM_PEAK = 0,   /* live at the high-water mark of all memory kinds */
	MMS_TRANSFORM_LEAKS,      /* live at the end of the log */
	MMS_TRANSFORM_TEMPORARY,  /* freed by their thread after at most threshold
	                             other allocations of that thread */
};

typedef struct mms_transform_options {
	int format;               /* enum mms_transform_format */
	const char *path;         /* the file (see mms_output_options_t) */
	int selection;            /* enum mms_transform_selection */
	uint64_t threshold;       /* TEMPORARY: other allocations allowed (memray's N) */
	const char *title;        /* FLAMEGRAPH: the title line; NULL: from the selection */
	mms_output_options_t out; /* replace a file there; name the frames (NULL: raw
	                             addresses) */
} mms_transform_options_t;

/* What a transform wrote (read-only). */
typedef struct mms_transform {
	uint64_t groups;          /* what the file holds: rows (CSV), events (gprof2dot),
	                             boxes (flame graph) */
	uint64_t allocations;     /* allocations selected */
	uint64_t bytes;           /* their bytes */
	uint64_t peak_bytes;      /* the log's high-water mark, HOST, MMAP and POOL together */
	int status;               /* 0, or the error that stopped it (no file is left) */
} mms_transform_t;

/* Writes the selected allocations of the log the pass reads. Creates the
 * file at once (-EEXIST when it exists and overwrite is 0; MMS_EUSAGE for
 * a format or selection out of range): on failure no partial file is
 * left. Returns 0 and sets *out, filled once mms_pass_run() returned (free
 * it with mms_transform_free()), or a negative code. */
int mms_transform_add(mms_pass_t *p, const mms_transform_options_t *opt, mms_transform_t **out);
/* The same in a pass of its own. */
int mms_transform_run(mms_log_t *log, const mms_transform_options_t *opt, mms_transform_t **out);
void mms_transform_free(mms_transform_t *res);
/* The default output name, as memray names its transforms: the log's
 * folder, then "memscope-FORMAT-" and the log's file name with its suffix
 * (.mms) replaced by the format's (.csv, .json, .svg) and a leading
 * "memscope-" dropped. Returns the length like snprintf, or MMS_EUSAGE. */
int mms_transform_name(const char *log_path, int format, char *buf, size_t len);
/* The format's name ("csv", "gprof2dot", "flamegraph"), or NULL. */
const char *mms_transform_format_name(int format);

#ifdef __cplusplus
}
#endif

#endif /* MSMEMSCOPE_API_EXPORT_H */
