/* SPDX-License-Identifier: MIT */
/* _msmemscope.c: the C part of the msmemscope Python package: the
 * instrumentation API of msmemscope.h for Python, and the tracer that
 * writes msMemScope's python_trace_{TID}_{timestamp}.csv (the Python call
 * stacks are pystacks.c's).
 *
 * The API functions are looked up once, at import, among the symbols the
 * process already has (dlsym(RTLD_DEFAULT)): under the recorder they are
 * the preloaded recorder's; otherwise they are absent (or the no-op
 * library's) and every call returns at once. The module links nothing of
 * msmemscope, so it imports the same with and without the recorder. */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <Python.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pystacks.h"

static struct api {
	int (*recording)(void);
	void (*step)(void);
	void (*op_begin)(const char *name);
	void (*op_end)(void);
	void (*kernel_launch)(const char *name);
	void (*mark)(const char *name);
	uint64_t (*range_start)(const char *name);
	void (*range_end)(uint64_t id);
	void (*owner_push)(const char *tag);
	void (*owner_pop)(void);
	void (*owner_tag)(const void *ptr, const char *tag);
	void (*watch)(const void *ptr, size_t size, const char *name);
	void (*pool_alloc)(const char *pool, const void *ptr, size_t size, size_t total, size_t used);
	void (*pool_free)(const char *pool, const void *ptr, size_t size, size_t total, size_t used);
	void (*start)(void);
	void (*stop)(void);
	unsigned (*own_begin)(void);
	void (*own_end)(unsigned prev);
	unsigned (*import_begin)(void);
	void (*import_end)(unsigned prev);
	void (*optimizer_step)(void);
	void (*optimizer_key)(uint64_t key);
	void (*exit_sweep)(uint64_t end);
} api;

/* Whether the recorder records this process: its API is there and says so. */
static int recording(void)
{
	return api.recording && api.recording();
}

static void *sym(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

static void api_load(void)
{
	api.recording = (int (*)(void))sym("msmemscope_recording");
	/* Without msmemscope_recording() the symbols found are the no-op
	 * library's of an older msmemscope, or none: nothing to call. */
	if (!api.recording)
		return;
	api.step = (void (*)(void))sym("msmemscope_step");
	api.op_begin = (void (*)(const char *))sym("msmemscope_op_begin");
	api.op_end = (void (*)(void))sym("msmemscope_op_end");
	api.kernel_launch = (void (*)(const char *))sym("msmemscope_kernel_launch");
	api.mark = (void (*)(const char *))sym("msmemscope_mark");
	api.range_start = (uint64_t(*)(const char *))sym("msmemscope_range_start");
	api.range_end = (void (*)(uint64_t))sym("msmemscope_range_end");
	api.owner_push = (void (*)(const char *))sym("msmemscope_owner_push");
	api.owner_pop = (void (*)(void))sym("msmemscope_owner_pop");
	api.owner_tag = (void (*)(const void *, const char *))sym("msmemscope_owner_tag");
	api.watch = (void (*)(const void *, size_t, const char *))sym("msmemscope_watch");
	api.pool_alloc = (void (*)(const char *, const void *, size_t, size_t, size_t))sym("msmemscope_pool_alloc");
	api.pool_free = (void (*)(const char *, const void *, size_t, size_t, size_t))sym("msmemscope_pool_free");
	api.start = (void (*)(void))sym("msmemscope_start");
	api.stop = (void (*)(void))sym("msmemscope_stop");
	api.own_begin = (unsigned (*)(void))sym("msmemscope__own_begin");
	api.own_end = (void (*)(unsigned))sym("msmemscope__own_end");
	api.import_begin = (unsigned (*)(void))sym("msmemscope__import_begin");
	api.import_end = (void (*)(unsigned))sym("msmemscope__import_end");
	api.optimizer_step = (void (*)(void))sym("msmemscope__optimizer_step");
	api.optimizer_key = (void (*)(uint64_t))sym("msmemscope__optimizer_key");
	api.exit_sweep = (void (*)(uint64_t))sym("msmemscope__exit_sweep");
}

static PyObject *py_recording(PyObject *self, PyObject *unused)
{
	return PyBool_FromLong(recording());
}

/* The package's own work in the program's thread: what it allocates
 * between own_begin() and own_end(token) is marked msmemscope's
 * (MMS_RT_SELF), not the program's. */
static unsigned own_begin(void)
{
	return api.own_begin ? api.own_begin() : 0;
}

static void own_end(unsigned token)
{
	if (api.own_end)
		api.own_end(token);
}

/* _own_begin() and _own_end(token): the same for the package's Python code. */
static PyObject *py_own_begin(PyObject *self, PyObject *unused)
{
	return PyLong_FromUnsignedLong(own_begin());
}

static PyObject *py_own_end(PyObject *self, PyObject *arg)
{
	unsigned long prev = PyLong_AsUnsignedLong(arg);

	if (prev == (unsigned long)-1 && PyErr_Occurred())
		return NULL;
	own_end((unsigned)prev);
	Py_RETURN_NONE;
}

/* importlib's loading of a module, scoped: what is allocated while a
 * module's code (or an extension module's initialisation) runs is marked
 * as the module's state (MMS_RT_PYIMPORT), which CPython keeps: live at
 * exit, it is not the program's leak, however deep the import was in the
 * Python stack (the recorded frames show importlib only when it is among
 * the innermost N). A C function, so that tracebacks of an import that
 * fails show no frame of ours. */
static PyObject *load_orig;

static PyObject *scoped_load(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	unsigned prev = api.import_begin();
	PyObject *r = PyObject_Vectorcall(load_orig, args, (size_t)nargs, NULL);

	(void)self;
	api.import_end(prev);
	return r;
}

static PyMethodDef scoped_load_def = { "_load_unlocked", (PyCFunction)(void (*)(void))scoped_load, METH_FASTCALL,
				       "importlib's _load_unlocked, with msmemscope's import scope." };

/* wrap_load(function): the scoped version of importlib's _load_unlocked
 * to put in its place; the function itself when the recorder has no
 * scope (an older one) or one was made already. */
static PyObject *py_wrap_load(PyObject *self, PyObject *original)
{
	(void)self;
	if (!api.import_begin || !api.import_end || load_orig || !PyCallable_Check(original))
		return Py_NewRef(original);
	load_orig = Py_NewRef(original);
	return PyCFunction_New(&scoped_load_def, NULL);
}

/* A call with no argument. */
#define CALL0(pyname, field)                                               \
	static PyObject *pyname(PyObject *self, PyObject *unused)          \
	{                                                                  \
		if (api.field)                                             \
			api.field();                                       \
		Py_RETURN_NONE;                                            \
	}

/* A call with one str argument (a name). */
#define CALLS(pyname, field)                                               \
	static PyObject *pyname(PyObject *self, PyObject *arg)             \
	{                                                                  \
		const char *s;                                             \
                                                                           \
		if (!api.field)                                            \
			Py_RETURN_NONE;                                    \
		s = PyUnicode_AsUTF8(arg);                                 \
		if (!s)                                                    \
			return NULL;                                       \
		api.field(s);                                              \
		Py_RETURN_NONE;                                            \
	}

/* A call with one unsigned integer argument (an id). */
#define CALLU(pyname, field)                                           \
	static PyObject *pyname(PyObject *self, PyObject *arg)         \
	{                                                              \
		unsigned long long v = PyLong_AsUnsignedLongLong(arg); \
                                                                       \
		if (v == (unsigned long long)-1 && PyErr_Occurred())   \
			return NULL;                                   \
		if (api.field)                                         \
			api.field(v);                                  \
		Py_RETURN_NONE;                                        \
	}

CALL0(py_step, step)
CALL0(py_optimizer_step, optimizer_step)
CALL0(py_op_end, op_end)
CALL0(py_owner_pop, owner_pop)
CALL0(py_start, start)
CALL0(py_stop, stop)
CALLS(py_op_begin, op_begin)
CALLS(py_kernel_launch, kernel_launch)
CALLS(py_mark, mark)
CALLS(py_owner_push, owner_push)

static PyObject *py_range_start(PyObject *self, PyObject *arg)
{
	const char *s;

	if (!api.range_start)
		return PyLong_FromLong(0);
	s = PyUnicode_AsUTF8(arg);
	if (!s)
		return NULL;
	return PyLong_FromUnsignedLongLong(api.range_start(s));
}

CALLU(py_range_end, range_end)
CALLU(py_optimizer_key, optimizer_key)
CALLU(py_exit_sweep, exit_sweep)

/* watch_range(address, size, name): watches [address, address + size). */
static PyObject *py_watch_range(PyObject *self, PyObject *args)
{
	unsigned long long addr, size;
	const char *name;
	char msg[160];

	if (!PyArg_ParseTuple(args, "KKz", &addr, &size, &name))
		return NULL;
	if (!size) {
		PyErr_SetString(PyExc_ValueError, "msmemscope.watch(): size 0: an empty range cannot be watched");
		return NULL;
	}
	if (addr + size < addr) {
		/* PyErr_Format() knows no %llx before Python 3.12: snprintf(). */
		snprintf(msg, sizeof(msg),
			 "msmemscope.watch(): %llu bytes at 0x%llx go past the end of the address space (2**64)", size,
			 addr);
		PyErr_SetString(PyExc_ValueError, msg);
		return NULL;
	}
	if (api.watch)
		api.watch((const void *)(uintptr_t)addr, (size_t)size, name);
	Py_RETURN_NONE;
}

/* pool_alloc(pool, address, size, total, used) and pool_free(...): a
 * block a custom allocator of the program's handed out or took back
 * (msmemscope_pool_alloc(), msmemscope_pool_free()); pool None: "POOL".
 * The package checks the numbers. */
static PyObject *pool_call(PyObject *args, void (*fn)(const char *, const void *, size_t, size_t, size_t))
{
	unsigned long long addr, size, total, used;
	const char *pool;

	if (!PyArg_ParseTuple(args, "zKKKK", &pool, &addr, &size, &total, &used))
		return NULL;
	if (fn)
		fn(pool, (const void *)(uintptr_t)addr, (size_t)size, (size_t)total, (size_t)used);
	Py_RETURN_NONE;
}

static PyObject *py_pool_alloc(PyObject *self, PyObject *args)
{
	return pool_call(args, api.pool_alloc);
}

static PyObject *py_pool_free(PyObject *self, PyObject *args)
{
	return pool_call(args, api.pool_free);
}

/* owner_tag(address, tag): the live block containing address belongs to
 * owner tag (msmemscope_owner_tag). */
static PyObject *py_owner_tag(PyObject *self, PyObject *args)
{
	unsigned long long addr;
	const char *tag;

	if (!PyArg_ParseTuple(args, "Ks", &addr, &tag))
		return NULL;
	if (api.owner_tag)
		api.owner_tag((const void *)(uintptr_t)addr, tag);
	Py_RETURN_NONE;
}

/* buffer_range(obj): (address, size) of an object with the buffer
 * protocol (bytearray, memoryview, array.array, numpy arrays), or
 * TypeError. The address stays valid while obj is neither resized nor
 * freed. */
static PyObject *py_buffer_range(PyObject *self, PyObject *obj)
{
	Py_buffer view;
	PyObject *r;

	if (PyObject_GetBuffer(obj, &view, PyBUF_ANY_CONTIGUOUS) < 0)
		return NULL;
	r = Py_BuildValue("(Kn)", (unsigned long long)(uintptr_t)view.buf, view.len);
	PyBuffer_Release(&view);
	return r;
}

/* --- the tracer ------------------------------------------------------------
 * A profile function per thread (PyEval_SetProfile) that times every
 * Python and C function call between tracer start and stop, keeping the
 * rows in memory; stop writes them. Times are CLOCK_REALTIME ns, the clock
 * the log's event times are shown in. */

struct call {
	PyObject *func; /* a code object or a C function, a new reference */
	uint64_t start;
};

struct row {
	PyObject *func;
	uint64_t start, end;
	long tid;
};

static struct tracer {
	int on;
	struct call *stack;
	size_t depth, stack_cap;
	struct row *rows;
	size_t nrows, rows_cap;
	long tid;
} tr;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Makes room for element n of the tracer's array *p. The array is the
 * package's, not the program's: marked so (MMS_RT_SELF), no report calls
 * it the program's leak. */
static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
	unsigned own;
	size_t c;
	void *q;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 256;
	own = own_begin();
	q = PyMem_RawRealloc(*p, c * elem);
	own_end(own);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

static int profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	PyObject *func;
	struct call *c;
	struct row *r;

	if (mms_py_stacks_hooked())
		mms_py_stack_event(frame, what);
	switch (what) {
	case PyTrace_CALL:
		func = (PyObject *)PyFrame_GetCode(frame); /* a new reference */
		break;
	case PyTrace_C_CALL:
		func = arg;
		Py_INCREF(func);
		break;
	case PyTrace_RETURN:
	case PyTrace_C_RETURN:
	case PyTrace_C_EXCEPTION:
		/* Returns of calls made before start have no entry. */
		if (!tr.depth)
			return 0;
		c = &tr.stack[--tr.depth];
		if (grow((void **)&tr.rows, &tr.rows_cap, tr.nrows, sizeof(*tr.rows))) {
			Py_DECREF(c->func);
			return 0;
		}
		r = &tr.rows[tr.nrows++];
		r->func = c->func;
		r->start = c->start;
		r->end = now_ns();
		r->tid = tr.tid;
		return 0;
	default:
		return 0;
	}
	if (grow((void **)&tr.stack, &tr.stack_cap, tr.depth, sizeof(*tr.stack))) {
		Py_DECREF(func);
		return 0;
	}
	tr.stack[tr.depth].func = func;
	tr.stack[tr.depth].start = now_ns();
	tr.depth++;
	return 0;
}

static PyObject *py_tracer_start(PyObject *self, PyObject *unused)
{
	if (tr.on)
		Py_RETURN_NONE;
	tr.on = 1;
	tr.tid = (long)syscall(SYS_gettid);
	PyEval_SetProfile(profile, NULL);
	Py_RETURN_NONE;
}

/* FuncInfo of a row: "file:line(name)" for Python code, as a Python
 * profile shows it, "<built-in method name>" for C. */
static PyObject *func_info(PyObject *func)
{
	if (PyCode_Check(func)) {
		PyCodeObject *co = (PyCodeObject *)func;

#if PY_VERSION_HEX >= 0x030B0000
		return PyUnicode_FromFormat("%U:%d(%U)", co->co_filename, co->co_firstlineno, co->co_qualname);
#else
		return PyUnicode_FromFormat("%U:%d(%U)", co->co_filename, co->co_firstlineno, co->co_name);
#endif
	}
	if (PyCFunction_Check(func))
		return PyUnicode_FromFormat("<built-in method %s>", ((PyCFunctionObject *)func)->m_ml->ml_name);
	return PyObject_Str(func);
}

/* A CSV field: quoted when it holds a comma, a quote or a line break. */
static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void rows_drop(void)
{
	size_t i;

	for (i = 0; i < tr.nrows; i++)
		Py_DECREF(tr.rows[i].func);
	for (i = 0; i < tr.depth; i++)
		Py_DECREF(tr.stack[i].func);
	tr.nrows = tr.depth = 0;
}

/* The most files of one thread's name in one second: "_2" to "_999". */
#define TRACE_SEQ_MAX 999

/* Writes the tracer's rows into a new file and drops them: base + ".csv",
 * or base + "_N.csv" with the first N from 2 that no file has (two
 * sessions of a thread within one second share base), written into path
 * (size bytes). A file already there is never opened: O_EXCL. Returns 0,
 * or an errno value (path then names the last file tried). */
static int rows_write(char *path, size_t size, const char *base)
{
	FILE *f;
	size_t i;
	int fd, e, seq;

	fd = -1;
	for (seq = 1; seq <= TRACE_SEQ_MAX; seq++) {
		if (seq == 1)
			snprintf(path, size, "%s.csv", base);
		else
			snprintf(path, size, "%s_%d.csv", base, seq);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		e = errno;
		if (fd >= 0)
			close(fd);
		rows_drop();
		return e;
	}
	fputs("FuncInfo,StartTime(ns),EndTime(ns),Thread Id,Process Id\n", f);
	for (i = 0; i < tr.nrows; i++) {
		PyObject *s = func_info(tr.rows[i].func);
		const char *u = s ? PyUnicode_AsUTF8(s) : NULL;

		PyErr_Clear();
		csv_field(f, u ? u : "?");
		fprintf(f, ",%llu,%llu,%ld,%ld\n", (unsigned long long)tr.rows[i].start,
			(unsigned long long)tr.rows[i].end, tr.rows[i].tid, (long)getpid());
		Py_XDECREF(s);
	}
	rows_drop();
	return fclose(f) ? errno : 0;
}

/* tracer_stop(): stops tracing and writes the rows into
 * python_trace_{TID}_{timestamp}.csv in the run folder (the recorder's
 * MSMEMSCOPE_LOG_DIR), or the current folder when not recorded; into
 * python_trace_{TID}_{timestamp}_{N}.csv, N from 2, when a file of that
 * name is there already (an earlier session in the same second). Returns
 * the path, or None when the tracer was not on. Nothing of its own is
 * timed: the profile function goes first. What the writing allocates is
 * the package's (MMS_RT_SELF), not the program's. */
static PyObject *py_tracer_stop(PyObject *self, PyObject *unused)
{
	const char *dir = NULL;
	char base[4096], path[4096 + 16];
	time_t t = time(NULL);
	struct tm tm;
	unsigned own;
	int e;

	if (!tr.on)
		Py_RETURN_NONE;
	/* The Python stacks' hook takes over again. */
	PyEval_SetProfile(mms_py_stacks_hooked() ? mms_py_stack_profile : NULL, NULL);
	tr.on = 0;
	if (recording())
		dir = getenv("MSMEMSCOPE_LOG_DIR");
	if (!dir || !*dir)
		dir = ".";
	localtime_r(&t, &tm);
	snprintf(base, sizeof(base), "%s/python_trace_%ld_%04d%02d%02d%02d%02d%02d", dir, tr.tid, tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	own = own_begin();
	e = rows_write(path, sizeof(path), base);
	own_end(own);
	if (e) {
		errno = e;
		return PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
	}
	return PyUnicode_DecodeFSDefault(path);
}

static PyMethodDef methods[] = {
	{ "recording", py_recording, METH_NOARGS, "Whether the msmemscope recorder records this process." },
	{ "_own_begin", py_own_begin, METH_NOARGS,
	  "Marks what this thread allocates from now as msmemscope's own (the package's); returns a token." },
	{ "_own_end", py_own_end, METH_O, "Ends _own_begin(token)." },
	{ "step", py_step, METH_NOARGS, "Ends the current step." },
	{ "optimizer_step", py_optimizer_step, METH_NOARGS,
	  "The end of a PyTorch optimizer step: a step inferred where the program marks none (msmemscope.torch)." },
	{ "optimizer_key", py_optimizer_key, METH_O,
	  "optimizer_key(id): the optimizer whose step ends next on this thread (msmemscope.torch)." },
	{ "exit_sweep", py_exit_sweep, METH_O,
	  "exit_sweep(end): the package's sweep at exit begins (0) or ends (1) on this thread." },
	{ "op_begin", py_op_begin, METH_O, "Begins an operator launch." },
	{ "op_end", py_op_end, METH_NOARGS, "Ends the innermost operator launch of this thread." },
	{ "kernel_launch", py_kernel_launch, METH_O, "Records a kernel launch." },
	{ "mark", py_mark, METH_O, "Records a named instant." },
	{ "range_start", py_range_start, METH_O, "Starts a named range; returns its id." },
	{ "range_end", py_range_end, METH_O, "Ends the range of that id." },
	{ "owner_push", py_owner_push, METH_O, "Pushes an owner tag." },
	{ "owner_pop", py_owner_pop, METH_NOARGS, "Pops the innermost owner tag." },
	{ "owner_tag", py_owner_tag, METH_VARARGS, "owner_tag(address, tag): tags the live block there." },
	{ "watch_range", py_watch_range, METH_VARARGS, "watch_range(address, size, name): watches the range." },
	{ "pool_alloc", py_pool_alloc, METH_VARARGS,
	  "pool_alloc(pool, address, size, total, used): a block a custom allocator handed out." },
	{ "pool_free", py_pool_free, METH_VARARGS,
	  "pool_free(pool, address, size, total, used): a block a custom allocator took back." },
	{ "buffer_range", py_buffer_range, METH_O, "(address, size) of a contiguous buffer." },
	{ "start", py_start, METH_NOARGS, "Starts collection (deferred mode)." },
	{ "stop", py_stop, METH_NOARGS, "Stops collection (deferred mode)." },
	{ "tracer_start", py_tracer_start, METH_NOARGS, "Starts timing this thread's calls." },
	{ "tracer_stop", py_tracer_stop, METH_NOARGS, "Stops timing and writes the CSV; returns its path." },
	{ "wrap_load", py_wrap_load, METH_O, "importlib's _load_unlocked with the import scope." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_msmemscope", "The C part of the msmemscope package.", -1, methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__msmemscope(void);

PyMODINIT_FUNC PyInit__msmemscope(void)
{
	PyObject *m;

	api_load();
	mms_py_stacks_load(profile);
	m = PyModule_Create(&module);
	if (m && PyModule_AddFunctions(m, mms_py_stack_methods) < 0)
		Py_CLEAR(m);
	return m;
}
