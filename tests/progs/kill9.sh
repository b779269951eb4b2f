#!/bin/sh
# SPDX-License-Identifier: MIT
# kill9.sh: a program that reports, after each malloc has returned, how
# many have returned, is killed with SIGKILL in the middle of its work. The
# log must open (no damage, not complete) and hold at least as many
# allocations as the last progress the program reported, per thread; and
# its frees must all match live blocks.
. "$top_srcdir/tests/progs/lib.sh"

# kill_at LOG THREADS TARGET: runs kill9 with its progress in LOG.progress,
# waits until thread 0 reported TARGET mallocs, kills it with SIGKILL.
kill_at() {
	: >"$1.progress"
	env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG="$1" "$MMS_PROGS/kill9" 3 "$2" 3>>"$1.progress" &
	pid=$!
	tries=0
	while :; do
		last=$(tail -n 1 "$1.progress" | sed -n 's/^0 \([0-9]*\)$/\1/p')
		[ -n "$last" ] && [ "$last" -ge "$3" ] && break
		kill -0 $pid 2>/dev/null || fail "kill9 died before reaching $3 allocations"
		tries=$((tries + 1))
		[ $tries -le 6000 ] || fail "kill9 did not reach $3 allocations in 60 s"
		sleep 0.01
	done
	kill -KILL $pid
	status=0
	wait $pid || status=$?
	expect_eq "kill9 exit status" $status 137
}

# reported LOG: the sum over threads of the last whole progress line of each.
reported() {
	# A line cut by the kill has no newline; sed drops it.
	sed -n '/^[0-9]* [0-9]*$/p' "$1.progress" |
		awk '{ if ($2 > n[$1]) n[$1] = $2 } END { s = 0; for (t in n) s += n[t]; print s }'
}

for case in 1:20000 1:200000 2:100000; do
	threads=${case%%:*}
	target=${case#*:}
	log=kill9-$threads-$target.mms
	kill_at $log $threads $target
	summarize $log
	j=$log.json
	done_allocs=$(reported $log)
	expect_key $j complete false
	expect_key $j damaged false
	expect_key $j unmatched_frees 0
	expect_key $j double_allocs 0
	expect_ge "$log allocations in the log" "$(jget $j allocs)" "$done_allocs"
	note "$threads thread(s) killed after $done_allocs reported mallocs: the log holds $(jget $j allocs)"
done
