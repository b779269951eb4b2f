/* SPDX-License-Identifier: MIT */
/* outfile-int.h: output files written whole or not at all, and a buffered
 * writer over one (outfile.c). */
#ifndef MMS_OUTFILE_INT_H
#define MMS_OUTFILE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "msmemscope/output.h"
#include "decimal-int.h"

/* --- output files (outfile.c) ------------------------------------------------------------ */

/* An output file written under a temporary name in the same folder and
 * moved to its path at the end (replacing what is there only with
 * overwrite), so no partial file is ever left behind. A path that is a
 * character device or a FIFO, itself or at the end of its symlinks
 * (/dev/null, /dev/stdout, a terminal, a named pipe), is written in
 * place, as a shell's redirection does: replacing it by a file would
 * destroy it. */
struct mms__outfile {
	const char *path; /* a copy, in tmp's allocation */
	char *tmp;
	int overwrite;
	int direct; /* written in place: nothing to move or remove */
};

#define MMS__OUT_OVERWRITE 1u /* replace what is at path */
#define MMS__OUT_REGULAR 2u   /* a regular file or nothing: a database, an index */

/* The flags of a caller's output options (NULL: none). */
static inline unsigned mms__out_flags(const mms_output_options_t *out)
{
	return out && out->overwrite ? MMS__OUT_OVERWRITE : 0;
}

/* Refuses with MMS_EOVERLOG when path is a log this process reads, with
 * MMS_ENOTFILE when it is neither a regular file, a directory nor
 * something written in place (MMS__OUT_REGULAR: neither a regular file
 * nor a directory), with -EEXIST when it exists and flags lack
 * MMS__OUT_OVERWRITE; then creates the temporary file (mode 0640,
 * O_EXCL, O_NOFOLLOW) or opens the device. Returns an open descriptor,
 * or a negative code. */
int mms__outfile_create(struct mms__outfile *f, const char *path, unsigned flags);
/* Moves the finished temporary file to its path. Returns 0 or a negative
 * code (the temporary file is then removed). */
int mms__outfile_commit(struct mms__outfile *f);
/* Removes the temporary file; safe to call after a commit. */
void mms__outfile_abort(struct mms__outfile *f);
/* Writes all n bytes to fd, retrying short writes and EINTR. Returns 0 or
 * -errno. */
int mms__write_all(int fd, const void *p, size_t n);

/* --- a buffered writer over an output file (outfile.c) ------------------------------------ */

/* An output file (struct mms__outfile) written through a buffer; the
 * first write error is kept and reported at the close. A file that
 * outgrows a few buffers is written by a thread of its own from there
 * on (struct mms__wq, outfile.c): the rows are made while the last ones
 * go to the file, on another core where there is one. */
#define MMS__WFILE_BUF (1 << 16) /* bytes of the first buffer */
struct mms__wq;
struct mms__wfile {
	struct mms__outfile f;
	int fd;
	int err;
	/* mms__wfile_dec_at(): the digits of the last time written above
	 * its last 8 (hi 0: none yet). */
	uint64_t hi;
	unsigned hi_len;
	char hi_digits[16];
	char *buf; /* the buffer being filled: first, then the writer's */
	size_t len, cap;
	unsigned flushes;  /* of first, before the writer starts */
	struct mms__wq *q; /* the writer, or NULL */
	char first[MMS__WFILE_BUF];
};

/* Creates the file as mms__outfile_create() does (flags: MMS__OUT_*).
 * Returns the writer, or NULL with *rc set. */
struct mms__wfile *mms__wfile_open(const char *path, unsigned flags, int *rc);
/* Finishes the file (commit) or, with rc non-zero or a write error,
 * removes it; frees w (may be NULL). Returns rc, the write error, or the
 * commit's code. */
int mms__wfile_close(struct mms__wfile *w, int rc);
void mms__wfile_flush(struct mms__wfile *w);
/* Room for n bytes (at most MMS__WFILE_BUF) at the end of w's buffer,
 * flushed first where it has less: a row of fields is written there in
 * one go, then mms__wfile_end() with where it ends. */
static inline char *mms__wfile_room(struct mms__wfile *w, size_t n)
{
	if (w->cap - w->len < n)
		mms__wfile_flush(w);
	return w->buf + w->len;
}

static inline void mms__wfile_end(struct mms__wfile *w, const char *end)
{
	w->len = (size_t)(end - w->buf);
}
void mms__wfile_mem(struct mms__wfile *w, const void *p, size_t n);
void mms__wfile_str(struct mms__wfile *w, const char *s);

/* v in decimal at o (room for 20), in w's room: from w's digits of the
 * last number of 17 digits or more when v has the same ones above its
 * last 8 (times in ns, one after the other, mostly do; a row's other
 * numbers, sizes and byte counts, are shorter and do not take the place
 * of the time's digits); returns where the digits end. */
static inline char *mms__wfile_dec_at(struct mms__wfile *w, char *o, uint64_t v)
{
	if (v < 10000000000000000ull)
		return o + mms__dec(o, v);
	if (v / 100000000 != w->hi) {
		w->hi = v / 100000000;
		w->hi_len = mms__dec(w->hi_digits, w->hi);
	}
	memcpy(o, w->hi_digits, sizeof(w->hi_digits));
	o += w->hi_len;
	mms__dec8(o, (uint32_t)(v % 100000000));
	return o + 8;
}
/* v as 0x and lower-case hex digits, then the character end. */
void mms__wfile_hex(struct mms__wfile *w, uint64_t v, char end);

#endif /* MMS_OUTFILE_INT_H */
