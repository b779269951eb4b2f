/* SPDX-License-Identifier: MIT */
/* pystacks.c: the Python call stacks of the msmemscope package's C part
 * (pystacks.h): the frames read from the interpreter for the recorder, or
 * kept for it by a profile hook. */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../pywalk.h"
#include "pystacks.h"

/* CPython 3.11 to 3.13 (with the GIL): the package reads a thread's
 * frames from the interpreter (its internal frame layout, from the headers
 * it was built with) instead of keeping them with a profile hook. */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000 && !defined(Py_GIL_DISABLED)
#define MMS_PY_WALK 1
#define Py_BUILD_CORE 1
#include "internal/pycore_frame.h"
#undef Py_BUILD_CORE
#endif

/* --- Python stacks -----------------------------------------------------------
 * With python_stack=N (msmemscope --call-stack=python:N) the recorder
 * records the innermost N Python frames with each event. On CPython 3.11
 * to 3.13 it asks this module for them at each allocation: walk_frames()
 * reads the calling thread's frames from the interpreter (no hook at all:
 * the program runs as fast as without Python stacks but for the
 * allocations' cost). Elsewhere (or with MSMEMSCOPE_PYTHON_FRAMES=hook)
 * the recorder keeps each thread's frames (hooks/pystack.c) and this
 * module's profile hook tells it of every call and return of Python code,
 * with the GIL held; the recorder reads the frames at an allocation
 * without the GIL. C calls are not its business: the C stack shows them.
 * The hook is installed on the importing thread (from 3.12 on every
 * thread running then), and a thread the threading module starts later
 * installs it at its first call (threading.setprofile). */

static struct pystack_api {
	uint32_t (*setup)(int (*line)(const void *frame), int (*lasti)(const void *frame), int (*on_thread)(void));
	int (*push)(const void *frame, const void *code, uintptr_t sp);
	void (*pop)(const void *frame);
	void (*reset)(void);
	uint32_t (*code)(const void *code, const char *file, const char *name, int firstline);
} pyst;
static uint32_t stack_depth;        /* python_stack, 0: no Python stacks */
static Py_tracefunc tracer_profile; /* the tracer's, which keeps the stacks too */
static int stack_walk;              /* the recorder reads the frames through walk_frames() */

#ifdef MMS_PY_WALK
/* How each version keeps a thread's frames: 3.13 has no cframe, and a
 * frame's code is its f_executable. */
#if PY_VERSION_HEX >= 0x030D0000
#define WALK_CODE(f) ((PyCodeObject *)(f)->f_executable)
#define WALK_FIRST(ts) ((ts)->current_frame)
#define WALK_FINALIZING() Py_IsFinalizing()
#define WALK_ATTACHED() PyThreadState_GetUnchecked()
#else
#define WALK_CODE(f) ((f)->f_code)
#define WALK_FIRST(ts) ((ts)->cframe ? (ts)->cframe->current_frame : NULL)
#define WALK_FINALIZING() _Py_IsFinalizing()
#define WALK_ATTACHED() _PyThreadState_UncheckedGet()
#endif

/* The calling thread's innermost Python frames, innermost first (pywalk.h).
 * Inside an allocation hook, perhaps without the GIL: reads the thread's
 * own frames (which only the thread itself changes), allocates nothing.
 * Frames still being set up, or being popped with their code object, are
 * left out. Once the interpreter finalizes (it frees other threads'
 * states), nothing is read. */
static unsigned walk_frames(struct mms_pyraw *out, unsigned max)
{
	PyThreadState *ts;
	_PyInterpreterFrame *f;
	unsigned n = 0;

	if (WALK_FINALIZING())
		return 0;
	ts = PyGILState_GetThisThreadState();
	if (!ts)
		return 0;
	for (f = WALK_FIRST(ts); f; f = f->previous) {
		PyCodeObject *co;

#if PY_VERSION_HEX >= 0x030C0000
		/* The frame each run of the eval loop puts under the first
		 * one it runs: that one began the run. */
		if (f->owner == FRAME_OWNED_BY_CSTACK) {
			if (n)
				out[n - 1].entry = 1;
			continue;
		}
#endif
		if (n == max)
			break;
		co = WALK_CODE(f);
		/* A frame being set up, or one whose code object is being
		 * freed (the frame's reference was its last: the frame pops,
		 * its names may be gone already). */
		if (!co || !PyCode_Check(co) || Py_REFCNT(co) <= 0 || _PyFrame_IsIncomplete(f))
			continue;
		out[n].frame = f;
		out[n].code = co;
		out[n].file = co->co_filename;
		out[n].name = co->co_qualname;
		out[n].lasti = _PyInterpreterFrame_LASTI(f);
#if PY_VERSION_HEX >= 0x030C0000
		out[n].entry = 0;
#else
		out[n].entry = f->is_entry;
#endif
		n++;
	}
	return n;
}

/* s as UTF-8 into buf (cap bytes, NUL included), cut at a character;
 * without allocating ("?" for what is not a ready string). */
static void str_copy(PyObject *s, char *buf, size_t cap)
{
	size_t n = 0;
	Py_ssize_t len, i;
	const void *data;
	int kind;

	if (!s || !PyUnicode_Check(s) || !PyUnicode_IS_READY(s)) {
		snprintf(buf, cap, "?");
		return;
	}
	len = PyUnicode_GET_LENGTH(s);
	data = PyUnicode_DATA(s);
	kind = PyUnicode_KIND(s);
	for (i = 0; i < len; i++) {
		Py_UCS4 c = PyUnicode_READ(kind, data, i);
		size_t w = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;

		if (n + w >= cap)
			break;
		if (w == 1) {
			buf[n++] = (char)c;
		} else if (w == 2) {
			buf[n++] = (char)(0xc0 | c >> 6);
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else if (w == 3) {
			buf[n++] = (char)(0xe0 | c >> 12);
			buf[n++] = (char)(0x80 | (c >> 6 & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else {
			buf[n++] = (char)(0xf0 | c >> 18);
			buf[n++] = (char)(0x80 | (c >> 12 & 0x3f));
			buf[n++] = (char)(0x80 | (c >> 6 & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		}
	}
	buf[n] = 0;
}

/* A code object's names for the log (pywalk.h). A thread that holds the
 * GIL (the interpreter's current state is its own) keeps the code object
 * alive for the rest of the run, so its address names it alone; one that
 * does not cannot touch its reference count. */
static int walk_describe(const void *code, struct mms_pycode_desc *d)
{
	PyCodeObject *co = (PyCodeObject *)code;
	PyThreadState *ts = PyGILState_GetThisThreadState();

	str_copy(co->co_filename, d->file, sizeof(d->file));
	str_copy(co->co_qualname, d->name, sizeof(d->name));
	d->firstline = co->co_firstlineno;
	d->pinned = 0;
	if (ts && ts == WALK_ATTACHED()) {
		Py_INCREF(co);
		d->pinned = 1;
	}
	return 0;
}

/* The line of instruction lasti of code: reads its line table, allocates
 * nothing. */
static int walk_line(const void *code, int lasti)
{
	return PyCode_Addr2Line((PyCodeObject *)code, lasti * (int)sizeof(_Py_CODEUNIT));
}
#endif

/* The line a frame is at: reads its code's line table, allocates
 * nothing, needs no GIL (a frame of the calling thread). */
static int frame_line(const void *frame)
{
	return PyFrame_GetLineNumber((PyFrameObject *)frame);
}

#if PY_VERSION_HEX >= 0x030B0000
/* The offset of its instruction: a frame that did not move keeps its line. */
static int frame_lasti(const void *frame)
{
	return PyFrame_GetLasti((PyFrameObject *)frame);
}
#else
#define frame_lasti NULL
#endif

/* s as UTF-8 (kept in s: compact ASCII strings hold it already), or
 * dflt; a pending exception stays as it was. */
static const char *utf8_or(PyObject *s, const char *dflt)
{
	PyObject *type, *value, *tb;
	const char *u;

	if (!s || !PyUnicode_Check(s))
		return dflt;
	PyErr_Fetch(&type, &value, &tb);
	u = PyUnicode_AsUTF8(s);
	if (!u)
		PyErr_Clear();
	PyErr_Restore(type, value, tb);
	return u ? u : dflt;
}

/* The first call of code: the recorder defines it in the log. The code
 * object is kept alive for the rest of the run, so its address names it
 * and nothing else. */
static void define_code(PyCodeObject *co)
{
	Py_INCREF(co);
#if PY_VERSION_HEX >= 0x030B0000
	PyObject *name = co->co_qualname;
#else
	PyObject *name = co->co_name;
#endif
	pyst.code(co, utf8_or(co->co_filename, "?"), utf8_or(name, "?"), co->co_firstlineno);
}

/* One event for the shadow stack. Inlined into each profile function:
 * the stack pointer it passes tells the frames that began a new run of
 * the eval loop (a different depth of the C stack) from those the loop
 * ran inline (the same). */
static inline __attribute__((always_inline)) void stack_event(PyFrameObject *frame, int what)
{
	if (what == PyTrace_CALL) {
		PyCodeObject *co = PyFrame_GetCode(frame);

		Py_DECREF(co); /* the frame holds it */
		if (pyst.push(frame, co, (uintptr_t)__builtin_frame_address(0)))
			define_code(co);
	} else if (what == PyTrace_RETURN) {
		pyst.pop(frame);
	}
}

int mms_py_stack_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	(void)obj;
	(void)arg;
	stack_event(frame, what);
	return 0;
}

void mms_py_stack_event(PyFrameObject *frame, int what)
{
	stack_event(frame, what);
}

int mms_py_stacks_hooked(void)
{
	return stack_depth && !stack_walk;
}

/* Whether the calling thread's profile function is still one that keeps
 * the shadow stack (the stacks' hook, or the tracer's, which calls it): a
 * profiler set from C replaces it unseen. Reads this thread's state
 * (PyGILState_GetThisThreadState: a thread-specific key), allocates
 * nothing, needs no GIL. */
static int stack_hooked(void)
{
	PyThreadState *ts = PyGILState_GetThisThreadState();

	return ts &&
	       (ts->c_profilefunc == mms_py_stack_profile || (tracer_profile && ts->c_profilefunc == tracer_profile));
}

/* Pushes the frames this thread runs already, outermost first, and
 * installs the hook on it. returning: the current frame is returning (the
 * event that installs the hook is its return), so its return is not the
 * hook's to see and it is left out. */
static void stack_install(int returning)
{
	PyFrameObject *f = PyEval_GetFrame(), *chain[256];
	int n = 0;

	if (f)
		f = returning ? PyFrame_GetBack(f) : (Py_INCREF(f), f);
	while (f && n < 256) {
		chain[n++] = f;
		f = PyFrame_GetBack(f);
	}
	Py_XDECREF(f);
	/* Their depths on the C stack are unknown (1): the recorder takes
	 * them to run in one run of the eval loop, and the first frame pushed
	 * above them to run in it too. */
	for (int i = n - 1; i >= 0; i--) {
		PyCodeObject *co = PyFrame_GetCode(chain[i]);

		if (pyst.push(chain[i], co, 1))
			define_code(co);
		Py_DECREF(co);
		Py_DECREF(chain[i]);
	}
	PyEval_SetProfile(mms_py_stack_profile, NULL);
}

/* threading.setprofile()'s function in a new thread, (frame, event,
 * arg): installs the hook there, which replaces it. */
static PyObject *py_stack_thread(PyObject *self, PyObject *args)
{
	PyObject *frame, *event, *arg;
	const char *ev;

	(void)self;
	if (!PyArg_ParseTuple(args, "OUO", &frame, &event, &arg))
		return NULL;
	ev = PyUnicode_AsUTF8(event);
	if (!ev)
		return NULL;
	/* (Frames read from the interpreter need no hook.) */
	if (mms_py_stacks_hooked())
		stack_install(!strcmp(ev, "return"));
	Py_RETURN_NONE;
}

static PyObject *sys_setprofile; /* the interpreter's sys.setprofile */

/* setprofile(function): sys.setprofile once the package replaced it: the
 * function replaces the hook on this thread, and the recorder forgets its
 * frames (they return unseen). A C function, so that it adds no Python
 * frame of its own to the stacks. */
static PyObject *py_setprofile(PyObject *self, PyObject *function)
{
	(void)self;
	if (mms_py_stacks_hooked())
		pyst.reset();
	return sys_setprofile ? PyObject_CallOneArg(sys_setprofile, function) : NULL;
}

/* wrap_setprofile(original): keeps the interpreter's sys.setprofile for
 * setprofile() above to call. */
static PyObject *py_wrap_setprofile(PyObject *self, PyObject *original)
{
	(void)self;
	Py_XSETREF(sys_setprofile, Py_NewRef(original));
	Py_RETURN_NONE;
}

/* stacks(): python_stack, 0 when Python frames are not recorded. */
static PyObject *py_stacks(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return PyLong_FromUnsignedLong(stack_depth);
}

/* stacks_hooked(): whether the Python stacks are kept by the profile hook
 * (threads then need it installed), not read from the interpreter. */
static PyObject *py_stacks_hooked(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return PyBool_FromLong(mms_py_stacks_hooked());
}

/* At import: gives the recorder the walker (CPython 3.11 to 3.13), or
 * installs the hook on this thread when the recorder asks for Python
 * frames (and on every thread from 3.12). MSMEMSCOPE_PYTHON_FRAMES=hook
 * keeps the hook where the walker could serve. */
void mms_py_stacks_load(Py_tracefunc tracer)
{
	tracer_profile = tracer;
#ifdef MMS_PY_WALK
	const char *how = getenv("MSMEMSCOPE_PYTHON_FRAMES");
	uint32_t (*walker)(mms_pywalk_fn, mms_pydescribe_fn, mms_pyline_fn);

	*(void **)&walker = dlsym(RTLD_DEFAULT, "msmemscope__py_walker");
	if (walker && !(how && !strcmp(how, "hook"))) {
		stack_depth = walker(walk_frames, walk_describe, walk_line);
		stack_walk = stack_depth != 0;
		return;
	}
#endif
	*(void **)&pyst.setup = dlsym(RTLD_DEFAULT, "msmemscope__py_setup");
	*(void **)&pyst.push = dlsym(RTLD_DEFAULT, "msmemscope__py_push");
	*(void **)&pyst.pop = dlsym(RTLD_DEFAULT, "msmemscope__py_pop");
	*(void **)&pyst.reset = dlsym(RTLD_DEFAULT, "msmemscope__py_reset");
	*(void **)&pyst.code = dlsym(RTLD_DEFAULT, "msmemscope__py_code");
	if (!pyst.setup || !pyst.push || !pyst.pop || !pyst.reset || !pyst.code)
		return;
	stack_depth = pyst.setup(frame_line, frame_lasti, stack_hooked);
	if (!stack_depth)
		return;
#if PY_VERSION_HEX >= 0x030C0000
	PyEval_SetProfileAllThreads(mms_py_stack_profile, NULL);
#endif
	stack_install(0);
}

PyMethodDef mms_py_stack_methods[] = {
	{ "stacks", py_stacks, METH_NOARGS, "python_stack: Python frames recorded per event, 0: none." },
	{ "stacks_hooked", py_stacks_hooked, METH_NOARGS, "Whether the Python stacks are kept by the profile hook." },
	{ "setprofile", py_setprofile, METH_O,
	  "sys.setprofile(function) with the stacks' hook: the stacks forget the thread's frames." },
	{ "wrap_setprofile", py_wrap_setprofile, METH_O, "Keeps the interpreter's sys.setprofile for setprofile()." },
	{ "stack_thread", py_stack_thread, METH_VARARGS, "threading.setprofile()'s: the stacks' hook for a thread." },
	{ NULL, NULL, 0, NULL },
};
