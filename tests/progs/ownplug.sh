#!/bin/sh
# SPDX-License-Identifier: MIT
# ownplug.sh: blocks made with new[] on one side of a plugin boundary and
# released with delete[] on the other (tests/progs/ownplug.cc), where one
# side calls its own copy of the C++ operators: its new[] is the malloc it
# calls, so the log holds a malloc released by delete[] and the reverse,
# which a replay would call mismatched frees. They did not happen: the
# replay finds the module (its symbol table, or a stripped copy of the
# C++ runtime) and counts them as unchecked. Checked: output as natively;
# the one real mismatch (new[] released by delete) still reported; two
# unchecked frees with the module and operator named, in the launcher's
# summary, msmemscope-replay's text and JSON summaries and the leaks
# report's JSON; a plugin like the others but with the C++ runtime as its
# dependency leaves nothing unchecked; a FIFO where the plugin was is not
# waited on.
. "$top_srcdir/tests/progs/lib.sh"

[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"
for f in ownplug ownplug-static ownplug-plain.so ownplug-own.so ownplug-strip.so; do
	[ -e "$MMS_PROGS/$f" ] || fail "$f is not built"
done

# check NAME PROG PLUGIN MISMATCHED UNCHECKED MODULE OPERATOR: PROG
# PLUGIN recorded by the launcher and replayed; MODULE (a file name) and
# OPERATOR (JSON: a string or null) the module with its own operators,
# MODULE "" when there is none.
check() {
	_n=$1 _prog=$MMS_PROGS/$2 _plug=$MMS_PROGS/$3 _mis=$4 _unc=$5 _mod=$6 _op=$7
	"$_prog" "$_plug" >native.out || fail "$_n exited $? natively"
	expect_eq "$_n natively" "$(cat native.out)" "ownplug 10"
	"$MMS_LAUNCHER" --output=$_n -- "$_prog" "$_plug" >$_n.out 2>$_n.err || fail "$_n exited $?: $(cat $_n.err)"
	cmp -s native.out $_n.out || fail "$_n printed something else under the recorder: $(cat $_n.out)"
	_log=$(launched_log $_n.err)
	[ -f "$_log" ] || fail "no log of $_n: $(cat $_n.err)"
	cp "$_log" $_n.mms
	summarize $_n.mms
	expect_key $_n.mms.json mismatched_frees "$_mis"
	expect_key $_n.mms.json unchecked_frees "$_unc"
	expect_key $_n.mms.json own_cxx null
	"$MMS_REPLAY" $_n.mms --analysis leaks --json >$_n.leaks.json || fail "leaks --json on $_n exited $?"
	expect_key $_n.leaks.json unchecked_frees "$_unc"
	expect_key $_n.leaks.json mismatched_frees "$_mis"
	"$MMS_REPLAY" $_n.mms --summary >$_n.sum || fail "--summary on $_n exited $?"
	if [ -z "$_mod" ]; then
		expect_key $_n.mms.json own_operators null
		"$MMS_REPLAY" $_n.mms --analysis leaks >$_n.leaks || fail "leaks on $_n exited $?"
		! grep -q 'Not checked' $_n.leaks || fail "$_n: unchecked frees in the leaks report: $(cat $_n.leaks)"
		! grep -q 'unchecked frees' $_n.err $_n.sum || fail "$_n: unchecked frees told: $(cat $_n.err)"
		return
	fi
	case $(jget $_n.mms.json own_operators.module) in
	*/$_mod\") ;;
	*) fail "$_n: own_operators.module is $(jget $_n.mms.json own_operators.module), not $_mod" ;;
	esac
	expect_key $_n.mms.json own_operators.operator "$_op"
	expect_key $_n.leaks.json own_operators.operator "$_op"
	if [ "$_op" = null ]; then
		_what="has its own copy of the C++ runtime (linked into it)"
	else
		_what="calls its own $(printf '%s' "$_op" | tr -d '"' | sed 's/[*]/\\*/g')"
	fi
	"$MMS_REPLAY" $_n.mms --analysis leaks >$_n.leaks || fail "leaks on $_n exited $?"
	grep -q "^====== Not checked: $_unc frees between the malloc and C++ families ([^ ]*/$_mod " $_n.leaks ||
		fail "$_n: the leaks report does not name $_mod: $(cat $_n.leaks)"
	for _f in $_n.err $_n.sum; do
		grep -q "unchecked frees *$_unc between the malloc and C++ families .*not told mismatched: [^ ]*/$_mod $_what" \
			$_f || fail "$_n: $_f does not name $_mod: $(cat $_f)"
	done
}

# The plugin with its runtime built in, its symbols there (hidden).
check own ownplug ownplug-own.so 1 2 ownplug-own.so '"operator new(std::size_t)"'
expect_key own.mms.json bad_frees.0.alloc_fn '"new[]"'
expect_key own.mms.json bad_frees.0.free_fn '"delete"'
note "a plugin with its own operators: its 2 frees across the boundary unchecked, the 1 mismatched free reported"
# The same, stripped: no symbol table, the runtime's code found instead.
check strip ownplug ownplug-strip.so 1 2 ownplug-strip.so null
note "the same plugin stripped: the runtime linked into it is found"
# The program with its own operators (-static-libstdc++, not exported:
# the recorder cannot tell at start-up), the plugin with the global
# ones. The program's new[] released by its own delete is malloc and free.
check static ownplug-static ownplug-plain.so 0 2 ownplug-static '"operator new(std::size_t)"'
note "a program with its own operators (not exported): its 2 frees across the boundary unchecked"
# Both with the global operators: nothing unchecked.
check plain ownplug ownplug-plain.so 1 0 "" ""
note "a plugin with the global operators: nothing unchecked, the mismatched free reported"
# Where the plugin was, a FIFO now: the replay does not wait on it (it
# waited for a writer before, in its symbolizer too), and with no file to
# read it cannot tell: the frees across are reported as mismatched, as
# valgrind reports them.
if command -v mkfifo >/dev/null 2>&1 && command -v timeout >/dev/null 2>&1; then
	cp "$MMS_PROGS/ownplug-own.so" "$PWD/gone.so" || fail "cannot copy ownplug-own.so"
	MSMEMSCOPE_CONFIG=call_stack=8 record gone.mms "$MMS_PROGS/ownplug" "$PWD/gone.so" >/dev/null ||
		fail "ownplug gone.so exited $?"
	rm -f gone.so && mkfifo gone.so || fail "cannot make a FIFO"
	status=0
	timeout -s KILL 60 "$MMS_REPLAY" gone.mms --analysis leaks --json >gone.leaks.json || status=$?
	expect_eq "leaks over a log whose plugin is a FIFO now: status" $status 0
	expect_key gone.leaks.json mismatched_frees 3
	expect_key gone.leaks.json unchecked_frees 0
	note "a FIFO where the plugin was: not waited on; its frees reported as mismatched (no file to tell)"
else
	note "mkfifo or timeout is missing: a FIFO in the plugin's place not checked"
fi
