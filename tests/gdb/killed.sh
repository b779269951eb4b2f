#!/bin/sh
# SPDX-License-Identifier: MIT
# killed.sh: after `kill', the queries say the program was killed and
# answer from its cut log (what the recorder wrote until the kill), not
# that it exited or "ran to its end"; after a death from a signal, they
# name the signal.
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

# Dead from a signal (gdb's `signal SIGABRT' in step 2): the queries name
# it; a `kill' of the next run is a kill again, not the earlier signal
# ($_exitsignal, which gdb leaves as it was at a kill).
session signalled "$progs/leaky" -ex 'break checkpoint' -ex run -ex continue -ex 'signal SIGABRT' \
	-ex 'memscope leaks' -ex 'memscope info' -ex 'memscope at step 7' -ex run -ex kill -ex 'memscope info'
expect_count signalled "memscope: the program died from SIGABRT (Aborted); from its cut log $log, what the recorder wrote until the signal:" 3 \
	"leaks, info and at step 7 name the signal"
expect signalled 'memscope: live blocks allocated in step 1 (step 2 ran until the signal): 100 bytes in 1 block, 1 loss record' \
	"leaks: step 2 ran until the signal"
expect signalled '  at its end: 2 steps; the log was cut (the process died from SIGABRT (Aborted))' "info: the signal"
expect signalled "memscope: the program died from SIGABRT (Aborted) and, in its cut log, its last step was 2: step 7 did not happen before the signal." \
	"at step past the log's end"
expect_count signalled "memscope: the program was killed; from its cut log $log, what the recorder wrote until the kill:" 1 \
	"the next run's kill is a kill"
expect_not signalled 'has exited' "a death from a signal is not an exit"
expect_rc "gdb's exit status (signal)"
