#!/bin/sh
# SPDX-License-Identifier: MIT
# deferred.sh: a recording with --collect-mode=deferred says only what its
# windows show. tests/progs/deferred.c allocates blocks in a first window
# and frees one after msmemscope_stop(): the blocks live in the log that
# were allocated before the stop are neither leaks nor errors ("live when
# recording stopped", reach "unrecorded"), the free of a block allocated
# before msmemscope_start() is no bad free (unrecorded_frees), and a leak
# in a window that lasts to exit is still a leak (--error-exitcode counts
# it alone).
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
grep -q '^      fate unknown  2 blocks, 500 bytes   allocated before msmemscope_stop()' two.err ||
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
