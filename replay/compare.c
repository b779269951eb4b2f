/* SPDX-License-Identifier: MIT */
/* compare.c: msMemScope's compare: the operator (or kernel) launches of two
 * sides (two logs, two steps of one log, or two dump CSVs) with the net
 * bytes each launch allocated, aligned by name with a Myers diff, and
 * written as memory_compare_{timestamp}.csv. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "export-int.h"

/* Edits one search of the alignment explores before it settles for a good
 * split instead of the best one (see mms__myers()): the alignment is
 * optimal when the sides differ by fewer launches than about twice this. */
#define COMPARE_MAX_COST 2048

struct cmp_launch {
	uint32_t name;   /* interned name id */
	int64_t bytes;   /* net bytes allocated during the launch */
	uint64_t step;   /* while a log is read: the step it began in */
};

struct cmp_side {
	struct cmp_launch *v;
	size_t n, cap;
	int loaded;
};

struct mms_compare {
	int level;
	struct cmp_side side[2];
	/* Names, interned: id -> offset of a NUL-terminated copy in text. */
	char *text;
	size_t text_len, text_cap;
	size_t *off;
	size_t nnames, off_cap;
	uint32_t *slots;  /* open addressing: id + 1, 0 = empty */
	size_t nslots;
	mms_compare_row_t *rows;
	size_t nrows;
	mms_compare_stats_t stats;
};

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
static int name_id(struct mms_compare *c, const char *s, size_t n, uint32_t *id)
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

static struct cmp_launch *side_push(struct cmp_side *s, uint32_t name, uint64_t step)
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
		rc = name_id(p->c, s, strlen(s), id);
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
		l = side_push(p->t[i].side, id, step);
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

/* --- dump CSVs ---------------------------------------------------------------- */

/* A reader of RFC 4180 records: fields may be quoted, and quoted fields
 * may hold commas, doubled quotes and line breaks. */
struct csvr {
	int fd;
	char buf[1 << 16];
	size_t pos, len;
	int eof;
	uint64_t line;           /* lines read so far */
	uint64_t rec_line;       /* the line where the current record begins */
	struct mms__xbuf text;   /* the current record's fields, unquoted */
	size_t *fo;              /* field offsets in text, nf + 1 of them */
	size_t nf, fcap;
};

/* Makes bytes available at r->pos: returns 1, 0 at the end of the file,
 * or -errno. */
static int csvr_fill(struct csvr *r)
{
	ssize_t n;

	if (r->pos < r->len)
		return 1;
	if (r->eof)
		return 0;
	do
		n = read(r->fd, r->buf, sizeof(r->buf));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	r->pos = 0;
	r->len = (size_t)n;
	if (!n)
		r->eof = 1;
	return n > 0;
}

/* Appends the run of bytes at r->pos that are none of stop's (up to the
 * buffer's end) to the record text, counting line breaks. Returns 0 or
 * -ENOMEM. */
static int csvr_run(struct csvr *r, int quoted)
{
	const char *p = r->buf + r->pos, *q = p, *end = r->buf + r->len;

	if (quoted) {
		for (; q < end && *q != '"'; q++)
			if (*q == '\n')
				r->line++;
	} else {
		while (q < end && *q != ',' && *q != '\n' && *q != '\r' && *q != '"')
			q++;
	}
	r->pos += (size_t)(q - p);
	return q > p ? mms__xbuf_put(&r->text, p, (size_t)(q - p)) : 0;
}

static int csvr_field_end(struct csvr *r)
{
	if (mms__grow(&r->fo, &r->fcap, r->nf + 1, sizeof(*r->fo)))
		return -ENOMEM;
	r->fo[++r->nf] = r->text.len;
	return 0;
}

/* Reads the next record: returns 1, 0 at the end of the file, or a
 * negative code with *why set for a malformed record. */
static int csvr_next(struct csvr *r, const char **why)
{
	int ch, rc, quoted = 0, after_quote = 0, any = 0;

	r->text.len = 0;
	r->nf = 0;
	r->rec_line = r->line + 1;
	if (mms__grow(&r->fo, &r->fcap, 0, sizeof(*r->fo)))
		return -ENOMEM;
	r->fo[0] = 0;
	for (;;) {
		rc = csvr_fill(r);
		if (rc < 0)
			return rc;
		if (!rc) {
			if (quoted) {
				*why = "the file ends inside a quoted field";
				return MMS_ECORRUPT;
			}
			if (!any)
				return 0;
			r->line++;
			return csvr_field_end(r) ? -ENOMEM : 1;
		}
		any = 1;
		/* Plain bytes go in runs; only the separators and quotes
		 * are looked at one by one. */
		if (!after_quote) {
			if (csvr_run(r, quoted))
				return -ENOMEM;
			if (r->pos == r->len)
				continue;
		}
		ch = (unsigned char)r->buf[r->pos++];
		if (quoted) {
			/* The closing quote, or the first of a doubled one. */
			quoted = 0;
			after_quote = 1;
			continue;
		}
		if (ch == '"') {
			/* A doubled quote inside a quoted field, or a field's
			 * opening quote. */
			if (after_quote || r->text.len == r->fo[r->nf]) {
				if (after_quote && mms__xbuf_put(&r->text, "\"", 1))
					return -ENOMEM;
				quoted = 1;
				after_quote = 0;
				continue;
			}
			*why = "a quote inside a field that does not begin with one";
			return MMS_ECORRUPT;
		}
		if (after_quote && ch != ',' && ch != '\n' && ch != '\r') {
			*why = "text after the closing quote of a field";
			return MMS_ECORRUPT;
		}
		after_quote = 0;
		if (ch == ',') {
			if (csvr_field_end(r))
				return -ENOMEM;
		} else if (ch == '\n') {
			r->line++;
			return csvr_field_end(r) ? -ENOMEM : 1;
		}
		/* A '\r' is dropped: CRLF line ends. */
	}
}

static const char *csvr_field(const struct csvr *r, size_t i, size_t *n)
{
	*n = r->fo[i + 1] - r->fo[i];
	/* A record of empty fields has no text at all. */
	return r->text.p ? r->text.p + r->fo[i] : "";
}

static int field_is(const struct csvr *r, size_t i, const char *s)
{
	size_t n;
	const char *f = csvr_field(r, i, &n);

	return n == strlen(s) && !memcmp(f, s, n);
}

static int field_ends(const struct csvr *r, size_t i, const char *s)
{
	size_t n, k = strlen(s);
	const char *f = csvr_field(r, i, &n);

	return n >= k && !memcmp(f + n - k, s, k);
}

/* Parses a number (decimal, or hexadecimal after 0x) of n bytes at s. */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	unsigned d;
	size_t i = 0;

	*out = 0;
	if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (i = 2; i < n; i++) {
			if (s[i] >= '0' && s[i] <= '9')
				d = (unsigned)(s[i] - '0');
			else if ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'f')
				d = (unsigned)((s[i] | 0x20) - 'a' + 10);
			else
				return -1;
			if (v >> 60)
				return -1;
			v = v << 4 | d;
		}
	} else {
		if (!n || n > 20)
			return -1;
		for (; i < n; i++) {
			d = (unsigned)(s[i] - '0');
			if (d > 9 || __builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, d, &v))
				return -1;
		}
	}
	*out = v;
	return 0;
}

/* The size:N entry of an Attr field ("{allocation_id:1,addr:0x..,size:N,...}").
 * Returns 1 and sets *size, 0 when it has none, -1 when it is malformed. */
static int attr_size(const char *s, size_t n, uint64_t *size)
{
	size_t i, j;

	for (i = 0; i + 5 <= n; i++) {
		if (memcmp(s + i, "size:", 5) || (i && s[i - 1] != '{' && s[i - 1] != ','))
			continue;
		for (j = i + 5; j < n && s[j] != ',' && s[j] != '}'; j++)
			;
		return parse_u64(s + i + 5, j - i - 5, size) ? -1 : 1;
	}
	return 0;
}

/* One thread of a dump: its open operator launches and kernel. */
struct cthread {
	struct copen {
		uint32_t name;
		int64_t bytes;
	} *ops;
	size_t n, cap;
	size_t kix;   /* the open kernel's index in the side, SIZE_MAX: none */
	size_t kdepth;
};

struct cdump {
	struct mms_compare *c;
	struct cmp_side *side;
	struct mms__map tix;     /* Process Id << 32 ^ Thread Id -> index in th */
	struct cthread *th;
	size_t nth, thcap;
	struct mms__map live;    /* Ptr -> size, for FREE rows without a size */
	/* Column numbers. */
	size_t c_id, c_event, c_type, c_name, c_pid, c_tid, c_ptr, c_attr, ncols;
	uint64_t last_id;
	int any;
	int kind_set;            /* the Event Type of the last memory row, interned */
	size_t kind_off, kind_len; /* (an offset: the names' text moves as it grows) */
	uint64_t kind_key;       /* its name id << 48 */
};

static struct cthread *cdump_thread(struct cdump *d, const struct csvr *r)
{
	uint64_t pid = 0, tid = 0, *v;
	const char *f;
	size_t n;
	int isnew;

	f = csvr_field(r, d->c_tid, &n);
	parse_u64(f, n, &tid);
	if (d->c_pid != SIZE_MAX) {
		f = csvr_field(r, d->c_pid, &n);
		parse_u64(f, n, &pid);
	}
	v = mms__map_put(&d->tix, pid << 32 ^ tid, &isnew);
	if (!v)
		return NULL;
	if (isnew) {
		if (mms__grow(&d->th, &d->thcap, d->nth, sizeof(*d->th))) {
			mms__map_del(&d->tix, pid << 32 ^ tid, NULL);
			return NULL;
		}
		memset(&d->th[d->nth], 0, sizeof(*d->th));
		d->th[d->nth].kix = SIZE_MAX;
		*v = d->nth++;
	}
	return &d->th[*v];
}

static int cdump_header(struct cdump *d, const struct csvr *r, const char **why)
{
	static const struct {
		const char *name;
		size_t off;
		int required;
	} cols[] = {
		{ "ID", offsetof(struct cdump, c_id), 1 },
		{ "Event", offsetof(struct cdump, c_event), 1 },
		{ "Event Type", offsetof(struct cdump, c_type), 1 },
		{ "Name", offsetof(struct cdump, c_name), 1 },
		{ "Process Id", offsetof(struct cdump, c_pid), 0 },
		{ "Thread Id", offsetof(struct cdump, c_tid), 1 },
		{ "Ptr", offsetof(struct cdump, c_ptr), 1 },
		{ "Attr", offsetof(struct cdump, c_attr), 1 },
	};
	static char msg[96];
	size_t i, k, *col;

	for (k = 0; k < sizeof(cols) / sizeof(cols[0]); k++) {
		col = (size_t *)(void *)((char *)d + cols[k].off);
		*col = SIZE_MAX;
		for (i = 0; i < r->nf; i++)
			if (field_is(r, i, cols[k].name))
				*col = i;
		if (*col == SIZE_MAX && cols[k].required) {
			snprintf(msg, sizeof(msg), "not a memscope_dump CSV: the header has no '%s' column",
				 cols[k].name);
			*why = msg;
			return MMS_ECORRUPT;
		}
	}
	d->ncols = r->nf;
	return 0;
}

/* Adds size to (or takes it from) what the open launches of a thread
 * allocated. */
static void cdump_memory(struct cdump *d, struct cthread *t, int64_t delta)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		t->ops[i].bytes += delta;
	if (t->kix != SIZE_MAX)
		d->side->v[t->kix].bytes += delta;
}

static int cdump_row(struct cdump *d, const struct csvr *r, const char **why)
{
	static char msg[128];
	struct cthread *t;
	struct cmp_launch *l;
	uint64_t id, size, addr, *v;
	const char *f;
	size_t n;
	uint32_t name;
	int rc, isnew, kernel = d->c->level == MMS_COMPARE_KERNEL;

	if (r->nf != d->ncols) {
		snprintf(msg, sizeof(msg), "%zu fields; the header has %zu", r->nf, d->ncols);
		*why = msg;
		return MMS_ECORRUPT;
	}
	f = csvr_field(r, d->c_id, &n);
	if (parse_u64(f, n, &id)) {
		*why = "the ID is not a number";
		return MMS_ECORRUPT;
	}
	if (d->any && id <= d->last_id) {
		snprintf(msg, sizeof(msg),
			 "ID %" PRIu64 " after ID %" PRIu64 ": the rows must be in event order, as "
			 "msmemscope-replay --export csv writes them",
			 id, d->last_id);
		*why = msg;
		return MMS_ECORRUPT;
	}
	d->any = 1;
	d->last_id = id;
	if (field_is(r, d->c_event, "MALLOC") || field_is(r, d->c_event, "FREE")) {
		int alloc = field_is(r, d->c_event, "MALLOC");

		f = csvr_field(r, d->c_ptr, &n);
		if (parse_u64(f, n, &addr)) {
			*why = "the Ptr of a MALLOC or FREE row is not an address";
			return MMS_ECORRUPT;
		}
		f = csvr_field(r, d->c_attr, &n);
		rc = attr_size(f, n, &size);
		if (rc < 0 || (!rc && alloc)) {
			*why = rc < 0 ? "the size in Attr is not a number" : "a MALLOC row with no size in Attr";
			return MMS_ECORRUPT;
		}
		/* Blocks of different kinds (HOST, MMAP, a pool's) may
		 * share an address: the kind goes into the key's top bits,
		 * above any user-space address. */
		f = csvr_field(r, d->c_type, &n);
		if (!d->kind_set || n != d->kind_len || memcmp(f, d->c->text + d->kind_off, n)) {
			int err = name_id(d->c, f, n, &name);

			if (err)
				return err;
			d->kind_set = 1;
			d->kind_off = d->c->off[name];
			d->kind_len = n;
			d->kind_key = (uint64_t)name << 48;
		}
		addr ^= d->kind_key;
		if (alloc) {
			v = mms__map_put(&d->live, addr, &isnew);
			if (!v)
				return -ENOMEM;
			*v = size;
		} else {
			uint64_t known;

			/* The block's size when the row does not say it; a
			 * free of nothing the dump allocated moves nothing. */
			if (mms__map_del(&d->live, addr, &known) && !rc)
				size = known;
			else if (!rc)
				return 0;
		}
		t = cdump_thread(d, r);
		if (!t)
			return -ENOMEM;
		cdump_memory(d, t, alloc ? (int64_t)size : -(int64_t)size);
		return 0;
	}
	if (field_is(r, d->c_event, "OP_LAUNCH")) {
		t = cdump_thread(d, r);
		if (!t)
			return -ENOMEM;
		if (field_ends(r, d->c_type, "_START")) {
			f = csvr_field(r, d->c_name, &n);
			rc = name_id(d->c, f, n, &name);
			if (rc)
				return rc;
			if (mms__grow(&t->ops, &t->cap, t->n, sizeof(*t->ops)))
				return -ENOMEM;
			t->ops[t->n].name = name;
			t->ops[t->n++].bytes = 0;
		} else if (field_ends(r, d->c_type, "_END") && t->n) {
			t->n--;
			if (!kernel) {
				l = side_push(d->side, t->ops[t->n].name, 0);
				if (!l)
					return -ENOMEM;
				l->bytes = t->ops[t->n].bytes;
			}
			if (t->kix != SIZE_MAX && t->n < t->kdepth)
				t->kix = SIZE_MAX;
		}
		return 0;
	}
	if (kernel && field_is(r, d->c_event, "KERNEL_LAUNCH") &&
	    (field_is(r, d->c_type, "KERNEL_LAUNCH") || field_is(r, d->c_type, "KERNEL_START"))) {
		t = cdump_thread(d, r);
		if (!t)
			return -ENOMEM;
		f = csvr_field(r, d->c_name, &n);
		rc = name_id(d->c, f, n, &name);
		if (rc)
			return rc;
		if (!side_push(d->side, name, 0))
			return -ENOMEM;
		t->kix = d->side->n - 1;
		t->kdepth = t->n;
	}
	return 0;
}

MMS__EXPORT int mms_compare_add_csv(mms_compare_t *c, int side, const char *path, mms_compare_error_t *err)
{
	struct cdump d = { 0 };
	struct csvr *r;
	const char *why = NULL;
	size_t i;
	int rc;

	if (err) {
		err->line = 0;
		err->what[0] = '\0';
	}
	if (!c || !path || (side != 0 && side != 1) || c->side[side].loaded)
		return MMS_EUSAGE;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		rc = -errno;
		free(r);
		return rc;
	}
	d.c = c;
	d.side = &c->side[side];
	mms__map_init(&d.tix);
	mms__map_init(&d.live);
	rc = csvr_next(r, &why);
	if (rc == 0) {
		why = "the file is empty";
		rc = MMS_ECORRUPT;
	} else if (rc == 1) {
		rc = cdump_header(&d, r, &why);
	}
	while (!rc && (rc = csvr_next(r, &why)) == 1)
		rc = cdump_row(&d, r, &why);
	if (rc && err) {
		err->line = r->rec_line;
		if (why)
			snprintf(err->what, sizeof(err->what), "%s", why);
	}
	if (rc)
		d.side->n = 0;
	else
		d.side->loaded = 1;
	for (i = 0; i < d.nth; i++)
		free(d.th[i].ops);
	free(d.th);
	mms__map_free(&d.tix);
	mms__map_free(&d.live);
	mms__xbuf_free(&r->text);
	free(r->fo);
	close(r->fd);
	free(r);
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
