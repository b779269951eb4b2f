#!/bin/sh
# SPDX-License-Identifier: MIT
# leakmarks.sh: the leaks analysis's marks rule (msMemScope's offline leak
# check, --leak-marks NAME[,N]) over tests/progs/leakmarks.c, whose blocks
# between its "iter" marks are known: which blocks each choice of the first
# mark finds (address, size, allocation line), through the launcher and
# msmemscope-replay as text and JSON; too few marks; a name never marked;
# with steps too; and the usage errors.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"
prog=$MMS_PROGS/leakmarks
[ -x "$prog" ] || fail "the test program is not built: $prog"
src=$top_srcdir/tests/progs/leakmarks.c
keep_line=$(grep -n 'KEEP_LINE' "$src" | sed -n '2s/:.*//p')
late_line=$(grep -n 'LATE_LINE' "$src" | sed -n '2s/:.*//p')
[ -n "$keep_line" ] && [ -n "$late_line" ] || fail "cannot find the allocation lines in $src"

# --- the launcher, marks 2 to 4: kept[1] and the late block ---------------
"$MMS_LAUNCHER" --call-stack=c:8 --leak-marks=iter,2 --output=out -- "$prog" >prog.out 2>rec.err ||
	fail "msmemscope --leak-marks=iter,2 -- leakmarks exited $?: $(cat rec.err)"
set -- out/msmemscope_*/memscope_*.mms
[ $# = 1 ] && [ -f "$1" ] || fail "expected one log in out/, found: $*"
log=$1
kept1=$(sed -n 's/^kept 1 //p' prog.out)
late=$(sed -n 's/^late //p' prog.out)
[ -n "$kept1" ] && [ -n "$late" ] || fail "the program did not print its blocks: $(cat prog.out)"
grep -q '^====== ERROR: Detected memory leaks between marks ======$' rec.err ||
	fail "no leaks between marks reported: $(cat rec.err)"
grep -q "^Allocated between mark 2 (event [0-9]*) and mark 3 (event [0-9]*) named 'iter', still live at mark 4 (event [0-9]*):$" rec.err ||
	fail "the marks are not named: $(cat rec.err)"
grep -q "^Direct HOST leak of 0.000955 Mb(s) at $kept1 in kernel_0\\.$" rec.err ||
	fail "kept[1] ($kept1, 1001 bytes) is not a leak between the marks: $(cat rec.err)"
grep -q "^Direct HOST leak of 0.000741 Mb(s) at $late in kernel_0\\.$" rec.err ||
	fail "the late block ($late, 777 bytes) is not a leak between the marks: $(cat rec.err)"
grep -q '^====== SUMMARY: 0.001696 Mb(s) leaked in 2 allocation(s) ======$' rec.err ||
	fail "the summary of the leaks between marks is wrong: $(cat rec.err)"
grep -q "leakmarks.c:$keep_line" rec.err || fail "kept[1]'s stack does not name line $keep_line: $(cat rec.err)"
grep -q "leakmarks.c:$late_line" rec.err || fail "the late block's stack does not name line $late_line: $(cat rec.err)"
grep -q '^No leaks at exit: every block was freed\.$' rec.err || fail "the program freed everything: $(cat rec.err)"

# --- the replay, as JSON, for each first mark -------------------------------
# marks_json N: the between_marks object of --leak-marks iter,N.
marks_json() {
	"$MMS_REPLAY" "$log" --analysis leaks --leak-marks "iter,$1" --json >"m$1.json" 2>"m$1.err" ||
		fail "msmemscope-replay --leak-marks iter,$1 exited $?: $(cat "m$1.err")"
}
for n in 1 2 3 4; do
	marks_json $n
done
"$MMS_PYTHON" - prog.out m1.json m2.json m3.json m4.json <<'PY' || fail "the JSON reports are wrong"
import json, sys
blocks = {}
for line in open(sys.argv[1]):
    w = line.split()
    blocks[w[0] + (w[1] if w[0] == 'kept' else '')] = int(w[-1], 16)
want = {
    1: [(blocks['kept0'], 1000)],
    2: [(blocks['kept1'], 1001), (blocks['late'], 777)],
    3: [(blocks['kept2'], 1002)],
}
for n, path in enumerate(sys.argv[2:], 1):
    m = json.load(open(path))['between_marks']
    assert m['name'] == 'iter' and m['first'] == n and m['marks_seen'] == 5, (n, m)
    got = [(int(b['addr'], 16), b['bytes']) for b in m['list']]
    if n in want:
        assert got == want[n], (n, got, want[n])
        assert m['leaks'] == len(want[n]) and m['bytes'] == sum(s for _, s in want[n]), (n, m)
        assert None not in m['events'] and m['events'] == sorted(m['events']), (n, m['events'])
    else:
        # Marks 4 and 5 exist, not a sixth: the rule does not apply.
        assert got == [] and m['leaks'] == 0 and m['events'][2] is None, (n, m)
PY

# Too few marks, in words.
"$MMS_REPLAY" "$log" --analysis leaks --leak-marks iter,4 >few.txt 2>&1 || fail "--leak-marks iter,4 failed: $(cat few.txt)"
grep -q "^No leaks between marks: the log has 5 marks named 'iter', and the rule needs three from mark 4" few.txt ||
	fail "too few marks is not said: $(cat few.txt)"
# A name never marked.
"$MMS_REPLAY" "$log" --analysis leaks --leak-marks nosuch >none.txt 2>&1 || fail "--leak-marks nosuch failed: $(cat none.txt)"
grep -q "^No leaks between marks: the log has 0 marks named 'nosuch'" none.txt || fail "an unknown name is not said: $(cat none.txt)"
# A name ending in a comma and digits is a name and a first mark; any
# other comma belongs to the name.
"$MMS_REPLAY" "$log" --analysis leaks --leak-marks 'it,er' >comma.txt 2>&1 || fail "--leak-marks it,er failed: $(cat comma.txt)"
grep -q "0 marks named 'it,er'" comma.txt || fail "a comma in the name is cut: $(cat comma.txt)"

# --- with steps: the rule is the same, and the leaks name their step -------
"$MMS_LAUNCHER" --leak-marks=iter --output=outs -- "$prog" steps >steps.out 2>steps.err ||
	fail "msmemscope --leak-marks=iter -- leakmarks steps exited $?: $(cat steps.err)"
kept0=$(sed -n 's/^kept 0 //p' steps.out)
grep -q "^Direct HOST leak of 0.000954 Mb(s) at $kept0 in kernel_0 at step 1\\.$" steps.err ||
	fail "kept[0] is not a leak of step 1 between the marks: $(cat steps.err)"
grep -q '^====== ERROR: Detected memory leaks ======$' steps.err || fail "the per-step rule still applies: $(cat steps.err)"

# --- usage errors -------------------------------------------------------------
for bad in '' 'iter,0' ',3'; do
	"$MMS_LAUNCHER" --leak-marks="$bad" -- "$prog" >usage.out 2>&1 && fail "--leak-marks='$bad' was accepted"
	grep -q -- '--leak-marks' usage.out || fail "--leak-marks='$bad': the message does not name the option: $(cat usage.out)"
	"$MMS_REPLAY" "$log" --analysis leaks --leak-marks "$bad" >usage.out 2>&1 && fail "replay --leak-marks '$bad' was accepted"
	grep -q -- '--leak-marks' usage.out || fail "replay --leak-marks '$bad': the message does not name the option: $(cat usage.out)"
done
"$MMS_LAUNCHER" --analysis=decompose --leak-marks=iter -- "$prog" >usage.out 2>&1 && fail "--leak-marks without leaks was accepted"
grep -q 'goes with the leaks analysis' usage.out || fail "--leak-marks without leaks: $(cat usage.out)"
"$MMS_REPLAY" "$log" --leak-marks iter >usage.out 2>&1 && fail "replay --leak-marks without --analysis was accepted"
grep -q 'goes with --analysis leaks' usage.out || fail "replay --leak-marks without --analysis: $(cat usage.out)"
note "leaks between marks: the blocks of each choice of marks, too few marks, an unknown name, steps, usage errors"
