/* SPDX-License-Identifier: MIT */
/* guard.c: the guard analysis, a subscriber of a pass: lists the findings
 * guard mode's checks wrote into the log (GUARD events) with their block,
 * its allocation and free, and the window in which the damage happened,
 * turned from what the recorder knew (the allocation, the free, or the
 * last full check) into event ids. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "msmemscope/analysis.h"
#include "msmemscope/config.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "base-int.h"
#include "log-int.h"
#include "pass-int.h"
#include "state-int.h"
#include "track-int.h"

/* The public names of the format's guard codes. */
_Static_assert((int)MMS_GUARD_FOUND_OVERFLOW == (int)MMS_GUARD_OVERFLOW && (int)MMS_GUARD_FOUND_UNDERFLOW == (int)MMS_GUARD_UNDERFLOW &&
		       (int)MMS_GUARD_FOUND_WRITE_AFTER_FREE == (int)MMS_GUARD_WRITE_AFTER_FREE &&
		       (int)MMS_GUARD_FOUND_DOUBLE_FREE == (int)MMS_GUARD_DOUBLE_FREE &&
		       (int)MMS_GUARD_FOUND_INVALID_FREE == (int)MMS_GUARD_INVALID_FREE &&
		       (int)MMS_GUARD_FOUND_MISMATCHED_FREE == (int)MMS_GUARD_MISMATCHED_FREE,
	       "guard finding kinds");
_Static_assert((int)MMS_GUARD_FROM_MALLOC == (int)MMS_GUARD_FAMILY_MALLOC && (int)MMS_GUARD_FROM_NEW == (int)MMS_GUARD_FAMILY_NEW &&
		       (int)MMS_GUARD_FROM_NEW_ARRAY == (int)MMS_GUARD_FAMILY_NEW_ARRAY &&
		       (int)MMS_GUARD_FROM_MEMALIGN == (int)MMS_GUARD_FAMILY_MEMALIGN && (int)MMS_GUARD_FROM_PLAIN == (int)MMS_GUARD_FAMILY_PLAIN,
	       "guard families");
_Static_assert((int)MMS_GUARD_SINCE_ALLOCATION == (int)MMS_GUARD_SINCE_ALLOC && (int)MMS_GUARD_SINCE_FREEING == (int)MMS_GUARD_SINCE_FREE &&
		       (int)MMS_GUARD_SINCE_LAST_CHECK == (int)MMS_GUARD_SINCE_CHECK && (int)MMS_GUARD_NO_WINDOW == (int)MMS_GUARD_SINCE_NONE,
	       "guard windows");
_Static_assert((int)MMS_GUARD_FOUND_UNKNOWN == (int)MMS_GUARD_BY_UNKNOWN &&
		       (int)MMS_GUARD_FOUND_BY_CHECK == (int)MMS_GUARD_BY_CHECK &&
		       (int)MMS_GUARD_FOUND_BY_RELEASE == (int)MMS_GUARD_BY_RELEASE &&
		       (int)MMS_GUARD_FOUND_BY_QUARANTINE == (int)MMS_GUARD_BY_QUARANTINE,
	       "guard checks");

/* The last frees remembered for the windows of findings in freed blocks:
 * twice the blocks a quarantine holds at most (the recorder's
 * QUARANTINE_SLOTS, 65536), for the frees of blocks never quarantined
 * between them (a write after free is found at the latest when its block
 * leaves the quarantine, a double free while the first is still there).
 * A ring: the oldest goes as a free comes. About 5 MiB at most. */
#define FREED_RING ((size_t)1 << 17)

/* What the window counts, at some event. */
struct marks {
	uint64_t steps, launches;
};

/* The last operator launch begun: its number and name (the log's). */
struct last_launch {
	uint64_t launch;
	const char *name;
};

struct freed {
	uint64_t addr, alloc_event, free_event;
	struct marks at;
};

struct gpass {
	struct mms__sub sub;
	mms_guard_t *res;
	size_t cap;
	size_t data_off;        /* per live block: struct marks at its allocation */
	struct marks now;
	struct last_launch last;
	uint64_t check_event;   /* the last full check, UINT64_MAX: none */
	struct marks at_check;
	/* The full check before it: the window of a finding of the check in
	 * progress (its findings follow its CHECK event on its thread, with
	 * nothing else of that thread between). */
	uint64_t prev_check_event;
	struct marks at_prev_check;
	uint32_t check_thread;
	int in_check;
	struct mms__map freed_ix; /* addr -> 1 + index into freed, of its last free */
	struct freed *freed;      /* a ring of FREED_RING once full */
	uint64_t nfreed;          /* frees noted */
	size_t freed_cap;
};

MMS__EXPORT const char *mms_guard_kind_name(unsigned kind)
{
	static const char *const names[] = { NULL, "overflow", "underflow", "write_after_free", "double_free",
					     "invalid_free", "mismatched_free" };

	return kind < sizeof names / sizeof *names ? names[kind] : NULL;
}

MMS__EXPORT const char *mms_guard_family_name(unsigned family)
{
	static const char *const names[] = { "malloc", "new", "new[]", "memalign" };

	return family < sizeof names / sizeof *names ? names[family] : NULL;
}

static int freed_note(struct gpass *g, uint64_t addr, uint64_t alloc_event, uint64_t free_event)
{
	size_t i = (size_t)(g->nfreed % FREED_RING);
	uint64_t *v;

	if (g->nfreed >= FREED_RING) {
		/* The oldest goes, and its address with it unless a later
		 * free of it is what the index holds. */
		mms__map_del_if(&g->freed_ix, g->freed[i].addr, i + 1);
	} else if (i == g->freed_cap) {
		size_t cap = g->freed_cap ? g->freed_cap * 2 : 1024;
		struct freed *n = realloc(g->freed, cap * sizeof *n);

		if (!n)
			return -ENOMEM;
		g->freed = n;
		g->freed_cap = cap;
	}
	g->freed[i] = (struct freed){ addr, alloc_event, free_event, g->now };
	v = mms__map_put(&g->freed_ix, addr, NULL);
	if (!v)
		return -ENOMEM;
	*v = i + 1;
	g->nfreed++;
	return 0;
}

static const struct freed *freed_get(const struct gpass *g, uint64_t addr)
{
	const uint64_t *v = mms__map_get(&g->freed_ix, addr);

	return v && *v && *v <= g->freed_cap && g->freed[*v - 1].addr == addr ? &g->freed[*v - 1] : NULL;
}

static int finding(struct gpass *g, struct mms_pass *p, const mms_event_t *ev)
{
	mms_guard_t *res = g->res;
	mms_guard_finding_t *f;
	const struct mms__blk *b;
	const struct freed *fr;
	struct marks since = { 0, 0 };
	int known = 0;

	if (res->nfindings == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 16;
		mms_guard_finding_t *n = realloc(res->findings, cap * sizeof *n);

		if (!n)
			return -ENOMEM;
		res->findings = n;
		g->cap = cap;
	}
	f = &res->findings[res->nfindings++];
	memset(f, 0, sizeof *f);
	f->kind = ev->sub;
	f->event = ev->id;
	f->thread = ev->thread;
	f->addr = ev->addr;
	f->size = ev->size;
	f->family = (unsigned)(ev->flags & 0xf);
	f->since = (unsigned)((ev->flags >> 4) & 0x3);
	f->found_by = (unsigned)((ev->flags >> 6) & 0x3);
	f->alloc_fn = (unsigned)((ev->flags >> 8) & 0xff);
	f->length = ev->flags >> 16;
	f->offset = (int64_t)ev->total;
	f->nbytes = f->length < 8 ? (unsigned)f->length : 8;
	for (unsigned i = 0; i < f->nbytes; i++)
		f->bytes[i] = (uint8_t)(ev->used >> (8 * i));
	f->alloc_stack = ev->stack;
	f->free_stack = (uint32_t)ev->range_id;
	f->at_stack = (uint32_t)(ev->range_id >> 32);
	f->alloc_event = f->free_event = f->since_event = UINT64_MAX;
	if (f->kind < sizeof res->by_kind / sizeof *res->by_kind)
		res->by_kind[f->kind]++;
	/* The block: live (damage found at a check or a free), or freed and
	 * remembered (a quarantined block, a double free). */
	b = mms__state_find(mms__pass_state(p), f->addr);
	if (b && b->addr == f->addr && b->mem == MMS_MEM_HOST && f->kind != MMS_GUARD_WRITE_AFTER_FREE &&
	    f->kind != MMS_GUARD_DOUBLE_FREE) {
		const struct marks *m = mms__pass_data_of(p, b, g->data_off);

		f->alloc_event = b->alloc_event;
		if (f->since == MMS_GUARD_SINCE_ALLOC) {
			f->since_event = b->alloc_event;
			if (m)
				since = *m;
			known = m != NULL;
		}
	} else if ((fr = freed_get(g, f->addr))) {
		f->alloc_event = fr->alloc_event;
		f->free_event = fr->free_event;
		if (f->since == MMS_GUARD_SINCE_FREE) {
			f->since_event = fr->free_event;
			since = fr->at;
			known = 1;
		}
	}
	if (f->since == MMS_GUARD_SINCE_CHECK) {
		/* The recorder's "since the last check" is the check before
		 * the one that found the damage. */
		int current = g->in_check && ev->thread == g->check_thread;
		uint64_t at = current ? g->prev_check_event : g->check_event;

		if (at != UINT64_MAX) {
			f->since_event = at;
			since = current ? g->at_prev_check : g->at_check;
			known = 1;
		}
	}
	if (known) {
		f->steps_in_window = g->now.steps - since.steps;
		f->launches_in_window = g->now.launches - since.launches;
		if (f->launches_in_window) {
			f->last_launch = g->last.launch;
			f->last_op = g->last.name;
		}
	}
	return 0;
}

static int gpass_begin(struct mms__sub *s, struct mms_pass *p)
{
	struct gpass *g = (struct gpass *)s;
	mms_config_t cfg;

	if (!mms_log_config(p->log, &cfg))
		g->res->guard_on = cfg.guard;
	return 0;
}

static int gpass_event(struct mms__sub *s, struct mms_pass *p, const mms_event_t *ev)
{
	struct gpass *g = (struct gpass *)s;
	mms_block_t blk;

	if (g->in_check && ev->thread == g->check_thread && ev->kind != MMS_EV_GUARD)
		g->in_check = 0;
	switch (ev->kind) {
	case MMS_EV_MALLOC:
		if (ev->mem == MMS_MEM_HOST) {
			struct marks *m = mms__pass_data(p, g->data_off);

			if (m)
				*m = g->now;
		}
		return 0;
	case MMS_EV_FREE:
		if (ev->mem == MMS_MEM_HOST && mms__state_event_block(mms__pass_state(p), ev, &blk))
			return freed_note(g, ev->addr, blk.alloc_event, ev->id);
		return 0;
	case MMS_EV_STEP:
		if (mms__log_step_counts(mms__pass_state(p)->log, ev->sub))
			g->now.steps++;
		return 0;
	case MMS_EV_MSTX:
		if (ev->sub == 1 && ev->name && !strcmp(ev->name, "step start"))
			g->now.steps++;
		return 0;
	case MMS_EV_OP_LAUNCH:
		if (ev->sub == 0) {
			g->now.launches++;
			g->last.launch = g->now.launches;
			g->last.name = ev->name;
		}
		return 0;
	case MMS_EV_GUARD:
		if (ev->sub == MMS_GUARD_CHECK) {
			g->res->checks++;
			g->prev_check_event = g->check_event;
			g->at_prev_check = g->at_check;
			g->check_event = ev->id;
			g->at_check = g->now;
			g->check_thread = ev->thread;
			g->in_check = 1;
			return 0;
		}
		return finding(g, p, ev);
	default:
		return 0;
	}
}

static void gpass_drop(struct mms__sub *s)
{
	struct gpass *g = (struct gpass *)s;

	mms__map_free(&g->freed_ix);
	free(g->freed);
	free(g);
}

MMS__EXPORT void mms_guard_free(mms_guard_t *res)
{
	if (!res)
		return;
	free(res->findings);
	free(res);
}

MMS__EXPORT int mms_guard_add(mms_pass_t *pass, const mms_guard_options_t *opt, mms_guard_t **out)
{
	struct gpass *g;
	int rc;

	(void)opt;
	if (!out)
		return MMS_EUSAGE;
	*out = NULL;
	if (!pass)
		return MMS_EUSAGE;
	g = calloc(1, sizeof *g);
	*out = calloc(1, sizeof **out);
	if (!g || !*out) {
		free(g);
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	g->res = *out;
	g->check_event = g->prev_check_event = UINT64_MAX;
	mms__map_init(&g->freed_ix);
	g->data_off = mms__pass_attach(pass, sizeof(struct marks));
	g->sub.name = "guard";
	g->sub.kinds = 1u << MMS_EV_GUARD | 1u << MMS_EV_MALLOC | 1u << MMS_EV_FREE | 1u << MMS_EV_STEP |
		       1u << MMS_EV_MSTX | 1u << MMS_EV_OP_LAUNCH;
	g->sub.begin = gpass_begin;
	g->sub.event = gpass_event;
	g->sub.drop = gpass_drop;
	g->sub.status = &(*out)->status;
	rc = mms__pass_add(pass, &g->sub);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

MMS__RUN_ONE(guard, mms_guard_options_t, mms_guard_t)
