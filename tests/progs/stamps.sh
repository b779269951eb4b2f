#!/bin/sh
# SPDX-License-Identifier: MIT
# stamps.sh: while one thread of the process records, its allocations and
# frees read the TSC only as often as their times need (doc/recorder.md,
# "Order"); once a second thread records, every event reads it.
# tests/progs/stamps allocates beside a thread that records nothing (a
# 30 ms pause, a burst of 40,000 events with a few mappings, another
# pause), then 4 threads free main's blocks and each other's. The replay
# must match every free, count the program's allocations exactly, keep
# times in order, and give the events after each pause their real time;
# by default fewer events of the burst than 40,000 have a time of their
# own (the idle thread does not count), with MSMEMSCOPE_CLOCK=exact every
# one reads the TSC (nearly all have a time of their own: below).
. "$top_srcdir/tests/progs/lib.sh"

kept=50000
"$MMS_PROGS/stamps" $kept >native.out || fail "stamps natively exited $?"

# check_times LOG: checks the CSV dump of LOG (times in order; the pauses) and
# prints the number of distinct times among the burst's events.
check_times() {
	rm -f "$1.csv"
	"$MMS_REPLAY" "$1" --export csv -o "$1.csv" 2>"$1.csv.err" || fail "--export csv of $1 exited $?: $(cat "$1.csv.err")"
	"$MMS_PYTHON" - "$1.csv" <<'PY'
import csv, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
times = [int(r["Timestamp(ns)"]) for r in rows]
bad = [i for i in range(1, len(times)) if times[i] < times[i - 1]]
if bad:
    sys.exit("times go back at rows %s" % bad[:5])
def size(r):
    m = re.search(r"size:(\d+)", r["Attr"])
    return int(m.group(1)) if m else None
at = {}
for i, r in enumerate(rows):
    if r["Event"] == "MALLOC" and size(r) in (1001, 1002, 1003) and size(r) not in at:
        at[size(r)] = i
if sorted(at) != [1001, 1002, 1003]:
    sys.exit("the blocks of 1001, 1002 and 1003 bytes: found %s" % sorted(at))
a, b, c = (times[at[s]] for s in (1001, 1002, 1003))
if b - a < 29_000_000:
    sys.exit("the block allocated 30 ms after the first is %d ns after it" % (b - a))
host = [i for i in range(at[1002] + 1, at[1003]) if rows[i]["Event Type"] == "HOST"]
burst = host[:40000]
if len(host) != 40000 + 20 * 202:
    sys.exit("the burst and the rounds have %d events, expected %d" % (len(host), 40000 + 20 * 202))
if c - times[burst[-1]] < 29_000_000:
    sys.exit("the block allocated 30 ms after the burst is %d ns after it" % (c - times[burst[-1]]))
print(len(set(times[i] for i in burst)))
PY
}

for clock in tsc exact; do
	log=$clock.mms
	MSMEMSCOPE_CLOCK=$clock record $log "$MMS_PROGS/stamps" $kept >$log.out || fail "stamps ($clock) exited $?"
	expect_eq "stamps output ($clock)" "$(cat $log.out)" "$(cat native.out)"
	summarize $log
	j=$log.json
	expect_consistent $j
	# The program's own, plus what glibc allocates to start 4 threads.
	expect_ge "allocations ($clock)" "$(jget $j allocs)" "$(field allocs "$(cat native.out)")"
	expect_eq "frees ($clock)" "$(($(jget $j allocs) - $(jget $j frees)))" "$(jget $j live_blocks)"
	expect_key $j threads 5
	expect_key $j lost_events 0
	expect_key $j complete true
	distinct=$(check_times $log) || fail "times of $log: $distinct"
	# The header's flags (offset 24): CLOCK_BACKWARDS (bit 4) is not set,
	# although the burst's mappings read the TSC between its repeats.
	flags=$(od -An -tu4 -j24 -N4 $log | tr -d ' ')
	expect_eq "CLOCK_BACKWARDS in the header's flags ($clock)" $((flags & 16)) 0
	case $clock in
	tsc)
		# At least every 16th event reads the TSC (a burst of 40,000
		# takes a few milliseconds: more readings at each coarse tick).
		expect_ge "distinct times in the burst ($clock)" "$distinct" 2500
		# And not at every event: the burst takes milliseconds, far
		# fewer than the 625 coarse ticks that would read it 40,000
		# times.
		[ "$distinct" -lt 40000 ] || fail "every event of the burst read the TSC: the one-thread stamps are off"
		;;
	exact)
		# A reading at every event: each its own time where the TSC
		# counts finer than the events come. On a virtual machine
		# whose TSC moves in steps of about 10 ns, a free and the
		# malloc that takes its block back right after may read one
		# value (seen: 3 or 4 of 40,000), so nearly all, never the
		# few the default gives.
		expect_ge "distinct times in the burst ($clock)" "$distinct" 36000
		;;
	esac
	note "$clock: every free matched, the pauses timed, $distinct distinct times among the burst's 40000 events"
done
