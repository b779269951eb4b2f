#!/bin/sh
# SPDX-License-Identifier: MIT
# threads8.sh: 8 threads allocate 200k blocks each and free each other's
# blocks through a shared queue. On every run and with both clocks (rdtsc
# and the atomic counter), the replay must match every free to a live block,
# never see an address handed out twice, and count exactly the program's
# own allocations on top of what the C runtime allocates by itself.
. "$top_srcdir/tests/progs/lib.sh"

threads=8
blocks=${MMS_THREADS8_BLOCKS:-200000}
keep=10
runs=${MMS_THREADS8_RUNS:-2}

# The runtime's own allocations (thread set-up), with no blocks of ours.
record base.mms "$MMS_PROGS/threads8" $threads 0 0 >base.out || fail "threads8 with 0 blocks exited $?"
summarize base.mms
expect_consistent base.mms.json
base_allocs=$(jget base.mms.json allocs)
base_frees=$(jget base.mms.json frees)
base_bytes=$(jget base.mms.json bytes_allocated)
base_live=$(jget base.mms.json live_blocks)
base_live_bytes=$(jget base.mms.json live_bytes)

"$MMS_PROGS/threads8" $threads "$blocks" $keep >native.out || fail "threads8 natively exited $?"
for clock in tsc counter; do
	run=1
	while [ $run -le "$runs" ]; do
		log=$clock.$run.mms
		if [ $clock = counter ]; then
			MSMEMSCOPE_CLOCK=counter record $log "$MMS_PROGS/threads8" $threads "$blocks" $keep >$log.out ||
				fail "threads8 under the recorder ($clock) exited $?"
		else
			record $log "$MMS_PROGS/threads8" $threads "$blocks" $keep >$log.out ||
				fail "threads8 under the recorder ($clock) exited $?"
		fi
		line=$(cat $log.out)
		# The counts are the program's own, the same on every run; only
		# "live_bytes" and "cross" (frees by another thread) depend on
		# the scheduling.
		expect_eq "threads8 output under the recorder" "${line% live_bytes=*}" "$(sed 's/ live_bytes=.*//' native.out)"
		summarize $log
		j=$log.json
		expect_consistent $j
		expect_key $j allocs $((base_allocs + $(field allocs "$line")))
		expect_key $j frees $((base_frees + $(field frees "$line")))
		expect_key $j bytes_allocated $((base_bytes + $(field bytes "$line")))
		expect_key $j live_blocks $((base_live + $(field live "$line")))
		expect_key $j live_bytes $((base_live_bytes + $(field live_bytes "$line")))
		expect_key $j threads $((threads + 1))
		expect_key $j lost_events 0
		expect_key $j complete true
		expect_ge "$log blocks freed by another thread" "$(field cross "$line")" 1000
		note "$clock run $run: $(field allocs "$line") allocations, $(field cross "$line") freed across threads: all matched"
		run=$((run + 1))
	done
done

# With call stacks, libunwind keeps a cache per thread, which it maps while
# the recorder unwinds and unmaps when the thread exits: neither is the
# program's. The log holds no munmap of it (8 threads gave 8 "frees" of
# mappings never allocated).
MSMEMSCOPE_CONFIG="call_stack=16" record stacks.mms "$MMS_PROGS/threads8" $threads 1000 $keep >stacks.out ||
	fail "threads8 with call stacks exited $?"
summarize stacks.mms
expect_key stacks.mms.json kinds.mmap.allocs 0
expect_key stacks.mms.json kinds.mmap.frees 0
note "call stacks: libunwind's per-thread caches are not recorded as the program's munmaps"
