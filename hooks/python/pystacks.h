/* SPDX-License-Identifier: MIT */
/* pystacks.h: the Python call stacks of the msmemscope package's C part
 * (pystacks.c), for the module's other part (_msmemscope.c). */
#ifndef MMS_PY_PYSTACKS_H
#define MMS_PY_PYSTACKS_H

#include <Python.h>

#define MMS_PY_HIDDEN __attribute__((visibility("hidden")))

/* At import: gives the recorder the frame walker, or installs the
 * profile hook, as the recorder's python_stack asks. tracer: the tracer's
 * profile function, which keeps the stacks too while it runs in the
 * hook's place (mms_py_stack_event). */
void mms_py_stacks_load(Py_tracefunc tracer) MMS_PY_HIDDEN;
/* Whether the stacks are kept by the profile hook (not read from the
 * interpreter): a profile function in its place must keep them. */
int mms_py_stacks_hooked(void) MMS_PY_HIDDEN;
/* The hook, and its work for one profile event. */
int mms_py_stack_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) MMS_PY_HIDDEN;
void mms_py_stack_event(PyFrameObject *frame, int what) MMS_PY_HIDDEN;
/* The module's functions of the stacks (stacks, stacks_hooked,
 * setprofile, wrap_setprofile, stack_thread). */
extern PyMethodDef mms_py_stack_methods[] MMS_PY_HIDDEN;

#endif
