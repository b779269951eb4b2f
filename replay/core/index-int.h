/* SPDX-License-Identifier: MIT */
/* index-int.h: checkpoints (checkpoint.c), the index of a log (index.c) and
 * the public replay over them (seek.c). */
#ifndef MMS_INDEX_INT_H
#define MMS_INDEX_INT_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope/log.h"
#include "msmemscope/replay.h"
#include "state-int.h"

/* --- checkpoints (checkpoint.c) and the index (index.c) ------------------ */

/* Serializes st and the iterator it stands at (malloc'ed into *out). */
int mms__ckpt_save(const struct mms__state *st, const mms_iter_t *it, uint8_t **out, size_t *outlen);
/* Restores a checkpoint into st (initialized here, with owner strings in
 * ow when not NULL) and opens *it where it stood. Returns 0, MMS_ECORRUPT for bytes that do not fit the log, or
 * -ENOMEM; on failure st needs no freeing. */
int mms__ckpt_restore(mms_log_t *log, const uint8_t *buf, size_t len, struct mms__owners *ow, struct mms__state *st,
		      mms_iter_t **it);

struct mms__step {
	uint64_t begin, end;     /* positions: state before its first event, after its last */
};

struct mms__ckpt_ref {
	uint64_t pos, off, len;  /* position, and where its bytes lie in blobs */
};

/* A FORK event of the log: the fork's number and the event's id. */
struct mms__fork {
	uint64_t number, id;
};

struct mms__index {
	int step_kind;
	int stop_rc;             /* what stopped the build's replay (damage), or 0 */
	uint64_t events;         /* events the build replayed */
	uint64_t every;
	struct mms__step *steps;
	size_t nsteps, steps_cap;
	struct mms__ckpt_ref *ckpts;
	size_t nckpts, ckpts_cap;
	uint8_t *blobs;
	size_t blobs_len, blobs_cap;
	struct mms__fork *forks;  /* in log order */
	size_t nforks, forks_cap;
};

int mms__index_build(mms_log_t *log, const mms_replay_options_t *opt, struct mms__index *ix);
/* Loads the index at path. Returns 0; MMS_EVERSION when it is stale or of
 * another version, MMS_ECORRUPT when malformed, -errno when unreadable. */
int mms__index_load(const mms_log_t *log, const char *path, struct mms__index *ix);
/* Writes the index to path atomically; -EEXIST when path holds something
 * that is not an index (left alone). */
int mms__index_store(const mms_log_t *log, const char *path, const struct mms__index *ix);
void mms__index_free(struct mms__index *ix);

/* The state a public replay drives (seek.c). */
const struct mms__state *mms__replay_state(const mms_replay_t *r);
/* The id of the log's FORK event number `number`: returns 1 and sets *id,
 * or 0 when the log (as far as it is readable) has none (seek.c). */
int mms__replay_fork_event(const mms_replay_t *r, uint64_t number, uint64_t *id);

#endif /* MMS_INDEX_INT_H */
