/* SPDX-License-Identifier: MIT */
/* process.c: follows the life of the process: fork, exec, exit and _exit,
 * and dlclose, so that each process image has its own log and each log
 * says how its image ended. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "enter.h"
#include "hooks-int.h"
#include "mimalloc.h"
#include "log.h"
#include "objects.h"
#include "stamp.h"

/* The process is ending (exit's destructors, or _exit): write the FINI
 * event and mark the log complete. Recording goes on after it. */
static void mark_end(void)
{
	static int done;
	struct mms_thread *t;
	uint8_t *p;

	/* Sandboxed (below): recording stopped, and
	 * no stamp may be read. */
	if (mms__tls_busy || mms__hands_off_now())
		return;
	/* A fork child that did nothing else still has a log: its heap at
	 * exit is what it inherited. */
	if (!mms__active)
		mms__log_open_pending();
	/* A vfork child shares our memory and log: its _exit is not ours. */
	if (!mms__active || mms__header->pid != (uint64_t)getpid() || __atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return;
	mms__tls_busy = 2;
	t = mms__thread();
	if (t && mms__recording)
		mms__guard_check_all(t);
	if (t && (p = mms__rec_begin(t, 16)))
		mms__rec_commit(t, mms__rec_head(t, p, MMS_TAG_SYSTEM | MMS_SYSTEM_FINI, mms__stamp_obtain()));
	mms__log_finish();
	mms__unwind_report();
	mms__tls_busy = 0;
}

__attribute__((destructor)) static void hooks_destructor(void)
{
	mark_end();
}

/* Shells and forked children leave with _exit, which runs no destructor
 * and no freeres: the scan at exit reads a shell's memory as it left it
 * (not a fork child's: mms__reach_at_exit). */
MMS_EXPORT void _exit(int status)
{
	mark_end();
	/* Read from this frame up: the recorder's own below it. */
	mms__reach_at_exit((uintptr_t)__builtin_frame_address(0));
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

MMS_EXPORT void _Exit(int status)
{
	_exit(status);
}

/* --- fork ------------------------------------------------------------------
 * The forking thread writes a FORK event into the parent's log just before
 * the fork, and the child's log names it, so that a replay of the child
 * starts from the parent's heap at that event. The handlers are the
 * process's first (below), so the prepare handler runs last, as near the
 * fork as a handler gets, and the child's and parent's run first.
 * Other threads of the parent may be inside a hook meanwhile: a free
 * stamped before the FORK event whose memory is released after the fork
 * (or an allocation made before the fork and stamped after it) puts that
 * block on the wrong side; doc/recorder.md says so. */

static uint64_t fork_count;               /* FORK events this process wrote */
static __thread uint64_t tls_fork_number; /* this thread's last, 0: none */
static __thread uint64_t tls_fork_stamp;
/* The recorder had started when this thread's fork began: the handlers do
 * more than hold and release the locks. */
static __thread int tls_fork_live;

static void atfork_prepare(void)
{
	struct mms_thread *t;
	uint8_t *p;

	tls_fork_number = 0;
	tls_fork_live = __atomic_load_n(&mms__init_state, __ATOMIC_ACQUIRE) == MMS_INIT_DONE;
	if (!tls_fork_live)
		goto locks;
	/* A fork from a signal handler that interrupted a hook: the record
	 * under way cannot be interleaved with; the child's log says so. */
	if (mms__tls_busy)
		return;
	mms__tls_busy = 2;
	/* A child forking before its first event opens its log now: its own
	 * child's log will name it. */
	if (mms__recording_now() && (t = mms__thread()) && (p = mms__rec_begin(t, 1 + 2 * 10))) {
		uint64_t n = __atomic_add_fetch(&fork_count, 1, __ATOMIC_RELAXED);

		p = mms__rec_head(t, p, MMS_TAG_SYSTEM | MMS_SYSTEM_FORK, mms__stamp_obtain());
		mms__rec_commit(t, mms_put_u(p, n));
		tls_fork_number = n;
		tls_fork_stamp = t->prev_stamp; /* as written, after any clamping */
	}
	mms__tls_busy = 0;
	/* The modules, for the child's log (modules.c): before the locks
	 * below, which another thread's scan may still take. */
	mms__modules_snapshot();
locks:
	/* Last: held across the fork, so that no thread is half-way through
	 * guard mode's set and quarantine or the arena's lists when the
	 * child's copy is made. */
	mms__guard_before_fork();
	mms__mi_before_fork();
	mms__dtv_before_fork();
	mms__arena_before_fork();
	mms__own_before_fork();
}

static void atfork_child(void)
{
	int busy = mms__tls_busy;

	mms__tls_busy = 2;
	mms__own_after_fork();
	mms__arena_after_fork();
	mms__dtv_after_fork();
	mms__mi_after_fork();
	mms__guard_after_fork();
	if (!tls_fork_live) {
		mms__tls_busy = busy;
		return;
	}
	mms__modules_after_fork(1);
	/* Sandboxed (below): the child records nothing either, and makes
	 * no system call of ours. */
	if (mms__hands_off_now()) {
		mms__tls_busy = busy;
		return;
	}
	mms__fds_after_fork_child();
	fork_count = 0;
	mms__gdb_after_fork_child();
	mms__watch_after_fork_child();
	mms__log_after_fork_child(tls_fork_number, tls_fork_stamp);
	mms__unwind_after_fork_child();
	mms__pystack_after_fork_child();
	mms__tls_busy = busy;
}

static void atfork_parent(void)
{
	mms__own_after_fork();
	mms__arena_after_fork();
	mms__dtv_after_fork();
	mms__mi_after_fork();
	mms__guard_after_fork();
	if (tls_fork_live)
		mms__modules_after_fork(0);
}

/* The handlers hold the recorder's locks across the fork, and the other
 * threads' hooks wait for them meanwhile. A handler registered earlier
 * would run its prepare after ours: where it takes the program
 * allocator's lock (PartitionAlloc's, jemalloc's arenas), which another
 * thread holds while its mprotect waits in our hook for ours, both wait
 * forever (chromium did so). So ours are registered before any other:
 * at the first registration of anyone's (__register_atfork, which
 * pthread_atfork calls, is interposed), or at start-up. */
extern void *__dso_handle MMS_HIDDEN;
static pthread_once_t ours_once = PTHREAD_ONCE_INIT;

MMS_EXPORT int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso);

static void register_ours(void)
{
	mms__init_resolve();
	/* Another thread may be finding the real functions still. */
	if (!mms__real.register_atfork)
		*(void **)&mms__real.register_atfork = dlsym(RTLD_NEXT, "__register_atfork");
	if (mms__real.register_atfork)
		mms__real.register_atfork(atfork_prepare, atfork_parent, atfork_child, __dso_handle);
}

MMS_EXPORT int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso)
{
	pthread_once(&ours_once, register_ours);
	if (!mms__real.register_atfork)
		return ENOMEM; /* as glibc's when it has no room */
	return mms__real.register_atfork(prepare, parent, child, dso);
}

void mms__process_init(void)
{
	pthread_once(&ours_once, register_ours);
}

/* --- /proc/PID/stat --------------------------------------------------------- */

ssize_t mms__proc_read(const char *path, char *buf, size_t cap)
{
	ssize_t n = 0, r = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !cap)
		return -1;
	while ((size_t)n + 1 < cap && (r = read(fd, buf + n, cap - 1 - (size_t)n)) > 0)
		n += r;
	close(fd);
	buf[n] = 0;
	return r < 0 ? -1 : n;
}

size_t mms__self_exe(char *buf, size_t cap)
{
	/* A system call of its own: nothing of a program's that interposes
	 * readlink runs. */
	long n = cap ? syscall(SYS_readlink, "/proc/self/exe", buf, cap - 1) : -1;

	if (cap)
		buf[n > 0 ? n : 0] = 0;
	return n > 0 ? (size_t)n : 0;
}

void mms__object_name(const char *path, char *out, size_t cap)
{
	if (path && *path)
		snprintf(out, cap, "%s", path);
	else if (!mms__self_exe(out, cap))
		snprintf(out, cap, "the program");
}

int mms__proc_lines(const char *path, int (*fn)(char *line, void *ctx), void *ctx)
{
	char buf[1024], line[256];
	size_t len = 0;
	ssize_t r;
	/* System calls of its own: nothing of a program's that interposes
	 * open or read runs. */
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -1;
	while (!rc && (r = syscall(SYS_read, fd, buf, sizeof buf)) > 0) {
		for (ssize_t i = 0; i < r && !rc; i++) {
			if (buf[i] != '\n') {
				if (len + 1 < sizeof line)
					line[len++] = buf[i];
				continue;
			}
			line[len] = 0;
			len = 0;
			rc = fn(line, ctx);
		}
	}
	syscall(SYS_close, fd);
	return r < 0 && !rc ? -1 : rc;
}

/* Reads a hexadecimal number at *s, moving past it and one separator. */
static unsigned long hex_field(const char **s)
{
	unsigned long v = 0;
	const char *p = *s;

	for (;; p++) {
		unsigned c = (unsigned char)*p;
		if (c - '0' < 10)
			v = v << 4 | (c - '0');
		else if ((c | 0x20) - 'a' < 6)
			v = v << 4 | ((c | 0x20) - 'a' + 10);
		else
			break;
	}
	*s = *p ? p + 1 : p;
	return v;
}

/* Moves *s past the field it is at and the spaces after it. */
static void skip_field(const char **s)
{
	const char *p = *s;

	while (*p && *p != ' ')
		p++;
	while (*p == ' ')
		p++;
	*s = p;
}

/* The fields of a line of /proc/self/maps: its extent, its permissions
 * (4 characters at least, else NULL), whether it maps a file (an inode);
 * returns its name ("" for none). */
static const char *maps_fields(const char *s, uintptr_t *start, uintptr_t *end, const char **perms, int *file)
{
	*start = hex_field(&s);
	*end = hex_field(&s);
	*perms = strlen(s) >= 5 ? s : NULL;
	skip_field(&s); /* perms */
	skip_field(&s); /* offset */
	skip_field(&s); /* device */
	*file = s[0] != '0' || (s[1] != ' ' && s[1] != 0);
	skip_field(&s);
	return s;
}

int mms__maps_file(const char *s, uintptr_t *start, uintptr_t *end, int *exec)
{
	const char *perms, *name;
	int file;

	name = maps_fields(s, start, end, &perms, &file);
	/* A private mapping of a file, as a module's are: not a device's
	 * (reading a GPU's or a driver's mapping may fault it in, or move
	 * its pages), nor memory shared with another process. */
	if (!perms || perms[0] != 'r' || perms[3] != 'p' || !file || *name != '/' || !strncmp(name, "/dev/", 5))
		return 0;
	*exec = perms[2] == 'x';
	return 1;
}

int mms__maps_line(const char *s, uintptr_t *start, uintptr_t *end)
{
	const char *perms;
	int file;

	s = maps_fields(s, start, end, &perms, &file);
	if (!perms || perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p')
		return MMS_MAPS_OTHER;
	if (file)
		return *s == '/' ? MMS_MAPS_FILE : MMS_MAPS_OTHER;
	if (!strcmp(s, "[stack]"))
		return MMS_MAPS_STACK;
	if (!strcmp(s, "[heap]"))
		return MMS_MAPS_HEAP;
	return !*s || !strncmp(s, "[anon:", 6) ? MMS_MAPS_ANON : MMS_MAPS_OTHER;
}

/* Field `field` (from 3, as proc(5) numbers them) of a stat file's text. */
static int stat_field_in(const char *buf, int field, long *out)
{
	const char *p;
	char *end;

	if (field < 3)
		return -1;
	/* Field 2, the name, may hold spaces and parentheses: count from
	 * the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	p++;
	for (int f = 3; f < field; f++) {
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
	}
	*out = strtol(p, &end, 10);
	return end == p ? -1 : 0;
}

/* The same field of the stat file at path. */
static int stat_field_at(const char *path, int field, long *out)
{
	char buf[1024];

	return mms__proc_read(path, buf, sizeof buf) <= 0 ? -1 : stat_field_in(buf, field, out);
}

int mms__proc_stat_field(long pid, int field, long *out)
{
	char path[64];

	if (pid)
		snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	else
		snprintf(path, sizeof path, "/proc/self/stat");
	return stat_field_at(path, field, out);
}

long mms__threads_now(void)
{
	long v;

	return mms__proc_stat_field(0, 20, &v) ? 0 : v;
}

/* The kernel's flag of a task in do_exit() (include/linux/sched.h), shown
 * in /proc's stat (field 9). */
#define STAT_PF_EXITING 0x4

int mms__tasks_each(int (*fn)(const char *tid, void *ctx), void *ctx)
{
	char buf[1024];
	long r = 0;
	int rc = 0, saved = errno;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		errno = saved;
		return -1;
	}
	while (!rc && (r = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
		for (long off = 0; off < r && !rc;) {
			/* struct linux_dirent64: ino, off, reclen, type, name. */
			unsigned short reclen;
			const char *name = buf + off + 19;

			memcpy(&reclen, buf + off + 16, sizeof reclen);
			off += reclen;
			if (*name >= '0' && *name <= '9')
				rc = fn(name, ctx);
		}
	}
	syscall(SYS_close, fd);
	errno = saved;
	return r < 0 && !rc ? -1 : 0;
}

/* A task of /proc/self/task that still runs the program's code. */
static int count_with_memory(const char *name, void *ctx)
{
	char path[96], stat[1024];
	long vsize, flags;
	ssize_t len;

	snprintf(path, sizeof path, "/proc/self/task/%s/stat", name);
	len = mms__proc_read(path, stat, sizeof stat);
	/* A thread listed and gone before its stat was read (the log thread
	 * of ours, which ends on its own after the file's trim at exit, or
	 * one of the program's that ended just now) runs no more; nor does
	 * the log thread of ours, whether it runs or ends. A stat that
	 * cannot be read for another reason counts. */
	if (len < 0 && (errno == ENOENT || errno == ESRCH))
		return 0;
	if (len > 0 && strstr(stat, " (" MMS_LOG_THREAD_NAME ") "))
		return 0;
	/* A thread that is ending (the kernel's PF_EXITING in flags, field
	 * 9: set before it lets its memory go and wakes the pthread_join()
	 * that waits for it), or whose memory is gone (vsize, field 23, is
	 * 0) runs no more of the program's code. */
	if (len > 0 && !stat_field_in(stat, 9, &flags) && (flags & STAT_PF_EXITING))
		return 0;
	if (len <= 0 || stat_field_in(stat, 23, &vsize) || vsize)
		++*(long *)ctx;
	return 0;
}

long mms__threads_with_memory(void)
{
	long n = 0;
	int saved = errno;

	if (mms__tasks_each(count_with_memory, &n)) {
		errno = saved;
		return mms__threads_now();
	}
	errno = saved;
	return n;
}

/* --- dlclose -------------------------------------------------------------- */

MMS_EXPORT int dlclose(void *handle)
{
	struct mms_thread *t;
	int r;

	/* Record what is loaded before the module goes away. */
	if (mms__recording && !mms__tls_busy) {
		mms__tls_busy = 2;
		t = mms__thread();
		if (t)
			mms__modules_scan(t);
		mms__tls_busy = 0;
	}
	r = mms__real.dlclose(handle);
	/* The loader's lock was free: a fork child may use it again. */
	mms__phdr_safe();
	/* The stack walker's cached frame rules may name its code. */
	mms__cfi_modules_changed();
	return r;
}

/* --- namespaces ------------------------------------------------------------
 * The kernel refuses some of these calls (EINVAL) to a process of more
 * than one thread: unshare() of the user namespace or of what threads
 * share (CLONE_THREAD, CLONE_SIGHAND, CLONE_VM), setns() into a user
 * namespace or into a mount namespace (threads share their root and
 * working directory). Sandboxes rely on them. The log thread is the
 * recorder's, not the program's: for those calls it is ended first (it
 * starts again when the log needs it), so that they answer as natively. */

#define UNSHARE_ALONE (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)
#define SETNS_ALONE (CLONE_NEWUSER | CLONE_NEWNS)

MMS_EXPORT int unshare(int flags)
{
	if (flags & UNSHARE_ALONE)
		mms__pager_stop();
	return mms__real.unshare(flags);
}

MMS_EXPORT int setns(int fd, int nstype)
{
	/* nstype 0 takes whatever namespace fd is: maybe one of those. */
	if (!nstype || (nstype & SETNS_ALONE))
		mms__pager_stop();
	return mms__real.setns(fd, nstype);
}

/* --- sandboxes --------------------------------------------------------------
 * A program may turn its time stamp counter off (PR_SET_TSC with
 * PR_TSC_SIGSEGV, as record-and-replay debuggers and some sandboxes do,
 * or seccomp's strict mode, which does it too): an rdtsc then raises
 * SIGSEGV, and the recorder reads the TSC at events and at exit. A
 * program may also install a seccomp filter (a sandbox: OpenSSH's
 * pre-authentication child, libseccomp's users) that kills the process
 * at a system call it does not expect, as the fallocate that grows the
 * log. So before either takes effect recording stops, the log saying
 * why, the log thread ends (a filter may reach every thread), and nothing
 * of the recorder's reads the counter or the clock (whose vDSO reads it)
 * or makes a system call from then on; the program goes on as natively.
 * Seen through prctl and through libc's syscall(); a system call the
 * program makes by itself (inline assembly) is not. */
int mms__hands_off;

static void hands_off(int why)
{
	if (mms__hands_off_now())
		return;
	if (mms__recording_now())
		mms__log_cut(why);
	mms__pager_stop();
	__atomic_store_n(&mms__hands_off, 1, __ATOMIC_SEQ_CST);
}

/* The seccomp operation op (SECCOMP_SET_MODE_STRICT 0, _FILTER 1) with
 * flags and uargs, as the kernel's do_seccomp() receives it: the reason to
 * stop recording when it can take effect, else 0. libseccomp (man-db's
 * sandbox, file(1), systemd's tools) probes the kernel at its start with
 * calls that cannot: strict mode with a flag, filters with a null program
 * (EINVAL, EFAULT); stopping at those cut every such program's log after
 * a handful of events. A filter needs no_new_privs or CAP_SYS_ADMIN
 * (else EACCES). A call that fails for another reason (a malformed
 * program) still stops recording: the recorder cannot tell beforehand. */
static int seccomp_cut(unsigned long op, unsigned long flags, unsigned long uargs)
{
	struct {
		uint32_t version;
		int pid;
	} hdr = { 0x20080522, 0 }; /* _LINUX_CAPABILITY_VERSION_3 */
	struct {
		uint32_t effective, permitted, inheritable;
	} caps[2];
	int err = errno, stop;

	if (op == 0) /* SECCOMP_SET_MODE_STRICT */
		return !flags && !uargs ? MMS_CUT_NOTSC : 0;
	if (op != 1 || !uargs || (flags & ~0x3fUL)) /* SECCOMP_FILTER_FLAG_MASK */
		return 0;
	/* Without no_new_privs: only with CAP_SYS_ADMIN (21) in effect;
	 * where the capabilities cannot be read, stop (the safe side). The
	 * program's errno stays as it was (a filter of its own may refuse
	 * these calls). */
	stop = syscall(SYS_prctl, PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 || syscall(SYS_capget, &hdr, caps) ||
	       (caps[0].effective & (1U << 21));
	errno = err;
	return stop ? MMS_CUT_SECCOMP : 0;
}

MMS_EXPORT int prctl(int option, ...)
{
	unsigned long a2, a3, a4, a5;
	va_list ap;
	int why;

	/* As glibc's own prctl: four arguments, whatever the option. */
	va_start(ap, option);
	a2 = va_arg(ap, unsigned long);
	a3 = va_arg(ap, unsigned long);
	a4 = va_arg(ap, unsigned long);
	a5 = va_arg(ap, unsigned long);
	va_end(ap);
#if defined(PR_SET_TSC) && defined(PR_TSC_SIGSEGV)
	if (option == PR_SET_TSC && a2 == PR_TSC_SIGSEGV)
		hands_off(MMS_CUT_NOTSC);
#endif
	/* prctl's strict mode ignores a3; its filter mode takes no flags. */
	if (option == PR_SET_SECCOMP && (a2 == 1 || a2 == 2) && (why = seccomp_cut(a2 - 1, 0, a2 == 2 ? a3 : 0)))
		hands_off(why);
	/* Before the recorder's start (a constructor's call): the call
	 * itself. */
	if (!mms__real.prctl)
		return (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
	return mms__real.prctl(option, a2, a3, a4, a5);
}

#if defined(__x86_64__) && defined(SYS_seccomp)
/* libc's syscall(), which libseccomp calls to install its filters (and
 * the recorder itself, through this): the system call made here. A
 * descriptor limit set through it moves the recorder's descriptors as
 * setrlimit does (fds.c). */
MMS_EXPORT long syscall(long nr, ...)
{
	long a[6], r;
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (unlikely(nr == SYS_seccomp) && (a[0] == 0 || a[0] == 1)) { /* SECCOMP_SET_MODE_STRICT, _FILTER */
		int why = seccomp_cut((unsigned long)a[0], (unsigned long)a[1], (unsigned long)a[2]);

		if (why)
			hands_off(why);
	}
	{
		register long r10 __asm__("r10") = a[3];
		register long r8 __asm__("r8") = a[4];
		register long r9 __asm__("r9") = a[5];

		__asm__ volatile("syscall"
				 : "=a"(r)
				 : "a"(nr), "D"(a[0]), "S"(a[1]), "d"(a[2]), "r"(r10), "r"(r8), "r"(r9)
				 : "rcx", "r11", "memory");
	}
	if ((unsigned long)r > -4096UL) {
		errno = (int)-r;
		return -1;
	}
	/* The descriptor limit, set as setrlimit and prlimit set it. */
	if (unlikely(nr == SYS_setrlimit || (nr == SYS_prlimit64 && a[2])))
		mms__fds_limit_set(nr == SYS_setrlimit ? 0 : a[0], nr == SYS_setrlimit ? a[0] : a[1]);
	return r;
}
#endif

/* --- exec ------------------------------------------------------------------
 * An exec that succeeds ends this image's log: say so in its header (and
 * take it back if the exec fails). A vfork child shares our memory and log:
 * its exec is not ours to mark. glibc's execl* call execve internally, not
 * through these symbols, so they are interposed too. */

static int exec_begin(void)
{
	if (!mms__active || !mms__header || mms__header->pid != (uint64_t)getpid())
		return 0;
	__atomic_fetch_or(&mms__header->flags, MMS_FLAG_EXEC_AWAY, __ATOMIC_SEQ_CST);
	/* The space reserved ahead goes back (2 MiB of disk a process that
	 * forks and execs held before): an exec that fails grows the file
	 * again, a chunk at a time. */
	mms__log_trim();
	return 1;
}

static int exec_failed(int marked, int r)
{
	int err = errno;

	if (marked)
		__atomic_fetch_and(&mms__header->flags, ~(uint32_t)MMS_FLAG_EXEC_AWAY, __ATOMIC_SEQ_CST);
	errno = err;
	return r;
}

/* After recording stopped for a sandbox (hands_off()), an image the
 * program execs inherits it: its filter, or its time stamp counter turned
 * off. The recorder loaded there would make its system calls (creating
 * its log: the filter of `fx`, a test's, killed the new image at the
 * log's ftruncate, where natively it ran on) and read the counter. So the
 * new image gets the environment without this library: out of
 * LD_PRELOAD (the whole variable where it was the only one) and out of
 * NVTX_INJECTION64_PATH; it runs as natively, unrecorded. Built on the
 * stack, with no system call: an environment of more than 1,024
 * variables, or an LD_PRELOAD longer than 4 KiB, is passed as it is. */

enum exec_how { EXEC_PATH, EXEC_SEARCH, EXEC_FD };

static int exec_real(enum exec_how how, int fd, const char *file, char *const argv[], char *const envp[])
{
	switch (how) {
	case EXEC_SEARCH:
		return mms__real.execvpe(file, argv, envp);
	case EXEC_FD:
		return mms__real.fexecve(fd, argv, envp);
	default:
		return mms__real.execve(file, argv, envp);
	}
}

/* Whether the LD_PRELOAD word w (n bytes) names this library: the same
 * file name as the loader gave it. */
static int names_us(const char *w, size_t n, const char *self)
{
	const char *b = w + n, *me = strrchr(self, '/');

	while (b > w && b[-1] != '/')
		b--;
	me = me ? me + 1 : self;
	return strlen(me) == (size_t)(w + n - b) && !memcmp(b, me, (size_t)(w + n - b));
}

static int exec_unloaded(enum exec_how how, int fd, const char *file, char *const argv[], char *const envp[])
{
	static const char pre[] = "LD_PRELOAD=", nvtx[] = "NVTX_INJECTION64_PATH=";
	size_t n = 0, k = 0, len = 0, i;
	Dl_info self;

	while (envp && envp[n] && n <= 1024)
		n++;
	for (i = 0; i < n; i++)
		if (!strncmp(envp[i], pre, sizeof pre - 1))
			len = strlen(envp[i]);
	if (n > 1024 || len > 4096 || !dladdr((void *)exec_unloaded, &self) || !self.dli_fname)
		return exec_real(how, fd, file, argv, envp);
	{
		char *env[n + 1], kept[len + 1];

		for (i = 0; i < n; i++) {
			const char *e = envp[i], *w;
			char *o = kept + sizeof pre - 1;

			if (!strncmp(e, nvtx, sizeof nvtx - 1) &&
			    names_us(e + sizeof nvtx - 1, strlen(e + sizeof nvtx - 1), self.dli_fname))
				continue;
			if (strncmp(e, pre, sizeof pre - 1)) {
				env[k++] = (char *)e;
				continue;
			}
			/* ld.so splits LD_PRELOAD at spaces and colons. */
			memcpy(kept, pre, sizeof pre - 1);
			for (w = e + sizeof pre - 1; *w;) {
				size_t wn = strcspn(w, ": ");

				if (wn && !names_us(w, wn, self.dli_fname)) {
					if (o > kept + sizeof pre - 1)
						*o++ = ':';
					memcpy(o, w, wn);
					o += wn;
				}
				w += wn;
				w += *w != 0;
			}
			*o = 0;
			if (o > kept + sizeof pre - 1)
				env[k++] = kept;
		}
		env[k] = NULL;
		return exec_real(how, fd, file, argv, env);
	}
}

static int exec_hooked(enum exec_how how, int fd, const char *file, char *const argv[], char *const envp[])
{
	int marked;

	if (mms__hands_off_now())
		return exec_unloaded(how, fd, file, argv, envp);
	marked = exec_begin();
	return exec_failed(marked, exec_real(how, fd, file, argv, envp));
}

MMS_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_hooked(EXEC_PATH, -1, path, argv, envp);
}

MMS_EXPORT int execv(const char *path, char *const argv[])
{
	return exec_hooked(EXEC_PATH, -1, path, argv, environ);
}

MMS_EXPORT int execvp(const char *file, char *const argv[])
{
	return exec_hooked(EXEC_SEARCH, -1, file, argv, environ);
}

MMS_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_hooked(EXEC_SEARCH, -1, file, argv, envp);
}

MMS_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	return exec_hooked(EXEC_FD, fd, NULL, argv, envp);
}

/* execl, execlp, execle: the arguments into an array, then the v forms. */
#define COLLECT_ARGS(arg, argv)                                                                                   \
	va_list ap;                                                                                                \
	size_t n_ = 1;                                                                                             \
	va_start(ap, arg);                                                                                         \
	while (va_arg(ap, char *))                                                                                 \
		n_++;                                                                                              \
	va_end(ap);                                                                                                \
	char *argv[n_ + 1];                                                                                        \
	argv[0] = (char *)(arg);                                                                                   \
	va_start(ap, arg);                                                                                         \
	for (size_t i_ = 1; i_ <= n_; i_++)                                                                        \
		argv[i_] = va_arg(ap, char *)

MMS_EXPORT int execl(const char *path, const char *arg, ...)
{
	COLLECT_ARGS(arg, argv);
	va_end(ap);
	return execv(path, argv);
}

MMS_EXPORT int execlp(const char *file, const char *arg, ...)
{
	COLLECT_ARGS(arg, argv);
	va_end(ap);
	return execvp(file, argv);
}

MMS_EXPORT int execle(const char *path, const char *arg, ...)
{
	COLLECT_ARGS(arg, argv);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}
