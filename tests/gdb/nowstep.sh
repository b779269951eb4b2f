#!/bin/sh
# SPDX-License-Identifier: MIT
# nowstep.sh: the current step is "now" (issue 16, defect 2). On
# tests/gdb/leaky, stopped in step 1 before the first msmemscope_step(),
# `at step 1' prints what step 1 did so far (it ran the program to its
# end and left a break that could never fire); `at step 2' is ahead and
# stops where step 2 begins. On tests/gdb/stomp, which marks no steps,
# `at step 1' is the run so far, `at step 2' runs to the end without a
# break left behind, and after exit `at step 1' is the whole run; no
# output says "step 0".
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session nowstep "$progs/leaky" -ex 'break checkpoint' -ex run -ex 'memscope at step 1' -ex 'memscope break' \
	-ex 'delete' -ex 'memscope at step 2' -ex 'memscope at step 1'
expect nowstep 'memscope: step 1 is under way (no step marked so far); what it did so far:' "step 1 under way"
expect nowstep '  8 events (#0..#7); operator launches: 2' "what step 1 did so far: events and launches"
expect nowstep '  allocated 2 blocks, freed 1 block; live: 1 block, 100 bytes; peak 877 bytes' "what step 1 did so far: blocks"
expect nowstep 'memscope: no operator or step breakpoints.' "no break left behind"
expect nowstep 'memscope: step 2 begins, thread 1' "step 2 is ahead"
expect nowstep 'step 1 of 1 (events #0..#8)' "step 1, ended, from the log"
expect_not nowstep 'step 0' "a step 0"
expect_rc "gdb's exit status"

session nosteps "$progs/stomp" -ex 'break ready' -ex run -ex 'memscope at step 1' -ex 'memscope at step 2' \
	-ex 'memscope at step 1' -ex 'memscope break'
expect nosteps 'memscope: step 1 is under way (no step marked so far); what it did so far:' "no steps: the run so far"
expect nosteps '  4 events (#0..#3); operator launches: 0' "no steps: the events so far"
expect nosteps 'memscope: the program ended before step 2 began.' "no steps: step 2 never begins"
expect nosteps 'memscope: the program marked no steps: its whole run was step 1:' "no steps, after exit"
expect nosteps '  20 events (#0..#19); operator launches: 6' "no steps, after exit: the whole run"
expect nosteps 'memscope: no operator or step breakpoints.' "no break left behind"
expect_not nosteps 'step 0' "a step 0"
expect_rc "gdb's exit status"
