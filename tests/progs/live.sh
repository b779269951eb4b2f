#!/bin/sh
# SPDX-License-Identifier: MIT
# live.sh: the launcher reads the program's log while the program runs
# (launch-live.c) and finishes the report after the exit: the report must
# be the one the written log gives. For each mode of tests/progs/live.c
# (steps with per-step leaks, threads, a thread that writes late, a fork,
# a program killed mid-run, a program env exec's) the launcher's leaks report, with stacks,
# equals msmemscope-replay --analysis leaks on the same log, and its
# summary's figures equal msmemscope-replay --summary --json's; and the
# report was the one read while the program ran (MSMEMSCOPE_LIVE_DEBUG
# says so). With --no-live-report nothing is read during the run. A
# program that exits while its threads allocate never takes the reader
# past the file's end, nor leaves a log that reads as cut. How
# much is read during the run depends on the machine's load (the reader
# takes only idle CPU time): tests/unit's follow test checks the reading
# between two looks exactly.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"
prog=$MMS_PROGS/live
[ -x "$prog" ] || fail "the test program is not built: $prog"

for mode in steps threads late fork kill exec; do
	# exec: env runs the program (a wrapper's exec, as pyenv's shims or a
	# shell script's): the report is the exec'd image's, read while it ran.
	case $mode in
	exec) run="env MMS_LIVE_EXEC=1 $prog steps" ;;
	*) run="$prog $mode" ;;
	esac
	# With two threads, a feed may refuse (a thread stopped inside a hook
	# longer than the reader waits, on a loaded machine), and a wrapper
	# may exec before the reader's last look (it takes idle CPU time
	# only): the report is then read after the run, the same. Rare: three
	# tries.
	try=1
	while :; do
		rm -rf out
		status=0
		MSMEMSCOPE_LIVE_DEBUG=1 "$MMS_LAUNCHER" --call-stack=c:8 --output=out -- $run >$mode.out \
			2>$mode.err || status=$?
		if [ $mode = kill ]; then
			[ $status = 137 ] || fail "live kill: the launcher exited $status, not 137: $(cat $mode.err)"
		else
			[ $status = 0 ] || fail "live $mode: the launcher exited $status: $(cat $mode.err)"
			[ "$(cat $mode.out)" = done ] || fail "live $mode: the program printed $(cat $mode.out)"
		fi
		! grep -q '^msmemscope: live: [0-9]* events read while the program ran' $mode.err || break
		case $mode in threads | late | exec) ;; *) try=3 ;; esac
		[ $try -lt 3 ] ||
			fail "live $mode: the report was not the one read while the program ran: $(grep 'live:' $mode.err)"
		note "live $mode: read after the run ($(grep 'live:' $mode.err)); again"
		try=$((try + 1))
	done
	# Events read during the run, and all of them.
	sed -n 's/^msmemscope: live: \([0-9]*\) events read while.*/\1/p' $mode.err >$mode.fed
	sed -n 's/^  events  *\([0-9]*\) .*/\1/p' $mode.err >$mode.total
	log=$(launched_log $mode.err)
	if [ $mode = exec ]; then
		grep -q "^msmemscope: recorded env (pid [0-9]*) to .*/memscope_[0-9]*\.exec1\.mms$" $mode.err &&
			grep -q "^  image  *$prog (image 2 of pid [0-9]*, after 1 exec; the earlier image's log is listed below)$" $mode.err &&
			grep -q "^  also memscope_[0-9]*\.mms: pid [0-9]*, .*/env, the program as msmemscope started it: " $mode.err ||
			fail "live exec: the report is not the exec'd image's: $(sed -n '/recorded/,/also/p' $mode.err)"
	fi
	[ -f "$log" ] || fail "live $mode: no log in out/"
	# The leaks report, as the written log gives it (without the line
	# the shell may add, "Killed", for a launcher that died of SIGKILL as
	# its program did).
	sed -n '/^======/,$p' $mode.err | grep -v '^Killed$' >$mode.live
	"$MMS_REPLAY" "$log" --analysis leaks 2>&1 | grep -v '^msmemscope-replay: warning: .*did not reach exit' \
		>$mode.after
	grep -q '^====== SUMMARY' $mode.after || fail "live $mode: msmemscope-replay printed no leaks report: $(cat $mode.after)"
	diff -u $mode.after $mode.live >$mode.diff ||
		fail "live $mode: the report read while the program ran differs from the log's:
$(cat $mode.diff)"
	# The summary's figures.
	summarize "$log"
	for k in allocs frees live_blocks; do
		v=$(jget "$log.json" $k)
		case $k in
		allocs) grep -q "^  heap (malloc)     $v allocations" $mode.err ;;
		frees) grep -q "allocations, $v frees" $mode.err ;;
		live_blocks) grep -q "live at [a-z ]* *$v block" $mode.err ;;
		esac || fail "live $mode: the launcher's summary does not say $k = $v: $(sed -n '/events/,/threads/p' $mode.err)"
	done
done

# A thread that sleeps (late mode's, between its two allocations) does not
# hold the others back: the reader sees it outside its hooks. Judged only
# when the machine let the reader run during the single-threaded steps and
# during late's own run (it takes idle CPU time only: with the other tests
# of a parallel make check running, it may not look at the log at all,
# which its "N looks" says).
half() { [ "$(cat $1.fed)" -ge $(($(cat $1.total) / 2)) ]; }
looks() {
	_l=$(sed -n 's/^msmemscope: live: [0-9]* events read while the program ran, \([0-9]*\) looks.*/\1/p' $1.err)
	echo "${_l:-0}"
}
# A loaded machine may still starve the reader in one run (CI's sanitizer
# pass once read 40,007 of 240,031): two more runs before judging. A
# reader the sleeping thread does hold back stops in every run.
late_try=1
while half steps && [ "$(looks late)" -ge 2 ] && ! half late && [ $late_try -lt 3 ]; do
	note "live late: $(cat late.fed) of $(cat late.total) events read during the run ($(looks late) looks); again"
	rm -rf out
	MSMEMSCOPE_LIVE_DEBUG=1 "$MMS_LAUNCHER" --call-stack=c:8 --output=out -- "$prog" late >late.out 2>late.err ||
		fail "live late (again): the launcher exited $?: $(cat late.err)"
	sed -n 's/^msmemscope: live: \([0-9]*\) events read while.*/\1/p' late.err >late.fed
	sed -n 's/^  events  *\([0-9]*\) .*/\1/p' late.err >late.total
	[ -s late.fed ] || echo 0 >late.fed
	late_try=$((late_try + 1))
done
if half steps && [ "$(looks late)" -ge 2 ]; then
	half late || fail "live late: $(cat late.fed) of $(cat late.total) events read during the run (steps: $(cat steps.fed) of $(cat steps.total)): the sleeping thread held the reader back"
else
	note "the reader got little CPU time during the runs (steps: $(cat steps.fed) of $(cat steps.total) events, late: $(looks late) looks): the sleeping thread's case is not judged"
fi

# A program that exits while two threads allocate without a pause: they
# take new chunks after the recorder gave the file's spare room back at
# the exit. The reader must not read past the file's end (it did: the
# launcher died of SIGBUS in about 1 run in 10, 1 in 4 for `dig -v`), and
# a chunk a thread took as the process ended must not make the log read
# as cut (the header counted it before the file held it: 3 runs in 12
# said "the file ends after 42 of the 44 chunks its header counts"). By
# chance, as the threads and the reader run when the machine lets them:
# 30 runs, each exiting 0 with its report, each log whole.
for i in $(seq 1 30); do
	rm -rf out
	status=0
	"$MMS_LAUNCHER" --output=out -- "$prog" busyexit >busy.out 2>busy.err || status=$?
	[ $status = 0 ] || fail "live busyexit, run $i: the launcher exited $status: $(tail -3 busy.err)"
	grep -q '^msmemscope: recorded ' busy.err || fail "live busyexit, run $i: no report: $(tail -3 busy.err)"
	expect_eq "live busyexit's output" "$(cat busy.out)" done
	log=$(sed -n 's/^msmemscope: recorded .* to \(.*\.mms\)$/\1/p' busy.err)
	summarize "$log"
	expect_key "$log.json" cut false
	expect_key "$log.json" damaged false
done

# Read after the run only, when asked.
rm -rf out
MSMEMSCOPE_LIVE_DEBUG=1 "$MMS_LAUNCHER" --no-live-report --output=out -- "$prog" steps >nolive.out 2>nolive.err ||
	fail "msmemscope --no-live-report exited $?: $(cat nolive.err)"
! grep -q 'events read while' nolive.err ||
	fail "--no-live-report: the log was read during the run: $(grep 'live:' nolive.err)"
# Reports that write files are read after the run.
rm -rf out
MSMEMSCOPE_LIVE_DEBUG=1 "$MMS_LAUNCHER" --analysis=leaks,decompose --output=out -- "$prog" steps >an.out 2>an.err ||
	fail "msmemscope --analysis=leaks,decompose exited $?: $(cat an.err)"
! grep -q 'events read while' an.err || fail "--analysis=leaks,decompose: read during the run"
note "the report read while the program ran is the written log's: steps, threads, a late thread, a fork, a killed program, a wrapper's exec; 30 exits while threads allocate read no byte past the file's end and leave whole logs"
