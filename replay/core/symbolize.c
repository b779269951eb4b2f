/* SPDX-License-Identifier: MIT */
/* symbolize.c: turns recorded return addresses into function, file and line
 * (inlined frames included) with libdw, over the log's module map. */
#define _GNU_SOURCE
#include "config.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef HAVE_LIBIBERTY
#include <libiberty/demangle.h>
#endif

#include "format.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "msmemscope/symbolize.h"
#include "base-int.h"
#include "intervals-int.h"
#include "map-int.h"
#include "log-int.h"

/* Frames one address can expand to: the function holding it and the
 * functions inlined into it. Deeper inline chains are cut at the inside. */
#define SYM_MAX_FRAMES 64
/* Nesting of scopes (blocks, inlined calls) followed inside a function. */
#define SYM_MAX_SCOPES 128
/* Namespaces followed when listing a compilation unit's functions. */
#define SYM_MAX_NEST 32

/* A function's code range, in DWARF (unbiased) or ELF (biased) addresses. */
struct sym_fn {
	uint64_t lo, hi; /* [lo, hi) */
	int rank;        /* ELF binding: lower is preferred; 0 in DWARF tables */
	union {
		Dwarf_Die die;    /* the subprogram (DWARF tables) */
		const char *name; /* the symbol's name, owned by libelf (ELF tables) */
	} u;
};

/* Functions sorted by lo, for binary search: libdw's own lookups walk a
 * compilation unit's DIEs, or the whole symbol table, on every address. */
struct sym_fns {
	struct sym_fn *v;
	size_t n, cap;
};

/* One recorded module. Its libdw session is opened on first use: a log
 * names every library the process had loaded, and most of them hold no
 * frame of interest. Each module has a session of its own because modules
 * recorded at different times may overlap (dlclose, then dlopen of another
 * library at the same address), which one libdw address space cannot hold. */
struct sym_module {
	const char *path; /* as recorded (owned by the log); NULL if none */
	uint64_t bias;
	const uint8_t *build_id; /* owned by the log */
	size_t build_id_len;
	int tried; /* the file was looked at */
	Dwfl *dwfl;
	Dwfl_Module *mod;    /* NULL: no usable file, module+offset only */
	struct mms__map cus; /* CU DIE offset -> index in the symbolizer's cus */
	struct sym_fns syms; /* ELF function symbols, loaded on first use */
	int syms_loaded;
};

struct mms_symbolizer {
	const mms_log_t *log;
	struct sym_module *mods;
	size_t nmods;
	/* The address space the stacks were taken in: disjoint ranges, each
	 * a module's index; of two recorded modules at the same addresses
	 * the later one wins (the log does not say which one a stack saw). */
	struct mms__ivset ranges;
	/* ip -> (index of its first frame in frames << 8) | its frame count */
	struct mms__map cache;
	mms_frame_t *frames;
	size_t nframes, frames_cap;
	/* Demangled names, keyed by the address of the mangled string: libdw
	 * hands out pointers into sections it keeps mapped until dwfl_end(),
	 * so the same address is the same name. */
	struct mms__map names; /* mangled address -> index in demangled */
	char **demangled;
	size_t ndemangled, demangled_cap;
	struct sym_fns *cus; /* the functions of each compilation unit seen */
	size_t ncus, cus_cap;
};

static char *debuginfo_path; /* NULL: libdw's default ":.debug:/usr/lib/debug" */

static const Dwfl_Callbacks sym_callbacks = {
	/* Files are reported with dwfl_report_elf(), which never calls
	 * find_elf; libdw wants one all the same. The standard debuginfo
	 * search tries .build-id links under /usr/lib/debug first, then
	 * .gnu_debuglink names, then debuginfod when DEBUGINFOD_URLS is set. */
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

/* --- C++ demangling ---------------------------------------------------- */

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

/* __cxa_demangle, found at run time so that this C library does not link
 * libstdc++: in the process already (a C++ program), or from libstdc++.so.6
 * loaded on the first mangled name. NULL when there is none. Threads that
 * race here resolve the same pointer; atomics keep that free of data
 * races without a lock. */
static cxa_demangle_fn find_demangler(void)
{
	static int tried;
	static void *found;
	cxa_demangle_fn fn;
	void *sym, *lib;

	if (__atomic_load_n(&tried, __ATOMIC_ACQUIRE)) {
		sym = __atomic_load_n(&found, __ATOMIC_RELAXED);
	} else {
		sym = dlsym(RTLD_DEFAULT, "__cxa_demangle");
		if (!sym) {
			/* Never closed: the pointer must stay valid. */
			lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
			if (lib)
				sym = dlsym(lib, "__cxa_demangle");
		}
		__atomic_store_n(&found, sym, __ATOMIC_RELAXED);
		__atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
	}
	/* ISO C has no cast from void * to a function pointer. */
	memcpy(&fn, &sym, sizeof(fn));
	return fn;
}

/* Rust's names: v0 (_R...) and legacy (_ZN...17h<hash>E, which C++'s
 * demangler would give with its hash as the last component), by
 * libiberty's rust_demangle(); NULL when name is not Rust's or libiberty
 * was not found at build time. */
static char *rust_name(const char *name)
{
#ifdef HAVE_LIBIBERTY
	return rust_demangle(name, DMGL_PARAMS | DMGL_ANSI);
#else
	(void)name;
	return NULL;
#endif
}

/* Sets *out to the demangled form of name (owned by the symbolizer), or to
 * name itself when it is not a mangled C++ or Rust name or does not
 * demangle. Returns 0 or -ENOMEM. */
static int demangle(struct mms_symbolizer *s, const char *name, const char **out)
{
	cxa_demangle_fn fn;
	uint64_t *slot;
	char *d;
	int isnew, status = -1;

	*out = name;
	if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return 0;
	slot = mms__map_get(&s->names, (uintptr_t)name);
	if (slot) {
		if (s->demangled[*slot])
			*out = s->demangled[*slot];
		return 0;
	}
	d = rust_name(name);
	if (!d && name[1] == 'Z') {
		fn = find_demangler();
		d = fn ? fn(name, NULL, NULL, &status) : NULL;
		if (d && status) {
			free(d);
			d = NULL;
		}
	}
	if (mms__grow(&s->demangled, &s->demangled_cap, s->ndemangled, sizeof(*s->demangled)))
		goto fail_mem;
	slot = mms__map_put(&s->names, (uintptr_t)name, &isnew);
	if (!slot)
		goto fail_mem;
	/* A name that does not demangle is remembered too (as NULL), so it
	 * is tried once. */
	*slot = s->ndemangled;
	s->demangled[s->ndemangled++] = d;
	if (d)
		*out = d;
	return 0;
fail_mem:
	free(d);
	return -ENOMEM;
}

/* --- modules ----------------------------------------------------------- */

/* The module holding ip, or NULL. */
static struct sym_module *module_of(const struct mms_symbolizer *s, uint64_t ip)
{
	size_t i = mms__ivset_find(&s->ranges, ip);

	return i == (size_t)-1 ? NULL : &s->mods[s->ranges.iv[i].val];
}

int mms__module_file_open(const char *path, size_t build_id_len)
{
	struct stat sb;
	int fd;

	/* "linux-vdso.so.1", "[vdso]", anonymous: no file. A relative path
	 * (dlopen("./x.so")) was relative to the recorded process's working
	 * directory: trusted only when the build-id can confirm it. */
	if (!path || !strchr(path, '/') || (path[0] != '/' && !build_id_len))
		return -1;
	/* Not blocked by a FIFO (or a device) where the module was. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Opens m's file at its recorded load bias, once. A file that is gone, is
 * not ELF, or has another build-id than the one recorded (rebuilt since)
 * leaves m without a libdw module: its frames give module+offset, never a
 * name from the wrong build. */
static void module_load(struct sym_module *m)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len, fd;

	m->tried = 1;
	fd = mms__module_file_open(m->path, m->build_id_len);
	if (fd < 0)
		return;
	m->dwfl = dwfl_begin(&sym_callbacks);
	if (!m->dwfl) {
		close(fd);
		return;
	}
	dwfl_report_begin(m->dwfl);
	/* add_p_vaddr: the recorded base is dlpi_addr, the bias to add to
	 * the file's own addresses (also for prelinked libraries). The
	 * module takes fd. */
	m->mod = dwfl_report_elf(m->dwfl, m->path, m->path, fd, m->bias, true);
	dwfl_report_end(m->dwfl, NULL, NULL);
	if (!m->mod) {
		close(fd);
		goto fail_dwfl;
	}
	if (m->build_id_len) {
		len = dwfl_module_build_id(m->mod, &bits, &vaddr);
		if (len <= 0 || (size_t)len != m->build_id_len || memcmp(bits, m->build_id, m->build_id_len))
			goto fail_dwfl;
	}
	return;
fail_dwfl:
	dwfl_end(m->dwfl);
	m->dwfl = NULL;
	m->mod = NULL;
}

/* The name of a function or inlined-subroutine DIE: its linkage name
 * demangled (which qualifies C++ names fully), else its plain name,
 * following abstract origins. Sets *out (NULL when the DIE has none);
 * returns 0 or -ENOMEM. */
static int die_function(struct mms_symbolizer *s, Dwarf_Die *die, const char **out)
{
	Dwarf_Attribute attr;
	const char *name;

	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (name)
		return demangle(s, name, out);
	*out = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	return 0;
}

/* --- function tables ---------------------------------------------------- */

static int fns_add(struct sym_fns *t, uint64_t lo, uint64_t hi, const struct sym_fn *fn)
{
	if (mms__grow(&t->v, &t->cap, t->n, sizeof(*t->v)))
		return -ENOMEM;
	t->v[t->n] = *fn;
	t->v[t->n].lo = lo;
	t->v[t->n++].hi = hi;
	return 0;
}

/* Orders by start, then by rank (ELF tables), so that of two symbols at
 * one address the preferred one comes first. */
static int fn_cmp(const void *a, const void *b)
{
	const struct sym_fn *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

static void fns_sort(struct sym_fns *t)
{
	if (t->n > 1)
		qsort(t->v, t->n, sizeof(*t->v), fn_cmp);
}

/* The function whose range holds a, or NULL. */
static const struct sym_fn *fns_find(const struct sym_fns *t, uint64_t a)
{
	size_t lo = 0, hi = t->n, mid;

	/* lo: the first entry starting after a. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->v[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* Back to the first (preferred) entry with that start. */
	for (mid = lo - 1; mid > 0 && t->v[mid - 1].lo == t->v[mid].lo; mid--)
		;
	return a < t->v[mid].hi ? &t->v[mid] : NULL;
}

/* Adds the code ranges of the subprograms under parent, following
 * namespaces (where GCC puts C++ definitions). Returns 0 or -ENOMEM. */
static int cu_collect(struct sym_fns *t, Dwarf_Die *parent, int depth)
{
	struct sym_fn fn = { 0 };
	Dwarf_Addr base, lo, hi;
	Dwarf_Die child;
	ptrdiff_t off;
	int tag, rc;

	if (dwarf_child(parent, &child) != 0)
		return 0;
	do {
		tag = dwarf_tag(&child);
		if (tag == DW_TAG_subprogram) {
			fn.u.die = child;
			for (off = 0; (off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0;)
				if (lo < hi && (rc = fns_add(t, lo, hi, &fn)))
					return rc;
		} else if ((tag == DW_TAG_namespace || tag == DW_TAG_module) && depth < SYM_MAX_NEST) {
			rc = cu_collect(t, &child, depth + 1);
			if (rc)
				return rc;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* Sets *out to the function table of cudie's compilation unit, listing it
 * on first use. Returns 0 or -ENOMEM. */
static int cu_functions(struct mms_symbolizer *s, struct sym_module *m, Dwarf_Die *cudie, struct sym_fns **out)
{
	struct sym_fns t = { 0 };
	uint64_t *slot;
	int isnew, rc;

	slot = mms__map_put(&m->cus, dwarf_dieoffset(cudie), &isnew);
	if (!slot)
		return -ENOMEM;
	if (!isnew) {
		*out = &s->cus[*slot];
		return 0;
	}
	rc = mms__grow(&s->cus, &s->cus_cap, s->ncus, sizeof(*s->cus)) ? -ENOMEM : cu_collect(&t, cudie, 0);
	if (rc) {
		free(t.v);
		mms__map_del(&m->cus, dwarf_dieoffset(cudie), NULL);
		return rc;
	}
	fns_sort(&t);
	*slot = s->ncus;
	s->cus[s->ncus] = t;
	*out = &s->cus[s->ncus++];
	return 0;
}

/* Loads m's ELF function symbols (.symtab, from the debug file when the
 * module has only .dynsym) once. Symbols without a size are left out: a
 * label inside a function must not name it. Returns 0 or -ENOMEM. */
static int elf_functions(struct sym_module *m)
{
	struct sym_fn fn = { 0 };
	GElf_Sym sym;
	GElf_Addr addr;
	GElf_Word shndx;
	const char *name;
	int i, n, type, bind, rc;

	if (m->syms_loaded)
		return 0;
	n = dwfl_module_getsymtab(m->mod);
	for (i = 1; i < n; i++) {
		name = dwfl_module_getsym_info(m->mod, i, &sym, &addr, &shndx, NULL, NULL);
		type = GELF_ST_TYPE(sym.st_info);
		bind = GELF_ST_BIND(sym.st_info);
		if (!name || !*name || !sym.st_size || shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		fn.u.name = name;
		fn.rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
		rc = fns_add(&m->syms, addr, addr + sym.st_size, &fn);
		if (rc) {
			m->syms.n = 0;
			return rc;
		}
	}
	fns_sort(&m->syms);
	m->syms_loaded = 1;
	return 0;
}

/* --- one address ------------------------------------------------------- */

static int is_function(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point;
}

static int has_code_scopes(int tag)
{
	return tag == DW_TAG_lexical_block || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram ||
	       tag == DW_TAG_try_block || tag == DW_TAG_catch_block;
}

/* Fills scopes with the DIEs that hold pc (a DWARF address), innermost
 * first and up to the function. Returns their number (0 when no function
 * holds pc) or -ENOMEM. */
static int pc_scopes(struct mms_symbolizer *s, struct sym_module *m, Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Die *scopes)
{
	Dwarf_Die chain[SYM_MAX_SCOPES], child, *found, *got = NULL, inner;
	const struct sym_fn *fn;
	struct sym_fns *t;
	int n = 0, i, rc;

	rc = cu_functions(s, m, cudie, &t);
	if (rc)
		return rc;
	fn = fns_find(t, pc);
	if (fn) {
		/* Down from the function through the blocks and inlined
		 * calls that hold pc. */
		chain[n++] = fn->u.die;
		while (n < SYM_MAX_SCOPES && dwarf_child(&chain[n - 1], &child) == 0) {
			found = NULL;
			do {
				if (has_code_scopes(dwarf_tag(&child)) && dwarf_haspc(&child, pc) > 0)
					found = &child;
			} while (!found && dwarf_siblingof(&child, &child) == 0);
			if (!found)
				break;
			chain[n++] = child;
		}
		for (i = 0; i < n; i++)
			scopes[i] = chain[n - 1 - i];
		return n;
	}
	/* Not in a function of the table (say, one a producer nested where
	 * the table does not look): libdw's own search, as eu-addr2line -i
	 * does it. dwarf_getscopes() continues an inlined function's chain
	 * with its abstract definition's scopes; the scopes of the innermost
	 * DIE itself give where it was inlined into. */
	n = dwarf_getscopes(cudie, pc, &got);
	if (n > 0) {
		inner = got[0];
		free(got);
		got = NULL;
		n = dwarf_getscopes_die(&inner, &got);
	}
	if (n > SYM_MAX_SCOPES)
		n = SYM_MAX_SCOPES;
	for (i = 0; i < n; i++)
		scopes[i] = got[i];
	free(got);
	return n > 0 ? n : 0;
}

/* Whether a sequence of cu's line table ends at addr (module-relative).
 * libdw answers a pc past the end of a sequence with the row GCC puts at
 * that end (crt1's _start, which has no line table, right after main got
 * main's last line): a row there is no line of a pc that no DWARF
 * function holds. */
static bool ends_sequence(Dwarf_Die *cu, Dwarf_Addr addr)
{
	Dwarf_Lines *lines;
	Dwarf_Addr a;
	size_t n, lo = 0, hi, mid;
	bool end;

	if (dwarf_getsrclines(cu, &lines, &n) != 0)
		return false;
	/* The first row at addr or above; the rows at addr follow it. */
	for (hi = n; lo < hi;) {
		mid = lo + (hi - lo) / 2;
		if (dwarf_lineaddr(dwarf_onesrcline(lines, mid), &a) != 0)
			return false;
		if (a < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n; lo++) {
		Dwarf_Line *row = dwarf_onesrcline(lines, lo);

		if (!row || dwarf_lineaddr(row, &a) != 0 || a != addr)
			break;
		if (dwarf_lineendsequence(row, &end) == 0 && end)
			return true;
	}
	return false;
}

/* Fills frames (max >= 1, each already holding ip and module) for pc (the
 * ip minus one, inside the call) in module m: the inlined functions that
 * hold it, innermost first, each at the line inside it, then the function
 * they are inlined into (as eu-addr2line -i reports them). Returns the
 * number of frames or -ENOMEM. */
static int module_frames(struct mms_symbolizer *s, struct sym_module *m, Dwarf_Addr pc, mms_frame_t *frames, size_t max)
{
	Dwarf_Die scopes[SYM_MAX_SCOPES], *cudie, cu;
	Dwarf_Files *files;
	Dwarf_Attribute attr;
	Dwarf_Word val;
	Dwarf_Addr bias;
	Dwfl_Line *line;
	const struct sym_fn *fn;
	const char *file = NULL, *name;
	Dwarf_Addr line_addr = 0;
	int lineno = 0, nscopes = 0, n = 0, i, rc;

	line = dwfl_module_getsrc(m->mod, pc);
	if (line)
		file = dwfl_lineinfo(line, &line_addr, &lineno, NULL, NULL, NULL);
	cudie = dwfl_module_addrdie(m->mod, pc, &bias);
	if (cudie) {
		nscopes = pc_scopes(s, m, cudie, pc - bias, scopes);
		if (nscopes < 0)
			return nscopes;
	}
	for (i = 0; i < nscopes && (size_t)n < max; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (!is_function(tag))
			continue; /* lexical blocks */
		rc = die_function(s, &scopes[i], &name);
		if (rc)
			return rc;
		frames[n].function = name;
		frames[n].file = file;
		frames[n].line = lineno > 0 ? (uint32_t)lineno : 0;
		frames[n].inlined = tag == DW_TAG_inlined_subroutine;
		n++;
		if (tag != DW_TAG_inlined_subroutine)
			break;
		/* The frame outside an inlined call is at the call site. */
		file = NULL;
		lineno = 0;
		if (dwarf_diecu(&scopes[i], &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, NULL) == 0 &&
		    dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &val) == 0)
			file = dwarf_filesrc(files, val, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &val) == 0 && val <= INT32_MAX)
			lineno = (int)val;
		if ((size_t)n < max)
			frames[n] = frames[0];
	}
	if (n == 0) {
		/* No DWARF function: the line table alone, if it has pc. */
		if (line && cudie && ends_sequence(cudie, line_addr - bias)) {
			file = NULL;
			lineno = 0;
		}
		frames[0].file = file;
		frames[0].line = lineno > 0 ? (uint32_t)lineno : 0;
		n = 1;
	}
	if (!frames[n - 1].function) {
		/* The ELF symbol (.symtab, or .dynsym of a stripped file). */
		rc = elf_functions(m);
		if (rc)
			return rc;
		fn = fns_find(&m->syms, pc);
		if (fn)
			return (rc = demangle(s, fn->u.name, &frames[n - 1].function)) ? rc : n;
	}
	return n;
}

/* Symbolizes ip into the frame array and caches it. Returns the cache
 * value (first << 8 | count) through *val; 0 or -ENOMEM. */
static int symbolize_new(struct mms_symbolizer *s, uint64_t ip, uint64_t *val)
{
	mms_frame_t tmp[SYM_MAX_FRAMES];
	struct sym_module *m;
	uint64_t *slot;
	int n = 1, isnew;

	memset(&tmp[0], 0, sizeof(tmp[0]));
	tmp[0].ip = ip;
	m = mms_is_pyframe(ip) ? NULL : module_of(s, ip);
	if (mms_is_pyframe(ip)) {
		uint32_t first;

		tmp[0].python = ip & MMS_PYFRAME_ENTRY ? 2 : 1;
		tmp[0].line = mms_pyframe_line(ip);
		if (mms__log_pycode(s->log, mms_pyframe_code(ip), &tmp[0].file, &tmp[0].function, &first))
			tmp[0].function = "<unknown Python code>";
	} else if (m) {
		tmp[0].module = m->path;
		tmp[0].module_offset = ip - m->bias;
		if (!m->tried)
			module_load(m);
		/* ip is a return address: ip - 1 lies in the call itself,
		 * whose line is the one that made the call (ip may already
		 * belong to the next line, or to another inlined scope). */
		if (m->mod)
			n = module_frames(s, m, ip - 1, tmp, SYM_MAX_FRAMES);
		if (n < 0)
			return n;
	}
	while (s->nframes + (size_t)n > s->frames_cap)
		if (mms__grow(&s->frames, &s->frames_cap, s->frames_cap, sizeof(*s->frames)))
			return -ENOMEM;
	slot = mms__map_put(&s->cache, ip, &isnew);
	if (!slot)
		return -ENOMEM;
	memcpy(&s->frames[s->nframes], tmp, (size_t)n * sizeof(*tmp));
	*slot = *val = (uint64_t)s->nframes << 8 | (uint64_t)n;
	s->nframes += (size_t)n;
	return 0;
}

/* --- API --------------------------------------------------------------- */

MMS__EXPORT int mms_symbolizer_open(const mms_log_t *log, mms_symbolizer_t **out)
{
	struct mms_symbolizer *s;
	mms_module_t mod;
	int count, rc;
	size_t i;

	if (!log || !out)
		return MMS_EUSAGE;
	*out = NULL;
	count = mms_log_module(log, 0, NULL);
	if (count < 0)
		return count;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->log = log;
	mms__map_init(&s->cache);
	mms__map_init(&s->names);
	if (count) {
		s->mods = calloc((size_t)count, sizeof(*s->mods));
		if (!s->mods) {
			rc = -ENOMEM;
			goto fail_sym;
		}
	}
	for (i = 0; i < (size_t)count; i++) {
		rc = mms_log_module(log, i, &mod);
		if (rc)
			goto fail_sym;
		s->mods[i] = (struct sym_module){
			.path = mod.path && mod.path[0] ? mod.path : NULL,
			.bias = mod.base,
			.build_id = mod.build_id,
			.build_id_len = mod.build_id_len,
		};
		s->nmods++;
		if (mod.lo < mod.hi) {
			uint64_t replaced;

			rc = mms__ivset_add_val(&s->ranges, mod.lo, mod.hi, i, &replaced);
			if (rc)
				goto fail_sym;
		}
	}
	*out = s;
	return 0;
fail_sym:
	mms_symbolizer_close(s);
	return rc;
}

MMS__EXPORT void mms_symbolizer_close(mms_symbolizer_t *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nmods; i++) {
		if (s->mods[i].dwfl)
			dwfl_end(s->mods[i].dwfl);
		mms__map_free(&s->mods[i].cus);
		free(s->mods[i].syms.v);
	}
	for (i = 0; i < s->ncus; i++)
		free(s->cus[i].v);
	free(s->cus);
	for (i = 0; i < s->ndemangled; i++)
		free(s->demangled[i]);
	free(s->demangled);
	mms__map_free(&s->names);
	mms__map_free(&s->cache);
	free(s->frames);
	mms__ivset_free(&s->ranges);
	free(s->mods);
	free(s);
}

MMS__EXPORT int mms_symbolize(mms_symbolizer_t *s, uint64_t ip, mms_frame_t *frames, size_t max)
{
	uint64_t *slot, val;
	size_t n;
	int rc;

	if (!s || (!frames && max))
		return MMS_EUSAGE;
	slot = mms__map_get(&s->cache, ip);
	if (slot) {
		val = *slot;
	} else {
		rc = symbolize_new(s, ip, &val);
		if (rc)
			return rc;
	}
	n = (size_t)(val & 0xff);
	if (n > max)
		n = max;
	if (n)
		memcpy(frames, &s->frames[val >> 8], n * sizeof(*frames));
	return (int)n;
}

MMS__EXPORT int mms_frame_format(const mms_frame_t *f, char *buf, size_t len)
{
	const char *mod = NULL, *slash;
	int n;

	if (!f || (!buf && len))
		return MMS_EUSAGE;
	if (f->module) {
		slash = strrchr(f->module, '/');
		mod = slash ? slash + 1 : f->module;
	}
	if (f->function && f->file && f->line)
		n = snprintf(buf, len, "%s (%s:%" PRIu32 ")", f->function, f->file, f->line);
	else if (f->function && mod)
		n = snprintf(buf, len, "%s (%s+0x%" PRIx64 ")", f->function, mod, f->module_offset);
	else if (f->function)
		n = snprintf(buf, len, "%s (0x%" PRIx64 ")", f->function, f->ip);
	else if (mod)
		n = snprintf(buf, len, "%s+0x%" PRIx64, mod, f->module_offset);
	else
		n = snprintf(buf, len, "0x%" PRIx64, f->ip);
	return n;
}

/* Whether the frames of one C address are the interpreter's eval loop:
 * the function that contains them is. */
static int eval_loop(const mms_frame_t *f, int n)
{
	const char *fn = n > 0 ? f[n - 1].function : NULL;

	return fn && (!strcmp(fn, "_PyEval_EvalFrameDefault") || !strcmp(fn, "PyEval_EvalFrameEx") ||
		      !strcmp(fn, "_PyEval_EvalFrame"));
}

MMS__EXPORT int mms_stack_mixed(mms_symbolizer_t *s, uint64_t *ips, size_t n)
{
	mms_frame_t tmp[SYM_MAX_FRAMES];
	size_t np = 0, py = 0, k = 0;
	uint64_t *out;
	int m;

	if (!s || (!ips && n))
		return MMS_EUSAGE;
	while (np < n && mms_is_pyframe(ips[np]))
		np++;
	if (!np)
		return (int)n;
	out = malloc(n * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = np; i < n; i++) {
		m = mms_symbolize(s, ips[i], tmp, SYM_MAX_FRAMES);
		if (m < 0) {
			free(out);
			return m;
		}
		if (py < np && eval_loop(tmp, m)) {
			/* This run of the eval loop ran the Python frames up to
			 * the first that began it. */
			while (py < np) {
				out[k++] = ips[py];
				if (ips[py++] & MMS_PYFRAME_ENTRY)
					break;
			}
			continue;
		}
		out[k++] = ips[i];
	}
	/* Python frames the C frames did not reach. */
	while (py < np)
		out[k++] = ips[py++];
	memcpy(ips, out, k * sizeof(*out));
	free(out);
	return (int)k;
}

MMS__EXPORT int mms_stack_frames(mms_symbolizer_t *s, const uint64_t *ips, size_t n, int view, mms_frame_t *out,
				 size_t max)
{
	uint64_t *order = NULL;
	size_t k = 0, i = 0, np = 0;
	int m, rc = 0;

	if (!s || (!ips && n) || (!out && max) || view < MMS_STACK_MIXED || view > MMS_STACK_PYTHON)
		return MMS_EUSAGE;
	while (np < n && mms_is_pyframe(ips[np]))
		np++;
	if (view == MMS_STACK_PYTHON) {
		n = np;
	} else if (view == MMS_STACK_C) {
		i = np;
	} else if (np) {
		order = malloc(n * sizeof(*order));
		if (!order)
			return -ENOMEM;
		memcpy(order, ips, n * sizeof(*order));
		m = mms_stack_mixed(s, order, n);
		if (m < 0) {
			free(order);
			return m;
		}
		ips = order;
		n = (size_t)m;
	}
	for (; i < n && k < max; i++) {
		m = mms_symbolize(s, ips[i], &out[k], max - k);
		if (m < 0) {
			rc = m;
			break;
		}
		k += (size_t)m;
	}
	free(order);
	return rc ? rc : (int)k;
}
