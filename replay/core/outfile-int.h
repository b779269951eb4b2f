/* SPDX-License-Identifier: MIT */
/* outfile-int.h: output files written whole or not at all (outfile.c). */
#ifndef MMS_OUTFILE_INT_H
#define MMS_OUTFILE_INT_H

#include <stddef.h>
#include <stdint.h>

/* --- output files (outfile.c) ------------------------------------------------------------ */

/* An output file written under a temporary name in the same folder and
 * moved to its path at the end (replacing what is there only with
 * overwrite), so no partial file is ever left behind. */
struct mms__outfile {
	const char *path; /* a copy, in tmp's allocation */
	char *tmp;
	int overwrite;
};

/* Refuses with -EEXIST when path exists and overwrite is 0, then creates
 * the temporary file (mode 0640, O_EXCL, O_NOFOLLOW). Returns an open
 * descriptor, or a negative code. */
int mms__outfile_create(struct mms__outfile *f, const char *path, int overwrite);
/* Moves the finished temporary file to its path. Returns 0 or a negative
 * code (the temporary file is then removed). */
int mms__outfile_commit(struct mms__outfile *f);
/* Removes the temporary file; safe to call after a commit. */
void mms__outfile_abort(struct mms__outfile *f);
/* Writes all n bytes to fd, retrying short writes and EINTR. Returns 0 or
 * -errno. */
int mms__write_all(int fd, const void *p, size_t n);

#endif /* MMS_OUTFILE_INT_H */
