/* SPDX-License-Identifier: MIT */
/* unwind.c: captures C call stacks with libunwind and interns them as a
 * path of (parent, ip) nodes, reusing the outer frames of the last stack. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>

#include "hooks-int.h"

/* Our own code's address range: frames there are the hook, not the program. */
static uintptr_t self_lo, self_hi;
/* libunwind's code: it maps its per-thread caches inside unw_backtrace()
 * (not recorded) and unmaps them in a thread-exit destructor of its own,
 * through munmap(), which must not be recorded either. */
static uintptr_t unw_lo, unw_hi;

struct code_range {
	uintptr_t here; /* an address in the code looked for */
	uintptr_t *lo, *hi;
};

static int find_code(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct code_range *r = arg;
	(void)size;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && r->here >= lo && r->here < hi) {
			*r->lo = lo;
			*r->hi = hi;
			return 1;
		}
	}
	return 0;
}

int mms__unwinder_code(uintptr_t ip)
{
	return ip >= unw_lo && ip < unw_hi;
}

void mms__unwind_init(void)
{
	struct code_range self = { (uintptr_t)&mms__unwind_init, &self_lo, &self_hi };
	struct code_range unw = { (uintptr_t)&unw_backtrace, &unw_lo, &unw_hi };

	dl_iterate_phdr(find_code, &self);
	dl_iterate_phdr(find_code, &unw);
	/* One cache of unwinding info per thread: no lock on the hot path
	 * (the default cache is global and locked). */
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

uint32_t mms__capture_stack_slow(struct mms_thread *t)
{
	uint32_t depth = mms__config.depth;
	void *buf[MMS_MAX_DEPTH + 8];
	int n, skip = 0, busy = mms__tls_busy;
	uint32_t k, c, parent;

	mms__tls_busy = 2; /* libunwind may allocate: not the program's */
	n = unw_backtrace(buf, (int)depth + 8);
	mms__tls_busy = busy;
	while (skip < n && (uintptr_t)buf[skip] >= self_lo && (uintptr_t)buf[skip] < self_hi)
		skip++;
	n -= skip;
	if (n > (int)depth)
		n = (int)depth;
	if (n <= 0)
		return 0;
	/* Frames outermost first: buf[skip + n - 1] ... buf[skip]. Keep the
	 * prefix shared with the previous stack of this thread. */
	k = (uint32_t)n;
	for (c = 0; c < k && c < t->nframes && t->ips[c] == (uintptr_t)buf[skip + n - 1 - c]; c++)
		;
	if (c == k && k == t->nframes)
		return t->stack_id;
	parent = c ? t->ids[c - 1] : 0;
	for (uint32_t i = c; i < k; i++) {
		uintptr_t ip = (uintptr_t)buf[skip + n - 1 - i];
		t->ips[i] = ip;
		t->ids[i] = parent = mms__intern_frame(t, parent, ip);
	}
	t->nframes = k;
	t->stack_id = parent;
	return parent;
}
