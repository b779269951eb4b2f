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
# Ctrl-C while the report at exit replays the log (right after "exited
# normally") says "Quit" too, not gdb's "Python Exception" line of an
# event handler, and gdb goes on to its next command.
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
raw=int.raw
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
			fail "gdb did not $_what in 300 s: $(tail -20 "$raw")"
		fi
		sleep 0.1
	done
}
gdb_gone() {
	! kill -0 $gpid 2>/dev/null
}
# interrupt WHAT PATTERN: once gdb's output ($raw) has a line matching
# PATTERN, Ctrl-C a tenth of a second later; gdb must then finish its
# commands, exit 0 and leave no Python error.
interrupt() {
	within "reach the point of its Ctrl-C ($1)" grep -qs "$2" "$raw"
	sleep 0.1
	kill -INT $gpid
	within finish gdb_gone
	_rc=0
	wait $gpid || _rc=$?
	[ "$_rc" = 0 ] || fail "gdb exited $_rc: $(tail -20 "$raw")"
	if grep -n 'Python Exception\|Traceback\|Exception ignored' "$raw" >&2; then
		fail "Ctrl-C $1 left a Python error (above)"
	fi
}
interrupt "in the first memscope leaks" '^first leaks$'
grep -q '^Quit$' int.raw || fail "no Quit after Ctrl-C: $(tail -20 int.raw)"
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

# --- during the report at exit ---------------------------------------------
env --default-signal=INT "$gdb" -nx -batch -x "$MMS_GDB_SCRIPT" -ex run -ex 'echo after exit\n' \
	--args "$prog" 16000000 >exit.raw 2>&1 </dev/null &
gpid=$!
raw=exit.raw
interrupt "during the report at exit" 'exited normally\]$'
if grep -q '^memscope: at exit:' exit.raw; then
	note "the report at exit had ended before Ctrl-C (a fast machine): its interruption not checked"
else
	grep -q '^Quit$' exit.raw || fail "no Quit after Ctrl-C during the report at exit: $(tail -20 exit.raw)"
	grep -q '^after exit$' exit.raw || fail "gdb did not go on after Ctrl-C during the report at exit: $(tail -20 exit.raw)"
	note "Ctrl-C during the report at exit: Quit, and gdb went on"
fi
