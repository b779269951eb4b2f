#!/bin/sh
# SPDX-License-Identifier: MIT
# commands.sh: `memscope info', `memscope block' (live, inside a block,
# freed, not heap) and `memscope break op/step' (set before run, and
# while running) on tests/gdb/leaky; the configuration `memscope info'
# reads from the log, gdb's or the one the user set.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session commands "$progs/leaky" -ex 'memscope break step 2' -ex 'memscope break' -ex run \
	-ex 'memscope info' -ex 'memscope break' -ex 'break checkpoint' -ex continue \
	-ex 'memscope block small_last' -ex 'memscope block (char *)big_last + 100' \
	-ex 'memscope block freed_scratch' -ex 'memscope block &nkept' \
	-ex 'complete memscope break op ' -ex 'memscope break op compute' -ex 'memscope break' -ex continue -ex 'memscope info' \
	-ex 'memscope break op load' -ex 'memscope break delete' -ex 'memscope break' -ex 'delete' -ex continue
expect commands 'memscope: breakpoint 1, step 2 begins' "the step break set before run"
expect commands 'live block 0xADDR, 100 bytes, HOST, allocation 4' "the live block"
expect commands 'is at +100 in it' "an address inside a block"
expect commands 'freed block 0xADDR, 777 bytes, HOST, allocation 2' "the freed block"
expect commands 'operator compute begins: launch 6, step 3' "the operator break"
compare commands

# The program's own MSMEMSCOPE_CONFIG replaces gdb's call_stack=32; the
# recorder skips the key it does not know, and says so.
session config "$progs/leaky" -ex 'set environment MSMEMSCOPE_CONFIG=call_stack=4;events=alloc,free;colour=blue' \
	-ex 'memscope break step 2' -ex run -ex 'memscope info'
expect config '  recorded with: call_stack=4;events=alloc,free;collect=immediate;follow_exec=1;log_level=warn' \
	"the user's MSMEMSCOPE_CONFIG, as the log keeps it"
expect config 'msmemscope: warning: MSMEMSCOPE_CONFIG: colour: not a key of this recorder; ignored' \
	"the recorder's word on the key it does not know"
