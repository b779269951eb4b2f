/* SPDX-License-Identifier: MIT */
/* trace-tsv.c: the GPU-trace scripts' TSV rows of blocks (PID, address,
 * allocation time, bytes, memory kind, ALLOCATION, owner or pool, the
 * symbolized stack), for watermark.tsv and leakage.tsv. */
#include <stdio.h>
#include <string.h>

#include "msmemscope/analysis.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/output.h"
#include "msmemscope/symbolize.h"
#include "base-int.h"
#include "decimal-int.h"
#include "log-int.h"
#include "outfile-int.h"
#include "trace-int.h"

static void row_of_record(const mms_trace_block_t *tb, struct row *r)
{
	const mms_block_t *b = &tb->b;

	*r = (struct row){ .addr = b->addr, .size = b->size, .event = b->alloc_event, .time_ns = tb->time_ns,
			   .var = b->owner ? b->owner : b->pool ? b->pool : "", .stack = b->stack, .mem = (uint8_t)b->mem };
}

static const char *kind_name(unsigned mem)
{
	const char *name = mms_mem_kind_name(mem);

	return name ? name : "POOL";
}

/* Writes s with tabs and line breaks turned into spaces (a field). */
static void w_field(struct mms__wfile *w, const char *s)
{
	size_t n = strcspn(s, "\t\n\r");

	mms__wfile_mem(w, s, n);
	for (s += n; *s; s++) {
		char ch = *s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s;

		mms__wfile_mem(w, &ch, 1);
	}
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

MMS__EXPORT int mms_trace_frame_text(const mms_frame_t *f, char *buf, size_t len)
{
	const char *mod = base_name(f->module);
	int n;

	if (f->function)
		n = snprintf(buf, len, "%s (%s)", f->function, mod ? mod : "??");
	else
		n = snprintf(buf, len, "0x%llx (%s)", (unsigned long long)f->ip, mod ? mod : "??");
	return n;
}

void mms__trace_tsv_rest(struct tsv *f, const struct row *r)
{
	struct mms__wfile *w = f->w;
	uint64_t ips[256];
	mms_frame_t frames[64];
	char text[1024];
	int depth, k, j, nf;

	w_field(w, r->var);
	mms__wfile_mem(w, "\t", 1);
	depth = mms__log_stack(f->log, r->stack, ips, sizeof(ips) / sizeof(ips[0]));
	if (depth < 0) {
		f->rc = depth;
		return;
	}
	if ((size_t)depth > sizeof(ips) / sizeof(ips[0]))
		depth = (int)(sizeof(ips) / sizeof(ips[0]));
	/* Python frames where the eval loop ran them. */
	if (f->sym && depth > 0) {
		int m = mms_stack_mixed(f->sym, ips, (size_t)depth);
		if (m < 0) {
			f->rc = m;
			return;
		}
		depth = m;
	}
	for (k = 0; k < depth; k++) {
		mms_frame_t one = { .ip = ips[k] };

		nf = f->sym ? mms_symbolize(f->sym, ips[k], frames, sizeof(frames) / sizeof(frames[0])) : 0;
		if (nf < 0) {
			f->rc = nf;
			return;
		}
		if (!nf) {
			frames[0] = one;
			nf = 1;
		}
		for (j = 0; j < nf; j++) {
			if (k || j)
				mms__wfile_str(w, "; ");
			mms_trace_frame_text(&frames[j], text, sizeof(text));
			w_field(w, text);
		}
	}
	mms__wfile_mem(w, "\n", 1);
}

void mms__trace_tsv_start(struct tsv *f, unsigned mem)
{
	static const char alloc[] = "\tALLOCATION\t\t\n";
	const char *name = kind_name(mem);
	size_t n = strlen(name);

	/* The names are short: one that is not (none is) goes as "POOL". */
	if (1 + n + sizeof(alloc) - 1 > sizeof(f->tail[0])) {
		name = "POOL";
		n = strlen(name);
	}
	f->tail[mem][0] = '\t';
	memcpy(f->tail[mem] + 1, name, n);
	memcpy(f->tail[mem] + 1 + n, alloc, sizeof(alloc) - 1);
	f->tail_len[mem] = (uint8_t)(1 + n + sizeof(alloc) - 1);
	if (!f->pid_len) {
		f->pid_len = (uint8_t)mms__dec(f->pid_text, f->pid);
		f->pid_text[f->pid_len++] = '\t';
	}
}

MMS__EXPORT int mms_trace_write_tsv(mms_log_t *log, const mms_trace_block_t *blocks, size_t n, const char *path,
				    const mms_output_options_t *out)
{
	struct tsv f = { .log = log, .sym = out ? out->sym : NULL };
	mms_log_info_t info;
	struct row r;
	size_t i;
	int rc = 0;

	if (!log || !path || (!blocks && n))
		return MMS_EUSAGE;
	mms_log_get_info(log, &info);
	f.pid = info.pid;
	f.w = mms__wfile_open(path, mms__out_flags(out), &rc);
	if (!f.w)
		return rc;
	for (i = 0; i < n && !f.rc; i++) {
		row_of_record(&blocks[i], &r);
		mms__trace_tsv_row(&f, &r);
	}
	return mms__wfile_close(f.w, f.rc);
}
