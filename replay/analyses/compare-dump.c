/* SPDX-License-Identifier: MIT */
/* compare-dump.c: one side of a compare read from a memscope_dump CSV (as
 * mms_export_csv() writes it): an RFC 4180 record reader, then the
 * OP_LAUNCH, KERNEL_LAUNCH, MALLOC and FREE rows turned into launches with
 * their net bytes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msmemscope/error.h"
#include "base-int.h"
#include "compare-int.h"
#include "export-int.h"
#include "map-int.h"

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
	size_t c_id, c_event, c_type, c_name, c_pid, c_tid, c_dev, c_ptr, c_attr, ncols;
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
		{ "Device Id", offsetof(struct cdump, c_dev), 0 },
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
 * allocated, or what moved outside every launch (at kernel level: outside
 * every kernel launch's span) when none is open. */
static void cdump_memory(struct cdump *d, struct cthread *t, int64_t delta)
{
	size_t i;

	if (d->c->level == MMS_COMPARE_KERNEL ? t->kix == SIZE_MAX : !t->n)
		d->side->outside = mms__add_sat(d->side->outside, delta);

	for (i = 0; i < t->n; i++)
		t->ops[i].bytes = mms__add_sat(t->ops[i].bytes, delta);
	if (t->kix != SIZE_MAX)
		d->side->v[t->kix].bytes = mms__add_sat(d->side->v[t->kix].bytes, delta);
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
			int err = mms__compare_name_id(d->c, f, n, &name);

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
		/* A size past INT64_MAX in a file is absurd: held there. */
		cdump_memory(d, t,
			     size > INT64_MAX ? (alloc ? INT64_MAX : -INT64_MAX)
			     : alloc          ? (int64_t)size
					      : -(int64_t)size);
		return 0;
	}
	if (field_is(r, d->c_event, "OP_LAUNCH")) {
		t = cdump_thread(d, r);
		if (!t)
			return -ENOMEM;
		if (field_ends(r, d->c_type, "_START")) {
			f = csvr_field(r, d->c_name, &n);
			rc = mms__compare_name_id(d->c, f, n, &name);
			if (rc)
				return rc;
			if (mms__grow(&t->ops, &t->cap, t->n, sizeof(*t->ops)))
				return -ENOMEM;
			t->ops[t->n].name = name;
			t->ops[t->n++].bytes = 0;
		} else if (field_ends(r, d->c_type, "_END") && t->n) {
			t->n--;
			if (!kernel) {
				l = mms__compare_side_push(d->side, t->ops[t->n].name, 0);
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
		rc = mms__compare_name_id(d->c, f, n, &name);
		if (rc)
			return rc;
		l = mms__compare_side_push(d->side, name, 0);
		if (!l)
			return -ENOMEM;
		/* A CUDA kernel's row names its device ("host" otherwise). */
		if (d->c_dev != SIZE_MAX) {
			uint64_t dev;

			f = csvr_field(r, d->c_dev, &n);
			if (n && !parse_u64(f, n, &dev) && dev <= INT32_MAX)
				l->device = (int32_t)dev;
		}
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
