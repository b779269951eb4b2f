/* SPDX-License-Identifier: MIT */
/* msmemscope/output.h: how the library writes every output file. */
#ifndef MSMEMSCOPE_API_OUTPUT_H
#define MSMEMSCOPE_API_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope/symbolize.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- output files ---------------------------------------------------------
 * How every function that writes a file writes it. Files are created with
 * mode 0640 without following a symlink, under a temporary name moved into
 * place at the end, so no partial file is ever left. A file past half a
 * megabyte is written from there on by a thread of its own, which blocks
 * every signal and is joined when the file is finished (doc/replay.md). Zero (or NULL)
 * means the default. */
typedef struct mms_output_options {
	int overwrite;            /* 1: replace an existing file; else refuse (-EEXIST) */
	mms_symbolizer_t *sym;    /* names the frames of the stacks written; NULL: raw
	                             addresses (where the file has stacks) */
} mms_output_options_t;

/* Writes len bytes to a new file at path (see mms_output_options_t).
 * Returns 0 or a negative code. */
int mms_file_write(const char *path, const void *buf, size_t len, const mms_output_options_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MSMEMSCOPE_API_OUTPUT_H */
