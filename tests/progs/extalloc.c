/* SPDX-License-Identifier: MIT */
/* extalloc.c: a program that allocates through a replacement allocator's
 * functions of its own, beside the malloc family (extalloc.sh).
 *
 *   extalloc je N   jemalloc's mallocx() family, mixed with malloc and
 *                   free, then N mallocx/sdallocx pairs on each of two
 *                   threads; leaves one 64-byte block of its own live
 *   extalloc tc N   tcmalloc's tc_ functions, the same way (48 bytes live)
 *   extalloc probe  whether mallocx and tc_malloc are defined at all
 *   extalloc je-plugin N PLUGIN
 *                   loads PLUGIN (extplug.so) with dlopen(RTLD_LAZY), where
 *                   jemalloc is loaded, and runs its
 *                   N mallocx/sdallocx pairs; it keeps one 77-byte block
 *   extalloc je-overflow
 *                   writes one byte past a mallocx(100) block, then
 *                   releases it with sdallocx (guard mode's finding)
 *   extalloc je-dlsym N, extalloc tc-dlsym N
 *                   the functions looked up with dlsym(RTLD_DEFAULT) and
 *                   in the allocator's handle, called through those
 *                   pointers: N pairs on each of two threads, and one
 *                   block kept (91 bytes; tc: 39)
 *
 * The functions are weak references: the program is built without either
 * allocator's headers or libraries, and runs with one preloaded (or none,
 * for probe: the recorder must not define them). It prints only what the
 * allocator's answers let it check, the same with and without the
 * recorder and in guard mode, and exits 1 on a wrong answer. */
#define _GNU_SOURCE /* RTLD_DEFAULT, RTLD_NOLOAD */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MALLOCX_LG_ALIGN(la) ((int)(la))
#define MALLOCX_ZERO ((int)0x40)
#define MALLOCX_TCACHE_NONE ((int)(1u << 8))

void *mallocx(size_t size, int flags) __attribute__((weak));
void *rallocx(void *ptr, size_t size, int flags) __attribute__((weak));
size_t xallocx(void *ptr, size_t size, size_t extra, int flags) __attribute__((weak));
size_t sallocx(const void *ptr, int flags) __attribute__((weak));
void dallocx(void *ptr, int flags) __attribute__((weak));
void sdallocx(void *ptr, size_t size, int flags) __attribute__((weak));

void *tc_malloc(size_t size) __attribute__((weak));
void *tc_calloc(size_t n, size_t size) __attribute__((weak));
void *tc_realloc(void *ptr, size_t size) __attribute__((weak));
void *tc_memalign(size_t align, size_t size) __attribute__((weak));
int tc_posix_memalign(void **out, size_t align, size_t size) __attribute__((weak));
void tc_free(void *ptr) __attribute__((weak));
void tc_free_sized(void *ptr, size_t size) __attribute__((weak));
void tc_cfree(void *ptr) __attribute__((weak));
size_t tc_malloc_size(void *ptr) __attribute__((weak));
void *tc_new(size_t size) __attribute__((weak));
void *tc_newarray(size_t size) __attribute__((weak));
void tc_delete(void *ptr) __attribute__((weak));
void tc_deletearray_sized(void *ptr, size_t size) __attribute__((weak));
/* The C++ aligned nothrow forms, with a std::nothrow_t by reference. */
void *tc_new_aligned_nothrow(size_t size, size_t align, const void *nt) __attribute__((weak));
void tc_delete_aligned_nothrow(void *ptr, size_t align, const void *nt) __attribute__((weak));

static int bad;
static long n_pairs;
static void *kept; /* the block left live at exit */

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "extalloc: %s\n", what);
		bad = 1;
	}
}

static int all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* Through a pointer read from the GOT (a GLOB_DAT relocation), not a
 * call through the PLT. */
static void *(*volatile mallocx_ptr)(size_t, int);

static void *je_pairs(void *arg)
{
	(void)arg;
	for (long i = 0; i < n_pairs; i++) {
		size_t n = 16 + (size_t)(i % 64) * 8;
		char *p = mallocx(n, 0);

		if (!p)
			return (void *)1;
		p[0] = p[n - 1] = 1;
		sdallocx(p, n, 0);
	}
	return NULL;
}

static void *tc_pairs(void *arg)
{
	(void)arg;
	for (long i = 0; i < n_pairs; i++) {
		size_t n = 16 + (size_t)(i % 64) * 8;
		char *p = tc_malloc(n);

		if (!p)
			return (void *)1;
		p[0] = p[n - 1] = 1;
		tc_free_sized(p, n);
	}
	return NULL;
}

static int two_threads(void *(*fn)(void *))
{
	pthread_t t[2];
	void *r[2] = { NULL, NULL };

	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, fn, NULL))
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], &r[i]);
	return r[0] || r[1];
}

static int je(void)
{
	char *a, *b, *c, *z, *al;
	size_t n;

	if (!mallocx || !rallocx || !xallocx || !sallocx || !dallocx || !sdallocx) {
		printf("jemalloc's functions: absent\n");
		return 2;
	}
	a = malloc(100); /* malloc'd, released by sdallocx */
	check(a != NULL, "malloc(100) failed");
	memset(a, 1, 100);
	sdallocx(a, 100, 0);
	b = mallocx(200, 0); /* mallocx'd, freed */
	check(b && sallocx(b, 0) >= 200, "mallocx(200) or its sallocx");
	memset(b, 2, 200);
	free(b);
	c = malloc(300);
	memset(c, 3, 300);
	c = rallocx(c, 3000, 0); /* moved by rallocx */
	check(c && c[299] == 3, "rallocx(300 -> 3000) lost the bytes");
	n = xallocx(c, 3000, 1000, 0); /* in place: at least what it had */
	check(n >= 3000, "xallocx(3000 + 1000) shrank the block");
	dallocx(c, 0);
	z = mallocx(4096, MALLOCX_ZERO);
	check(z && all_zero((unsigned char *)z, 4096), "mallocx(MALLOCX_ZERO) not zeroed");
	dallocx(z, MALLOCX_TCACHE_NONE);
	al = mallocx(100, MALLOCX_LG_ALIGN(12));
	check(al && (uintptr_t)al % 4096 == 0, "mallocx(MALLOCX_LG_ALIGN(12)) not aligned");
	memset(al, 4, 100);
	al = rallocx(al, 5000, MALLOCX_LG_ALIGN(12) | MALLOCX_ZERO);
	check(al && (uintptr_t)al % 4096 == 0 && al[99] == 4 && all_zero((unsigned char *)al + 100, 4900),
	      "rallocx(aligned, zeroed) lost the alignment, the bytes or the zeroes");
	sdallocx(al, 5000, MALLOCX_LG_ALIGN(12));
	mallocx_ptr = mallocx;
	b = mallocx_ptr(50, 0);
	check(b != NULL, "mallocx through a pointer failed");
	dallocx(b, 0);
	kept = mallocx(64, 0);
	check(kept != NULL, "mallocx(64) failed");
	check(two_threads(je_pairs) == 0, "a thread's mallocx failed");
	printf("jemalloc's functions: checked\n");
	return 0;
}

static int tc(void)
{
	static const char nothrow; /* a std::nothrow_t: empty, passed by reference */
	char *p, *q;
	void *m = NULL;

	if (!tc_malloc || !tc_calloc || !tc_realloc || !tc_memalign || !tc_posix_memalign || !tc_free ||
	    !tc_free_sized || !tc_cfree || !tc_malloc_size || !tc_new || !tc_newarray || !tc_delete ||
	    !tc_deletearray_sized || !tc_new_aligned_nothrow || !tc_delete_aligned_nothrow) {
		printf("tcmalloc's functions: absent\n");
		return 2;
	}
	p = tc_malloc(100);
	check(p && tc_malloc_size(p) >= 100, "tc_malloc(100) or its tc_malloc_size");
	free(p); /* tc_malloc'd, freed */
	p = malloc(200);
	tc_free(p); /* malloc'd, tc_freed */
	p = tc_calloc(10, 30);
	check(p && all_zero((unsigned char *)p, 300), "tc_calloc not zeroed");
	p = tc_realloc(p, 3000);
	tc_free_sized(p, 3000);
	p = tc_memalign(256, 100);
	check(p && (uintptr_t)p % 256 == 0, "tc_memalign not aligned");
	tc_cfree(p);
	check(tc_posix_memalign(&m, 64, 80) == 0 && (uintptr_t)m % 64 == 0, "tc_posix_memalign");
	tc_free(m);
	p = tc_new(40);
	tc_delete(p);
	q = tc_newarray(400);
	tc_deletearray_sized(q, 400);
	p = tc_new_aligned_nothrow(100, 128, &nothrow);
	check(p && (uintptr_t)p % 128 == 0, "tc_new_aligned_nothrow not aligned");
	tc_delete_aligned_nothrow(p, 128, &nothrow);
	kept = tc_malloc(48);
	check(kept != NULL, "tc_malloc(48) failed");
	check(two_threads(tc_pairs) == 0, "a thread's tc_malloc failed");
	printf("tcmalloc's functions: checked\n");
	return 0;
}

/* The allocator's functions as dlsym() finds them: in the global scope,
 * or (dallocx, tc_free) in the handle of the library that defines them. */
static void *(*dl_alloc)(size_t, int);
static void (*dl_sized_free)(void *, size_t, int);
static void (*dl_free)(void *, int);
static void *(*dl_tc_malloc)(size_t);
static void (*dl_tc_free)(void *);

static void *dl_pairs(void *arg)
{
	(void)arg;
	for (long i = 0; i < n_pairs; i++) {
		size_t n = 16 + (size_t)(i % 64) * 8;
		char *p = dl_alloc ? dl_alloc(n, 0) : dl_tc_malloc(n);

		if (!p)
			return (void *)1;
		p[0] = p[n - 1] = 1;
		if (dl_alloc)
			dl_sized_free(p, n, 0);
		else
			dl_tc_free(p);
	}
	return NULL;
}

static int by_dlsym(int je_group)
{
	void *h = dlopen(je_group ? "libjemalloc.so.2" : "libtcmalloc_minimal.so.4", RTLD_LAZY | RTLD_NOLOAD);
	char *p;

	if (je_group) {
		dl_alloc = (void *(*)(size_t, int))dlsym(RTLD_DEFAULT, "mallocx");
		dl_sized_free = (void (*)(void *, size_t, int))dlsym(RTLD_DEFAULT, "sdallocx");
		dl_free = h ? (void (*)(void *, int))dlsym(h, "dallocx") : NULL;
		if (!dl_alloc || !dl_sized_free || !dl_free) {
			printf("jemalloc's functions through dlsym: absent\n");
			return 2;
		}
		p = dl_alloc(100, 0); /* mallocx'd, released by dallocx */
		check(p != NULL, "mallocx(100) through dlsym failed");
		dl_free(p, 0);
		p = malloc(200); /* malloc'd, released by sdallocx */
		check(p != NULL, "malloc(200) failed");
		dl_sized_free(p, 200, 0);
		kept = dl_alloc(91, 0);
	} else {
		dl_tc_malloc = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "tc_malloc");
		dl_tc_free = h ? (void (*)(void *))dlsym(h, "tc_free") : NULL;
		if (!dl_tc_malloc || !dl_tc_free) {
			printf("tcmalloc's functions through dlsym: absent\n");
			return 2;
		}
		p = dl_tc_malloc(100); /* tc_malloc'd, freed */
		check(p != NULL, "tc_malloc(100) through dlsym failed");
		free(p);
		p = malloc(200); /* malloc'd, released by tc_free */
		check(p != NULL, "malloc(200) failed");
		dl_tc_free(p);
		kept = dl_tc_malloc(39);
	}
	check(kept != NULL, "the kept block's allocation through dlsym failed");
	check(two_threads(dl_pairs) == 0, "a thread's allocation through dlsym failed");
	printf("%s's functions through dlsym: checked\n", je_group ? "jemalloc" : "tcmalloc");
	return 0;
}

int main(int argc, char **argv)
{
	int r;

	if (argc < 2)
		return 2;
	n_pairs = argc > 2 ? atol(argv[2]) : 1000;
	if (!strcmp(argv[1], "probe")) {
		printf("mallocx %s, tc_malloc %s, dlsym mallocx %s, dlsym tc_malloc %s\n",
		       mallocx ? "defined" : "absent", tc_malloc ? "defined" : "absent",
		       dlsym(RTLD_DEFAULT, "mallocx") ? "found" : "absent",
		       dlsym(RTLD_DEFAULT, "tc_malloc") ? "found" : "absent");
		return 0;
	}
	if (!strcmp(argv[1], "je-plugin") && argc > 3) {
		void *h = dlopen(argv[3], RTLD_LAZY);
		int (*run)(long) = h ? (int (*)(long))dlsym(h, "extplug_run") : NULL;

		if (!run) {
			fprintf(stderr, "extalloc: %s\n", dlerror());
			return 1;
		}
		r = run(n_pairs);
		printf("plugin: %s\n", r ? "failed" : "ran");
		return r;
	}
	if (!strcmp(argv[1], "je-overflow")) {
		char *p;

		if (!mallocx || !sdallocx)
			return 2;
		p = mallocx(100, 0);
		if (!p)
			return 1;
		((volatile char *)p)[100] = 7;
		sdallocx(p, 100, 0);
		return 0;
	}
	r = !strcmp(argv[1], "je")         ? je()
	    : !strcmp(argv[1], "tc")       ? tc()
	    : !strcmp(argv[1], "je-dlsym") ? by_dlsym(1)
	    : !strcmp(argv[1], "tc-dlsym") ? by_dlsym(0)
					   : 2;
	return r ? r : bad;
}
