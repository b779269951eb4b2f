/* SPDX-License-Identifier: MIT */
/* meta.c: the log's metadata tables (threads, strings, stacks, modules,
 * META keys) filled by the open pass, and the API that reads them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "base-int.h"
#include "decode-int.h"
#include "log-int.h"
#include "map-int.h"
#include "table-int.h"

/* Copies len bytes and a NUL into the arena; returns the offset or
 * (size_t)-1 when out of memory. Offsets stay valid as the arena grows.
 * So do the strings a followed log handed out already (event names kept
 * by a pass fed while the log grows): its old arenas are kept until
 * mms_log_close(). */
static size_t arena_add(mms_log_t *log, const char *s, size_t len)
{
	size_t off = log->arena_len, ncap;
	char **r, *p;

	if (log->arena_cap - log->arena_len < len + 1) {
		ncap = log->arena_cap ? log->arena_cap : 4096;
		while (ncap - log->arena_len < len + 1)
			ncap *= 2;
		if (log->follow && log->arena) {
			r = realloc(log->retired, (log->nretired + 1) * sizeof(*r));
			if (!r)
				return (size_t)-1;
			log->retired = r;
			p = malloc(ncap);
			if (!p)
				return (size_t)-1;
			memcpy(p, log->arena, log->arena_len);
			log->retired[log->nretired++] = log->arena;
		} else {
			p = realloc(log->arena, ncap);
			if (!p)
				return (size_t)-1;
		}
		log->arena = p;
		log->arena_cap = ncap;
	}
	memcpy(log->arena + off, s, len);
	log->arena[off + len] = '\0';
	log->arena_len += len + 1;
	return off;
}

/* The length of the control character at byte i of s (len bytes), or 0
 * for none: C0 (NUL to US) and DEL, 1; C1 (U+0080 to U+009F) in UTF-8,
 * 2. */
static size_t control_len(const unsigned char *s, size_t len, size_t i)
{
	if (s[i] < 0x20 || s[i] == 0x7f)
		return 1;
	return s[i] == 0xc2 && i + 1 < len && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f ? 2 : 0;
}

/* Like arena_add(), for a name the program gave (operators, owners, pools,
 * marks, threads, Python's files and functions): its control characters
 * are written \xHH, so that no report prints them. A newline in an
 * operator's name would otherwise start a line of the report the program
 * made up, an escape sequence clear the user's terminal. */
static size_t arena_add_name(mms_log_t *log, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i, k, n = len, off;
	char *e, *q;

	for (i = 0; i < len; i++)
		n += 3 * control_len(u, len, i);
	if (n == len)
		return arena_add(log, s, len);
	if (!(e = malloc(n)))
		return (size_t)-1;
	for (i = 0, q = e; i < len;) {
		k = control_len(u, len, i);
		if (!k)
			*q++ = s[i++];
		for (; k; k--, i++) {
			*q++ = '\\';
			*q++ = 'x';
			*q++ = hex[u[i] >> 4];
			*q++ = hex[u[i] & 15];
		}
	}
	off = arena_add(log, e, n);
	free(e);
	return off;
}

/* Copies a record's two string fields; returns 0 or -1 (no memory). */
static int arena_add2(mms_log_t *log, const struct mms__rec *r, size_t *a, size_t *b)
{
	*a = arena_add(log, r->s[0], r->slen[0]);
	*b = arena_add(log, r->s[1], r->slen[1]);
	return *a == (size_t)-1 || *b == (size_t)-1 ? -1 : 0;
}

/* The thread record of index, created on first sight; NULL without memory. */
struct mms__thread *mms__thread_note(mms_log_t *log, uint32_t index)
{
	uint64_t *slot;
	int isnew;

	slot = mms__map_put(&log->thread_ix, index, &isnew);
	if (!slot)
		return NULL;
	if (!isnew)
		return &log->threads[*slot];
	if (mms__grow(&log->threads, &log->threads_cap, log->nthreads, sizeof(*log->threads))) {
		mms__map_del(&log->thread_ix, index, NULL);
		return NULL;
	}
	*slot = log->nthreads;
	log->threads[log->nthreads] = (struct mms__thread){ .index = index };
	return &log->threads[log->nthreads++];
}

/* Makes log->stack_direct hold id (a power of two of entries, zeroed).
 * Returns 0 or -ENOMEM. */
static int direct_fit(mms_log_t *log, uint32_t id)
{
	size_t n = log->stack_direct_n ? log->stack_direct_n : 4096;
	uint32_t *d;

	if (id < log->stack_direct_n)
		return 0;
	while (n <= id)
		n *= 2;
	d = mms__table_alloc(n * sizeof(*d));
	if (!d)
		return -ENOMEM;
	if (log->stack_direct_n)
		memcpy(d, log->stack_direct, log->stack_direct_n * sizeof(*d));
	mms__table_free(log->stack_direct, log->stack_direct_n * sizeof(*d));
	log->stack_direct = d;
	log->stack_direct_n = n;
	return 0;
}

int mms__log_stack_add(mms_log_t *log, uint32_t id, uint64_t parent, uint64_t ip)
{
	uint64_t *slot = NULL;
	int isnew;

	if (id <= MMS__STACK_DIRECT_MAX) {
		/* The recorder's ids: a table, no hashing (a log with deep
		 * stacks defines millions of nodes). */
		if (direct_fit(log, id))
			return -ENOMEM;
		if (log->stack_direct[id])
			return 0;
	} else {
		slot = mms__map_put(&log->stacks, id, &isnew);
		if (!slot)
			return -ENOMEM;
		if (!isnew)
			return 0;
	}
	/* A table (table.c): millions of nodes in a log with deep stacks,
	 * in huge pages rather than 4 KiB page faults. */
	if (mms__table_grow(&log->stack_nodes, &log->stacks_cap, log->nstacks, sizeof(*log->stack_nodes))) {
		if (slot)
			mms__map_del(&log->stacks, id, NULL);
		return -ENOMEM;
	}
	if (slot)
		*slot = log->nstacks;
	else
		log->stack_direct[id] = (uint32_t)log->nstacks + 1;
	log->stack_nodes[log->nstacks][0] = parent;
	log->stack_nodes[log->nstacks++][1] = ip;
	return 0;
}

/* META "tls_busy": (u thread, u address) of a thread's hook guard. */
static int busy_meta(mms_log_t *log, const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	struct mms__thread *t;
	uint64_t index, addr;

	if (mms_get_u(&p, end, &index) || mms_get_u(&p, end, &addr) || index > UINT32_MAX)
		return 0; /* not what this reader knows: ignored, as unknown keys are */
	t = mms__thread_note(log, (uint32_t)index);
	if (!t)
		return -ENOMEM;
	t->busy_addr = addr;
	return 0;
}

int mms__meta_record(mms_log_t *log, const struct mms__rec *r)
{
	struct mms__thread *t;
	uint64_t *slot;
	size_t a, b;
	int isnew;

	switch (r->type) {
	case MMS_TAG_THREAD:
	case MMS_TAG_THREAD_NAME:
		if (r->u[0] > UINT32_MAX)
			return MMS_ECORRUPT;
		t = mms__thread_note(log, (uint32_t)r->u[0]);
		if (!t)
			return -ENOMEM;
		if (r->type == MMS_TAG_THREAD)
			t->tid = r->u[1];
		else
			t->name_id = r->u[1];
		return 0;
	case MMS_TAG_STRING:
		if (!r->u[0])
			return 0;
		slot = mms__map_put(&log->strings, r->u[0], &isnew);
		if (!slot)
			return -ENOMEM;
		if (!isnew) /* the first definition wins */
			return 0;
		a = arena_add_name(log, r->s[0], r->slen[0]);
		if (a == (size_t)-1)
			return -ENOMEM;
		*slot = a;
		return 0;
	case MMS_TAG_STACK:
		if (!r->u[0] || r->u[0] > UINT32_MAX)
			return r->u[0] ? MMS_ECORRUPT : 0;
		return mms__log_stack_add(log, (uint32_t)r->u[0], r->u[1], r->u[2]);
	case MMS_TAG_MODULE:
		if (mms__grow(&log->modules, &log->modules_cap, log->nmodules, sizeof(*log->modules)) ||
		    arena_add2(log, r, &a, &b))
			return -ENOMEM;
		log->modules[log->nmodules++] = (struct mms__module){
			.base = r->u[0], .lo = r->u[1], .hi = r->u[2],
			.path = a, .build_id = b, .build_id_len = r->slen[1],
		};
		if (mms__loader_module(log->arena + a)) {
			log->loader_lo = r->u[1];
			log->loader_hi = r->u[2];
		}
		mms__runtime_module_seen(log, log->arena + a);
		return 0;
	case MMS_TAG_META:
		if (mms__grow(&log->metas, &log->metas_cap, log->nmetas, sizeof(*log->metas)) ||
		    arena_add2(log, r, &a, &b))
			return -ENOMEM;
		log->metas[log->nmetas++] = (struct mms__meta){
			.key = a, .value = b, .value_len = r->slen[1],
		};
		if (r->slen[0] == 8 && !memcmp(r->s[0], "tls_busy", 8))
			return busy_meta(log, (const uint8_t *)r->s[1], r->slen[1]);
		return 0;
	case MMS_TAG_LOST:
		log->info.lost_events += r->u[0];
		return 0;
	case MMS_TAG_REACH_REGIONS:
	case MMS_TAG_REACH_REFS:
		return mms__reach_note(log, r);
	case MMS_TAG_PYCODE:
		if (!r->u[0] || r->u[0] > MMS_PYCODE_MAX)
			return r->u[0] ? MMS_ECORRUPT : 0;
		slot = mms__map_put(&log->pycode_ix, r->u[0], &isnew);
		if (!slot)
			return -ENOMEM;
		if (!isnew) /* the first definition wins */
			return 0;
		if (mms__grow(&log->pycodes, &log->pycodes_cap, log->npycodes, sizeof(*log->pycodes)) ||
		    (a = arena_add_name(log, r->s[0], r->slen[0])) == (size_t)-1 ||
		    (b = arena_add_name(log, r->s[1], r->slen[1])) == (size_t)-1) {
			mms__map_del(&log->pycode_ix, r->u[0], NULL);
			return -ENOMEM;
		}
		*slot = log->npycodes;
		log->pycodes[log->npycodes++] = (struct mms__pycode){ .file = a, .name = b, .firstline = r->u[1] };
		return 0;
	default:
		return 0;
	}
}

void mms__meta_free(mms_log_t *log)
{
	mms__reach_free(log);
	mms__map_free(&log->strings);
	mms__map_free(&log->pycode_ix);
	free(log->pycodes);
	mms__map_free(&log->stacks);
	mms__table_free(log->stack_direct, log->stack_direct_n * sizeof(*log->stack_direct));
	mms__map_free(&log->thread_ix);
	free(log->arena);
	while (log->nretired)
		free(log->retired[--log->nretired]);
	free(log->retired);
	mms__table_free(log->stack_nodes, log->stacks_cap * sizeof(*log->stack_nodes));
	free(log->threads);
	free(log->modules);
	free(log->metas);
}

int mms__log_pycode(const mms_log_t *log, uint32_t id, const char **file, const char **name, uint32_t *firstline)
{
	const uint64_t *ix = id ? mms__map_get(&log->pycode_ix, id) : NULL;
	const struct mms__pycode *c;

	if (!ix)
		return -1;
	c = &log->pycodes[*ix];
	*file = log->arena + c->file;
	*name = log->arena + c->name;
	*firstline = (uint32_t)(c->firstline > UINT32_MAX ? 0 : c->firstline);
	return 0;
}

const char *mms__log_string(const mms_log_t *log, uint64_t id)
{
	const uint64_t *off = id ? mms__map_get(&log->strings, id) : NULL;

	return off ? log->arena + *off : NULL;
}

MMS__EXPORT int mms_log_thread(const mms_log_t *log, uint32_t thread, uint64_t *tid, const char **name)
{
	const struct mms__thread *t;

	if (!log || thread >= log->nthreads)
		return MMS_EUSAGE;
	t = &log->threads[thread];
	if (tid)
		*tid = t->tid;
	if (name)
		*name = mms__log_string(log, t->name_id);
	return 0;
}

MMS__EXPORT int mms_log_meta(const mms_log_t *log, const char *key, const char **value, size_t *len)
{
	size_t i;

	if (!log || !key)
		return MMS_EUSAGE;
	for (i = 0; i < log->nmetas; i++) {
		if (strcmp(log->arena + log->metas[i].key, key))
			continue;
		if (value)
			*value = log->arena + log->metas[i].value;
		if (len)
			*len = log->metas[i].value_len;
		return 0;
	}
	return MMS_EUSAGE;
}

/* A stack id that does not resolve: the log's info counts it. The log
 * is the caller's, which made it writable; only the counter changes. */
static int stack_damaged(const mms_log_t *log)
{
	__atomic_fetch_add(&((mms_log_t *)log)->bad_stacks, 1, __ATOMIC_RELAXED);
	return MMS_ECORRUPT;
}

MMS__EXPORT int mms_log_stack(const mms_log_t *log, uint32_t id, uint64_t *ips, size_t max)
{
	int64_t slot;
	uint64_t cur = id, resume = 0, ip;
	size_t depth = 0, visits = 0;
	int grafted = 0;

	if (!log || (max && !ips))
		return MMS_EUSAGE;
	for (;;) {
		if (!cur) {
			/* The end of a graft's Python frames: its C frames. */
			if (!resume)
				break;
			cur = resume;
			resume = 0;
		}
		/* A well-formed tree is never deeper than its node count. */
		if (visits > log->nstacks || depth >= INT32_MAX)
			return stack_damaged(log);
		slot = mms__log_stack_ix(log, cur);
		if (slot < 0)
			return stack_damaged(log);
		visits++;
		ip = log->stack_nodes[slot][1];
		if (mms_is_pygraft(ip)) {
			/* Version 11: the Python frames it names, then its
			 * parent's; one graft per stack. */
			if (grafted++)
				return stack_damaged(log);
			resume = log->stack_nodes[slot][0];
			cur = (uint32_t)ip;
			continue;
		}
		if (depth < max)
			ips[depth] = ip;
		depth++;
		cur = log->stack_nodes[slot][0];
	}
	return (int)depth;
}

int mms__log_stack(const mms_log_t *log, uint32_t id, uint64_t *ips, size_t max)
{
	int depth = mms_log_stack(log, id, ips, max);

	return depth == MMS_ECORRUPT ? 0 : depth;
}

MMS__EXPORT int mms_log_module(const mms_log_t *log, size_t i, mms_module_t *mod)
{
	const struct mms__module *m;

	if (!log)
		return MMS_EUSAGE;
	if (!mod)
		return log->nmodules > INT32_MAX ? INT32_MAX : (int)log->nmodules;
	if (i >= log->nmodules)
		return MMS_EUSAGE;
	m = &log->modules[i];
	mod->base = m->base;
	mod->lo = m->lo;
	mod->hi = m->hi;
	mod->path = log->arena + m->path;
	mod->build_id = (const uint8_t *)log->arena + m->build_id;
	mod->build_id_len = m->build_id_len;
	return 0;
}
