/* SPDX-License-Identifier: MIT */
/* export-rows.c: what both exporters do as subscribers of a pass: turn
 * each event into msMemScope's dump row (Event, Event Type, Name, Ptr,
 * Attr, C stack) with the operator launches and steps the pass follows,
 * and write their file under a temporary name until done. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "msmemscope/analysis.h"
#include "msmemscope/error.h"
#include "msmemscope/export.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "msmemscope/symbolize.h"
#include "analysis-int.h"
#include "base-int.h"
#include "decimal-int.h"
#include "export-int.h"
#include "log-int.h"
#include "map-int.h"
#include "outfile-int.h"
#include "pass-int.h"
#include "state-int.h"
#include "track-int.h"

/* Frames one address may expand to (inlined functions); as symbolize.c. */
#define XPASS_MAX_FRAMES 64

/* --- text buffer ---------------------------------------------------------------- */

int mms__xbuf_grow(struct mms__xbuf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->p && b->cap - b->len >= n)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

static void hex16(char *out, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	int i;

	out[0] = '0';
	out[1] = 'x';
	for (i = 17; i >= 2; i--, v >>= 4)
		out[i] = digits[v & 15];
}

int mms__xbuf_addr(struct mms__xbuf *b, uint64_t v)
{
	if (mms__xbuf_reserve(b, 18))
		return -ENOMEM;
	hex16(b->p + b->len, v);
	b->len += 18;
	return 0;
}

void mms__xbuf_free(struct mms__xbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

uint64_t mms__xpass_tid(struct mms__xpass *x, uint32_t thread)
{
	uint64_t tid = 0;

	if (mms_log_thread(x->log, thread, &tid, NULL))
		tid = 0;
	return tid;
}

uint64_t mms__xpass_step_of(const struct mms__xpass *x, uint64_t id)
{
	return mms__track_step_of(x->track, id);
}

/* --- owners given after the fact ---------------------------------------------------- */

/* A log with OWNER_TAG records (format 5, msmemscope_owner_tag) names
 * some blocks' owners only after their MALLOC: a first read of the log
 * collects each tagged block's last owner, by allocation id, and the
 * export reads it again, so that a MALLOC row carries the owner its
 * block ends with, as msMemScope's rows do (it writes them once the block
 * is freed). Owned by the pass: its drop frees it. */
struct mms__xowners {
	struct mms__sub sub;
	const struct mms__state *st;
	struct mms__map last; /* alloc_id -> the owner (an interned string) */
};

static int xowners_begin(struct mms__sub *sub, struct mms_pass *p)
{
	((struct mms__xowners *)sub)->st = mms__pass_state(p);
	return 0;
}

static int xowners_event(struct mms__sub *sub, struct mms_pass *p, const mms_event_t *ev)
{
	struct mms__xowners *o = (struct mms__xowners *)sub;
	const struct mms__blk *b;
	uint64_t *v;
	int isnew;

	(void)p;
	if (ev->sub != MMS_OWNER_TAG || !(b = mms__state_find(o->st, ev->addr)))
		return 0;
	v = mms__map_put(&o->last, b->alloc_id, &isnew);
	if (!v)
		return -ENOMEM;
	*v = (uint64_t)(uintptr_t)mms__blk_origin(o->st, b)->owner;
	return 0;
}

static void xowners_drop(struct mms__sub *sub)
{
	struct mms__xowners *o = (struct mms__xowners *)sub;

	mms__map_free(&o->last);
	free(o);
}

/* Adds the first read's collector to p. Returns it, or NULL when out of
 * memory. */
static struct mms__xowners *xowners_add(mms_pass_t *p, int *status)
{
	struct mms__xowners *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	mms__map_init(&o->last);
	o->sub.name = "export owners";
	o->sub.kinds = 1u << MMS_EV_OWNER;
	o->sub.begin = xowners_begin;
	o->sub.event = xowners_event;
	o->sub.drop = xowners_drop;
	o->sub.status = status;
	if (mms__pass_add(p, &o->sub)) {
		xowners_drop(&o->sub);
		return NULL;
	}
	return o;
}

/* The owner of the current MALLOC row's block: the last it was given. */
static const char *row_owner(const struct mms__xpass *x)
{
	const uint64_t *v = x->owners ? mms__map_get(&x->owners->last, x->blk.alloc_id) : NULL;

	return v ? (const char *)(uintptr_t)*v : x->blk.owner;
}

/* --- the pass -------------------------------------------------------------------- */

int mms__xpass_init(struct mms__xpass *x, mms_pass_t *p, const mms_export_options_t *opt, mms_export_t *res)
{
	memset(x, 0, sizeof(*x));
	x->log = p->log;
	x->res = res;
	x->sym = opt->out.sym;
	x->inefficient = opt->inefficient;
	mms_log_get_info(p->log, &x->info);
	/* SQLite writes a database through a file of its own: never a device. */
	x->fd = mms__outfile_create(&x->f, opt->path,
				    mms__out_flags(&opt->out) | (opt->format == MMS_EXPORT_DB ? MMS__OUT_REGULAR : 0));
	if (x->fd < 0)
		return x->fd;
	mms__map_init(&x->stk_ix);
	x->sub.kinds = MMS__XPASS_KINDS;
	x->sub.track = MMS__TRACK_LAUNCHES | MMS__TRACK_STEPS;
	x->sub.status = &res->status;
	/* Tags from an analysis of this same pass are known once it ended:
	 * the export then reads the log again after it. */
	if (x->inefficient && mms__inefficient_filling(x->inefficient) == p)
		x->sub.round = 1;
	/* Last: once added, the collector is the pass's. */
	if (p->log->owner_tags) {
		x->owners = xowners_add(p, &res->status);
		if (!x->owners)
			return -ENOMEM;
		x->sub.round = 1;
	}
	return 0;
}

void mms__xpass_free(struct mms__xpass *x)
{
	if (x->fd >= 0)
		close(x->fd);
	if (!x->committed)
		mms__outfile_abort(&x->f);
	mms__map_free(&x->stk_ix);
	free(x->stk_spans);
	mms__xbuf_free(&x->stk_text);
	free(x->ips);
	mms__xbuf_free(&x->attr);
}

void mms__xpass_begin(struct mms__xpass *x, struct mms_pass *p)
{
	x->st = mms__pass_state(p);
	x->track = mms__pass_track(p);
}

void mms__xpass_event(struct mms__xpass *x, const mms_event_t *ev)
{
	x->ev = *ev;
	x->has_blk = 0;
	if (ev->kind == MMS_EV_MALLOC || ev->kind == MMS_EV_FREE || ev->kind == MMS_EV_ACCESS)
		x->has_blk = mms__state_event_block(x->st, ev, &x->blk);
}

int mms__xpass_commit(struct mms__xpass *x)
{
	int rc = close(x->fd) ? -errno : 0;

	x->fd = -1;
	if (!rc)
		rc = mms__outfile_commit(&x->f);
	x->committed = !rc;
	return rc;
}

struct each_live {
	const struct mms__state *st;
	int (*fn)(const mms_block_t *b, void *ctx);
	void *ctx;
};

static int each_live_one(const struct mms__blk *k, void *ctx)
{
	struct each_live *e = ctx;
	mms_block_t b;

	mms__state_blk_export(e->st, k, &b);
	return e->fn(&b, e->ctx);
}

int mms__xpass_each_live(struct mms__xpass *x, int (*fn)(const mms_block_t *b, void *ctx), void *ctx)
{
	struct each_live e = { x->st, fn, ctx };

	return mms__state_each(x->st, each_live_one, &e);
}

/* --- the analysis's entry -------------------------------------------------------- */

MMS__EXPORT void mms_export_free(mms_export_t *res)
{
	free(res);
}

MMS__EXPORT int mms_export_add(mms_pass_t *p, const mms_export_options_t *opt, mms_export_t **out)
{
	int rc;

	if (!out)
		return MMS_EUSAGE;
	*out = NULL;
	if (!p || !opt || !opt->path || (opt->format != MMS_EXPORT_CSV && opt->format != MMS_EXPORT_DB))
		return MMS_EUSAGE;
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	rc = opt->format == MMS_EXPORT_CSV ? mms__export_csv_add(p, opt, *out) : mms__export_db_add(p, opt, *out);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

MMS__RUN_ONE(export, mms_export_options_t, mms_export_t)

/* --- C stacks ------------------------------------------------------------------- */

int mms__xpass_ips(struct mms__xpass *x, uint32_t id, const uint64_t **ips)
{
	size_t cap;
	int depth;
	void *p;

	for (;;) {
		depth = mms__log_stack(x->log, id, x->ips, x->ips_cap);
		if (depth < 0)
			return depth;
		if ((size_t)depth <= x->ips_cap)
			break;
		cap = (size_t)depth < 64 ? 64 : (size_t)depth;
		p = realloc(x->ips, cap * sizeof(*x->ips));
		if (!p)
			return -ENOMEM;
		x->ips = p;
		x->ips_cap = cap;
	}
	*ips = x->ips;
	return depth;
}

/* Appends one ip's frames (or its raw address) to the stack text. */
static int stack_frame_text(struct mms__xpass *x, uint64_t ip, int first)
{
	mms_frame_t frames[XPASS_MAX_FRAMES];
	struct mms__xbuf *b = &x->stk_text;
	int n, i, len;

	if (!x->sym) {
		if (!first && mms__xbuf_put(b, "|", 1))
			return -ENOMEM;
		if (mms__xbuf_reserve(b, 20))
			return -ENOMEM;
		b->len += (size_t)snprintf(b->p + b->len, 20, "0x%llx", (unsigned long long)ip);
		return 0;
	}
	n = mms_symbolize(x->sym, ip, frames, XPASS_MAX_FRAMES);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++, first = 0) {
		if (!first && mms__xbuf_put(b, "|", 1))
			return -ENOMEM;
		len = mms_frame_format(&frames[i], NULL, 0);
		if (len < 0 || mms__xbuf_reserve(b, (size_t)len + 1))
			return -ENOMEM;
		mms_frame_format(&frames[i], b->p + b->len, (size_t)len + 1);
		b->len += (size_t)len;
	}
	return 0;
}

int mms__xpass_stack(struct mms__xpass *x, uint32_t id, int python, const char **s, size_t *n)
{
	const uint64_t *ips;
	uint64_t *v;
	size_t off;
	int depth, i, isnew, rc, first = 1;

	*s = "";
	*n = 0;
	if (!id)
		return 0;
	v = mms__map_put(&x->stk_ix, (uint64_t)id << 1 | (python != 0), &isnew);
	if (!v)
		return -ENOMEM;
	if (!isnew)
		goto found;
	/* A stack's text is rendered once, then copied for every block
	 * allocated from it. */
	if (mms__grow(&x->stk_spans, &x->stk_cap, x->nstk, sizeof(*x->stk_spans)))
		goto fail_oom;
	off = x->stk_text.len;
	depth = mms__xpass_ips(x, id, &ips);
	if (depth < 0) {
		rc = depth;
		goto fail;
	}
	/* A stack holds its Python frames first (format.h): each column
	 * takes its own. */
	for (i = 0; i < depth; i++) {
		if (mms_is_pyframe(x->ips[i]) != (python != 0))
			continue;
		rc = stack_frame_text(x, x->ips[i], first);
		if (rc)
			goto fail;
		first = 0;
	}
	x->stk_spans[x->nstk].off = off;
	x->stk_spans[x->nstk].len = x->stk_text.len - off;
	*v = x->nstk++;
found:
	*s = x->stk_text.p + x->stk_spans[*v].off;
	*n = x->stk_spans[*v].len;
	return 0;
fail_oom:
	rc = -ENOMEM;
fail:
	mms__map_del(&x->stk_ix, (uint64_t)id << 1 | (python != 0), NULL);
	return rc;
}

/* --- rows ------------------------------------------------------------------------- */

static const char *mem_type(const mms_event_t *ev, const mms_block_t *b, int has_blk)
{
	const char *pool;

	switch (ev->mem) {
	case MMS_MEM_HOST:
		return "HOST";
	case MMS_MEM_MMAP:
		return "MMAP";
	case MMS_MEM_DEVICE:
		return "HAL"; /* msMemScope's name for device memory */
	default:
		pool = ev->name ? ev->name : has_blk ? b->pool : NULL;
		return pool && *pool ? pool : "POOL";
	}
}

/* ",inefficient_type:early_allocation" when the block was found so. */
static int attr_inefficient(struct mms__xpass *x, struct mms__xbuf *a)
{
	unsigned types = mms__inefficient_tags(x->inefficient, x->blk.alloc_id), t;
	const char *sep = ",inefficient_type:";
	int rc = 0;

	for (t = 0; t < MMS_INEFF_TYPES; t++) {
		if (!(types & 1u << t))
			continue;
		rc |= mms__xbuf_puts(a, sep);
		rc |= mms__xbuf_puts(a, mms_inefficient_type_name(1u << t));
		sep = "+";
	}
	return rc;
}

/* Attr of a MALLOC or FREE row: {allocation_id,addr,size[,owner][,total,used]}. */
static int attr_memory(struct mms__xpass *x, struct mms__xbuf *a)
{
	const mms_event_t *ev = &x->ev;
	const mms_block_t *b = &x->blk;
	int rc = 0;

	rc |= mms__xbuf_put(a, "{", 1);
	if (x->has_blk) {
		rc |= mms__xbuf_puts(a, "allocation_id:");
		rc |= mms__xbuf_u64(a, b->alloc_id);
		rc |= mms__xbuf_put(a, ",", 1);
	}
	rc |= mms__xbuf_puts(a, "addr:");
	rc |= mms__xbuf_addr(a, ev->addr);
	if (x->has_blk || ev->kind == MMS_EV_MALLOC) {
		/* A FREE of the malloc family records no size: the block
		 * gives it (for munmap, the length unmapped). */
		rc |= mms__xbuf_puts(a, ",size:");
		rc |= mms__xbuf_u64(a, x->has_blk ? b->size : ev->size);
	}
	if (ev->kind == MMS_EV_MALLOC && x->has_blk && row_owner(x)) {
		rc |= mms__xbuf_puts(a, ",owner:");
		rc |= mms__xbuf_puts(a, row_owner(x));
	}
	if (ev->mem == MMS_MEM_DEVICE) {
		const char *kind = mms_device_sub_name(x->has_blk ? b->fn : ev->sub);

		rc |= mms__xbuf_puts(a, ",kind:");
		rc |= mms__xbuf_puts(a, kind ? kind : "device");
	}
	if (ev->mem == MMS_MEM_POOL) {
		rc |= mms__xbuf_puts(a, ",total:");
		rc |= mms__xbuf_u64(a, ev->total);
		rc |= mms__xbuf_puts(a, ",used:");
		rc |= mms__xbuf_u64(a, ev->used);
	}
	if (ev->kind == MMS_EV_MALLOC && x->has_blk && x->inefficient)
		rc |= attr_inefficient(x, a);
	rc |= mms__xbuf_put(a, "}", 1);
	return rc ? -ENOMEM : 0;
}

static int attr_access(struct mms__xpass *x, struct mms__xbuf *a)
{
	int rc = 0;

	rc |= mms__xbuf_puts(a, "{addr:");
	rc |= mms__xbuf_addr(a, x->ev.addr);
	rc |= mms__xbuf_puts(a, ",size:");
	rc |= mms__xbuf_u64(a, x->ev.size);
	if (x->has_blk) {
		rc |= mms__xbuf_puts(a, ",allocation_id:");
		rc |= mms__xbuf_u64(a, x->blk.alloc_id);
	}
	rc |= mms__xbuf_put(a, "}", 1);
	return rc ? -ENOMEM : 0;
}

static int attr_range(struct mms__xbuf *a, uint64_t range_id)
{
	int rc = 0;

	rc |= mms__xbuf_puts(a, "{range_id:");
	rc |= mms__xbuf_u64(a, range_id);
	rc |= mms__xbuf_put(a, "}", 1);
	return rc ? -ENOMEM : 0;
}

static void set_ptr(struct mms__xrow *row, uint64_t addr)
{
	hex16(row->ptr, addr);
	row->ptr[18] = '\0';
}

int mms__xpass_row(struct mms__xpass *x, struct mms__xrow *row)
{
	static const char *const access_types[] = { "UNKNOWN", "READ", "WRITE" };
	static const char *const mstx_types[] = { "Mark", "Range_start", "Range_end" };
	const mms_event_t *ev = &x->ev;
	struct mms__xbuf *a = &x->attr;
	const struct mms__tlaunch *l;
	int rc = 0;

	a->len = 0;
	row->id = ev->id;
	row->time_ns = ev->time_ns;
	row->pid = x->info.pid;
	row->tid = mms__xpass_tid(x, ev->thread);
	row->name = NULL;
	memcpy(row->ptr, "N/A", 4);
	memcpy(row->device, "host", 5);
	row->cstack = row->pystack = "";
	row->cstack_len = row->pystack_len = 0;
	switch (ev->kind) {
	case MMS_EV_SYSTEM:
		row->event = "SYSTEM";
		row->type = ev->sub == MMS_SYSTEM_FORK          ? "FORK"
			    : ev->sub == MMS_SYSTEM_SWEEP_BEGIN ? "SWEEP_BEGIN"
			    : ev->sub == MMS_SYSTEM_SWEEP_END   ? "SWEEP_END"
			    : ev->sub                           ? "FINI"
								: "INIT";
		break;
	case MMS_EV_MALLOC:
	case MMS_EV_FREE:
		row->event = ev->kind == MMS_EV_MALLOC ? "MALLOC" : "FREE";
		row->type = mem_type(ev, &x->blk, x->has_blk);
		if (ev->mem == MMS_MEM_DEVICE)
			row->device[mms__dec(row->device, x->has_blk ? x->blk.device : ev->device)] = '\0';
		set_ptr(row, ev->addr);
		rc = attr_memory(x, a);
		/* The stack of a MALLOC, and of a FREE (version 5, stacks
		 * on: the call that freed). Rendering one text may move the
		 * other: the C text, taken last, is a lookup when it was
		 * rendered first. */
		if (!rc && ev->stack && x->log->npycodes) {
			rc = mms__xpass_stack(x, ev->stack, 0, &row->cstack, &row->cstack_len);
			if (!rc)
				rc = mms__xpass_stack(x, ev->stack, 1, &row->pystack, &row->pystack_len);
		}
		if (!rc && ev->stack)
			rc = mms__xpass_stack(x, ev->stack, 0, &row->cstack, &row->cstack_len);
		break;
	case MMS_EV_ACCESS:
		row->event = "ACCESS";
		row->type = access_types[ev->sub < 3 ? ev->sub : 0];
		/* The operator running on the accessing thread. */
		l = mms__track_running(x->track, ev->thread);
		if (l)
			row->name = l->name;
		set_ptr(row, ev->addr);
		rc = attr_access(x, a);
		break;
	case MMS_EV_OP_LAUNCH:
		row->event = "OP_LAUNCH";
		row->type = ev->sub ? "OP_END" : "OP_START";
		row->name = ev->sub ? (x->track->has_ended ? x->track->ended.name : NULL) : ev->name;
		break;
	case MMS_EV_KERNEL_LAUNCH:
		row->event = "KERNEL_LAUNCH";
		row->type = "KERNEL_LAUNCH";
		row->name = ev->name;
		if (ev->mem == MMS_MEM_DEVICE) /* a CUDA kernel (format 11) */
			row->device[mms__dec(row->device, ev->device)] = '\0';
		break;
	case MMS_EV_MSTX:
		row->event = "MSTX";
		row->type = mstx_types[ev->sub < 3 ? ev->sub : 0];
		if (ev->sub == 2) {
			snprintf(x->name, sizeof(x->name), "Range end from id %llu", (unsigned long long)ev->range_id);
			row->name = x->name;
		} else {
			row->name = ev->name;
		}
		if (ev->sub)
			rc = attr_range(a, ev->range_id);
		break;
	default:
		return 0;
	}
	if (rc)
		return rc;
	row->name_len = row->name ? strlen(row->name) : 0;
	row->attr = a->len ? a->p : "";
	row->attr_len = a->len;
	return 1;
}
