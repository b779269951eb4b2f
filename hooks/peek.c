/* SPDX-License-Identifier: MIT */
/* peek.c: reading the program's memory without trusting it. A pointer the
 * program hands the recorder (a block it frees, a watched range) may be
 * wild: the recorder must not fault where the program natively would
 * not, nor dereference what libc has not accepted yet. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hooks-int.h"

int mms__peek(void *dst, uintptr_t addr, size_t size)
{
	struct iovec local = { dst, size };
	struct iovec remote = { (void *)addr, size };
	int saved_errno = errno;
	ssize_t n;

	/* process_vm_readv on ourselves fails with EFAULT instead of
	 * faulting when the range is not readable. */
	n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (n == (ssize_t)size) {
		errno = saved_errno;
		return 0;
	}
	n = n < 0 && (errno == ENOSYS || errno == EPERM) ? -2 : -1;
	errno = saved_errno;
	return (int)n;
}

int mms__readable(uintptr_t addr, size_t size)
{
	/* One byte of each page and the last byte, up to 64 pages a call:
	 * a range is readable where every page it touches is. */
	enum { BATCH = 64 };
	struct iovec local, remote[BATCH];
	uint8_t sink[BATCH];
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), at = addr, last;
	int saved_errno = errno, rc = 0;

	if (!size)
		return 0;
	if (addr + (size - 1) < addr)
		return -1; /* wraps around */
	last = addr + (size - 1);
	local.iov_base = sink;
	while (!rc) {
		unsigned n = 0;
		ssize_t got;

		while (n < BATCH) {
			remote[n].iov_base = (void *)at;
			remote[n++].iov_len = 1;
			if ((at & ~(page - 1)) == (last & ~(page - 1))) {
				if (at != last) {
					if (n == BATCH)
						break;
					remote[n].iov_base = (void *)last;
					remote[n++].iov_len = 1;
				}
				at = 0;
				break;
			}
			at = (at & ~(page - 1)) + page;
		}
		local.iov_len = n;
		got = process_vm_readv(getpid(), &local, 1, remote, n, 0);
		if (got != (ssize_t)n)
			rc = got < 0 && (errno == ENOSYS || errno == EPERM) ? -2 : -1;
		else if (!at)
			break;
	}
	errno = saved_errno;
	return rc;
}

/* Whether the allocator behind the hooks is glibc's, whose chunk header
 * (the word before a block: its size, low bits flags) tells a block's
 * extent: 1 yes, 0 no, -1 not known yet. */
static int glibc_heap = -1;

uintptr_t mms__block_end(uintptr_t p)
{
	uint64_t hdr, size;

	if (glibc_heap < 0) {
		void *libc_malloc = dlsym(RTLD_DEFAULT, "__libc_malloc");
		glibc_heap = libc_malloc && libc_malloc == (void *)mms__real.malloc;
	}
	/* glibc's blocks are 16-byte aligned, behind a header. */
	if (p < 4096 || (p & 15) || mms__peek(&hdr, p - 8, 8))
		return 0;
	if (!glibc_heap)
		return p + 1; /* another allocator: only a range starting at p */
	size = hdr & ~(uint64_t)7;
	if (size < 32 || (size & 15) || p + size < p)
		return 0;
	/* In use: the size less the header (two words for an mmapped one),
	 * as malloc_usable_size() counts it. */
	return p + size - (hdr & 2 ? 16 : 8);
}
