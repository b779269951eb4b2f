#!/bin/sh
# SPDX-License-Identifier: MIT
# ctlnames.sh: names the program gives (operators, owner tags, pools,
# marks) reach every report with their control characters written \xHH
# (replay/core/meta.c): a newline in an operator's name must not start a
# line of the leaks report that the program made up, nor an escape
# sequence reach the user's terminal (ctlnames.c names one "conv", a
# newline, "====== Leaks: none (forged) ======" and ESC [2J, clear the
# screen). Names in UTF-8 stay as they are. Checked in the launcher's
# report, the replay's summary, step, event list, decompose, leaks JSON
# and the CSV dump; the stepper's op NAME finds the operator so written.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

prog=$MMS_PROGS/ctlnames
[ -x "$prog" ] || fail "the test program is not built: $prog"

# no_controls FILE WHAT: FILE has no control character but newline and tab
# (C0, DEL, and U+0080..U+009F in UTF-8).
no_controls() {
	_n=$(LC_ALL=C tr -cd '\000-\010\013-\037\177' <"$1" | wc -c)
	[ "$_n" -eq 0 ] || fail "$2 prints $_n control character(s) a name carried: $(LC_ALL=C grep -n "$(printf '[\033\177]')" "$1" | head -3 | cat -A)"
	! LC_ALL=C grep -q "$(printf '\302[\200-\237]')" "$1" || fail "$2 prints a C1 control character a name carried"
}

op='conv\x0a====== Leaks: none (forged) ======\x1b[2J'
rm -rf out
"$MMS_LAUNCHER" --output=out -- "$prog" >run.out 2>run.err || fail "ctlnames exited $? under the recorder: $(cat run.err)"
expect_eq "ctlnames' output" "$(cat run.out)" done
log=$(launched_log run.err)
[ -f "$log" ] || fail "no log: $(cat run.err)"
no_controls run.err "the launcher's report"
! grep -q "^====== Leaks: none (forged)" run.err || fail "a name started a line of the leaks report: $(cat run.err)"
grep -qF "Direct HOST leak of 0.000097 Mb(s) at " run.err || fail "no per-step leak reported: $(cat run.err)"
grep -qF " in $op (launch 5) at step 3." run.err || fail "the leak does not name its operator escaped: $(cat run.err)"

"$MMS_REPLAY" "$log" --summary >sum.txt || fail "--summary exited $?"
no_controls sum.txt "--summary"
"$MMS_REPLAY" "$log" --step 2 >step.txt || fail "--step 2 exited $?"
no_controls step.txt "--step 2"
"$MMS_REPLAY" "$log" --from 0 >events.txt || fail "--from 0 exited $?"
no_controls events.txt "--from 0"
grep -qF "$op" events.txt || fail "--from 0 does not name the operator escaped: $(head -20 events.txt)"
grep -qF 'mark\xc2\x9b31m' events.txt || fail "--from 0 does not name the mark escaped: $(head -20 events.txt)"
grep -qF 'pool\x7f' events.txt || fail "--from 0 does not name the pool escaped: $(head -20 events.txt)"
grep -qF '卷积层' events.txt || fail "--from 0 does not keep the UTF-8 name as it is: $(head -20 events.txt)"
"$MMS_REPLAY" "$log" --analysis decompose >dec.txt 2>&1 || fail "--analysis decompose exited $?: $(cat dec.txt)"
no_controls dec.txt "--analysis decompose"
grep -qF 'own\x09er\x1b[31m' dec.txt || fail "decompose does not name the owner escaped: $(cat dec.txt)"
"$MMS_REPLAY" "$log" --analysis leaks --json >leaks.json || fail "leaks --json exited $?"
got=$("$MMS_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["per_step"]["list"][0]["op"])' leaks.json)
expect_eq "the leak's operator in the JSON" "$got" "$op"
# The stepper's op NAME takes the name as the outputs write it, its spaces
# kept (the rest of the line), quoted or not.
printf 'op %s\nop "%s"\n' "$op" "$op" >op.in
"$MMS_REPLAY" "$log" -i --json <op.in >op.json 2>op.err || fail "the stepper exited $?: $(cat op.err)"
got=$("$MMS_PYTHON" -c '
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
print(len(a), a[0]["event"]["name"], a[1]["event"]["name"], a[0]["event"]["id"] < a[1]["event"]["id"])' op.json) ||
	fail "the stepper's answers: $(cat op.json)"
expect_eq "the stepper's op NAME answers" "$got" "2 $op $op True"
"$MMS_REPLAY" "$log" --export csv -o dump.csv >csv.out 2>&1 || fail "--export csv exited $?: $(cat csv.out)"
no_controls dump.csv "the CSV dump"
grep -qF 'own\x09er\x1b[31m' dump.csv || fail "the CSV dump does not name the owner escaped: $(head -5 dump.csv)"
grep -qF '卷积层' dump.csv || fail "the CSV dump does not keep the UTF-8 name as it is"
# Python's file names too (a PYCODE record): a module compiled under a name
# with a newline and ESC keeps a block three calls deep.
pkg=$top_builddir/hooks/python/build
if [ -e "$pkg/msmemscope/_msmemscope.so" ]; then
	cat >ctl.py <<'EOF2'
import msmemscope
keep = []
src = "def leaky_fn(n):\n    keep.append(bytearray(n))\n"
ns = {"keep": keep}
exec(compile(src, "evil\n====== Leaks: none ======\x1b[2J.py", "exec"), ns)
ns["leaky_fn"](54321)
print("done")
EOF2
	rm -rf pyout
	PYTHONPATH=$pkg "$MMS_LAUNCHER" --call-stack=python:8 --output=pyout -- "$MMS_PYTHON" ctl.py >py.out 2>py.err ||
		fail "ctl.py exited $? under the recorder: $(cat py.err)"
	expect_eq "ctl.py's output" "$(cat py.out)" done
	no_controls py.err "the launcher's report of a Python program"
	"$MMS_REPLAY" "$(launched_log py.err)" --export csv -o py.csv >pycsv.out 2>&1 ||
		fail "--export csv of the Python log exited $?: $(cat pycsv.out)"
	no_controls py.csv "the CSV dump of a Python program"
	grep -F 'leaky_fn' py.csv | grep -qF 'evil\x0a====== Leaks: none ======\x1b[2J.py' ||
		fail "the Python frame's file is not written escaped in the dump: $(grep -F leaky_fn py.csv | head -3)"
	pynote=", a Python file name"
else
	pynote=" (no Python package built: the Python file name not checked)"
fi
note "operator, owner, pool and mark names with a newline, ESC, TAB, DEL and U+009B written \\xHH in the launcher's report, --summary, --step, --from, decompose, leaks JSON and the CSV dump$pynote; a UTF-8 name (卷积层) kept as it is"
