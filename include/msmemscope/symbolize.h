/* SPDX-License-Identifier: MIT */
/* msmemscope/symbolize.h: name the frames of recorded C stacks (function,
 * file:line) with libdw. */
#ifndef MSMEMSCOPE_API_SYMBOLIZE_H
#define MSMEMSCOPE_API_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "msmemscope/log.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- symbolization (symbolize.c) ---------------------------------------
 * Turns the instruction pointers of recorded C stacks into function, file
 * and line with libdw, over the module map recorded in the log (so it is
 * right for PIE executables and dlopen'ed libraries), including inlined
 * frames. Debug information comes from the module's file or from the
 * standard places (/usr/lib/debug/.build-id, .gnu_debuglink). Without it a
 * frame still names the ELF symbol, its module and the offset in it; a
 * file whose build-id differs from the recorded one (rebuilt since) is not
 * read at all, so names never come from the wrong build. Results are
 * cached per address. A symbolizer is used by one thread at a time. */
typedef struct mms_symbolizer mms_symbolizer_t;

typedef struct mms_frame {
	uint64_t ip;            /* the address as recorded (a return address) */
	const char *function;   /* demangled name, or NULL when unknown */
	const char *file;       /* source file as DWARF names it (a relative
	                           name is relative to the compilation
	                           directory), or NULL */
	uint32_t line;          /* source line, 0 when unknown */
	const char *module;     /* path of the module holding ip as recorded,
	                           or NULL (no module, or one without a path) */
	uint64_t module_offset; /* ip - the module's load bias */
	int inlined;            /* 1: inlined into the frame that follows */
	/* 1: a Python frame (recorded with --call-stack=python:N, log
	 * version 5): function is the code's qualified name, file its file as
	 * the interpreter named it, line the line it was running (0: unknown);
	 * module is NULL. ip is the frame as recorded (mms_is_pyframe()).
	 * 2: the same, the first frame of a run of the interpreter's eval
	 * loop (see mms_stack_mixed()). */
	int python;
} mms_frame_t;

/* Opens a symbolizer over log's modules; module files are opened only when
 * an address in them is first symbolized. Where recorded modules overlap
 * (a library unloaded and another loaded at its addresses) the one
 * recorded later is used. Returns 0 and sets *out, or a negative code. The
 * log must outlive it. Free with mms_symbolizer_close(). */
int mms_symbolizer_open(const mms_log_t *log, mms_symbolizer_t **out);
void mms_symbolizer_close(mms_symbolizer_t *sym);
/* Symbolizes one recorded ip into at most max frames, innermost inlined
 * function first and the function that contains them last; the source
 * position is that of the call before the return address. Returns the
 * number of frames filled (at least 1 when max >= 1: an unknown address
 * gets a frame with only ip, and module when known; 0 when max is 0), or
 * a negative code (-ENOMEM, MMS_EUSAGE). Strings belong to the symbolizer
 * and live until it is closed. */
int mms_symbolize(mms_symbolizer_t *sym, uint64_t ip, mms_frame_t *frames, size_t max);
/* Whether frame ip of a recorded stack is a Python frame (log version 5):
 * such frames are not addresses, and a stack holds its Python frames
 * first (innermost first), then its C frames. */
static inline int mms_ip_is_python(uint64_t ip)
{
	return (ip >> 63) != 0;
}

/* Which frames of a stack mms_stack_frames() gives. */
enum mms_stack_view {
	/* The C frames, with the Python frames in place of the interpreter's
	 * eval loop frames (_PyEval_EvalFrameDefault) that ran them; Python
	 * frames beyond the recorded C frames follow them. A stack without
	 * Python frames is its C frames. */
	MMS_STACK_MIXED = 0,
	MMS_STACK_C = 1,      /* the C frames only */
	MMS_STACK_PYTHON = 2, /* the Python frames only */
};

/* Symbolizes the n frames at ips (a stack from mms_log_stack(),
 * innermost first) as view asks into at most max frames, innermost first
 * (an address's inlined functions first, as mms_symbolize()). Returns the
 * number of frames filled, or a negative code. Strings belong to the
 * symbolizer. */
int mms_stack_frames(mms_symbolizer_t *sym, const uint64_t *ips, size_t n, int view, mms_frame_t *out, size_t max);

/* Puts the n frames at ips (a stack from mms_log_stack()) in the mixed
 * order of MMS_STACK_MIXED, in place: the C frames innermost first, each
 * eval loop frame replaced by the Python frames it ran, the Python frames
 * the C frames did not reach last. For callers that symbolize frame by
 * frame (mms_symbolize()). Returns the new number of frames (at most n),
 * or a negative code (-ENOMEM, MMS_EUSAGE). A stack without Python frames
 * is left as it is. */
int mms_stack_mixed(mms_symbolizer_t *sym, uint64_t *ips, size_t n);

/* Writes one frame as text into buf (always NUL-terminated when len > 0):
 * "function (file:line)", "function (module+0xoff)" or "module+0xoff"
 * (module as its file name), "function (0xip)", or "0xip" when nothing is
 * known. Returns the length it needed, like snprintf, or MMS_EUSAGE. */
int mms_frame_format(const mms_frame_t *frame, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* MSMEMSCOPE_API_SYMBOLIZE_H */
