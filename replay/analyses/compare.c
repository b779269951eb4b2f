/* SPDX-License-Identifier: MIT */
/* compare.c: msMemScope's compare: the operator (or kernel) launches of two
 * sides (two logs, two steps of one log, or two dump CSVs) with the net
 * bytes each launch allocated, aligned by name with a Myers diff, and
 * written as memory_compare_{timestamp}.csv; and the launches analysis
 * that reads a side from a log in a pass. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "msmemscope/compare.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/output.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "base-int.h"
#include "compare-int.h"
#include "export-int.h"
#include "map-int.h"
#include "myers-int.h"
#include "outfile-int.h"
#include "pass-int.h"
#include "state-int.h"
#include "table-int.h"
#include "track-int.h"

/* Edits one search of the alignment explores before it settles for a good
 * split instead of the best one (see mms__myers()): the alignment is
 * optimal when the sides differ by fewer launches than about twice this. */
#define COMPARE_MAX_COST 2048

/* --- names ---------------------------------------------------------------- */

static uint64_t name_hash(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ull;

	while (n--)
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

static int names_rehash(struct mms_compare *c, size_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	size_t i, j;

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < c->nnames; i++) {
		const char *s = c->text + c->off[i];

		for (j = name_hash(s, strlen(s)) & (nslots - 1); slots[j]; j = (j + 1) & (nslots - 1))
			;
		slots[j] = (uint32_t)i + 1;
	}
	free(c->slots);
	c->slots = slots;
	c->nslots = nslots;
	return 0;
}

/* The id of name s (n bytes, up to a NUL byte: a name is a C string),
 * interned on first sight. Returns 0 and sets *id, or -ENOMEM. */
int mms__compare_name_id(struct mms_compare *c, const char *s, size_t n, uint32_t *id)
{
	size_t j;

	/* Hashed and compared as the same bytes: a CSV field with a NUL in it
	 * hashed past it made the same name two ids, and one file read on
	 * both sides of a compare did not pair with itself (fuzz-dumpcsv). */
	n = strnlen(s, n);
	if (c->nnames >= UINT32_MAX - 1)
		return -ENOMEM;
	if (2 * (c->nnames + 1) > c->nslots && names_rehash(c, c->nslots ? 2 * c->nslots : 64))
		return -ENOMEM;
	for (j = name_hash(s, n) & (c->nslots - 1); c->slots[j]; j = (j + 1) & (c->nslots - 1)) {
		const char *t = c->text + c->off[c->slots[j] - 1];

		if (!strncmp(t, s, n) && !t[n]) {
			*id = c->slots[j] - 1;
			return 0;
		}
	}
	if (mms__grow(&c->off, &c->off_cap, c->nnames, sizeof(*c->off)))
		return -ENOMEM;
	while (c->text_cap - c->text_len < n + 1) {
		size_t cap = c->text_cap ? 2 * c->text_cap : 4096;
		char *p = realloc(c->text, cap);

		if (!p)
			return -ENOMEM;
		c->text = p;
		c->text_cap = cap;
	}
	memcpy(c->text + c->text_len, s, n);
	c->text[c->text_len + n] = '\0';
	c->off[c->nnames] = c->text_len;
	c->text_len += n + 1;
	*id = (uint32_t)c->nnames;
	c->slots[j] = (uint32_t)++c->nnames;
	return 0;
}

struct cmp_launch *mms__compare_side_push(struct cmp_side *s, uint32_t name, uint64_t step)
{
	struct cmp_launch *l;

	if (mms__grow(&s->v, &s->cap, s->n, sizeof(*s->v)))
		return NULL;
	l = &s->v[s->n++];
	l->name = name;
	l->bytes = 0;
	l->step = step;
	l->device = -1;
	return l;
}

/* --- open and close ------------------------------------------------------- */

MMS__EXPORT int mms_compare_open(int level, mms_compare_t **out)
{
	struct mms_compare *c;

	if (!out || (level != MMS_COMPARE_OP && level != MMS_COMPARE_KERNEL))
		return MMS_EUSAGE;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->level = level;
	*out = c;
	return 0;
}

MMS__EXPORT void mms_compare_close(mms_compare_t *c)
{
	if (!c)
		return;
	free(c->side[0].v);
	free(c->side[1].v);
	free(c->text);
	free(c->off);
	free(c->slots);
	free(c->rows);
	free(c);
}

MMS__EXPORT size_t mms_compare_launches(const mms_compare_t *c, int side)
{
	return c && (side == 0 || side == 1) ? c->side[side].n : 0;
}

/* --- a log, or a step of it: the launches analysis ---------------------------------- */

/* A kernel launch still collecting its memory on one thread: its entry in
 * the list, and how many operators ran around it. */
struct kopen {
	size_t ix;
	size_t depth;
	int open;
};

/* The result, with what it keeps besides. */
struct launches_res {
	mms_launches_t pub;
	size_t cap;
	uint64_t *steps; /* the step each launch began in, while the pass runs */
	size_t steps_cap;
};

struct lpass {
	struct mms__sub sub;
	mms_launches_options_t o;
	struct launches_res *res;
	struct kopen *k; /* by thread number */
	size_t nk;
	int64_t outside_pending; /* outside every launch, before the first step mark */
};

static int wanted(const struct lpass *p, uint64_t step)
{
	return !p->o.step || step == p->o.step || step == MMS__STEP_PENDING;
}

/* Appends a launch begun in step, when the analysis wants that step.
 * Returns its index, SIZE_MAX when not wanted, or sets *rc. */
static size_t launch_push(struct lpass *p, uint64_t step, int *rc)
{
	struct launches_res *r = p->res;
	mms_launch_t *l;

	if (!wanted(p, step))
		return SIZE_MAX;
	if (mms__grow(&r->pub.launches, &r->cap, r->pub.n, sizeof(*r->pub.launches)) ||
	    mms__grow(&r->steps, &r->steps_cap, r->pub.n, sizeof(*r->steps))) {
		*rc = -ENOMEM;
		return SIZE_MAX;
	}
	l = &r->pub.launches[r->pub.n];
	memset(l, 0, sizeof(*l));
	l->end_event = UINT64_MAX;
	l->device = -1;
	r->steps[r->pub.n] = step;
	return r->pub.n++;
}

/* A memory event outside every launch, of step (the event's): counted
 * when the analysis wants that step; one before the first step mark waits
 * for the end, which knows whether it was in step 1. */
static void outside_add(struct lpass *p, uint64_t step, const struct mms__state *st, const mms_event_t *ev)
{
	uint64_t size = st->last_blk->size;
	int64_t d = size > INT64_MAX ? INT64_MAX : (int64_t)size;

	if (ev->kind == MMS_EV_FREE)
		d = -d;
	if (!p->o.step || step == p->o.step)
		p->res->pub.outside_bytes = mms__add_sat(p->res->pub.outside_bytes, d);
	else if (step == MMS__STEP_PENDING)
		p->outside_pending = mms__add_sat(p->outside_pending, d);
}

static struct kopen *kopen_of(struct lpass *p, uint32_t thread)
{
	if (mms__table_fit(&p->k, &p->nk, thread, sizeof(*p->k)))
		return NULL;
	return &p->k[thread];
}

static size_t ops_running(const struct mms__track *t, uint32_t thread)
{
	return thread < t->nthreads ? t->threads[thread].n : 0;
}

/* Follows one event at kernel level: a kernel launch collects the memory
 * its thread moves until the thread's next kernel launch or the end of
 * the operator it was launched in. */
static int kernel_event(struct lpass *p, const struct mms__track *t, const struct mms__state *st,
			const mms_event_t *ev)
{
	struct kopen *k = kopen_of(p, ev->thread);
	mms_launch_t *l;
	int rc = 0;

	if (!k)
		return -ENOMEM;
	if (ev->kind == MMS_EV_KERNEL_LAUNCH) {
		k->open = 1;
		k->depth = ops_running(t, ev->thread);
		k->ix = launch_push(p, t->ev_step, &rc);
		if (k->ix != SIZE_MAX) {
			l = &p->res->pub.launches[k->ix];
			l->launch = st->kernel_launches;
			l->name = ev->name;
			l->thread = ev->thread;
			l->begin_event = ev->id;
			l->device = ev->mem == MMS_MEM_DEVICE ? ev->device : -1;
		}
		return rc;
	}
	if (!k->open) {
		if ((ev->kind == MMS_EV_MALLOC || ev->kind == MMS_EV_FREE) && st->last_blk_valid)
			outside_add(p, t->ev_step, st, ev);
		return 0;
	}
	if (ev->kind == MMS_EV_OP_LAUNCH && ev->sub == 1 && ops_running(t, ev->thread) < k->depth) {
		k->open = 0;
	} else if ((ev->kind == MMS_EV_MALLOC || ev->kind == MMS_EV_FREE) && st->last_blk_valid && k->ix != SIZE_MAX) {
		l = &p->res->pub.launches[k->ix];
		if (ev->kind == MMS_EV_MALLOC) {
			l->allocs++;
			l->bytes_allocated += st->last_blk->size;
		} else {
			l->frees++;
			l->bytes_freed += st->last_blk->size;
		}
		l->delta_bytes = (int64_t)(l->bytes_allocated - l->bytes_freed);
	}
	return 0;
}

static int lpass_event(struct mms__sub *sub, struct mms_pass *pass, const mms_event_t *ev)
{
	struct lpass *p = (struct lpass *)sub;
	const struct mms__track *t = mms__pass_track(pass);
	const struct mms__tlaunch *e = &t->ended;
	mms_launch_t *l;
	size_t i;
	int rc = 0;

	if (p->o.level == MMS_COMPARE_KERNEL)
		return kernel_event(p, t, mms__pass_state(pass), ev);
	if (ev->kind == MMS_EV_MALLOC || ev->kind == MMS_EV_FREE) {
		const struct mms__state *st = mms__pass_state(pass);

		if (st->last_blk_valid && !ops_running(t, ev->thread))
			outside_add(p, t->ev_step, st, ev);
		return 0;
	}
	/* At op level a launch counts at its end, as msMemScope orders them. */
	if (!t->has_ended)
		return 0;
	i = launch_push(p, e->step, &rc);
	if (i == SIZE_MAX)
		return rc;
	l = &p->res->pub.launches[i];
	l->launch = e->launch;
	l->name = e->name;
	l->thread = e->thread;
	l->begin_event = e->begin_event;
	l->end_event = e->end_event;
	l->allocs = e->m.allocs;
	l->frees = e->m.frees;
	l->bytes_allocated = e->m.bytes_allocated;
	l->bytes_freed = e->m.bytes_freed;
	l->delta_bytes = (int64_t)(e->m.bytes_allocated - e->m.bytes_freed);
	return 0;
}

/* Keeps the launches of the step asked for, now that the steps are known:
 * those seen before the first step mark belong to step 1 when the log
 * counts STEP events, else to none. */
static int lpass_end(struct mms__sub *sub, struct mms_pass *pass)
{
	struct lpass *p = (struct lpass *)sub;
	const struct mms__track *t = mms__pass_track(pass);
	uint64_t pending = t->step_kind == 1 ? 1 : MMS__STEP_NONE;
	mms_launches_t *r = &p->res->pub;
	uint64_t *steps = p->res->steps;
	size_t i, j;

	r->steps = t->nsteps;
	if (p->o.step > t->nsteps) {
		r->n = 0;
		return MMS_EUSAGE;
	}
	if (p->o.step && p->o.step == pending)
		r->outside_bytes = mms__add_sat(r->outside_bytes, p->outside_pending);
	if (p->o.step)
		r->recorded = mms__collect_recorded(t->steps[p->o.step - 1].collect);
	for (i = j = 0; i < r->n; i++) {
		if (steps[i] == MMS__STEP_PENDING)
			steps[i] = pending;
		if (!p->o.step || steps[i] == p->o.step)
			r->launches[j++] = r->launches[i];
	}
	r->n = j;
	return 0;
}

static void lpass_drop(struct mms__sub *sub)
{
	struct lpass *p = (struct lpass *)sub;

	free(p->k);
	free(p);
}

MMS__EXPORT void mms_launches_free(mms_launches_t *l)
{
	struct launches_res *r = (struct launches_res *)l;

	if (!l)
		return;
	free(l->launches);
	free(r->steps);
	free(r);
}

MMS__EXPORT int mms_launches_add(mms_pass_t *pass, const mms_launches_options_t *opt, mms_launches_t **out)
{
	struct launches_res *r;
	struct lpass *p;
	int rc;

	if (!out)
		return MMS_EUSAGE;
	*out = NULL;
	if (!pass || (opt && opt->level != MMS_COMPARE_OP && opt->level != MMS_COMPARE_KERNEL))
		return MMS_EUSAGE;
	r = calloc(1, sizeof(*r));
	p = calloc(1, sizeof(*p));
	if (!r || !p) {
		free(r);
		free(p);
		return -ENOMEM;
	}
	if (opt)
		p->o = *opt;
	p->res = r;
	p->sub.name = "launches";
	p->sub.kinds = 1u << MMS_EV_MALLOC | 1u << MMS_EV_FREE | 1u << MMS_EV_OP_LAUNCH |
		       (p->o.level == MMS_COMPARE_KERNEL ? 1u << MMS_EV_KERNEL_LAUNCH : 0);
	p->sub.track = MMS__TRACK_LAUNCHES | MMS__TRACK_STEPS;
	p->sub.event = lpass_event;
	p->sub.end = lpass_end;
	p->sub.drop = lpass_drop;
	p->sub.status = &r->pub.status;
	*out = &r->pub;
	rc = mms__pass_add(pass, &p->sub);
	if (rc) {
		mms_launches_free(*out);
		*out = NULL;
	}
	return rc;
}

MMS__RUN_ONE(launches, mms_launches_options_t, mms_launches_t)

MMS__EXPORT int mms_compare_set(mms_compare_t *c, int side, const mms_launches_t *l)
{
	struct mms__map ix; /* pointer of a log string -> name id */
	struct cmp_side *s;
	struct cmp_launch *cl;
	uint64_t *v;
	uint32_t id;
	size_t i;
	int isnew, rc = 0;

	if (!c || !l || (side != 0 && side != 1) || c->side[side].loaded || l->status)
		return MMS_EUSAGE;
	s = &c->side[side];
	mms__map_init(&ix);
	for (i = 0; !rc && i < l->n; i++) {
		const char *name = l->launches[i].name ? l->launches[i].name : "";

		/* The log interns its strings: one lookup per distinct pointer. */
		v = mms__map_put(&ix, (uint64_t)(uintptr_t)name, &isnew);
		if (!v) {
			rc = -ENOMEM;
			break;
		}
		if (isnew) {
			rc = mms__compare_name_id(c, name, strlen(name), &id);
			*v = id;
		}
		cl = rc ? NULL : mms__compare_side_push(s, (uint32_t)*v, 0);
		if (!rc && !cl)
			rc = -ENOMEM;
		if (cl) {
			cl->bytes = l->launches[i].delta_bytes;
			cl->device = l->launches[i].device;
		}
	}
	mms__map_free(&ix);
	if (rc) {
		s->n = 0;
	} else {
		s->outside = l->outside_bytes;
		s->loaded = 1;
	}
	return rc;
}

/* --- alignment ---------------------------------------------------------------- */

MMS__EXPORT int mms_compare_align(mms_compare_t *c, const mms_compare_row_t **rows, size_t *nrows,
				  mms_compare_stats_t *stats)
{
	const struct cmp_side *a, *b;
	uint32_t *sa = NULL, *sb = NULL;
	size_t *ia = NULL, *ib = NULL, *match = NULL, *ina = NULL, *inb = NULL, na = 0, nb = 0, i, j, k, n;
	uint8_t *seen = NULL;
	mms_compare_row_t *row;
	int rc = -ENOMEM;

	if (!c || !rows || !nrows || !c->side[0].loaded || !c->side[1].loaded)
		return MMS_EUSAGE;
	a = &c->side[0];
	b = &c->side[1];
	free(c->rows);
	c->rows = NULL;
	c->nrows = 0;
	memset(&c->stats, 0, sizeof(c->stats));
	/* Launches whose name the other side never has cannot pair: the
	 * diff runs over the others only, which is as exact and much faster
	 * when the sides have little in common. */
	seen = calloc(c->nnames ? c->nnames : 1, 1);
	sa = malloc((a->n ? a->n : 1) * sizeof(*sa));
	ia = malloc((a->n ? a->n : 1) * sizeof(*ia));
	match = malloc((a->n ? a->n : 1) * sizeof(*match));
	ina = malloc((a->n ? a->n : 1) * sizeof(*ina));
	sb = malloc((b->n ? b->n : 1) * sizeof(*sb));
	ib = malloc((b->n ? b->n : 1) * sizeof(*ib));
	inb = malloc((b->n ? b->n : 1) * sizeof(*inb));
	c->rows = malloc((a->n + b->n ? a->n + b->n : 1) * sizeof(*c->rows));
	if (!seen || !sa || !ia || !match || !ina || !sb || !ib || !inb || !c->rows)
		goto out;
	for (i = 0; i < a->n; i++)
		seen[a->v[i].name] |= 1;
	for (i = 0; i < b->n; i++)
		seen[b->v[i].name] |= 2;
	for (i = 0; i < a->n; i++)
		if (seen[a->v[i].name] == 3) {
			ia[na] = i;
			sa[na++] = a->v[i].name;
		}
	for (i = 0; i < b->n; i++)
		if (seen[b->v[i].name] == 3) {
			ib[nb] = i;
			sb[nb++] = b->v[i].name;
		}
	rc = mms__myers(sa, na, sb, nb, match, COMPARE_MAX_COST);
	if (rc)
		goto out;
	/* ina[i], inb[j]: the launch of the other side paired with it, or
	 * SIZE_MAX. */
	for (i = 0; i < a->n; i++)
		ina[i] = SIZE_MAX;
	for (j = 0; j < b->n; j++)
		inb[j] = SIZE_MAX;
	for (k = 0; k < na; k++)
		if (match[k] != SIZE_MAX) {
			ina[ia[k]] = ib[match[k]];
			inb[ib[match[k]]] = ia[k];
		}
	/* Rows in order: at each gap, base's unpaired launches first. */
	n = 0;
	for (i = j = 0; i < a->n || j < b->n; n++) {
		row = &c->rows[n];
		memset(row, 0, sizeof(*row));
		if (i < a->n && ina[i] == SIZE_MAX) {
			row->base_launch = i + 1;
			row->base = a->v[i].bytes;
			row->name = c->text + c->off[a->v[i].name];
			row->device = a->v[i].device;
			c->stats.only[0]++;
			i++;
		} else if (j < b->n && inb[j] == SIZE_MAX) {
			row->compare_launch = j + 1;
			row->compare = b->v[j].bytes;
			row->name = c->text + c->off[b->v[j].name];
			row->device = b->v[j].device;
			c->stats.only[1]++;
			j++;
		} else {
			/* Both paired, so with each other: pairs never cross. */
			row->base_launch = i + 1;
			row->compare_launch = j + 1;
			row->base = a->v[i].bytes;
			row->compare = b->v[j].bytes;
			row->name = c->text + c->off[a->v[i].name];
			row->device = a->v[i].device >= 0 ? a->v[i].device : b->v[j].device;
			c->stats.paired++;
			i++;
			j++;
		}
		row->diff = mms__sub_sat(row->compare, row->base);
	}
	c->nrows = n;
	c->stats.launches[0] = a->n;
	c->stats.launches[1] = b->n;
	c->stats.outside[0] = a->outside;
	c->stats.outside[1] = b->outside;
	for (i = 0; i < a->n; i++)
		c->stats.bytes[0] = mms__add_sat(c->stats.bytes[0], a->v[i].bytes);
	for (j = 0; j < b->n; j++)
		c->stats.bytes[1] = mms__add_sat(c->stats.bytes[1], b->v[j].bytes);
	*rows = c->rows;
	*nrows = n;
	if (stats)
		*stats = c->stats;
	rc = 0;
out:
	free(seen);
	free(sa);
	free(ia);
	free(match);
	free(ina);
	free(sb);
	free(ib);
	free(inb);
	return rc;
}

/* --- the CSV ------------------------------------------------------------------ */

static const char compare_header[] = ",,,Base,Compare\n"
				     "Event,Name,Device Id,Allocated Memory(byte),Allocated Memory(byte),"
				     "Diff Memory(byte)\n";

static int put_bytes(struct mms__xbuf *b, int present, int64_t v)
{
	if (!present)
		return mms__xbuf_put(b, "N/A", 3);
	if (mms__xbuf_reserve(b, 24))
		return -ENOMEM;
	b->len += (size_t)snprintf(b->p + b->len, 24, "%" PRId64, v);
	return 0;
}

MMS__EXPORT int mms_compare_write_csv(const mms_compare_t *c, const char *path, const mms_output_options_t *opt)
{
	const char *event;
	struct mms__xbuf out = { 0 };
	struct mms__outfile f;
	size_t i, n;
	int fd, rc = 0;

	if (!c || !path || !c->rows)
		return MMS_EUSAGE;
	event = c->level == MMS_COMPARE_KERNEL ? "KERNEL_LAUNCH," : "OP_LAUNCH,";
	fd = mms__outfile_create(&f, path, mms__out_flags(opt));
	if (fd < 0)
		return fd;
	rc |= mms__xbuf_put(&out, compare_header, sizeof(compare_header) - 1);
	for (i = 0; !rc && i < c->nrows; i++) {
		const mms_compare_row_t *row = &c->rows[i];

		n = strlen(row->name);
		rc |= mms__xbuf_puts(&out, event);
		rc |= mms__xbuf_reserve(&out, 2 * n + 2);
		if (rc)
			break;
		out.len = (size_t)(mms__csv_field(out.p + out.len, row->name, n) - out.p);
		if (row->device >= 0) { /* a CUDA kernel's device */
			rc |= mms__xbuf_put(&out, ",", 1);
			rc |= put_bytes(&out, 1, row->device);
			rc |= mms__xbuf_put(&out, ",", 1);
		} else {
			rc |= mms__xbuf_puts(&out, ",host,");
		}
		rc |= put_bytes(&out, row->base_launch != 0, row->base);
		rc |= mms__xbuf_put(&out, ",", 1);
		rc |= put_bytes(&out, row->compare_launch != 0, row->compare);
		rc |= mms__xbuf_put(&out, ",", 1);
		rc |= put_bytes(&out, 1, row->diff);
		rc |= mms__xbuf_put(&out, "\n", 1);
	}
	if (rc)
		rc = -ENOMEM;
	if (!rc)
		rc = mms__write_all(fd, out.p, out.len);
	mms__xbuf_free(&out);
	if (close(fd) && !rc)
		rc = -errno;
	if (rc) {
		mms__outfile_abort(&f);
		return rc;
	}
	return mms__outfile_commit(&f);
}

MMS__EXPORT int mms_compare_name(char *buf, size_t len)
{
	char stamp[32];
	struct tm tm;
	time_t t = time(NULL);

	if (!buf && len)
		return MMS_EUSAGE;
	if (!localtime_r(&t, &tm) || !strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm))
		snprintf(stamp, sizeof(stamp), "%llu", (unsigned long long)t);
	return snprintf(buf, len, "memory_compare_%s.csv", stamp);
}
