/* SPDX-License-Identifier: MIT */
/* logbuild.c: a test-only writer of .mms logs, see logbuild.h. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logbuild.h"

#define CHDR sizeof(struct mms_chunk_header)

static void *must(void *p)
{
	if (!p) {
		fprintf(stderr, "logbuild: out of memory\n");
		abort();
	}
	return p;
}

struct lb *lb_new(uint32_t chunk_size)
{
	struct lb *b = must(calloc(1, sizeof(*b)));
	struct mms_file_header *h;

	b->chunk_size = chunk_size;
	b->size = MMS_HEADER_SIZE;
	b->data = must(calloc(1, b->size));
	h = lb_header(b);
	memcpy(h->magic, MMS_MAGIC, MMS_MAGIC_LEN);
	h->version = MMS_FORMAT_VERSION;
	h->header_size = MMS_HEADER_SIZE;
	h->chunk_size = chunk_size;
	h->clock = MMS_CLOCK_COUNTER;
	h->flags = MMS_FLAG_COMPLETE;
	h->pid = 4242;
	h->ppid = 1;
	h->start_realtime_ns = 1000000000ull;
	h->last_realtime_ns = 1000000000ull;
	return b;
}

void lb_destroy(struct lb *b)
{
	if (!b)
		return;
	free(b->data);
	free(b);
}

struct mms_file_header *lb_header(struct lb *b)
{
	return (struct mms_file_header *)b->data;
}

static struct mms_chunk_header *chunk_hdr(struct lb *b, uint32_t k)
{
	return (struct mms_chunk_header *)(b->data + MMS_HEADER_SIZE + (size_t)k * b->chunk_size);
}

uint32_t lb_chunk(struct lb *b)
{
	uint32_t k = b->nchunks++;

	if (k >= LB_MAX_CHUNKS)
		abort();
	b->size += b->chunk_size;
	b->data = must(realloc(b->data, b->size));
	memset(chunk_hdr(b, k), 0, b->chunk_size);
	chunk_hdr(b, k)->magic = MMS_CHUNK_MAGIC;
	lb_header(b)->nchunks = b->nchunks;
	b->cur = k;
	return k;
}

void lb_use(struct lb *b, uint32_t chunk)
{
	b->cur = chunk;
}

static uint8_t *wp(struct lb *b)
{
	return (uint8_t *)chunk_hdr(b, b->cur) + CHDR + b->ch[b->cur].pos;
}

/* Makes sure a whole record fits in the current chunk. */
static void room(struct lb *b, size_t n)
{
	if (CHDR + b->ch[b->cur].pos + n > b->chunk_size) {
		fprintf(stderr, "logbuild: chunk %u full\n", b->cur);
		abort();
	}
}

void lb_u(struct lb *b, uint64_t v)
{
	room(b, 10);
	b->ch[b->cur].pos = (size_t)(mms_put_u(wp(b), v) - ((uint8_t *)chunk_hdr(b, b->cur) + CHDR));
}

void lb_addr(struct lb *b, uint64_t addr)
{
	lb_u(b, mms_zigzag((int64_t)(addr - b->ch[b->cur].prev_addr)));
	b->ch[b->cur].prev_addr = addr;
}

void lb_str(struct lb *b, const char *s)
{
	lb_bytes(b, s, strlen(s));
}

void lb_bytes(struct lb *b, const void *bytes, size_t len)
{
	room(b, 10 + len);
	b->ch[b->cur].pos = (size_t)(mms_put_s(wp(b), bytes, len) - ((uint8_t *)chunk_hdr(b, b->cur) + CHDR));
}

void lb_end(struct lb *b)
{
	chunk_hdr(b, b->cur)->used = b->ch[b->cur].pos;
}

void lb_raw(struct lb *b, const void *bytes, size_t len)
{
	room(b, len);
	memcpy(wp(b), bytes, len);
	b->ch[b->cur].pos += len;
	lb_end(b);
}

void lb_segment(struct lb *b, uint32_t thread, uint64_t stamp)
{
	room(b, 1);
	*wp(b) = MMS_TAG_SEGMENT;
	b->ch[b->cur].pos++;
	lb_u(b, thread);
	lb_u(b, stamp);
	b->ch[b->cur].stamp = stamp;
	b->ch[b->cur].prev_addr = 0;
	lb_end(b);
}

void lb_begin(struct lb *b, uint8_t tag, uint64_t stamp)
{
	room(b, 1);
	*wp(b) = tag;
	b->ch[b->cur].pos++;
	lb_u(b, stamp - b->ch[b->cur].stamp);
	b->ch[b->cur].stamp = stamp;
}

void lb_thread(struct lb *b, uint64_t stamp, uint32_t thread, uint64_t tid)
{
	lb_begin(b, MMS_TAG_THREAD, stamp);
	lb_u(b, thread);
	lb_u(b, tid);
	lb_end(b);
}

void lb_string(struct lb *b, uint64_t stamp, uint64_t id, const char *s)
{
	lb_begin(b, MMS_TAG_STRING, stamp);
	lb_u(b, id);
	lb_str(b, s);
	lb_end(b);
}

void lb_stack(struct lb *b, uint64_t stamp, uint64_t id, uint64_t parent, uint64_t ip)
{
	lb_begin(b, MMS_TAG_STACK, stamp);
	lb_u(b, id);
	lb_u(b, parent);
	lb_u(b, ip);
	lb_end(b);
}

void lb_meta(struct lb *b, uint64_t stamp, const char *key, const char *value)
{
	lb_begin(b, MMS_TAG_META, stamp);
	lb_str(b, key);
	lb_str(b, value);
	lb_end(b);
}

void lb_alloc(struct lb *b, uint64_t stamp, int fn, uint64_t addr, uint64_t size, uint64_t stack)
{
	lb_begin(b, MMS_ALLOC_TAG(MMS_TAG_ALLOC, (unsigned)fn), stamp);
	lb_addr(b, addr);
	lb_u(b, size);
	lb_u(b, stack);
	lb_end(b);
}

void lb_free(struct lb *b, uint64_t stamp, int fn, uint64_t addr)
{
	lb_begin(b, (uint8_t)(MMS_TAG_FREE | fn), stamp);
	lb_addr(b, addr);
	lb_end(b);
}

void lb_mmap_prot(struct lb *b, uint64_t stamp, uint64_t addr, uint64_t size, uint32_t prot)
{
	lb_begin(b, MMS_TAG_MMAP, stamp);
	lb_addr(b, addr);
	lb_u(b, size);
	lb_u(b, (uint64_t)prot << 32 | 0x22); /* MAP_PRIVATE|MAP_ANONYMOUS */
	lb_u(b, 0);
	lb_end(b);
}

void lb_mmap(struct lb *b, uint64_t stamp, uint64_t addr, uint64_t size)
{
	lb_mmap_prot(b, stamp, addr, size, 3); /* PROT_READ|PROT_WRITE */
}

void lb_mprotect(struct lb *b, uint64_t stamp, uint64_t addr, uint64_t size, uint32_t prot)
{
	lb_begin(b, MMS_TAG_MPROTECT, stamp);
	lb_addr(b, addr);
	lb_u(b, size);
	lb_u(b, prot);
	lb_u(b, 0);
	lb_end(b);
}

void lb_munmap(struct lb *b, uint64_t stamp, uint64_t addr, uint64_t size)
{
	lb_begin(b, MMS_TAG_MUNMAP, stamp);
	lb_addr(b, addr);
	lb_u(b, size);
	lb_end(b);
}

/* A pool event's fields up to its stack. */
static void pool_fields(struct lb *b, uint8_t tag, uint64_t stamp, uint64_t pool, uint64_t addr, uint64_t size,
			uint64_t total, uint64_t used)
{
	lb_begin(b, tag, stamp);
	lb_u(b, pool);
	lb_addr(b, addr);
	lb_u(b, size);
	lb_u(b, total);
	lb_u(b, used);
}

void lb_pool_alloc(struct lb *b, uint64_t stamp, uint64_t pool, uint64_t addr, uint64_t size, uint64_t total,
		   uint64_t used, uint64_t stack)
{
	pool_fields(b, MMS_TAG_POOL_ALLOC, stamp, pool, addr, size, total, used);
	lb_u(b, stack);
	lb_end(b);
}

void lb_pool_free(struct lb *b, uint64_t stamp, uint64_t pool, uint64_t addr, uint64_t size, uint64_t total,
		  uint64_t used)
{
	pool_fields(b, MMS_TAG_POOL_FREE, stamp, pool, addr, size, total, used);
	lb_end(b);
}

void lb_event0(struct lb *b, uint8_t tag, uint64_t stamp)
{
	lb_begin(b, tag, stamp);
	lb_end(b);
}

void lb_event1(struct lb *b, uint8_t tag, uint64_t stamp, uint64_t u)
{
	lb_begin(b, tag, stamp);
	lb_u(b, u);
	lb_end(b);
}

void lb_set_used(struct lb *b, uint32_t chunk, uint64_t used)
{
	chunk_hdr(b, chunk)->used = used;
}

uint64_t lb_offset(const struct lb *b)
{
	return MMS_HEADER_SIZE + (uint64_t)b->cur * b->chunk_size + CHDR + b->ch[b->cur].pos;
}

int lb_write(const struct lb *b, const char *path, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	const uint8_t *p = b->data;
	ssize_t n;

	if (fd < 0)
		return -1;
	if (len > b->size)
		len = b->size;
	while (len) {
		n = write(fd, p, len);
		if (n <= 0) {
			close(fd);
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return close(fd);
}
