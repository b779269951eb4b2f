/* SPDX-License-Identifier: MIT */
/* exe.h: the interpreters and virtual machines known by their executable's
 * name, which keep their state to the end of the process (CPython, perl,
 * Node.js, the JVM): the reader calls what they hold at exit theirs
 * (replay/core/runtime.c), and without C stacks, every heap block live
 * then, so the recorder does not scan their memory at exit for pointers
 * (hooks/reach.c): no verdict would be asked of it. */
#ifndef MMS_EXE_H
#define MMS_EXE_H

#include <string.h>

/* The file name of path. */
static inline const char *mms_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static inline int mms_starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* A CPython interpreter's executable ("python3", "python3.11"). */
static inline int mms_python_exe(const char *path)
{
	return mms_starts(mms_base_name(path), "python");
}

/* perl's executable: "perl", or a versioned name ("perl5.36.0"); not a
 * program whose name begins so ("perlin"). */
static inline int mms_perl_exe(const char *path)
{
	const char *b = mms_base_name(path);
	size_t n = strlen(b);

	return !strcmp(b, "perl") || (n >= 5 && !strncmp(b, "perl5", 5) && strspn(b + 5, "0123456789.") == n - 5);
}

/* Node.js's executable. */
static inline int mms_node_exe(const char *path)
{
	const char *b = mms_base_name(path);

	return !strcmp(b, "node") || !strcmp(b, "nodejs");
}

/* A Java launcher (java, javac, ... of a JDK, or one named java). */
static inline int mms_jvm_exe(const char *path)
{
	return strstr(path, "/lib/jvm/") || !strcmp(mms_base_name(path), "java");
}

#endif /* MMS_EXE_H */
