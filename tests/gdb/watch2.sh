#!/bin/sh
# SPDX-License-Identifier: MIT
# watch2.sh: the smaller watch defects of issue 16 (defect 7) on
# tests/gdb/span, whose launch "fill" writes 8 bytes of `a' and 40 of `b':
# two watches changed by one launch give one stop that lists both (and
# the list counts both changes); a second watch of the same bytes is
# refused; `set memscope diff-lines' limits the lines of changed bytes.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session watch2 "$progs/span" -ex 'break ready' -ex run -ex 'set memscope diff-lines 2' \
	-ex 'show memscope diff-lines' -ex 'memscope watch a' -ex 'memscope watch b' -ex 'memscope watch a' \
	-ex 'memscope watch b 256' -ex continue -ex 'memscope watch' -ex continue -ex continue -ex continue
expect watch2 'Lines of changed bytes printed is 2.' "the setting"
expect watch2 'memscope: watch 1 (a) already watches these 256 bytes at 0xADDR.' "a duplicate watch"
expect watch2 'memscope: watch 2 (b) already watches these 256 bytes at 0xADDR.' "a duplicate with an explicit SIZE"
expect_count watch2 'changed in operator fill (launch 1, step 1)' 1 "one stop for the two changes"
expect watch2 'memscope: watch 2 (b, 256 bytes at 0xADDR) changed too, at the same boundary' "the second watch in the stop"
expect watch2 '  40 of 256 bytes changed (old -> new):' "b's change"
expect_count watch2 '    ... (more changed bytes not shown)' 1 "diff-lines 2 cuts b's 5 lines"
expect watch2 '2    0xADDR            256        1  b' "the list counts b's change"
expect_count watch2 'ends: its block is being freed' 2 "the frees of b and a"
expect watch2 'exited normally' "the program's end"
expect_rc "gdb's exit status"
