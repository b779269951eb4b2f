#!/bin/sh
# SPDX-License-Identifier: MIT
# output.sh: where a session's logs go (issue 16, defect 7): by default a
# folder of the session's under $XDG_STATE_HOME/msmemscope/gdb, not the
# current folder; `set memscope output DIR' sends the next runs' logs to
# DIR (made if missing); a folder that cannot be made is refused and the
# logs stay where they went.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session output "$progs/leaky" -ex 'show memscope output' -ex run -ex 'memscope info' \
	-ex "set memscope output $work/logs/here" -ex 'show memscope output' \
	-ex 'set memscope output /proc/1/no/such' -ex 'show memscope output' -ex run -ex 'memscope info'
expect output "The program's logs go to WORK/state/msmemscope/gdb/gdb_PID_TIME/." "the default folder"
expect output 'memscope: log WORK/state/msmemscope/gdb/gdb_PID_TIME/memscope_PID.mms' "the first run's log"
expect output 'memscope: the logs of the next runs go to WORK/logs/here/.' "set memscope output"
expect output 'memscope: cannot make the folder /proc/1/no/such' "a folder that cannot be made"
expect_count output "The program's logs go to WORK/logs/here/." 2 "the folder kept after the refusal"
expect output 'memscope: log WORK/logs/here/memscope_PID.mms' "the second run's log"
[ ! -e memscopeDumpResults ] || fail "a log folder in the current folder: $(ls memscopeDumpResults)"
ls logs/here/memscope_*.mms >/dev/null 2>&1 || fail "no log in $work/logs/here"
expect_rc "gdb's exit status"
