#!/bin/sh
# SPDX-License-Identifier: MIT
# starti.sh: stopped at the program's first instruction (`starti'), the
# recorder is not loaded yet: the memscope commands say it has not started
# and how to get there (`break main', `continue'), not that the program has
# no recorder; at main() they answer.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session starti "$progs/leaky" -ex starti -ex 'memscope leaks' -ex 'memscope info' -ex 'memscope watch 0' \
	-ex 'memscope at step 2' -ex 'memscope block 0x1000' -ex 'break main' -ex continue -ex 'memscope leaks'
expect_count starti "memscope: the recorder has not started yet in the program: gdb stopped it before its libraries were loaded (as \`starti' does); \`break main' and \`continue' until the program reaches main(), then ask again." 5 \
	"leaks, info, watch, at step and block before the recorder is loaded"
expect_not starti 'no msmemscope recorder loaded' "not: the program has no recorder"
expect_not starti 'memscope: running the program' "at step does not run the program again"
expect starti 'memscope: all live blocks (no step has ended so far): 0 bytes in 0 blocks (none)' "at main(), leaks answers"
expect_rc "gdb's exit status"
