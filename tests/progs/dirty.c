/* SPDX-License-Identifier: MIT */
/* dirty.c: gdb's watch (hooks/gdbif.c) where the kernel tells which pages
 * were written (hooks/dirty.c): the program arms watches in the gdb
 * descriptor itself, as gdb would, and reads after each launch what the
 * hooks found (the change count, the launch and operator blamed). Each
 * change must be found at the boundary that follows it, once: a store, a
 * write by the kernel (read() from a pipe), a store between two launches,
 * a store to the part of a page shared with data written at every launch,
 * stores in 10 of 1000 launches back to back, a page given back with
 * MADV_DONTNEED (it reads as zeros: a change with no store), aio_read (a thread libc
 * starts for itself), a store where two watches overlap,
 * 40 pages apart, after a fork (the child's writes are its own), and with a second
 * thread. Prints one line per check and "tracked" or "compared" for how
 * the watches were looked at (the VmFlags "uw" of /proc/self/smaps).
 *
 * Run under the recorder (LD_PRELOAD); exits 2 without it, 1 when a
 * check fails. `dirty seccomp` runs the same under a seccomp filter that
 * allows everything, installed unseen by the recorder (as a sandbox's, a
 * container's): the recorder then compares every byte. `dirty api`
 * watches with msmemscope_watch() (see api_watch()). */
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gdbif.h"

#define BIG (1 << 20)

static struct msmemscope_gdb *d;
static void (*op_begin)(const char *);
static void (*op_end)(void);
static int failed;

/* A page-aligned global whose watched part shares its first page with
 * `hot`, written at every launch, and its last with `cold`. */
static struct {
	char hot[256];
	char watched[65536];
	char cold[256];
} g __attribute__((aligned(4096)));

static void check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAILED", what);
	failed |= !ok;
}

static void arm(unsigned slot, void *p, uint64_t size)
{
	d->watch[slot].addr = (uintptr_t)p;
	d->watch[slot].size = size;
	__atomic_add_fetch(&d->watch[slot].generation, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&d->armed, 1, __ATOMIC_RELEASE);
}

/* Whether the mapping holding p is registered for write-protect tracking. */
static int tracked(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0, uw = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8))
			uw = strstr(line, " uw") != NULL;
	}
	fclose(f);
	return uw;
}

/* One launch of op: before() inside it. Returns the changes the hooks
 * counted on slot during it (at its begin and its end). */
static uint64_t launch(const char *op, unsigned slot, void (*inside)(void *), void *arg)
{
	uint64_t before = d->watch[slot].changes;

	op_begin(op);
	g.hot[(unsigned)d->launches & 255]++; /* the shared page, every launch */
	if (inside)
		inside(arg);
	op_end();
	return d->watch[slot].changes - before;
}

static void store_big(void *p)
{
	((char *)p)[300000] = 0x5a;
}

static void read_big(void *p)
{
	int fds[2];

	if (pipe(fds) || write(fds[1], "kernel", 6) != 6 || read(fds[0], (char *)p + 600000, 6) != 6)
		abort();
	close(fds[0]);
	close(fds[1]);
}

/* Every other page of the block's first 80: more runs of written pages
 * than one look lists. */
static void scatter_big(void *p)
{
	for (int i = 0; i < 80; i += 2)
		((char *)p)[i * 4096 + 100] ^= 1;
}

/* The page 8 pages into the block: filled, then given back to the kernel
 * (MADV_DONTNEED), which makes it read as zeros with no store. */
static char *page8(void *p)
{
	return (char *)(((uintptr_t)p + 8 * 4096) & ~(uintptr_t)4095);
}

static void fill_page8(void *p)
{
	memset(page8(p), 0x33, 4096);
}

static void dontneed_page8(void *p)
{
	if (madvise(page8(p), 4096, MADV_DONTNEED))
		abort();
}

static void read_page8(void *p)
{
	if (*(volatile char *)page8(p) != 0)
		abort();
}

static void store_watched(void *p)
{
	(void)p;
	g.watched[10] = 0x77; /* in the page shared with hot */
}

static void *thread_main(void *p)
{
	return p;
}

/* `dirty api`: msmemscope_watch() of a 1 MiB block (a checksum at every
 * boundary, kept while the kernel says no page was written): 1000
 * launches "q", of which launch 500 is "hit" (a store), launch 700
 * "kread" (read() into the block), and a store between launches 799 and
 * 800. Prints "tracked" or "compared"; dirty.sh reads the changes from
 * the watch analysis. */
static int api_watch(void)
{
	void (*watch)(const void *, size_t, const char *);
	char *blk = calloc(1, BIG);

	*(void **)&watch = dlsym(RTLD_DEFAULT, "msmemscope_watch");
	if (!watch || !blk)
		return 2;
	watch(blk, BIG, "blk");
	for (int i = 1; i <= 1000; i++) {
		if (i == 800)
			blk[4000] = 1;
		op_begin(i == 500 ? "hit" : i == 700 ? "kread" : "q");
		if (i == 500)
			blk[BIG / 2] = 1;
		if (i == 700)
			read_big(blk);
		op_end();
		if (i == 1)
			printf("%s\n", tracked(blk + BIG / 2) ? "tracked" : "compared");
	}
	free(blk);
	return 0;
}

/* Installs filter prog as a process the recorder does not see would (a
 * sandbox launcher, a container's runtime, not recorded): a seccomp
 * system call the recorder's prctl() and syscall() do not see. A filter
 * the recorder sees installed stops its recording there, and the images
 * exec'd after it run without it. */
static int unseen_filter(struct sock_fprog *prog)
{
#ifdef __x86_64__
	long r;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"((long)SYS_seccomp), "D"((long)SECCOMP_SET_MODE_FILTER), "S"(0L), "d"(prog)
			 : "rcx", "r11", "memory");
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return 0;
#else
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog);
#endif
}

/* Runs this program again under a seccomp filter allowing every call. */
static int under_seccomp(char *self)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = { .len = 1, .filter = &allow };
	char *argv[] = { self, NULL };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || unseen_filter(&prog)) {
		perror("dirty: seccomp");
		return 2;
	}
	execv(self, argv);
	perror("dirty: execv");
	return 2;
}

int main(int argc, char **argv)
{
	char *big;
	uint64_t n, quiet = 0;
	pthread_t th;
	pid_t pid;
	int status;

	if (argc == 2 && !strcmp(argv[1], "seccomp"))
		return under_seccomp(argv[0]);
	d = dlsym(RTLD_DEFAULT, "msmemscope_gdb");
	*(void **)&op_begin = dlsym(RTLD_DEFAULT, "msmemscope_op_begin");
	*(void **)&op_end = dlsym(RTLD_DEFAULT, "msmemscope_op_end");
	if (argc == 2 && !strcmp(argv[1], "api"))
		return op_begin && op_end ? api_watch() : 2;
	*(void **)&op_begin = dlsym(RTLD_DEFAULT, "msmemscope_op_begin");
	*(void **)&op_end = dlsym(RTLD_DEFAULT, "msmemscope_op_end");
	if (!d || !op_begin || !op_end || d->version != MMS_GDB_VERSION) {
		fprintf(stderr, "dirty: run it with the recorder preloaded\n");
		return 2;
	}
	if (!(big = calloc(1, BIG)))
		return 2;
	arm(0, big, BIG);
	arm(1, g.watched, sizeof g.watched);
	launch("arm", 0, NULL, NULL); /* the snapshots are taken here */
	printf("%s\n", tracked(big + BIG / 2) && tracked(g.watched + 32768) ? "tracked" : "compared");

	for (int i = 0; i < 3; i++)
		quiet += launch("quiet", 0, NULL, NULL);
	check(quiet == 0, "no change found where none was made");
	n = launch("store", 0, store_big, big);
	check(n == 1 && !strcmp(d->op_name, "store") && d->op_launch == d->launches, "a store in launch 5 (store)");
	n = launch("read", 0, read_big, big);
	check(n == 1 && !strcmp(d->op_name, "read"), "a write by the kernel, read() into the block, in operator read");
	/* Back to back, as fast as launches go (looks skipped in between):
	 * each store found in its own launch. */
	{
		int right = 0, wrong = 0;

		for (int i = 1; i <= 1000; i++) {
			int store = i % 100 == 0;

			n = launch(store ? "often" : "quiet", 0, store ? store_big : NULL, big + 4 + i / 100);
			right += store && n == 1 && !strcmp(d->op_name, "often");
			wrong += store ? n != 1 : n != 0;
		}
		check(right == 10 && wrong == 0,
		      "1000 launches back to back, 10 of them storing: each store in its launch");
	}
	{
		/* A second watch inside the first: each sees the store. */
		uint64_t before = d->watch[2].changes;

		arm(2, big + 262144, 262144);
		launch("arm", 0, NULL, NULL);
		n = launch("inner", 0, store_big, big + 20);
		check(n == 1 && d->watch[2].changes == before + 1,
		      "a store where two watches overlap, in operator inner: each watch sees it");
		d->watch[2].size = 0;
	}
	n = launch("scatter", 0, scatter_big, big);
	check(n == 1 && !strcmp(d->op_name, "scatter"), "40 pages apart written in operator scatter: one change");
	check(launch("quiet", 0, NULL, NULL) == 0, "none in the next launch");
	n = launch("fill", 0, fill_page8, big);
	check(n == 1, "a page filled");
	n = launch("dontneed", 0, dontneed_page8, big);
	check(n == 1 && !strcmp(d->op_name, "dontneed"),
	      "that page given back with MADV_DONTNEED (zeros, no store), in operator dontneed");
	check(launch("zeros", 0, read_page8, big) == 0, "reading the zeros back: no change");
	{
		/* glibc's aio_read reads in a thread of libc's own, not
		 * started through pthread_create: its write is not this
		 * thread's fault. Found soon all the same, once. */
		struct aiocb cb = { .aio_fildes = open("/proc/self/exe", O_RDONLY),
				    .aio_buf = big + 700000,
				    .aio_nbytes = 64 };

		n = 0;
		if (cb.aio_fildes < 0 || aio_read(&cb))
			return 2;
		for (int i = 0; i < 1000000 && aio_error(&cb) == EINPROGRESS; i++)
			n += launch("aio", 0, NULL, NULL);
		if (aio_return(&cb) != 64)
			return 2;
		for (int i = 0; i < 1000; i++)
			n += launch("aio", 0, NULL, NULL);
		close(cb.aio_fildes);
		check(n == 1, "aio_read into the block, written by a thread of libc's: found once");
	}
	big[123] = 1; /* between two launches */
	n = launch("after", 0, NULL, NULL);
	check(n == 1 && d->op_launch == 0, "a store between launches, found as the next begins, blamed on no launch");

	/* The shared first page: written at every launch; after enough
	 * launches it is compared, the rest still tracked. */
	n = 0;
	for (int i = 0; i < 200; i++)
		n += launch("hot", 1, NULL, NULL);
	check(n == 0, "200 launches writing the shared page's other bytes: no change");
	n = launch("shared", 1, store_watched, NULL);
	check(n == 1 && !strcmp(d->op_name, "shared"),
	      "a store to the watched bytes of the shared page, in operator shared");

	pid = fork();
	if (pid == 0) {
		/* The child's copy: its own watch, its own finding. */
		n = launch("child", 0, store_big, big + 1);
		_exit(n == 1 ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 2;
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the fork child finds its own store");
	check(launch("parent", 0, NULL, NULL) == 0, "the parent finds none of the child's stores");
	n = launch("parent", 0, store_big, big + 2);
	check(n == 1 && !strcmp(d->op_name, "parent"), "the parent's store after the fork, in operator parent");

	if (pthread_create(&th, NULL, thread_main, NULL) || pthread_join(th, NULL))
		return 2;
	n = launch("threaded", 0, store_big, big + 3);
	check(n == 1 && !strcmp(d->op_name, "threaded"), "with a second thread made, a store in operator threaded");
	check(launch("threaded", 0, NULL, NULL) == 0, "and none in the next launch");

	d->watch[0].size = 0; /* disarmed: its pages are left alone */
	d->watch[1].size = 0;
	launch("done", 0, NULL, NULL);
	check(!tracked(big + BIG / 2), "a disarmed watch leaves its pages untracked");
	free(big);
	return failed;
}
