/* SPDX-License-Identifier: MIT */
/* dtv.c: the threads' vectors of thread-local storage, kept the program's
 * size in its heap. glibc gives each thread pthread_create starts a vector
 * (its DTV) of 16 bytes per module with thread-local storage, plus spare
 * entries, which the loader allocates with calloc(n, 16). The recorder
 * brings such modules (its own library; libunwind, where nothing of the
 * program's loads it too), so each vector was 16 bytes a module longer
 * than natively, and every block the program allocated after a thread
 * started lay that much further on. Now the vector itself lives in the
 * recorder's arena, at its full length, and the program's heap gets a
 * stand-in of the native length, allocated, resized and freed where the
 * vector is (hooks.c): the loader's calloc is recorded as the stand-in's.
 * A vector's arena block begins with a head (the stand-in's address, the
 * vector's length, the list of live vectors), and the vector follows:
 * an arena pointer 48 bytes past the alignment of its block is a vector.
 * The scan at exit reads the live vectors as the program's memory
 * (reach.c): they point to the threads' blocks of dynamic thread-local
 * storage, as they do from the heap natively.
 *
 * Not for the main thread's vector, which the loader made at start-up
 * outside the heap, and replaces (when the program has loaded more than
 * 14 modules with thread-local storage with dlopen) with a malloc that
 * cannot be told from the loader's others: that one is longer than
 * natively, as before. Nor for a thread started by a call that does not
 * reach pthread_create through its symbol (C11's thrd_create). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "elfdyn.h"
#include "hooks-int.h"
#include "objects.h"

/* The modules with thread-local storage that only the recorder brings
 * (0 until counted, or where they could not be: no stand-in then). */
size_t mms__dtv_extra;

#define DTV_MAGIC UINT64_C(0x5654445f534d4d) /* "MMS_DTV" */

struct dtv_head {
	uint64_t magic;
	void *stand;                  /* the stand-in in the program's heap */
	struct dtv_head *prev, *next; /* the live vectors */
	size_t bytes;                 /* the vector's length */
	uint64_t pad;
};

_Static_assert(sizeof(struct dtv_head) == 48, "a vector follows its head at 48 bytes");

static struct dtv_head *live;
static int live_lock;

void *mms__dtv_new(size_t bytes)
{
	struct dtv_head *h = mms__arena_alloc(bytes + sizeof(*h), 16);

	if (!h)
		return NULL;
	memset(h, 0, bytes + sizeof(*h));
	h->magic = DTV_MAGIC;
	h->bytes = bytes;
	mms__spin_lock(&live_lock);
	h->next = live;
	if (live)
		live->prev = h;
	live = h;
	mms__spin_unlock(&live_lock);
	return h + 1;
}

static struct dtv_head *head_of(const void *d)
{
	return (struct dtv_head *)d - 1;
}

int mms__dtv_is(const void *ptr)
{
	/* Every other block of the arena is aligned to its size. */
	return ((uintptr_t)ptr & (mms__arena_usable(ptr) - 1)) == sizeof(struct dtv_head) &&
	       head_of(ptr)->magic == DTV_MAGIC;
}

void mms__dtv_set_stand(void *d, void *stand)
{
	head_of(d)->stand = stand;
}

void *mms__dtv_stand(const void *d)
{
	return head_of(d)->stand;
}

size_t mms__dtv_room(const void *d)
{
	return head_of(d)->bytes;
}

void mms__dtv_release(void *d)
{
	struct dtv_head *h = head_of(d);

	mms__spin_lock(&live_lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		live = h->next;
	if (h->next)
		h->next->prev = h->prev;
	h->magic = 0;
	mms__spin_unlock(&live_lock);
	mms__arena_free(h);
}

int mms__dtv_each(int (*fn)(uintptr_t lo, uintptr_t hi, void *ctx), void *ctx)
{
	int rc = 0;

	mms__spin_lock(&live_lock);
	for (const struct dtv_head *h = live; h && !rc; h = h->next)
		rc = fn((uintptr_t)(h + 1), (uintptr_t)(h + 1) + h->bytes, ctx);
	mms__spin_unlock(&live_lock);
	return rc;
}

/* Held across a fork, so that the child's list is whole. */
void mms__dtv_before_fork(void)
{
	mms__spin_lock(&live_lock);
}

void mms__dtv_after_fork(void)
{
	mms__spin_unlock(&live_lock);
}

/* --- counting the recorder's modules ------------------------------------------ */

#define MAX_OBJECTS 1024

struct object {
	uintptr_t base;
	const char *name; /* its DT_SONAME, else its file's base name */
	int tls;          /* it has thread-local storage */
	const ElfW(Dyn) * dyn;
	const char *strtab;
};

struct census {
	struct object obj[MAX_OBJECTS];
	size_t n;
	int overflow;
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int census_add(struct dl_phdr_info *info, size_t size, void *data)
{
	struct census *c = data;
	struct object *o;
	struct mms_dyn d;

	(void)size;
	if (c->n == MAX_OBJECTS) {
		c->overflow = 1;
		return 1;
	}
	o = &c->obj[c->n++];
	memset(o, 0, sizeof(*o));
	o->base = info->dlpi_addr;
	o->tls = info->dlpi_tls_modid != 0;
	o->name = base_name(info->dlpi_name ? info->dlpi_name : "");
	if (mms__dyn_read(info, &d) == 0 && d.strtab) {
		o->dyn = d.dyn;
		o->strtab = d.strtab;
		for (const ElfW(Dyn) *e = d.dyn; e->d_tag != DT_NULL; e++)
			if (e->d_tag == DT_SONAME)
				o->name = d.strtab + e->d_un.d_val;
	}
	return 0;
}

/* Whether object o lists name among the libraries it needs. */
static int needs(const struct object *o, const char *name)
{
	if (!o->dyn)
		return 0;
	for (const ElfW(Dyn) *e = o->dyn; e->d_tag != DT_NULL; e++)
		if (e->d_tag == DT_NEEDED && !strcmp(o->strtab + e->d_un.d_val, name))
			return 1;
	return 0;
}

void mms__dtv_count(void)
{
	static struct census c; /* 40 KiB: not on a thread's stack */
	static int lock, counted;
	Dl_info self;
	size_t i, j, k = 0, me = SIZE_MAX;

	if (__atomic_load_n(&counted, __ATOMIC_ACQUIRE) || mms__phdr_unsafe() ||
	    !dladdr((void *)&mms__dtv_count, &self))
		return;
	mms__spin_lock(&lock);
	if (counted) {
		mms__spin_unlock(&lock);
		return;
	}
	__atomic_store_n(&counted, 1, __ATOMIC_RELEASE);
	c.n = 0;
	c.overflow = 0;
	mms__phdr_iterate(census_add, &c);
	for (i = 0; i < c.n && !c.overflow; i++)
		if (c.obj[i].base == (uintptr_t)self.dli_fbase)
			me = i;
	if (me == SIZE_MAX || c.overflow) {
		mms__spin_unlock(&lock);
		return;
	}
	k = c.obj[me].tls;
	/* A library with thread-local storage that the recorder needs and
	 * nothing else loaded does: there only because of the recorder. */
	for (i = 0; i < c.n; i++) {
		if (i == me || !c.obj[i].tls || !needs(&c.obj[me], c.obj[i].name))
			continue;
		for (j = 0; j < c.n && (j == me || j == i || !needs(&c.obj[j], c.obj[i].name)); j++)
			;
		k += j == c.n;
	}
	__atomic_store_n(&mms__dtv_extra, k, __ATOMIC_RELEASE);
	mms__spin_unlock(&lock);
}
