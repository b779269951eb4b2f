/* SPDX-License-Identifier: MIT */
/* fuzz-dumpcsv.c: libFuzzer target for compare's reader of memscope_dump
 * CSVs: any bytes must be read or refused cleanly (with a line and a
 * reason), at both levels, and what was read must align. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "msmemscope/compare.h"
#include "msmemscope/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const mms_compare_row_t *rows;
	mms_compare_error_t err;
	mms_compare_stats_t st;
	mms_compare_t *c;
	char path[64];
	size_t n, i;
	int fd, level, rc;

	fd = memfd_create("dump.csv", MFD_CLOEXEC);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	for (level = MMS_COMPARE_OP; level <= MMS_COMPARE_KERNEL; level++) {
		if (mms_compare_open(level, &c))
			abort();
		rc = mms_compare_add_csv(c, 0, path, &err);
		if (rc == MMS_ECORRUPT && (!err.line || !err.what[0]))
			abort(); /* a refusal always says where and why */
		if (!rc && !mms_compare_add_csv(c, 1, path, &err) && !mms_compare_align(c, &rows, &n, &st)) {
			/* The same file on both sides pairs every launch. */
			if (st.paired != n || st.only[0] || st.only[1])
				abort();
			for (i = 0; i < n; i++)
				sink += strlen(rows[i].name) + (size_t)rows[i].diff;
		}
		mms_compare_close(c);
	}
	close(fd);
	return 0;
}
