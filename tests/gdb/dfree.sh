#!/bin/sh
# SPDX-License-Identifier: MIT
# dfree.sh: a double free appears as such (issue 16, defect 7). On
# tests/gdb/dfree, which frees its one block twice (glibc aborts it):
# `memscope block' shows both frees, the second as a double free; `at
# event' on the second free says it is one, and which free came first;
# `memscope info' counts it; no output says "step 0" (the program marks
# no steps).
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session dfree "$progs/dfree" -ex run -ex 'set $p = p' -ex 'memscope block $p' -ex 'memscope info' \
	-ex 'memscope at event 3' -ex 'memscope at event 2'
expect dfree 'Program received signal SIGABRT' "glibc's abort at the double free"
expect dfree 'freed block 0xADDR, 100 bytes, HOST, allocation 1' "the block"
expect dfree "  freed at event #2 by t0 'dfree'" "the first free"
expect dfree "  freed again at event #3 by t0 'dfree': a double free" "the second free, in block"
expect dfree 'memscope: event #3 is a double free: block 0xADDR (100 bytes, allocation 1) was freed at event #2.' \
	"the second free, in at event"
expect dfree '  double frees: 1 (`memscope block ADDR'"'"' shows them)' "info counts it"
expect dfree '  allocated at event #1, by:' "at event on the first free: the block, no step"
expect_not dfree 'step 0' "a step 0"
expect_rc "gdb's exit status"
