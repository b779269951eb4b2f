#!/bin/sh
# SPDX-License-Identifier: MIT
# mismatch.sh: a heap block released by another family's function than
# the one that allocated it (delete of new[], delete[] of new, delete of
# malloc, free or realloc of new, the aligned delete of an aligned new[])
# is a mismatched free, found without guard mode: tests/progs/mismatch.cc
# makes six, between matched releases in every form the C++ operators
# have (sized, aligned, nothrow, new[] of 0 bytes, a refused new[] and what
# follows it, a thread's thousand new/delete pairs), none of which may be
# reported. Checked: the program's output as natively; the launcher's
# summary and leaks report (with the allocation and release stacks);
# --error-exitcode, which counts them; the summary's JSON (kinds,
# functions, sizes, in order); the event list's function names; guard
# mode, which finds them itself, not twice; the same under jemalloc,
# tcmalloc and mimalloc preloaded (those installed); and valgrind, which
# must find the same six blocks (skipped without it).
. "$top_srcdir/tests/progs/lib.sh"

[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"
prog=$MMS_PROGS/mismatch
[ -x "$prog" ] || fail "mismatch is not built: $prog"

"$prog" refuse >native.out || fail "mismatch exited $? natively"
status=0
"$MMS_LAUNCHER" --output=out --call-stack=c:8 -- "$prog" refuse >rec.out 2>rec.err || status=$?
expect_eq "mismatch's status under the launcher" $status 0
cmp -s native.out rec.out || fail "mismatch printed something else under the recorder: $(cat rec.out)"
set -- out/msmemscope_*/memscope_*.mms
log=$1

grep -q '^  bad frees         6: 6 mismatched frees$' rec.err ||
	fail "the launcher's summary does not count six mismatched frees: $(cat rec.err)"
for what in "delete of a block allocated by new\[\] (HOST 0x[0-9a-f]*, 40 bytes" \
	"delete\[\] of a block allocated by new (HOST 0x[0-9a-f]*, 4 bytes" \
	"delete of a block allocated by malloc (HOST 0x[0-9a-f]*, 24 bytes" \
	"free of a block allocated by new (HOST 0x[0-9a-f]*, 8 bytes" \
	"realloc of a block allocated by new\[\] (HOST 0x[0-9a-f]*, 64 bytes" \
	"delete of a block allocated by new\[\] (HOST 0x[0-9a-f]*, 128 bytes"; do
	grep -q "^    event [0-9]*  *$what" rec.err || fail "the launcher's summary does not say '$what': $(cat rec.err)"
done
grep -qF '====== Bad frees: 6 mismatched frees ======' rec.err ||
	fail "the leaks report has no bad frees section: $(cat rec.err)"
# The first one's stacks: allocated and released in mismatched().
sed -n '/^====== Bad frees/,/^event .*delete\[\] of/p' rec.err >first.txt
grep -q '^    allocated at:$' first.txt || fail "the leaks report shows no allocation stack: $(cat first.txt)"
grep -q '^    released by delete at:$' first.txt || fail "the leaks report shows no release stack: $(cat first.txt)"
[ "$(grep -c 'mismatched.*mismatch\.cc' first.txt)" -ge 2 ] ||
	fail "the stacks do not name mismatched() in mismatch.cc: $(cat first.txt)"
note "launcher: the six mismatched frees, with both stacks; none of the matched releases"

summarize "$log"
j=$log.json
expect_consistent $j
expect_key $j mismatched_frees 6
expect_key $j unmatched_frees 0
i=0
for want in "new[] delete 40" "new delete[] 4" "malloc delete 24" "new free 8" "new[] realloc 64" "new[] delete 128"; do
	set -- $want
	expect_key $j bad_frees.$i.kind '"mismatched_free"'
	expect_key $j bad_frees.$i.alloc_fn "\"$1\""
	expect_key $j bad_frees.$i.free_fn "\"$2\""
	expect_key $j bad_frees.$i.bytes "$3"
	i=$((i + 1))
done
first=$(jget $j bad_frees.0.event)
"$MMS_REPLAY" "$log" --event "$first" >ev.txt 2>&1 || fail "msmemscope-replay --event $first exited $?: $(cat ev.txt)"
grep -q 'FREE  *delete ' ev.txt || fail "event $first is not shown as a delete: $(cat ev.txt)"
"$MMS_REPLAY" "$log" --event "$(jget $j bad_frees.0.alloc_event)" >ev.txt 2>&1 || fail "--event exited $?"
grep -q 'MALLOC  *new\[\] ' ev.txt || fail "the block's allocation is not shown as new[]: $(cat ev.txt)"
note "summary JSON: kinds, functions and sizes of the six in order; events named by their operators"

# --error-exitcode counts them, as valgrind's counts its mismatched frees.
status=0
"$MMS_LAUNCHER" --output=ec --error-exitcode=9 -- "$prog" >ec.out 2>ec.err || status=$?
expect_eq "the launcher's status with --error-exitcode=9" $status 9
grep -q '^msmemscope: 6 errors: 0 leaks (definite,possible), 6 bad frees and 0 guard findings: exit status 9 (--error-exitcode)$' \
	ec.err || fail "the launcher does not say why it exits 9: $(tail -3 ec.err)"
status=0
"$MMS_REPLAY" "$log" --analysis leaks --error-exitcode 4 >/dev/null 2>ec.err || status=$?
expect_eq "msmemscope-replay --error-exitcode 4" $status 4
note "--error-exitcode: the six are errors, in both programs"

# Guard mode finds them itself (its own findings); the summary does not
# count them twice.
"$MMS_LAUNCHER" --output=guard --guard -- "$prog" refuse >guard.out 2>guard.err || fail "--guard exited $?: $(cat guard.err)"
set -- guard/msmemscope_*/memscope_*.mms
summarize "$1"
expect_key "$1.json" mismatched_frees 0
[ "$(grep -c '^==guard== mismatched_free:' guard.err)" = 6 ] ||
	fail "guard mode did not find the six mismatched frees: $(cat guard.err)"
note "guard mode: its six findings, none counted again"

# Under a replacement allocator preloaded after the recorder, as -ljemalloc
# links it (its operator new and delete allocate without malloc and free:
# the recorder's operators take the malloc family's hooks then), the same
# six and nothing else.
n=0
for lib in libjemalloc.so.2 libtcmalloc_minimal.so.4 libmimalloc.so.2; do
	path=$(ldconfig -p 2>/dev/null | sed -n "s|.*$lib .*=> \(.*\)|\1|p" | head -n 1)
	[ -n "$path" ] && [ -e "$path" ] || continue
	# No refused new[]: mimalloc's operator aborts on it (natively too).
	LD_PRELOAD=$path "$prog" >alloc.native || fail "mismatch exited $? under $lib natively"
	env LD_PRELOAD="$MMS_HOOKS:$path" MSMEMSCOPE_LOG=alloc-$lib.mms "$prog" >alloc.out 2>alloc.err ||
		fail "mismatch under $lib exited $? under the recorder: $(cat alloc.err)"
	cmp -s alloc.native alloc.out || fail "mismatch printed something else under $lib: $(cat alloc.out)"
	summarize alloc-$lib.mms
	expect_key alloc-$lib.mms.json mismatched_frees 6
	expect_key alloc-$lib.mms.json unmatched_frees 0
	expect_key alloc-$lib.mms.json bad_frees.0.alloc_fn '"new[]"'
	expect_key alloc-$lib.mms.json bad_frees.5.bytes 128
	n=$((n + 1))
done
note "under $n replacement allocator(s) of jemalloc, tcmalloc, mimalloc found installed: the same six"

VALGRIND=${VALGRIND:-$(command -v valgrind || true)}
if [ -n "$VALGRIND" ] && [ -x "$VALGRIND" ]; then
	# valgrind cannot throw std::bad_alloc: no refused new[] under it.
	"$VALGRIND" "$prog" >vg.out 2>vg.err || fail "valgrind mismatch exited $?: $(tail -5 vg.err)"
	awk '/Mismatched free/ { m = 1 } m && /block of size/ { sub(/.*block of size /, ""); printf "%s ", $1; m = 0 }' \
		vg.err >vg.sizes
	expect_eq "valgrind's mismatched blocks' sizes" "$(cat vg.sizes)" "40 4 24 8 64 128 "
	note "valgrind finds the same six blocks"
else
	note "valgrind is not installed: not compared with it"
fi
