#!/bin/sh
# SPDX-License-Identifier: MIT
# badfree.sh: frees of no live block are reported as what they are, with
# their events: "double free of a block freed at event N" when the reader
# remembers the first free, "free of an address that is not a live block"
# otherwise; in the launcher's summary, msmemscope-replay --summary (text
# and JSON) and the leaks report (with stacks, a double free's allocation,
# first free and second free under their labels). tests/progs/badfree.c
# frees a pool block twice and a pool address it never handed out; with
# "abort", a heap block twice, which glibc aborts on. --error-exitcode counts them as errors, but
# not the free of no live block a deferred recording holds (badfree
# deferred: a block allocated before msmemscope_start(), freed after).
. "$top_srcdir/tests/progs/lib.sh"

[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"
prog=$MMS_PROGS/badfree

# event_id LOG TAG ADDR N: the id of the N-th (from 1) event of kind TAG
# (MALLOC, FREE) at ADDR, from the replay's event list.
event_id() {
	"$MMS_REPLAY" "$1" --from 0 --json 2>/dev/null | "$MMS_PYTHON" -c '
import json, sys
kind, addr, n = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3])
ids = [e["id"] for e in map(json.loads, sys.stdin) if e["kind"] == kind and int(e["addr"], 16) == addr]
print(ids[n - 1] if len(ids) >= n else "none")' "$2" "$3" "$4"
}

# --- the pool: a double free and an invalid free, no crash -----------------
"$MMS_LAUNCHER" --output=out -- "$prog" >prog.out 2>rec.err || fail "msmemscope -- badfree exited $?: $(cat rec.err)"
set -- out/msmemscope_*/memscope_*.mms
log=$1
pool=$(sed -n 's/.*pool=\(0x[0-9a-f]*\).*/\1/p' prog.out)
[ -n "$pool" ] || fail "the program did not print its arena: $(cat prog.out)"
alloc=$(event_id "$log" MALLOC "$pool" 1)
free1=$(event_id "$log" FREE "$pool" 1)
free2=$(event_id "$log" FREE "$pool" 2)
free3=$(event_id "$log" FREE "$(printf '0x%x' $((pool + 512)))" 1)
[ "$free3" != none ] || fail "no free of the arena's second half in the log"
double="double free of a block freed at event $free1 (arena $pool, 64 bytes, allocated at event $alloc)"
invalid="free of an address that is not a live block (arena $(printf '0x%x' $((pool + 512))))"

grep -q "^  bad frees         2: 1 double free, 1 free of an address that is not a live block\$" rec.err ||
	fail "the launcher's summary does not count the bad frees: $(cat rec.err)"
grep -F "$double, thread 0" rec.err | grep -q "^    event $free2  *double" ||
	fail "the launcher's summary does not name the double free: $(cat rec.err)"
grep -F "$invalid, thread 0" rec.err | grep -q "^    event $free3  *free" ||
	fail "the launcher's summary does not name the invalid free: $(cat rec.err)"
grep -qF "====== Bad frees: 1 double free, 1 free of an address that is not a live block ======" rec.err ||
	fail "the leaks report has no bad frees section: $(cat rec.err)"
grep -qF "event $free2: $double, thread 0" rec.err || fail "the leaks report does not name the double free: $(cat rec.err)"
note "launcher: event $free2 is a double free of the block freed at event $free1; event $free3 an invalid free"

"$MMS_REPLAY" "$log" --summary >sum.txt 2>sum.err || fail "msmemscope-replay --summary exited $?"
grep -q '^bad frees            2: 1 double free, 1 free of an address that is not a live block$' sum.txt ||
	fail "the summary does not count the bad frees: $(cat sum.txt)"
grep -qF "$double" sum.txt || fail "the summary does not name the double free: $(cat sum.txt)"
grep -qF "$invalid" sum.txt || fail "the summary does not name the invalid free: $(cat sum.txt)"
summarize "$log"
j=$log.json
[ ! -s "$log.json.err" ] || fail "--summary --json printed on stderr for a healthy log: $(cat "$log.json.err")"
expect_key $j unmatched_frees 2
expect_key $j double_frees 1
expect_key $j invalid_frees 1
expect_key $j bad_frees.0.event "$free2"
expect_key $j bad_frees.0.kind '"double_free"'
expect_key $j bad_frees.0.freed_at_event "$free1"
expect_key $j bad_frees.0.alloc_event "$alloc"
expect_key $j bad_frees.0.bytes 64
expect_key $j bad_frees.0.memory '"arena"'
expect_key $j bad_frees.1.event "$free3"
expect_key $j bad_frees.1.kind '"invalid_free"'
"$MMS_REPLAY" "$log" --analysis leaks --json >leaks.json 2>/dev/null || fail "leaks --json exited $?"
expect_key leaks.json double_frees 1
expect_key leaks.json invalid_frees 1
expect_key leaks.json bad_frees.0.freed_at_event "$free1"
note "msmemscope-replay: the same in the summary, its JSON and the leaks report"

# --- the heap: glibc aborts on the double free, after the recorder wrote it ---
status=0
"$MMS_LAUNCHER" --output=out2 -- "$prog" abort >abort.out 2>abort.err || status=$?
expect_eq "badfree abort status under the launcher" $status 134
set -- out2/msmemscope_*/memscope_*.mms
log=$1
heap=$(sed -n 's/.*heap=\(0x[0-9a-f]*\).*/\1/p' abort.out)
alloc=$(event_id "$log" MALLOC "$heap" 1)
free1=$(event_id "$log" FREE "$heap" 1)
free2=$(event_id "$log" FREE "$heap" 2)
[ "$free2" != none ] || fail "the recorder did not write the second free of $heap"
grep -F "double free of a block freed at event $free1 (HOST $heap, 48 bytes, allocated at event $alloc), thread 0" abort.err |
	grep -q "^    event $free2  *double" ||
	fail "the launcher's summary does not name the heap's double free: $(cat abort.err)"
grep -q "^  bad frees         3: 2 double frees, 1 free of an address that is not a live block\$" abort.err ||
	fail "the launcher's summary does not count the heap's double free: $(cat abort.err)"
note "heap: glibc aborted on event $free2, a double free of the block freed at event $free1"

# With stacks, the leaks report shows each of the double free's three
# stacks under its label: the block's allocation, the first free, the
# second.
status=0
"$MMS_LAUNCHER" --output=out5 --call-stack=c:8 -- "$prog" abort >st.out 2>st.err || status=$?
expect_eq "badfree abort status with stacks" $status 134
set -- out5/msmemscope_*/memscope_*.mms
log=$1
heap=$(sed -n 's/.*heap=\(0x[0-9a-f]*\).*/\1/p' st.out)
free1=$(event_id "$log" FREE "$heap" 1)
"$MMS_REPLAY" "$log" --analysis leaks >st.txt 2>&1 || fail "leaks over the stacked log exited $?: $(cat st.txt)"
for label in "    allocated at:" "    first freed (event $free1) at:" "    freed again at:"; do
	grep -A1 -xF "$label" st.txt | tail -n 1 | grep -q 'main' ||
		fail "the double free's '$label' is not followed by a stack in main: $(cat st.txt)"
done
"$MMS_REPLAY" "$log" --analysis leaks --json >st.json 2>/dev/null || fail "leaks --json exited $?"
"$MMS_PYTHON" - st.json "$free1" <<'PYJ' || fail "the JSON's double free has no first free's stack: $(head -c 800 st.json)"
import json, sys
d = json.load(open(sys.argv[1]))
b = [x for x in d["bad_frees"] if x["kind"] == "double_free" and x["freed_at_event"] == int(sys.argv[2])][0]
assert b["freed_stack"] > 0 and b["stack"] > 0, b
PYJ
note "the double free's allocation, first free and second free stacks, labelled"

# --- --error-exitcode: bad frees are errors, where the log saw the run whole --
status=0
"$MMS_LAUNCHER" --output=out3 --error-exitcode=5 -- "$prog" >ec.out 2>ec.err || status=$?
expect_eq "badfree's status with --error-exitcode=5" $status 5
grep -q '^msmemscope: 2 errors: 0 leaks (definite,possible), 2 bad frees and 0 guard findings: exit status 5 (--error-exitcode)$' \
	ec.err || fail "the launcher does not count the bad frees as errors: $(tail -3 ec.err)"
# Recorded from msmemscope_start() on, the free of a block allocated before
# is a free of no live block in the log, counted apart (unrecorded frees),
# and no error of the program's.
status=0
"$MMS_LAUNCHER" --output=out4 --collect-mode=deferred --error-exitcode=5 -- "$prog" deferred >def.out 2>def.err ||
	status=$?
expect_eq "badfree deferred's status with --error-exitcode=5" $status 0
grep -q '^  unrecorded frees  1 of blocks allocated while nothing was recorded: not errors$' def.err ||
	fail "the deferred log does not show its free of no live block: $(cat def.err)"
! grep -q 'bad frees' def.err || fail "a deferred log's free of no live block called a bad free: $(cat def.err)"
! grep -q 'errors:' def.err || fail "a deferred log's free of no live block counted as an error: $(cat def.err)"
note "--error-exitcode: 2 bad frees are errors; a deferred recording's free of a block allocated before is not"
