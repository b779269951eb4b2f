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

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *sc = arg;
	char *exe = scan_exe;
	const char *path = info->dlpi_name;
	const uint8_t *bid = NULL;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	uint64_t h;
	unsigned i;
	(void)size;

	if (!path || !*path) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof scan_exe - 1);
		exe[n > 0 ? n : 0] = 0;
		path = exe;
	}
	h = hash_str(path);
	for (i = 0; i < nseen; i++)
		if (seen[i].base == info->dlpi_addr && seen[i].name_hash == h)
			return 0;
	if (nseen < MAX_MODULES) {
		seen[nseen].base = info->dlpi_addr;
		seen[nseen++].name_hash = h;
	}
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

	uint8_t *buf = scan_rec, *p = buf;
	size_t bidlen = build_id(info, &bid);
	p = mms_put_u(p, info->dlpi_addr);
	p = mms_put_u(p, lo);
	p = mms_put_u(p, hi);
	p = mms_put_s(p, path, strlen(path));
	p = mms_put_s(p, bid, bidlen);
	mms__write_meta(sc->t, MMS_TAG_MODULE, buf, (size_t)(p - buf));
	return 0;
}

static int count_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *v = arg;
	(void)size;
	v[0] = info->dlpi_adds;
	v[1] = info->dlpi_subs;
	return 1;
}

void mms__loader_counts(unsigned long long v[2])
{
	v[0] = v[1] = 0;
	dl_iterate_phdr(count_adds, v);
}

void mms__modules_scan(struct mms_thread *t)
{
	struct scan sc = { t };
	unsigned long long v[2] = { 0, 0 }, adds;
	int busy = mms__tls_busy;

	mms__tls_busy = 2;
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
		dl_iterate_phdr(scan_one, &sc);
		pthread_mutex_unlock(&scan_lock);
	}
	mms__tls_busy = busy;
}

void mms__modules_reset(void)
{
	pthread_mutex_init(&scan_lock, NULL);
	nseen = 0;
	last_adds = 0;
}
