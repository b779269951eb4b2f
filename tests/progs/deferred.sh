#!/bin/sh
# SPDX-License-Identifier: MIT
# deferred.sh: a recording with --collect-mode=deferred says only what its
# windows show. tests/progs/deferred.c allocates blocks in a first window
# and frees one after msmemscope_stop(): the blocks live in the log that
# were allocated before the stop are neither leaks nor errors ("live when
# recording stopped", reach "unrecorded"), the free of a block allocated
# before msmemscope_start() is no bad free (unrecorded_frees), and a leak
# in a window that lasts to exit is still a leak (--error-exitcode counts
# it alone). The same holds of windows that are steps recorded with
# --steps, for the leaks at exit and the per-step rule.
. "$top_srcdir/tests/progs/lib.sh"

[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"
prog=$MMS_PROGS/deferred

# Two windows: the 400 bytes of the second are the one leak.
status=0
"$MMS_LAUNCHER" --output=two --collect-mode=deferred --error-exitcode=5 -- "$prog" >two.out 2>two.err || status=$?
log=$(launched_log two.err)
[ -f "$log" ] || fail "no log of deferred: $(cat two.err)"
expect_eq "deferred's status with --error-exitcode=5 (one real leak)" $status 5
grep -q '^msmemscope: 1 error: 1 leak ' two.err || fail "not 1 error counted: $(cat two.err)"
grep -q '^      leaked        1 block, 400 bytes' two.err || fail "the summary's leaked line is not the 400 bytes: $(cat two.err)"
grep -q '^      fate unknown  2 blocks, 500 bytes   allocated before recording stopped' two.err ||
	fail "the summary does not set apart the 2 blocks live when recording stopped: $(cat two.err)"
grep -q '^  unrecorded frees  1 of blocks allocated while nothing was recorded: not errors$' two.err ||
	fail "the summary does not count the free of a block allocated before msmemscope_start(): $(cat two.err)"
! grep -q 'bad frees\|Bad frees' two.err || fail "a free of an unrecorded block is called a bad free: $(cat two.err)"
grep -q '^====== Live when recording stopped: 2 allocation(s), 500 bytes (not counted as leaks' two.err ||
	fail "the leaks report has no section for the blocks live when recording stopped: $(cat two.err)"

summarize "$log"
expect_key "$log.json" invalid_frees 0
expect_key "$log.json" double_frees 0
expect_key "$log.json" unrecorded_frees 1
expect_key "$log.json" reach.unrecorded.blocks 2
expect_key "$log.json" reach.unrecorded.bytes 500
expect_key "$log.json" reach.leaked.bytes 400
"$MMS_REPLAY" "$log" --analysis leaks --json >leaks.json 2>leaks.err || fail "leaks --json failed: $(cat leaks.err)"
expect_key leaks.json unrecorded.blocks 2
expect_key leaks.json unrecorded.bytes 500
expect_key leaks.json unrecorded_frees 1
expect_key leaks.json invalid_frees 0
note "two windows: 1 leak (400 bytes), 2 blocks live when recording stopped not counted, 1 unrecorded free"

# Stopped before exit: nothing the log can call a leak.
status=0
"$MMS_LAUNCHER" --output=stop --collect-mode=deferred --error-exitcode=5 -- "$prog" stop >stop.out 2>stop.err || status=$?
expect_eq "deferred stop's status with --error-exitcode=5" $status 0
grep -q '^No leaks at exit that the log can tell' stop.err || fail "deferred stop: $(cat stop.err)"
! grep -q 'leaked at exit' stop.err || fail "deferred stop: a block freed after msmemscope_stop() called leaked: $(cat stop.err)"
cmp -s stop.out two.out && fail "the two runs printed the same"
grep -q '^deferred stop$' stop.out || fail "deferred stop printed: $(cat stop.out)"
note "stopped before exit: no leak, exit status 0 under --error-exitcode"

# The same windows as steps 2 and 4 of four, recorded with --steps=2,4:
# the end of step 2 stops recording (a COLLECT stop the --steps filter
# wrote), so its two blocks, one freed in step 3, are neither leaks at
# exit nor per-step leaks; step 4's 400 bytes are the one leak.
status=0
"$MMS_LAUNCHER" --output=steps --steps=2,4 --error-exitcode=5 -- "$prog" steps >steps.out 2>steps.err || status=$?
log=$(launched_log steps.err)
[ -f "$log" ] || fail "no log of deferred steps: $(cat steps.err)"
expect_eq "deferred steps' status under --steps=2,4 with --error-exitcode=5 (one real leak)" $status 5
grep -q '^msmemscope: 1 error: 1 leak ' steps.err || fail "--steps=2,4: not 1 error counted: $(cat steps.err)"
grep -q '^      leaked        1 block, 400 bytes' steps.err || fail "--steps=2,4: the leaked line: $(cat steps.err)"
grep -q '^      fate unknown  2 blocks, 500 bytes   allocated before recording stopped' steps.err ||
	fail "--steps=2,4: the 2 blocks of step 2 are not set apart: $(cat steps.err)"
grep -q '^No per-step leaks: .* live when recording stopped' steps.err ||
	fail "--steps=2,4: step 2's blocks, live when step 3 (not recorded) ended, are per-step leaks: $(cat steps.err)"
grep -q '^Live when recording stopped before the end of the step after their own: 2 allocation(s), 500 bytes' \
	steps.err || fail "--steps=2,4: the per-step rule does not set step 2's blocks apart: $(cat steps.err)"
"$MMS_REPLAY" "$log" --from 0 >steps.events 2>&1 || fail "--from 0 failed: $(cat steps.events)"
expect_eq "COLLECT events the --steps filter wrote" \
	"$(grep -c 'COLLECT *stop (--steps)$' steps.events) $(grep -c 'COLLECT *start (--steps)$' steps.events)" "1 2"
# --step of a step the filter left out says so; of one it kept, nothing.
"$MMS_REPLAY" "$log" --step 3 >step3.txt 2>&1 || fail "--step 3 failed: $(cat step3.txt)"
grep -q '^  not recorded (--steps=2,4): its memory events are not in the log' step3.txt ||
	fail "--step 3 (not recorded) does not say so: $(cat step3.txt)"
"$MMS_REPLAY" "$log" --step 2 >step2.txt 2>&1 || fail "--step 2 failed: $(cat step2.txt)"
! grep -q 'not recorded' step2.txt || fail "--step 2 (recorded) says it was not: $(cat step2.txt)"
# So does --compare-steps of such a step.
"$MMS_REPLAY" "$log" --compare-steps 2,3 --output-dir cmp >cmp23.out 2>cmp23.err || fail "--compare-steps 2,3: $(cat cmp23.err)"
grep -q 'warning: compare: .*: step 3 was not recorded (--steps=2,4)' cmp23.err ||
	fail "--compare-steps 2,3 does not say step 3 was not recorded: $(cat cmp23.err)"
"$MMS_REPLAY" "$log" --compare-steps 2,4 --output-dir cmp >cmp24.out 2>cmp24.err || fail "--compare-steps 2,4: $(cat cmp24.err)"
! grep -q 'not recorded' cmp24.err || fail "--compare-steps 2,4 (both recorded): $(cat cmp24.err)"
"$MMS_REPLAY" "$log" --analysis leaks --json >steps-leaks.json 2>steps-leaks.err ||
	fail "leaks --json failed: $(cat steps-leaks.err)"
expect_key steps-leaks.json per_step.leaks 0
expect_key steps-leaks.json per_step_unrecorded.blocks 2
expect_key steps-leaks.json per_step_unrecorded.bytes 500
expect_key steps-leaks.json unrecorded.bytes 500
expect_key steps-leaks.json at_exit.leaks 1
expect_key steps-leaks.json unrecorded_frees 1
expect_key steps-leaks.json invalid_frees 0
note "--steps=2,4: 1 leak (400 bytes); step 2's 2 blocks set apart at exit and by the per-step rule"

# Step 4 not recorded: nothing the log can call a leak.
status=0
"$MMS_LAUNCHER" --output=step2 --steps=2 --error-exitcode=5 -- "$prog" steps >step2.out 2>step2.err || status=$?
expect_eq "deferred steps' status under --steps=2 with --error-exitcode=5" $status 0
grep -q '^No leaks at exit that the log can tell' step2.err || fail "--steps=2: $(cat step2.err)"
! grep -q 'Detected memory leaks' step2.err || fail "--steps=2: per-step leaks found: $(cat step2.err)"
cmp -s step2.out steps.out || fail "deferred steps printed differently under --steps=2 and --steps=2,4"
note "--steps=2: no leak, exit status 0 under --error-exitcode"

# A step the program never began (it runs 4): nothing is recorded, and the
# report says so rather than "every block was freed".
status=0
"$MMS_LAUNCHER" --output=step9 --steps=2,9 --error-exitcode=5 -- "$prog" steps >step9.out 2>step9.err || status=$?
expect_eq "deferred steps' status under --steps=2,9" $status 0
grep -q '^--steps asked for step 9, which the program never began (the log has 3 steps): no memory event of it is in the log\.$' \
	step9.err || fail "--steps=2,9: the report does not say step 9 never began: $(cat step9.err)"
grep -q '^No leaks at exit that the log can tell' step9.err || fail "--steps=2,9: $(cat step9.err)"
"$MMS_LAUNCHER" --output=step7 --steps=7 -- "$prog" steps >step7.out 2>step7.err || fail "--steps=7 failed: $(cat step7.err)"
grep -q '^No leaks at exit that the log can tell: every block it recorded was freed (recorded with --steps' step7.err ||
	fail "--steps=7 (nothing recorded): $(cat step7.err)"
! grep -q '^No leaks at exit: every block was freed' step7.err || fail "--steps=7: a claim of what was not recorded"
note "--steps=2,9 and --steps=7: the steps never begun are named, no claim of what was not recorded"

# Immediate mode, and the program calls msmemscope_stop() before it loses
# 700 bytes: no block is live in the log, and the report says what the
# log can tell (why too), never that every block was freed.
status=0
"$MMS_LAUNCHER" --output=pause --error-exitcode=5 -- "$prog" pause >pause.out 2>pause.err || status=$?
expect_eq "deferred pause's status with --error-exitcode=5" $status 0
grep -q '^deferred pause$' pause.out || fail "deferred pause printed: $(cat pause.out)"
grep -q '^No leaks at exit that the log can tell: every block it recorded was freed (msmemscope_stop() paused recording' \
	pause.err || fail "stopped in immediate mode: $(cat pause.err)"
grep -q 'warning: .*: the program called msmemscope_stop(): memory events while recording was off are not in the log' \
	pause.err || fail "stopped in immediate mode: no warning: $(cat pause.err)"
! grep -q 'every block was freed' pause.err || fail "stopped in immediate mode: a claim of what was not recorded"
log=$(launched_log pause.err)
"$MMS_REPLAY" "$log" --analysis leaks >pause.rep 2>&1 || fail "leaks of the paused log: $(cat pause.rep)"
grep -q '^No leaks at exit that the log can tell' pause.rep || fail "replay of the paused log: $(cat pause.rep)"
note "msmemscope_stop() in immediate mode: no claim of what was not recorded"

# Deferred, and the program never calls msmemscope_start(): nothing was
# collected, which the report says rather than "every block was freed".
"$MMS_LAUNCHER" --output=nostart --collect-mode=deferred -- /bin/sh -c true >nostart.out 2>nostart.err ||
	fail "sh under --collect-mode=deferred failed: $(cat nostart.err)"
grep -q '^No leaks at exit that the log can tell: it recorded no block (recorded with --collect-mode=deferred, and the program never called msmemscope_start())\.$' \
	nostart.err || fail "deferred, never started: $(cat nostart.err)"
note "deferred, never started: the report says it recorded no block"

# Steps recorded in part: collect=deferred with msmemscope_start() and
# msmemscope_stop() inside steps (step 1 starts half-way, 2 and 3 whole,
# 4 stops half-way, 5 not recorded, 6 starts half-way), then the same
# with --steps=2,3,5 (which leaves out 1, 4 and 6; 5 is stopped). Each
# step says how much of it the log has (--step N, the leaks report's
# steps), and the tables of the steps compare only steps recorded whole:
# step 3's 100 bytes more than step 2 are named, no step is compared with
# one the log has only part of.
mixed_steps() { # LOG: the recorded value of --step 1..6, space-separated
	_r=""
	for _n in 1 2 3 4 5 6; do
		"$MMS_REPLAY" "$1" --step $_n --json >mstep.json 2>mstep.err || fail "--step $_n: $(cat mstep.err)"
		_r="$_r $(jget mstep.json recorded)"
	done
	printf '%s\n' "$_r"
}
"$MMS_LAUNCHER" --output=mixed --collect-mode=deferred -- "$prog" mixed >mixed.out 2>mixed.err ||
	fail "deferred mixed failed: $(cat mixed.err)"
log=$(launched_log mixed.err)
[ -f "$log" ] || fail "no log of deferred mixed: $(cat mixed.err)"
expect_eq "how much of steps 1-6 the log has (deferred)" "$(mixed_steps "$log")" \
	' "part" "all" "all" "part" "none" "part"'
grep -q '^  step 3: 300 bytes in 2 allocation(s), 100 bytes more than step 2$' mixed.err ||
	fail "deferred mixed: step 3's 100 bytes more than step 2 are not named: $(cat mixed.err)"
! grep -q 'more than step [1456]$' mixed.err || fail "deferred mixed: a step compared with one recorded in part: $(cat mixed.err)"
grep -q '^Steps not recorded whole (collect=deferred), left out of the tables above: 1, 4-6\.$' mixed.err ||
	fail "deferred mixed: the steps left out of the tables are not named: $(cat mixed.err)"
"$MMS_REPLAY" "$log" --step 4 >mstep4.txt 2>&1 || fail "--step 4: $(cat mstep4.txt)"
grep -q '^  recorded in part (collect=deferred): collection was off for some of it' mstep4.txt ||
	fail "--step 4 (stopped half-way) does not say it was recorded in part: $(cat mstep4.txt)"
grep -q '^  peak within the step: .* (at event #[0-9]*, in the part recorded)$' mstep4.txt ||
	fail "--step 4: its peak is not said to be the part recorded's: $(cat mstep4.txt)"
"$MMS_REPLAY" "$log" --step 5 >mstep5.txt 2>&1 || fail "--step 5: $(cat mstep5.txt)"
grep -q '^  peak within the step, what it allocated and freed: not known$' mstep5.txt ||
	fail "--step 5 (not recorded) claims a peak or counts: $(cat mstep5.txt)"
"$MMS_REPLAY" "$log" --step 5 >mstep5b.txt 2>&1 || fail "--step 5: $(cat mstep5b.txt)"
grep -q '^Allocated in this step and still live at its end: not known (not recorded)$' mstep5b.txt ||
	fail "--step 5 (not recorded) claims what it kept: $(cat mstep5b.txt)"
# Interactive: at step 5, step 3's block (live after step 4, which
# stopped recording half-way) is not called a leak.
printf 'goto step 5\nleaks\nlive\n' | "$MMS_REPLAY" "$log" -i >mi.txt 2>&1 || fail "-i: $(cat mi.txt)"
grep -q '^Leaks (allocated in steps 2 to 3, still live after the next step ended): 0 blocks, 0 bytes (none)$' mi.txt ||
	fail "-i leaks at step 5 counts a block allocated before recording stopped: $(cat mi.txt)"
grep -q '^Not counted: 1 block, 100 bytes allocated before recording stopped' mi.txt ||
	fail "-i leaks at step 5 does not say what it set apart: $(cat mi.txt)"
grep -q '^  100 bytes in 1 block (largest 0x[0-9a-f]*, 100 bytes, step 3, allocated before recording stopped)$' mi.txt ||
	fail "-i live does not mark the block allocated before recording stopped: $(cat mi.txt)"
"$MMS_REPLAY" "$log" --analysis leaks --json >mleaks.json 2>mleaks.err || fail "leaks --json: $(cat mleaks.err)"
expect_key mleaks.json steps.4.recorded '"none"'
expect_key mleaks.json steps.2.more_than_previous true
expect_key mleaks.json steps.3.more_than_previous null
"$MMS_REPLAY" "$log" --compare-steps 3,4 --output-dir mcmp >mcmp.out 2>mcmp.err || fail "--compare-steps 3,4: $(cat mcmp.err)"
grep -q 'warning: compare: .*: step 4 was recorded in part (collect=deferred)' mcmp.err ||
	fail "--compare-steps 3,4 does not say step 4 was recorded in part: $(cat mcmp.err)"
"$MMS_REPLAY" "$log" --export db -o mixed.db >mdb.out 2>&1 || fail "--export db: $(cat mdb.out)"
expect_eq "the SQLite export's steps.recorded" \
	"$("$MMS_PYTHON" -c 'import sqlite3, sys; print(" ".join(r[0] for r in sqlite3.connect(sys.argv[1]).execute("SELECT recorded FROM steps ORDER BY step")))' mixed.db)" \
	"part all all part none part"
"$MMS_LAUNCHER" --output=mixed2 --collect-mode=deferred --steps=2,3,5 -- "$prog" mixed >mixed2.out 2>mixed2.err ||
	fail "deferred mixed --steps=2,3,5 failed: $(cat mixed2.err)"
log=$(launched_log mixed2.err)
expect_eq "how much of steps 1-6 the log has (deferred, --steps=2,3,5)" "$(mixed_steps "$log")" \
	' "none" "all" "all" "none" "none" "none"'
"$MMS_REPLAY" "$log" --step 1 >m2step1.txt 2>&1 || fail "--step 1: $(cat m2step1.txt)"
grep -q '^  not recorded (--steps=2,3,5, collect=deferred): its memory events are not in the log' m2step1.txt ||
	fail "--step 1 (left out by --steps) does not say so: $(cat m2step1.txt)"
grep -q '^Steps not recorded whole (--steps, collect=deferred), left out of the tables above: 1, 4-6\.$' mixed2.err ||
	fail "deferred mixed --steps=2,3,5: the steps left out and why are not named: $(cat mixed2.err)"
note "steps recorded in part or not at all say so; the step tables compare steps recorded whole"
