#!/bin/sh
# SPDX-License-Identifier: MIT
# core.sh: on a core file there is no live recorded process: loading one
# (on gdb's command line, or with core-file after a run) prints no Python
# traceback, and each memscope command says plainly that the commands need
# the program running, naming the log the dumped run wrote; `at step N'
# does not run the program over the core.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session dump "$progs/leaky" -ex 'break checkpoint' -ex run -ex 'generate-core-file leaky.core' -ex kill
[ -s leaky.core ] || skip "gdb could not write a core file here: $(tail -n 3 dump.raw)"

why='memscope: gdb is looking at a core file, not a live recorded process: the memscope commands need the program running (`run'"'"' it); the dumped run'"'"'s log is WORK/state/msmemscope/gdb/gdb_PID_TIME/memscope_PID.mms (msmemscope-replay reads it).'

# The core on gdb's command line: session() gives --args PROG, so the core
# comes with core-file before memscope.gdb's commands run.
_rc=0
$timeout "$gdb" -nx -batch -x "$MMS_GDB_SCRIPT" -ex 'memscope leaks' -ex 'memscope info' \
	-ex 'memscope watch small_last' -ex 'memscope at step 2' -ex 'memscope at event 1' -ex 'info inferiors' \
	"$progs/leaky" leaky.core >cmdline.raw 2>&1 </dev/null || _rc=$?
_name=cmdline
! grep -n 'Python Exception\|Error occurred in Python\|Traceback\|internal error in' cmdline.raw >&2 ||
	fail "gdb's Python raised (above); the session is in $work/cmdline.raw"
mask <cmdline.raw >cmdline.out
expect_not cmdline 'Undefined command: "memscope"' "memscope.gdb loads with a core file"
expect_count cmdline "$why" 6 "loading the core says it once, and leaks, info, watch, at step, at event say it"
expect_not cmdline 'running the program' "at step does not run the program over the core"
expect_not cmdline 'cannot arm the recorder' "nothing is armed in a core"
expect cmdline ' 1 (core) ' "the core stays loaded"

# core-file after a run: the same.
session after "$progs/leaky" -ex run -ex 'core-file leaky.core' -ex 'memscope leaks' -ex 'memscope block small_last' \
	-ex 'info inferiors'
expect_count after "$why" 3 "core-file after a run: at loading, leaks and block"
expect_not after 'the program has exited' "not answered from the earlier run's log as if it were the core's"
expect_rc "gdb's exit status"
