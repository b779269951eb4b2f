/* SPDX-License-Identifier: MIT */
/* watch.c: the watch analysis, a subscriber of a pass: reads the checksums
 * the recorder took of watched blocks around operator launches (WATCH
 * before/after events),
 * writes them as msMemScope's checksum CSV, and finds, per watched block,
 * the launches that changed it.
 *
 * A watched block is one run of sums of one (address,
 * size, name, output) key: it begins with a sum taken at the end of a
 * launch whose beginning it has no sum of (the end of the --watch start
 * operator, or a launch running when msmemscope_watch() was called). A
 * launch changed the block when its after sum differs from its before
 * sum; a before sum that differs from the block's previous sum is a
 * change made between launches (or by another thread during none of this
 * thread's launches), reported with launch 0. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "msmemscope/analysis.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "base-int.h"
#include "decimal-int.h"
#include "outfile-int.h"
#include "pass-int.h"
#include "state-int.h"
#include "track-int.h"

#define OPEN_MAX 16 /* launches open at once on one block (nesting, threads) */

struct open_sum {
	uint64_t launch, crc;
};

struct wblk {
	mms_watch_block_t pub;
	size_t cap; /* of pub.changes */
	int active; /* still the run of its key */
	unsigned nopen;
	struct open_sum open[OPEN_MAX];
};

struct wpass {
	struct mms__sub sub;
	mms_log_t *log;
	const struct mms__state *st;
	mms_watch_t *res;
	char *start;            /* opt->start, copied */
	struct mms__outfile f;  /* the CSV, under a temporary name until the end */
	struct wblk *b;
	size_t n, cap;
	int csv_fd;
	char buf[1 << 16];
	size_t len;
	uint64_t sums;
	int err;
};

static void csv_flush(struct wpass *p)
{
	int rc;

	if (p->csv_fd < 0 || !p->len || p->err)
		return;
	rc = mms__write_all(p->csv_fd, p->buf, p->len);
	if (rc)
		p->err = rc;
	p->len = 0;
}

/* The file-name form of a name, as the recorder writes it (format.h). */
static char *put_name(char *o, const char *s)
{
	for (size_t n = 0; s && s[n] && n + 1 < MMS_WATCH_NAME_MAX; n++)
		*o++ = mms_file_char(s[n]);
	return o;
}

static char *put_dec(char *o, uint64_t v)
{
	return o + mms__dec(o, v);
}

/* Writes the tensor info of one sum at o (at most 256 bytes); returns its end. */
static char *put_info(char *o, uint64_t tid, const char *op, uint64_t launch, const char *name, uint32_t out, int after)
{
	memcpy(o, "host_", 5);
	o = put_dec(o + 5, tid);
	*o++ = '/';
	o = put_name(o, op);
	*o++ = '_';
	o = put_dec(o, launch);
	*o++ = '-';
	o = put_name(o, name);
	*o++ = '_';
	o = put_dec(o, out);
	memcpy(o, after ? "_after" : "_before", after ? 6 : 7);
	return o + (after ? 6 : 7);
}

MMS__EXPORT int mms_watch_tensor_info(char *dst, size_t cap, uint64_t tid, const char *op, uint64_t launch,
				      const char *name, uint32_t out, int after)
{
	char buf[256];
	size_t n = (size_t)(put_info(buf, tid, op, launch, name, out, after) - buf);

	if (cap)
		snprintf(dst, cap, "%.*s", (int)n, buf);
	return (int)n;
}

static void csv_row(struct wpass *p, const mms_event_t *ev, const char *op)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t tid = 0;
	char *o;

	if (p->csv_fd < 0)
		return;
	if (sizeof p->buf - p->len < 512)
		csv_flush(p);
	mms_log_thread(p->log, ev->thread, &tid, NULL);
	/* Names are file-name safe: no quoting needed. */
	o = put_info(p->buf + p->len, tid, op, ev->total, ev->name, (uint32_t)ev->used, ev->sub == MMS_WATCH_AFTER);
	*o++ = ',';
	for (int k = 60; k >= 0; k -= 4)
		*o++ = hex[(ev->flags >> k) & 15];
	*o++ = '\n';
	p->len = (size_t)(o - p->buf);
}

static struct wblk *find(struct wpass *p, const mms_event_t *ev)
{
	for (size_t i = p->n; i-- > 0;) {
		struct wblk *b = &p->b[i];
		if (b->active && b->pub.addr == ev->addr && b->pub.size == ev->size && b->pub.out == ev->used &&
		    !strcmp(b->pub.name, ev->name ? ev->name : ""))
			return b;
	}
	return NULL;
}

static struct wblk *begin_block(struct wpass *p, const mms_event_t *ev)
{
	struct wblk *b;

	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		void *nb = realloc(p->b, cap * sizeof *p->b);
		if (!nb)
			return NULL;
		p->b = nb;
		p->cap = cap;
	}
	b = &p->b[p->n++];
	memset(b, 0, sizeof *b);
	b->active = 1;
	b->pub.addr = ev->addr;
	b->pub.size = ev->size;
	b->pub.name = ev->name ? ev->name : "";
	b->pub.out = (uint32_t)ev->used;
	b->pub.thread = ev->thread;
	b->pub.first_launch = ev->total;
	b->pub.first_crc = ev->flags;
	b->pub.first_event = ev->id;
	return b;
}

static int add_change(struct wblk *b, const mms_watch_change_t *c)
{
	if (b->pub.nchanges == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 4;
		void *nc = realloc(b->pub.changes, cap * sizeof *b->pub.changes);
		if (!nc)
			return -ENOMEM;
		b->pub.changes = nc;
		b->cap = cap;
	}
	b->pub.changes[b->pub.nchanges++] = *c;
	return 0;
}

static int on_sum(struct wpass *p, const mms_event_t *ev)
{
	const struct mms__state *st = p->st;
	const struct mms__tstate *t = ev->thread < st->nthreads ? &st->threads[ev->thread] : NULL;
	const char *op = t && t->nops ? t->ops[t->nops - 1].name : NULL;
	struct wblk *b = find(p, ev);
	mms_watch_change_t c = { 0 };
	int in_step;

	p->sums++;
	csv_row(p, ev, op ? op : "");
	/* Before the first step mark the step is not known yet: step 1 if
	 * the log turns out to count STEP events, else none (track.c). */
	c.step = st->step_kind || st->step_kind_hint ? mms__state_step(st, &in_step) : MMS__STEP_PENDING;
	c.thread = ev->thread;
	c.event = ev->id;
	if (ev->sub == MMS_WATCH_BEFORE) {
		if (!b)
			b = begin_block(p, ev);
		else if (ev->flags != b->pub.last_crc) {
			/* Changed since its last sum, outside this thread's launches. */
			c.found_at = ev->total;
			c.before = b->pub.last_crc;
			c.after = ev->flags;
			if (add_change(b, &c))
				return -ENOMEM;
		}
		if (!b)
			return -ENOMEM;
		if (b->nopen == OPEN_MAX) {
			memmove(b->open, b->open + 1, (OPEN_MAX - 1) * sizeof b->open[0]);
			b->nopen--;
		}
		b->open[b->nopen].launch = ev->total;
		b->open[b->nopen++].crc = ev->flags;
	} else {
		unsigned k = 0;
		int found = 0;

		for (k = b ? b->nopen : 0; !found && k-- > 0;)
			found = b->open[k].launch == ev->total;
		if (!found) {
			/* No sum of this launch's beginning: a new watched block (the
			 * key's earlier run, if any, has ended). */
			if (b)
				b->active = 0;
			if (!(b = begin_block(p, ev)))
				return -ENOMEM;
		} else {
			uint64_t before = b->open[k].crc;

			memmove(&b->open[k], &b->open[k + 1], (b->nopen - k - 1) * sizeof b->open[0]);
			b->nopen--;
			if (before != ev->flags) {
				c.launch = c.found_at = ev->total;
				c.op = op;
				c.before = before;
				c.after = ev->flags;
				if (add_change(b, &c))
					return -ENOMEM;
			}
		}
	}
	b->pub.sums++;
	b->pub.last_crc = ev->flags;
	return 0;
}

static int wpass_begin(struct mms__sub *sub, struct mms_pass *pass)
{
	((struct wpass *)sub)->st = mms__pass_state(pass);
	return 0;
}

static int wpass_event(struct mms__sub *sub, struct mms_pass *pass, const mms_event_t *ev)
{
	struct wpass *p = (struct wpass *)sub;

	(void)pass;
	if (ev->kind == MMS_EV_OP_LAUNCH) {
		/* Launches of the --watch start operator, for a caller who
		 * must say why it watched nothing. */
		if (!ev->sub && ev->name && !strcmp(ev->name, p->start))
			p->res->start_launches++;
		return 0;
	}
	if (ev->sub == MMS_WATCH_REGISTER) {
		/* msmemscope_watch() again: the key's earlier run has ended. */
		struct wblk *b = find(p, ev);

		if (b)
			b->active = 0;
		return 0;
	}
	return on_sum(p, ev);
}

static int wpass_end(struct mms__sub *sub, struct mms_pass *pass)
{
	struct wpass *p = (struct wpass *)sub;
	mms_watch_t *res = p->res;
	int rc = 0;

	res->events = mms__pass_state(pass)->pos;
	if (p->csv_fd >= 0) {
		csv_flush(p);
		rc = p->err;
		if (close(p->csv_fd) < 0 && !rc)
			rc = -errno;
		p->csv_fd = -1;
		if (!rc && p->sums)
			rc = mms__outfile_commit(&p->f);
		else
			mms__outfile_abort(&p->f); /* no checksums: no file */
		if (rc)
			return rc;
		res->csv_written = p->sums != 0;
	}
	for (size_t i = 0; i < p->n; i++)
		for (size_t k = 0; k < p->b[i].pub.nchanges; k++)
			if (p->b[i].pub.changes[k].step == MMS__STEP_PENDING)
				p->b[i].pub.changes[k].step = p->st->step_kind == 1 ? 1 : MMS__STEP_NONE;
	res->sums = p->sums;
	res->blocks = malloc((p->n ? p->n : 1) * sizeof *res->blocks);
	if (!res->blocks)
		return -ENOMEM;
	for (size_t i = 0; i < p->n; i++) {
		res->blocks[i] = p->b[i].pub;
		p->b[i].pub.changes = NULL; /* the result's now */
	}
	res->nblocks = p->n;
	return 0;
}

static void wpass_drop(struct mms__sub *sub)
{
	struct wpass *p = (struct wpass *)sub;

	if (p->csv_fd >= 0) {
		close(p->csv_fd);
		mms__outfile_abort(&p->f);
	}
	for (size_t i = 0; i < p->n; i++)
		free(p->b[i].pub.changes);
	free(p->b);
	free(p->start);
	free(p);
}

MMS__EXPORT void mms_watch_free(mms_watch_t *res)
{
	if (!res)
		return;
	for (size_t i = 0; i < res->nblocks; i++)
		free(res->blocks[i].changes);
	free(res->blocks);
	free(res);
}

MMS__EXPORT int mms_watch_add(mms_pass_t *pass, const mms_watch_options_t *opt, mms_watch_t **out)
{
	struct wpass *p;
	int rc;

	if (!out)
		return MMS_EUSAGE;
	*out = NULL;
	if (!pass)
		return MMS_EUSAGE;
	p = calloc(1, sizeof *p);
	*out = calloc(1, sizeof **out);
	if (!p || !*out || !(p->start = strdup(opt && opt->start ? opt->start : ""))) {
		if (p)
			free(p->start);
		free(p);
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	p->log = pass->log;
	p->res = *out;
	p->csv_fd = -1;
	if (opt && opt->csv_path) {
		static const char header[] = "Tensor info,Check data sum\n";

		rc = mms__outfile_create(&p->f, opt->csv_path, mms__out_flags(&opt->out));
		if (rc < 0) {
			wpass_drop(&p->sub);
			free(*out);
			*out = NULL;
			return rc;
		}
		p->csv_fd = rc;
		memcpy(p->buf, header, sizeof header - 1);
		p->len = sizeof header - 1;
	}
	p->sub.name = "watch";
	p->sub.kinds = 1u << MMS_EV_WATCH | (opt && opt->start ? 1u << MMS_EV_OP_LAUNCH : 0);
	p->sub.begin = wpass_begin;
	p->sub.event = wpass_event;
	p->sub.end = wpass_end;
	p->sub.drop = wpass_drop;
	p->sub.status = &(*out)->status;
	rc = mms__pass_add(pass, &p->sub);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

MMS__RUN_ONE(watch, mms_watch_options_t, mms_watch_t)
