#!/bin/sh
# SPDX-License-Identifier: MIT
# detach.sh: `detach' is no kill: the program goes on running and its
# recorder goes on writing its log. gdb says so at the detach (not "was
# killed"), the queries refuse while the process runs (its log is not
# finished) and answer from the log it wrote once it has ended.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

log='WORK/state/msmemscope/gdb/gdb_PID_TIME/memscope_PID.mms'

# A program that still runs after the detach: sleep 3, detached in its sleep.
session running /bin/sleep -ex 'set args 3' -ex 'set breakpoint pending on' -ex 'break clock_nanosleep' -ex run \
	-ex detach -ex 'memscope leaks' -ex 'memscope info' -ex 'info inferiors'
grep -q '^Breakpoint 1, .*clock_nanosleep' running.out || skip "gdb did not stop in sleep's clock_nanosleep: $(tail -n 3 running.raw)"
expect running "memscope: the program was detached: process N goes on running, and its recorder goes on writing its log $log." \
	"the detach says the process runs on and records"
expect_count running "memscope: the program was detached (process N): it goes on running and its recorder goes on writing its log $log, so there is no finished log to answer from" 2 \
	"leaks and info while the detached process runs"
expect_not running 'killed' "a detach is not a kill"
expect_not running 'has exited' "a detach is not an exit"
expect_rc "gdb's exit status"

# leaky ends right after the detach: then the queries answer from its log.
session ended "$progs/leaky" -ex 'break checkpoint' -ex run -ex 'memscope watch small_last' -ex delete -ex detach \
	-ex 'shell sleep 1' -ex 'memscope leaks' -ex 'memscope info'
# leaky may end before gdb's handler of the detach runs (a busy machine):
# then it is a zombie, which gdb (its parent) has not reaped, and gdb
# says it has ended, not that it was killed.
grep -qF -- "memscope: the program was detached: process N goes on running, and its recorder goes on writing its log $log; the watch gdb set is gone." ended.out ||
	expect ended "memscope: the program was detached: process N has ended since, and its recorder wrote its log $log; the watch gdb set is gone." \
		"the detach, with a watch"
expect_count ended "memscope: the program was detached and has since ended; from its log $log, written by the program itself:" 2 \
	"leaks and info once the detached process has ended"
expect ended 'memscope: live blocks allocated in steps 1 to 4 (step 5 ran until the exit): 8,592 bytes (8.4 KiB) in 6 blocks, 2 loss records' \
	"the leaks of the whole run, which the process recorded after the detach"
expect ended '  at its end: 4 steps; the program reached its exit' "info: the log the process finished"
expect_not ended 'killed' "a detach is not a kill"
expect_rc "gdb's exit status"

# Detached at its last checkpoint, just before it returns from main:
# leaky may end before gdb's handler of the detach runs (here by hand,
# detached in _exit, 3 runs of 3); a zombie gdb has not reaped, which did
# not die from SIGKILL, is no kill: "has ended since" (or "goes on
# running", where the handler ran first). Before, "was killed" (CI, once).
session atexit "$progs/leaky" -ex 'break checkpoint if step == 4' -ex run -ex detach -ex 'shell sleep 1' \
	-ex 'memscope info'
grep -qF -- "memscope: the program was detached: process N goes on running, and its recorder goes on writing its log $log." atexit.out ||
	expect atexit "memscope: the program was detached: process N has ended since, and its recorder wrote its log $log." \
		"the detach at _exit"
expect atexit "memscope: the program was detached and has since ended; from its log $log, written by the program itself:" \
	"info once the detached process has ended"
expect_not atexit 'killed' "a detach at _exit is not a kill"
expect_rc "gdb's exit status"
