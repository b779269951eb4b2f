/* SPDX-License-Identifier: MIT */
/* elfsym.c: finds a symbol the loaded objects export by reading their
 * dynamic symbol tables, instead of asking dlsym(). dlsym() changes the
 * calling thread's dlerror() state, which is the program's: one that
 * succeeds frees a pending error the program has not read yet, one that
 * fails leaves an error of ours for the program's next dlerror(). The
 * recorder looks symbols up while the program runs (the C++ runtime's
 * operators at their first call, __gnu_cxx::__freeres at exit): so it
 * does that here, touching nothing but the objects' mapped tables. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <string.h>

#include "elfdyn.h"
#include "hooks-int.h"
#include "objects.h"

/* Where the recorder's own object is in the loader's list of objects, and
 * how many the list held when the recorder started: those are the
 * executable, the preloaded libraries and their dependencies, the global
 * scope in its search order; the ones after them came with dlopen(). */
static size_t self_index = SIZE_MAX, startup_objects;

struct count {
	size_t n;
};

static int count_each(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct count *c = arg;
	uintptr_t here = (uintptr_t)&mms__elfsym_init;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && here - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
			self_index = c->n;
	}
	c->n++;
	return 0;
}

void mms__elfsym_init(void)
{
	struct count c = { 0 };

	mms__phdr_iterate(count_each, &c);
	startup_objects = c.n;
}

/* An address of the dynamic section: the loader relocates them in place
 * on most targets; where it does not (a read-only section), it is an
 * offset from the object's base. */
static const void *dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
	return (const void *)(p < info->dlpi_addr ? p + info->dlpi_addr : p);
}

int mms__dyn_read(const struct dl_phdr_info *info, struct mms_dyn *d)
{
	const ElfW(Dyn) *dyn = NULL;
	int plt_rela = 1;

	memset(d, 0, sizeof(*d));
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return -1;
	d->dyn = dyn;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB:
			d->symtab = dyn_ptr(info, dyn->d_un.d_ptr);
			break;
		case DT_STRTAB:
			d->strtab = dyn_ptr(info, dyn->d_un.d_ptr);
			break;
		case DT_GNU_HASH:
			d->gnu_hash = dyn_ptr(info, dyn->d_un.d_ptr);
			break;
		case DT_HASH:
			d->hash = dyn_ptr(info, dyn->d_un.d_ptr);
			break;
		case DT_VERSYM:
			d->versym = dyn_ptr(info, dyn->d_un.d_ptr);
			break;
		case DT_RELA:
			d->rela = dyn_ptr(info, dyn->d_un.d_ptr);
			break;
		case DT_RELASZ:
			d->relasz = dyn->d_un.d_val;
			break;
		case DT_JMPREL:
			d->jmprel = dyn_ptr(info, dyn->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			d->jmprelsz = dyn->d_un.d_val;
			break;
		case DT_PLTREL:
			plt_rela = dyn->d_un.d_val == DT_RELA;
			break;
		default:
			break;
		}
	}
	if (!plt_rela)
		d->jmprel = NULL, d->jmprelsz = 0;
	return 0;
}

/* Symbol i, when it is a definition of name that dlsym() would return: a
 * function or an object (not an indirect function, whose resolver would
 * have to run), global, weak or unique, in the default version. */
static const ElfW(Sym) * sym_match(const struct mms_dyn *d, uint32_t i, const char *name)
{
	const ElfW(Sym) *s = &d->symtab[i];
	/* ELF32_ and ELF64_ST_TYPE and _ST_BIND are the same. */
	unsigned type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);

	if (s->st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_OBJECT) ||
	    (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE))
		return NULL;
	if (d->versym && (d->versym[i] & 0x8000))
		return NULL; /* a hidden, older version */
	return strcmp(d->strtab + s->st_name, name) ? NULL : s;
}

static uint32_t gnu_hash(const char *name)
{
	uint32_t h = 5381;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = h * 33 + *p;
	return h;
}

static uint32_t sysv_hash(const char *name)
{
	uint32_t h = 0, g;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h = (h << 4) + *p;
		g = h & 0xf0000000u;
		h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

/* name's definition in one object, or NULL. */
static void *object_sym(const struct dl_phdr_info *info, const char *name)
{
	const ElfW(Sym) *s = NULL;
	struct mms_dyn d;

	if (mms__dyn_read(info, &d) || !d.symtab || !d.strtab || (!d.gnu_hash && !d.hash))
		return NULL;
	if (d.gnu_hash) {
		uint32_t nbuckets = d.gnu_hash[0], offset = d.gnu_hash[1], words = d.gnu_hash[2];
		const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)&d.gnu_hash[4] + words);
		const uint32_t *chain = buckets + nbuckets;
		uint32_t h = gnu_hash(name), i;

		if (!nbuckets || (i = buckets[h % nbuckets]) < offset)
			return NULL;
		for (;; i++) {
			uint32_t c = chain[i - offset];

			if ((c | 1) == (h | 1) && (s = sym_match(&d, i, name)))
				break;
			if (c & 1)
				return NULL;
		}
	} else {
		uint32_t nbuckets = d.hash[0];
		const uint32_t *buckets = &d.hash[2], *chain = buckets + nbuckets;

		if (!nbuckets)
			return NULL;
		for (uint32_t i = buckets[sysv_hash(name) % nbuckets]; i && !s; i = chain[i])
			s = sym_match(&d, i, name);
		if (!s)
			return NULL;
	}
	return (void *)(info->dlpi_addr + s->st_value);
}

void *mms__elfsym_in(const struct dl_phdr_info *info, const char *name)
{
	return object_sym(info, name);
}

struct lookup {
	const char *name;
	int (*late)(const char *path);
	size_t n;
	void *found;
};

static int lookup_each(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct lookup *l = arg;
	size_t i = l->n++;

	(void)size;
	/* After ours in the global scope, as dlsym(RTLD_NEXT) searches;
	 * among the later ones, those late() accepts. */
	if (i <= self_index && self_index != SIZE_MAX)
		return 0;
	if (i >= startup_objects && !(l->late && info->dlpi_name && l->late(info->dlpi_name)))
		return 0;
	l->found = object_sym(info, l->name);
	return l->found != NULL;
}

void *mms__elfsym_next(const char *name, int (*late)(const char *path))
{
	struct lookup l = { name, late, 0, NULL };

	mms__phdr_iterate(lookup_each, &l);
	return l.found;
}

struct ahead {
	const char *const *names;
	size_t nnames, n;
	int found;
	char *path;
	size_t cap;
};

static int ahead_each(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ahead *a = arg;
	size_t i = a->n++;

	(void)size;
	if (self_index == SIZE_MAX || i >= self_index)
		return 1;
	for (size_t k = 0; k < a->nnames; k++) {
		if (!object_sym(info, a->names[k]))
			continue;
		a->found = (int)k;
		/* The program is the first object. */
		mms__object_name(i ? info->dlpi_name : NULL, a->path, a->cap);
		return 1;
	}
	return 0;
}

int mms__elfsym_ahead(const char *const *names, size_t n, char *path, size_t cap)
{
	struct ahead a = { names, n, 0, -1, path, cap };

	mms__phdr_iterate(ahead_each, &a);
	return a.found;
}
