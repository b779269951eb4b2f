#!/bin/sh
# SPDX-License-Identifier: MIT
# ownops.sh: a program that defines operator new itself but not delete
# (tests/progs/ownnew), or delete but not new (owndelete), calls its own
# operator for one half of each pair and the recorder's for the other.
# Telling new from malloc there would report each matched pair as a
# mismatched free (valgrind does); the recorder sees the program's
# operator at start-up and records new and delete as the malloc and free
# they call. Checked, for both programs: output and status as natively;
# no bad free; the warning that names the file and the operator and says
# mismatched frees are not checked (launcher, msmemscope-replay); the
# summary's JSON (own_cxx, own_cxx_op; null for a program without its
# own); the one leaked new[] of 12 bytes still reported; guard mode finds
# nothing either; and a program with none of its own still gets its
# mismatched frees (tests/progs/mismatch).
. "$top_srcdir/tests/progs/lib.sh"

[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"

for which in ownnew owndelete; do
	prog=$MMS_PROGS/$which
	[ -x "$prog" ] || fail "$which is not built: $prog"
	case $which in
	ownnew) op='operator new(std::size_t)' ;;
	*) op='operator delete(void*)' ;;
	esac
	opre=$(printf '%s\n' "$op" | sed 's/[*]/\\*/')
	"$prog" >native.out || fail "$which exited $? natively"
	status=0
	"$MMS_LAUNCHER" --output=$which --call-stack=c:8 -- "$prog" >rec.out 2>rec.err || status=$?
	expect_eq "$which's status under the launcher" $status 0
	cmp -s native.out rec.out || fail "$which printed something else under the recorder: $(cat rec.out)"
	log=$(launched_log rec.err)
	[ -f "$log" ] || fail "no log of $which: $(cat rec.err)"
	grep -q "^msmemscope: warning: .*: [^ ]*/$which defines $opre itself, so mismatched frees .* are not checked" \
		rec.err || fail "the launcher does not say that $which defines $op: $(cat rec.err)"
	! grep -q 'bad frees\|of a block allocated by' rec.err || fail "bad frees reported for $which: $(cat rec.err)"
	grep -q '^      leaked        1 block, 12 bytes' rec.err && grep -q '^  12 bytes in 1 block ' rec.err ||
		fail "the leaks report of $which does not show the one 12-byte leak: $(cat rec.err)"
	grep -q 'main.*ownops\.cc' rec.err || fail "the leak's stack does not name main in ownops.cc: $(cat rec.err)"

	summarize "$log"
	j=$log.json
	expect_consistent $j
	expect_key $j mismatched_frees 0
	expect_key $j invalid_frees 0
	expect_key $j own_cxx "\"$(cd "$(dirname "$prog")" && pwd -P)/$which\""
	expect_key $j own_cxx_op "\"$op\""
	grep -q "defines $opre itself" "$log.json.err" ||
		fail "msmemscope-replay --summary does not say that $which defines $op: $(cat "$log.json.err")"

	# Guard mode: the program's operator's blocks and the recorder's are
	# all of the malloc family then.
	"$MMS_LAUNCHER" --output=guard-$which --guard -- "$prog" >guard.out 2>guard.err ||
		fail "$which exited $? under --guard: $(cat guard.err)"
	cmp -s native.out guard.out || fail "$which printed something else under --guard: $(cat guard.out)"
	! grep -q '^==guard==' guard.err || fail "guard mode reports findings in $which: $(cat guard.err)"
	note "$which: no bad free, the warning naming $op, the one leak; guard mode finds nothing"
done

# A program with no operator of its own: no such warning, its mismatched
# frees found.
prog=$MMS_PROGS/mismatch
[ -x "$prog" ] || fail "mismatch is not built: $prog"
record plain.mms "$prog" >/dev/null 2>plain.err || fail "mismatch exited $? under the recorder: $(cat plain.err)"
summarize plain.mms
expect_key plain.mms.json own_cxx null
expect_key plain.mms.json mismatched_frees 6
! grep -q 'itself' plain.mms.json.err || fail "a warning about operators for mismatch: $(cat plain.mms.json.err)"
note "mismatch (no operator of its own): own_cxx null, its six mismatched frees"
