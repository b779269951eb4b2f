/* SPDX-License-Identifier: MIT */
/* elfdyn.h: the tables of a loaded object's dynamic section, as elfsym.c
 * reads them (for its lookups of symbols, and redirect.c's of the
 * relocations that name them). */
#ifndef MMS_ELFDYN_H
#define MMS_ELFDYN_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

#include "hooks-int.h"

struct mms_dyn {
	const ElfW(Dyn) * dyn; /* the section itself */
	const ElfW(Sym) * symtab;
	const char *strtab;
	const uint32_t *gnu_hash, *hash;
	const ElfW(Half) * versym;
	const ElfW(Rela) * rela, *jmprel; /* jmprel only when its entries are Rela */
	size_t relasz, jmprelsz;          /* in bytes */
};

/* Reads the dynamic section of the object info describes into *d (its
 * tables' addresses, NULL where it has none): 0, or -1 when it has no
 * dynamic section. */
int mms__dyn_read(const struct dl_phdr_info *info, struct mms_dyn *d) MMS_HIDDEN;

#endif
