/* SPDX-License-Identifier: MIT */
/* runtime.c: what the C and C++ runtimes keep for themselves, as the
 * recorder marked it (format.h, enum mms_runtime_kind). */
#include "replay-int.h"

MMS__EXPORT const char *mms_runtime_name(unsigned kind)
{
	switch (kind) {
	case MMS_RUNTIME_C:
		return "c";
	case MMS_RUNTIME_CXX:
		return "cxx";
	case MMS_RUNTIME_THREAD:
		return "thread";
	case MMS_RUNTIME_STDIO:
		return "stdio";
	default:
		return NULL;
	}
}

MMS__EXPORT const char *mms_runtime_what(unsigned kind)
{
	switch (kind) {
	case MMS_RUNTIME_C:
		return "glibc or ld.so, for itself, before main";
	case MMS_RUNTIME_CXX:
		return "libstdc++, for itself, before main (its exception pool, iostream set-up)";
	case MMS_RUNTIME_THREAD:
		return "a thread's thread-local storage vector, allocated by pthread_create";
	case MMS_RUNTIME_STDIO:
		return "the buffer of stdin, stdout or stderr";
	default:
		return NULL;
	}
}
