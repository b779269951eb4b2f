/* SPDX-License-Identifier: MIT */
/* runtime.c: what the C and C++ runtimes keep for themselves, so that no
 * report calls it the program's leak. At the very end of exit, when the
 * process has no other thread left, the recorder has glibc and libstdc++
 * free their internal memory (__libc_freeres, __gnu_cxx::__freeres, as
 * valgrind does by default), and those frees are recorded. Where that
 * cannot run (other threads alive at exit, _exit), what the runtimes
 * allocated for themselves is marked in the log: blocks glibc, ld.so or
 * libstdc++ (or a replacement allocator's library, for itself) allocated
 * before main (library initialisation), a new
 * thread's vector of thread-local storage (allocated in pthread_create),
 * the buffers of stdin, stdout and stderr, and, whenever it happens, what
 * ld.so allocates for the libraries it loads (hooks.c asks
 * mms__ldso_code). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "enter.h"
#include "hooks-int.h"
#include "log.h"
#include "stamp.h"
#include "unwind.h"

extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);
/* glibc's, declared nowhere public. */
MMS_EXPORT int __libc_start_main(int (*main)(int, char **, char **), int argc, char **argv, void (*init)(void),
				 void (*fini)(void), void (*rtld_fini)(void), void *stack_end);

static void (*libc_freeres)(void);
static void (*cxx_freeres)(void);
static int (*real_start_main)(int (*)(int, char **, char **), int, char **, void (*)(void), void (*)(void),
			      void (*)(void), void *);
static int (*program_main)(int, char **, char **);
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

struct mms_code mms__ldso_code, mms__libc_code, mms__alloc_code;

/* Two slots, so that a driver loaded again elsewhere (dlclose, dlopen)
 * never changes the range a thread is reading. */
static const struct mms_code no_code;
static struct mms_code cuda_slots[2];
const struct mms_code *mms__cuda_code = &no_code;

void mms__cuda_code_set(uintptr_t lo, uintptr_t hi)
{
	const struct mms_code *now = __atomic_load_n(&mms__cuda_code, __ATOMIC_ACQUIRE);
	struct mms_code *next;

	if (!lo || (now->lo == lo && now->hi == hi))
		return;
	next = now == &cuda_slots[0] ? &cuda_slots[1] : &cuda_slots[0];
	next->lo = lo;
	next->hi = hi;
	__atomic_store_n(&mms__cuda_code, next, __ATOMIC_RELEASE);
}

void mms__runtime_code_init(void)
{
	uintptr_t base = (uintptr_t)getauxval(AT_BASE);

	if (base)
		mms__code_range(base, &mms__ldso_code.lo, &mms__ldso_code.hi);
	mms__code_range((uintptr_t)&getauxval, &mms__libc_code.lo, &mms__libc_code.hi);
	/* A replacement allocator's code (jemalloc, tcmalloc as a shared
	 * library after ours): calls it makes from inside the hooks are its
	 * own. glibc's stays empty: its malloc makes no call that reaches a
	 * hook, so one from libc inside a hook is a signal handler's. */
	if (mms__real.malloc && !mms__in_code(&mms__libc_code, (uintptr_t)mms__real.malloc))
		mms__code_range((uintptr_t)mms__real.malloc, &mms__alloc_code.lo, &mms__alloc_code.hi);
}

int mms__own_malloc(char *out, size_t cap)
{
	void *def = dlsym(RTLD_DEFAULT, "malloc");
	const ElfW(Sym) *sym = NULL;
	Dl_info theirs;

	/* Ours (the recorder's code range, known since mms__unwind_init). */
	if (!def || (uintptr_t)def - mms__self_lo < mms__self_hi - mms__self_lo || cap < 2 ||
	    !dladdr1(def, &theirs, (void **)&sym, RTLD_DL_SYMENT))
		return 0;
	/* A program that takes malloc's address gets its PLT entry as
	 * malloc's address everywhere (python3 does): the symbol is then
	 * undefined there, and the calls through that entry reach the hooks. */
	if (!sym || sym->st_shndx == SHN_UNDEF || !theirs.dli_sname || strcmp(theirs.dli_sname, "malloc"))
		return 0;
	/* The program itself: dladdr names it "" (or as it was run). */
	mms__object_name(theirs.dli_fname && theirs.dli_fname[0] == '/' ? theirs.dli_fname : NULL, out, cap);
	return 1;
}

/* Whether ip lies in one of the runtime's own libraries. */
static int runtime_module(uintptr_t ip, int *cxx)
{
	static const char *const names[] = { "libc.so", "ld-linux", "libstdc++.so", "libgcc_s.so", "libm.so" };
	Dl_info info;
	const char *base;

	/* A replacement allocator's library (tcmalloc, jemalloc as a shared
	 * library): what it allocates through malloc at its start-up is its
	 * own state, as the C library's is. */
	if (mms__in_code(&mms__alloc_code, ip)) {
		*cxx = 0;
		return 1;
	}
	if (!dladdr((void *)ip, &info) || !info.dli_fname)
		return 0;
	base = strrchr(info.dli_fname, '/');
	base = base ? base + 1 : info.dli_fname;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strncmp(base, names[i], strlen(names[i]))) {
			/* operator new is how the program's constructors
			 * allocate: its caller decides, and that is not known
			 * here. */
			if (i == 2 && info.dli_sname && !strncmp(info.dli_sname, "_Zn", 3))
				return 0;
			*cxx = i == 2 || i == 3;
			return 1;
		}
	return 0;
}

unsigned mms__runtime_kind(uintptr_t ra)
{
	int cxx = 0;

	if (mms__tls_runtime == MMS_RT_THREAD || mms__tls_runtime == MMS_RT_SELF || mms__tls_runtime == MMS_RT_PYIMPORT)
		return mms__tls_runtime;
	if (mms__tls_runtime == MMS_RUNTIME_STARTUP && runtime_module(ra, &cxx))
		return cxx ? MMS_RT_CXX : MMS_RT_C;
	return 0;
}

/* --- before main ---------------------------------------------------------- */

static int main_wrapper(int argc, char **argv, char **envp)
{
	mms__tls_runtime = 0; /* from here on the program runs */
	return program_main(argc, argv, envp);
}

/* The program's _start calls this: until its main runs, allocations of
 * the runtime's libraries are their initialisation. */
MMS_EXPORT int __libc_start_main(int (*main)(int, char **, char **), int argc, char **argv, void (*init)(void),
				 void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	if (!real_start_main)
		*(void **)&real_start_main = dlsym(RTLD_NEXT, "__libc_start_main");
	program_main = main;
	return real_start_main(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

MMS_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	uint16_t saved = mms__tls_runtime;
	int r;

	if (!real_pthread_create)
		*(void **)&real_pthread_create = dlsym(RTLD_NEXT, "pthread_create");
	/* How much longer than natively the thread's vector of TLS is
	 * (dtv.c): counted before the program's first thread. */
	if (!mms__tls_busy && __atomic_load_n(&mms__init_state, __ATOMIC_ACQUIRE) == MMS_INIT_DONE) {
		mms__tls_busy = 2;
		mms__dtv_count();
		mms__tls_busy = 0;
	}
	/* What pthread_create allocates (the thread's TLS vector) is glibc's,
	 * kept while the thread lives and after, in its stack cache. */
	mms__tls_runtime = MMS_RT_THREAD;
	if (!mms__tls_busy) /* the program's thread, not the log thread */
		__atomic_store_n(&mms__threads_made, 1, __ATOMIC_RELAXED);
	r = real_pthread_create(th, attr, fn, arg);
	mms__tls_runtime = saved;
	return r;
}

/* --- at the end of exit ---------------------------------------------------- */

/* The buffers of stdin, stdout and stderr, which glibc keeps to the end:
 * written as one META record, "runtime_live", of (kind, address) pairs. */
static void note_std_buffers(struct mms_thread *t)
{
	FILE *const std[] = { stdin, stdout, stderr };
	uint8_t buf[64], *p = mms_put_s(buf, "runtime_live", 12), *q;
	uint8_t val[48];

	q = val;
	for (int i = 0; i < 3; i++)
		/* Not one the program gave (_IO_USER_BUF), nor the FILE's own
		 * one-byte buffer (_IO_UNBUFFERED). */
		if (std[i] && std[i]->_IO_buf_base && !(std[i]->_flags & (0x1 | 0x2))) {
			q = mms_put_u(q, MMS_RT_STDIO);
			q = mms_put_u(q, (uintptr_t)std[i]->_IO_buf_base);
		}
	if (q == val)
		return;
	p = mms_put_s(p, val, (size_t)(q - val));
	mms__write_meta(t, MMS_TAG_META, buf, (size_t)(p - buf));
}

/* META "freeres_skipped": why freeres did not run (enum mms_freeres_why),
 * and how many other threads ran. */
static void note_freeres_skipped(struct mms_thread *t, unsigned why, uint64_t others)
{
	uint8_t buf[32], val[16], *p, *v;

	v = mms_put_u(val, why);
	v = mms_put_u(v, others);
	p = mms_put_s(buf, "freeres_skipped", 15);
	p = mms_put_s(p, val, (size_t)(v - val));
	mms__write_meta(t, MMS_TAG_META, buf, (size_t)(p - buf));
}

/* Whether the process's own exit may do its end-of-exit work here: not a
 * vfork child (it shares our memory and log: its exit is not ours), not
 * inside a hook (a signal handler's exit), not sandboxed. */
static int exit_is_ours(void)
{
	return mms__active && mms__header && mms__header->pid == (uint64_t)getpid() && !mms__tls_busy &&
	       !mms__hands_off_now();
}

/* The process's threads now, the exiting one included, the log thread
 * of ours not: a thread that was joined may still be counted for a
 * moment (the kernel wakes pthread_join when the thread let its memory
 * go, and takes it out of the count later), so those with memory are
 * counted; and the log thread, which may be ending on its own as the
 * file is trimmed at exit, is told by its name. 0 when they cannot be
 * counted. */
static long threads_left(void)
{
	long threads = mms__threads_now();

	if (threads > 1)
		threads = mms__threads_with_memory();
	return threads;
}

static void late_exit(void *arg)
{
	/* The scan reads the stack from this frame up: below it are the
	 * recorder's frames and the dead ones of freeres, whose leftovers
	 * (glibc's top chunk, which the stdout buffer freed into, begins in
	 * the last bytes of a leaked block) would read as the program's
	 * pointers. */
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	long threads;
	struct mms_thread *t;
	uint8_t buf[32], val[16], *p, *v;

	(void)arg;
	if (!exit_is_ours())
		return;
	mms__tls_busy = 2;
	t = mms__thread();
	threads = threads_left();
	/* freeres frees what other threads may still use: only when this
	 * thread is the last (the log thread of ours only sleeps). */
	if (!mms__config.freeres || !t || threads != 1) {
		if (t) {
			/* Why, for the report: freeres=0, other threads (how
			 * many), or none counted (/proc unreadable: no
			 * descriptor free, no /proc). */
			unsigned why = !mms__config.freeres ? MMS_FREERES_OFF
				       : threads > 0        ? MMS_FREERES_THREADS
							    : MMS_FREERES_UNCOUNTED;
			long others = threads - 1;

			note_freeres_skipped(t, why, why == MMS_FREERES_THREADS && others > 0 ? (uint64_t)others : 0);
			note_std_buffers(t);
			mms__reach_scan(t, others, sp);
		}
		mms__tls_busy = 0;
		return;
	}
	/* The frees from this stamp on are the runtimes' (a META record, not
	 * an event: the log's events stay the program's). */
	v = mms_put_u(val, mms__stamp_obtain());
	p = mms_put_s(buf, "freeres", 7);
	p = mms_put_s(p, val, (size_t)(v - val));
	mms__write_meta(t, MMS_TAG_META, buf, (size_t)(p - buf));
	/* A dlsym() that succeeds frees the thread's dlerror() state (a
	 * failed dlopen's error and message, which the program may never
	 * have read): recorded, as the runtimes' frees below, since the
	 * blocks were the program's calls'. (Made inside the hook guard, the
	 * frees were missing from the log: the state looked leaked.) */
	mms__tls_busy = 0;
	*(void **)&libc_freeres = dlsym(RTLD_DEFAULT, "__libc_freeres");
	/* Looked up now: libstdc++ may have come with a dlopen, also out of
	 * the global scope (Python loads extension modules, and PyTorch's
	 * libstdc++ with them, RTLD_LOCAL), where newdelete.c's lookup finds
	 * it too. */
	mms__tls_busy = 2;
	*(void **)&cxx_freeres = mms__cxx_lookup("_ZN9__gnu_cxx9__freeresEv");
	mms__tls_busy = 0;
	/* Their frees are recorded as any other. */
	if (cxx_freeres)
		cxx_freeres();
	if (libc_freeres)
		libc_freeres();
	mms__tls_busy = 2;
	/* What the program left, after the runtimes freed theirs. */
	mms__reach_scan(t, 0, sp);
	mms__log_finish(); /* trims the file again */
	mms__tls_busy = 0;
}

void mms__reach_at_exit(uintptr_t sp)
{
	struct mms_thread *t;
	long others;

	if (!exit_is_ours())
		return;
	mms__tls_busy = 2;
	t = mms__thread();
	if (!t) {
		mms__tls_busy = 0;
		return;
	}
	/* No freeres in _exit: what the runtimes keep is marked, as where
	 * exit cannot run it (the standard streams' buffers; the rest was
	 * marked as it was allocated), and the log says why. Before, the
	 * stdout buffer read as the program's, still reachable. */
	note_freeres_skipped(t, MMS_FREERES_EXIT, 0);
	note_std_buffers(t);
	/* Not in a fork child (a shell's subshell, a server's worker): its
	 * memory is mostly its parent's, which a read at each child's _exit
	 * would cost as much as the parent's own (forklock's children read
	 * up to 960 MiB each); their blocks at exit stay unscanned, as their
	 * logs say. */
	if (!(mms__header->flags & MMS_FLAG_FORKED)) {
		others = threads_left() - 1;
		mms__reach_scan(t, others > 0 ? others : 0, sp);
	}
	mms__log_finish(); /* trims the file again */
	mms__tls_busy = 0;
}

void mms__runtime_init(void)
{
	*(void **)&real_pthread_create = dlsym(RTLD_NEXT, "pthread_create");
	/* Until main, the runtimes initialise themselves. */
	mms__tls_runtime = MMS_RUNTIME_STARTUP;
	/* Registered before __libc_start_main registers ld.so's finalizer
	 * (which runs every library's destructors), with no library handle:
	 * it runs after all of them, the last thing exit does before
	 * flushing stdio and leaving. */
	__cxa_atexit(late_exit, NULL, NULL);
}
