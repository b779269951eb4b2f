/* SPDX-License-Identifier: MIT */
/* modules.c: records the loaded modules (path, load address, extent,
 * build-id) so stacks can be symbolized offline. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "hooks-int.h"
#include "log.h"
#include "objects.h"

/* Modules already in the log, by load address and name hash. Scans happen
 * at start, when a thread takes a new chunk (when the loader's count of
 * loaded objects changed), before dlclose and at exit. */
#define MAX_MODULES 4096
static struct {
	uintptr_t base;
	uint64_t name_hash;
} seen[MAX_MODULES];
static unsigned nseen;
static unsigned long long last_adds;
static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;

struct scan {
	struct mms_thread *t;
	uintptr_t cuda_lo, cuda_hi; /* the CUDA driver's code, when loaded */
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	while (*s)
		h = (h ^ (uint8_t)*s++) * 0x100000001b3ull;
	return h;
}

static size_t build_id(const struct dl_phdr_info *info, const uint8_t **out)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof *nh;
			const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
			if (desc + nh->n_descsz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
				*out = desc;
				return nh->n_descsz;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

/* scan_one's room for a name and its record: static, under scan_lock
 * (12 KiB would not fit the stack of a thread created with
 * PTHREAD_STACK_MIN, where a program may call dlopen). */
static char scan_exe[MMS_MAX_STRING];
static uint8_t scan_rec[64 + 2 * (10 + MMS_MAX_STRING)];

/* Encodes the MODULE record of info into out (scan_rec's size); sets *hash
 * to its path's. Returns the record's length. */
static size_t encode_module(struct dl_phdr_info *info, uint8_t *out, uint64_t *hash)
{
	const char *path = info->dlpi_name;
	const uint8_t *bid = NULL;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	uint8_t *p = out;
	size_t bidlen;

	if (!path || !*path) {
		mms__self_exe(scan_exe, sizeof scan_exe);
		path = scan_exe;
	}
	*hash = hash_str(path);
	for (int k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (lo > hi)
		lo = hi = info->dlpi_addr;
	bidlen = build_id(info, &bid);
	p = mms_put_u(p, info->dlpi_addr);
	p = mms_put_u(p, lo);
	p = mms_put_u(p, hi);
	p = mms_put_s(p, path, strlen(path));
	p = mms_put_s(p, bid, bidlen);
	return (size_t)(p - out);
}

/* Notes a module seen by this log: 0 when it was already. */
static int note_seen(uintptr_t base, uint64_t h)
{
	for (unsigned i = 0; i < nseen; i++)
		if (seen[i].base == base && seen[i].name_hash == h)
			return 0;
	if (nseen < MAX_MODULES) {
		seen[nseen].base = base;
		seen[nseen++].name_hash = h;
	}
	return 1;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *sc = arg;
	uint64_t h;
	size_t len = encode_module(info, scan_rec, &h);

	const char *name = info->dlpi_name ? info->dlpi_name : "", *slash = strrchr(name, '/');

	(void)size;
	if (note_seen(info->dlpi_addr, h))
		mms__write_meta(sc->t, MMS_TAG_MODULE, scan_rec, len);
	if (!strncmp(slash ? slash + 1 : name, "libcuda.so", 10))
		mms__code_span(info, &sc->cuda_lo, &sc->cuda_hi);
	return 0;
}

/* --- fork ---------------------------------------------------------------------
 * glibc does not reset in a fork child the loader's lock that
 * dl_iterate_phdr and dlopen hold: a fork while another thread was inside
 * either leaves the child's first call of dl_iterate_phdr waiting forever
 * (natively the child never calls it, or deadlocks itself). So the
 * recorder makes none in a child until the child's own dlclose has gone
 * through the loader (phdr_unsafe); the child's log lists the modules its
 * parent had at the fork, encoded by the forking thread (snap). */
static int phdr_unsafe;
static uint8_t *snap; /* (u64 base, u64 hash, u32 len, record) entries */
static size_t snap_len, snap_cap;
static unsigned long long snap_adds;
static int snap_written; /* this log has them */

static int snap_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	uint64_t h, base = info->dlpi_addr;
	uint32_t len = (uint32_t)encode_module(info, scan_rec, &h);
	size_t need = 20 + (size_t)len;

	(void)size;
	(void)arg;
	if (snap_len + need > snap_cap) {
		size_t cap = (snap_cap ? snap_cap * 2 : 64 * 1024) + need;
		uint8_t *n = mms__map_anon(cap);

		uint8_t *old = snap;
		size_t old_cap = snap_cap;

		if (!n)
			return 1; /* the modules so far */
		if (old)
			memcpy(n, old, snap_len);
		snap = n;
		snap_cap = cap;
		if (old)
			mms__unmap_own(old, old_cap);
	}
	memcpy(snap + snap_len, &base, 8);
	memcpy(snap + snap_len + 8, &h, 8);
	memcpy(snap + snap_len + 16, &len, 4);
	memcpy(snap + snap_len + 20, scan_rec, len);
	snap_len += need;
	return 0;
}

/* scan_lock is held from the snapshot to the end of the fork, so that no
 * other thread's scan or fork changes it before the child's copy. */
static __thread int tls_snap_locked;

void mms__modules_snapshot(void)
{
	unsigned long long v[2];
	int busy = mms__tls_busy;

	if (!mms__recording)
		return;
	mms__tls_busy = 2;
	pthread_mutex_lock(&scan_lock);
	tls_snap_locked = 1;
	/* A fork child that has not been through the loader since (it may
	 * not ask it) has its parent's modules, the snapshot it inherited:
	 * its own child's log gets them too (before, a grandchild's log
	 * listed none, and none of its stacks was symbolized). */
	if (!mms__phdr_unsafe()) {
		mms__loader_counts(v);
		snap_len = 0;
		mms__phdr_iterate(snap_one, NULL);
		snap_adds = v[0];
	}
	mms__tls_busy = busy;
}

void mms__modules_after_fork(int child)
{
	if (child) {
		/* The child asks the loader nothing until it may (above), and
		 * its one thread holds no scan. */
		__atomic_store_n(&phdr_unsafe, 1, __ATOMIC_RELAXED);
		pthread_mutex_init(&scan_lock, NULL);
	} else if (tls_snap_locked) {
		pthread_mutex_unlock(&scan_lock);
	}
	tls_snap_locked = 0;
}

int mms__phdr_unsafe(void)
{
	return __atomic_load_n(&phdr_unsafe, __ATOMIC_RELAXED);
}

void mms__phdr_safe(void)
{
	__atomic_store_n(&phdr_unsafe, 0, __ATOMIC_RELAXED);
}

/* The parent's modules into this (the child's) log, once. */
static void write_snapshot(struct mms_thread *t)
{
	for (size_t off = 0; off + 20 <= snap_len;) {
		uint64_t base, h;
		uint32_t len;

		memcpy(&base, snap + off, 8);
		memcpy(&h, snap + off + 8, 8);
		memcpy(&len, snap + off + 16, 4);
		if (off + 20 + len > snap_len)
			break;
		if (note_seen(base, h))
			mms__write_meta(t, MMS_TAG_MODULE, snap + off + 20, len);
		off += 20 + (size_t)len;
	}
	snap_written = 1;
	last_adds = snap_adds;
}

static int count_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *v = arg;
	(void)size;
	v[0] = info->dlpi_adds;
	v[1] = info->dlpi_subs;
	return 1;
}

int mms__phdr_iterate(int (*fn)(struct dl_phdr_info *, size_t, void *), void *data)
{
	if (mms__phdr_unsafe())
		return 0;
	return dl_iterate_phdr(fn, data);
}

void mms__loader_counts(unsigned long long v[2])
{
	v[0] = v[1] = 0;
	mms__phdr_iterate(count_adds, v);
}

void mms__modules_scan(struct mms_thread *t)
{
	struct scan sc = { .t = t };
	unsigned long long v[2] = { 0, 0 }, adds;
	int busy = mms__tls_busy;

	mms__tls_busy = 2;
	if (mms__phdr_unsafe()) {
		/* A fork child: its parent's modules, as they were at the fork. */
		if (!snap_written && !pthread_mutex_trylock(&scan_lock)) {
			write_snapshot(t);
			pthread_mutex_unlock(&scan_lock);
		}
		mms__tls_busy = busy;
		return;
	}
	mms__loader_counts(v);
	adds = v[0];
	/* A module unloaded behind dlclose (glibc's own, for NSS or iconv)
	 * makes the stack walker's cached rules stale. */
	mms__cfi_note_loader(v[0], v[1]);
	/* trylock: a scan already under way (in this thread, nested through a
	 * chunk switch, or in another one that may hold the loader's lock we
	 * would wait for) covers this one. */
	if (adds != __atomic_load_n(&last_adds, __ATOMIC_RELAXED) && !pthread_mutex_trylock(&scan_lock)) {
		last_adds = adds;
		mms__phdr_iterate(scan_one, &sc);
		mms__cuda_code_set(sc.cuda_lo, sc.cuda_hi);
		pthread_mutex_unlock(&scan_lock);
		/* Those loaded with dlopen() since: their calls of an
		 * allocator's own functions, too. */
		mms__redirect_rescan();
	}
	mms__tls_busy = busy;
}

void mms__modules_check(void)
{
	unsigned long long v[2];
	struct mms_thread *t;

	if (!mms__recording || mms__tls_busy || mms__phdr_unsafe())
		return;
	mms__loader_counts(v);
	if (v[0] == __atomic_load_n(&last_adds, __ATOMIC_RELAXED))
		return;
	mms__tls_busy = 2;
	t = mms__thread();
	if (t)
		mms__modules_scan(t);
	mms__tls_busy = 0;
}

void mms__modules_reset(void)
{
	pthread_mutex_init(&scan_lock, NULL);
	nseen = 0;
	last_adds = 0;
	snap_written = 0;
}
