/* SPDX-License-Identifier: MIT */
/* cfi.c: finds the DWARF call frame information (.eh_frame) of a code
 * address in the loaded modules and reduces it to the one rule the
 * stack walker needs: where the caller's frame, return address and rbp are.
 *
 * Only x86-64 code as compilers emit it is handled: the CFA is rsp or rbp
 * plus an offset, rbp is saved at a fixed offset from the CFA (or not at
 * all), the return address lies at CFA-8. Anything else (CFA expressions
 * as in PLT entries, signal frames, return addresses in registers) is
 * reported as unsupported and the caller unwinds that stack with libunwind.
 * All of this runs on a cache miss only, under one lock. */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>

#include "hooks-int.h"
#include "objects.h"

#if defined(__x86_64__)

/* DWARF pointer encodings (the LSB's DW_EH_PE_*). */
enum {
	PE_ABSPTR = 0x00, PE_ULEB128 = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03, PE_UDATA8 = 0x04,
	PE_SLEB128 = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b, PE_SDATA8 = 0x0c,
	PE_PCREL = 0x10, PE_DATAREL = 0x30, PE_INDIRECT = 0x80, PE_OMIT = 0xff,
};

/* Call frame instructions. */
enum {
	CFA_advance_loc = 0x40, CFA_offset = 0x80, CFA_restore = 0xc0,
	CFA_nop = 0x00, CFA_set_loc = 0x01, CFA_advance_loc1 = 0x02, CFA_advance_loc2 = 0x03,
	CFA_advance_loc4 = 0x04, CFA_offset_extended = 0x05, CFA_restore_extended = 0x06,
	CFA_undefined = 0x07, CFA_same_value = 0x08, CFA_register = 0x09, CFA_remember_state = 0x0a,
	CFA_restore_state = 0x0b, CFA_def_cfa = 0x0c, CFA_def_cfa_register = 0x0d, CFA_def_cfa_offset = 0x0e,
	CFA_def_cfa_expression = 0x0f, CFA_expression = 0x10, CFA_offset_extended_sf = 0x11,
	CFA_def_cfa_sf = 0x12, CFA_def_cfa_offset_sf = 0x13, CFA_val_offset = 0x14, CFA_val_offset_sf = 0x15,
	CFA_val_expression = 0x16, CFA_GNU_args_size = 0x2e,
};

/* x86-64 DWARF register numbers. */
#define DW_RBP 6
#define DW_RSP 7
#define DW_RA 16

/* --- reading ---------------------------------------------------------------
 * Each reader advances *p and fails (-1) rather than read past end. */

struct reader {
	const uint8_t *p, *end;
};

static int get_bytes(struct reader *r, void *out, size_t n)
{
	if ((size_t)(r->end - r->p) < n)
		return -1;
	memcpy(out, r->p, n);
	r->p += n;
	return 0;
}

/* The log's own LEB128 decoder (format.h); a value past 64 bits is
 * corrupt call frame information, and that stack goes to libunwind. */
static int get_uleb(struct reader *r, uint64_t *out)
{
	return mms_get_u(&r->p, r->end, out);
}

static int get_sleb(struct reader *r, int64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (r->p < r->end) {
		uint8_t b = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << shift;
			*out = (int64_t)v;
			return 0;
		}
	}
	return -1;
}

/* Reads a pointer in encoding enc. datarel is the base of DW_EH_PE_datarel
 * (the .eh_frame_hdr), 0 where none applies. The indirect bit is followed
 * only when deref is set (personality pointers are skipped, not used). */
static int get_ptr(struct reader *r, uint8_t enc, uintptr_t datarel, int deref, uintptr_t *out)
{
	uintptr_t base, v;
	const uint8_t *at = r->p;
	union {
		uint16_t u16;
		uint32_t u32;
		uint64_t u64;
		int16_t s16;
		int32_t s32;
		int64_t s64;
	} u;

	switch (enc & 0x70) {
	case 0:
		base = 0;
		break;
	case PE_PCREL:
		base = (uintptr_t)at;
		break;
	case PE_DATAREL:
		if (!datarel)
			return -1;
		base = datarel;
		break;
	default:
		return -1;
	}
	switch (enc & 0x0f) {
	case PE_ABSPTR:
	case PE_UDATA8:
		if (get_bytes(r, &u.u64, 8))
			return -1;
		v = (uintptr_t)u.u64;
		break;
	case PE_ULEB128:
		if (get_uleb(r, &u.u64))
			return -1;
		v = (uintptr_t)u.u64;
		break;
	case PE_UDATA2:
		if (get_bytes(r, &u.u16, 2))
			return -1;
		v = u.u16;
		break;
	case PE_UDATA4:
		if (get_bytes(r, &u.u32, 4))
			return -1;
		v = u.u32;
		break;
	case PE_SLEB128:
		if (get_sleb(r, &u.s64))
			return -1;
		v = (uintptr_t)u.s64;
		break;
	case PE_SDATA2:
		if (get_bytes(r, &u.s16, 2))
			return -1;
		v = (uintptr_t)(intptr_t)u.s16;
		break;
	case PE_SDATA4:
		if (get_bytes(r, &u.s32, 4))
			return -1;
		v = (uintptr_t)(intptr_t)u.s32;
		break;
	case PE_SDATA8:
		if (get_bytes(r, &u.s64, 8))
			return -1;
		v = (uintptr_t)u.s64;
		break;
	default:
		return -1;
	}
	v += base;
	if ((enc & PE_INDIRECT) && deref) {
		if (!v)
			return -1;
		memcpy(&v, (const void *)v, sizeof v);
	}
	*out = v;
	return 0;
}

/* --- the module table ------------------------------------------------------
 * One entry per executable segment of each loaded module, sorted by
 * address, with its module's .eh_frame_hdr search table. Rebuilt when the
 * loader's counts of objects added and removed change. */

struct cfi_module {
	uintptr_t lo, hi;      /* the executable segment */
	uintptr_t hdr;         /* .eh_frame_hdr: the datarel base */
	const int32_t *table;  /* (initial location, FDE) pairs, hdr-relative */
	size_t count;          /* 0: no usable table */
};

static pthread_mutex_t cfi_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cfi_module *mods;
static size_t nmods, mods_cap;
static unsigned long long mods_adds, mods_subs;
static int mods_built;
uint32_t mms__cfi_gen = 1;
/* The loader's count of unloaded objects that mms__cfi_gen accounts for.
 * Only an unloaded module makes cached rules stale: a rule for code that
 * had none (cached as unsupported) just sends stacks to libunwind. */
static unsigned long long gen_subs;

/* Under cfi_lock. */
static void note_subs(unsigned long long subs)
{
	if (subs != gen_subs) {
		gen_subs = subs;
		__atomic_fetch_add(&mms__cfi_gen, 1, __ATOMIC_RELEASE);
	}
}

struct collect {
	size_t n;              /* entries found (may exceed mods_cap) */
};

/* The binary search table of the .eh_frame_hdr at hdr, if it has the
 * usual form (datarel sdata4 pairs). */
static size_t hdr_table(uintptr_t hdr, size_t len, const int32_t **table)
{
	struct reader r = { (const uint8_t *)hdr, (const uint8_t *)hdr + len };
	uint8_t h[4];
	uintptr_t eh_frame, count;

	if (get_bytes(&r, h, 4) || h[0] != 1 || h[3] != (PE_DATAREL | PE_SDATA4) || h[2] == PE_OMIT)
		return 0;
	if (get_ptr(&r, h[1], hdr, 1, &eh_frame) || get_ptr(&r, h[2], hdr, 1, &count))
		return 0;
	if (count > ((size_t)(r.end - r.p)) / 8)
		return 0;
	*table = (const int32_t *)(const void *)r.p;
	return count;
}

static int collect_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct collect *c = arg;
	uintptr_t hdr = 0;
	size_t hdr_len = 0, count = 0;
	const int32_t *table = NULL;
	(void)size;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_GNU_EH_FRAME) {
			hdr = info->dlpi_addr + ph->p_vaddr;
			hdr_len = ph->p_memsz;
		}
	}
	if (hdr)
		count = hdr_table(hdr, hdr_len, &table);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (c->n < mods_cap) {
			struct cfi_module *m = &mods[c->n];
			m->lo = info->dlpi_addr + ph->p_vaddr;
			m->hi = m->lo + ph->p_memsz;
			m->hdr = hdr;
			m->table = table;
			m->count = count;
		}
		c->n++;
	}
	return 0;
}

static int mod_cmp(const struct cfi_module *a, const struct cfi_module *b)
{
	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Rebuilds the table when the loader's counts moved. Under cfi_lock. */
static int modules_update(void)
{
	unsigned long long v[2] = { 0, 0 };
	struct collect c;

	/* A fork child that may not ask the loader: its parent's table. */
	if (mods_built && mms__phdr_unsafe())
		return 0;
	mms__loader_counts(v);
	if (mods_built && v[0] == mods_adds && v[1] == mods_subs)
		return 0;
	for (;;) {
		c.n = 0;
		mms__phdr_iterate(collect_one, &c);
		if (c.n <= mods_cap)
			break;
		if (mods)
			mms__unmap_own(mods, mods_cap * sizeof *mods);
		mods_cap = (c.n + 64) * 2;
		mods = mms__map_anon(mods_cap * sizeof *mods);
		if (!mods) {
			mods_cap = 0;
			mods_built = 0;
			return -ENOMEM;
		}
	}
	nmods = c.n;
	/* Insertion sort: the loader's order is nearly sorted, and qsort
	 * might allocate. */
	for (size_t i = 1; i < nmods; i++) {
		struct cfi_module m = mods[i];
		size_t j = i;
		for (; j > 0 && mod_cmp(&mods[j - 1], &m) > 0; j--)
			mods[j] = mods[j - 1];
		mods[j] = m;
	}
	mods_adds = v[0];
	mods_subs = v[1];
	mods_built = 1;
	note_subs(v[1]);
	return 0;
}

static const struct cfi_module *module_find(uintptr_t pc)
{
	size_t lo = 0, hi = nmods;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pc < mods[mid].lo)
			hi = mid;
		else if (pc >= mods[mid].hi)
			lo = mid + 1;
		else
			return &mods[mid];
	}
	return NULL;
}

/* The FDE that may cover pc: the last table entry at or below it. */
static uintptr_t fde_find(const struct cfi_module *m, uintptr_t pc)
{
	size_t lo = 0, hi = m->count;

	if (!m->count || pc < m->hdr + (uintptr_t)(intptr_t)m->table[0])
		return 0;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->hdr + (uintptr_t)(intptr_t)m->table[2 * mid] <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return m->hdr + (uintptr_t)(intptr_t)m->table[2 * lo + 1];
}

/* --- CIE and FDE ------------------------------------------------------- */

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	int has_aug_data;
	struct reader insns;
};

/* Reads an entry's length; r then spans the entry after its length field. */
static int entry_open(uintptr_t at, struct reader *r)
{
	uint32_t len32;
	uint64_t len;

	r->p = (const uint8_t *)at;
	r->end = r->p + 12;
	if (get_bytes(r, &len32, 4))
		return -1;
	len = len32;
	if (len32 == 0xffffffffu && get_bytes(r, &len, 8))
		return -1;
	if (len == 0 || len > (1u << 30))
		return -1;
	r->end = r->p + len;
	return 0;
}

static int cie_parse(uintptr_t at, struct cie *c)
{
	struct reader r;
	uint32_t id;
	uint8_t version;
	const char *aug;
	uint64_t ra, auglen;

	if (entry_open(at, &r) || get_bytes(&r, &id, 4) || id != 0 || get_bytes(&r, &version, 1))
		return -1;
	if (version != 1 && version != 3 && version != 4)
		return -1;
	aug = (const char *)r.p;
	while (r.p < r.end && *r.p)
		r.p++;
	if (r.p++ >= r.end)
		return -1;
	if (version == 4) {
		uint8_t sizes[2];
		if (get_bytes(&r, sizes, 2) || sizes[0] != 8 || sizes[1] != 0)
			return -1;
	}
	if (get_uleb(&r, &c->code_align) || get_sleb(&r, &c->data_align))
		return -1;
	if (version == 1) {
		uint8_t b;
		if (get_bytes(&r, &b, 1))
			return -1;
		ra = b;
	} else if (get_uleb(&r, &ra)) {
		return -1;
	}
	if (ra != DW_RA)
		return -ENOTSUP;
	c->fde_enc = PE_ABSPTR;
	c->has_aug_data = 0;
	if (*aug == 'z') {
		struct reader a;
		if (get_uleb(&r, &auglen) || auglen > (uint64_t)(r.end - r.p))
			return -1;
		a.p = r.p;
		a.end = r.p + auglen;
		c->has_aug_data = 1;
		for (const char *s = aug + 1; *s; s++) {
			uint8_t enc;
			uintptr_t ignored;
			switch (*s) {
			case 'L':
				if (get_bytes(&a, &enc, 1))
					return -1;
				break;
			case 'P':
				if (get_bytes(&a, &enc, 1) || get_ptr(&a, enc, 0, 0, &ignored))
					return -1;
				break;
			case 'R':
				if (get_bytes(&a, &c->fde_enc, 1))
					return -1;
				break;
			case 'S': /* a signal frame: the IP is not a return address */
			default:
				return -ENOTSUP;
			}
		}
		r.p = a.end;
	} else if (*aug) {
		return -ENOTSUP;
	}
	c->insns = r;
	return 0;
}

/* --- the CFA program ------------------------------------------------------ */

enum reg_how { HOW_SAME, HOW_UNDEF, HOW_OFFSET, HOW_OTHER };

struct reg_rule {
	uint8_t how;
	int64_t off;
};

struct cfa_state {
	int cfa_reg;           /* -1: an expression */
	int64_t cfa_off;
	struct reg_rule rbp, ra;
};

#define STATE_STACK 16

struct cfa_run {
	struct cfa_state cur, init;
	struct cfa_state stack[STATE_STACK];
	int depth;
	uintptr_t loc, pc;
	const struct cie *cie;
};

static struct reg_rule *tracked(struct cfa_state *s, uint64_t reg)
{
	return reg == DW_RBP ? &s->rbp : reg == DW_RA ? &s->ra : NULL;
}

static void set_rule(struct cfa_state *s, uint64_t reg, uint8_t how, int64_t off)
{
	struct reg_rule *rr = tracked(s, reg);

	if (rr) {
		rr->how = how;
		rr->off = off;
	}
}

/* Runs instructions until the location passes pc. Returns 0, or -1 on
 * what cannot be read, -ENOTSUP on what is not handled. */
static int cfa_exec(struct cfa_run *x, struct reader r, int is_cie)
{
	const struct cie *c = x->cie;

	while (r.p < r.end) {
		uint8_t op = *r.p++;
		uint64_t reg, u, delta = 0;
		int64_t s;
		uint8_t b1;
		uint16_t b2;
		uint32_t b4;
		struct reg_rule *rr;

		switch (op & 0xc0) {
		case CFA_advance_loc:
			delta = op & 0x3f;
			goto advance;
		case CFA_offset:
			if (get_uleb(&r, &u))
				return -1;
			set_rule(&x->cur, op & 0x3f, HOW_OFFSET, (int64_t)u * c->data_align);
			continue;
		case CFA_restore:
			if (is_cie)
				return -1;
			if ((rr = tracked(&x->cur, op & 0x3f)))
				*rr = *tracked(&x->init, op & 0x3f);
			continue;
		default:
			break;
		}
		switch (op) {
		case CFA_nop:
			break;
		case CFA_set_loc: {
			uintptr_t loc;
			if (get_ptr(&r, c->fde_enc, 0, 1, &loc))
				return -1;
			if (loc > x->pc)
				return 0;
			x->loc = loc;
			break;
		}
		case CFA_advance_loc1:
			if (get_bytes(&r, &b1, 1))
				return -1;
			delta = b1;
			goto advance;
		case CFA_advance_loc2:
			if (get_bytes(&r, &b2, 2))
				return -1;
			delta = b2;
			goto advance;
		case CFA_advance_loc4:
			if (get_bytes(&r, &b4, 4))
				return -1;
			delta = b4;
			goto advance;
		case CFA_offset_extended:
			if (get_uleb(&r, &reg) || get_uleb(&r, &u))
				return -1;
			set_rule(&x->cur, reg, HOW_OFFSET, (int64_t)u * c->data_align);
			break;
		case CFA_offset_extended_sf:
			if (get_uleb(&r, &reg) || get_sleb(&r, &s))
				return -1;
			set_rule(&x->cur, reg, HOW_OFFSET, s * c->data_align);
			break;
		case CFA_restore_extended:
			if (get_uleb(&r, &reg) || is_cie)
				return -1;
			if ((rr = tracked(&x->cur, reg)))
				*rr = *tracked(&x->init, reg);
			break;
		case CFA_undefined:
			if (get_uleb(&r, &reg))
				return -1;
			set_rule(&x->cur, reg, HOW_UNDEF, 0);
			break;
		case CFA_same_value:
			if (get_uleb(&r, &reg))
				return -1;
			set_rule(&x->cur, reg, HOW_SAME, 0);
			break;
		case CFA_register:
			if (get_uleb(&r, &reg) || get_uleb(&r, &u))
				return -1;
			set_rule(&x->cur, reg, HOW_OTHER, 0);
			break;
		case CFA_remember_state:
			if (x->depth == STATE_STACK)
				return -ENOTSUP;
			x->stack[x->depth++] = x->cur;
			break;
		case CFA_restore_state:
			if (x->depth == 0)
				return -1;
			x->cur = x->stack[--x->depth];
			break;
		case CFA_def_cfa:
			if (get_uleb(&r, &reg) || get_uleb(&r, &u))
				return -1;
			x->cur.cfa_reg = reg < 256 ? (int)reg : 256;
			x->cur.cfa_off = (int64_t)u;
			break;
		case CFA_def_cfa_sf:
			if (get_uleb(&r, &reg) || get_sleb(&r, &s))
				return -1;
			x->cur.cfa_reg = reg < 256 ? (int)reg : 256;
			x->cur.cfa_off = s * c->data_align;
			break;
		case CFA_def_cfa_register:
			if (get_uleb(&r, &reg))
				return -1;
			if (x->cur.cfa_reg < 0)
				return -ENOTSUP;
			x->cur.cfa_reg = reg < 256 ? (int)reg : 256;
			break;
		case CFA_def_cfa_offset:
			if (get_uleb(&r, &u))
				return -1;
			if (x->cur.cfa_reg < 0)
				return -ENOTSUP;
			x->cur.cfa_off = (int64_t)u;
			break;
		case CFA_def_cfa_offset_sf:
			if (get_sleb(&r, &s))
				return -1;
			if (x->cur.cfa_reg < 0)
				return -ENOTSUP;
			x->cur.cfa_off = s * c->data_align;
			break;
		case CFA_def_cfa_expression:
			if (get_uleb(&r, &u) || u > (uint64_t)(r.end - r.p))
				return -1;
			r.p += u;
			x->cur.cfa_reg = -1;
			break;
		case CFA_expression:
		case CFA_val_expression:
			if (get_uleb(&r, &reg) || get_uleb(&r, &u) || u > (uint64_t)(r.end - r.p))
				return -1;
			r.p += u;
			set_rule(&x->cur, reg, HOW_OTHER, 0);
			break;
		case CFA_val_offset:
			if (get_uleb(&r, &reg) || get_uleb(&r, &u))
				return -1;
			set_rule(&x->cur, reg, HOW_OTHER, 0);
			break;
		case CFA_val_offset_sf:
			if (get_uleb(&r, &reg) || get_sleb(&r, &s))
				return -1;
			set_rule(&x->cur, reg, HOW_OTHER, 0);
			break;
		case CFA_GNU_args_size:
			if (get_uleb(&r, &u))
				return -1;
			break;
		default:
			return -ENOTSUP;
		}
		continue;
advance:
		if (is_cie)
			continue;
		x->loc += delta * c->code_align;
		if (x->loc > x->pc)
			return 0;
	}
	return 0;
}

/* The rule in effect at pc, from the FDE at fde. */
static int fde_rule(uintptr_t fde, uintptr_t pc, struct mms_cfi_rule *out)
{
	struct reader r;
	struct cie c;
	struct cfa_run x;
	const uint8_t *cie_field;
	uint32_t cie_off;
	uintptr_t begin, range;
	int err;

	if (entry_open(fde, &r))
		return -1;
	cie_field = r.p;
	if (get_bytes(&r, &cie_off, 4) || cie_off == 0)
		return -1;
	if ((err = cie_parse((uintptr_t)cie_field - cie_off, &c)))
		return err;
	if (get_ptr(&r, c.fde_enc, 0, 1, &begin) || get_ptr(&r, c.fde_enc & 0x0f, 0, 0, &range))
		return -1;
	if (pc < begin || pc - begin >= range)
		return -ENOENT;
	if (c.has_aug_data) {
		uint64_t len;
		if (get_uleb(&r, &len) || len > (uint64_t)(r.end - r.p))
			return -1;
		r.p += len;
	}
	memset(&x, 0, sizeof x);
	x.cie = &c;
	x.cur.cfa_reg = -1;
	x.cur.rbp.how = HOW_SAME;
	x.cur.ra.how = HOW_OTHER; /* unspecified: not handled */
	x.loc = begin;
	x.pc = pc;
	if ((err = cfa_exec(&x, c.insns, 1)))
		return err;
	x.init = x.cur;
	x.depth = 0;
	if ((err = cfa_exec(&x, r, 0)))
		return err;

	memset(out, 0, sizeof *out);
	if (x.cur.ra.how == HOW_UNDEF) {
		out->flags = MMS_CFI_LAST;
		return 0;
	}
	if (x.cur.ra.how != HOW_OFFSET || x.cur.ra.off != -8)
		return -ENOTSUP;
	if (x.cur.cfa_reg == DW_RBP)
		out->flags |= MMS_CFI_CFA_RBP;
	else if (x.cur.cfa_reg != DW_RSP)
		return -ENOTSUP;
	if (x.cur.cfa_off < 8 || x.cur.cfa_off > INT32_MAX)
		return -ENOTSUP;
	out->cfa_off = (int32_t)x.cur.cfa_off;
	switch (x.cur.rbp.how) {
	case HOW_SAME:
		break;
	case HOW_UNDEF:
		out->flags |= MMS_CFI_RBP_UNDEF;
		break;
	case HOW_OFFSET:
		if (x.cur.rbp.off < INT16_MIN || x.cur.rbp.off > INT16_MAX)
			return -ENOTSUP;
		out->flags |= MMS_CFI_RBP_SAVED;
		out->rbp_off = (int16_t)x.cur.rbp.off;
		break;
	default:
		return -ENOTSUP;
	}
	return 0;
}

int mms__cfi_rule(uintptr_t ra, struct mms_cfi_rule *out)
{
	const struct cfi_module *m;
	uintptr_t pc = ra - 1, fde;
	int err;

	if (pthread_mutex_trylock(&cfi_lock))
		return -EAGAIN;
	err = modules_update();
	if (!err) {
		m = module_find(pc);
		fde = m ? fde_find(m, pc) : 0;
		err = fde ? fde_rule(fde, pc, out) : -ENOENT;
	}
	pthread_mutex_unlock(&cfi_lock);
	if (err == -1)
		err = -EINVAL;
	if (err) {
		memset(out, 0, sizeof *out);
		out->flags = MMS_CFI_UNSUPPORTED;
	}
	return err;
}

void mms__cfi_note_loader(unsigned long long adds, unsigned long long subs)
{
	(void)adds; /* a new module is found when a rule is looked up */
	if (!pthread_mutex_trylock(&cfi_lock)) {
		note_subs(subs);
		pthread_mutex_unlock(&cfi_lock);
	}
}

void mms__cfi_modules_changed(void)
{
	unsigned long long v[2] = { 0, 0 };

	mms__loader_counts(v);
	if (!pthread_mutex_trylock(&cfi_lock)) {
		note_subs(v[1]);
		pthread_mutex_unlock(&cfi_lock);
	} else {
		__atomic_fetch_add(&mms__cfi_gen, 1, __ATOMIC_RELEASE);
	}
}

void mms__cfi_after_fork_child(void)
{
	pthread_mutex_init(&cfi_lock, NULL);
}

#else /* !__x86_64__ */

uint32_t mms__cfi_gen = 1;

int mms__cfi_rule(uintptr_t ra, struct mms_cfi_rule *out)
{
	(void)ra;
	memset(out, 0, sizeof *out);
	out->flags = MMS_CFI_UNSUPPORTED;
	return -ENOTSUP;
}

void mms__cfi_note_loader(unsigned long long adds, unsigned long long subs)
{
	(void)adds, (void)subs;
}

void mms__cfi_modules_changed(void)
{
}

void mms__cfi_after_fork_child(void)
{
}

#endif
