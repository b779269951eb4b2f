#!/bin/sh
# SPDX-License-Identifier: MIT
# fork.sh: following a fork child (follow-fork-mode child), the memscope
# commands answer from the child's own log, which its recorder writes from
# its first event, and say so; before that event they say the child has
# recorded nothing yet (not that the recorder could not write its log).
# The parent, detached at the fork, runs on and records.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

prog=$top_builddir/tests/progs/forkheap
src=$top_srcdir/tests/progs/forkheap.c
# The child's free(c[i]) in its step 2 (the last one in forkheap.c; the
# grandchild's comes first).
line=$(grep -n 'free(c\[i\]);' "$src" | tail -n 1 | cut -d: -f1)
[ -n "$line" ] || fail "no free(c[i]) in $src"

session fork "$prog" -ex 'set follow-fork-mode child' -ex 'break child' -ex run -ex 'memscope leaks' \
	-ex "break forkheap.c:$line" -ex continue -ex 'memscope info' -ex 'memscope at step 1' -ex 'info inferiors'
log='WORK/state/msmemscope/gdb/gdb_PID_TIME/memscope_PID.mms'
expect fork "memscope: the program was detached: process N goes on running, and its recorder goes on writing its log $log." \
	"the parent, detached at the fork, runs on and records"
expect fork "is a fork child of process N: its recorder writes a log of its own, $log, from its first event, and has recorded none so far." \
	"before the child's first event"
expect_not fork 'could not write it' "not: the recorder could not write the log"
expect_count fork "is a fork child of process N; from its own log $log, which begins at the fork:" 2 \
	"info and at step in the child say they answer from its own log"
expect fork '  now: step 2, no operator running' "info: the child's step, from its log"
expect fork 'memscope_PID.mms: step 1 of 2 (events #0..#30)' "at step 1: the child's step 1 (30 frees)"
expect fork '  allocated 0 blocks, 0 bytes; freed 30 blocks, 30.9 KiB; live bytes -30.9 KiB' "the child's step 1"
expect_rc "gdb's exit status"
