/* SPDX-License-Identifier: MIT */
/* compare.c: msMemScope's compare: the operator (or kernel) launches of two
 * sides (two logs, two steps of one log, or two dump CSVs) with the net
 * bytes each launch allocated, aligned by name with a Myers diff, and
 * written as memory_compare_{timestamp}.csv. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compare-int.h"

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

/* The id of name s (n bytes), interned on first sight. Returns 0 and sets
 * *id, or -ENOMEM. */
int mms__compare_name_id(struct mms_compare *c, const char *s, size_t n, uint32_t *id)
{
	size_t j;

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

/* --- a log, or steps of it -------------------------------------------------- */

/* Where a pass puts the launches it finds: side, and the step (0: all). */
struct target {
	struct cmp_side *side;
	uint64_t step;
};

/* A kernel launch still collecting its memory on one thread: its entries
 * in the targets' lists, and how many operators ran around it. */
struct kopen {
	size_t ix[2];
	size_t depth;
	int open;
};

struct pass {
	struct mms_compare *c;
	struct target t[2];
	int nt;
	struct mms__map name_ix; /* pointer of a log string -> name id */
	struct kopen *k;         /* by thread number */
	size_t nk;
};

static int pass_name(struct pass *p, const char *s, uint32_t *id)
{
	uint64_t *v;
	int isnew, rc;

	if (!s)
		s = "";
	/* The log interns its strings: one lookup per distinct pointer. */
	v = mms__map_put(&p->name_ix, (uint64_t)(uintptr_t)s, &isnew);
	if (!v)
		return -ENOMEM;
	if (isnew) {
		rc = mms__compare_name_id(p->c, s, strlen(s), id);
		if (rc) {
			mms__map_del(&p->name_ix, (uint64_t)(uintptr_t)s, NULL);
			return rc;
		}
		*v = *id;
	}
	*id = (uint32_t)*v;
	return 0;
}

static int wanted(const struct target *t, uint64_t step)
{
	return !t->step || step == t->step || step == MMS__STEP_PENDING;
}

/* Adds a launch to the targets that want its step; ix[i] gets its index
 * in target i's list, or SIZE_MAX. */
static int pass_add(struct pass *p, const char *name, uint64_t step, int64_t bytes, size_t ix[2])
{
	struct cmp_launch *l;
	uint32_t id;
	int i, rc;

	rc = pass_name(p, name, &id);
	if (rc)
		return rc;
	for (i = 0; i < 2; i++) {
		ix[i] = SIZE_MAX;
		if (i >= p->nt || !wanted(&p->t[i], step))
			continue;
		l = mms__compare_side_push(p->t[i].side, id, step);
		if (!l)
			return -ENOMEM;
		l->bytes = bytes;
		ix[i] = p->t[i].side->n - 1;
	}
	return 0;
}

static struct kopen *kopen_of(struct pass *p, uint32_t thread)
{
	size_t n;
	void *k;

	if (thread >= p->nk) {
		n = p->nk ? p->nk : 8;
		while (n <= thread)
			n *= 2;
		k = realloc(p->k, n * sizeof(*p->k));
		if (!k)
			return NULL;
		p->k = k;
		memset(p->k + p->nk, 0, (n - p->nk) * sizeof(*p->k));
		p->nk = n;
	}
	return &p->k[thread];
}

static size_t ops_running(const struct mms__track *t, uint32_t thread)
{
	return thread < t->nthreads ? t->threads[thread].n : 0;
}

/* Follows one event at kernel level: a kernel launch collects the memory
 * its thread moves until the thread's next kernel launch or the end of
 * the operator it was launched in. */
static int pass_kernel(struct pass *p, const struct mms__track *t, const struct mms__state *st, const mms_event_t *ev)
{
	struct kopen *k = kopen_of(p, ev->thread);
	int64_t d;
	int i;

	if (!k)
		return -ENOMEM;
	if (ev->kind == MMS_EV_KERNEL_LAUNCH) {
		k->open = 1;
		k->depth = ops_running(t, ev->thread);
		return pass_add(p, ev->name, t->ev_step, 0, k->ix);
	}
	if (!k->open)
		return 0;
	if (ev->kind == MMS_EV_OP_LAUNCH && ev->sub == 1 && ops_running(t, ev->thread) < k->depth) {
		k->open = 0;
	} else if ((ev->kind == MMS_EV_MALLOC || ev->kind == MMS_EV_FREE) && st->last_blk_valid) {
		d = ev->kind == MMS_EV_MALLOC ? (int64_t)st->last_blk.size : -(int64_t)st->last_blk.size;
		for (i = 0; i < p->nt; i++)
			if (k->ix[i] != SIZE_MAX)
				p->t[i].side->v[k->ix[i]].bytes += d;
	}
	return 0;
}

/* Keeps the launches of each target's step, now that the steps are known:
 * those seen before the first step mark belong to step 1 when the log
 * counts STEP events, else to none. */
static void pass_finish(struct pass *p, const struct mms__track *t)
{
	uint64_t pending = t->step_kind == 1 ? 1 : MMS__STEP_NONE;
	struct cmp_side *s;
	size_t i, j;
	int k;

	for (k = 0; k < p->nt; k++) {
		s = p->t[k].side;
		for (i = j = 0; i < s->n; i++) {
			if (s->v[i].step == MMS__STEP_PENDING)
				s->v[i].step = pending;
			if (!p->t[k].step || s->v[i].step == p->t[k].step)
				s->v[j++] = s->v[i];
		}
		s->n = j;
		s->loaded = 1;
	}
}

/* One forward pass over log into the targets. *nsteps gets the log's
 * steps (when not NULL). */
static int log_pass(struct pass *p, mms_log_t *log, uint64_t *nsteps)
{
	mms_replay_options_t ro = { .forward_only = 1 };
	const struct mms__state *st;
	struct mms__track t;
	mms_replay_t *r;
	mms_event_t ev;
	size_t ix[2];
	int rc, i, kernel = p->c->level == MMS_COMPARE_KERNEL;

	for (i = 0; i < p->nt; i++)
		if (p->t[i].side->loaded)
			return MMS_EUSAGE;
	rc = mms_replay_open_ex(log, &ro, &r);
	if (rc)
		return rc;
	st = mms__replay_state(r);
	mms__track_init(&t, MMS__TRACK_LAUNCHES | MMS__TRACK_STEPS);
	mms__track_start(&t, st); /* a fork child's starts with its inherited heap */
	mms__map_init(&p->name_ix);
	while ((rc = mms_replay_next(r, &ev)) == 1) {
		rc = mms__track_event(&t, st, &ev);
		if (rc)
			break;
		if (kernel) {
			if (ev.kind == MMS_EV_KERNEL_LAUNCH || ev.kind == MMS_EV_MALLOC || ev.kind == MMS_EV_FREE ||
			    ev.kind == MMS_EV_OP_LAUNCH)
				rc = pass_kernel(p, &t, st, &ev);
		} else if (t.has_ended) {
			/* At op level a launch counts at its end, as
			 * msMemScope orders them. */
			rc = pass_add(p, t.ended.name, t.ended.step,
				      (int64_t)t.ended.m.bytes_allocated - (int64_t)t.ended.m.bytes_freed, ix);
		}
		if (rc)
			break;
	}
	if (!rc) {
		mms__track_finish(&t, st);
		if (nsteps)
			*nsteps = t.nsteps;
		for (i = 0; i < p->nt; i++)
			if (p->t[i].step > t.nsteps)
				rc = MMS_EUSAGE;
		if (!rc)
			pass_finish(p, &t);
	}
	if (rc)
		for (i = 0; i < p->nt; i++)
			p->t[i].side->n = 0;
	mms__track_free(&t);
	mms__map_free(&p->name_ix);
	free(p->k);
	mms_replay_close(r);
	return rc;
}

MMS__EXPORT int mms_compare_add_log(mms_compare_t *c, int side, mms_log_t *log)
{
	struct pass p = { .c = c, .nt = 1 };

	if (!c || !log || (side != 0 && side != 1))
		return MMS_EUSAGE;
	p.t[0].side = &c->side[side];
	return log_pass(&p, log, NULL);
}

MMS__EXPORT int mms_compare_add_steps(mms_compare_t *c, mms_log_t *log, uint64_t base_step, uint64_t compare_step,
				      uint64_t *nsteps)
{
	struct pass p = { .c = c, .nt = 2 };

	if (!c || !log || !base_step || !compare_step)
		return MMS_EUSAGE;
	p.t[0].side = &c->side[0];
	p.t[0].step = base_step;
	p.t[1].side = &c->side[1];
	p.t[1].step = compare_step;
	return log_pass(&p, log, nsteps);
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
			c->stats.only[0]++;
			i++;
		} else if (j < b->n && inb[j] == SIZE_MAX) {
			row->compare_launch = j + 1;
			row->compare = b->v[j].bytes;
			row->name = c->text + c->off[b->v[j].name];
			c->stats.only[1]++;
			j++;
		} else {
			/* Both paired, so with each other: pairs never cross. */
			row->base_launch = i + 1;
			row->compare_launch = j + 1;
			row->base = a->v[i].bytes;
			row->compare = b->v[j].bytes;
			row->name = c->text + c->off[a->v[i].name];
			c->stats.paired++;
			i++;
			j++;
		}
		row->diff = row->compare - row->base;
	}
	c->nrows = n;
	c->stats.launches[0] = a->n;
	c->stats.launches[1] = b->n;
	for (i = 0; i < a->n; i++)
		c->stats.bytes[0] += a->v[i].bytes;
	for (j = 0; j < b->n; j++)
		c->stats.bytes[1] += b->v[j].bytes;
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

MMS__EXPORT int mms_compare_write_csv(const mms_compare_t *c, const char *path, int overwrite)
{
	const char *event;
	struct mms__xbuf out = { 0 };
	struct mms__outfile f;
	size_t i, n;
	int fd, rc = 0;

	if (!c || !path || !c->rows)
		return MMS_EUSAGE;
	event = c->level == MMS_COMPARE_KERNEL ? "KERNEL_LAUNCH," : "OP_LAUNCH,";
	fd = mms__outfile_create(&f, path, overwrite);
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
		rc |= mms__xbuf_puts(&out, ",host,");
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
