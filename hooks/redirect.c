/* SPDX-License-Identifier: MIT */
/* redirect.c: a replacement allocator's functions of its own. A program
 * linked with jemalloc may allocate and release with mallocx(), rallocx(),
 * xallocx(), dallocx() and sdallocx() beside the malloc family (folly does
 * wherever it finds jemalloc), one linked with tcmalloc with tc_malloc(),
 * tc_free() and the rest of tcmalloc's tc_ functions, one linked with
 * mimalloc with mi_malloc(), mi_free(), its heaps' mi_heap_malloc() and
 * the rest of its mi_ functions. Unseen, a block
 * malloc'd and released by sdallocx() would stay live in the reports (a
 * leak that is none), one mallocx'd and freed would be a bad free.
 *
 * The recorder cannot define these names as it defines malloc's: a program
 * that looks for them (folly's usingJEMalloc(), a weak reference, dlsym())
 * would find them where no such allocator is loaded, and behave otherwise.
 * So it redirects the calls instead: in each loaded object that imports
 * one of them, bound (or, lazily, to be bound) to the allocator's
 * definition, the GOT entry is set to the recorder's function, once per
 * object: those loaded at start-up when the recorder starts; one loaded
 * later with dlopen() at the program's next dlsym() (which a program makes
 * to reach a plugin's code: CPython to call an extension module's
 * PyInit_) or the recorder's next look at the loader's list (modules.c),
 * whichever comes first.
 * jemalloc's functions go to jemalloc.c's mms__je_*, which call jemalloc's
 * with the program's flags; tcmalloc's tc_ functions are its malloc family
 * and C++ operators under other names, and go to the hooks of the
 * functions they are (tc_malloc to malloc), where tcmalloc is the
 * allocator the hooks forward to; so do mimalloc's of that kind
 * (mi_malloc), and its others go to mimalloc.c's mms__mi_* (mms__mi_fns[]),
 * which call mimalloc's with the program's arguments. The sized forms (tc_free_sized,
 * tc_delete_sized) go to the unsized hooks: the size, passed in a
 * register, is then not read (the x86-64 and aarch64 calling conventions;
 * this file redirects on those two only).
 *
 * The CUDA driver's entry points that cuda.c wraps go the same way for a
 * program or library linked against libcuda (-lcuda): their calls of
 * cuMemAlloc_v2, cuLaunchKernel and the others through their GOT go to
 * cuda.c's x_ wrappers, from start-up where libcuda comes with the
 * program, else from the first rescan after it came (a library linked
 * against it loaded with dlopen(), or the runtime's dlopen()): what such
 * a library calls before that is not recorded. Their dlsym() lookups stay
 * cuda.c's (mms__cuda_dlsym()).
 *
 * A program may also look one of them up with dlsym(RTLD_DEFAULT, ...)
 * or in the allocator's handle and call it through that pointer: where
 * the real dlsym() answers with the allocator's function, the recorder's
 * is returned instead (dlsym.c asks mms__redirect_dlsym()).
 *
 * Not redirected: a pointer obtained with dlsym(RTLD_NEXT, ...) or
 * dlvsym() (the allocator's own), calls made by an object loaded with
 * dlopen() before the recorder sees it (from its constructors, or before
 * any dlsym() when nothing else is recorded meanwhile), the allocator's
 * calls of its own functions. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elfdyn.h"
#include "hooks-int.h"
#include "mimalloc.h"
#include "objects.h"

#if defined(__x86_64__) || defined(__aarch64__)

#if defined(__x86_64__)
#define R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define R_GLOB_DAT R_X86_64_GLOB_DAT
#define R_ABS R_X86_64_64
#else
#define R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define R_GLOB_DAT R_AARCH64_GLOB_DAT
#define R_ABS R_AARCH64_ABS64
#endif

/* A function redirected: its name, the recorder's function, and the
 * allocator's (0 while not found: not redirected). */
struct redirect {
	const char *name;
	void *to;
	void *real;
};

#define R(name, to)                      \
	{                                \
		name, (void *)(to), NULL \
	}

/* jemalloc's: names that end in "allocx". nallocx() takes no block. */
static struct redirect je[] = {
	R("mallocx", mms__je_mallocx), R("rallocx", mms__je_rallocx), R("xallocx", mms__je_xallocx),
	R("sallocx", mms__je_sallocx), R("dallocx", mms__je_dallocx), R("sdallocx", mms__je_sdallocx),
};

/* tcmalloc's: names that begin with "tc_". */
static struct redirect tc[] = {
	R("tc_malloc", malloc),
	R("tc_malloc_skip_new_handler", malloc),
	R("tc_calloc", calloc),
	R("tc_realloc", realloc),
	R("tc_memalign", memalign),
	R("tc_posix_memalign", posix_memalign),
	R("tc_valloc", valloc),
	R("tc_pvalloc", pvalloc),
	R("tc_free", free),
	R("tc_free_sized", free),
	R("tc_cfree", free),
	R("tc_malloc_size", malloc_usable_size),
	R("tc_new", _Znwm),
	R("tc_newarray", _Znam),
	R("tc_new_nothrow", _ZnwmRKSt9nothrow_t),
	R("tc_newarray_nothrow", _ZnamRKSt9nothrow_t),
	R("tc_new_aligned", _ZnwmSt11align_val_t),
	R("tc_newarray_aligned", _ZnamSt11align_val_t),
	R("tc_new_aligned_nothrow", _ZnwmSt11align_val_tRKSt9nothrow_t),
	R("tc_newarray_aligned_nothrow", _ZnamSt11align_val_tRKSt9nothrow_t),
	R("tc_delete", _ZdlPv),
	R("tc_deletearray", _ZdaPv),
	R("tc_delete_nothrow", _ZdlPvRKSt9nothrow_t),
	R("tc_deletearray_nothrow", _ZdaPvRKSt9nothrow_t),
	R("tc_delete_sized", _ZdlPvm),
	R("tc_deletearray_sized", _ZdaPvm),
	R("tc_delete_aligned", _ZdlPvSt11align_val_t),
	R("tc_deletearray_aligned", _ZdaPvSt11align_val_t),
	R("tc_delete_sized_aligned", _ZdlPvmSt11align_val_t),
	R("tc_deletearray_sized_aligned", _ZdaPvmSt11align_val_t),
	R("tc_delete_aligned_nothrow", _ZdlPvSt11align_val_tRKSt9nothrow_t),
	R("tc_deletearray_aligned_nothrow", _ZdaPvSt11align_val_tRKSt9nothrow_t),
};

/* mimalloc's: names that begin with "mi_". Those that are the malloc
 * family under other names go to its hooks, where mimalloc is the
 * allocator they forward to (as tcmalloc's tc_ functions do; its free and
 * realloc through mimalloc.c's, which also forget an aligned block of a
 * heap); the others to mimalloc.c's functions in their place (mms__mi_fns[]),
 * after these. */
static const struct redirect mi_family[] = {
	R("mi_malloc", malloc),
	R("mi_malloc_small", malloc),
	R("mi_calloc", calloc),
	R("mi_realloc", mms__mi_realloc),
	R("mi_free", mms__mi_free),
	R("mi_cfree", mms__mi_free),
	R("mi_free_size", mms__mi_free),
	R("mi_free_aligned", mms__mi_free),
	R("mi_free_size_aligned", mms__mi_free),
	R("mi_reallocarray", reallocarray),
	R("mi_usable_size", malloc_usable_size),
	R("mi_malloc_size", malloc_usable_size),
	R("mi_malloc_usable_size", malloc_usable_size),
	R("mi_posix_memalign", posix_memalign),
	R("mi_memalign", memalign),
	R("mi_valloc", valloc),
	R("mi_pvalloc", pvalloc),
	R("mi_aligned_alloc", aligned_alloc),
	R("mi_new", _Znwm),
	R("mi_new_nothrow", _ZnwmRKSt9nothrow_t),
	R("mi_new_aligned", _ZnwmSt11align_val_t),
	R("mi_new_aligned_nothrow", _ZnwmSt11align_val_tRKSt9nothrow_t),
};
#define MI_FAMILY (sizeof(mi_family) / sizeof(mi_family[0]))
static struct redirect mi[MI_FAMILY + MMS_MI_COUNT];
static size_t nmi;

/* The CUDA driver's entry points that cuda.c wraps, for a program or
 * library linked against libcuda, which calls them through its GOT: those
 * libcuda defines (cuda.c's table: names that begin with "cu"), found at
 * start-up or at the first rescan after libcuda came (cu_find()). The
 * runtime's calls, through the pointers cuGetProcAddress hands out, are
 * cuda.c's own business. */
#define CU_MAX 48
static struct redirect cu[CU_MAX];
static size_t ncu;

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int je_on, tc_on, mi_on, cu_on; /* the groups found */

/* Finds a group's functions in the objects after the recorder's in the
 * global scope (the allocator the hooks forward to, or one beside it);
 * those not found stay as they are. */
static void group_find(struct redirect *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		g[i].real = mms__elfsym_next(g[i].name, NULL);
}

/* The redirect for a symbol a relocation names, or NULL: only names of
 * the groups found are looked at, by their shape first. */
static const struct redirect *wanted(const char *name)
{
	struct redirect *g = NULL;
	size_t n = 0, len;

	if (tc_on && name[0] == 't' && name[1] == 'c' && name[2] == '_') {
		g = tc;
		n = COUNT(tc);
	} else if (mi_on && name[0] == 'm' && name[1] == 'i' && name[2] == '_') {
		g = mi;
		n = nmi;
	} else if (cu_on && name[0] == 'c' && name[1] == 'u' &&
		   (name[2] == 'M' || name[2] == 'L' || name[2] == 'G' || name[2] == 'A')) {
		/* cuMem, cuLaunchKernel, cuGetProcAddress, cuArray, cuMipmappedArray:
		 * not the runtime's cuda names, which a CUDA library imports by
		 * the thousand. */
		g = cu;
		n = ncu;
	} else if (je_on && (len = strlen(name)) >= 7 && !strcmp(name + len - 6, "allocx")) {
		g = je;
		n = COUNT(je);
	}
	for (size_t i = 0; i < n; i++)
		if (g[i].real && !strcmp(g[i].name, name))
			return &g[i];
	return NULL;
}

/* Sets the GOT entry or pointer at slot to `to`; one in the object's
 * RELRO part (read-only once the loader relocated it) is made writable
 * for the store, and read-only again. */
static void slot_set(void **slot, void *to, uintptr_t relro_lo, uintptr_t relro_hi)
{
	uintptr_t a = (uintptr_t)slot, page = a & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
	size_t len = (size_t)sysconf(_SC_PAGESIZE);

	if (a - relro_lo >= relro_hi - relro_lo) {
		__atomic_store_n(slot, to, __ATOMIC_RELEASE);
		return;
	}
	if (mms__real.mprotect((void *)page, len, PROT_READ | PROT_WRITE))
		return;
	__atomic_store_n(slot, to, __ATOMIC_RELEASE);
	mms__real.mprotect((void *)page, len, PROT_READ);
}

/* The object whose relocations are being read. */
struct object {
	const struct dl_phdr_info *info;
	struct mms_dyn d;             /* its dynamic section's tables */
	uintptr_t code_lo, code_hi;   /* its code: a lazy GOT entry points there */
	uintptr_t relro_lo, relro_hi; /* its pages made read-only after relocation */
	int base_ns;                  /* in the base namespace: 1, 0, or -1 unknown yet */
};

/* Whether object o is in the loader's base namespace, the program's (the
 * list of _r_debug): one that dlmopen() loaded into another binds to that
 * namespace's own copy of an allocator, not to the one found. */
static int in_base_namespace(struct object *o)
{
	if (o->base_ns < 0) {
		o->base_ns = 0;
		for (const struct link_map *m = _r_debug.r_map; m && !o->base_ns; m = m->l_next)
			o->base_ns = (const void *)m->l_ld == (const void *)o->d.dyn;
	}
	return o->base_ns;
}

/* Redirects what the relocations [r, r + size) of o bind to one of the
 * functions found: a GOT entry (or, with addend 0, a pointer in its data)
 * that holds the allocator's function, or a lazy entry not bound yet (it
 * points into the object's PLT) of an object in the base namespace. One
 * bound elsewhere (another definition of the name) is left as it is. */
static void redirect_relocs(struct object *o, const ElfW(Rela) * r, size_t size)
{
	for (size_t i = 0; i < size / sizeof(*r); i++) {
		unsigned long type = ELF64_R_TYPE(r[i].r_info), sym = ELF64_R_SYM(r[i].r_info);
		const struct redirect *e;
		void **slot, *v;

		if (!sym || (type != R_JUMP_SLOT && type != R_GLOB_DAT && (type != R_ABS || r[i].r_addend)))
			continue;
		if (o->d.symtab[sym].st_shndx != SHN_UNDEF || !(e = wanted(o->d.strtab + o->d.symtab[sym].st_name)))
			continue;
		slot = (void **)(o->info->dlpi_addr + r[i].r_offset);
		v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
		if (v == e->to ||
		    (v != e->real && !(type == R_JUMP_SLOT && (uintptr_t)v - o->code_lo < o->code_hi - o->code_lo &&
				       in_base_namespace(o))))
			continue;
		slot_set(slot, e->to, o->relro_lo, o->relro_hi);
	}
}

static void redirect_object(const struct dl_phdr_info *info)
{
	struct object o = { .info = info, .base_ns = -1 };

	if ((!je_on && !tc_on && !mi_on && !cu_on) || mms__dyn_read(info, &o.d) || !o.d.symtab || !o.d.strtab)
		return;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_GNU_RELRO) {
			/* The pages the loader made read-only: a partial last
			 * page stays writable (glibc's _dl_protect_relro). */
			uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

			o.relro_lo = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
			o.relro_hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) & ~(page - 1);
		}
	}
	mms__code_span(info, &o.code_lo, &o.code_hi);
	if (o.d.rela)
		redirect_relocs(&o, o.d.rela, o.d.relasz);
	if (o.d.jmprel)
		redirect_relocs(&o, o.d.jmprel, o.d.jmprelsz);
}

/* --- the objects done ----------------------------------------------------------
 * By their base address, for the loader's count of objects added
 * (dlpi_adds) the set was made at; a dlclose() since (dlpi_subs changed)
 * empties it: an object loaded again at the same base is another. Under
 * done_lock, taken with trylock: a thread that waited for it could hold
 * the loader's lock that the holder waits for (dlsym() from a constructor
 * inside dlopen()). An object the set has no room for is done again next
 * time: harmless. */
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mms_addrset done;
static unsigned long long done_adds, done_subs;

static int redirect_each(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (mms__addrset_add(&done, info->dlpi_addr))
		redirect_object(info);
	return 0;
}

static int cu_find(void);

void mms__redirect_rescan(void)
{
	unsigned long long v[2];
	int busy;

	mms__loader_counts(v);
	if ((v[0] == __atomic_load_n(&done_adds, __ATOMIC_RELAXED) &&
	     v[1] == __atomic_load_n(&done_subs, __ATOMIC_RELAXED)) ||
	    pthread_mutex_trylock(&done_lock))
		return;
	busy = mms__tls_busy;
	mms__tls_busy = 2;
	/* libcuda loaded since (by the runtime, or as a library's
	 * dependency): every object is looked at again, also those loaded
	 * with it and before it in the loader's list. */
	if (v[1] != done_subs || cu_find())
		mms__addrset_clear(&done);
	if (je_on || tc_on || mi_on || cu_on) {
		mms__phdr_iterate(redirect_each, NULL);
		/* dlsym() asks mms__redirect_rescan() from now on. */
		mms__dlsym_watch_set(MMS_DLSYM_WATCH_REDIRECT);
	}
	__atomic_store_n(&done_adds, v[0], __ATOMIC_RELAXED);
	__atomic_store_n(&done_subs, v[1], __ATOMIC_RELAXED);
	mms__tls_busy = busy;
	pthread_mutex_unlock(&done_lock);
}

/* Whether the code at caller is in the base namespace, as dlsym() finds
 * the caller (code of no object counts as the program's). */
static int caller_in_base(const void *caller)
{
	struct link_map *lm = NULL;
	Dl_info di;

	if (!dladdr1(caller, &di, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return 1;
	for (const struct link_map *m = _r_debug.r_map; m; m = m->l_next)
		if (m == lm)
			return 1;
	return 0;
}

int mms__redirect_dlsym(void *handle, const char *name, const void *caller, void **result)
{
	const struct redirect *e;

	/* "cu" names: dlsym.c sends lookups in real handles to cuda.c. */
	if ((!je_on && !tc_on && !mi_on) || (name[0] == 'c' && name[1] == 'u') || !(e = wanted(name)))
		return 0;
	/* RTLD_DEFAULT searches the caller's namespace: the recorder's
	 * lookup answers for the base one only. A real handle is searched
	 * in its own scope, whoever asks (the object that defines the name
	 * was loaded at start-up: no dependency to record). */
	if (handle == RTLD_DEFAULT && !caller_in_base(caller))
		return 0;
	*result = mms__real_dlsym(handle, name);
	if (*result && *result == e->real)
		*result = e->to;
	return 1;
}

/* Whether the object is the CUDA driver: a file named libcuda.so*. */
static int is_libcuda(const struct dl_phdr_info *info)
{
	const char *name = info->dlpi_name, *slash = name ? strrchr(name, '/') : NULL;

	return name && !strncmp(slash ? slash + 1 : name, "libcuda.so", 10);
}

/* The driver's functions, in libcuda (info): each export of cuda.c's table
 * it defines, and cuda.c's function for it. Returns 1 once found. */
static int cu_take(struct dl_phdr_info *info, size_t size, void *arg)
{
	int n = mms__cuda_export_count();
	void *real, *to;

	(void)size;
	(void)arg;
	if (!is_libcuda(info) || !mms__elfsym_in(info, "cuInit"))
		return 0;
	for (int i = 0; i < n && ncu < CU_MAX; i++) {
		real = mms__elfsym_in(info, mms__cuda_export_name(i));
		if (real && (to = mms__cuda_export_wrapper(i, real)))
			cu[ncu++] = (struct redirect){ mms__cuda_export_name(i), to, real };
	}
	cu_on = ncu > 0;
	return 1;
}

/* Looks for libcuda among the loaded objects, while it is not found: it
 * may come with the program, or later, with dlopen() (the runtime's, or
 * as a library's dependency). Returns 1 when found now. Under done_lock,
 * or at start-up. */
static int cu_find(void)
{
	if (cu_on)
		return 0;
	mms__phdr_iterate(cu_take, NULL);
	return cu_on;
}

void mms__redirect_init(void)
{
	/* jemalloc's, all six (every jemalloc since 4.0 has them). */
	je[0].real = mms__elfsym_next(je[0].name, NULL);
	if (je[0].real) {
		group_find(je, COUNT(je));
		je_on = 1;
		for (size_t i = 0; i < COUNT(je); i++)
			je_on &= je[i].real != NULL;
	}
	if (je_on) {
		mms__je.mallocx = (void *(*)(size_t, int))je[0].real;
		mms__je.rallocx = (void *(*)(void *, size_t, int))je[1].real;
		mms__je.xallocx = (size_t(*)(void *, size_t, size_t, int))je[2].real;
		mms__je.sallocx = (size_t(*)(const void *, int))je[3].real;
		mms__je.dallocx = (void (*)(void *, int))je[4].real;
		mms__je.sdallocx = (void (*)(void *, size_t, int))je[5].real;
	}
	/* tc_ functions go to the hooks of their malloc family, which
	 * forward to the real allocator: only where that is tcmalloc (those
	 * of an older tcmalloc than these names are not redirected). */
	tc[0].real = mms__elfsym_next(tc[0].name, NULL);
	if (tc[0].real && mms__in_code(&mms__alloc_code, (uintptr_t)tc[0].real)) {
		group_find(tc, COUNT(tc));
		tc_on = 1;
	}
	/* mi_ functions, the same way: only where mimalloc is the real
	 * allocator (one built not to replace malloc keeps its blocks apart:
	 * its mi_ functions are not recorded). */
	if (mms__in_code(&mms__alloc_code, (uintptr_t)mms__elfsym_next("mi_malloc", NULL))) {
		for (size_t i = 0; i < MI_FAMILY; i++)
			mi[nmi++] = mi_family[i];
		for (size_t i = 0; i < MMS_MI_COUNT; i++) {
			mms__mi_real[i] = mms__elfsym_next(mms__mi_fns[i].name, NULL);
			if (mms__mi_fns[i].to)
				mi[nmi++] = (struct redirect){ mms__mi_fns[i].name, mms__mi_fns[i].to, NULL };
		}
		group_find(mi, nmi);
		mi_on = 1;
	}
	/* Every program: libcuda may come with it, or later (the rescans). */
	mms__redirect_rescan();
}

#else /* neither x86-64 nor aarch64: nothing redirected */

void mms__redirect_init(void)
{
}

void mms__redirect_rescan(void)
{
}

int mms__redirect_dlsym(void *handle, const char *name, const void *caller, void **result)
{
	(void)handle;
	(void)name;
	(void)caller;
	(void)result;
	return 0;
}

#endif
