#!/bin/sh
# SPDX-License-Identifier: MIT
# watch.sh: `memscope watch' on tests/gdb/stomp, whose third of six
# operator launches ("scale") writes 8 bytes past its own block into the
# watched neighbour: gdb stops exactly once, names launch 3 and shows
# bytes a0..a7 becoming 20..27; the watch's size comes from the block the
# log knows (a 32-byte pool block); the watch list counts the change; when
# the program frees the arena holding the block, gdb stops there once more
# and the watch is removed; gdb names the arena's block, not the pool
# block it holds.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session watch "$progs/stomp" -ex 'set memscope depth 1' -ex 'break ready' -ex run -ex 'memscope watch nb' -ex 'memscope watch' \
	-ex continue -ex 'memscope watch' -ex continue -ex 'memscope watch' -ex continue
expect_count watch 'changed in operator' 1 "stops for the watch"
expect watch 'memscope: watch 1: nb, 32 bytes at' "the watch's size (the pool block)"
expect watch 'changed in operator scale (launch 3, step 1)' "the operator launch named"
expect watch '+0x0    a0 a1 a2 a3 a4 a5 a6 a7 -> 20 21 22 23 24 25 26 27' "the changed bytes"
expect watch '8 of 32 bytes changed' "the count of changed bytes"
expect watch 'ends: the HOST block 0xADDR (96 bytes) that holds it is being freed outside any operator launch (step 1)' \
	"the stop at free(arena), which holds the pool block"
expect watch 'memscope: no watches.' "the watch removed"
expect watch 'exited normally' "the program's end"
compare watch
