/* SPDX-License-Identifier: MIT */
/* runtime.c: what the runtimes keep for themselves, as the recorder marked
 * it (format.h: ALLOC_RT records, the META records "runtime_live" and
 * "freeres") or as the end of a replay tells it (an interpreter's state at
 * exit, PyTorch's CUDA cache): blocks that are not the program's leaks. */
#include <stdlib.h>
#include <string.h>

#include "exe.h"
#include "format.h"
#include "msmemscope/log.h"
#include "base-int.h"
#include "log-int.h"
#include "map-int.h"
#include "state-int.h"

_Static_assert((int)MMS_RUNTIME_LIBC == (int)MMS_RT_C && (int)MMS_RUNTIME_LIBCXX == (int)MMS_RT_CXX &&
		       (int)MMS_RUNTIME_TLS == (int)MMS_RT_THREAD && (int)MMS_RUNTIME_STDIO == (int)MMS_RT_STDIO &&
		       (int)MMS_RUNTIME_MSMEMSCOPE == (int)MMS_RT_SELF &&
		       (int)MMS_RUNTIME_LOADER == (int)MMS_RT_LOADER && (int)MMS_RUNTIME_CUDA == (int)MMS_RT_CUDA &&
		       (int)MMS_RUNTIME_PYIMPORT == (int)MMS_RT_PYIMPORT,
	       "the public runtime kinds are the format's");

MMS__EXPORT const char *mms_runtime_name(unsigned kind)
{
	static const char *const names[MMS_RUNTIME_COUNT] = {
		NULL,         "c",      "cxx",  "thread", "stdio",         "python", "msmemscope",
		"torch-cuda", "loader", "perl", "cuda",   "python-import", "node",   "jvm",
	};

	return kind < MMS_RUNTIME_COUNT ? names[kind] : NULL;
}

MMS__EXPORT const char *mms_runtime_what(unsigned kind)
{
	static const char *const what[MMS_RUNTIME_COUNT] = {
		NULL,
		"glibc or ld.so (or the library of an allocator that replaces malloc: tcmalloc, jemalloc), for "
		"itself, before main",
		"libstdc++, for itself, before main (its exception pool, iostream set-up)",
		"a thread's thread-local storage vector, allocated by pthread_create",
		"the buffer of stdin, stdout or stderr",
		"CPython's, at exit: the interpreter's state and objects still referenced, which it does not free "
		"by design",
		"msmemscope's own Python package (its tracer's rows, msmemscope.torch's tagging of tensors): there "
		"because the program was recorded",
		"PyTorch's CUDA memory: its caching allocator's segments (and the tensors in them still referenced "
		"at exit) and its cuBLAS and cuDNN handles' workspaces, kept for reuse by design, which the CUDA "
		"context frees at exit",
		"the dynamic loader's, for a library loaded with dlopen() and still loaded at exit (its link map, "
		"version and scope data), which dlclose() frees",
		"perl's, at exit: the interpreter's state (its values, hashes and compiled code), which perl frees "
		"only when built for debugging (PERL_DESTRUCT_LEVEL)",
		"the CUDA driver's (libcuda), for itself: its contexts, modules and streams, which it keeps until the "
		"process ends (cudaDeviceReset or cuCtxDestroy frees a context's)",
		"allocated while CPython loaded a module: the program's, and that module's state, CPython's, when live "
		"at exit",
		"Node.js's, at exit: V8's heap and isolate, libuv's loop and the libraries node brings, which it does "
		"not free when it exits",
		"the Java virtual machine's, at exit: its heap, code cache, metaspace and threads' state, which it "
		"does not free when it exits",
	};

	return kind < MMS_RUNTIME_COUNT ? what[kind] : NULL;
}

MMS__EXPORT const char *mms_runtime_what_live(unsigned kind)
{
	/* Those whose words tell of the exit; the others' are the same. */
	static const char *const what[MMS_RUNTIME_COUNT] = {
		[MMS_RUNTIME_PYTHON] = "CPython's: the state of the interpreter and of the modules it has loaded, "
				       "which it keeps while it runs",
		[MMS_RUNTIME_TORCH_CUDA] = "PyTorch's CUDA memory: its caching allocator's segments and its cuBLAS "
					   "and cuDNN handles' workspaces, kept for reuse by design",
		[MMS_RUNTIME_LOADER] = "the dynamic loader's, for a library loaded with dlopen() (its link map, "
				       "version and scope data), which dlclose() frees",
		[MMS_RUNTIME_PERL] = "perl's: the interpreter's state (its values, hashes and compiled code)",
		[MMS_RUNTIME_NODE] = "Node.js's: V8's heap and isolate, libuv's loop and the libraries node brings",
		[MMS_RUNTIME_JVM] = "the Java virtual machine's: its heap, code cache, metaspace and threads' state",
	};

	return kind < MMS_RUNTIME_COUNT && what[kind] ? what[kind] : mms_runtime_what(kind);
}

/* Whether file name b begins with one of the n prefixes. */
static int starts_any(const char *b, const char *const *prefixes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (mms_starts(b, prefixes[i]))
			return 1;
	return 0;
}

#define STARTS_ANY(b, names) starts_any((b), (names), sizeof(names) / sizeof((names)[0]))

int mms__loader_module(const char *path)
{
	const char *b = mms_base_name(path);

	return mms_starts(b, "ld-linux") || mms_starts(b, "ld.so") || mms_starts(b, "ld64.so");
}

/* A CPython interpreter: its executable, or a library it loaded. */
static int python_module(const char *path)
{
	return mms_python_exe(path) || mms_starts(mms_base_name(path), "libpython");
}

/* A perl interpreter's executable, or its library. */
static int perl_module(const char *path)
{
	return mms_perl_exe(path) || mms_starts(mms_base_name(path), "libperl.so");
}

/* Node.js, and the libraries it is built on and allocates through for
 * itself (V8 is in node or libnode); not a native addon (a *.node file):
 * that is the program's code. */
static int node_module(const char *path)
{
	static const char *const names[] = { "libnode.so",   "libuv.so",    "libicu",        "libssl.so",
					     "libcrypto.so", "libcares.so", "libnghttp2.so", "libnghttp3.so",
					     "libbrotli",    "libz.so",     "libllhttp.so",  "libada.so" };
	const char *b = mms_base_name(path);

	return STARTS_ANY(b, names) || mms_node_exe(path);
}

/* The Java virtual machine's libraries: a JDK's (in /usr/lib/jvm on
 * Debian), or by name for one unpacked elsewhere; not a JNI library of
 * the program's. */
static int jvm_module(const char *path)
{
	static const char *const names[] = {
		"libjvm.so",    "libjli.so",       "libjava.so",    "libzip.so",    "libnio.so",        "libnet.so",
		"libverify.so", "libjimage.so",    "libmanagement", "libextnet.so", "libinstrument.so", "libattach.so",
		"libprefs.so",  "libsyslookup.so", "libj2",         "libjsvml.so"
	};
	const char *b = mms_base_name(path);

	return STARTS_ANY(b, names) || strstr(path, "/lib/jvm/") != NULL;
}

/* The C and C++ runtime's own libraries. */
static int c_runtime_module(const char *path)
{
	static const char *const names[] = { "libc.so", "libstdc++.so", "libgcc_s.so", "libm.so", "libpthread.so",
					     "libdl.so" };
	const char *b = mms_base_name(path);

	return STARTS_ANY(b, names) || mms__loader_module(path);
}

/* The CUDA driver (libcuda), and the libraries it loads for itself
 * (libnvidia-ptxjitcompiler, libnvidia-nvvm, ...). */
static int cuda_driver_module(const char *path)
{
	const char *b = mms_base_name(path);

	return mms_starts(b, "libcuda.so") || mms_starts(b, "libnvidia-");
}

/* PyTorch's CUDA libraries: libc10_cuda, whose caching allocator holds
 * most of a PyTorch program's device memory, and libtorch_cuda, whose
 * pools of cuBLAS and cuDNN handles keep their workspaces. */
static int torch_cuda_module(const char *path)
{
	const char *b = mms_base_name(path);

	return mms_starts(b, "libc10_cuda.so") || mms_starts(b, "libtorch_cuda.so");
}

void mms__runtime_module_seen(mms_log_t *log, const char *path)
{
	log->python_modules += mms_starts(mms_base_name(path), "libpython");
	log->torch_cuda_modules += torch_cuda_module(path);
	log->cuda_modules += mms_starts(mms_base_name(path), "libcuda.so");
	log->jvm_modules += mms_starts(mms_base_name(path), "libjvm.so");
}

void mms__runtime_exe_seen(mms_log_t *log, const char *path)
{
	log->python_exe = python_module(path);
	log->perl_exe = mms_perl_exe(path);
	log->node_exe = mms_node_exe(path);
	log->jvm_exe = mms_jvm_exe(path);
}

/* Whether the log is a CPython interpreter's. */
static int python_process(const mms_log_t *log)
{
	return log->python_modules || log->python_exe;
}

/* Whether the log is a perl interpreter's: its executable (a program
 * that embeds libperl frees its interpreters as it sees fit, and what it
 * keeps at exit stays its own). */
static int perl_process(const mms_log_t *log)
{
	return log->perl_exe;
}

/* The questions allocated_by() answers, each with 2 bits of a memo byte. */
enum { BY_PYTHON, BY_TORCH_CUDA, BY_PERL, BY_CUDA, BY_NODE, BY_JVM };

/* The path of the module that holds ip (the last recorded, where two
 * overlap), or NULL: found in memo's map of the modules, made at its
 * first use (NULL memo, or no memory for the map: each module tried). */
static const char *module_path(const mms_log_t *log, struct mms__rtmemo *memo, uint64_t ip)
{
	int nmods = mms_log_module(log, 0, NULL);
	mms_module_t m;
	uint64_t replaced;
	size_t i;

	if (memo && !memo->mods_ready) {
		memo->mods_ready = 1;
		for (int k = 0; k < nmods && memo->mods_ready > 0; k++)
			if (!mms_log_module(log, (size_t)k, &m) && m.lo < m.hi &&
			    mms__ivset_add_val(&memo->mods, m.lo, m.hi, (uint64_t)k, &replaced))
				memo->mods_ready = -1;
	}
	if (memo && memo->mods_ready > 0) {
		i = mms__ivset_find(&memo->mods, ip);
		return i != (size_t)-1 && !mms_log_module(log, memo->mods.iv[i].val, &m) ? m.path : NULL;
	}
	for (int k = nmods - 1; k >= 0; k--)
		if (!mms_log_module(log, (size_t)k, &m) && ip >= m.lo && ip < m.hi)
			return m.path;
	return NULL;
}

/* Walks b's allocation stack, innermost frame first: 1 at the first frame
 * in a module `owner` names, 0 at the first in a module that neither it
 * nor `through` names (other code allocated); `neither` when the stack
 * ends (or was not recorded) before either. Python frames are in no
 * module. The answer for b's stack is kept in memo (NULL: none) as
 * question `which`. */
static int allocated_by(const mms_log_t *log, struct mms__rtmemo *memo, unsigned which, const struct mms__blk *b,
			int (*owner)(const char *), int (*through)(const char *), int neither)
{
	uint64_t ips[32];
	int64_t ix = b->stack && memo ? mms__log_stack_ix(log, b->stack) : -1;
	const char *path;
	int depth, r;

	if (ix >= 0 && (uint64_t)ix < memo->len && (memo->by_stack[ix] >> (2 * which) & 3))
		return (memo->by_stack[ix] >> (2 * which) & 3) - 1;
	r = -1; /* no frame in either yet */
	depth = b->stack ? mms__log_stack(log, b->stack, ips, 32) : 0;
	for (int i = 0; i < depth && i < 32 && r < 0; i++) {
		if (mms_is_pyframe(ips[i]) || !(path = module_path(log, memo, ips[i])))
			continue;
		if (owner(path))
			r = 1;
		else if (!through(path))
			r = 0;
	}
	if (r < 0)
		r = neither;
	if (ix >= 0 && (uint64_t)ix >= memo->len && (uint64_t)ix < log->nstacks) {
		size_t len = log->nstacks;
		uint16_t *p = realloc(memo->by_stack, len * sizeof(*p));

		if (p) {
			memset(p + memo->len, 0, (len - memo->len) * sizeof(*p));
			memo->by_stack = p;
			memo->len = len;
		}
	}
	if (ix >= 0 && (uint64_t)ix < memo->len)
		memo->by_stack[ix] |= (uint16_t)((r + 1) << (2 * which));
	return r;
}

void mms__rtmemo_free(struct mms__rtmemo *memo)
{
	free(memo->by_stack);
	mms__ivset_free(&memo->mods);
	memset(memo, 0, sizeof(*memo));
}

/* Whether the innermost frame of b's recorded allocation stack is in the
 * dynamic loader: what ld.so allocates after start-up (in dlopen()) is
 * the state of a library it loaded, freed by dlclose(); live at exit, the
 * library is still loaded (or ld.so kept it): not the program's leak,
 * whichever code called dlopen(). The recorder marks such blocks itself
 * (MMS_RT_LOADER) from format 6 on; this tells them in older logs
 * recorded with stacks. */
static int loader_allocated(const mms_log_t *log, const struct mms__blk *b)
{
	uint64_t ip;

	/* The loader is never unloaded: no other module holds its range. */
	if (log->loader_hi <= log->loader_lo || !b->stack || mms__log_stack(log, b->stack, &ip, 1) < 1)
		return 0;
	return ip >= log->loader_lo && ip < log->loader_hi;
}

/* Whether b's recorded Python frames show the import machinery
 * (importlib's frozen modules): the block was allocated while a module
 * was imported, by its top-level code or an extension module's
 * initialisation. The innermost 128 frames are looked at (the Python
 * frames come first). */
static int allocated_in_import(const mms_log_t *log, const struct mms__blk *b)
{
	uint64_t ips[128];
	const char *file, *name;
	uint32_t first;
	int n = b->stack ? mms__log_stack(log, b->stack, ips, 128) : 0;

	for (int i = 0; i < n; i++)
		if (mms_is_pyframe(ips[i]) && !mms__log_pycode(log, mms_pyframe_code(ips[i]), &file, &name, &first) &&
		    file && !strncmp(file, "<frozen importlib", 17))
			return 1;
	return 0;
}

/* A block live at exit in a CPython interpreter: the interpreter's, unless
 * its stack shows code that is neither the interpreter nor the C runtime
 * (an extension module, the program's own library) allocating it after
 * the imports: what a module allocated while it was imported is its
 * state, kept as long as the module (CPython never unloads one), as the
 * loader's is for a library. A block whose stack tells neither (none was
 * recorded) is CPython's in a Python executable only: a program that
 * embeds libpython (gdb, perf, an editor) keeps its own blocks beside the
 * interpreter's, and they stay its own (as the JVM's rule). */
static unsigned python_at_end(const mms_log_t *log, struct mms__rtmemo *memo, const struct mms__blk *b)
{
	return allocated_by(log, memo, BY_PYTHON, b, python_module, c_runtime_module, log->python_exe) ||
			       allocated_in_import(log, b)
		       ? MMS_RUNTIME_PYTHON
		       : 0;
}

/* A block live at exit in a perl interpreter: the interpreter's, unless
 * its stack shows code that is neither perl nor the C runtime (an XS
 * module, a library it loaded) allocating it. */
static unsigned perl_at_end(const mms_log_t *log, struct mms__rtmemo *memo, const struct mms__blk *b)
{
	return allocated_by(log, memo, BY_PERL, b, perl_module, c_runtime_module, 1) ? MMS_RUNTIME_PERL : 0;
}

/* A block live at exit in Node.js (its executable): node's, unless its
 * stack shows code that is neither node (and the libraries it brings)
 * nor the C runtime allocating it: a native addon's own malloc. */
static unsigned node_at_end(const mms_log_t *log, struct mms__rtmemo *memo, const struct mms__blk *b)
{
	return allocated_by(log, memo, BY_NODE, b, node_module, c_runtime_module, 1) ? MMS_RUNTIME_NODE : 0;
}

/* A block live at exit in a process with a Java virtual machine: the
 * JVM's when its stack shows the JVM's libraries allocating it (past the
 * C runtime); in a Java launcher, also when nothing was recorded. A JNI
 * library's own malloc, or a program that embeds the JVM allocating, is
 * the program's. */
static unsigned jvm_at_end(const mms_log_t *log, struct mms__rtmemo *memo, const struct mms__blk *b)
{
	return allocated_by(log, memo, BY_JVM, b, jvm_module, c_runtime_module, log->jvm_exe) ? MMS_RUNTIME_JVM : 0;
}

/* A HOST block or mapping in a process that loaded the CUDA driver:
 * the driver's when the first frame of its recorded stack outside the C
 * runtime is in the driver (what it allocated through strdup() or
 * regcomp(); what it allocated itself the recorder marked already, with
 * or without stacks). */
static unsigned cuda_at_end(const mms_log_t *log, struct mms__rtmemo *memo, const struct mms__blk *b)
{
	return log->cuda_modules && b->stack &&
			       allocated_by(log, memo, BY_CUDA, b, cuda_driver_module, c_runtime_module, 0)
		       ? MMS_RUNTIME_CUDA
		       : 0;
}

/* The CUDA runtime and driver, which every device allocation goes
 * through, the CUDA libraries that allocate for their handles (a cuBLAS
 * handle's workspace, cuDNN's, cuFFT's plans, NCCL's buffers), and the C
 * runtime. */
static int cuda_or_c_module(const char *path)
{
	static const char *const names[] = { "libcudart.so", "libcuda.so",      "libcublas",   "libcudnn",
					     "libcufft",     "libcurand",       "libcusparse", "libcusolver",
					     "libnccl",      "libnvJitLink.so", "libnvrtc.so" };
	const char *b = mms_base_name(path);

	return STARTS_ANY(b, names) || c_runtime_module(path);
}

/* A DEVICE block live at exit: PyTorch's when the process loaded its
 * CUDA libraries and the block's stack, past the CUDA runtime, the CUDA
 * libraries and the C runtime, shows them (or shows nothing: recorded
 * without stacks); the program's when the stack shows other code
 * allocating (a program's own cuBLAS handle never destroyed). */
static unsigned device_at_end(const mms_log_t *log, struct mms__rtmemo *memo, const struct mms__blk *b)
{
	return log->torch_cuda_modules &&
			       allocated_by(log, memo, BY_TORCH_CUDA, b, torch_cuda_module, cuda_or_c_module, 1)
		       ? MMS_RUNTIME_TORCH_CUDA
		       : 0;
}

/* A block live at the end of a whole log of an interpreter or a virtual
 * machine (CPython, perl's heap blocks, Node.js, the JVM): its state at
 * exit, as each tells. */
static unsigned vm_at_end(const mms_log_t *log, struct mms__rtmemo *memo, const struct mms__blk *b)
{
	if (!log->info.complete)
		return 0;
	if (python_process(log))
		return python_at_end(log, memo, b);
	if (b->mem != MMS_MEM_MMAP && perl_process(log))
		return perl_at_end(log, memo, b);
	if (log->node_exe)
		return node_at_end(log, memo, b);
	return log->jvm_modules ? jvm_at_end(log, memo, b) : 0;
}

unsigned mms__blk_runtime_at_end(const struct mms__state *st, struct mms__rtmemo *memo, const struct mms__blk *b)
{
	const mms_log_t *log = st->log;
	const uint8_t *p, *end;
	const char *v;
	uint64_t kind, addr;
	size_t len;

	/* A program's pool is its own, but for PyTorch's caching allocator
	 * (msmemscope.torch): its tensors still referenced when the
	 * interpreter exited, which it does not free by design. */
	if (b->mem == MMS_MEM_POOL)
		return log->info.complete && mms_starts(mms__blk_origin(st, b)->pool, MMS_TORCH_POOL)
			       ? MMS_RUNTIME_TORCH_CUDA
			       : 0;
	/* Not CPython's, whatever the process: a CUDA runtime's or the
	 * program's. */
	if (b->mem == MMS_MEM_DEVICE)
		return log->info.complete ? device_at_end(log, memo, b) : 0;
	/* What a module's import allocated: its state, which CPython keeps
	 * (format 11: the msmemscope package's scope around the loading). */
	if (b->runtime == MMS_RT_PYIMPORT)
		return MMS_RUNTIME_PYTHON;
	if (b->runtime)
		return b->runtime;
	if (cuda_at_end(log, memo, b))
		return MMS_RUNTIME_CUDA;
	/* The interpreters' own mappings (pymalloc's arenas, V8's heap, the
	 * Java heap). */
	if (b->mem == MMS_MEM_MMAP)
		return vm_at_end(log, memo, b);
	/* (kind, address) pairs of blocks live at exit, written when no
	 * freeres could run. */
	if (!mms_log_meta(log, "runtime_live", &v, &len)) {
		p = (const uint8_t *)v;
		end = p + len;
		while (!mms_get_u(&p, end, &kind) && !mms_get_u(&p, end, &addr))
			if (addr == b->addr && kind < MMS_RUNTIME_COUNT)
				return (unsigned)kind;
	}
	if (loader_allocated(log, b))
		return MMS_RUNTIME_LOADER;
	return vm_at_end(log, memo, b);
}
