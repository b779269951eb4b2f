/* SPDX-License-Identifier: MIT */
/* index.c: the index beside a log (LOG.idx): where each step begins and
 * ends, and checkpoints of the heap state every so many events; built by
 * a subscriber of one pass over the whole log, stored, and reloaded while
 * the log is unchanged. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/pass.h"
#include "msmemscope/replay.h"
#include "base-int.h"
#include "index-int.h"
#include "outfile-int.h"
#include "pass-int.h"
#include "state-int.h"
#include "track-int.h"

#define INDEX_MAGIC "MMSINDEX"
/* 8: the log's names with their control characters written \xHH
 * (meta.c): checkpoints keep strings by their offset in the log's
 * arena, which moved. 10: checkpoints keep the state's unchecked frees
 * (ownops.c). 12: and whether collection is on (--steps, deferred). 13: a
 * fork child's steps continue its parent's numbering. */
#define INDEX_VERSION 13

/* The file: this header, then nsteps (begin, end) pairs, then nckpts
 * (pos, offset, length) triples, then nforks (number, id) pairs, then the
 * checkpoints' bytes. Native byte order: the index is a cache of this
 * machine, rebuilt when unusable. */
struct index_file_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	/* The log it indexes, as last seen. */
	uint64_t log_size, log_dev, log_ino, log_mtime_ns;
	uint64_t log_nchunks, log_last_stamp, log_events;
	uint32_t log_flags;
	int32_t stop_rc;
	/* What a fork child's replays start from (log->inh): rebuilt when
	 * the parent's log turns up, goes, or changes. */
	uint32_t inherit_state, pad2;
	uint64_t inherit_blocks, inherit_bytes, inherit_event;
	uint64_t events, every;
	uint32_t step_kind, pad;
	uint64_t nsteps, nckpts, blobs_len, nforks;
};

void mms__index_free(struct mms__index *ix)
{
	free(ix->steps);
	free(ix->ckpts);
	free(ix->blobs);
	free(ix->forks);
	memset(ix, 0, sizeof(*ix));
}

static int add_ckpt(struct mms__index *ix, const struct mms__state *st, const mms_iter_t *it)
{
	uint8_t *buf, *nb;
	size_t len, ncap;
	int rc;

	rc = mms__ckpt_save(st, it, &buf, &len);
	if (rc)
		return rc;
	if (mms__grow(&ix->ckpts, &ix->ckpts_cap, ix->nckpts, sizeof(*ix->ckpts)))
		goto fail;
	if (ix->blobs_cap - ix->blobs_len < len) {
		ncap = ix->blobs_cap ? ix->blobs_cap : 1 << 16;
		while (ncap - ix->blobs_len < len)
			ncap *= 2;
		nb = realloc(ix->blobs, ncap);
		if (!nb)
			goto fail;
		ix->blobs = nb;
		ix->blobs_cap = ncap;
	}
	memcpy(ix->blobs + ix->blobs_len, buf, len);
	ix->ckpts[ix->nckpts].pos = st->pos;
	ix->ckpts[ix->nckpts].off = ix->blobs_len;
	ix->ckpts[ix->nckpts].len = len;
	ix->nckpts++;
	ix->blobs_len += len;
	free(buf);
	return 0;
fail:
	free(buf);
	return -ENOMEM;
}

static int fork_add(struct mms__index *ix, const mms_event_t *ev)
{
	if (mms__grow(&ix->forks, &ix->forks_cap, ix->nforks, sizeof(*ix->forks)))
		return -ENOMEM;
	ix->forks[ix->nforks].number = ev->total;
	ix->forks[ix->nforks++].id = ev->id;
	return 0;
}

/* Copies the steps the tracker found into the index. */
static int steps_from(struct mms__index *ix, const struct mms__track *t)
{
	size_t i;

	if (!t->nsteps)
		return 0;
	ix->steps = malloc(t->nsteps * sizeof(*ix->steps));
	if (!ix->steps)
		return -ENOMEM;
	for (i = 0; i < t->nsteps; i++) {
		ix->steps[i].begin = t->steps[i].begin;
		ix->steps[i].end = t->steps[i].end;
	}
	ix->nsteps = ix->steps_cap = t->nsteps;
	return 0;
}

/* The index builder, a subscriber of a pass: checkpoints every so many
 * events, the FORK events, and at the end the steps the pass followed. */
struct ixsub {
	struct mms__sub sub;
	struct mms__index *ix;
	uint64_t every, last;
};

static int ix_event(struct mms__sub *sub, struct mms_pass *p, const mms_event_t *ev)
{
	struct ixsub *s = (struct ixsub *)sub;
	const struct mms__state *st = mms__pass_state(p);
	uint64_t live;
	int rc;

	/* Where each fork child's heap is found (inherit.c). */
	if (ev->kind == MMS_EV_SYSTEM && ev->sub == MMS_SYSTEM_FORK && (rc = fork_add(s->ix, ev)))
		return rc;
	if (st->pos - s->last < s->every)
		return 0;
	/* A checkpoint costs about what its live blocks do: space them so
	 * the index stays a fraction of the log, however much is live. */
	live = st->mem[0].live_blocks + st->mem[1].live_blocks + st->mem[2].live_blocks;
	if (st->pos - s->last < 8 * live)
		return 0;
	rc = add_ckpt(s->ix, st, mms__pass_iter(p));
	if (!rc)
		s->last = st->pos;
	return rc;
}

/* Damage stops the replay where it is; the index covers what came before
 * and remembers why it stops. */
static int ix_end(struct mms__sub *sub, struct mms_pass *p)
{
	struct ixsub *s = (struct ixsub *)sub;
	const struct mms__state *st = mms__pass_state(p);

	s->ix->stop_rc = p->stop_rc;
	s->ix->events = st->pos;
	s->ix->step_kind = st->step_kind;
	return steps_from(s->ix, mms__pass_track(p));
}

static void ix_drop(struct mms__sub *sub)
{
	free(sub);
}

int mms__index_build(mms_log_t *log, const mms_replay_options_t *opt, struct mms__index *ix)
{
	mms_pass_options_t po = { 0 };
	struct ixsub *s;
	mms_pass_t *p;
	int rc, status = 0;

	memset(ix, 0, sizeof(*ix));
	ix->every = opt && opt->checkpoint_every ? opt->checkpoint_every : (uint64_t)1 << 20;
	if (opt) {
		po.progress = opt->progress;
		po.progress_ctx = opt->progress_ctx;
	}
	rc = mms_pass_open(log, &po, &p);
	if (rc)
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s) {
		mms_pass_close(p);
		return -ENOMEM;
	}
	s->ix = ix;
	s->every = ix->every;
	s->sub.name = "index";
	s->sub.kinds = ~0u;
	s->sub.track = MMS__TRACK_STEPS;
	s->sub.event = ix_event;
	s->sub.end = ix_end;
	s->sub.drop = ix_drop;
	s->sub.status = &status;
	rc = mms__pass_add(p, &s->sub);
	if (!rc)
		rc = mms_pass_run(p);
	mms_pass_close(p);
	if (!rc)
		rc = status;
	if (rc)
		mms__index_free(ix);
	return rc;
}

/* --- the file ------------------------------------------------------------- */

static void fill_header(const mms_log_t *log, const struct mms__index *ix, struct index_file_header *h)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, INDEX_MAGIC, 8);
	h->version = INDEX_VERSION;
	h->header_size = sizeof(*h);
	h->log_size = log->size;
	h->log_dev = log->dev;
	h->log_ino = log->ino;
	h->log_mtime_ns = log->mtime_ns;
	h->log_nchunks = log->hdr.nchunks;
	h->log_last_stamp = log->hdr.last_stamp;
	h->log_events = log->events;
	h->log_flags = log->hdr.flags;
	h->inherit_state = (uint32_t)log->inh.state;
	for (int k = 0; k < MMS_MEM_KIND_COUNT; k++) {
		h->inherit_blocks += log->inh.blocks[k];
		h->inherit_bytes += log->inh.bytes[k];
	}
	h->inherit_event = log->inh.fork_event;
	h->stop_rc = ix->stop_rc;
	h->events = ix->events;
	h->every = ix->every;
	h->step_kind = (uint32_t)ix->step_kind;
	h->nsteps = ix->nsteps;
	h->nckpts = ix->nckpts;
	h->blobs_len = ix->blobs_len;
	h->nforks = ix->nforks;
}

/* Whether path holds something other than an index of ours (which we
 * must then leave alone). */
static int foreign_file(const char *path)
{
	char magic[8];
	struct stat st;
	ssize_t n;
	int fd;

	if (lstat(path, &st))
		return 0;
	if (!S_ISREG(st.st_mode))
		return 1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 1;
	n = read(fd, magic, sizeof(magic));
	close(fd);
	return n != (ssize_t)sizeof(magic) || memcmp(magic, INDEX_MAGIC, 8);
}

int mms__index_store(const mms_log_t *log, const char *path, const struct mms__index *ix)
{
	struct index_file_header h;
	struct mms__outfile f;
	int fd, rc;

	if (foreign_file(path))
		return -EEXIST;
	/* Written under a temporary name and renamed into place whole, so a
	 * reader never sees half an index. */
	fd = mms__outfile_create(&f, path, MMS__OUT_OVERWRITE | MMS__OUT_REGULAR);
	if (fd < 0)
		return fd;
	fill_header(log, ix, &h);
	rc = mms__write_all(fd, &h, sizeof(h));
	if (!rc)
		rc = mms__write_all(fd, ix->steps, ix->nsteps * sizeof(*ix->steps));
	if (!rc)
		rc = mms__write_all(fd, ix->ckpts, ix->nckpts * sizeof(*ix->ckpts));
	if (!rc)
		rc = mms__write_all(fd, ix->forks, ix->nforks * sizeof(*ix->forks));
	if (!rc)
		rc = mms__write_all(fd, ix->blobs, ix->blobs_len);
	if (close(fd) && !rc)
		rc = -errno;
	if (rc)
		mms__outfile_abort(&f);
	else
		rc = mms__outfile_commit(&f);
	return rc;
}

static int read_all(int fd, void *p, size_t n)
{
	char *c = p;
	ssize_t r;

	while (n) {
		r = read(fd, c, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return MMS_ETRUNCATED;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

int mms__index_load(const mms_log_t *log, const char *path, struct mms__index *ix)
{
	struct index_file_header h, want;
	struct stat st;
	uint64_t i, need;
	int fd, rc;

	memset(ix, 0, sizeof(*ix));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	rc = fstat(fd, &st) ? -errno : 0;
	if (!rc && !S_ISREG(st.st_mode))
		rc = MMS_EBADMAGIC;
	if (!rc)
		rc = read_all(fd, &h, sizeof(h));
	if (rc)
		goto out;
	/* Stale or not ours: the caller rebuilds it. */
	fill_header(log, ix, &want);
	if (memcmp(h.magic, INDEX_MAGIC, 8) || h.version != INDEX_VERSION || h.header_size != sizeof(h) ||
	    h.log_size != want.log_size || h.log_dev != want.log_dev || h.log_ino != want.log_ino ||
	    h.log_mtime_ns != want.log_mtime_ns || h.log_nchunks != want.log_nchunks ||
	    h.log_last_stamp != want.log_last_stamp || h.log_events != want.log_events ||
	    h.log_flags != want.log_flags || h.inherit_state != want.inherit_state ||
	    h.inherit_blocks != want.inherit_blocks || h.inherit_bytes != want.inherit_bytes ||
	    h.inherit_event != want.inherit_event) {
		rc = MMS_EVERSION;
		goto out;
	}
	if (h.nsteps > (uint64_t)st.st_size || h.nckpts > (uint64_t)st.st_size || h.blobs_len > (uint64_t)st.st_size ||
	    h.nforks > (uint64_t)st.st_size) {
		rc = MMS_ECORRUPT;
		goto out;
	}
	need = sizeof(h) + h.nsteps * sizeof(*ix->steps) + h.nckpts * sizeof(*ix->ckpts) +
	       h.nforks * sizeof(*ix->forks) + h.blobs_len;
	if (need != (uint64_t)st.st_size || h.step_kind > 2) {
		rc = MMS_ECORRUPT;
		goto out;
	}
	ix->steps = malloc(h.nsteps * sizeof(*ix->steps) + 1);
	ix->ckpts = malloc(h.nckpts * sizeof(*ix->ckpts) + 1);
	ix->blobs = malloc(h.blobs_len + 1);
	ix->forks = malloc(h.nforks * sizeof(*ix->forks) + 1);
	if (!ix->steps || !ix->ckpts || !ix->blobs || !ix->forks) {
		rc = -ENOMEM;
		goto out;
	}
	rc = read_all(fd, ix->steps, h.nsteps * sizeof(*ix->steps));
	if (!rc)
		rc = read_all(fd, ix->ckpts, h.nckpts * sizeof(*ix->ckpts));
	if (!rc)
		rc = read_all(fd, ix->forks, h.nforks * sizeof(*ix->forks));
	if (!rc)
		rc = read_all(fd, ix->blobs, h.blobs_len);
	if (rc)
		goto out;
	ix->nsteps = ix->steps_cap = h.nsteps;
	ix->nckpts = ix->ckpts_cap = h.nckpts;
	ix->blobs_len = ix->blobs_cap = h.blobs_len;
	ix->nforks = ix->forks_cap = h.nforks;
	ix->events = h.events;
	ix->every = h.every;
	ix->stop_rc = h.stop_rc;
	ix->step_kind = (int)h.step_kind;
	/* Checkpoints in order, inside the blobs; steps in order. */
	for (i = 0; i < ix->nckpts; i++)
		if (ix->ckpts[i].off > ix->blobs_len || ix->ckpts[i].len > ix->blobs_len - ix->ckpts[i].off ||
		    ix->ckpts[i].pos > ix->events || (i && ix->ckpts[i].pos <= ix->ckpts[i - 1].pos))
			rc = MMS_ECORRUPT;
	for (i = 0; i < ix->nsteps; i++)
		if (ix->steps[i].begin > ix->steps[i].end || ix->steps[i].end > ix->events)
			rc = MMS_ECORRUPT;
	for (i = 0; i < ix->nforks; i++)
		if (ix->forks[i].id >= ix->events)
			rc = MMS_ECORRUPT;
out:
	close(fd);
	if (rc)
		mms__index_free(ix);
	return rc;
}
