/* SPDX-License-Identifier: MIT */
/* export-csv.c: msMemScope's memscope_dump as CSV, one row per event, and
 * the file name msMemScope gives a dump. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base-int.h"
#include "export-int.h"

/* Bytes gathered before a write(). */
#define CSV_FLUSH_AT ((size_t)1 << 18)

static const char csv_header[] = "ID,Event,Event Type,Name,Timestamp(ns),Process Id,Thread Id,Device Id,Ptr,Attr,"
				 "Call Stack(Python),Call Stack(C)\n";

static char *put(char *o, const char *s, size_t n)
{
	/* An empty field may have no buffer (a stack without frames). */
	if (n)
		memcpy(o, s, n);
	return o + n;
}

/* A field quoted with its quotes doubled (at most 2n + 2 bytes). */
static char *put_quoted(char *o, const char *s, size_t n)
{
	const char *q;

	*o++ = '"';
	while (n && (q = memchr(s, '"', n))) {
		o = put(o, s, (size_t)(q - s) + 1);
		*o++ = '"';
		n -= (size_t)(q - s) + 1;
		s = q + 1;
	}
	o = put(o, s, n);
	*o++ = '"';
	return o;
}

char *mms__csv_field(char *o, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r')
			return put_quoted(o, s, n);
	return put(o, s, n);
}

static int put_row(struct mms__xbuf *b, const struct mms__xrow *row)
{
	size_t type_len = strlen(row->type), name_len = row->name ? row->name_len : 3;
	char *o;

	/* Room for the worst case: every variable field quoted and each of
	 * its bytes a doubled quote. */
	if (mms__xbuf_reserve(b, 4 * 20 + 64 +
					 2 * (type_len + name_len + row->attr_len + row->pystack_len + row->cstack_len) + 8))
		return -ENOMEM;
	o = b->p + b->len;
	o = mms__xfmt_u64(o, row->id);
	*o++ = ',';
	o = put(o, row->event, strlen(row->event));
	*o++ = ',';
	o = mms__csv_field(o, row->type, type_len);
	*o++ = ',';
	o = row->name ? mms__csv_field(o, row->name, name_len) : put(o, "N/A", 3);
	*o++ = ',';
	o = mms__xfmt_u64(o, row->time_ns);
	*o++ = ',';
	o = mms__xfmt_u64(o, row->pid);
	*o++ = ',';
	o = mms__xfmt_u64(o, row->tid);
	*o++ = ',';
	o = put(o, row->device, strlen(row->device));
	*o++ = ',';
	o = put(o, row->ptr, strlen(row->ptr));
	*o++ = ',';
	/* Attr is always quoted, as msMemScope writes it. */
	if (row->attr_len)
		o = put_quoted(o, row->attr, row->attr_len);
	*o++ = ',';
	o = mms__csv_field(o, row->pystack, row->pystack_len);
	*o++ = ',';
	o = mms__csv_field(o, row->cstack, row->cstack_len);
	*o++ = '\n';
	b->len = (size_t)(o - b->p);
	return 0;
}

/* The CSV exporter: the rows gathered in out, written every so often. */
struct csv {
	struct mms__xpass x;
	struct mms__xbuf out;
};

static int csv_begin(struct mms__sub *sub, struct mms_pass *p)
{
	struct csv *c = (struct csv *)sub;

	mms__xpass_begin(&c->x, p);
	return mms__xbuf_put(&c->out, csv_header, sizeof(csv_header) - 1);
}

static int csv_event(struct mms__sub *sub, struct mms_pass *p, const mms_event_t *ev)
{
	struct csv *c = (struct csv *)sub;
	struct mms__xrow row;
	int rc;

	(void)p;
	mms__xpass_event(&c->x, ev);
	rc = mms__xpass_row(&c->x, &row);
	if (rc == 1) {
		c->x.res->rows++;
		rc = put_row(&c->out, &row);
	}
	if (!rc && c->out.len >= CSV_FLUSH_AT) {
		rc = mms__write_all(c->x.fd, c->out.p, c->out.len);
		c->out.len = 0;
	}
	return rc;
}

static int csv_end(struct mms__sub *sub, struct mms_pass *p)
{
	struct csv *c = (struct csv *)sub;
	int rc;

	(void)p;
	rc = mms__write_all(c->x.fd, c->out.p, c->out.len);
	return rc ? rc : mms__xpass_commit(&c->x);
}

static void csv_drop(struct mms__sub *sub)
{
	struct csv *c = (struct csv *)sub;

	mms__xpass_free(&c->x);
	mms__xbuf_free(&c->out);
	free(c);
}

int mms__export_csv_add(mms_pass_t *p, const mms_export_options_t *opt, mms_export_t *res)
{
	struct csv *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	rc = mms__xpass_init(&c->x, p, opt, res);
	if (rc) {
		free(c);
		return rc;
	}
	c->x.sub.name = "export csv";
	c->x.sub.begin = csv_begin;
	c->x.sub.event = csv_event;
	c->x.sub.end = csv_end;
	c->x.sub.drop = csv_drop;
	return mms__pass_add(p, &c->x.sub);
}

MMS__EXPORT int mms_export_name(const mms_log_t *log, const char *ext, char *buf, size_t len)
{
	mms_log_info_t info;
	char stamp[32];
	struct tm tm;
	time_t t;

	if (!log || !ext || (!buf && len))
		return MMS_EUSAGE;
	mms_log_get_info(log, &info);
	t = (time_t)(info.start_realtime_ns / 1000000000u);
	if (!localtime_r(&t, &tm) || !strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm))
		snprintf(stamp, sizeof(stamp), "%llu", (unsigned long long)t);
	return snprintf(buf, len, "memscope_dump_%s.%s", stamp, ext);
}
