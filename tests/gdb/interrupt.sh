#!/bin/sh
# SPDX-License-Identifier: MIT
# interrupt.sh: Ctrl-C during a memscope command that replays a long log
# stops the replay where it stands, not after it: gdb says "Quit", as of
# any command it interrupts, without a Python traceback, and goes on (the
# next command answers). longstep's log holds 32 million events: `memscope
# leaks` after the exit replays it whole (about a second here); SIGINT
# comes a tenth of a second into the first. That it stopped early is told
# by its time against the second's, whole: under half of it (a replay
# that cannot be stopped takes as long as the second, then says "Quit").
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

prog=$top_builddir/tests/progs/longstep
[ -x "$prog" ] || fail "not built: $prog"
# A job started in the background of a script has SIGINT ignored, and gdb
# keeps it so.
env --default-signal=INT true 2>/dev/null ||
	skip "env --default-signal (coreutils 8.31 or later) is needed to give gdb SIGINT"

env --default-signal=INT "$gdb" -nx -batch -x "$MMS_GDB_SCRIPT" -ex run \
	-ex 'python import time; t0 = time.monotonic()' -ex 'echo first leaks\n' -ex 'memscope leaks' \
	-ex 'python print("first: %d ms" % ((time.monotonic() - t0) * 1000))' \
	-ex 'python t0 = time.monotonic()' -ex 'memscope leaks' \
	-ex 'python print("second: %d ms" % ((time.monotonic() - t0) * 1000))' \
	--args "$prog" 16000000 >int.raw 2>&1 </dev/null &
gpid=$!
# within WHAT COMMAND...: waits until COMMAND succeeds, 300 s at most, or
# kills gdb and fails: gdb did not WHAT.
within() {
	_what=$1
	shift
	_n=0
	until "$@"; do
		_n=$((_n + 1))
		if [ $_n -ge 3000 ]; then
			kill -9 $gpid
			fail "gdb did not $_what in 300 s: $(tail -20 int.raw)"
		fi
		sleep 0.1
	done
}
gdb_gone() {
	! kill -0 $gpid 2>/dev/null
}
within "reach the first memscope leaks" grep -qs '^first leaks$' int.raw
sleep 0.1
kill -INT $gpid
within finish gdb_gone
rc=0
wait $gpid || rc=$?
[ "$rc" = 0 ] || fail "gdb exited $rc: $(tail -20 int.raw)"
grep -q '^Quit$' int.raw || fail "no Quit after Ctrl-C: $(tail -20 int.raw)"
if grep -n 'Python Exception\|Traceback\|Exception ignored' int.raw >&2; then
	fail "Ctrl-C left a Python error (above)"
fi
mask <int.raw >int.out
expect_count int '^memscope: live blocks allocated in steps 1 to 3' 1 "leaks answered by the second command only"
first=$(sed -n 's/^first: \([0-9]*\) ms$/\1/p' int.raw)
second=$(sed -n 's/^second: \([0-9]*\) ms$/\1/p' int.raw)
if [ -z "$first" ] || [ -z "$second" ]; then
	fail "no times: $(tail -20 int.raw)"
fi
[ $((first * 2)) -lt "$second" ] ||
	fail "the interrupted replay took $first ms, the whole one $second ms: not stopped where it stood"
note "Ctrl-C stopped memscope leaks after $first ms of a $second ms replay; gdb went on"
