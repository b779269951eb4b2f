#!/bin/sh
# SPDX-License-Identifier: MIT
# at.sh: `memscope at step N' on tests/gdb/leaky: a step that ended (as
# msmemscope-replay --step N prints it), the step under way, a step ahead
# (the program runs until it begins and stops there, in main), a step
# ahead of a breakpoint (gdb stops at the breakpoint and says so), a step
# the program never reaches, and `at event N'.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session at "$progs/leaky" -ex 'break checkpoint' -ex run -ex continue -ex continue \
	-ex 'memscope at step 2' -ex 'memscope at step 3' -ex 'memscope at event 14' \
	-ex 'memscope at step 4' -ex 'memscope info' -ex 'memscope at event 99' \
	-ex 'memscope at step 5' -ex 'memscope at step 9'
expect at 'step 2 of 3 (events #9..#16)' "step 2 from the log"
expect at 'memscope: step 3 is under way; what it did so far:' "the step under way"
expect at 'memscope: step 4 begins, thread 1' "the stop at step 4"
expect at 'memscope: stopped before step 5 began' "a breakpoint before the step"
expect at 'memscope: the program ended before step 9 began.' "a step never reached"
expect at 'memscope: event 99 has not happened yet' "an event ahead"
compare at
