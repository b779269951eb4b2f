#!/bin/sh
# SPDX-License-Identifier: MIT
# ctlop.sh: gdb's messages name the operator the recorder stopped in with
# its control characters written \xHH, as the replay library reads names
# from the log (doc/replay.md, Names): tests/gdb/ctlop's operator, named
# "bad", a newline, "memscope: no watches." and ESC [2J, changes a watched
# block. The session shows the escaped name and no ESC; no line of it is
# the made-up one.
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
