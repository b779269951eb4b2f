/* SPDX-License-Identifier: MIT */
/* runtime.c: what the C and C++ runtimes keep for themselves, as the
 * recorder marked it (format.h: ALLOC_RT records, the META records
 * "runtime_live" and "freeres"): blocks that are not the program's leaks. */
#include <string.h>

#include "replay-int.h"

_Static_assert((int)MMS_RUNTIME_LIBC == (int)MMS_RT_C && (int)MMS_RUNTIME_LIBCXX == (int)MMS_RT_CXX &&
		       (int)MMS_RUNTIME_TLS == (int)MMS_RT_THREAD && (int)MMS_RUNTIME_STDIO == (int)MMS_RT_STDIO,
	       "the public runtime kinds are the format's");

MMS__EXPORT const char *mms_runtime_name(unsigned kind)
{
	static const char *const names[MMS_RUNTIME_COUNT] = { NULL, "c", "cxx", "thread", "stdio" };

	return kind < MMS_RUNTIME_COUNT ? names[kind] : NULL;
}

MMS__EXPORT const char *mms_runtime_what(unsigned kind)
{
	static const char *const what[MMS_RUNTIME_COUNT] = {
		NULL,
		"glibc or ld.so, for itself, before main",
		"libstdc++, for itself, before main (its exception pool, iostream set-up)",
		"a thread's thread-local storage vector, allocated by pthread_create",
		"the buffer of stdin, stdout or stderr",
	};

	return kind < MMS_RUNTIME_COUNT ? what[kind] : NULL;
}

unsigned mms__blk_runtime_at_end(const mms_log_t *log, const struct mms__blk *b)
{
	const uint8_t *p, *end;
	const char *v;
	uint64_t kind, addr;
	size_t len;

	if (b->mem != MMS_MEM_HOST)
		return 0;
	if (b->runtime)
		return b->runtime;
	/* (kind, address) pairs of blocks live at exit, written when no
	 * freeres could run. */
	if (mms_log_meta(log, "runtime_live", &v, &len))
		return 0;
	p = (const uint8_t *)v;
	end = p + len;
	while (!mms_get_u(&p, end, &kind) && !mms_get_u(&p, end, &addr))
		if (addr == b->addr && kind < MMS_RUNTIME_COUNT)
			return (unsigned)kind;
	return 0;
}
