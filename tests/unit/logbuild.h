/* SPDX-License-Identifier: MIT */
/* logbuild.h: a test-only writer of .mms logs, built on common/format.h's
 * encoders, so reader tests can make any log (well-formed or broken). */
#ifndef MMS_LOGBUILD_H
#define MMS_LOGBUILD_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"

#define LB_MAX_CHUNKS 64

/* A log being built in memory: header page plus chunks. Each chunk keeps
 * its own write position and segment delta state, so tests can interleave
 * threads across chunks freely. */
struct lb {
	uint8_t *data;          /* the whole file */
	size_t size;
	uint32_t chunk_size;
	uint32_t nchunks;
	uint32_t cur;           /* chunk that records go to */
	struct {
		size_t pos;         /* bytes of records written */
		uint64_t stamp;     /* last stamp of the segment */
		uint64_t prev_addr; /* last address of the segment */
	} ch[LB_MAX_CHUNKS];
	size_t rec_start;       /* start of the record being written */
};

/* A builder with a version 1 header (counter clock, COMPLETE flag, stamps
 * 0..0 at realtime 1e9) and no chunks. Aborts when out of memory. */
struct lb *lb_new(uint32_t chunk_size);
void lb_destroy(struct lb *b);
struct mms_file_header *lb_header(struct lb *b);

/* Adds a chunk (magic set, used 0), makes it current and returns it. */
uint32_t lb_chunk(struct lb *b);
void lb_use(struct lb *b, uint32_t chunk);

/* Record writers: each writes one whole record into the current chunk and
 * publishes it (updates `used`). Stamps are absolute. */
void lb_segment(struct lb *b, uint32_t thread, uint64_t stamp);
void lb_begin(struct lb *b, uint8_t tag, uint64_t stamp); /* tag + dstamp */
void lb_u(struct lb *b, uint64_t v);
void lb_addr(struct lb *b, uint64_t addr);
void lb_str(struct lb *b, const char *s);
void lb_bytes(struct lb *b, const void *bytes, size_t len); /* an s of any bytes */
void lb_end(struct lb *b);
void lb_raw(struct lb *b, const void *bytes, size_t len); /* published as is */

/* Common records. */
void lb_thread(struct lb *b, uint64_t stamp, uint32_t thread, uint64_t tid);
void lb_string(struct lb *b, uint64_t stamp, uint64_t id, const char *s);
void lb_meta(struct lb *b, uint64_t stamp, const char *key, const char *value);
void lb_stack(struct lb *b, uint64_t stamp, uint64_t id, uint64_t parent, uint64_t ip);
void lb_alloc(struct lb *b, uint64_t stamp, int fn, uint64_t addr, uint64_t size, uint64_t stack);
void lb_free(struct lb *b, uint64_t stamp, int fn, uint64_t addr);
void lb_mmap(struct lb *b, uint64_t stamp, uint64_t addr, uint64_t size);
void lb_munmap(struct lb *b, uint64_t stamp, uint64_t addr, uint64_t size);
/* An MMAP record with the given prot (lb_mmap's is PROT_READ|PROT_WRITE),
 * and an MPROTECT record (format 9). */
void lb_mmap_prot(struct lb *b, uint64_t stamp, uint64_t addr, uint64_t size, uint32_t prot);
void lb_mprotect(struct lb *b, uint64_t stamp, uint64_t addr, uint64_t size, uint32_t prot);
/* A custom pool's block (pool: the string id of its name); total and used
 * as the pool reports them. */
void lb_pool_alloc(struct lb *b, uint64_t stamp, uint64_t pool, uint64_t addr, uint64_t size, uint64_t total,
		   uint64_t used, uint64_t stack);
void lb_pool_free(struct lb *b, uint64_t stamp, uint64_t pool, uint64_t addr, uint64_t size, uint64_t total,
		  uint64_t used);
void lb_event0(struct lb *b, uint8_t tag, uint64_t stamp); /* no payload */
void lb_event1(struct lb *b, uint8_t tag, uint64_t stamp, uint64_t u); /* one u */

/* Sets a chunk's `used` (to cut it). */
void lb_set_used(struct lb *b, uint32_t chunk, uint64_t used);
/* File offset of the current chunk's write position (where the next
 * record goes). */
uint64_t lb_offset(const struct lb *b);

/* Writes the first len bytes of the file (SIZE_MAX: all) to path. Returns
 * 0 or -1. */
int lb_write(const struct lb *b, const char *path, size_t len);

#endif /* MMS_LOGBUILD_H */
