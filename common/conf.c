/* SPDX-License-Identifier: MIT */
/* conf.c: the recording configuration (msmemscope-config.h): one table of
 * keys, the one parser and the one writer of its text. Compiled into the
 * recorder and into the replay library, so it must be safe in the
 * recorder: it allocates nothing, uses no stdio and no locale, and parses
 * into the fixed-size fields of mms_config_t. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "format.h"

/* The replay library exports these functions; the recorder's copies stay
 * hidden (-fvisibility=hidden and its version script). */
#ifdef MMS_CONF_EXPORTED
#define CONF_API __attribute__((visibility("default")))
#else
#define CONF_API
#endif

_Static_assert((unsigned)MMS_CONFIG_EV_ALLOC == (unsigned)MMS_EVENTS_ALLOC &&
		       (unsigned)MMS_CONFIG_EV_FREE == (unsigned)MMS_EVENTS_FREE &&
		       (unsigned)MMS_CONFIG_EV_LAUNCH == (unsigned)MMS_EVENTS_LAUNCH &&
		       (unsigned)MMS_CONFIG_EV_ACCESS == (unsigned)MMS_EVENTS_ACCESS,
	       "the events of the configuration are the header's events_mask");
_Static_assert(MMS_CONFIG_NAME_MAX == MMS_WATCH_NAME_MAX, "watch names are the log's");

static const char *const event_names[] = { "alloc", "free", "launch", "access", NULL };
static const char *const collect_names[] = { "immediate", "deferred", NULL };
static const char *const level_names[] = { "info", "warn", "error", NULL };
static const char *const clock_names[] = { "tsc", "counter", "exact", NULL };
static const char *const unwind_names[] = { "walker", "libunwind", NULL };

#define F(field) offsetof(mms_config_t, field)

const struct mms_conf_key mms__conf_keys[] = {
	{ "call_stack", NULL, MMS_CONF_UINT, F(call_stack), 0, 1000, NULL, "0", MMS_CONF_ALWAYS,
	  "a number of frames from 0 to 1000", "C frames recorded with each event, 0: no stacks",
	  "recorder (unwind.c), replay (log header)" },
	{ "python_stack", NULL, MMS_CONF_UINT, F(python_stack), 0, 1000, NULL, "0", 0,
	  "a number of frames from 0 to 1000",
	  "Python frames recorded with each event of a thread that runs Python code, 0: none (doc/python.md)",
	  "recorder (pystack.c), the Python package (its profile hook), replay" },
	{ "events", NULL, MMS_CONF_EVENTS, F(events), 0, 0, event_names, "alloc,free,launch", MMS_CONF_ALWAYS,
	  "a list of alloc, free, launch, access",
	  "what is recorded besides the heap's events (alloc and free are always recorded): launch, access",
	  "recorder (hooks.c, api.c)" },
	{ "collect", NULL, MMS_CONF_ENUM, F(deferred), 0, 0, collect_names, "immediate", MMS_CONF_ALWAYS,
	  "immediate or deferred", "deferred: record only between msmemscope_start() and msmemscope_stop()",
	  "recorder (api.c), analyses (a partial log)" },
	{ "steps", NULL, MMS_CONF_STEPS, F(steps), 1, INT32_MAX, NULL, "", 0,
	  "1 to 5 step numbers (from 1 to 2147483647) separated by commas",
	  "record the memory events of these steps only; empty: every step", "recorder (api.c), analyses" },
	{ "follow_exec", NULL, MMS_CONF_BOOL, F(follow_exec), 0, 1, NULL, "1", MMS_CONF_ALWAYS, "0 or 1",
	  "0: the images the program execs are not recorded", "recorder (logname.c)" },
	{ "log_level", NULL, MMS_CONF_ENUM, F(log_level), 0, 0, level_names, "warn", MMS_CONF_ALWAYS,
	  "info, warn or error", "error: the recorder says nothing on stderr but errors", "recorder" },
	{ "freeres", NULL, MMS_CONF_BOOL, F(freeres), 0, 1, NULL, "1", 0, "0 or 1",
	  "0: glibc and libstdc++ do not free their memory at exit", "recorder (runtime.c)" },
	{ "reach", NULL, MMS_CONF_BOOL, F(reach), 0, 1, NULL, "1", 0, "0 or 1",
	  "0: the process's memory is not scanned at exit for pointers to its live blocks (every block live at "
	  "exit is then reported as leaked)",
	  "recorder (reach.c), leaks report" },
	{ "watch", NULL, MMS_CONF_WATCH, F(watch), 0, 31, NULL, "", 0,
	  "[START[:outN],]END[,full-content], operator names of 1 to 63 bytes without ';' or ',', "
	  "N from 0 to 31, :outN only on START",
	  "checksum (and with full-content dump) the outputs of START at every launch until END",
	  "recorder (watch.c), watch analysis" },
	{ "log_limit", "MSMEMSCOPE_LOG_LIMIT", MMS_CONF_SIZE, F(log_limit),
	  MMS_HEADER_SIZE + 2 * MMS_CHUNK_SIZE_DEFAULT, 0, NULL, "64G", 0,
	  "a size in bytes, with K, M or G, of at least 132K", "the largest log file; recording stops there",
	  "recorder (logfile.c)" },
	{ "clock", "MSMEMSCOPE_CLOCK", MMS_CONF_ENUM, F(clock), 0, 0, clock_names, "tsc", 0, "tsc, counter or exact",
	  "counter: order stamps from an atomic counter, never the TSC; exact: the TSC read at every event, also while "
	  "the process has one thread",
	  "recorder (clock.c)" },
	{ "log_thread", "MSMEMSCOPE_LOG_THREAD", MMS_CONF_BOOL, F(log_thread), 0, 1, NULL, "1", 0, "0 or 1",
	  "0: no msmemscope-log thread preparing the log ahead", "recorder (pager.c)" },
	{ "unwind", "MSMEMSCOPE_UNWIND", MMS_CONF_ENUM, F(unwind), 0, 0, unwind_names, "walker", 0,
	  "walker or libunwind", "libunwind: every stack is captured by libunwind", "recorder (unwind.c)" },
	{ "unwind_check", "MSMEMSCOPE_UNWIND_CHECK", MMS_CONF_UINT, F(unwind_check), 0, 2, NULL, "0", 0, "0, 1 or 2",
	  "1: capture every stack with the walker and libunwind and count the differences; 2: print the first",
	  "recorder (unwind-check.c)" },
	{ "guard", NULL, MMS_CONF_UINT, F(guard), 0, 2, NULL, "0", 0, "0, 1 or 2",
	  "1: red zones around heap blocks, a quarantine of freed blocks, bad frees caught (doc/guard.md); "
	  "2: the same, and every red zone and the quarantine checked at the end of each operator launch",
	  "recorder (guard.c), guard analysis" },
	{ "guard_redzone", NULL, MMS_CONF_UINT, F(guard_redzone), 1, 4096, NULL, "16", 0,
	  "a number of bytes from 1 to 4096", "the size of each red zone of guard mode", "recorder (guard.c)" },
	{ "guard_quarantine", NULL, MMS_CONF_SIZE, F(guard_quarantine), 0, 0, NULL, "4M", MMS_CONF_EXACT,
	  "a size in bytes, with K, M or G",
	  "guard mode: freed bytes held back (filled with a pattern) before they are handed back",
	  "recorder (guard.c)" },
	{ "torch_ops", NULL, MMS_CONF_BOOL, F(torch_ops), 0, 1, NULL, "0", 0, "0 or 1",
	  "1: a Python program's aten operators are operator launches from its import of torch on "
	  "(msmemscope.torch.ops(); doc/python.md)",
	  "the Python package (its boot module)" },
	{ "free_stack", NULL, MMS_CONF_BOOL, F(free_stack), 0, 1, NULL, "1", 0, "0 or 1",
	  "0: with stacks on, frees record no stack, allocations keep theirs (the launcher's "
	  "--keep-stacktraces=alloc)",
	  "recorder (hooks.c), replay (a freed block's stack)" },
	{ "devices", NULL, MMS_CONF_ORDINALS, F(devices), 0, 63, NULL, "", 0,
	  "CUDA device ordinals from 0 to 63 separated by commas",
	  "record the device memory of these CUDA devices only (the launcher's --device); empty: every device",
	  "recorder (cuda.c), summaries" },
};
const size_t mms__conf_nkeys = sizeof mms__conf_keys / sizeof mms__conf_keys[0];

/* ---- reading values ---- */

/* A decimal number of len bytes, nothing else; -1 when it is not one or
 * passes UINT64_MAX / 1024 (no size or count here comes near). */
static int read_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (!len)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX >> 10) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* The index of the len bytes at s in names, or -1. */
static int find_name(const char *const *names, const char *s, size_t len)
{
	for (int i = 0; names[i]; i++)
		if (strlen(names[i]) == len && !memcmp(names[i], s, len))
			return i;
	return -1;
}

/* The length of the item at s (up to a ',' or end). */
static size_t item_len(const char *s, const char *end)
{
	const char *c = memchr(s, ',', (size_t)(end - s));

	return (size_t)((c ? c : end) - s);
}

static int read_events(const char *s, size_t len, uint32_t *out)
{
	const char *end = s + len;
	uint32_t m = 0;

	while (s < end) {
		size_t n = item_len(s, end);
		int k = find_name(event_names, s, n);

		if (k < 0)
			return -1;
		m |= 1u << k;
		s += n + (s + n < end);
		if (s == end && s[-1] == ',')
			return -1; /* a trailing comma */
	}
	if (m & (MMS_CONFIG_EV_ALLOC | MMS_CONFIG_EV_FREE | MMS_CONFIG_EV_ACCESS))
		m |= MMS_CONFIG_EV_ALLOC | MMS_CONFIG_EV_FREE;
	*out = m;
	return 0;
}

static int read_steps(const struct mms_conf_key *k, const char *s, size_t len, mms_config_t *c)
{
	const char *end = s + len;
	uint32_t steps[MMS_CONFIG_STEPS_MAX] = { 0 }, n = 0;

	while (s < end) {
		size_t l = item_len(s, end);
		uint64_t v;

		if (n == MMS_CONFIG_STEPS_MAX || read_u64(s, l, &v) || v < k->min || v > k->max)
			return -1;
		steps[n++] = (uint32_t)v;
		s += l + (s + l < end);
		if (s == end && s[-1] == ',')
			return -1;
	}
	memcpy(c->steps, steps, sizeof steps);
	c->nsteps = n;
	return 0;
}

/* A list of numbers from k->min to k->max (at most 63) into bits: empty,
 * 0 (every one). */
static int read_ordinals(const struct mms_conf_key *k, const char *s, size_t len, uint64_t *out)
{
	const char *end = s + len;
	uint64_t m = 0;

	while (s < end) {
		size_t l = item_len(s, end);
		uint64_t v;

		if (read_u64(s, l, &v) || v < k->min || v > k->max || v > 63)
			return -1;
		m |= 1ull << v;
		s += l + (s + l < end);
		if (s == end && s[-1] == ',')
			return -1;
	}
	*out = m;
	return 0;
}

/* An operator name of --watch: 1 to 63 bytes, none of them ';' or ','
 * (the separators of the text); ':' is allowed (aten::addmm). */
static int watch_name(char *dst, const char *s, size_t len)
{
	if (!len || len >= MMS_CONFIG_NAME_MAX || memchr(s, ';', len))
		return -1;
	memcpy(dst, s, len);
	dst[len] = 0;
	return 0;
}

/* Where an item of --watch ends in ":out" and digits only, the ':'; else
 * NULL. Any other ':' belongs to the operator's name (aten::addmm,
 * aten::outer). */
static const char *out_suffix(const char *s, size_t len)
{
	const char *end = s + len, *colon = NULL, *d;

	for (size_t i = len; i > 0 && !colon; i--)
		if (s[i - 1] == ':')
			colon = s + i - 1;
	if (!colon || end - colon <= 4 || memcmp(colon + 1, "out", 3))
		return NULL;
	for (d = colon + 4; d < end && *d >= '0' && *d <= '9'; d++)
		;
	return d == end ? colon : NULL;
}

static int read_watch(const struct mms_conf_key *k, const char *s, size_t len, mms_config_t *c)
{
	static const char full[] = "full-content";
	const char *items[4];
	size_t lens[4], n = 0, at = 0;
	struct mms_config_watch w = { .out = -1 };

	if (!len) {
		c->watch = w; /* none */
		return 0;
	}
	/* Up to four items: [START,]END[,full-content] and one too many. */
	for (;;) {
		if (n == 4)
			return -1;
		lens[n] = item_len(s + at, s + len);
		items[n++] = s + at;
		at += lens[n - 1];
		if (at == len)
			break;
		at++; /* the comma */
	}
	if (lens[n - 1] == sizeof full - 1 && !memcmp(items[n - 1], full, sizeof full - 1)) {
		w.full_content = 1;
		n--;
	}
	if (n < 1 || n > 2)
		return -1;
	if (n == 2) {
		/* START:outN (aten::addmm:out0). */
		const char *colon = out_suffix(items[0], lens[0]), *end = items[0] + lens[0];
		size_t slen = lens[0];
		uint64_t v;

		if (colon) {
			if (read_u64(colon + 4, (size_t)(end - colon - 4), &v) || v > k->max)
				return -1;
			w.out = (int)v;
			slen = (size_t)(colon - items[0]);
		}
		if (watch_name(w.start, items[0], slen))
			return -1;
	}
	/* :outN only on START. */
	if (out_suffix(items[n - 1], lens[n - 1]) || watch_name(w.end, items[n - 1], lens[n - 1]))
		return -1;
	w.on = 1;
	c->watch = w;
	return 0;
}

/* Reads the value of key k into c: 0, or -1 (c unchanged). */
static int read_value(const struct mms_conf_key *k, const char *v, size_t len, mms_config_t *c)
{
	char *field = (char *)c + k->offset;
	uint64_t u;
	uint32_t m;
	int i;

	switch (k->type) {
	case MMS_CONF_UINT:
	case MMS_CONF_BOOL:
		if (read_u64(v, len, &u) || u < k->min || u > k->max)
			return -1;
		/* uint32_t and int fields: both 4 bytes, values below 2^31. */
		*(uint32_t *)field = (uint32_t)u;
		return 0;
	case MMS_CONF_ENUM:
		if ((i = find_name(k->names, v, len)) < 0)
			return -1;
		*(int *)field = i;
		return 0;
	case MMS_CONF_SIZE: {
		uint64_t shift = 0;

		if (len && (v[len - 1] | 0x20) == 'k')
			shift = 10;
		else if (len && (v[len - 1] | 0x20) == 'm')
			shift = 20;
		else if (len && (v[len - 1] | 0x20) == 'g')
			shift = 30;
		if (read_u64(v, len - (shift != 0), &u) || (shift && u > (UINT64_MAX >> shift)))
			return -1;
		u <<= shift;
		if (!(k->flags & MMS_CONF_EXACT))
			u &= ~4095ull;
		if (u < k->min)
			return -1;
		*(uint64_t *)field = u;
		return 0;
	}
	case MMS_CONF_EVENTS:
		if (read_events(v, len, &m))
			return -1;
		*(uint32_t *)field = m;
		return 0;
	case MMS_CONF_STEPS:
		return read_steps(k, v, len, c);
	case MMS_CONF_WATCH:
		return read_watch(k, v, len, c);
	case MMS_CONF_ORDINALS:
		return read_ordinals(k, v, len, (uint64_t *)field);
	}
	return -1;
}

_Static_assert(sizeof(int) == sizeof(uint32_t), "UINT and BOOL fields are 4 bytes");

/* Copies at most cap - 1 bytes of s (len) into dst, NUL-terminated. */
static void copy_cut(char *dst, size_t cap, const char *s, size_t len)
{
	if (len >= cap)
		len = cap - 1;
	memcpy(dst, s, len);
	dst[len] = 0;
}

static const struct mms_conf_key *find_key(const char *name, size_t len)
{
	for (size_t i = 0; i < mms__conf_nkeys; i++)
		if (strlen(mms__conf_keys[i].name) == len && !memcmp(mms__conf_keys[i].name, name, len))
			return &mms__conf_keys[i];
	return NULL;
}

/* Sets key k from its value; counts and describes a bad one. */
static int set_value(mms_config_t *c, const struct mms_conf_key *k, const char *v, size_t len, const char *source,
		     mms_config_error_t *err)
{
	if (!read_value(k, v, len, c))
		return 0;
	if (err && !c->bad) {
		copy_cut(err->source, sizeof err->source, source, strlen(source));
		copy_cut(err->key, sizeof err->key, k->name, strlen(k->name));
		copy_cut(err->value, sizeof err->value, v, len);
		err->expected = k->expected;
	}
	c->bad++;
	return -EINVAL;
}

/* ---- the API ---- */

CONF_API void mms_config_default(mms_config_t *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	for (size_t i = 0; i < mms__conf_nkeys; i++)
		read_value(&mms__conf_keys[i], mms__conf_keys[i].dflt, strlen(mms__conf_keys[i].dflt), cfg);
}

static int parse_from(mms_config_t *cfg, const char *text, size_t len, const char *source, mms_config_error_t *err)
{
	const char *p = text, *end = text + len;
	int rc = 0;

	while (p < end) {
		const char *semi = memchr(p, ';', (size_t)(end - p)), *stop = semi ? semi : end;
		const char *eq = memchr(p, '=', (size_t)(stop - p));
		const struct mms_conf_key *k = eq ? find_key(p, (size_t)(eq - p)) : NULL;

		if (k) {
			if (set_value(cfg, k, eq + 1, (size_t)(stop - eq - 1), source, err))
				rc = -EINVAL;
		} else if (stop > p) {
			if (err && !cfg->unknown)
				copy_cut(err->unknown, sizeof err->unknown, p, (size_t)((eq ? eq : stop) - p));
			cfg->unknown++;
		}
		p = stop + 1;
	}
	return rc;
}

CONF_API int mms_config_parse(mms_config_t *cfg, const char *text, size_t len, mms_config_error_t *err)
{
	return parse_from(cfg, text, len, "MSMEMSCOPE_CONFIG", err);
}

CONF_API int mms_config_set(mms_config_t *cfg, const char *key, const char *value, size_t len, mms_config_error_t *err)
{
	const struct mms_conf_key *k = find_key(key, strlen(key));

	if (!k)
		return -ENOENT;
	return set_value(cfg, k, value, len, "MSMEMSCOPE_CONFIG", err);
}

CONF_API int mms_config_getenv(mms_config_t *cfg, const char *text, mms_config_error_t *err)
{
	int rc;

	mms_config_default(cfg);
	if (!text)
		text = getenv("MSMEMSCOPE_CONFIG");
	rc = text ? mms_config_parse(cfg, text, strlen(text), err) : 0;
	for (size_t i = 0; i < mms__conf_nkeys; i++) {
		const struct mms_conf_key *k = &mms__conf_keys[i];
		const char *v = k->env ? getenv(k->env) : NULL;

		if (v && *v && set_value(cfg, k, v, strlen(v), k->env, err))
			rc = -EINVAL;
	}
	return rc;
}

/* ---- writing ---- */

/* Appends to a text of cap bytes at buf, counting what does not fit. */
struct out {
	char *buf;
	size_t cap, len;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len < o->cap) {
		size_t room = o->cap - 1 - o->len;
		memcpy(o->buf + o->len, s, n < room ? n : room);
	}
	o->len += n;
}

static void put_s(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void put_u(struct out *o, uint64_t v)
{
	char d[24], *p = d + sizeof d;

	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	put(o, p, (size_t)(d + sizeof d - p));
}

static void write_value(struct out *o, const struct mms_conf_key *k, const mms_config_t *c)
{
	const char *field = (const char *)c + k->offset;

	switch (k->type) {
	case MMS_CONF_UINT:
	case MMS_CONF_BOOL:
		put_u(o, *(const uint32_t *)field);
		break;
	case MMS_CONF_ENUM: {
		int v = *(const int *)field, n = 0;

		while (k->names[n])
			n++;
		if (v >= 0 && v < n)
			put_s(o, k->names[v]);
		else
			put_u(o, (uint64_t)(unsigned)v); /* reads back as bad */
		break;
	}
	case MMS_CONF_SIZE: {
		uint64_t v = *(const uint64_t *)field;
		const char *unit = "";

		for (const char *u = "GMK"; *u && !*unit; u++) {
			unsigned shift = *u == 'G' ? 30 : *u == 'M' ? 20 : 10;
			if (v && !(v & ((1ull << shift) - 1))) {
				v >>= shift;
				unit = *u == 'G' ? "G" : *u == 'M' ? "M" : "K";
			}
		}
		put_u(o, v);
		put_s(o, unit);
		break;
	}
	case MMS_CONF_EVENTS: {
		uint32_t m = *(const uint32_t *)field;
		int first = 1;

		for (int i = 0; k->names[i]; i++) {
			if (!(m & (1u << i)))
				continue;
			if (!first)
				put_s(o, ",");
			put_s(o, k->names[i]);
			first = 0;
		}
		break;
	}
	case MMS_CONF_STEPS:
		for (uint32_t i = 0; i < c->nsteps && i < MMS_CONFIG_STEPS_MAX; i++) {
			if (i)
				put_s(o, ",");
			put_u(o, c->steps[i]);
		}
		break;
	case MMS_CONF_ORDINALS: {
		uint64_t m = *(const uint64_t *)field;
		int first = 1;

		for (unsigned i = 0; i < 64; i++) {
			if (!(m >> i & 1))
				continue;
			if (!first)
				put_s(o, ",");
			put_u(o, i);
			first = 0;
		}
		break;
	}
	case MMS_CONF_WATCH:
		if (!c->watch.on)
			break;
		if (c->watch.start[0]) {
			put(o, c->watch.start, strnlen(c->watch.start, MMS_CONFIG_NAME_MAX));
			if (c->watch.out >= 0) {
				put_s(o, ":out");
				put_u(o, (uint64_t)c->watch.out);
			}
			put_s(o, ",");
		}
		put(o, c->watch.end, strnlen(c->watch.end, MMS_CONFIG_NAME_MAX));
		if (c->watch.full_content)
			put_s(o, ",full-content");
		break;
	}
}

CONF_API size_t mms_config_format(const mms_config_t *cfg, char *buf, size_t cap)
{
	struct out o = { buf, cap, 0 };

	for (size_t i = 0; i < mms__conf_nkeys; i++) {
		const struct mms_conf_key *k = &mms__conf_keys[i];
		char val[256];
		struct out v = { val, sizeof val, 0 };

		write_value(&v, k, cfg);
		if (v.len >= sizeof val)
			v.len = sizeof val - 1; /* longer than any value parses */
		if (!(k->flags & MMS_CONF_ALWAYS) && v.len == strlen(k->dflt) && !memcmp(val, k->dflt, v.len))
			continue;
		if (o.len)
			put_s(&o, ";");
		put_s(&o, k->name);
		put_s(&o, "=");
		put(&o, val, v.len);
	}
	if (cap)
		buf[o.len < cap ? o.len : cap - 1] = 0;
	return o.len;
}
