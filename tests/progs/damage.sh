#!/bin/sh
# SPDX-License-Identifier: MIT
# damage.sh: the reader over cut and damaged logs. Two recordings (threads8:
# two threads handing blocks to each other; leaks: steps, operators, a
# pool), rewritten into 4 KiB chunks so that they have many, go through
# damagecheck: cut at every chunk boundary and at random offsets, and with
# random bytes changed, every query and export of the library must answer
# up to the cut or the damage, or the open must refuse with an offset and a
# reason; a log only cut must replay a consistent prefix. Then the commands
# over a few copies: every query, analysis, export and transform answers
# with exit 0 and a warning that says where the log is cut or damaged and
# where the replay stops, or refuses with exit 1 and the file, the offset
# and the reason; never another status, never a sanitizer report.
# MMS_DAMAGE_SEED picks the random copies (default 1).
. "$top_srcdir/tests/progs/lib.sh"

seed=${MMS_DAMAGE_SEED:-1}
check=$MMS_PROGS/damagecheck
[ -x "$check" ] || fail "damagecheck is not built: $check"

# --- two recordings, rewritten into 4 KiB chunks -----------------------------
MSMEMSCOPE_CONFIG="call_stack=6" record t8.raw "$MMS_PROGS/threads8" 2 2000 6 >t8.out ||
	fail "threads8 exited $? under the recorder"
MSMEMSCOPE_CONFIG="call_stack=6" record lk.raw "$MMS_PROGS/leaks" >lk.out || fail "leaks exited $? under the recorder"
for l in t8 lk; do
	"$MMS_PYTHON" "$top_srcdir/tests/fuzz/rechunk-log.py" $l.raw $l.mms 4096 >/dev/null ||
		fail "cannot rewrite $l.raw into 4 KiB chunks"
	summarize $l.raw
	summarize $l.mms
	expect_consistent $l.mms.json
	expect_key $l.mms.json complete true
	expect_key $l.mms.json events "$(jget $l.raw.json events)"
	expect_key $l.mms.json live_bytes "$(jget $l.raw.json live_bytes)"
done
chunks=$((($(wc -c <t8.mms) - 4096) / 4096))
expect_ge "threads8's chunks" $chunks 10

# --- the library over hundreds of copies ----------------------------------------
mkdir dc-t8 dc-lk
"$check" t8.mms dc-t8 "$seed" 30 100 >dc-t8.out 2>dc-t8.err || fail "damagecheck over threads8: $(cat dc-t8.err)"
"$check" lk.mms dc-lk "$seed" 20 60 >dc-lk.out 2>dc-lk.err || fail "damagecheck over leaks: $(cat dc-lk.err)"
note "$(cat dc-t8.out)"
note "$(cat dc-lk.out)"

# --- the commands over a few copies --------------------------------------------
# run NAME LOG STATE WHY -- ARGS...: runs msmemscope-replay ARGS; STATE is
# "cut" or "damaged" (exit 0 with the warning WHY, and where the replay
# stops; for --step and --event, exit 1 for a step or event the log does
# not have, after the same warning), or "refused" (exit 1, WHY).
run() {
	name=$1 log=$2 state=$3 why=$4
	shift 5
	rc=0
	"$MMS_REPLAY" "$@" >"$name.out" 2>"$name.err" || rc=$?
	case $(cat "$name.err") in
	*"ERROR: AddressSanitizer"* | *"ERROR: LeakSanitizer"* | *"runtime error:"*)
		fail "msmemscope-replay $*: sanitizer report: $(cat "$name.err")" ;;
	esac
	case $state,$rc in
	refused,1 | cut,0 | damaged,0) ;;
	cut,1 | damaged,1)
		grep -q ": no step [0-9]*: the log has\|: the log has no steps\|: no event [0-9]*: the log has" "$name.err" ||
			fail "msmemscope-replay $*: exit 1 on a $state log: $(cat "$name.err")" ;;
	*) fail "msmemscope-replay $*: exit $rc on a $state log: $(cat "$name.err")" ;;
	esac
	grep -qF "$why" "$name.err" || fail "msmemscope-replay $*: no '$why' on stderr: $(cat "$name.err")"
	if [ "$state" != refused ]; then
		grep -q 'the log is corrupt\|cannot replay\|cannot write\|cannot export' "$name.err" &&
			fail "msmemscope-replay $*: a query failed for the damage: $(cat "$name.err")"
		grep -q "the replay stops at event $stop, where records may be missing" "$name.err" ||
			fail "msmemscope-replay $*: no word of where the replay stops (event $stop): $(cat "$name.err")"
	fi
	return 0
}

# every LOG STATE WHY: every query of the replay command over LOG.
every() {
	log=$1 state=$2 why=$3
	stop=
	if [ "$state" != refused ]; then
		"$MMS_REPLAY" "$log" --summary --json >"$log.json" 2>/dev/null || fail "--summary --json of $log exited $?"
		stop=$(jget "$log.json" stopped_at_event)
	fi
	i=0
	for q in "--summary" "--summary --json" "--event 0" "--step 1" "--from 0 --to 5" \
		"--analysis leaks" "--analysis leaks --json" "--analysis decompose" "--analysis inefficient" \
		"--analysis watermark,usage,leakage --force --output-dir $log.d" "--analysis watch --force --output-dir $log.d" \
		"--export csv -o $log.csv --force" "--export db -o $log.db --force" "--flamegraph $log.svg --force"; do
		i=$((i + 1))
		# shellcheck disable=SC2086 # the query is words
		run "$log.q$i" "$log" "$state" "$why" -- "$log" $q
	done
	for f in csv gprof2dot flamegraph; do
		run "$log.$f" "$log" "$state" "$why" -- transform $f --force -o "$log.t.$f" "$log"
		run "$log.$f-leaks" "$log" "$state" "$why" -- transform $f --leaks --force -o "$log.l.$f" "$log"
	done
}

# Cut at a chunk boundary, as head -c does: the issue's case.
size=$((4096 + 4096 * (chunks / 2)))
head -c $size t8.mms >cut-boundary.mms
every cut-boundary.mms cut "cut-boundary.mms: the log is cut at byte $size: the file ends after $((chunks / 2)) of the $chunks chunks its header counts"
grep -q "^live at the cut .*: live when recording stopped at event $stop (the log is cut; not leaks)\$" cut-boundary.mms.q1.out ||
	fail "the summary of a cut log does not say when its blocks were live: $(cat cut-boundary.mms.q1.out)"
expect_key cut-boundary.mms.json cut true
expect_key cut-boundary.mms.json cut_at_byte $size
expect_key cut-boundary.mms.json unmatched_frees 0
expect_key cut-boundary.mms.json double_allocs 0
grep -q 'leaked\|live at exit' cut-boundary.mms.q*.out && fail "a report of a cut log speaks of leaks at exit"
grep -q "wrote cut-boundary.mms.l.csv: [0-9]* allocations live when recording stopped at event $stop (the log is cut; not leaks)" \
	cut-boundary.mms.csv-leaks.err || fail "transform --leaks of a cut log: $(cat cut-boundary.mms.csv-leaks.err)"
note "cut at byte $size (a chunk boundary): every command stops at event $stop, with the warning"

# Cut near the end of the records of the leaks log (steps, operators).
used=$(od -An -tu8 -j 4104 -N8 lk.mms | tr -d ' ')
size=$((4096 + 16 + used * 9 / 10))
head -c $size lk.mms >cut-record.mms
every cut-record.mms cut "cut-record.mms: the log is cut at byte $size: chunk 0 is cut: the file holds $((used * 9 / 10)) of its $used bytes"
expect_ge "events before the cut in cut-record.mms" "$stop" 10
grep -q "^Operator launches" cut-record.mms.q4.out || fail "--step 1 of the cut leaks log: $(cat cut-record.mms.q4.out cut-record.mms.q4.err)"
note "cut at byte $size, inside a record: every command stops at event $stop, with the warning"

# Bytes that do not decode in the middle of threads8's chunk 3: twelve
# 0xff are an unknown tag, or a varint longer than 64 bits.
cp t8.mms bad-tag.mms
at=$((4096 + 3 * 4096 + 16 + $(od -An -tu8 -j $((4096 + 3 * 4096 + 8)) -N8 t8.mms | tr -d ' ') / 2))
printf '\377\377\377\377\377\377\377\377\377\377\377\377' | dd of=bad-tag.mms bs=1 seek=$at conv=notrunc 2>/dev/null
every bad-tag.mms damaged "bad-tag.mms: damaged at byte"
expect_key bad-tag.mms.json damaged true
note "a byte changed in chunk 3: every command stops at event $stop, with the warning"

# A header that counts 2^64-1 chunks.
cp t8.mms huge.mms
printf '\377\377\377\377\377\377\377\377' | dd of=huge.mms bs=1 seek=80 conv=notrunc 2>/dev/null
every huge.mms refused "huge.mms: the log is corrupt: the header counts 18446744073709551615 chunks of 4096 bytes, more than a file can hold (at byte 80)"
note "a header with 2^64-1 chunks: every command refuses it, naming the byte"
