#!/bin/sh
# SPDX-License-Identifier: MIT
# ctlop.sh: gdb's messages name the operator the recorder stopped in with
# its control characters written \xHH, as the replay library reads names
# from the log (doc/replay.md, Names): tests/gdb/ctlop's operator, named
# "bad", a newline, "memscope: no watches." and ESC [2J, changes a watched
# block. The session shows the escaped name and no ESC; no line of it is
# the made-up one. `memscope break op' takes the names as messages write
# them (the first quoted, the second, with a C1 control character, not):
# both stop, said escaped (a NUL, which no name holds, is refused);
# `memscope pinpoint' re-runs to the launch the watch named and says it
# escaped too, and no ESC reaches the session.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session ctlop "$progs/ctlop" -ex 'break ready' -ex run -ex 'memscope watch buf[0]@64' -ex continue -ex continue \
	-ex continue
expect ctlop 'changed in operator bad\x0amemscope: no watches.\x1b[2J (launch 1, step 1)' \
	"the watch's stop names the operator escaped"
expect ctlop 'ends: its block is being freed outside any operator launch (step 1)' "the stop at the free"
! grep -q "$(printf '\033')" ctlop.raw || fail "the session printed an ESC a name carried (in $work/ctlop.raw)"
expect_count ctlop '^memscope: no watches\.' 0 "a line the operator's name made up"
expect ctlop 'exited normally' "the program's end"
expect_rc "gdb's exit status"

# The names as typed from the messages: breakpoints that stop.
session brk "$progs/ctlop" -ex 'memscope break op \x00' -ex 'break ready' -ex run \
	-ex 'memscope break op "bad\x0amemscope: no watches.\x1b[2J"' -ex 'memscope break op csi\xc2\x9bop' \
	-ex 'memscope break' -ex 'memscope watch buf[0]@64' -ex continue -ex continue -ex continue -ex continue \
	-ex continue
expect brk 'memscope: breakpoint 2: stops at each launch of operator bad\x0amemscope: no watches.\x1b[2J.' \
	"the breakpoint's name as typed"
expect brk "memscope: no breakpoint made: an operator's name cannot hold \\x00" 'a NUL refused'
expect brk '3    y        0  each launch of operator csi\xc2\x9bop' "memscope break's list"
expect brk 'memscope: breakpoint 2, operator bad\x0amemscope: no watches.\x1b[2J begins: launch 1, step 1' \
	"the stop at the first operator"
expect brk 'memscope: breakpoint 3, operator csi\xc2\x9bop begins: launch 2, step 1' "the stop at the second"
expect brk 'changed in operator bad\x0amemscope: no watches.\x1b[2J (launch 1, step 1)' "the watch's stop"
expect brk 'exited normally' "the program's end"
! grep -q "$(printf '\033')" brk.raw || fail "the session printed an ESC a name carried (in $work/brk.raw)"
! grep -q "$(printf '\302\233')" brk.raw || fail "the session printed a CSI a name carried (in $work/brk.raw)"
expect_rc "gdb's exit status"

# memscope pinpoint after the watch's stop: its messages name the
# operator escaped (software watchpoints where the debug registers do not
# trap here).
if hw_fires; then pp='memscope pinpoint'; else pp='memscope pinpoint software'; fi
session pin "$progs/ctlop" -ex 'break ready' -ex run -ex 'memscope watch buf[0]@64' -ex continue -ex "$pp" \
	-ex continue -ex continue -ex continue -ex continue
expect pin 'memscope: pinpoint: running the program again to the start of launch 1 of operator bad\x0amemscope: no watches.\x1b[2J (step 1)' \
	"pinpoint's re-run"
expect pin 'memscope: pinpoint: the store is the instruction at' "the store found"
! grep -q "$(printf '\033')" pin.raw || fail "the session printed an ESC a name carried (in $work/pin.raw)"
