#!/bin/sh
# SPDX-License-Identifier: MIT
# span.sh: a watch that covers more than its block, or no heap block,
# says so when it is set, and a stop at a free names the block really
# being freed (issue 16, defect 4). On tests/gdb/span: `a' watched with a
# SIZE of 100,000 bytes (its block is 256 bytes: the watch covers `b', the
# block after it) and a global int; launch "fill" changes `a'; free(b)
# ends the watch of `a' and gdb names b, not a.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session span "$progs/span" -ex 'break ready' -ex run -ex 'memscope watch a 100000' -ex 'memscope watch &counter' \
	-ex 'set $b = b' -ex 'set $a = a' -ex continue -ex 'memscope watch' -ex continue -ex 'memscope block $b' \
	-ex 'memscope watch' \
	-ex continue
expect span 'memscope: warning: the watch runs 99,744 bytes (97.4 KiB) past the end of its block' \
	"the watch that runs past its block"
expect span 'memscope: warning: 0xADDR is not in a live heap block the recorder knows of (a global, the stack, or memory allocated before the recorder started).' \
	"the watch outside the heap"
expect span '48 of 100000 bytes changed' "the change in a and in b, which the watch covers"
expect span 'ends: HOST block 0xADDR (256 bytes), in the watch, is being freed (not the watched block 0xADDR: the watch spans past it) outside any operator launch (step 1)' \
	"the stop at free(b) names b"
expect span 'freed block 0xADDR, 256 bytes, HOST, allocation 2' "b is the block freed"
expect_count span 'ends:' 1 "one stop at a free (the watch of a removed at free(b))"
expect span 'exited normally' "the program's end"
expect_rc "gdb's exit status"
# How the watch of `a' is checked: its 100,000 bytes span 25 pages of the
# heap, which the kernel tracks where it can (Linux 6.7; not under a
# seccomp filter): the listing says "pages", else "bytes".
if grep -q '^1  .* 100000        1  pages      a$' span.out; then
	note "the watch of a is checked by the pages the kernel marks written"
else
	expect span '100000        1  bytes      a' "the watch of a compared byte by byte (the kernel does not track pages here)"
	note "the kernel does not track written pages here ($(uname -r)): the watch was compared"
fi
