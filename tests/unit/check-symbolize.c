/* SPDX-License-Identifier: MIT */
/* check-symbolize.c: unit tests of the symbolizer over synthetic module
 * maps: addresses in no module, files that are gone or were rebuilt,
 * overlapping modules, and this test program's own functions. */
#define _GNU_SOURCE
#include <check.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logbuild.h"
#include "scratch.h"
#include "msmemscope-replay.h"

#define LOG "t.mms"
#define CS 4096u

/* A module as the recorder writes it (see hooks/modules.c). */
struct mod {
	uint64_t base, lo, hi;
	char path[4096];
	uint8_t build_id[64];
	size_t build_id_len;
};

static struct lb *log_new(void)
{
	struct lb *b = lb_new(CS);

	lb_chunk(b);
	lb_segment(b, 0, 10);
	lb_thread(b, 10, 0, 1000);
	return b;
}

static void log_module(struct lb *b, const struct mod *m)
{
	uint8_t buf[80];

	lb_begin(b, MMS_TAG_MODULE, 10);
	lb_u(b, m->base);
	lb_u(b, m->lo);
	lb_u(b, m->hi);
	lb_str(b, m->path);
	/* The build-id is raw bytes (NULs included): the last field, so it
	 * goes in as is and publishes the record. */
	lb_raw(b, buf, (size_t)(mms_put_s(buf, m->build_id, m->build_id_len) - buf));
}

static mms_log_t *log_open(struct lb *b)
{
	mms_log_t *log = NULL;
	int rc;

	ck_assert_int_eq(lb_write(b, LOG, SIZE_MAX), 0);
	rc = mms_log_open(LOG, &log);
	ck_assert_msg(rc == 0, "open: %s", mms_strerror(rc));
	lb_destroy(b);
	return log;
}

/* --- this program as a module ------------------------------------------ */

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct mod *m = arg;
	uintptr_t here = (uintptr_t)&find_self, lo = UINTPTR_MAX, hi = 0;
	(void)size;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p, *end;

		if (ph->p_type == PT_LOAD) {
			if (info->dlpi_addr + ph->p_vaddr < lo)
				lo = info->dlpi_addr + ph->p_vaddr;
			if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
				hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		}
		if (ph->p_type != PT_NOTE)
			continue;
		p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof(*nh);
			const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);

			if (desc + nh->n_descsz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
			    nh->n_descsz <= sizeof(m->build_id)) {
				memcpy(m->build_id, desc, nh->n_descsz);
				m->build_id_len = nh->n_descsz;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	if (here < lo || here >= hi) {
		m->build_id_len = 0;
		return 0;
	}
	m->base = info->dlpi_addr;
	m->lo = lo;
	m->hi = hi;
	return 1;
}

static void self_module(struct mod *m)
{
	ssize_t n;

	memset(m, 0, sizeof(*m));
	ck_assert_int_eq(dl_iterate_phdr(find_self, m), 1);
	n = readlink("/proc/self/exe", m->path, sizeof(m->path) - 1);
	ck_assert_int_gt(n, 0);
	m->path[n] = 0;
	ck_assert_uint_gt(m->build_id_len, 0);
}

/* Known call sites: where() returns its return address, as the recorder
 * would have recorded it for a frame of call_here() or of the inlined
 * inline_here(). The asm after each call keeps it from being a tail call,
 * whose return address would be our caller's. */
static __attribute__((noinline)) uint64_t where(unsigned *linep, unsigned line)
{
	*linep = line;
	return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static unsigned call_line, inline_line, outer_line;

static __attribute__((noinline)) uint64_t call_here(void)
{
	uint64_t ip;

	ip = where(&call_line, __LINE__);
	__asm__ volatile("" : : "r"(ip) : "memory");
	return ip;
}

static inline __attribute__((always_inline)) uint64_t inline_here(unsigned *linep, unsigned line)
{
	uint64_t ip;

	*linep = line;
	ip = where(&inline_line, __LINE__);
	__asm__ volatile("" : : "r"(ip) : "memory");
	return ip;
}

static __attribute__((noinline)) uint64_t call_inline(void)
{
	uint64_t ip;

	ip = inline_here(&outer_line, __LINE__);
	__asm__ volatile("" : : "r"(ip) : "memory");
	return ip;
}

/* Stands for CPython's eval loop: its name is what the mixed view of a
 * stack looks for. */
uint64_t _PyEval_EvalFrameDefault(void);
__attribute__((noinline)) uint64_t _PyEval_EvalFrameDefault(void)
{
	static unsigned eval_line;
	uint64_t ip;

	ip = where(&eval_line, __LINE__);
	__asm__ volatile("" : : "r"(ip) : "memory");
	return ip;
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && !strcmp(s + n - m, tail);
}

/* --- tests -------------------------------------------------------------- */

START_TEST(test_no_module)
{
	struct lb *b = log_new();
	struct mod gone = { .base = 0x10000,
			    .lo = 0x10000,
			    .hi = 0x20000,
			    .path = "/nonexistent/dir/libgone.so",
			    .build_id = { 1, 0, 2, 0 },
			    .build_id_len = 4 };
	struct mod vdso = { .base = 0x30000, .lo = 0x30000, .hi = 0x31000, .path = "linux-vdso.so.1" };
	struct mod anon = { .base = 0x40000, .lo = 0x40000, .hi = 0x41000, .path = "" };
	mms_symbolizer_t *sym;
	mms_frame_t f[4];
	mms_log_t *log;
	char buf[128];

	log_module(b, &gone);
	log_module(b, &vdso);
	log_module(b, &anon);
	log = log_open(b);
	ck_assert_int_eq(mms_symbolizer_open(log, &sym), 0);

	/* In no module: only the ip. */
	ck_assert_int_eq(mms_symbolize(sym, 0x5, f, 4), 1);
	ck_assert_uint_eq(f[0].ip, 0x5);
	ck_assert_ptr_null(f[0].module);
	ck_assert_ptr_null(f[0].function);
	ck_assert_ptr_null(f[0].file);
	ck_assert_uint_eq(f[0].line, 0);
	ck_assert_int_eq(mms_frame_format(&f[0], buf, sizeof(buf)), 3);
	ck_assert_str_eq(buf, "0x5");
	ck_assert_int_eq(mms_symbolize(sym, 0x20000, f, 4), 1); /* hi is outside */
	ck_assert_ptr_null(f[0].module);

	/* A module whose file is gone: module and offset. */
	ck_assert_int_eq(mms_symbolize(sym, 0x10234, f, 4), 1);
	ck_assert_str_eq(f[0].module, "/nonexistent/dir/libgone.so");
	ck_assert_uint_eq(f[0].module_offset, 0x234);
	ck_assert_ptr_null(f[0].function);
	ck_assert_ptr_null(f[0].file);
	mms_frame_format(&f[0], buf, sizeof(buf));
	ck_assert_str_eq(buf, "libgone.so+0x234");

	/* The vdso has a name but no file; an anonymous module, neither. */
	ck_assert_int_eq(mms_symbolize(sym, 0x30010, f, 4), 1);
	mms_frame_format(&f[0], buf, sizeof(buf));
	ck_assert_str_eq(buf, "linux-vdso.so.1+0x10");
	ck_assert_int_eq(mms_symbolize(sym, 0x40010, f, 4), 1);
	ck_assert_ptr_null(f[0].module);
	ck_assert_uint_eq(f[0].module_offset, 0x10);

	/* Arguments. */
	ck_assert_int_eq(mms_symbolize(sym, 0x10234, NULL, 0), 0);
	ck_assert_int_eq(mms_symbolize(sym, 0x10234, NULL, 1), MMS_EUSAGE);
	ck_assert_int_eq(mms_symbolize(NULL, 0x10234, f, 1), MMS_EUSAGE);
	ck_assert_int_eq(mms_symbolizer_open(NULL, &sym), MMS_EUSAGE);
	mms_symbolizer_close(sym);
	mms_symbolizer_close(NULL);
	mms_log_close(log);
}
END_TEST

START_TEST(test_self)
{
	struct lb *b = log_new();
	mms_symbolizer_t *sym;
	mms_frame_t f[4], again[4];
	mms_log_t *log;
	struct mod self;
	char buf[4096], want[4096];
	uint64_t ip;
	int n;

	self_module(&self);
	log_module(b, &self);
	log = log_open(b);
	ck_assert_int_eq(mms_symbolizer_open(log, &sym), 0);

	ip = call_here();
	n = mms_symbolize(sym, ip, f, 4);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(f[0].ip, ip);
	ck_assert_str_eq(f[0].module, self.path);
	ck_assert_uint_eq(f[0].module_offset, ip - self.base);
	ck_assert_pstr_eq(f[0].function, "call_here");
	ck_assert_msg(f[0].file && ends_with(f[0].file, "/tests/unit/check-symbolize.c"), "file %s", f[0].file);
	ck_assert_uint_eq(f[0].line, call_line);
	ck_assert_int_eq(f[0].inlined, 0);
	snprintf(want, sizeof(want), "call_here (%s:%u)", f[0].file, call_line);
	ck_assert_int_eq(mms_frame_format(&f[0], buf, sizeof(buf)), (int)strlen(want));
	ck_assert_str_eq(buf, want);

	/* A second look comes from the cache: the same strings. */
	ck_assert_int_eq(mms_symbolize(sym, ip, again, 4), 1);
	ck_assert_ptr_eq(again[0].function, f[0].function);
	ck_assert_ptr_eq(again[0].file, f[0].file);

	/* An inlined call: the inlined function first, at the line inside
	 * it, then the function it was inlined into, at the call site. */
	ip = call_inline();
	n = mms_symbolize(sym, ip, f, 4);
	ck_assert_int_eq(n, 2);
	ck_assert_pstr_eq(f[0].function, "inline_here");
	ck_assert_uint_eq(f[0].line, inline_line);
	ck_assert_int_eq(f[0].inlined, 1);
	ck_assert_pstr_eq(f[1].function, "call_inline");
	ck_assert_msg(f[1].file && ends_with(f[1].file, "/tests/unit/check-symbolize.c"), "file %s", f[1].file);
	ck_assert_uint_eq(f[1].line, outer_line);
	ck_assert_int_eq(f[1].inlined, 0);
	ck_assert_uint_eq(f[1].ip, ip);
	ck_assert_uint_eq(f[1].module_offset, ip - self.base);
	/* Room for one frame: the innermost. */
	ck_assert_int_eq(mms_symbolize(sym, ip, again, 1), 1);
	ck_assert_pstr_eq(again[0].function, "inline_here");

	mms_symbolizer_close(sym);
	mms_log_close(log);
}
END_TEST

/* The file on disk is another build than the one recorded: no names from
 * it, only module+offset. Without a recorded build-id the file is
 * trusted. */
START_TEST(test_build_id_mismatch)
{
	struct lb *b = log_new();
	mms_symbolizer_t *sym;
	mms_frame_t f[4];
	mms_log_t *log;
	struct mod self;
	char buf[256], want[256];
	const char *base;
	uint64_t ip = call_here();

	self_module(&self);
	self.build_id[0] ^= 0xff;
	log_module(b, &self);
	log = log_open(b);
	ck_assert_int_eq(mms_symbolizer_open(log, &sym), 0);
	ck_assert_int_eq(mms_symbolize(sym, ip, f, 4), 1);
	ck_assert_ptr_null(f[0].function);
	ck_assert_ptr_null(f[0].file);
	ck_assert_str_eq(f[0].module, self.path);
	ck_assert_uint_eq(f[0].module_offset, ip - self.base);
	base = strrchr(self.path, '/') + 1;
	snprintf(want, sizeof(want), "%s+0x%llx", base, (unsigned long long)(ip - self.base));
	mms_frame_format(&f[0], buf, sizeof(buf));
	ck_assert_str_eq(buf, want);
	mms_symbolizer_close(sym);
	mms_log_close(log);

	b = log_new();
	self.build_id_len = 0;
	log_module(b, &self);
	log = log_open(b);
	ck_assert_int_eq(mms_symbolizer_open(log, &sym), 0);
	ck_assert_int_eq(mms_symbolize(sym, ip, f, 4), 1);
	ck_assert_pstr_eq(f[0].function, "call_here");
	mms_symbolizer_close(sym);
	mms_log_close(log);
}
END_TEST

/* Modules recorded later take the addresses they share with earlier ones
 * (a library dlclose'd and another loaded in its place). */
START_TEST(test_overlap)
{
	struct lb *b = log_new();
	struct mod a = { .base = 0x1000, .lo = 0x1000, .hi = 0x5000, .path = "/a/liba.so" };
	struct mod c = { .base = 0x3000, .lo = 0x3000, .hi = 0x4000, .path = "/c/libc2.so" };
	struct mod d = { .base = 0x8000, .lo = 0x8000, .hi = 0x9000, .path = "/d/libd.so" };
	struct mod e = { .base = 0x7000, .lo = 0x7000, .hi = 0x8800, .path = "/e/libe.so" };
	static const struct {
		uint64_t ip;
		const char *module;
		uint64_t off;
	} want[] = {
		{ 0xfff, NULL, 0 },
		{ 0x1000, "/a/liba.so", 0 },
		{ 0x2fff, "/a/liba.so", 0x1fff },
		{ 0x3000, "/c/libc2.so", 0 },
		{ 0x3fff, "/c/libc2.so", 0xfff },
		{ 0x4000, "/a/liba.so", 0x3000 },
		{ 0x4fff, "/a/liba.so", 0x3fff },
		{ 0x5000, NULL, 0 },
		{ 0x7000, "/e/libe.so", 0 },
		{ 0x8400, "/e/libe.so", 0x1400 },
		{ 0x8800, "/d/libd.so", 0x800 },
		{ 0x9000, NULL, 0 },
	};
	mms_symbolizer_t *sym;
	mms_frame_t f;
	mms_log_t *log;

	log_module(b, &a);
	log_module(b, &d);
	log_module(b, &c);
	log_module(b, &e);
	log = log_open(b);
	ck_assert_int_eq(mms_symbolizer_open(log, &sym), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_int_eq(mms_symbolize(sym, want[i].ip, &f, 1), 1);
		ck_assert_pstr_eq(f.module, want[i].module);
		if (want[i].module)
			ck_assert_uint_eq(f.module_offset, want[i].off);
	}
	mms_symbolizer_close(sym);
	mms_log_close(log);
}
END_TEST

START_TEST(test_format)
{
	mms_frame_t f = { .ip = 0xabc,
			  .function = "fn",
			  .file = "/src/a.c",
			  .line = 12,
			  .module = "/lib/libx.so",
			  .module_offset = 0x10 };
	char buf[64];

	ck_assert_int_eq(mms_frame_format(&f, buf, sizeof(buf)), 16);
	ck_assert_str_eq(buf, "fn (/src/a.c:12)");
	/* Like snprintf: cut, NUL-terminated, the needed length returned. */
	ck_assert_int_eq(mms_frame_format(&f, buf, 5), 16);
	ck_assert_str_eq(buf, "fn (");
	ck_assert_int_eq(mms_frame_format(&f, NULL, 0), 16);
	f.line = 0;
	mms_frame_format(&f, buf, sizeof(buf));
	ck_assert_str_eq(buf, "fn (libx.so+0x10)");
	f.module = NULL;
	mms_frame_format(&f, buf, sizeof(buf));
	ck_assert_str_eq(buf, "fn (0xabc)");
	f.function = NULL;
	mms_frame_format(&f, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0xabc");
	f.module = "libnoslash.so";
	mms_frame_format(&f, buf, sizeof(buf));
	ck_assert_str_eq(buf, "libnoslash.so+0x10");
	ck_assert_int_eq(mms_frame_format(NULL, buf, sizeof(buf)), MMS_EUSAGE);
}
END_TEST

/* Python frames (log version 5): PYCODE records name them; the mixed view
 * puts them where the eval loop ran them, each eval loop frame taking the
 * Python frames up to the first that began its run. */
static void log_pycode(struct lb *b, uint32_t id, const char *file, const char *name, uint32_t first)
{
	lb_begin(b, MMS_TAG_PYCODE, 10);
	lb_u(b, id);
	lb_str(b, file);
	lb_str(b, name);
	lb_u(b, first);
	lb_end(b);
}

START_TEST(test_python_frames)
{
	struct lb *b = log_new();
	struct mod self;
	mms_symbolizer_t *sym;
	mms_frame_t f[16];
	mms_log_t *log;
	uint64_t eval = _PyEval_EvalFrameDefault(), inner = call_here(), outer = call_inline();
	/* As recorded: Python frames innermost first, then C frames. leaf ran
	 * inline in mid's run of the eval loop; main began a run of its own. */
	uint64_t ips[] = { mms_pyframe(3, 31, 0), mms_pyframe(2, 21, 1), mms_pyframe(1, 11, 1), mms_pyframe(9, 0, 1),
			   inner, eval, eval, outer };
	uint64_t order[8];
	const char *want[] = { "call_here", "leaf", "Cls.mid", "main", "inline_here", "call_inline",
			       "<unknown Python code>" };
	char buf[128];
	int n;

	self_module(&self);
	log_module(b, &self);
	log_pycode(b, 1, "/app/main.py", "main", 10);
	log_pycode(b, 2, "/app/lib.py", "Cls.mid", 20);
	log_pycode(b, 3, "/app/lib.py", "leaf", 30);
	log = log_open(b);
	ck_assert_int_eq(mms_symbolizer_open(log, &sym), 0);

	ck_assert_int_eq(mms_symbolize(sym, ips[1], f, 4), 1);
	ck_assert_int_eq(f[0].python, 2);
	ck_assert_str_eq(f[0].function, "Cls.mid");
	ck_assert_str_eq(f[0].file, "/app/lib.py");
	ck_assert_uint_eq(f[0].line, 21);
	ck_assert_ptr_null(f[0].module);
	mms_frame_format(&f[0], buf, sizeof(buf));
	ck_assert_str_eq(buf, "Cls.mid (/app/lib.py:21)");
	ck_assert_int_eq(mms_symbolize(sym, ips[0], f, 4), 1);
	ck_assert_int_eq(f[0].python, 1);

	/* Mixed: the two eval loop frames give way to leaf and mid, then to
	 * main; the Python frame the recorded C frames did not reach (of an
	 * unknown code object) comes after them all. */
	n = mms_stack_frames(sym, ips, 8, MMS_STACK_MIXED, f, 16);
	ck_assert_int_eq(n, 7);
	for (int i = 0; i < n; i++)
		ck_assert_msg(f[i].function && !strcmp(f[i].function, want[i]), "frame %d: %s, not %s", i,
			      f[i].function ? f[i].function : "(null)", want[i]);
	ck_assert_int_eq(!!f[1].python + !!f[2].python + !!f[3].python + !!f[6].python, 4);
	ck_assert_int_eq(f[4].python, 0);
	/* The same order in place, one ip a frame. */
	memcpy(order, ips, sizeof(ips));
	ck_assert_int_eq(mms_stack_mixed(sym, order, 8), 6);
	ck_assert_uint_eq(order[0], inner);
	ck_assert_uint_eq(order[1], ips[0]);
	ck_assert_uint_eq(order[3], ips[2]);
	ck_assert_uint_eq(order[4], outer);
	ck_assert_uint_eq(order[5], ips[3]);

	/* Each kind alone. */
	n = mms_stack_frames(sym, ips, 8, MMS_STACK_PYTHON, f, 16);
	ck_assert_int_eq(n, 4);
	ck_assert_str_eq(f[0].function, "leaf");
	ck_assert_str_eq(f[2].function, "main");
	n = mms_stack_frames(sym, ips, 8, MMS_STACK_C, f, 16);
	ck_assert_int_eq(n, 5);
	ck_assert_str_eq(f[1].function, "_PyEval_EvalFrameDefault");
	/* A C stack is left as it is; bad arguments. */
	ck_assert_int_eq(mms_stack_mixed(sym, order + 4, 1), 1);
	ck_assert_int_eq(mms_stack_frames(sym, ips, 8, 3, f, 16), MMS_EUSAGE);
	ck_assert_int_eq(mms_stack_frames(NULL, ips, 8, 0, f, 16), MMS_EUSAGE);
	mms_symbolizer_close(sym);
	mms_log_close(log);
}
END_TEST

static Suite *symbolize_suite(void)
{
	Suite *s = suite_create("symbolize");
	TCase *tc = tcase_create("module maps");

	scratch_add(tc);
	tcase_add_test(tc, test_no_module);
	tcase_add_test(tc, test_self);
	tcase_add_test(tc, test_build_id_mismatch);
	tcase_add_test(tc, test_overlap);
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_python_frames);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(symbolize_suite());
	int failed;

	/* No network look-ups for debug information from a unit test. */
	unsetenv("DEBUGINFOD_URLS");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
