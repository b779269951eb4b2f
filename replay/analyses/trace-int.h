/* SPDX-License-Identifier: MIT */
/* trace-int.h: the GPU-trace scripts' TSV rows of blocks (trace-tsv.c), as
 * the watermark and leakage lists write them (trace.c). */
#ifndef MMS_TRACE_INT_H
#define MMS_TRACE_INT_H

#include <stdint.h>

#include "msmemscope/log.h"
#include "msmemscope/symbolize.h"
#include "outfile-int.h"

/* What a block's TSV row and its place in a list need. */
struct row {
	uint64_t addr, size, event, time_ns;
	const char *var;         /* owner tags, else the pool's name, else "" */
	uint32_t stack;
	uint8_t mem;
};

/* A TSV file of blocks being written: the scripts' rows (see
 * mms_trace_write_tsv()). */
struct tsv {
	struct mms__wfile *w;    /* NULL: none */
	const mms_log_t *log;
	uint64_t pid;
	mms_symbolizer_t *sym;
	int rc;                  /* the first error: no more rows */
};

/* Writes the row of one block to f; the first error goes to f->rc (the
 * file is then not kept). */
void mms__trace_tsv_row(struct tsv *f, const struct row *r);

#endif /* MMS_TRACE_INT_H */
