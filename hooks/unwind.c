/* SPDX-License-Identifier: MIT */
/* unwind.c: captures C call stacks with the unwinder chosen at start-up
 * (unwind.h: the walker of our own, libunwind, or the check mode) and
 * interns them as a path of (parent, ip) nodes, reusing the outer frames
 * of the thread's last stack. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "enter.h"
#include "objects.h"
#include "unwind.h"

uintptr_t mms__self_lo, mms__self_hi;

/* The unwinder of this process: set once, before the first capture. */
static const struct mms_unwinder *unwinder = &mms__unwind_walker;

struct code_range {
	uintptr_t here; /* an address in the object looked for, or its base */
	uintptr_t *lo, *hi;
};

/* The object that loads r->here (or whose base it is): the span of its
 * executable segments. */
static int find_code(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct code_range *r = arg;
	int hit = r->here == info->dlpi_addr;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum && !hit; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		hit = ph->p_type == PT_LOAD && r->here - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz;
	}
	if (!hit)
		return 0;
	mms__code_span(info, r->lo, r->hi);
	return 1;
}

void mms__code_span(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	*lo = *hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (!*lo || a < *lo)
			*lo = a;
		if (b > *hi)
			*hi = b;
	}
}

void mms__code_range(uintptr_t here, uintptr_t *lo, uintptr_t *hi)
{
	struct code_range r = { here, lo, hi };

	*lo = *hi = 0;
	mms__phdr_iterate(find_code, &r);
}

/* Whether glibc's own calls of realloc() reach the recorder's hook (no
 * realloc of the program's or of a library ahead of ours in the global
 * scope): pthread_getattr_np()'s allocations then go to the recorder's
 * arena, whatever lock the program's allocator holds (mms__stack_note()). */
static int realloc_ours;

void mms__unwind_init(void)
{
	uintptr_t r;

	mms__code_range((uintptr_t)&mms__unwind_init, &mms__self_lo, &mms__self_hi);
	r = (uintptr_t)dlsym(RTLD_DEFAULT, "realloc");
	realloc_ours = r - mms__self_lo < mms__self_hi - mms__self_lo;
	if (mms__config.unwind_check)
		unwinder = &mms__unwind_check;
	else if (mms__config.unwind == MMS_CONFIG_UNWIND_LIBUNWIND)
		unwinder = &mms__unwind_libunwind;
	else
		unwinder = &mms__unwind_walker;
	unwinder->init();
	/* Where libunwind walks every stack, it starts now, while the
	 * process has one thread: its start makes a pipe, whose number is
	 * put out of the program's way (fds.c), and in a process with threads
	 * the kernel's growth of the descriptor table for it waits for an RCU
	 * grace period, during which every other thread's stack would go
	 * without libunwind (it is not ready): the check mode saw a thread's
	 * every stack so. The walker starts it on the first stack it cannot
	 * walk, which most programs never have. */
	if (mms__config.call_stack && unwinder != &mms__unwind_walker)
		mms__libunwind_start();
}

void mms__unwind_after_fork_child(void)
{
	/* The module table's lock is taken outside the walker too (dlclose). */
	mms__cfi_after_fork_child();
	unwinder->after_fork_child();
}

void mms__unwind_report(void)
{
	unwinder->report();
}

uint32_t mms__unwind_intern(struct mms_thread *t, const uintptr_t *ips, int n)
{
	uint32_t k = (uint32_t)n, c, parent;

	if (n <= 0)
		return 0;
	/* Frames outermost first: ips[n - 1] ... ips[0]. Keep the prefix
	 * shared with the previous stack of this thread. */
	for (c = 0; c < k && c < t->nframes && t->ips[c] == ips[n - 1 - c]; c++)
		;
	if (c == k && k == t->nframes)
		return t->stack_id;
	parent = c ? t->ids[c - 1] : 0;
	for (uint32_t i = c; i < k; i++) {
		uintptr_t ip = ips[n - 1 - i];
		t->ips[i] = ip;
		t->ids[i] = parent = mms__intern_frame(t, parent, ip);
	}
	t->nframes = k;
	t->stack_id = parent;
	return parent;
}

/* Where a thread's stack is, from /proc/self/maps read with system calls
 * alone: the mapping that holds s->at, and the end of the one below it. */
struct stack_span {
	uintptr_t at, below, lo, hi;
};

static int span_line(char *line, void *ctx)
{
	struct stack_span *s = ctx;
	char *e;
	uintptr_t lo = (uintptr_t)strtoull(line, &e, 16), hi;

	if (*e != '-')
		return -1;
	hi = (uintptr_t)strtoull(e + 1, NULL, 16);
	if (s->at < lo)
		return -1; /* the lines are in address order: none holds it */
	if (s->at >= hi) {
		s->below = hi;
		return 0;
	}
	s->lo = lo;
	s->hi = hi;
	return 1;
}

extern void *__libc_stack_end;

/* The bounds without pthread_getattr_np(), which allocates with the
 * program's malloc (the affinity mask; the main thread's maps, read with
 * stdio): the mapping the stack pointer is in; the process's first stack
 * (the one that holds __libc_stack_end) grows down to its limit, as glibc
 * counts it, not into the mapping below. Returns 0, or -1: not found (on
 * a signal stack, which is not the thread's). */
static int bounds_from_maps(uintptr_t *lo, uintptr_t *hi)
{
	struct stack_span s = { 0, 0, 0, 0 };
	uintptr_t end = (uintptr_t)__libc_stack_end;
	struct rlimit rl;
	stack_t ss;

	if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK))
		return -1;
	s.at = (uintptr_t)__builtin_frame_address(0);
	if (mms__proc_lines("/proc/self/maps", span_line, &s) != 1)
		return -1;
	*lo = s.lo;
	*hi = s.hi;
	if (end - s.lo < s.hi - s.lo && getrlimit(RLIMIT_STACK, &rl) == 0) {
		uintptr_t room = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > s.hi ? s.hi : (uintptr_t)rl.rlim_cur;

		*lo = s.hi - room > s.below ? s.hi - room : s.below;
	}
	return 0;
}

/* The calling thread's stack, [*lo, *hi): 0, or -1 when it cannot be
 * told. */
static int stack_span(struct mms_thread *t, uintptr_t *lo, uintptr_t *hi)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;
	int busy = mms__tls_busy, rc = -1;

	/* pthread_getattr_np() is the cheap way for a thread of the
	 * program's (its main thread's is /proc/self/maps either way), but
	 * it allocates, and holds the thread's lock meanwhile: not from
	 * inside it (a JVM's and Rust's threads begin with that call, and
	 * their first allocation is its own), nor where the program's
	 * allocator may be holding its lock (t->alloc_barred: it maps memory
	 * so; chromium's fork child waited for PartitionAlloc's lock
	 * forever), nor for the main thread. */
	if (mms__tls_getattr || t->alloc_barred || t->tid == (pid_t)syscall(SYS_getpid))
		return bounds_from_maps(lo, hi);
	mms__tls_busy = 2;
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size) {
			*lo = (uintptr_t)addr;
			*hi = (uintptr_t)addr + size;
			rc = 0;
		}
		pthread_attr_destroy(&attr);
	}
	mms__tls_busy = busy;
	return rc;
}

void mms__stack_bounds(struct mms_thread *t)
{
	/* Found at the thread's registration already, or now. */
	if (t->bounds_hi) {
		t->stack_lo = t->bounds_lo;
		t->stack_hi = t->bounds_hi;
	} else if (stack_span(t, &t->stack_lo, &t->stack_hi)) {
		t->stack_lo = 0;
		t->stack_hi = 1; /* unknown */
	}
}

void mms__stack_note(struct mms_thread *t)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;
	int busy = mms__tls_busy;

	t->bounds_lo = t->bounds_hi = 0;
	/* glibc's word alone: the mapping that holds the stack pointer
	 * may hold more than the thread's stack (one the program gave it
	 * with pthread_attr_setstack, in a larger mapping). Not from inside
	 * pthread_getattr_np() (its lock is held), nor for the first
	 * thread (its stack is [stack]). */
	if (!realloc_ours || mms__tls_getattr || t->tid == (pid_t)syscall(SYS_getpid))
		return;
	mms__tls_busy = 2;
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size) {
			t->bounds_lo = (uintptr_t)addr;
			t->bounds_hi = (uintptr_t)addr + size;
		}
		pthread_attr_destroy(&attr);
	}
	mms__tls_busy = busy;
}

int mms__libunwind_room(const struct mms_thread *t)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	stack_t ss;

	if (sp >= t->stack_lo && sp < t->stack_hi)
		return 1; /* the thread's own stack */
	if (sigaltstack(NULL, &ss) || !(ss.ss_flags & SS_ONSTACK))
		return 1;
	return sp > (uintptr_t)ss.ss_sp && sp - (uintptr_t)ss.ss_sp >= MMS_LIBUNWIND_ROOM;
}

/* The one call through the table on the way of a capture: the walk. */
int mms__driver_through_libc(struct mms_thread *t, uintptr_t fp)
{
	uintptr_t *ips = t->frames;
	int n;

	/* The walker alone (libunwind takes 5 KiB of stack and the loader's
	 * lock): with libunwind configured, or in the check mode, no look. */
	if (unwinder != &mms__unwind_walker || mms__phdr_unsafe())
		return 0;
	n = mms__walker_peek(t, ips, 8, fp);
	for (int i = 0; i < n; i++)
		if (!mms__in_code(&mms__libc_code, ips[i]))
			return mms__in_cuda(ips[i]);
	return 0;
}

/* pthread_getattr_np() holds its thread's lock while it allocates (the
 * affinity mask it reallocates, the main thread's /proc/self/maps read),
 * and a thread's first capture needs the thread's stack: from inside
 * that function, mms__stack_bounds() must not call it (it waited for the
 * lock forever: a JVM's threads, Rust's and rustc's, whose allocator maps
 * memory there, begin with that call). So the function is interposed to
 * say when the thread is inside it. */
__thread int mms__tls_getattr;

MMS_EXPORT int pthread_getattr_np(pthread_t thread, pthread_attr_t *attr)
{
	int r;

	if (unlikely(!mms__real.pthread_getattr_np)) {
		mms__init_resolve();
		if (!mms__real.pthread_getattr_np)
			return ENOSYS;
	}
	mms__tls_getattr++;
	r = mms__real.pthread_getattr_np(thread, attr);
	mms__tls_getattr--;
	return r;
}

uint32_t mms__capture_stack_slow(struct mms_thread *t, uintptr_t fp)
{
	const struct mms_unwinder *u = unwinder;
	uint32_t id = 0;

	if (mms__config.call_stack) {
		/* The hooked call's return address: guard mode's hooks say
		 * it; else fp is the hook's frame, with it above (where fp is
		 * another frame of ours, an address of neither ld.so nor
		 * libc). */
		uintptr_t ra = t->hook_ra ? t->hook_ra : ((const uintptr_t *)fp)[1];

		if (unlikely(!t->stack_hi))
			u->thread_start(t); /* its stack's bounds, first */
		t->loader_call = mms__in_code(&mms__ldso_code, ra);
		id = u->walk(t, fp, (int)mms__config.call_stack);
		t->loader_call = 0;
	}
	return t->last_stack = mms__py_depth ? mms__pystack_capture(t, id) : id;
}
