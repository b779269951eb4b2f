#!/bin/sh
# SPDX-License-Identifier: MIT
# killed.sh: after `kill', the queries say the program was killed and
# answer from its cut log (what the recorder wrote until the kill), not
# that it exited or "ran to its end".
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

log='WORK/state/msmemscope/gdb/gdb_PID_TIME/memscope_PID.mms'

# Killed in step 2 (its checkpoint), of the 4 leaky marks.
session killed "$progs/leaky" -ex 'break checkpoint' -ex run -ex continue -ex kill \
	-ex 'memscope leaks' -ex 'memscope info' -ex 'memscope at step 2' -ex 'memscope at step 7' -ex 'info inferiors'
expect_count killed "memscope: the program was killed; from its cut log $log, what the recorder wrote until the kill:" 4 \
	"leaks, info, at step 2 and at step 7 say the log is cut at the kill"
expect killed 'memscope: live blocks allocated in step 1 (step 2 ran until the kill): 100 bytes in 1 block, 1 loss record' \
	"leaks: step 2 ran until the kill"
expect killed '  at its end: 2 steps; the log was cut' "info: the cut log"
expect killed 'memscope_PID.mms: step 2 of 2 (events #9..#15)' "at step 2: the step the kill cut"
expect killed "memscope: the program was killed and, in its cut log, its last step was 2: step 7 did not happen before the kill." \
	"at step past the cut log's end"
expect_not killed 'ran to its end' "a kill is not the end of the program"
expect_not killed 'has exited' "a kill is not an exit"
expect_not killed 'until the exit' "a kill is not an exit"
expect_rc "gdb's exit status"
