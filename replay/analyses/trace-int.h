/* SPDX-License-Identifier: MIT */
/* trace-int.h: what the files of the trace subscriber share: the GPU-trace
 * scripts' TSV rows of blocks (trace-tsv.c), the pass's own state, which
 * follows the events (trace.c), and the watermark's and leakage's lists,
 * made from that state at the end (trace-list.c). */
#ifndef MMS_TRACE_INT_H
#define MMS_TRACE_INT_H

#include <stdint.h>

#include "msmemscope/analysis.h"
#include "msmemscope/log.h"
#include "msmemscope/output.h"
#include "msmemscope/symbolize.h"
#include "base-int.h"
#include "map-int.h"
#include "outfile-int.h"
#include "pass-int.h"
#include "state-int.h"

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
	/* Each memory kind's end of a row once seen (tail_len 0 before): a
	 * tab, the kind's name (mms_mem_kind_name(), "POOL" for any other),
	 * "\tALLOCATION\t\t\n", copied whole and kept whole by a row with
	 * no owner and no stack (less its last two characters by others). */
	char tail[8][32];
	uint8_t tail_len[8];
	char pid_text[24];       /* pid and a tab, once the first row is written */
	uint8_t pid_len;         /* their length, 0 before */
	/* The last row's size and its digits (size_len 0: none yet):
	 * the lists are in order of size, so most rows repeat the last. */
	uint8_t size_len;
	uint64_t size_last;
	char size_text[24];
};

/* The kind's end of a row (tail[mem]) made, and the pid's digits. */
void mms__trace_tsv_start(struct tsv *f, unsigned mem);
/* The row's owner or pool and its stack, after the kind's
 * "\tALLOCATION\t": where its row has either. */
void mms__trace_tsv_rest(struct tsv *f, const struct row *r);

/* Writes the row of one block to f; the first error goes to f->rc (the
 * file is then not kept). Inline: the lists write millions. */
static inline void mms__trace_tsv_row(struct tsv *f, const struct row *r)
{
	struct mms__wfile *w = f->w;
	unsigned mem = r->mem & 7;
	int bare = !*r->var && !r->stack;
	char *q;

	if (__builtin_expect(!f->tail_len[mem], 0))
		mms__trace_tsv_start(f, mem);
	/* The numbers and the kind's tail in one go, a row with no owner and
	 * no stack whole. */
	q = mms__wfile_room(w, sizeof(f->pid_text) + 18 + 1 + 20 + 1 + sizeof(f->size_text) + sizeof(f->tail[0]));
	memcpy(q, f->pid_text, sizeof(f->pid_text));
	q += f->pid_len;
	q += mms__hex(q, r->addr);
	*q++ = '\t';
	q = mms__wfile_dec_at(w, q, r->time_ns);
	*q++ = '\t';
	if (r->size != f->size_last || !f->size_len) {
		f->size_last = r->size;
		f->size_len = (uint8_t)mms__dec(f->size_text, r->size);
	}
	memcpy(q, f->size_text, sizeof(f->size_text));
	q += f->size_len;
	memcpy(q, f->tail[mem], sizeof(f->tail[0]));
	q += bare ? f->tail_len[mem] : f->tail_len[mem] - 2;
	mms__wfile_end(w, q);
	if (!bare)
		mms__trace_tsv_rest(f, r);
}

/* --- the subscriber (trace.c) and its lists (trace-list.c) ------------------- */

/* Splits [t0, t1] into n equal buckets and keeps the highest live bytes in
 * each (the value carried in from the bucket before counts), handing each
 * finished bucket to emit. */
struct bucketer {
	uint64_t t0, span, n;
	uint64_t cur;      /* the open bucket */
	uint64_t max;      /* its highest live bytes so far */
	uint64_t next_edge; /* the least time from t0 in a later bucket */
	void (*emit)(void *ctx, uint64_t i, uint64_t time_ns, uint64_t bytes);
	void *ctx;
};

/* A block freed since the peak whose record may be made: the state's
 * slot as it was (a copy is quicker than a record, and most are dropped
 * at a later peak), its time, and its step as the state counted it then
 * (the state learns how steps are marked at the first one). */
struct kept {
	struct mms__blk b;
	uint64_t step;
};

/* The result, with what it keeps besides. */
struct trace_res {
	mms_trace_t pub;
	size_t steps_cap;
	struct mms__strs *strs; /* the blocks' owner strings */
};

/* The subscriber: what it follows of the pass, and the lists' makings. */
struct trace_pass {
	struct mms__sub sub;
	mms_log_t *log;
	struct trace_res *res;
	mms_trace_t *t;
	const struct mms__state *st;
	uint64_t live, steps, ranges; /* after the last event: live bytes counted, the
	                                 state's step and range counters */
	uint64_t host_seen;           /* and the state's live bytes of the heap (HOST) */
	struct mms_pass *pass;
	/* Blocks live at the peak and freed since: their slots, held out of
	 * reuse by the pass (mms__pass_hold()) with their fields (the time
	 * among them),
	 * so that nothing is copied of the millions a peak's list may hold. */
	uint32_t *held;
	size_t nheld, held_cap;
	size_t held_nostep; /* the first of them, freed before the state knew
	                            how steps are marked: their records say none */
	/* Those whose slot could not be held (pieces of mappings, a read
	 * over a replay). With top 0, each in kept. Else their rows as
	 * varints in gone (about 20 bytes each where a record takes 152; a
	 * table of huge pages, read in the list's order, which is random),
	 * and in kept a heap of the first top of them, the last at the root. */
	uint8_t *gone;
	size_t gone_len, gone_cap, ngone;
	const char **vars;       /* the rows' var strings: vars[i - 1] is var i */
	size_t nvars, vars_cap;
	struct mms__map var_ix;  /* a var string's address -> its i */
	struct kept *kept;
	size_t nkept, kept_cap;
	size_t top;              /* records made of each list, 0 = all */
	char *tsv_path[2];       /* the watermark's and the leakage's TSV, or NULL */
	mms_output_options_t out;
	/* Mapping pieces an MMAP event is about to remove. */
	struct piece {
		struct mms__blk b; /* a copy: the slot may be taken again by the event */
		uint64_t slot;
	} *pieces;
	size_t npieces, pieces_cap;
	struct mms__wfile *usage;     /* usage.tsv, or NULL */
	/* usage.tsv's rows of the time the last changes had (row_ns,
	 * ROW_NONE when no row waits): the highest live bytes among them and
	 * the last. */
	uint64_t row_ns, row_max, row_last;
	struct bucketer file_b, plot_b;
	int file_bucketed, plot;
	int rows_only;           /* usage.tsv's rows, not bucketed, and no plot */
	int usage_any;           /* usage.tsv or the plot */
	unsigned kinds;          /* bit 1 << kind: the memory kinds counted */
	unsigned peak_kinds;     /* those of the peak's list: kinds, 0 when it is not made */
	struct mms__state *hold_st;         /* the state whose slots are held (mms__pass_own_state()) */
	uint64_t kmask[MMS_MEM_KIND_COUNT]; /* by kind: all ones when counted, else 0 */
	unsigned skip;           /* MMS_TRACE_SKIP_*: the lists not made */
};

/* No usage row waits (an event of this time, which the clock's
 * nanoseconds since 1970 reach in the year 2554, waits in none). */
#define ROW_NONE UINT64_MAX

/* Live bytes of the kinds counted (after every event: the kinds' bits
 * only). */
static inline uint64_t mms__trace_live_total(const struct trace_pass *p)
{
	uint64_t n = 0;

	/* Every kind, masked: a loop of a fixed count, unrolled, where one
	 * over the kinds' bits was a chain of dependent steps per event. */
#pragma GCC unroll 8
	for (unsigned k = 0; k < MMS_MEM_KIND_COUNT; k++)
		n += p->st->mem[k].live_bytes & p->kmask[k];
	return n;
}

/* Block b, live at the peak, was freed (or a piece of a mapping that
 * was): it joins the peak's list as a copy. Returns 0 or -ENOMEM. */
int mms__trace_freed_add(struct trace_pass *p, const struct mms__blk *b);
/* Slot, held, joins the peak's list. */
static inline void mms__trace_held_add(struct trace_pass *p, int64_t slot)
{
	p->held[p->nheld++] = (uint32_t)slot;
	if (!mms__state_steps_known(p->st))
		p->held_nostep = p->nheld;
}
/* The block the current event freed, live at the peak, joins the peak's
 * list where its slot could not be held at once (the list of held slots
 * full, or a read over a replay): the list grown, or as a copy. Returns 0
 * or -ENOMEM. */
int mms__trace_freed_more(struct trace_pass *p);
/* A new peak: the slots held for the last one go back to the state. */
void mms__trace_held_release(struct trace_pass *p);
/* At the pass's end: makes the lists, the watermark's (the peak) and the
 * leakage's (the end), and writes their TSV files; frees what the blocks
 * freed since the peak took. Returns 0 or -ENOMEM. */
int mms__trace_lists_finish(struct trace_pass *p);
/* Frees what the lists' making holds (p itself stays). */
void mms__trace_lists_free(struct trace_pass *p);

#endif /* MMS_TRACE_INT_H */
