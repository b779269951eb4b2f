/* SPDX-License-Identifier: MIT */
/* extalloc.c: a program that allocates through a replacement allocator's
 * functions of its own, beside the malloc family (extalloc.sh).
 *
 *   extalloc je N   jemalloc's mallocx() family, mixed with malloc and
 *                   free, then N mallocx/sdallocx pairs on each of two
 *                   threads; leaves one 64-byte block of its own live
 *   extalloc tc N   tcmalloc's tc_ functions, the same way (48 bytes live)
 *   extalloc mi N   mimalloc's mi_ functions (its heaps too: one
 *                   destroyed with its blocks, one deleted), the same way
 *                   (57 bytes live)
 *   extalloc mi-overflow
 *                   writes one byte past an mi_zalloc(100) block, then
 *                   releases it with mi_free (guard mode's finding)
 *   extalloc probe  whether mallocx, tc_malloc and mi_malloc are defined
 *                   at all
 *   extalloc je-plugin N PLUGIN
 *                   loads PLUGIN (extplug.so) with dlopen(RTLD_LAZY), where
 *                   jemalloc is loaded, and runs its
 *                   N mallocx/sdallocx pairs; it keeps one 77-byte block
 *   extalloc je-overflow
 *                   writes one byte past a mallocx(100) block, then
 *                   releases it with sdallocx (guard mode's finding)
 *   extalloc je-dlsym N, extalloc tc-dlsym N, extalloc mi-dlsym N
 *                   the functions looked up with dlsym(RTLD_DEFAULT) and
 *                   in the allocator's handle, called through those
 *                   pointers: N pairs on each of two threads, and one
 *                   block kept (91 bytes; tc: 39; mi: 43, mi_zalloc and
 *                   mi_free)
 *
 * The functions are weak references: the program is built without any
 * allocator's headers or libraries, and runs with one preloaded (or none,
 * for probe: the recorder must not define them). It prints only what the
 * allocator's answers let it check, the same with and without the
 * recorder and in guard mode, and exits 1 on a wrong answer. */
#define _GNU_SOURCE /* RTLD_DEFAULT, RTLD_NOLOAD */
#include <dlfcn.h>
#include <errno.h>
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
typedef struct mi_heap_s mi_heap_t;
void *mi_malloc(size_t size) __attribute__((weak));
void *mi_calloc(size_t n, size_t size) __attribute__((weak));
void *mi_realloc(void *p, size_t size) __attribute__((weak));
void mi_free(void *p) __attribute__((weak));
void mi_free_size(void *p, size_t size) __attribute__((weak));
size_t mi_usable_size(const void *p) __attribute__((weak));
void *mi_zalloc(size_t size) __attribute__((weak));
void *mi_mallocn(size_t n, size_t size) __attribute__((weak));
void *mi_reallocn(void *p, size_t n, size_t size) __attribute__((weak));
void *mi_reallocf(void *p, size_t size) __attribute__((weak));
void *mi_rezalloc(void *p, size_t size) __attribute__((weak));
void *mi_recalloc(void *p, size_t n, size_t size) __attribute__((weak));
void *mi_malloc_aligned(size_t size, size_t align) __attribute__((weak));
void *mi_malloc_aligned_at(size_t size, size_t align, size_t off) __attribute__((weak));
void *mi_calloc_aligned(size_t n, size_t size, size_t align) __attribute__((weak));
void *mi_realloc_aligned(void *p, size_t size, size_t align) __attribute__((weak));
void *mi_expand(void *p, size_t size) __attribute__((weak));
char *mi_strdup(const char *s) __attribute__((weak));
char *mi_strndup(const char *s, size_t n) __attribute__((weak));
mi_heap_t *mi_heap_new(void) __attribute__((weak));
void mi_heap_delete(mi_heap_t *heap) __attribute__((weak));
void mi_heap_destroy(mi_heap_t *heap) __attribute__((weak));
void *mi_heap_malloc(mi_heap_t *heap, size_t size) __attribute__((weak));
void *mi_heap_zalloc(mi_heap_t *heap, size_t size) __attribute__((weak));
void *mi_heap_calloc(mi_heap_t *heap, size_t n, size_t size) __attribute__((weak));
void *mi_heap_realloc(mi_heap_t *heap, void *p, size_t size) __attribute__((weak));
char *mi_heap_strdup(mi_heap_t *heap, const char *s) __attribute__((weak));
void *mi_heap_malloc_aligned(mi_heap_t *heap, size_t size, size_t align) __attribute__((weak));
int mi_reserve_os_memory(size_t size, _Bool commit, _Bool allow_large) __attribute__((weak));

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

/* tcmalloc's tc_malloc and tc_free_sized, or mimalloc's mi_malloc and
 * mi_free_size: the pairs of sized_pairs(). */
static void *(*pair_alloc)(size_t);
static void (*pair_free)(void *, size_t);

static void *sized_pairs(void *arg)
{
	(void)arg;
	for (long i = 0; i < n_pairs; i++) {
		size_t n = 16 + (size_t)(i % 64) * 8;
		char *p = pair_alloc(n);

		if (!p)
			return (void *)1;
		p[0] = p[n - 1] = 1;
		pair_free(p, n);
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

/* The end of tc() and mi(): a block of keep bytes kept from alloc, the
 * pairs of alloc and release on two threads. */
static int kept_and_pairs(const char *who, void *(*alloc)(size_t), void (*release)(void *, size_t), size_t keep)
{
	kept = alloc(keep);
	check(kept != NULL, "the kept block's allocation failed");
	pair_alloc = alloc;
	pair_free = release;
	check(two_threads(sized_pairs) == 0, "a thread's allocation failed");
	printf("%s's functions: checked\n", who);
	return 0;
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
	return kept_and_pairs("tcmalloc", tc_malloc, tc_free_sized, 48);
}

/* mimalloc's: each kind of call once or more, its heaps, then the pairs
 * (126 allocations before them, 127 where mi_expand() shrinks in place). */
static int mi(void)
{
	char *p, *q, *e;
	mi_heap_t *h;

	if (!mi_malloc || !mi_calloc || !mi_realloc || !mi_free || !mi_free_size || !mi_usable_size || !mi_zalloc ||
	    !mi_mallocn || !mi_reallocn || !mi_reallocf || !mi_rezalloc || !mi_recalloc || !mi_malloc_aligned ||
	    !mi_malloc_aligned_at || !mi_calloc_aligned || !mi_realloc_aligned || !mi_expand || !mi_strdup ||
	    !mi_strndup || !mi_heap_new || !mi_heap_delete || !mi_heap_destroy || !mi_heap_malloc || !mi_heap_zalloc ||
	    !mi_heap_calloc || !mi_heap_realloc || !mi_heap_strdup || !mi_heap_malloc_aligned) {
		printf("mimalloc's functions: absent\n");
		return 2;
	}
	/* An arena mimalloc maps for itself, outside any allocation: its
	 * own, not the program's mapping. */
	if (mi_reserve_os_memory)
		check(mi_reserve_os_memory((size_t)8 << 20, 0, 0) == 0, "mi_reserve_os_memory failed");
	p = malloc(100); /* malloc'd, released by mi_free */
	check(p != NULL, "malloc(100) failed");
	memset(p, 1, 100);
	mi_free(p);
	p = mi_malloc(200); /* mi_malloc'd, freed */
	check(p && mi_usable_size(p) >= 200, "mi_malloc(200) or its mi_usable_size");
	free(p);
	p = mi_zalloc(4096);
	check(p && all_zero((unsigned char *)p, 4096), "mi_zalloc not zeroed");
	p = mi_rezalloc(p, 8192);
	check(p && all_zero((unsigned char *)p, 8192), "mi_rezalloc not zeroed");
	mi_free(p);
	p = mi_mallocn(10, 30);
	memset(p, 2, 300);
	p = mi_reallocn(p, 20, 30);
	check(p && p[299] == 2, "mi_reallocn lost the bytes");
	mi_free_size(p, 600);
	errno = 0;
	check(mi_mallocn((size_t)-1 / 2, 4) == NULL && errno == 0, "mi_mallocn of too many bytes, or its errno");
	check(mi_zalloc((size_t)1 << 62) == NULL && errno == ENOMEM, "mi_zalloc of 4 EiB, or its errno");
	p = mi_recalloc(NULL, 5, 8);
	check(p && all_zero((unsigned char *)p, 40), "mi_recalloc not zeroed");
	p = mi_recalloc(p, 50, 8);
	check(p && all_zero((unsigned char *)p, 400), "mi_recalloc's growth not zeroed");
	mi_free(p);
	p = mi_malloc_aligned(100, 256);
	check(p && (uintptr_t)p % 256 == 0, "mi_malloc_aligned not aligned");
	memset(p, 3, 100);
	p = mi_realloc_aligned(p, 5000, 256);
	check(p && (uintptr_t)p % 256 == 0 && p[99] == 3, "mi_realloc_aligned lost the alignment or the bytes");
	mi_free(p);
	p = mi_malloc_aligned_at(100, 64, 16);
	check(p && (uintptr_t)(p + 16) % 64 == 0, "mi_malloc_aligned_at not aligned at its offset");
	mi_free(p);
	p = mi_calloc_aligned(10, 10, 128);
	check(p && (uintptr_t)p % 128 == 0 && all_zero((unsigned char *)p, 100), "mi_calloc_aligned");
	mi_free(p);
	e = mi_malloc(1000); /* shrunk in place, or left as it is */
	memset(e, 4, 1000);
	p = mi_expand(e, 10);
	check(p == NULL || p == e, "mi_expand moved the block");
	check(mi_expand(NULL, 10) == NULL, "mi_expand(NULL) made a block");
	mi_free(e);
	p = mi_strdup("extalloc");
	q = mi_strndup("extalloc", 3);
	check(p && q && !strcmp(p, "extalloc") && !strcmp(q, "ext"), "mi_strdup or mi_strndup");
	errno = ENOMEM; /* as mi_zalloc's refusal left it: no refusal of mi_strdup's */
	check(mi_strdup(NULL) == NULL && errno == ENOMEM, "mi_strdup(NULL) or the errno it left");
	mi_free(p);
	free(q);
	p = mi_reallocf(mi_malloc(10), 20);
	check(p != NULL, "mi_reallocf failed");
	mi_free(p);
	/* A heap destroyed with its blocks: none freed one by one. */
	h = mi_heap_new();
	check(h != NULL, "mi_heap_new failed");
	for (int i = 0; i < 100; i++)
		check(mi_heap_malloc(h, 64 + (size_t)i) != NULL, "mi_heap_malloc failed");
	p = mi_heap_zalloc(h, 100);
	check(p && all_zero((unsigned char *)p, 100), "mi_heap_zalloc not zeroed");
	p = mi_heap_calloc(h, 3, 7);
	check(p && all_zero((unsigned char *)p, 21), "mi_heap_calloc not zeroed");
	p = mi_heap_realloc(h, mi_heap_malloc(h, 10), 1000);
	check(p != NULL, "mi_heap_realloc failed");
	check(mi_heap_strdup(h, "x") != NULL, "mi_heap_strdup failed");
	p = mi_heap_malloc_aligned(h, 100, 512);
	check(p && (uintptr_t)p % 512 == 0, "mi_heap_malloc_aligned not aligned");
	mi_heap_destroy(h);
	/* A heap deleted: its blocks live on, then freed. */
	h = mi_heap_new();
	p = h ? mi_heap_malloc(h, 33) : NULL;
	check(p != NULL, "mi_heap_malloc in a second heap failed");
	mi_heap_delete(h);
	mi_free(p);
	return kept_and_pairs("mimalloc", mi_malloc, mi_free_size, 57);
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

/* Looked up in the allocator's handle: tcmalloc's or mimalloc's free. */
static const char *const lib_of[] = { "libtcmalloc_minimal.so.4", "libjemalloc.so.2", "libmimalloc.so.2" };
static const char *const alloc_of[] = { "tc_malloc", NULL, "mi_zalloc" };
static const char *const free_of[] = { "tc_free", NULL, "mi_free" };
static const char *const who_of[] = { "tcmalloc", "jemalloc", "mimalloc" };

/* group: 0 tcmalloc, 1 jemalloc, 2 mimalloc. */
static int by_dlsym(int group)
{
	void *h = dlopen(lib_of[group], RTLD_LAZY | RTLD_NOLOAD);
	int je_group = group == 1;
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
		dl_tc_malloc = (void *(*)(size_t))dlsym(RTLD_DEFAULT, alloc_of[group]);
		dl_tc_free = h ? (void (*)(void *))dlsym(h, free_of[group]) : NULL;
		if (!dl_tc_malloc || !dl_tc_free) {
			printf("%s's functions through dlsym: absent\n", who_of[group]);
			return 2;
		}
		p = dl_tc_malloc(100); /* its allocation, freed */
		check(p != NULL, "the allocation of 100 bytes through dlsym failed");
		free(p);
		p = malloc(200); /* malloc'd, released by its free */
		check(p != NULL, "malloc(200) failed");
		dl_tc_free(p);
		kept = dl_tc_malloc(group ? 43 : 39);
	}
	check(kept != NULL, "the kept block's allocation through dlsym failed");
	check(two_threads(dl_pairs) == 0, "a thread's allocation through dlsym failed");
	printf("%s's functions through dlsym: checked\n", who_of[group]);
	return 0;
}

int main(int argc, char **argv)
{
	int r;

	if (argc < 2)
		return 2;
	n_pairs = argc > 2 ? atol(argv[2]) : 1000;
	if (!strcmp(argv[1], "probe")) {
		printf("mallocx %s, tc_malloc %s, mi_malloc %s, dlsym mallocx %s, dlsym tc_malloc %s, dlsym mi_malloc %s\n",
		       mallocx ? "defined" : "absent", tc_malloc ? "defined" : "absent",
		       mi_malloc ? "defined" : "absent", dlsym(RTLD_DEFAULT, "mallocx") ? "found" : "absent",
		       dlsym(RTLD_DEFAULT, "tc_malloc") ? "found" : "absent",
		       dlsym(RTLD_DEFAULT, "mi_malloc") ? "found" : "absent");
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
	if (!strcmp(argv[1], "mi-overflow")) {
		char *p;

		if (!mi_zalloc || !mi_free)
			return 2;
		p = mi_zalloc(100);
		if (!p)
			return 1;
		((volatile char *)p)[100] = 7;
		mi_free(p);
		return 0;
	}
	r = !strcmp(argv[1], "mi")         ? mi()
	    : !strcmp(argv[1], "je")       ? je()
	    : !strcmp(argv[1], "tc")       ? tc()
	    : !strcmp(argv[1], "je-dlsym") ? by_dlsym(1)
	    : !strcmp(argv[1], "tc-dlsym") ? by_dlsym(0)
	    : !strcmp(argv[1], "mi-dlsym") ? by_dlsym(2)
					   : 2;
	return r ? r : bad;
}
