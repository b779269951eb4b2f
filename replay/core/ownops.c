/* SPDX-License-Identifier: MIT */
/* ownops.c: whether a module of the log calls its own copy of a C++
 * allocation operator rather than the global one the recorder defines.
 *
 * A library linked with the C++ runtime built in (g++ -static-libstdc++,
 * often with -Wl,--exclude-libs,ALL: plugins and Python wheels built to
 * run anywhere) binds its calls of operator new and delete to its own
 * copies, which call malloc and free: the recorder sees a malloc where
 * that code says new. A block it makes with new and the program releases
 * with delete (or the reverse) is then a malloc freed by delete in the
 * log, a mismatched free that did not happen. The state asks here at the
 * first such free (nothing is read otherwise) and counts those frees as
 * not checked when a module of the log binds its own operators.
 *
 * A module binds its own copy when its symbol table defines an operator
 * locally (a local or hidden symbol), its dynamic symbol table defines
 * one it cannot let the global scope replace (a protected symbol, or an
 * object linked with -Bsymbolic), or it is the executable and defines one
 * (an executable's calls never go through the global scope). A stripped
 * module shows none of that: one that neither defines nor imports an
 * operator in its dynamic symbols but holds the C++ runtime's name of
 * std::bad_alloc's type (which only the runtime's own code defines) has
 * the runtime built in. A library linked with -Bsymbolic-functions and
 * no mark of it is not told; nor is a module whose file is gone or
 * differs from the recorded one (its build-id). */
#define _GNU_SOURCE /* memmem */
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "cxxops.h"
#include "exe.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "base-int.h"
#include "log-int.h"

/* How a module binds its own operators (enum own_how): not at all, by its
 * symbols (op names which), or as a stripped copy of the C++ runtime. */
enum own_how { OWN_NONE, OWN_SYMBOL, OWN_RUNTIME };

static int op_index(const char *name)
{
	if (strncmp(name, "_Zn", 3) && strncmp(name, "_Zd", 3))
		return -1;
	for (size_t i = 0; i < MMS_CXX_OPS; i++)
		if (!strcmp(name, mms_cxx_op_symbols[i]))
			return (int)i;
	return -1;
}

/* The typeinfo name of std::bad_alloc, NUL-terminated on both sides, in
 * data d (a read-only data section). */
static int holds_bad_alloc(const Elf_Data *d)
{
	static const char name[] = "St9bad_alloc";
	const char *p = d ? d->d_buf : NULL, *end = p ? p + d->d_size : NULL, *q;

	while (p && (q = memmem(p, (size_t)(end - p), name, sizeof name))) {
		if (q == (const char *)d->d_buf || q[-1] == 0)
			return 1;
		p = q + 1;
	}
	return 0;
}

/* What the symbols of one table (section scn of header sh) say: the
 * first operator (in mms_cxx_op_symbols' order: new before delete) the
 * module binds to itself, or -1; *defines and *imports set when the table
 * defines or imports any operator. */
static int table_own(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, int exe, int symbolic, int *defines, int *imports)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	GElf_Sym s;
	int first = -1;

	for (size_t i = 1; d && i < n; i++) {
		const char *name;
		unsigned vis;
		int op;

		if (!gelf_getsym(d, (int)i, &s) || !s.st_name || !(name = elf_strptr(elf, sh->sh_link, s.st_name)) ||
		    (op = op_index(name)) < 0)
			continue;
		if (s.st_shndx == SHN_UNDEF) {
			*imports = 1;
			continue;
		}
		*defines = 1;
		vis = GELF_ST_VISIBILITY(s.st_other);
		if (exe ||
		    (sh->sh_type == SHT_SYMTAB &&
		     (GELF_ST_BIND(s.st_info) == STB_LOCAL || vis == STV_HIDDEN || vis == STV_INTERNAL)) ||
		    (sh->sh_type == SHT_DYNSYM && (vis == STV_PROTECTED || symbolic)))
			first = first < 0 || op < first ? op : first;
	}
	return first;
}

/* How module m's file binds the operators (enum own_how), with the
 * operator in *op (-1: not known). */
static int module_own(const mms_module_t *m, int *op)
{
	int fd, how = OWN_NONE, exe, symbolic = 0, symtab = 0, defines = 0, imports = 0;
	const void *bid;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf *elf;

	*op = -1;
	/* The recorder's operators are the global ones. */
	if (m->path && mms_starts(mms_base_name(m->path), "libmsmemscope-hooks"))
		return OWN_NONE;
	fd = mms__module_file_open(m->path, m->build_id_len);
	if (fd < 0)
		return OWN_NONE;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		goto out;
	/* The one recorded, where the log says which. */
	if (m->build_id_len && (dwelf_elf_gnu_build_id(elf, &bid) != (ssize_t)m->build_id_len ||
				memcmp(bid, m->build_id, m->build_id_len)))
		goto out;
	exe = eh.e_type == ET_EXEC;
	/* The kind of object. */
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			goto out;
		if (sh.sh_type == SHT_SYMTAB)
			symtab = 1;
		if (sh.sh_type == SHT_DYNAMIC) {
			Elf_Data *d = elf_getdata(scn, NULL);
			size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
			GElf_Dyn dyn;

			for (size_t i = 0; d && i < n && gelf_getdyn(d, (int)i, &dyn) && dyn.d_tag != DT_NULL; i++) {
				if (dyn.d_tag == DT_SYMBOLIC || (dyn.d_tag == DT_FLAGS && dyn.d_un.d_val & DF_SYMBOLIC))
					symbolic = 1;
				if (dyn.d_tag == DT_FLAGS_1 && dyn.d_un.d_val & DF_1_PIE)
					exe = 1;
			}
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		if ((*op = table_own(elf, scn, &sh, exe, symbolic, &defines, &imports)) >= 0) {
			how = OWN_SYMBOL;
			goto out;
		}
	}
	if (symtab || defines || imports)
		goto out;
	/* Stripped, and no operator in its dynamic symbols. */
	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_ALLOC) &&
		    !(sh.sh_flags & (SHF_EXECINSTR | SHF_WRITE)) && holds_bad_alloc(elf_getdata(scn, NULL))) {
			how = OWN_RUNTIME;
			break;
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return how;
}

int mms__log_own_operators(mms_log_t *log)
{
	mms_module_t m;
	int op;

	if (!log)
		return 0;
	if (log->own_ops_how)
		return 1;
	if (log->own_ops_seen < log->nmodules)
		elf_version(EV_CURRENT);
	/* Modules a followed log recorded since the last look, too. */
	for (; log->own_ops_seen < log->nmodules; log->own_ops_seen++) {
		int how;

		if (mms_log_module(log, log->own_ops_seen, &m) || !(how = module_own(&m, &op)))
			continue;
		log->own_ops_how = (uint8_t)how;
		log->own_ops_module = log->own_ops_seen;
		log->own_ops_op = op;
		return 1;
	}
	return 0;
}

MMS__EXPORT int mms_log_own_operators(const mms_log_t *clog, const char **module, const char **op)
{
	/* What is found is kept in the log: not a change a reader sees. */
	mms_log_t *log = (mms_log_t *)clog;
	mms_module_t m;

	if (!log)
		return MMS_EUSAGE;
	if (!mms__log_own_operators(log) || mms_log_module(log, log->own_ops_module, &m))
		return 0;
	if (module)
		*module = m.path;
	if (op)
		*op = log->own_ops_how == OWN_SYMBOL && log->own_ops_op >= 0 ? mms_cxx_op_names[log->own_ops_op] : NULL;
	return 1;
}
