/* SPDX-License-Identifier: MIT */
/* transform-int.h: what the transform writers share: the selected
 * allocations grouped by (stack, thread, allocator) by a subscriber of a
 * pass, and the output buffer with the symbolized frames of a stack. */
#ifndef MMS_TRANSFORM_INT_H
#define MMS_TRANSFORM_INT_H

#include "msmemscope/export.h"
#include "msmemscope/log.h"
#include "msmemscope/symbolize.h"
#include "export-int.h"
#include "map-int.h"
#include "outfile-int.h"
#include "pass-int.h"
#include "state-int.h"

/* Frames one address may expand to (inlined functions); as symbolize.c. */
#define MMS__XF_MAX_FRAMES 64

/* One output row: the allocations of one stack, thread and allocator. */
struct mms__xf_group {
	uint32_t stack, thread, allocator;
	uint64_t count, bytes;
};

/* A block of the peak's live set freed since the peak (see on_event()). */
struct mms__xf_gone {
	uint32_t group;
	uint32_t whole; /* 1: the whole block went (counts as an allocation) */
	uint64_t bytes;
};

/* Per-thread window of the last n + 1 allocation ids (temporary rule). */
struct mms__xf_window {
	uint64_t *ids;
	size_t cap, len, head; /* ring: len used of cap, oldest at head */
	uint64_t count;        /* the thread's allocations so far */
};

struct mms__xf {
	struct mms__sub sub;
	mms_log_t *log;
	const struct mms__state *st;
	mms_transform_options_t opt;  /* path and title: the caller's, until the add */
	char *title;                  /* opt.title, copied */
	mms_transform_t *res;
	struct mms__outfile f;        /* the file, under a temporary name until the end */
	struct mms__xf_out *o;
	int committed;
	int selection;
	uint64_t threshold;
	uint64_t mmap_live;           /* MMAP live bytes after the last event */
	struct mms__rtmemo rtmemo;    /* --leaks: for the verdicts of the blocks live at the end */

	struct mms__map gix;          /* key -> index in groups + 1 */
	struct mms__xf_group *groups; /* after the pass: largest bytes first */
	size_t ngroups, groups_cap;
	const char **pools; /* pool names, in the order first met */
	size_t npools, pools_cap;

	/* Peak: the position just after the event that last reached it,
	 * and the blocks live then but freed since, kept in gone[]. */
	uint64_t peak_bytes, peak_pos;
	struct mms__xf_gone *gone;
	size_t ngone, gone_cap;

	struct mms__xf_window *win; /* by thread number */
	size_t nwin;
	/* A large N: alloc_id of each live block -> its place among its
	 * thread's allocations (window.count then). */
	int by_place;
	struct mms__map place;
	size_t nrows; /* what the writer wrote: rows, events, stacks */
};

struct mms__xf_out {
	int fd;
	struct mms__xbuf b;
	mms_symbolizer_t *sym;
	uint64_t *ips;
	size_t ips_cap;
	mms_frame_t frames[MMS__XF_MAX_FRAMES];
	char scratch[512];
};

/* FNV-1a over n bytes of s, from h (MMS__XF_HASH0 to start): the hash of
 * the names the writers intern. */
#define MMS__XF_HASH0 1469598103934665603ull

static inline uint64_t mms__xf_hash(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

/* The allocator's name of a group: "malloc", "mmap", a pool's name... */
const char *mms__xf_allocator_name(const struct mms__xf *x, uint32_t a);
/* Writes the buffer out once it holds 64 KiB, or always with force.
 * Returns 0 or -errno. */
int mms__xf_flush(struct mms__xf_out *o, int force);
/* Stack id's ips into o->ips, innermost first: returns the depth or a
 * negative code. */
int mms__xf_stack_ips(struct mms__xf_out *o, mms_log_t *log, uint32_t id);
/* Symbolizes one ip into o->frames (innermost inlined first): returns how
 * many, or a negative code. */
int mms__xf_frames(struct mms__xf_out *o, uint64_t ip);
/* A frame's function as text: its name, or "module+0xoff", or "0xip"
 * (then in o->scratch, valid until the next call). */
const char *mms__xf_function(struct mms__xf_out *o, const mms_frame_t *f);
/* The flame graph writer (flamegraph.c): returns 0 or a negative code. */
int mms__xf_flamegraph(struct mms__xf *x, struct mms__xf_out *o);

#endif /* MMS_TRANSFORM_INT_H */
