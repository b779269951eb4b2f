#!/bin/sh
# SPDX-License-Identifier: MIT
# guard.sh: guard mode (msmemscope --guard) on programs with one known heap
# error each: the one finding has the right kind, block size and
# allocation line (and free line where there is one); the clean programs
# give none; the program's stdout is its native one; --error-exitcode
# decides the status; and without --guard the program behaves natively.
. "$top_srcdir/tests/progs/lib.sh"

[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"
dir=$MMS_PROGS/guard
src=$top_srcdir/tests/progs/guard

# The line of FILE marked with the comment MARK (ALLOC, FREE).
line_of() {
	grep -n "$2 \*/" "$1" | head -n 1 | cut -d: -f1
}

# run NAME ARGS...: NAME under --guard (or $guard_opt), its stdout in
# NAME.out, the report in NAME.err, the guard analysis of its log as JSON
# in NAME.json.
run() {
	name=$1
	shift
	rm -rf "out-$name"
	status=0
	"$MMS_LAUNCHER" "${guard_opt:---guard}" --call-stack=c:8 --output="out-$name" --error-exitcode=99 -- "$dir/$name" "$@" \
		>"$name.out" 2>"$name.err" || status=$?
	log=$(launched_log "$name.err")
	[ -f "$log" ] || fail "$name: no log: $(cat "$name.err")"
	"$MMS_REPLAY" "$log" --analysis guard --json >"$name.json" 2>"$name.json.err" ||
		fail "$name: msmemscope-replay --analysis guard --json exited $?: $(cat "$name.json.err")"
}

# The first frame shown under "WHAT at event N:" in NAME.err: FILE:LINE.
frame_line() {
	sed -n "/^  $2 at event [0-9]*:\$/{n;p;q}" "$1.err" | sed -n 's/.*(\([^()]*:[0-9]*\)).*/\1/p'
}

# error NAME KIND SIZE [ARGS...]: one finding of KIND on a SIZE-byte block
# allocated at the ALLOC line of NAME's source (and freed at its FREE line
# when it has one); the status is --error-exitcode's; stdout is native.
error() {
	name=$1 kind=$2 size=$3
	shift 3
	file=$(ls "$src/$name".c* | head -n 1)
	"$dir/$name" "$@" >"$name.native.out" 2>/dev/null || true
	run "$name" "$@"
	expect_eq "$name exit status (--error-exitcode=99)" "$status" 99
	cmp -s "$name.native.out" "$name.out" || fail "$name: stdout differs from the native run: $(cat "$name.out")"
	expect_key "$name.json" errors 1
	expect_key "$name.json" findings.0.kind "\"$kind\""
	expect_key "$name.json" findings.0.size "$size"
	grep -q "^msmemscope: ERROR SUMMARY: 1 error " "$name.err" || fail "$name: no ERROR SUMMARY line: $(cat "$name.err")"
	if [ "$size" != 0 ]; then
		want="$(basename "$file"):$(line_of "$file" ALLOC)"
		got=$(frame_line "$name" allocated)
		case "$got" in
		*/"$want") ;;
		*) fail "$name: allocated at '$got', expected $want: $(cat "$name.err")" ;;
		esac
	fi
	if grep -q "FREE \*/" "$file"; then
		want="$(basename "$file"):$(line_of "$file" FREE)"
		got=$(frame_line "$name" freed)
		case "$got" in
		*/"$want") ;;
		*) fail "$name: freed at '$got', expected $want: $(cat "$name.err")" ;;
		esac
	fi
}

error strcpy1 overflow 5
expect_key strcpy1.json findings.0.found_by '"release"'
grep -q "found at event [0-9]* by the check of its free, realloc or delete, in:" strcpy1.err ||
	fail "strcpy1: the finding does not say the free's check found it: $(cat strcpy1.err)"
# Without stacks the finding still says which check found it, and how
# to get the stacks.
"$MMS_LAUNCHER" --guard --output=out-nostack -- "$dir/strcpy1" >nostack.out 2>nostack.err
grep -q "found at event [0-9]* by the check of its free, realloc or delete\$" nostack.err ||
	fail "strcpy1 without stacks: which check found it is not said: $(cat nostack.err)"
grep -q "^(no stacks recorded: run with --call-stack=c:N" nostack.err ||
	fail "strcpy1 without stacks: no hint to record them: $(cat nostack.err)"
expect_key strcpy1.json findings.0.offset 5
expect_key strcpy1.json findings.0.length 1
expect_key strcpy1.json findings.0.bytes '"00"'
error looppast overflow 32
expect_key looppast.json findings.0.offset 32
expect_key looppast.json findings.0.length 4
error afterfree write_after_free 24
expect_key afterfree.json findings.0.offset 3
expect_key afterfree.json findings.0.bytes '"78"'
expect_key afterfree.json findings.0.found_by '"check"'
# With a quarantine of 48 bytes (taken to the byte: 48, not 0), the frees
# that follow push the block out: found as it leaves the quarantine.
guard_opt=--guard-quarantine=48
error afterfree write_after_free 24 push
guard_opt=
expect_key afterfree.json findings.0.found_by '"quarantine"'
# After 300,000 frees the analysis still knows the block's free: the
# window starts there.
error afterfree write_after_free 24 many
freed=$(jget afterfree.json findings.0.free_event)
[ "$freed" -gt 600000 ] 2>/dev/null || fail "afterfree many: the free of the block is not known: free_event '$freed'"
expect_key afterfree.json findings.0.window_from "$freed"
error doublefree double_free 16
expect_key doublefree.json findings.0.found_by '"release"'
error stackfree invalid_free 0
expect_key stackfree.json findings.0.found_by '"release"'
# Killed by a signal after its finding: the status is the signal's, and
# the errors line says so (valgrind's rule).
run stackfree killed
expect_eq "stackfree killed: exit status" "$status" 143
grep -q "^msmemscope: 1 error: .* and 1 guard finding; the program was killed by signal 15, which is the status (not --error-exitcode)$" stackfree.err ||
	fail "stackfree killed: the errors line: $(grep -i error stackfree.err)"
error neighbour overflow 16
expect_key neighbour.json findings.0.length 4
# One bug hit many times is one context, as valgrind counts them: the
# report prints it once, with the events of the others; the JSON keeps
# every finding, numbered by its context.
"$dir/repeat" >repeat.native.out
run repeat
expect_eq "repeat exit status (--error-exitcode=99)" "$status" 99
cmp -s repeat.native.out repeat.out || fail "repeat: stdout differs from the native run: $(cat repeat.out)"
expect_key repeat.json errors 15
expect_key repeat.json contexts 2
expect_key repeat.json findings.0.context 0
expect_key repeat.json findings.11.context 0
expect_key repeat.json findings.12.context 1
expect_key repeat.json findings.14.kind '"overflow"'
grep -q "^msmemscope: ERROR SUMMARY: 15 errors from 2 contexts " repeat.err ||
	fail "repeat: no ERROR SUMMARY of 15 errors from 2 contexts: $(cat repeat.err)"
expect_eq "repeat: findings printed" "$(grep -c '^==guard== overflow' repeat.err)" 2
grep -q "^  and 11 more like it (the same kind and stacks), at events [0-9]* (0x[0-9a-f]*), " repeat.err ||
	fail "repeat: the first context does not count its 11 others: $(cat repeat.err)"
grep -q "^  and 2 more like it (the same kind and stacks), at events [0-9]* (0x[0-9a-f]*), [0-9]* (0x[0-9a-f]*)\$" repeat.err ||
	fail "repeat: the second context does not list its 2 others: $(cat repeat.err)"
want="repeat.c:$(line_of "$src/repeat.c" ALLOC)"
case "$(frame_line repeat allocated)" in
*/"$want") ;;
*) fail "repeat: the first context's block is not allocated at $want: $(cat repeat.err)" ;;
esac
# Without stacks, blocks of one size damaged at the same offset are one
# context, and the report says why.
"$MMS_LAUNCHER" --guard --output=out-repeatns -- "$dir/repeat" >/dev/null 2>repeatns.err
grep -q "^msmemscope: ERROR SUMMARY: 15 errors from 5 contexts " repeatns.err ||
	fail "repeat without stacks: not 15 errors from 5 contexts (names of 6 and 7 bytes, blocks of 33, 34, 35): $(cat repeatns.err)"
grep -q "more like it (the same kind, block size and damaged offset; no stacks recorded)" repeatns.err ||
	fail "repeat without stacks: the context does not say what its findings share: $(cat repeatns.err)"
# Every size from 1 to 100 bytes, damaged at the first and last byte
# after its free and one byte past its end: each finding at its offset (a
# quarantine of 4 KiB pushes each freed block out before the next). Not
# run natively: glibc keeps its free list in a freed block's first bytes,
# and aborts on the damage. Its stdout lists the errors it made.
guard_opt=--guard-quarantine=4K run offsets
expect_eq "offsets exit status (--error-exitcode=99)" "$status" 99
expect_eq "offsets: errors made" "$(wc -l <offsets.out)" 300
"$MMS_PYTHON" -c 'import json, sys
f = json.load(open(sys.argv[1]))["findings"]
print("\n".join("%s %d %d" % (x["kind"], x["size"], x["offset"]) for x in f))' offsets.json >offsets.found ||
	fail "offsets: the findings cannot be read: $(cat offsets.json)"
cmp -s offsets.out offsets.found ||
	fail "offsets: findings differ from the errors made: $(diff offsets.out offsets.found | head)"
note "offsets: $(wc -l <offsets.found) findings, each of its kind at its size and offset"
# msmemscope_guard_check() finds the overflow of a live block (a full
# check: no stack of its own), and the step and the exit check again.
error apicheck overflow 8
expect_key apicheck.json findings.0.at_stack 0
expect_key apicheck.json findings.0.found_by '"check"'
grep -q "found at event [0-9]* by a full check\$" apicheck.err || fail "apicheck: not said to be a full check: $(cat apicheck.err)"
expect_key apicheck.json findings.0.offset 8
expect_key apicheck.json checks 3
if [ -x "$dir/deletemalloc" ]; then
	error deletemalloc mismatched_free 32
else
	note "deletemalloc: not built (no C++ compiler); mismatched free not checked"
fi

# Damage to a block that lives through six operator launches: found at
# its free, the window holds all six; with --guard=ops, the check at the
# end of the third launch finds it, and the window holds that launch.
error opsdamage overflow 64
expect_key opsdamage.json findings.0.launches_in_window 6
expect_key opsdamage.json findings.0.last_op '"store"'
guard_opt=--guard=ops
error opsdamage overflow 64
guard_opt=
expect_key opsdamage.json findings.0.at_stack 0
expect_key opsdamage.json findings.0.launches_in_window 1
expect_key opsdamage.json findings.0.last_launch 3
expect_key opsdamage.json findings.0.last_op '"scale"'
[ "$(jget opsdamage.json findings.0.window_from)" -gt "$(jget opsdamage.json findings.0.alloc_event)" ] ||
	fail "opsdamage --guard=ops: the window begins at the allocation, not at the check of launch 2's end"
grep -q "done by operator launch 3 (scale)" opsdamage.err || fail "opsdamage --guard=ops: the launch is not named: $(cat opsdamage.err)"
expect_key opsdamage.json checks 7
"$MMS_LAUNCHER" --guard=heap,typo -- true 2>typo.err && fail "--guard=heap,typo was accepted"
grep -q "expected heap or ops" typo.err || fail "--guard=heap,typo: $(cat typo.err)"

# The window of a damage found at free: from the allocation to the free.
expect_eq "strcpy1 window" "$(jget strcpy1.json findings.0.window_from)" "$(jget strcpy1.json findings.0.alloc_event)"

for name in cleanrealloc cleanalign cleanedge cleanusable cleanthreads cleanlibc; do
	"$dir/$name" >"$name.native.out" || fail "$name failed natively"
	run "$name"
	expect_eq "$name exit status" "$status" 0
	cmp -s "$name.native.out" "$name.out" || fail "$name: stdout differs from the native run: $(cat "$name.out")"
	expect_key "$name.json" errors 0
	expect_key "$name.json" guard true
	grep -q "^msmemscope: ERROR SUMMARY: 0 errors " "$name.err" || fail "$name: no ERROR SUMMARY line"
done
# Each step boundary and the exit make a full check.
expect_ge "cleanthreads full checks" "$(jget cleanthreads.json checks)" 1

# Without --guard nothing of this runs: glibc sees the double free, as
# natively, and no guard analysis is printed.
native=0
"$dir/doublefree" >df.native.out 2>/dev/null || native=$?
[ "$native" -ne 0 ] || fail "glibc let the double free pass natively; this test expects an abort"
plain=0
"$MMS_LAUNCHER" --output=out-plain -- "$dir/doublefree" >df.out 2>df.err || plain=$?
expect_eq "doublefree without --guard: exit status (native $native)" "$plain" "$native"
! grep -q "ERROR SUMMARY" df.err || fail "an ERROR SUMMARY without --guard: $(cat df.err)"
"$MMS_LAUNCHER" --output=out-plain2 -- "$dir/cleanusable" >cu.out 2>cu.err || fail "cleanusable without --guard failed"
"$dir/cleanusable" >cu.native.out
cmp -s cu.native.out cu.out || fail "cleanusable without --guard: stdout differs from the native run"
note "guard mode finds each known error with its kind, size and lines, and nothing in the clean programs"

# Real programs: no finding, and their output is the native one. Each is
# skipped, saying so, when it is not installed. real NAME CMD...: CMD
# reads its standard input from $real_in (default /dev/null).
real() {
	name=$1
	shift
	"$@" <"${real_in:-/dev/null}" >"$name.native.out" 2>/dev/null || fail "$name failed natively"
	rm -rf "out-$name"
	st=0
	"$MMS_LAUNCHER" --guard --output="out-$name" -- "$@" <"${real_in:-/dev/null}" >"$name.out" 2>"$name.err" ||
		st=$?
	expect_eq "$name under --guard: exit status" "$st" 0
	cmp -s "$name.native.out" "$name.out" || fail "$name under --guard: stdout differs: $(diff "$name.native.out" "$name.out" | head)"
	grep -q "^msmemscope: ERROR SUMMARY: 0 errors " "$name.err" || fail "$name under --guard: findings: $(cat "$name.err")"
	# Every process of the run (gcc's cc1 and as too), each in guard mode.
	n=0
	for l in "out-$name"/*/*.mms; do
		"$MMS_REPLAY" "$l" --analysis guard --json >"$name.$n.json" 2>/dev/null ||
			fail "$name: --analysis guard of $l exited $?"
		expect_key "$name.$n.json" guard true
		expect_key "$name.$n.json" errors 0
		n=$((n + 1))
	done
	note "$name: no finding in guard mode in its $n process(es), native output"
}
if command -v sqlite3 >/dev/null 2>&1; then
	awk -v n=2000 -v pad=50 -f "$top_srcdir/bench/inserts.awk" >ins.sql
	printf 'SELECT count(*), sum(length(v)) FROM t;\n' >>ins.sql
	real_in=ins.sql real sqlite3 sqlite3 :memory:
else
	note "sqlite3 is not installed: not run in guard mode"
fi
real python3 "$MMS_PYTHON" -c 'import json, re; d = {str(i): [i] * (i % 7) for i in range(20000)}; print(len(json.dumps(d)), len(re.findall("1", json.dumps(d))))'
if command -v gcc >/dev/null 2>&1; then
	printf '#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n' >hi.c
	real gcc gcc -O2 -c hi.c -o hi.o
else
	note "gcc is not installed: not run in guard mode"
fi
