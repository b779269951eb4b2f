/* SPDX-License-Identifier: MIT */
/* flamegraph.c: the selected allocations as a self-contained SVG flame
 * graph (an icicle: callers above callees), one box per call path and frame
 * with a width by bytes, a <title> for hovering, and a little inline
 * script for click-to-zoom and search; it shows without the script. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msmemscope/export.h"
#include "msmemscope/symbolize.h"
#include "base-int.h"
#include "export-int.h"
#include "map-int.h"
#include "transform-int.h"

#define FG_WIDTH 1200.0
#define FG_PAD 10.0
#define FG_TOP 40.0    /* room for the title and the buttons */
#define FG_ROW 17.0    /* height of one frame row */
#define FG_BOTTOM 30.0 /* room for the details line */
#define FG_CHAR 7.0    /* width of a 12px monospace character, about */
#define FG_MIN 0.1     /* boxes narrower than this (pixels) are left out */

/* One box: a frame reached along one call path. */
struct fg_node {
	uint32_t parent, child, next; /* first child and next sibling; 0 = none */
	uint32_t name, loc;           /* offsets in the string arena */
	uint32_t depth;
	uint64_t bytes, count;
};

struct fg {
	struct fg_node *n; /* n[0] is the root, "all" */
	size_t nn, cap;
	struct mms__map nix;  /* hash of (parent, name, loc) -> index */
	struct mms__xbuf str; /* interned strings, NUL-terminated */
	struct mms__map six;  /* hash of a string -> offset + 1 */
	uint32_t *path;       /* one stack's frames as (name, loc) pairs */
	size_t npath, path_cap;
	uint32_t maxdepth;
	size_t boxes; /* drawn */
};

/* Interns s: returns its offset in the arena, or -ENOMEM. */
static int64_t intern(struct fg *g, const char *s)
{
	size_t n = strlen(s) + 1;
	uint64_t h = mms__xf_hash(MMS__XF_HASH0, s, n - 1), *v;
	int isnew;

	for (;; h++) {
		v = mms__map_put(&g->six, h, &isnew);
		if (!v)
			return -ENOMEM;
		if (isnew)
			break;
		if (!strcmp(g->str.p + *v - 1, s))
			return (int64_t)(*v - 1);
	}
	*v = g->str.len + 1;
	if (mms__xbuf_put(&g->str, s, n))
		return -ENOMEM;
	return (int64_t)(*v - 1);
}

/* The child of parent for frame (name, loc), created when new: its index,
 * or -ENOMEM. */
static int64_t child_of(struct fg *g, uint32_t parent, uint32_t name, uint32_t loc)
{
	uint64_t h = ((uint64_t)parent * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)name << 32 | loc), *v;
	struct fg_node *c;
	int isnew;

	for (;; h++) {
		v = mms__map_put(&g->nix, h, &isnew);
		if (!v)
			return -ENOMEM;
		if (isnew)
			break;
		c = &g->n[*v];
		if (c->parent == parent && c->name == name && c->loc == loc)
			return (int64_t)*v;
	}
	if (mms__grow(&g->n, &g->cap, g->nn, sizeof(*g->n)))
		return -ENOMEM;
	*v = g->nn;
	c = &g->n[g->nn];
	*c = (struct fg_node){ parent, 0, g->n[parent].child, name, loc, g->n[parent].depth + 1, 0, 0 };
	g->n[parent].child = (uint32_t)g->nn;
	if (c->depth > g->maxdepth)
		g->maxdepth = c->depth;
	return (int64_t)g->nn++;
}

static int path_push(struct fg *g, uint32_t name, uint32_t loc)
{
	if (g->npath + 2 > g->path_cap) {
		size_t ncap = g->path_cap ? g->path_cap * 2 : 64;
		uint32_t *p = realloc(g->path, ncap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		g->path = p;
		g->path_cap = ncap;
	}
	g->path[g->npath++] = name;
	g->path[g->npath++] = loc;
	return 0;
}

/* Adds one group: its frames, outermost first, under the root. */
static int add_group(struct fg *g, struct mms__xf *x, struct mms__xf_out *o, const struct mms__xf_group *grp)
{
	char loc[600];
	int64_t name, l, node;
	size_t i;
	int n, m, j, k;

	g->npath = 0;
	n = mms__xf_stack_ips(o, x->log, grp->stack);
	if (n < 0)
		return n;
	for (j = 0; j < n; j++) {
		m = mms__xf_frames(o, o->ips[j]);
		if (m < 0)
			return m;
		for (k = 0; k < m; k++) {
			const mms_frame_t *f = &o->frames[k];

			name = intern(g, mms__xf_function(o, f));
			if (f->file && f->line)
				snprintf(loc, sizeof(loc), "%s:%u", f->file, (unsigned)f->line);
			else
				snprintf(loc, sizeof(loc), "%s", f->file ? f->file : "");
			l = intern(g, loc);
			if (name < 0 || l < 0 || path_push(g, (uint32_t)name, (uint32_t)l))
				return -ENOMEM;
		}
	}
	if (!g->npath) {
		/* No stack recorded: the allocator stands for it. */
		name = intern(g, mms__xf_allocator_name(x, grp->allocator));
		l = intern(g, "");
		if (name < 0 || l < 0 || path_push(g, (uint32_t)name, (uint32_t)l))
			return -ENOMEM;
	}
	g->n[0].bytes += grp->bytes;
	g->n[0].count += grp->count;
	node = 0;
	for (i = g->npath; i; i -= 2) {
		node = child_of(g, (uint32_t)node, g->path[i - 2], g->path[i - 1]);
		if (node < 0)
			return (int)node;
		g->n[node].bytes += grp->bytes;
		g->n[node].count += grp->count;
	}
	return 0;
}

/* Appends s escaped for XML text and attributes; bytes that are not valid
 * UTF-8, and control characters XML 1.0 forbids, become '?'. */
static int put_xml(struct mms__xbuf *b, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t shown = 0;
	int rc = 0, len, i;

	while (*p && !rc && shown < max) {
		unsigned c = *p;

		shown++;
		if (c == '&')
			rc = mms__xbuf_puts(b, "&amp;");
		else if (c == '<')
			rc = mms__xbuf_puts(b, "&lt;");
		else if (c == '>')
			rc = mms__xbuf_puts(b, "&gt;");
		else if (c == '"')
			rc = mms__xbuf_puts(b, "&quot;");
		else if (c == '\n')
			rc = mms__xbuf_puts(b, "&#10;");
		else if (c < 0x20 || c == 0x7f)
			rc = mms__xbuf_put(b, "?", 1);
		else if (c < 0x80)
			rc = mms__xbuf_put(b, (const char *)p, 1);
		else {
			len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
			for (i = 1; i < len; i++)
				if ((p[i] & 0xc0) != 0x80)
					break;
			if (!len || i < len) {
				rc = mms__xbuf_put(b, "?", 1);
			} else {
				rc = mms__xbuf_put(b, (const char *)p, (size_t)len);
				p += len;
				continue;
			}
		}
		p++;
	}
	return rc;
}

/* The label a box of width w shows, as the script's fit() makes it. */
static int put_label(struct mms__xbuf *b, const char *name, double w)
{
	size_t fits = w > 6 ? (size_t)((w - 6) / FG_CHAR) : 0;
	size_t n = strlen(name);

	if (fits < 3)
		return 0;
	if (n <= fits)
		return put_xml(b, name, n);
	if (put_xml(b, name, fits - 2))
		return -ENOMEM;
	return mms__xbuf_puts(b, "..");
}

static int node_cmp_bytes(const struct fg_node *a, const struct fg_node *b)
{
	return a->bytes != b->bytes ? (a->bytes < b->bytes ? 1 : -1) : 0;
}

/* Sorts each child list by bytes, largest first (insertion into a new
 * list; lists are short). */
static void sort_children(struct fg *g)
{
	size_t i;

	for (i = 0; i < g->nn; i++) {
		uint32_t c = g->n[i].child, sorted = 0, next, *at;

		while (c) {
			next = g->n[c].next;
			at = &sorted;
			while (*at && node_cmp_bytes(&g->n[*at], &g->n[c]) <= 0)
				at = &g->n[*at].next;
			g->n[c].next = *at;
			*at = c;
			c = next;
		}
		g->n[i].child = sorted;
	}
}

static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"var W = 1200, PAD = 10, frames = [], details, unzoom;\n"
	"function init() {\n"
	"  details = document.getElementById('details');\n"
	"  unzoom = document.getElementById('unzoom');\n"
	"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"  frames.forEach(function (g) {\n"
	"    var r = g.querySelector('rect');\n"
	"    g.x0 = +r.getAttribute('x'); g.w0 = +r.getAttribute('width');\n"
	"    g.fill0 = r.getAttribute('fill');\n"
	"    g.info = g.querySelector('title').textContent;\n"
	"    g.name = g.info.split('\\n')[0].replace(/ \\(.*\\)$/, '');\n"
	"    g.addEventListener('click', function () { zoom(g); });\n"
	"    g.addEventListener('mouseover', function () { details.textContent = g.info.replace('\\n', ': '); });\n"
	"    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"  });\n"
	"  unzoom.addEventListener('click', function () { zoom(null); });\n"
	"  document.getElementById('search').addEventListener('click', search);\n"
	"}\n"
	"function fit(g, x, w) {\n"
	"  var r = g.querySelector('rect'), t = g.querySelector('text'), n = Math.floor((w - 6) / 7);\n"
	"  r.setAttribute('x', x.toFixed(2)); r.setAttribute('width', w.toFixed(2));\n"
	"  t.setAttribute('x', (x + 3).toFixed(2));\n"
	"  t.textContent = n < 3 ? '' : g.name.length <= n ? g.name : g.name.slice(0, n - 2) + '..';\n"
	"}\n"
	"function zoom(z) {\n"
	"  var x0 = z ? z.x0 : PAD, w0 = z ? z.w0 : W - 2 * PAD, s = (W - 2 * PAD) / w0;\n"
	"  unzoom.setAttribute('class', z ? 'btn' : 'btn hide');\n"
	"  frames.forEach(function (g) {\n"
	"    var a = Math.max(g.x0, x0), e = Math.min(g.x0 + g.w0, x0 + w0);\n"
	"    if (e - a < 1e-6) { g.style.display = 'none'; return; }\n"
	"    g.style.display = '';\n"
	"    fit(g, PAD + (a - x0) * s, (e - a) * s);\n"
	"  });\n"
	"}\n"
	"function search() {\n"
	"  var q = window.prompt('Search frames (regular expression, empty to clear)', ''), re, hits = 0;\n"
	"  if (q === null) return;\n"
	"  try { re = new RegExp(q); } catch (e) { window.alert(e); return; }\n"
	"  frames.forEach(function (g) {\n"
	"    var m = q !== '' && re.test(g.name);\n"
	"    g.querySelector('rect').setAttribute('fill', m ? 'rgb(230,0,230)' : g.fill0);\n"
	"    if (m) hits++;\n"
	"  });\n"
	"  details.textContent = q === '' ? ' ' : hits + ' frame(s) match ' + q;\n"
	"}\n"
	"]]></script>\n";

static int put_num(struct mms__xbuf *b, const char *fmt, double v)
{
	char num[48];
	int n = snprintf(num, sizeof(num), fmt, v);

	return mms__xbuf_put(b, num, (size_t)n);
}

/* One box and its children, depth first. */
static int put_node(struct fg *g, struct mms__xf_out *o, uint32_t i, double x, double scale)
{
	const struct fg_node *nd = &g->n[i];
	const char *name = i ? g->str.p + nd->name : "all";
	const char *loc = i ? g->str.p + nd->loc : "";
	double w = (double)nd->bytes * scale, y = FG_TOP + nd->depth * FG_ROW;
	uint64_t h = mms__xf_hash(MMS__XF_HASH0, name, strlen(name));
	char color[48];
	uint32_t c;
	int rc = 0;

	if (w < FG_MIN)
		return 0;
	g->boxes++;
	/* flamegraph.pl's "hot" palette, picked by the function's name. */
	snprintf(color, sizeof(color), "rgb(%u,%u,%u)", 205 + (unsigned)(h % 51), (unsigned)((h >> 8) % 231),
		 (unsigned)((h >> 16) % 56));
	rc |= mms__xbuf_puts(&o->b, "<g class=\"f\"><title>");
	rc |= put_xml(&o->b, name, SIZE_MAX);
	if (*loc) {
		rc |= mms__xbuf_puts(&o->b, " (");
		rc |= put_xml(&o->b, loc, SIZE_MAX);
		rc |= mms__xbuf_puts(&o->b, ")");
	}
	rc |= mms__xbuf_puts(&o->b, "&#10;");
	rc |= mms__xbuf_u64(&o->b, nd->bytes);
	rc |= mms__xbuf_puts(&o->b, nd->bytes == 1 ? " byte in " : " bytes in ");
	rc |= mms__xbuf_u64(&o->b, nd->count);
	rc |= mms__xbuf_puts(&o->b, nd->count == 1 ? " allocation, " : " allocations, ");
	rc |= put_num(&o->b, "%.2f%%", g->n[0].bytes ? 100.0 * (double)nd->bytes / (double)g->n[0].bytes : 0);
	rc |= mms__xbuf_puts(&o->b, "</title><rect x=\"");
	rc |= put_num(&o->b, "%.2f", x);
	rc |= mms__xbuf_puts(&o->b, "\" y=\"");
	rc |= put_num(&o->b, "%.0f", y);
	rc |= mms__xbuf_puts(&o->b, "\" width=\"");
	rc |= put_num(&o->b, "%.2f", w);
	rc |= mms__xbuf_puts(&o->b, "\" height=\"16\" rx=\"2\" fill=\"");
	rc |= mms__xbuf_puts(&o->b, color);
	rc |= mms__xbuf_puts(&o->b, "\"/><text x=\"");
	rc |= put_num(&o->b, "%.2f", x + 3);
	rc |= mms__xbuf_puts(&o->b, "\" y=\"");
	rc |= put_num(&o->b, "%.0f", y + 12);
	rc |= mms__xbuf_puts(&o->b, "\">");
	rc |= put_label(&o->b, name, w);
	rc |= mms__xbuf_puts(&o->b, "</text></g>\n");
	if (rc)
		return -ENOMEM;
	rc = mms__xf_flush(o, 0);
	for (c = nd->child; !rc && c; c = g->n[c].next) {
		rc = put_node(g, o, c, x, scale);
		x += (double)g->n[c].bytes * scale;
	}
	return rc;
}

static const char *selection_title(const struct mms__xf *x, char *buf, size_t len)
{
	if (x->title)
		return x->title;
	if (x->selection == MMS_TRANSFORM_LEAKS)
		return "Leaked allocations (live at the end)";
	if (x->selection == MMS_TRANSFORM_TEMPORARY) {
		snprintf(buf, len,
			 "Temporary allocations (freed after at most %llu other allocation%s of their thread)",
			 (unsigned long long)x->threshold, x->threshold == 1 ? "" : "s");
		return buf;
	}
	return "Allocations live at the high-water mark";
}

int mms__xf_flamegraph(struct mms__xf *x, struct mms__xf_out *o)
{
	struct fg g = { 0 };
	char tbuf[128];
	double height;
	size_t i;
	int rc = 0;

	mms__map_init(&g.nix);
	mms__map_init(&g.six);
	if (mms__grow(&g.n, &g.cap, 0, sizeof(*g.n)) || mms__xbuf_put(&g.str, "", 1)) {
		rc = -ENOMEM;
		goto out;
	}
	g.n[0] = (struct fg_node){ 0 };
	g.nn = 1;
	for (i = 0; !rc && i < x->ngroups; i++)
		rc = add_group(&g, x, o, &x->groups[i]);
	if (rc)
		goto out;
	sort_children(&g);
	height = FG_TOP + (g.maxdepth + 1) * FG_ROW + FG_BOTTOM;
	rc |= mms__xbuf_puts(&o->b,
			     "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
			     "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"1200\" height=\"");
	rc |= put_num(&o->b, "%.0f", height);
	rc |= mms__xbuf_puts(&o->b, "\" viewBox=\"0 0 1200 ");
	rc |= put_num(&o->b, "%.0f", height);
	rc |= mms__xbuf_puts(&o->b,
			     "\" onload=\"init()\">\n"
			     "<style>text { font: 12px monospace; fill: #000; } g.f text { pointer-events: none; }\n"
			     "g.f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
			     ".btn { cursor: pointer; fill: #36c; } .hide { display: none; }\n"
			     "#title { font-size: 16px; }</style>\n");
	rc |= mms__xbuf_puts(&o->b, script);
	rc |= mms__xbuf_puts(&o->b, "<rect x=\"0\" y=\"0\" width=\"1200\" height=\"");
	rc |= put_num(&o->b, "%.0f", height);
	rc |= mms__xbuf_puts(&o->b, "\" fill=\"#f8f8f8\"/>\n<text id=\"title\" x=\"600\" y=\"24\" "
				    "text-anchor=\"middle\">");
	rc |= put_xml(&o->b, selection_title(x, tbuf, sizeof(tbuf)), SIZE_MAX);
	rc |= mms__xbuf_puts(&o->b,
			     "</text>\n<text id=\"unzoom\" class=\"btn hide\" x=\"10\" y=\"24\">Reset zoom</text>\n"
			     "<text id=\"search\" class=\"btn\" x=\"1130\" y=\"24\">Search</text>\n"
			     "<text id=\"details\" x=\"10\" y=\"");
	rc |= put_num(&o->b, "%.0f", height - 10);
	rc |= mms__xbuf_puts(&o->b, "\"> </text>\n<g id=\"frames\">\n");
	if (rc) {
		rc = -ENOMEM;
		goto out;
	}
	if (g.n[0].bytes)
		rc = put_node(&g, o, 0, FG_PAD, (FG_WIDTH - 2 * FG_PAD) / (double)g.n[0].bytes);
	if (!rc)
		rc = mms__xbuf_puts(&o->b, "</g>\n</svg>\n");
	x->nrows = g.boxes;
out:
	free(g.n);
	free(g.path);
	mms__map_free(&g.nix);
	mms__map_free(&g.six);
	mms__xbuf_free(&g.str);
	return rc;
}
