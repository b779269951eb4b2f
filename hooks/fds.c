/* SPDX-License-Identifier: MIT */
/* fds.c: the recorder's own descriptors, kept out of the program's way.
 * They sit just above the program's soft limit (RLIMIT_NOFILE), where the
 * hard limit lets the recorder lift it for the moment it takes one, so
 * that the program can still open as many files as natively; else at the
 * top of the range below it. So the program's open() gets the numbers it
 * gets natively, and the program cannot see them
 * through close, dup, dup2, dup3, fcntl, close_range or closefrom: these
 * act on them as on a descriptor that is not open, which is what they are
 * natively. A dup2 or dup3 onto one of ours moves ours elsewhere first.
 * What the program does with raw system calls cannot be seen here, so
 * whoever uses one of ours after a gap checks first that it is still the
 * file it opened (mms__fd_still_ours). */
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

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Our descriptors go below this number: the top of the soft limit, but no
 * higher than 1024, because a higher number grows the kernel's descriptor
 * table of the process, which every fork then copies. */
#define TOP_MAX 1024

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
	return setrlimit(RLIMIT_NOFILE, &up) ? -1 : 0;
}

static int dup_over(int fd, const struct rlimit *rl)
{
	int r;

	if (lift(rl))
		return -1;
	r = real_fcntl(fd, F_DUPFD_CLOEXEC, (int)rl->rlim_cur);
	setrlimit(RLIMIT_NOFILE, rl);
	return r;
}

int mms__open_lifted(const char *path, int flags, mode_t mode)
{
	struct rlimit rl;
	int fd = open(path, flags, mode), err;

	if (fd >= 0 || errno != EMFILE)
		return fd;
	/* Every number below the soft limit is the program's: one above it,
	 * where the hard limit lets the limit be lifted for this call. */
	if (getrlimit(RLIMIT_NOFILE, &rl) || lift(&rl)) {
		errno = EMFILE;
		return -1;
	}
	fd = open(path, flags, mode);
	err = errno;
	setrlimit(RLIMIT_NOFILE, &rl);
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

/* The program is about to put a descriptor at number fd (dup2, dup3): if
 * it is ours, move ours elsewhere first; one that cannot move (libunwind's
 * pipe) is given up, and with it the unwinder that holds it. */
static void make_way(int fd)
{
	struct own_fd *o;

	pthread_mutex_lock(&own_lock);
	o = find(fd);
	if (o && o->slot) {
		pthread_mutex_lock(o->lock);
		int moved = dup_high(fd);
		if (moved >= 0) {
			*o->slot = moved;
			__atomic_store_n(&o->fd, moved, __ATOMIC_RELEASE);
		} else {
			/* No number to move to: the owner finds its file gone
			 * at its next check. */
			__atomic_store_n(&o->fd, -1, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(o->lock);
	} else if (o) {
		__atomic_store_n(&o->fd, -1, __ATOMIC_RELEASE);
		mms__unwind_lost_fd();
	}
	update_min();
	pthread_mutex_unlock(&own_lock);
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
