#!/bin/sh
# SPDX-License-Identifier: MIT
# closed.sh: a watch on memory the program makes inaccessible: on
# tests/progs/reserve, the page it passes to msmemscope_watch() watched in
# gdb too, then closed by mprotect(PROT_NONE) inside operator "close". gdb
# stops there and says the memory is being made inaccessible (it named a
# block freed long before, the log's last release, as "being freed"); the
# watch is removed and the program runs to its end: its launch's end
# reads no closed byte.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session closed "$top_builddir/tests/progs/reserve" -ex 'break msmemscope_watch' -ex run \
	-ex 'memscope watch (char *)ptr 4096' -ex continue -ex continue
expect closed 'memscope: watch 1: (char *)ptr, 4,096 bytes (4.0 KiB) at 0xADDR' "the watch set on the page"
expect closed 'ends: memory in it is being made inaccessible (mprotect with PROT_NONE) in operator close (launch 1, step 1)' \
	"the stop at mprotect says what happens to the watched bytes"
expect_not closed 'is being freed' "no block named as freed"
expect_count closed 'ends:' 1 "one stop"
expect closed 'exited normally' "the program runs to its end"
expect_rc "gdb's exit status"
