/* SPDX-License-Identifier: MIT */
/* fuzz-reader.c: libFuzzer target for the log reader: any bytes must open
 * or fail cleanly, and an opened log must iterate and summarize. */
#include <stdlib.h>
#include <string.h>

#include "replay-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mms_open_error_t err;
	mms_summary_t sum;
	mms_log_t *log;
	mms_iter_t *it;
	mms_event_t ev;
	uint64_t ips[8];
	void *buf;
	uint32_t id;

	/* A mapped file is page-aligned; give the reader the same. */
	buf = aligned_alloc(4096, size ? (size + 4095) / 4096 * 4096 : 4096);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (mms__log_open_buf(buf, size, &log, &err) == 0) {
		if (mms_iter_open(log, &it) == 0) {
			while (mms_iter_next(it, &ev) == 1)
				;
			mms_iter_close(it);
		}
		mms_summarize(log, &sum);
		for (id = 0; id < 16; id++)
			mms_log_stack(log, id, ips, 8);
		mms_log_close(log);
	}
	free(buf);
	return 0;
}
