#!/bin/sh
# SPDX-License-Identifier: MIT
# robust.sh: the recorder must not break programs: C++ new/delete from
# std::threads (exact counts), exit paths that skip normal teardown (_exit,
# which the recorder interposes, so its log is complete; abort, whose log
# still opens, not complete), each log with every block allocated,
# and a high-frequency SIGALRM timer whose handler interrupts the hooks,
# either without allocating or (undefined behaviour, but common) calling
# malloc and free itself: no crash, no deadlock, a consistent log.
. "$top_srcdir/tests/progs/lib.sh"

# 1. C++: 4 threads x 50000 iterations, 2 allocations and 2 frees each.
record cxx0.mms "$MMS_PROGS/cxx" 4 0 >cxx0.out || fail "cxx 4 0 exited $?"
"$MMS_PROGS/cxx" 4 50000 >cxx-native.out || fail "cxx natively exited $?"
record cxx.mms "$MMS_PROGS/cxx" 4 50000 >cxx.out || fail "cxx under the recorder exited $?"
cmp -s cxx-native.out cxx.out || fail "cxx printed something else under the recorder: $(cat cxx.out)"
summarize cxx0.mms
summarize cxx.mms
expect_consistent cxx.mms.json
expect_key cxx.mms.json allocs $(($(jget cxx0.mms.json allocs) + 400000))
expect_key cxx.mms.json frees $(($(jget cxx0.mms.json frees) + 400000))
expect_key cxx.mms.json live_blocks "$(jget cxx0.mms.json live_blocks)"
# A thread that allocates after its exit destructor (C++ thread_local
# teardown) resumes its stamps: the log has no order damage.
expect_key cxx.mms.json damaged false
note "C++: 400000 new/delete and string allocations from 4 std::threads, all matched"

# 2. Exit paths.
for mode in exit _exit abort; do
	log=exit-$mode.mms
	status=0
	record $log "$MMS_PROGS/exits" $mode 1000 >$log.out 2>/dev/null || status=$?
	case $mode in
	exit) want_status=0 want_complete=true ;;
	# The recorder interposes _exit (shells and forked children leave
	# that way), so the log is finished: complete; abort is not.
	_exit) want_status=3 want_complete=true ;;
	abort) want_status=134 want_complete=false ;;
	esac
	expect_eq "exits $mode status" $status $want_status
	expect_eq "exits $mode output" "$(cat $log.out)" "ready 1000"
	summarize $log
	j=$log.json
	expect_consistent $j
	expect_key $j complete $want_complete
	expect_ge "$log allocations" "$(jget $j allocs)" 1000
	expect_ge "$log live blocks" "$(jget $j live_blocks)" 1000
	expect_ge "$log live bytes" "$(jget $j live_bytes)" 48000
	note "$mode: status $status, log opens, complete=$want_complete, 1000 blocks live"
done

# 3. Signals inside the hooks: a 20 us SIGALRM timer over 2M malloc/free.
iterations=2000000
for variant in quiet malloc; do
	log=signals-$variant.mms
	status=0
	timeout 120 env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG="$log" \
		"$MMS_PROGS/signals" $variant $iterations 20 >$log.out || status=$?
	[ $status != 124 ] || fail "signals $variant deadlocked under the recorder (killed after 120 s)"
	expect_eq "signals $variant status" $status 0
	line=$(cat $log.out)
	calls=$(field handler_calls "$line")
	mallocs=$(field handler_mallocs "$line")
	expect_ge "signals $variant handler calls" "$calls" 1
	summarize $log
	j=$log.json
	expect_consistent $j
	# The main loop's 2M blocks and the handler's, recorded or counted lost.
	if [ $variant = quiet ]; then
		expect_key $j lost_events 0
	fi
	recorded=$(($(jget $j allocs) + $(jget $j lost_events)))
	expect_ge "$log allocations recorded or lost" $recorded $((iterations + mallocs))
	note "$variant handler: $calls signals, $mallocs mallocs in the handler, $(jget $j lost_events) events lost, consistent"
done
