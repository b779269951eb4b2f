#!/bin/sh
# SPDX-License-Identifier: MIT
# exited.sh: after the program exits, every memscope query answers from
# its finished log and says so (issue 16, defect 5): leaks, block (live
# at exit, and freed), at event, at step for a step in the log, info;
# `at step N' past the log's end does not run the program again in batch
# mode, where gdb cannot ask, and says how to; a watch needs the program.
# Before the first run, queries say the program is not running.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session exited "$progs/leaky" -ex 'memscope leaks' -ex 'break checkpoint' -ex run \
	-ex 'set $small = small_last' -ex 'set $freed = freed_scratch' -ex delete -ex continue \
	-ex 'memscope leaks' -ex 'memscope leaks full' -ex 'memscope block $small' -ex 'memscope block $freed' \
	-ex 'memscope at event 14' -ex 'memscope at event 30' -ex 'memscope at step 2' -ex 'memscope at step 7' \
	-ex 'memscope watch $small' -ex 'info inferiors' -ex 'memscope info'
expect_count exited 'memscope: the program is not running; start it with' 2 "queries before the first run, and watch after exit"
expect_count exited 'memscope: the program has exited; from its finished log WORK/state/msmemscope/gdb/gdb_PID_TIME/memscope_PID.mms:' 9 \
	"every query after exit says it answers from the finished log"
expect exited 'memscope: live blocks allocated in steps 1 to 4 (step 5 ran until the exit): 8,592 bytes (8.4 KiB) in 6 blocks, 2 loss records' \
	"leaks from the finished log"
expect exited 'memscope: all live blocks: 8,592 bytes (8.4 KiB) in 6 blocks, 2 loss records' "leaks full"
expect exited 'live block 0xADDR, 100 bytes, HOST, allocation 1' "block: a block live at exit"
expect exited 'freed block 0xADDR, 777 bytes, HOST, allocation 2' "block: a freed block"
expect exited '#14       t0 '"'"'leaky'"'"' MALLOC        malloc         0xADDR 4.0 KiB, allocation 5 in compute#4' "at event"
expect exited 'memscope: the finished log holds 30 events (0 to 29); there is no event 30.' "at event past the end"
expect exited 'memscope_PID.mms: step 2 of 4 (events #9..#16)' "at step: a step of the finished log"
expect exited 'memscope: the program ran to its end and its last step was 4: step 7 did not happen in that run. To run it again until step 7 begins: `memscope break step 7'"'"', then `run'"'"'.' \
	"at step past the end, in batch mode"
expect_count exited 'exited normally' 1 "the program ran once"
expect exited '  at its end: 4 steps; the program reached its exit' "info from the finished log"
expect_not exited 'memscope: running the program' "no silent re-run"
expect_rc "gdb's exit status"

# A program that marks no step: leaks after its exit say so, not "so far".
session exited-nostep "$progs/abicheck" -ex run -ex 'memscope leaks'
expect exited-nostep 'memscope: all live blocks (the program marked no step): ' "leaks after the exit of a program without steps"
expect_not exited-nostep 'so far' "no 'so far' once the program has exited"
expect_rc "gdb's exit status"
