/* SPDX-License-Identifier: MIT */
/* pywalk.h: what the recorder (hooks/pystack.c) and the msmemscope
 * package (hooks/python/pystacks.c) share when the package reads a
 * thread's Python frames from the interpreter itself at an allocation
 * (msmemscope__py_walker), instead of keeping a shadow stack with a
 * profile hook. Every callback below runs inside an allocation hook: it
 * may not allocate, take a lock or need the GIL. */
#ifndef MMS_PYWALK_H
#define MMS_PYWALK_H

#include <stdint.h>

/* One Python frame of the calling thread, as the walker found it. */
struct mms_pyraw {
	const void *frame; /* the interpreter's frame (not a frame object) */
	const void *code;  /* its code object */
	const void *file;  /* the code's file name object: with name, tells a
			      code object from another one later at its address */
	const void *name;  /* the code's qualified name object */
	int32_t lasti;     /* the offset of its instruction, in code units */
	uint32_t entry;    /* it began a run of the eval loop (MMS_PYFRAME_ENTRY) */
};

#define MMS_PYNAME_MAX 1024 /* bytes of a file or function name kept, NUL included */

/* What the recorder writes of a code object into the log. */
struct mms_pycode_desc {
	char file[MMS_PYNAME_MAX];
	char name[MMS_PYNAME_MAX];
	int firstline;
	int pinned; /* the package holds a reference: the address is never reused */
};

/* The walker: the calling thread's innermost frames, innermost first, at
 * most max of them. Returns how many. */
typedef unsigned (*mms_pywalk_fn)(struct mms_pyraw *out, unsigned max);
/* Describes code (a frame of the calling thread runs it), taking a
 * reference when the thread holds the GIL. Returns 0, or -1. */
typedef int (*mms_pydescribe_fn)(const void *code, struct mms_pycode_desc *d);
/* The line of instruction lasti of code, 0 when unknown. */
typedef int (*mms_pyline_fn)(const void *code, int lasti);

#endif /* MMS_PYWALK_H */
