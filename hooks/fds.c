/* SPDX-License-Identifier: MIT */
/* fds.c: the recorder's own descriptors, kept out of the program's way.
 * They sit just above the program's soft limit (RLIMIT_NOFILE), where the
 * hard limit lets the recorder lift it for the moment it takes one, so
 * that the program can still open as many files as natively; else at the
 * top of the range below it. So the program's open() gets the numbers it
 * gets natively, and the program cannot see them
 * through close, dup, dup2, dup3, fcntl, close_range or closefrom: these
 * act on them as on a descriptor that is not open, which is what they are
 * natively. A dup2 or dup3 onto one of ours moves ours elsewhere first,
 * and so does a setrlimit or prlimit that raises the soft limit above one
 * of ours. What the program does with raw system calls cannot be seen
 * here, so whoever uses one of ours after a gap checks first that it is
 * still the file it opened (mms__fd_still_ours). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hooks-int.h"
#include "log.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Where they cannot go above the soft limit (soft and hard limits are
 * one), ours go below this number: the top of the soft limit, but no
 * higher than 4096. Not 1024: with a limit above it (containers often run
 * with 1048576 for both), a log at 1023 took the number of the program's
 * 1021st file, which then got 1024, past select()'s FD_SETSIZE. Not much
 * higher either: the kernel's descriptor table of the process grows to
 * hold the highest open number (8 bytes an entry), and every fork copies
 * it. Measured on the 2-core development machine, a process holding
 * descriptor 1023, 4095, 16383 or 19999 forks (the parent's fork() call,
 * median of 3000) in 145-154, 136-208, 185-316 and 181-324 us: at 4095 no
 * cost apart from noise, at 16K and up some 40 us more (65535 needs a
 * hard limit the machine did not allow; its table is 512 KiB). */
#define TOP_MAX 4096

struct own_fd {
	int fd;                /* -1: a free entry */
	int *slot;             /* where the owner keeps the number; NULL: it cannot move */
	pthread_mutex_t *lock; /* held by the owner around every use of slot */
	dev_t dev;
	ino_t ino;
};

/* The log, libunwind's pipe (two), the userfaultfd and pagemap of dirty.c,
 * and room. */
#define OWN_MAX 8
static struct own_fd own[OWN_MAX] = { { .fd = -1 }, { .fd = -1 }, { .fd = -1 }, { .fd = -1 },
				      { .fd = -1 }, { .fd = -1 }, { .fd = -1 }, { .fd = -1 } };
static pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;
/* The lowest descriptor of ours (INT_MAX: none): the hooks below pass any
 * lower one straight through. */
static int own_min = INT_MAX;

static int (*real_close)(int);
static int (*real_dup)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static int (*real_fcntl)(int, int, ...);
static int (*real_fcntl64)(int, int, ...);
static int (*real_close_range)(unsigned, unsigned, int);
static void (*real_closefrom)(int);
static int (*real_pipe)(int[2]);
static int (*real_pipe2)(int[2], int);
static int (*real_setrlimit)(__rlimit_resource_t, const struct rlimit *);
static int (*real_setrlimit64)(__rlimit_resource_t, const struct rlimit64 *);
static int (*real_prlimit)(pid_t, __rlimit_resource_t, const struct rlimit *, struct rlimit *);
static int (*real_prlimit64)(pid_t, __rlimit_resource_t, const struct rlimit64 *, struct rlimit64 *);

void mms__fds_init(void)
{
	*(void **)&real_close = dlsym(RTLD_NEXT, "close");
	*(void **)&real_dup = dlsym(RTLD_NEXT, "dup");
	*(void **)&real_dup2 = dlsym(RTLD_NEXT, "dup2");
	*(void **)&real_dup3 = dlsym(RTLD_NEXT, "dup3");
	*(void **)&real_fcntl = dlsym(RTLD_NEXT, "fcntl");
	*(void **)&real_fcntl64 = dlsym(RTLD_NEXT, "fcntl64");
	*(void **)&real_close_range = dlsym(RTLD_NEXT, "close_range");
	*(void **)&real_closefrom = dlsym(RTLD_NEXT, "closefrom");
	*(void **)&real_pipe = dlsym(RTLD_NEXT, "pipe");
	*(void **)&real_pipe2 = dlsym(RTLD_NEXT, "pipe2");
	*(void **)&real_setrlimit = dlsym(RTLD_NEXT, "setrlimit");
	*(void **)&real_setrlimit64 = dlsym(RTLD_NEXT, "setrlimit64");
	*(void **)&real_prlimit = dlsym(RTLD_NEXT, "prlimit");
	*(void **)&real_prlimit64 = dlsym(RTLD_NEXT, "prlimit64");
}

/* A hook called before the recorder started (from another library's
 * constructor): dlsym's allocations are the recorder's own. */
static __attribute__((noinline, cold)) void fds_need(void)
{
	int busy = mms__tls_busy;

	mms__tls_busy = 2;
	mms__fds_init();
	mms__tls_busy = busy;
}

/* close() without our hook. */
static int raw_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

static void update_min(void)
{
	int m = INT_MAX;

	for (int i = 0; i < OWN_MAX; i++)
		if (own[i].fd >= 0 && own[i].fd < m)
			m = own[i].fd;
	__atomic_store_n(&own_min, m, __ATOMIC_RELEASE);
}

static struct own_fd *find(int fd)
{
	if (fd < __atomic_load_n(&own_min, __ATOMIC_ACQUIRE))
		return NULL;
	for (int i = 0; i < OWN_MAX; i++)
		if (__atomic_load_n(&own[i].fd, __ATOMIC_ACQUIRE) == fd)
			return &own[i];
	return NULL;
}

int mms__fd_is_own(int fd)
{
	return find(fd) != NULL;
}

/* Above the soft limit: a number there takes none of the program's (the
 * kernel limits the numbers it hands out, not how many are open). The
 * soft limit is lifted for the one call, when the hard limit allows, and
 * put back as it was; only where it is at most OVER_MAX, as a number far
 * up grows the kernel's descriptor table. Returns the number, or -1. */
#define OVER_MAX 65536

/* Lifts the soft limit rl (the current one) by 64 for a call: 0, or -1
 * where the limits do not allow it. The caller puts rl back. */
static int lift(const struct rlimit *rl)
{
	struct rlimit up = *rl;

	if (rl->rlim_cur == RLIM_INFINITY || rl->rlim_cur < 3 || rl->rlim_cur > OVER_MAX ||
	    (rl->rlim_max != RLIM_INFINITY && rl->rlim_max < rl->rlim_cur + 64))
		return -1;
	up.rlim_cur = rl->rlim_cur + 64;
	return real_setrlimit(RLIMIT_NOFILE, &up) ? -1 : 0;
}

static int dup_over(int fd, const struct rlimit *rl)
{
	int r;

	if (lift(rl))
		return -1;
	r = real_fcntl(fd, F_DUPFD_CLOEXEC, (int)rl->rlim_cur);
	real_setrlimit(RLIMIT_NOFILE, rl);
	return r;
}

int mms__open_lifted(const char *path, int flags, mode_t mode)
{
	struct rlimit rl;
	int fd = open(path, flags, mode), err;

	if (fd >= 0 || errno != EMFILE)
		return fd;
	if (!real_setrlimit)
		fds_need();
	/* Every number below the soft limit is the program's: one above it,
	 * where the hard limit lets the limit be lifted for this call. */
	if (getrlimit(RLIMIT_NOFILE, &rl) || lift(&rl)) {
		errno = EMFILE;
		return -1;
	}
	fd = open(path, flags, mode);
	err = errno;
	real_setrlimit(RLIMIT_NOFILE, &rl);
	errno = err;
	return fd;
}

/* A new number for fd out of the program's way: above its soft limit,
 * or the highest free one below the top. Returns it, or -1 with errno. */
static int dup_high(int fd)
{
	struct rlimit rl;
	long top = TOP_MAX;
	int over;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		over = dup_over(fd, &rl);
		if (over >= 0)
			return over;
		if (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < top)
			top = (long)rl.rlim_cur;
	}
	/* F_DUPFD gives the lowest free number from its argument on: try
	 * from the top down until one is free. */
	for (long want = top - 1; want > 2 && want >= top - 64; want--) {
		int r = real_fcntl(fd, F_DUPFD_CLOEXEC, (int)want);
		if (r >= 0 && r < top)
			return r;
		if (r >= 0)
			raw_close(r); /* above the top: want is taken, try below */
		else if (errno != EMFILE && errno != EINVAL)
			return -1;
	}
	errno = EMFILE;
	return -1;
}

int mms__fd_adopt(int fd, int *slot, pthread_mutex_t *lock)
{
	struct stat st;
	int high, i;

	if (!real_fcntl)
		fds_need();
	high = dup_high(fd);
	if (high < 0 || fstat(high, &st)) {
		int err = errno;
		if (high >= 0)
			raw_close(high);
		raw_close(fd);
		return -err;
	}
	raw_close(fd);
	pthread_mutex_lock(&own_lock);
	for (i = 0; i < OWN_MAX && own[i].fd >= 0; i++)
		;
	if (i == OWN_MAX) {
		pthread_mutex_unlock(&own_lock);
		raw_close(high);
		return -EMFILE;
	}
	own[i].slot = slot;
	own[i].lock = lock;
	own[i].dev = st.st_dev;
	own[i].ino = st.st_ino;
	__atomic_store_n(&own[i].fd, high, __ATOMIC_RELEASE);
	update_min();
	pthread_mutex_unlock(&own_lock);
	if (slot)
		*slot = high;
	return high;
}

/* Unregisters o, the number being the program's now. */
static void forget(struct own_fd *o)
{
	pthread_mutex_lock(&own_lock);
	__atomic_store_n(&o->fd, -1, __ATOMIC_RELEASE);
	update_min();
	pthread_mutex_unlock(&own_lock);
}

int mms__fd_still_ours(int fd)
{
	struct own_fd *o = find(fd);
	struct stat st;

	if (!o)
		return 0;
	if (fstat(fd, &st) == 0 && st.st_dev == o->dev && st.st_ino == o->ino)
		return 1;
	/* Closed behind our back (a raw system call), maybe reopened as a
	 * file of the program's: the number is the program's from now on,
	 * its close and dup must reach it. */
	forget(o);
	return 0;
}

void mms__fd_release(int fd)
{
	struct own_fd *o = find(fd);

	/* Closed only while it is still our file. */
	if (o && mms__fd_still_ours(fd)) {
		forget(o);
		raw_close(fd);
	}
}

int mms__fds_unwinder_ok(void)
{
	for (int i = 0; i < OWN_MAX; i++) {
		int fd = __atomic_load_n(&own[i].fd, __ATOMIC_ACQUIRE);
		if (fd >= 0 && !own[i].slot && !mms__fd_still_ours(fd))
			return 0;
	}
	return 1;
}

/* In a fork child the descriptors are the parent's too: the log's is
 * released by the writer; the entries stay (the fork child's are the same
 * open files). The lock may have been held by another thread. */
void mms__fds_after_fork_child(void)
{
	pthread_mutex_init(&own_lock, NULL);
}

/* Moves o, a descriptor of ours with a slot, to a new number from
 * dup_high (own_lock held): where the program is about to put one of its
 * own (dup2, dup3: the program's call closes the old number), or, when
 * higher, from where a raised soft limit made the number the program's
 * (then the old number is closed here). Returns 0, or -1 where it stays:
 * no number to move to, or, for a raised limit, none higher. */
static int move_own(struct own_fd *o, int displaced)
{
	int fd = o->fd, moved;

	pthread_mutex_lock(o->lock);
	moved = dup_high(fd);
	if (moved >= 0 && !displaced && moved < fd) {
		/* The program takes numbers from the lowest up: a lower one
		 * is more in its way than the one it has. */
		raw_close(moved);
		moved = -1;
	}
	if (moved >= 0) {
		*o->slot = moved;
		__atomic_store_n(&o->fd, moved, __ATOMIC_RELEASE);
		if (!displaced)
			raw_close(fd);
	}
	pthread_mutex_unlock(o->lock);
	return moved >= 0 ? 0 : -1;
}

/* The program is about to put a descriptor at number fd (dup2, dup3): if
 * it is ours, move ours elsewhere first; one that cannot move (libunwind's
 * pipe) is given up, and with it the unwinder that holds it. */
static void make_way(int fd)
{
	struct own_fd *o;

	pthread_mutex_lock(&own_lock);
	o = find(fd);
	if (o && (!o->slot || move_own(o, 1))) {
		/* No number to move to: the owner finds its file gone at its
		 * next check. libunwind's pipe: it is not called again. */
		__atomic_store_n(&o->fd, -1, __ATOMIC_RELEASE);
		if (!o->slot)
			mms__unwind_lost_fd();
	}
	update_min();
	pthread_mutex_unlock(&own_lock);
}

/* The program changed its soft descriptor limit (setrlimit, prlimit): a
 * raised one makes the numbers of ours below it the program's (a Java
 * runtime raises it at start, then opens files: natively it gets the
 * numbers up to the new limit one after another), so each that can move
 * goes above the new limit, lifted for the call as at start, or where
 * dup_high puts it, when that is higher than where it is. libunwind's
 * pipe cannot move (libunwind keeps its numbers in variables of its own)
 * and stays: closing it would free its numbers, but another thread may be
 * inside libunwind, which reads a byte from the pipe and writes one into
 * it, and would do so into a file of the program's that took the number.
 * Two numbers skipped past the old limit harm the program less; the pipe
 * exists only once libunwind started (MSMEMSCOPE_UNWIND=libunwind and the
 * check mode: before main; else at the first stack the walker hands to
 * it). A lowered limit leaves ours above it, which the kernel allows:
 * nothing moves. */
static void limit_changed(void)
{
	struct rlimit rl;
	int err = errno;

	if (__atomic_load_n(&own_min, __ATOMIC_ACQUIRE) == INT_MAX || getrlimit(RLIMIT_NOFILE, &rl))
		return;
	/* A vfork child shares our memory but has a descriptor table of its
	 * own: ours are the parent's to move, not its. */
	if (mms__header && mms__header->pid != (uint64_t)getpid())
		return;
	pthread_mutex_lock(&own_lock);
	for (int i = 0; i < OWN_MAX; i++) {
		int fd = own[i].fd;
		if (fd >= 0 && own[i].slot && (rl.rlim_cur == RLIM_INFINITY || (rlim_t)fd < rl.rlim_cur))
			(void)move_own(&own[i], 0);
	}
	update_min();
	pthread_mutex_unlock(&own_lock);
	errno = err;
}

static int not_open(void)
{
	errno = EBADF;
	return -1;
}

#define NEED(fn)                                                                                                   \
	do {                                                                                                       \
		if (unlikely(!real_##fn))                                                                          \
			fds_need();                                                                                \
	} while (0)

MMS_EXPORT int close(int fd)
{
	NEED(close);
	if (unlikely(find(fd) != NULL)) {
		/* libunwind re-making its pipe: its own to close. */
		if (mms__unwinder_code((uintptr_t)__builtin_return_address(0))) {
			mms__fd_release(fd);
			return 0;
		}
		return not_open();
	}
	return real_close(fd);
}

MMS_EXPORT int dup(int fd)
{
	NEED(dup);
	return unlikely(find(fd) != NULL) ? not_open() : real_dup(fd);
}

MMS_EXPORT int dup2(int fd, int to)
{
	NEED(dup2);
	if (unlikely(find(fd) != NULL))
		return not_open();
	if (unlikely(find(to) != NULL) && fd != to)
		make_way(to);
	return real_dup2(fd, to);
}

MMS_EXPORT int dup3(int fd, int to, int flags)
{
	NEED(dup3);
	if (unlikely(find(fd) != NULL))
		return not_open();
	if (unlikely(find(to) != NULL) && fd != to)
		make_way(to);
	return real_dup3(fd, to, flags);
}

/* fcntl's third argument is an int or a pointer; both travel in the same
 * register, so it is passed on as a pointer-sized word. */
static int fcntl_common(int (*real)(int, int, ...), int fd, int cmd, va_list ap)
{
	void *arg = va_arg(ap, void *);

	if (unlikely(find(fd) != NULL))
		return not_open();
	return real(fd, cmd, arg);
}

MMS_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	int r;

	NEED(fcntl);
	va_start(ap, cmd);
	r = fcntl_common(real_fcntl, fd, cmd, ap);
	va_end(ap);
	return r;
}

MMS_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	int r;

	NEED(fcntl64);
	va_start(ap, cmd);
	r = fcntl_common(real_fcntl64 ? real_fcntl64 : real_fcntl, fd, cmd, ap);
	va_end(ap);
	return r;
}

/* Closes [lo, hi] but ours, in the pieces between them. */
MMS_EXPORT int close_range(unsigned lo, unsigned hi, int flags)
{
	int mine[OWN_MAX], n = 0;

	NEED(close_range);
	if (!real_close_range) {
		errno = ENOSYS;
		return -1;
	}
	if (lo > hi || (unsigned)__atomic_load_n(&own_min, __ATOMIC_ACQUIRE) > hi)
		return real_close_range(lo, hi, flags);
	for (int i = 0; i < OWN_MAX; i++) {
		int fd = __atomic_load_n(&own[i].fd, __ATOMIC_ACQUIRE);
		if (fd >= 0 && (unsigned)fd >= lo && (unsigned)fd <= hi)
			mine[n++] = fd;
	}
	/* In increasing order. */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && mine[j - 1] > mine[j]; j--) {
			int x = mine[j];
			mine[j] = mine[j - 1];
			mine[j - 1] = x;
		}
	for (int i = 0; i <= n; i++) {
		unsigned a = i ? (unsigned)mine[i - 1] + 1 : lo;
		unsigned b = i < n ? (unsigned)mine[i] - 1 : hi;
		if (i < n && (unsigned)mine[i] == a) /* adjacent: nothing between */
			continue;
		if (a <= b && real_close_range(a, b, flags))
			return -1;
	}
	return 0;
}

MMS_EXPORT void closefrom(int lo)
{
	NEED(closefrom);
	if (lo < 0)
		lo = 0;
	if (__atomic_load_n(&own_min, __ATOMIC_ACQUIRE) == INT_MAX && real_closefrom) {
		real_closefrom(lo);
		return;
	}
	if (close_range((unsigned)lo, ~0u, 0) == 0)
		return;
	/* No close_range in this kernel: one by one, up to the limit. */
	for (long fd = lo, n = sysconf(_SC_OPEN_MAX); fd < n; fd++)
		if (!find((int)fd))
			real_close((int)fd);
}

/* libunwind's pipe (it checks addresses by writing them into it): made at
 * the top of the range like ours, so it neither takes the program's lowest
 * numbers nor can be closed by the program. */
static int own_pipe(int fds[2])
{
	int high[2];

	high[0] = mms__fd_adopt(fds[0], NULL, NULL);
	high[1] = high[0] < 0 ? -1 : mms__fd_adopt(fds[1], NULL, NULL);
	if (high[1] < 0) {
		/* No room at the top: libunwind gets no pipe (and is not
		 * used), rather than one among the program's numbers. */
		if (high[0] < 0)
			raw_close(fds[1]);
		else
			mms__fd_release(high[0]);
		fds[0] = fds[1] = -1;
		mms__unwind_lost_fd();
		errno = EMFILE;
		return -1;
	}
	fds[0] = high[0];
	fds[1] = high[1];
	return 0;
}

MMS_EXPORT int pipe2(int fds[2], int flags)
{
	NEED(pipe2);
	if (real_pipe2(fds, flags))
		return -1;
	if (unlikely(mms__unwinder_code((uintptr_t)__builtin_return_address(0))))
		return own_pipe(fds);
	return 0;
}

MMS_EXPORT int pipe(int fds[2])
{
	NEED(pipe);
	if (real_pipe(fds))
		return -1;
	if (unlikely(mms__unwinder_code((uintptr_t)__builtin_return_address(0))))
		return own_pipe(fds);
	return 0;
}

void mms__fds_limit_set(long pid, long resource)
{
	if (resource == RLIMIT_NOFILE && (pid == 0 || pid == getpid()))
		limit_changed();
}

/* setrlimit, prlimit: the program's call as it is, its result and errno
 * the native ones; then, when it set this process's descriptor limit
 * (limits not NULL), ours move out of the way of a raised one. A failed
 * call changed nothing. Returns r, the call's result. */
static int limit_set(int r, pid_t pid, int resource, const void *limits)
{
	if (r == 0 && limits)
		mms__fds_limit_set(pid, resource);
	return r;
}

MMS_EXPORT int setrlimit(__rlimit_resource_t resource, const struct rlimit *rl)
{
	NEED(setrlimit);
	return limit_set(real_setrlimit(resource, rl), 0, resource, rl);
}

MMS_EXPORT int setrlimit64(__rlimit_resource_t resource, const struct rlimit64 *rl)
{
	NEED(setrlimit64);
	return limit_set(real_setrlimit64(resource, rl), 0, resource, rl);
}

MMS_EXPORT int prlimit(pid_t pid, __rlimit_resource_t resource, const struct rlimit *rl, struct rlimit *old)
{
	NEED(prlimit);
	return limit_set(real_prlimit(pid, resource, rl, old), pid, resource, rl);
}

MMS_EXPORT int prlimit64(pid_t pid, __rlimit_resource_t resource, const struct rlimit64 *rl, struct rlimit64 *old)
{
	NEED(prlimit64);
	return limit_set(real_prlimit64(pid, resource, rl, old), pid, resource, rl);
}
