/* SPDX-License-Identifier: MIT */
/* log.c: opens a .mms log: maps it, validates the header, walks every chunk
 * once to collect metadata and the segment list, and records damage. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "format.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "base-int.h"
#include "decode-int.h"
#include "log-int.h"
#include "map-int.h"

#define CHUNK_HDR sizeof(struct mms_chunk_header)

int mms__open_error(mms_open_error_t *err, int code, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		err->offset = off;
		va_start(ap, fmt);
		vsnprintf(err->what, sizeof(err->what), fmt, ap);
		va_end(ap);
	}
	return code;
}

/* Notes damage at off. The first place found is the one reported. */
static void log_damage(mms_log_t *log, int code, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void log_damage(mms_log_t *log, int code, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	log->info.damage_count++;
	if (log->info.damaged)
		return;
	log->info.damaged = 1;
	log->info.damage_error = code;
	log->info.damage_offset = off;
	va_start(ap, fmt);
	vsnprintf(log->damage, sizeof(log->damage), fmt, ap);
	va_end(ap);
	log->info.damage = log->damage;
}

void mms__log_header_reload(mms_log_t *log)
{
	const struct mms_file_header *h = (const void *)log->map;
	struct mms_file_header *c = &log->hdr;

	c->flags = __atomic_load_n(&h->flags, __ATOMIC_ACQUIRE);
	c->last_stamp = __atomic_load_n(&h->last_stamp, __ATOMIC_ACQUIRE);
	c->last_realtime_ns = __atomic_load_n(&h->last_realtime_ns, __ATOMIC_ACQUIRE);
	c->nchunks = __atomic_load_n(&h->nchunks, __ATOMIC_ACQUIRE);
	c->lost_events = __atomic_load_n(&h->lost_events, __ATOMIC_ACQUIRE);
	c->cut_errno = h->cut_errno;
	/* Only a cut log has a meaningful cut_stamp (walk_chunk reads it). */
	c->cut_stamp = c->flags & MMS_FLAG_CUT ? __atomic_load_n(&h->cut_stamp, __ATOMIC_ACQUIRE) : 0;
}

int mms__log_read_header(mms_log_t *log, mms_open_error_t *err)
{
	const struct mms_file_header *h = (const void *)log->map;
	struct mms_file_header *c = &log->hdr;
	size_t n = log->size < MMS_MAGIC_LEN ? log->size : MMS_MAGIC_LEN;

	if (memcmp(log->map, MMS_MAGIC, n))
		return mms__open_error(err, MMS_EBADMAGIC, 0, "the file does not start with the msmemscope magic \"MMSLOG\"");
	if (log->size < offsetof(struct mms_file_header, header_size))
		return mms__open_error(err, MMS_ETRUNCATED, log->size, "the file ends after %zu bytes, inside its header", log->size);
	memcpy(&c->version, &h->version, sizeof(c->version));
	if (c->version < MMS_FORMAT_VERSION_MIN || c->version > MMS_FORMAT_VERSION)
		return mms__open_error(err, MMS_EVERSION, offsetof(struct mms_file_header, version),
				  "format version %u; this reader reads versions %u to %u", c->version,
				  MMS_FORMAT_VERSION_MIN, MMS_FORMAT_VERSION);
	if (log->size < MMS_HEADER_SIZE)
		return mms__open_error(err, MMS_ETRUNCATED, log->size,
				  "the file ends after %zu bytes, inside its %u-byte header", log->size, MMS_HEADER_SIZE);
	memcpy(c, h, sizeof(*c));
	mms__log_header_reload(log);
	if (c->header_size != MMS_HEADER_SIZE)
		return mms__open_error(err, MMS_ECORRUPT, offsetof(struct mms_file_header, header_size),
				  "header size %u; headers are %u bytes", c->header_size, MMS_HEADER_SIZE);
	if (c->chunk_size < 4096 || c->chunk_size % 4096 || c->chunk_size > (1u << 30))
		return mms__open_error(err, MMS_ECORRUPT, offsetof(struct mms_file_header, chunk_size),
				  "chunk size %u is not a multiple of 4096 between 4 KiB and 1 GiB", c->chunk_size);
	if (c->nchunks > (uint64_t)(INT64_MAX - MMS_HEADER_SIZE) / c->chunk_size)
		return mms__open_error(err, MMS_ECORRUPT, offsetof(struct mms_file_header, nchunks),
				  "the header counts %llu chunks of %u bytes, more than a file can hold",
				  (unsigned long long)c->nchunks, c->chunk_size);
	return 0;
}

static struct mms__segment *seg_begin(mms_log_t *log, const struct mms__rec *r, uint64_t begin)
{
	struct mms__segment *s;

	if (mms__grow(&log->wsegs, &log->wsegs_cap, log->nwsegs, sizeof(*log->wsegs)))
		return NULL;
	s = &log->wsegs[log->nwsegs++];
	memset(s, 0, sizeof(*s));
	s->begin = s->end = begin;
	s->first = s->last = r->stamp;
	s->thread = (uint32_t)r->u[0];
	return s;
}

/* The file offset of the cursor's position. */
static inline uint64_t cursor_off(const struct mms__cursor *c)
{
	return (uint64_t)(c->p - c->base) + c->base_off;
}

/* Records after the one stamped `stamp` may be missing: the replay stops
 * after it. */
static void stop_after(mms_log_t *log, uint64_t stamp)
{
	if (stamp < log->stop - 1)
		log->stop = stamp + 1;
}

/* A chunk cannot be read. Chunks are taken in the order of their numbers,
 * and a thread stamps the event that makes it take a chunk before taking
 * it; every other record of a chunk is stamped after the chunk was taken.
 * So what the lost chunk held was stamped after the first event of every
 * chunk before it: the replay stops there. */
static void chunk_lost(mms_log_t *log)
{
	log->chunks_lost = 1;
	stop_after(log, log->chunk_stamp_max);
}

/* Decodes chunk k's records [p, end): segments, metadata and event counts,
 * and notes the stamp of the chunk's first event (see chunk_lost()).
 * Damage stops this chunk only; the replay stops where the damaged
 * thread's records do. cut says the file ends inside the chunk, already
 * reported: a record torn there is no further damage. w says where an
 * earlier walk of the chunk stopped (p is there), and is left where this
 * one does. Returns 0 or -ENOMEM. */
static int walk_chunk(mms_log_t *log, uint64_t k, const uint8_t *p, const uint8_t *end, int cut, const uint8_t *base,
		      uint64_t base_off, struct mms__cwalk *w)
{
	struct mms__cursor c = { .base = base, .base_off = base_off, .p = p, .end = end,
				 .stamp = w->stamp, .prev_addr = w->prev_addr, .thread = w->thread };
	const uint64_t cut_stamp = log->hdr.cut_stamp;
	struct mms__segment *seg = w->seg ? &log->wsegs[w->seg - 1] : NULL;
	struct mms__rec r;
	const char *why = NULL;
	int rc, first_event = !w->seen_event;

	for (;;) {
		/* A cut log is read record by record, to stop at its cut; so
		 * is the chunk's first event, and an exit record. */
		size_t n = seg && !cut_stamp && !first_event ? mms__skim_events(&c, &log->live_est, &log->live_peak_est)
							      : 0;

		if (n) {
			seg->events += n;
			seg->last = c.stamp;
			seg->end = cursor_off(&c);
		}
		rc = mms__decode_skim(&c, &r, &why);
		if (rc != 1)
			break;
		/* Events stamped from the cut on are left out: some of their
		 * neighbours of other threads were never recorded (see
		 * mms__log_cut in the writer). Stamps only grow in a thread, so
		 * the rest of this chunk goes too. */
		if (cut_stamp && (r.type == MMS_TAG_SEGMENT || mms__is_event(r.type)) && r.stamp >= cut_stamp)
			return 0;
		if (r.type == MMS_TAG_SEGMENT) {
			if (seg)
				seg->end = r.off;
			if (!mms__thread_note(log, c.thread))
				return -ENOMEM;
			seg = seg_begin(log, &r, cursor_off(&c));
			if (!seg)
				return -ENOMEM;
			continue;
		}
		if (!seg) {
			log_damage(log, MMS_ECORRUPT, r.off, "chunk %llu does not begin with a SEGMENT record (tag 0x%02x)",
				   (unsigned long long)k, r.tag);
			chunk_lost(log);
			return 0;
		}
		seg->last = r.stamp;
		seg->end = cursor_off(&c);
		if (mms__is_event(r.type)) {
			seg->events++;
			log->live_est += mms__live_delta(r.tag);
			if (log->live_est > log->live_peak_est)
				log->live_peak_est = log->live_est;
			if (first_event && r.stamp > log->chunk_stamp_max)
				log->chunk_stamp_max = r.stamp;
			first_event = 0;
			if (r.tag == (MMS_TAG_SYSTEM | MMS_SYSTEM_FINI))
				log->fini = 1;
			if (r.tag == MMS_TAG_OWNER_TAG)
				log->owner_tags++;
			if (r.type == MMS_TAG_STEP && r.sub != MMS_STEP_BY_PROGRAM)
				log->inferred_steps++;
			else if (r.type == MMS_TAG_STEP || r.type == MMS_TAG_RANGE_START)
				log->step_marks++;
			continue;
		}
		rc = mms__meta_record(log, &r);
		if (rc == -ENOMEM)
			return rc;
		if (rc) {
			log_damage(log, MMS_ECORRUPT, r.off, "record tag 0x%02x: thread or stack id out of range", r.tag);
			seg->end = r.off;
			seg->lost_after = 1;
			return 0;
		}
	}
	if (rc == 0) {
		w->walked = (uint64_t)(c.p - base) - CHUNK_HDR;
		w->seg = seg ? (size_t)(seg - log->wsegs) + 1 : 0;
		w->stamp = c.stamp;
		w->prev_addr = c.prev_addr;
		w->thread = c.thread;
		w->seen_event = !first_event;
		/* A chunk with no room for another event was left for a new
		 * one; one cut by the end of the file lost what followed. */
		if (seg && (cut || (uint64_t)(base + log->hdr.chunk_size - end) < MMS_MAX_EVENT_RECORD))
			seg->full_end = 1;
		if (seg && cut)
			seg->lost_after = 1;
		if (!seg && cut)
			chunk_lost(log);
		return 0;
	}
	/* Damage: the segment ends before the bad record, the chunk stops. */
	if (seg) {
		seg->end = cursor_off(&c);
		seg->lost_after = 1;
	} else {
		chunk_lost(log);
	}
	if (rc == MMS__DEC_CORRUPT && cut)
		return 0;
	if (rc == MMS__DEC_ORDER)
		log_damage(log, MMS_EORDER, cursor_off(&c), "chunk %llu: %s", (unsigned long long)k, why);
	else if (rc == MMS__DEC_UNKNOWN)
		log_damage(log, MMS_ECORRUPT, cursor_off(&c), "record tag 0x%02x unknown", *c.p);
	else
		log_damage(log, MMS_ECORRUPT, cursor_off(&c), "record tag 0x%02x: %s", *c.p, why);
	return 0;
}

/* The file ends before the chunks do: say where, once. */
static void file_cut(mms_log_t *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void file_cut(mms_log_t *log, const char *fmt, ...)
{
	va_list ap;

	if (log->file_cut)
		return;
	log->file_cut = 1;
	va_start(ap, fmt);
	vsnprintf(log->cut_what, sizeof(log->cut_what), fmt, ap);
	va_end(ap);
}

/* The walk state of chunk k: the log's own when following, else a fresh
 * one in *tmp. NULL without memory. */
static struct mms__cwalk *chunk_walk(mms_log_t *log, uint64_t k, struct mms__cwalk *tmp)
{
	size_t n;

	if (!log->follow) {
		memset(tmp, 0, sizeof(*tmp));
		return tmp;
	}
	if (k >= log->nwalks) {
		n = log->nwalks ? log->nwalks : 64;
		while (n <= k)
			n *= 2;
		tmp = realloc(log->walks, n * sizeof(*log->walks));
		if (!tmp)
			return NULL;
		memset(tmp + log->nwalks, 0, (n - log->nwalks) * sizeof(*tmp));
		log->walks = tmp;
		log->nwalks = n;
	}
	return &log->walks[k];
}

static int walk_chunks(mms_log_t *log, int fd)
{
	const struct mms_chunk_header *ch;
	uint64_t k, n, whole, start, have, used, cs = log->hdr.chunk_size;
	struct mms__cwalk tmp, *w;
	const uint8_t *chunk;
	uint8_t *buf = NULL;
	uint32_t magic;
	ssize_t got;
	int rc = 0, cut;

	/* From a file, each chunk is read into one buffer: the open pass
	 * then costs a copy, not a page fault for every page of a mapping
	 * that replay may never need again (a seek reads only the chunks
	 * after its checkpoint). A followed log is read in its mapping: each
	 * look reads only what was added. */
	if (fd >= 0 && !log->follow && !(buf = malloc(cs)))
		return -ENOMEM;

	/* A log still being written, or cut, may hold fewer chunks than the
	 * header has reserved: walk what the file holds. A followed log's
	 * writer grows the file before it uses a chunk: one the file does
	 * not hold yet is looked at next time. */
	n = (log->size - MMS_HEADER_SIZE + cs - 1) / cs;
	if (log->follow == MMS__FOLLOW_LIVE)
		n = (log->size - MMS_HEADER_SIZE) / cs;
	if (n > log->hdr.nchunks)
		n = log->hdr.nchunks;
	for (k = 0; k < n; k++) {
		start = MMS_HEADER_SIZE + k * cs;
		have = log->size - start < cs ? log->size - start : cs;
		chunk = log->map + start;
		w = chunk_walk(log, k, &tmp);
		if (!w) {
			rc = -ENOMEM;
			break;
		}
		if (buf && have >= CHUNK_HDR) {
			do
				got = pread(fd, buf, have, (off_t)start);
			while (got < 0 && errno == EINTR);
			if (got < 0) {
				rc = -errno;
				break;
			}
			if ((uint64_t)got < have) /* the file shrank under us */
				have = (uint64_t)got;
			chunk = buf;
		}
		if (have < CHUNK_HDR) {
			/* When the writer cut the log, the end of a file grown
			 * to its limit may hold the start of a chunk it could
			 * not use. */
			if (!(log->hdr.flags & MMS_FLAG_CUT))
				file_cut(log, "the file ends inside the header of chunk %llu, of the %llu its header "
					 "counts",
					 (unsigned long long)k, (unsigned long long)log->hdr.nchunks);
			break;
		}
		ch = (const void *)chunk;
		/* used first: the writer sets the magic before it publishes
		 * any record, so a chunk being taken while the log is read
		 * live shows records only with its magic (read the other way
		 * round, the magic could be read before it was set, and used
		 * after its first record: damage that is not there). */
		used = __atomic_load_n(&ch->used, __ATOMIC_ACQUIRE);
		magic = __atomic_load_n(&ch->magic, __ATOMIC_ACQUIRE);
		if (magic == 0 && used == 0)
			continue; /* reserved, never written */
		if (magic != MMS_CHUNK_MAGIC) {
			log_damage(log, MMS_ECORRUPT, start, "chunk %llu: bad chunk magic 0x%08x", (unsigned long long)k, magic);
			chunk_lost(log);
			continue;
		}
		if (used > cs - CHUNK_HDR) {
			log_damage(log, MMS_ECORRUPT, start + offsetof(struct mms_chunk_header, used),
				   "chunk %llu: %llu bytes used in a %llu-byte chunk", (unsigned long long)k,
				   (unsigned long long)used, (unsigned long long)cs);
			used = cs - CHUNK_HDR;
		}
		cut = used > have - CHUNK_HDR;
		if (cut) {
			/* Say how much is missing: a copy stopped early and a
			 * crash while the file grew read differently. */
			file_cut(log, "chunk %llu is cut: the file holds %llu of its %llu bytes of records",
				 (unsigned long long)k, (unsigned long long)(have - CHUNK_HDR), (unsigned long long)used);
			used = have - CHUNK_HDR;
		}
		if (used <= w->walked)
			continue; /* nothing new since the last look */
		rc = walk_chunk(log, k, chunk + CHUNK_HDR + w->walked, chunk + CHUNK_HDR + used, cut, chunk, start, w);
		if (rc)
			break;
	}
	free(buf);
	if (rc)
		return rc;
	/* A followed log is not cut for holding fewer chunks than its
	 * header counts: its writer is still adding them. */
	if (log->follow == MMS__FOLLOW_LIVE)
		return 0;
	/* The file is shorter than the chunks the header counts (the writer
	 * grows it a whole chunk at a time). The writer counts a chunk it
	 * could not add when it cuts the log itself (a full disk): only a log
	 * it did not cut has lost something. */
	whole = (log->size - MMS_HEADER_SIZE) / cs;
	if (!log->file_cut && log->size < MMS_HEADER_SIZE + log->hdr.nchunks * cs && !(log->hdr.flags & MMS_FLAG_CUT)) {
		if (log->size == MMS_HEADER_SIZE + whole * cs)
			file_cut(log, "the file ends after %llu of the %llu chunks its header counts",
				 (unsigned long long)whole, (unsigned long long)log->hdr.nchunks);
		else
			file_cut(log, "the file ends inside chunk %llu of the %llu its header counts, after its records",
				 (unsigned long long)whole, (unsigned long long)log->hdr.nchunks);
	}
	/* Chunks from k on are not in the file. */
	if (log->file_cut && k < log->hdr.nchunks)
		chunk_lost(log);
	return 0;
}

static int seg_cmp(const void *a, const void *b)
{
	const struct mms__segment *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	/* Equal first stamps (a thread's stamps may repeat): the segment that
	 * ends earlier cannot come after the other. */
	if (x->last != y->last)
		return x->last < y->last ? -1 : 1;
	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* Sorts the segments into per-thread runs and checks that a thread's
 * segments do not overlap in time (the ordering rule). */
static int thread_cmp(const void *a, const void *b)
{
	const struct mms__thread *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

/* Numbers the threads 0..nthreads-1 in the order of the recorder's
 * indexes (the same numbers in a log from the recorder, which hands them
 * out from 0), and makes segments name threads by that number: events
 * then carry a thread number below nthreads, however a damaged log names
 * its threads. */
static void number_threads(mms_log_t *log)
{
	uint64_t *v;
	size_t i;

	if (log->nthreads)
		qsort(log->threads, log->nthreads, sizeof(*log->threads), thread_cmp);
	for (i = 0; i < log->nthreads; i++) {
		v = mms__map_get(&log->thread_ix, log->threads[i].index);
		if (v)
			*v = i;
	}
	for (i = 0; i < log->nsegs; i++) {
		v = mms__map_get(&log->thread_ix, log->segs[i].thread);
		log->segs[i].thread = v ? (uint32_t)*v : 0;
	}
}

/* Where the replay must stop for the records that are lost (besides
 * after a segment whose thread's next records were lost): after
 * a gap in a thread's records (its next segment begins after the last
 * stamp it holds: the records between are in no chunk read), and, when
 * chunks were lost, after the last record of each thread whose records
 * fill their chunk (it went on in a chunk that may be one of them). The
 * segments are sorted by thread and time. */
static void find_stop(mms_log_t *log)
{
	const struct mms__segment *g;
	size_t i;

	log->gap_cap = UINT64_MAX;
	for (i = 0; i < log->nsegs; i++) {
		g = &log->segs[i];
		if (i + 1 < log->nsegs && g[1].thread == g->thread) {
			/* A segment begins at the stamp of its thread's last
			 * record before it (see chunk_switch in the writer). */
			if (g[1].first > g->last && log->follow == MMS__FOLLOW_LIVE) {
				/* Not lost, maybe: a look reads the chunks one
				 * after the other, and may have read this one
				 * before the thread published its last records
				 * there, and the next one after it wrote on.
				 * Nothing past them is fed until a look finds
				 * them; the last look judges. */
				if (g->last < log->gap_cap)
					log->gap_cap = g->last;
			} else if (g[1].first > g->last) {
				log_damage(log, MMS_ECORRUPT, g[1].begin,
					   "thread %u: records are missing before offset %llu (its records before end "
					   "at offset %llu)",
					   g->thread, (unsigned long long)g[1].begin, (unsigned long long)g->end);
				stop_after(log, g->last);
			}
		} else if (log->chunks_lost && g->full_end) {
			stop_after(log, g->last);
		}
	}
}

/* Leaves out the records stamped from log->stop on: a segment that
 * begins there goes, one that crosses it ends before its first record
 * from there. */
static void trim_segments(mms_log_t *log)
{
	struct mms__cursor c;
	struct mms__segment *g;
	struct mms__rec r;
	const char *why;
	size_t i;

	for (i = 0; i < log->nsegs; i++) {
		g = &log->segs[i];
		if (g->last < log->stop)
			continue;
		memset(&c, 0, sizeof(c));
		c.base = log->map;
		c.p = log->map + g->begin;
		c.end = log->map + g->end;
		c.stamp = g->first;
		c.thread = g->thread;
		g->events = 0;
		g->last = g->first;
		g->end = g->begin;
		if (g->first >= log->stop)
			continue;
		/* The open pass decoded these records already. */
		while (mms__decode_skim(&c, &r, &why) == 1 && r.stamp < log->stop) {
			g->events += mms__is_event(r.type);
			g->last = r.stamp;
			g->end = cursor_off(&c);
		}
	}
}

/* Drops the segments that hold no records. */
static void drop_empty(mms_log_t *log)
{
	size_t i, w = 0;

	for (i = 0; i < log->nsegs; i++)
		if (log->segs[i].end > log->segs[i].begin)
			log->segs[w++] = log->segs[i];
	log->nsegs = w;
}

static int build_runs(mms_log_t *log)
{
	size_t i;

	/* segs is made again from the walk's segments: a followed log's
	 * grow and new ones come with each look. */
	free(log->segs);
	free(log->runs);
	log->runs = NULL;
	log->nruns = 0;
	log->segs = malloc((log->nwsegs + 1) * sizeof(*log->segs));
	if (!log->segs)
		return -ENOMEM;
	if (log->nwsegs)
		memcpy(log->segs, log->wsegs, log->nwsegs * sizeof(*log->segs));
	log->nsegs = log->nwsegs;
	number_threads(log);
	/* Damage may leave a segment with no record before it. */
	for (i = 0; i < log->nsegs; i++)
		if (log->segs[i].lost_after)
			stop_after(log, log->segs[i].last);
	drop_empty(log);
	if (log->nsegs)
		qsort(log->segs, log->nsegs, sizeof(*log->segs), seg_cmp);
	find_stop(log);
	if (log->stop != UINT64_MAX) {
		trim_segments(log);
		drop_empty(log);
	}
	log->events = 0;
	for (i = 0; i < log->nsegs; i++)
		log->events += log->segs[i].events;
	log->runs = malloc((log->nsegs + 1) * sizeof(*log->runs));
	if (!log->runs)
		return -ENOMEM;
	for (i = 0; i < log->nsegs; i++) {
		if (i && log->segs[i].thread == log->segs[i - 1].thread) {
			if (log->segs[i].first < log->segs[i - 1].last)
				log_damage(log, MMS_EORDER, log->segs[i].begin,
					   "thread %u: records at offset %llu are stamped before the end of its "
					   "records at offset %llu",
					   log->segs[i].thread, (unsigned long long)log->segs[i].begin,
					   (unsigned long long)log->segs[i - 1].begin);
			continue;
		}
		log->runs[log->nruns++] = i;
	}
	log->runs[log->nruns] = log->nsegs;
	return 0;
}

_Static_assert((int)MMS_FREERES_SKIP_OFF == (int)MMS_FREERES_OFF &&
		       (int)MMS_FREERES_SKIP_THREADS == (int)MMS_FREERES_THREADS &&
		       (int)MMS_FREERES_SKIP_UNCOUNTED == (int)MMS_FREERES_UNCOUNTED &&
		       (int)MMS_FREERES_SKIP_EXIT == (int)MMS_FREERES_EXIT,
	       "the public reasons freeres did not run are the format's");

_Static_assert((int)MMS_STEP_MARKED == (int)MMS_STEP_BY_PROGRAM &&
		       (int)MMS_STEP_OPTIMIZER == (int)MMS_STEP_BY_OPTIMIZER,
	       "the public STEP subtypes are the format's sub-codes");

static void fill_info(mms_log_t *log)
{
	const struct mms_file_header *h = &log->hdr;
	mms_log_info_t *in = &log->info;
	const char *exe = "";

	mms_log_meta(log, "exe", &exe, NULL);
	mms__runtime_exe_seen(log, exe);
	in->version = h->version;
	in->pid = h->pid;
	in->ppid = h->ppid;
	in->exe = exe;
	in->clock = h->clock;
	in->flags = h->flags;
	in->stacks_full = !!(h->flags & MMS_FLAG_STACKS_FULL);
	in->strings_full = !!(h->flags & MMS_FLAG_STRINGS_FULL);
	in->own_malloc = NULL;
	mms_log_meta(log, MMS_META_OWN_MALLOC, &in->own_malloc, NULL);
	in->own_cxx = in->own_cxx_op = NULL;
	if (!mms_log_meta(log, MMS_META_OWN_CXX, &in->own_cxx, NULL) &&
	    mms_log_meta(log, MMS_META_OWN_CXX_OP, &in->own_cxx_op, NULL))
		in->own_cxx_op = "operator new or delete";
	in->freeres = mms_log_meta(log, "freeres", NULL, NULL) == 0;
	in->freeres_skipped = 0;
	in->freeres_threads = 0;
	{
		const char *v;
		size_t len;
		uint64_t why, others;
		const uint8_t *p, *end;

		if (!in->freeres && !mms_log_meta(log, "freeres_skipped", &v, &len)) {
			p = (const uint8_t *)v;
			end = p + len;
			if (!mms_get_u(&p, end, &why) && !mms_get_u(&p, end, &others) && why >= MMS_FREERES_OFF &&
			    why <= MMS_FREERES_EXIT) {
				in->freeres_skipped = (int)why;
				in->freeres_threads = others;
			}
		}
	}
	mms__reach_info(log);
	in->steps_inferred = mms__log_steps_inferred(log);
	in->cut_errno = h->cut_errno;
	in->start_realtime_ns = h->start_realtime_ns;
	in->last_realtime_ns = h->last_realtime_ns;
	/* Lost events are counted in the header (this writer) or in LOST
	 * records (allowed by the format): take the larger. */
	if (h->lost_events > in->lost_events)
		in->lost_events = h->lost_events;
	in->call_stack_depth = h->call_stack_depth;
	in->threads = log->nthreads > UINT32_MAX ? UINT32_MAX : (uint32_t)log->nthreads;
	in->nchunks = h->nchunks;
	in->file_size = log->size;
	/* A log that says the process reached exit but holds no exit
	 * record lost its end, wherever that was. */
	if (!log->file_cut && !in->damaged && (h->flags & (MMS_FLAG_COMPLETE | MMS_FLAG_CUT)) == MMS_FLAG_COMPLETE &&
	    !log->fini)
		snprintf(log->cut_what, sizeof(log->cut_what), "the log has no exit record although its header says the "
			 "process reached exit");
	in->cut = (h->flags & MMS_FLAG_CUT) || log->cut_what[0];
	in->complete = (h->flags & MMS_FLAG_COMPLETE) && !in->cut;
	in->cut_offset = in->cut ? log->size : 0;
	in->cut_what = log->cut_what[0] ? log->cut_what : NULL;
	in->stopped = log->stop != UINT64_MAX || in->cut;
	in->exec_away = !!(h->flags & MMS_FLAG_EXEC_AWAY);
	in->events = log->events;
	in->segments = log->nsegs;
	/* Stamps become nanoseconds by the line through the two (stamp,
	 * realtime) pairs; without two distinct pairs, one stamp is one ns. */
	if (h->last_stamp > h->start_stamp && h->last_realtime_ns > h->start_realtime_ns)
		log->ns_per_stamp = (double)(h->last_realtime_ns - h->start_realtime_ns) /
				    (double)(h->last_stamp - h->start_stamp);
	else
		log->ns_per_stamp = 1.0;
}

mms_log_t *mms__log_new(const void *map, size_t len)
{
	mms_log_t *log = calloc(1, sizeof(*log));

	if (!log)
		return NULL;
	log->map = map;
	log->size = len;
	log->fd = -1;
	mms__map_init(&log->strings);
	mms__map_init(&log->stacks);
	mms__map_init(&log->thread_ix);
	mms__map_init(&log->pycode_ix);
	log->stop = UINT64_MAX;
	log->gap_cap = UINT64_MAX;
	return log;
}

int mms__log_scan(mms_log_t *log, int fd)
{
	int rc = walk_chunks(log, fd);

	if (!rc)
		rc = build_runs(log);
	if (!rc)
		fill_info(log);
	return rc;
}

/* Opens the log in buf (len bytes), reading its chunks through fd when it
 * is not -1 (buf is then the file's mapping). */
static int log_open(const void *buf, size_t len, int fd, mms_log_t **out, mms_open_error_t *err)
{
	mms_log_t *log;
	int rc;

	if (!out || (!buf && len))
		return MMS_EUSAGE;
	*out = NULL;
	if (!len)
		return mms__open_error(err, MMS_ETRUNCATED, 0, "the file is empty");
	log = mms__log_new(buf, len);
	if (!log)
		return -ENOMEM;
	rc = mms__log_read_header(log, err);
	if (!rc)
		rc = mms__log_scan(log, fd);
	if (rc)
		goto fail_log;
	*out = log;
	return 0;
fail_log:
	mms_log_close(log);
	return rc;
}

int mms__log_open_buf(const void *buf, size_t len, mms_log_t **out, mms_open_error_t *err)
{
	return log_open(buf, len, -1, out, err);
}

/* Whether fd is a file of /proc or /sys: "regular" files whose size is 0
 * whatever they hold (a log is never one). */
static int pseudo_file(int fd)
{
	struct statfs fs;

	return !fstatfs(fd, &fs) &&
	       (fs.f_type == 0x9fa0 /* PROC_SUPER_MAGIC */ || fs.f_type == 0x62656572 /* SYSFS_MAGIC */);
}

int mms__log_open_regular(const char *path, mms_log_t **out, struct stat *st, mms_open_error_t *err)
{
	int fd, rc;

	if (!path || !out)
		return MMS_EUSAGE;
	*out = NULL;
	/* A FIFO is refused below, not waited on for a writer. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st))
		rc = -errno;
	else if (S_ISDIR(st->st_mode))
		rc = -EISDIR;
	else if (!S_ISREG(st->st_mode) || (!st->st_size && pseudo_file(fd)))
		rc = mms__open_error(err, MMS_EBADMAGIC, 0,
				     S_ISREG(st->st_mode) ? "not a regular file (a file of /proc or /sys)"
							  : "not a regular file");
	else
		return fd;
	close(fd);
	return rc;
}

/* The logs open from files, linked by reading_next: an export, a
 * transform or an analysis's file named like its input (-o LOG --force)
 * would otherwise replace the log under its reader. */
static pthread_mutex_t reading_lock = PTHREAD_MUTEX_INITIALIZER;
static mms_log_t *reading;

static void reading_add(mms_log_t *log)
{
	pthread_mutex_lock(&reading_lock);
	log->reading_next = reading;
	reading = log;
	pthread_mutex_unlock(&reading_lock);
}

static void reading_del(mms_log_t *log)
{
	mms_log_t **l;

	pthread_mutex_lock(&reading_lock);
	for (l = &reading; *l && *l != log; l = &(*l)->reading_next)
		;
	if (*l)
		*l = log->reading_next;
	pthread_mutex_unlock(&reading_lock);
}

int mms__log_file_open_here(uint64_t dev, uint64_t ino)
{
	const mms_log_t *l;
	int found = 0;

	pthread_mutex_lock(&reading_lock);
	for (l = reading; l && !found; l = l->reading_next)
		found = l->dev == dev && l->ino == ino;
	pthread_mutex_unlock(&reading_lock);
	return found;
}

int mms__log_open_file(const char *path, mms_log_t **out, mms_open_error_t *err)
{
	struct stat st;
	void *map = NULL;
	int fd, rc;

	fd = mms__log_open_regular(path, out, &st, err);
	if (fd < 0)
		return fd;
	if (st.st_size > 0) {
		/* Shared and read-only: a log still being written shows the
		 * records published before this point. */
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED) {
			rc = -errno;
			goto fail_fd;
		}
	}
	rc = log_open(map, (size_t)st.st_size, fd, out, err);
	if (rc)
		goto fail_map;
	(*out)->unmap = 1;
	/* What the index beside the log is checked against (index.c). */
	(*out)->path = strdup(path);
	(*out)->dev = (uint64_t)st.st_dev;
	(*out)->ino = (uint64_t)st.st_ino;
	(*out)->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
	reading_add(*out);
	close(fd);
	return 0;
fail_map:
	if (map)
		munmap(map, (size_t)st.st_size);
fail_fd:
	close(fd);
	return rc;
}

MMS__EXPORT int mms_log_open_ex(const char *path, mms_log_t **out, mms_open_error_t *err)
{
	int rc = mms__log_open_file(path, out, err);

	/* A fork child's replays start from its parent's heap at the fork. */
	if (!rc && (rc = mms__inherit_load(*out, 0))) {
		mms_log_close(*out);
		*out = NULL;
	}
	return rc;
}

MMS__EXPORT int mms_log_peek(const char *path, mms_log_info_t *info, char *exe, size_t exe_cap)
{
	mms_log_t *log;
	int rc;

	if (!path || !info)
		return MMS_EUSAGE;
	rc = mms__log_open_file(path, &log, NULL);
	if (rc)
		return rc;
	mms_log_get_info(log, info);
	if (exe && exe_cap)
		snprintf(exe, exe_cap, "%s", info->exe ? info->exe : "");
	info->exe = info->cut_what = info->damage = NULL;
	mms_log_close(log);
	return 0;
}

MMS__EXPORT int mms_log_open(const char *path, mms_log_t **out)
{
	return mms_log_open_ex(path, out, NULL);
}

MMS__EXPORT void mms_log_close(mms_log_t *log)
{
	if (!log)
		return;
	reading_del(log);
	mms__meta_free(log);
	mms__inherit_free(&log->inh);
	free(log->segs);
	free(log->wsegs);
	free(log->runs);
	free(log->walks);
	if (log->unmap && log->map)
		munmap((void *)log->map, log->map_len ? log->map_len : log->size);
	if (log->follow && log->fd >= 0)
		close(log->fd);
	free(log->path);
	free(log);
}

MMS__EXPORT void mms_log_get_info(const mms_log_t *log, mms_log_info_t *info)
{
	if (log && info) {
		*info = log->info;
		info->bad_stacks = __atomic_load_n(&log->bad_stacks, __ATOMIC_RELAXED);
	}
}
