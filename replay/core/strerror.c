/* SPDX-License-Identifier: MIT */
/* strerror.c: explains the replay library's error codes. */
#include <errno.h>
#include <string.h>

#include "format.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "base-int.h"

MMS__EXPORT const char *mms_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case MMS_EBADMAGIC:
		return "not a msmemscope log";
	case MMS_EVERSION:
		return "a msmemscope log of another format version";
	case MMS_ETRUNCATED:
		return "the log is truncated";
	case MMS_ECORRUPT:
		return "the log is corrupt";
	case MMS_EORDER:
		return "events out of order in the log";
	case MMS_EUSAGE:
		return "invalid argument to the replay library";
	case MMS_EOVERLOG:
		return "that file is the log being read; name another output file";
	case MMS_ENOTFILE:
		return "not a regular file, and this output cannot be written there (a database or an index needs a regular file; other outputs also go to a character device or a FIFO)";
	default:
		/* strerror() is not thread-safe in general, but glibc returns
		 * static strings for every known errno value. */
		if (err < 0 && err > -4096)
			return strerror(-err);
		return "unknown error";
	}
}

MMS__EXPORT const char *mms_cut_reason(int cut_errno)
{
	const char *w = mms_cut_words(cut_errno);

	if (w)
		return w;
	return cut_errno ? strerror(cut_errno) : "no reason recorded";
}
