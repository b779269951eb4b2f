#!/bin/sh
# SPDX-License-Identifier: MIT
# leaks.sh: the leaks analysis over tests/progs/leaks.c, whose leaks are
# known to the byte, the step and the operator: the launcher's default
# report, msmemscope-replay --analysis leaks as text and JSON, a
# suppressions file (and a bad one), a program without steps and one that
# leaks nothing.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"
prog=$MMS_PROGS/leaks
[ -x "$prog" ] || fail "the test program is not built: $prog"

# The report without what differs from run to run: addresses, and the
# stack frames (their file names follow the build folder).
normalize() {
	sed -e 's/0x[0-9a-f]*/0xADDR/g' -e '/^      #[0-9]/d' -e '/^          [^ ]/d' -e '/^      \.\.\. /d' "$@"
}

# expect_text WHAT FILE: FILE equals the text on stdin.
expect_text() {
	cat >"$2.expected"
	diff -u "$2.expected" "$2" >"$2.diff" || fail "$1 differs from what the program did:
$(cat "$2.diff")"
}

# --- the launcher: leaks is the default analysis, after the summary -------
"$MMS_LAUNCHER" --call-stack=c:16 --output=out -- "$prog" >prog.out 2>rec.err ||
	fail "msmemscope -- leaks exited $?: $(cat rec.err)"
set -- out/msmemscope_*/memscope_*.mms
[ $# = 1 ] && [ -f "$1" ] || fail "expected one log in out/, found: $*"
log=$1
arena=$(sed -n 's/^arena //p' prog.out)
[ -n "$arena" ] || fail "the program did not print its arena: $(cat prog.out)"

sed -n '/^====== ERROR/,$p' rec.err | normalize >report.txt
expect_text "the launcher's leaks report" report.txt <<'EOF'
====== ERROR: Detected memory leaks ======
Direct HOST leak of 0.000095 Mb(s) at 0xADDR in kernel_2 at step 3.
Direct HOST leak of 0.000488 Mb(s) at 0xADDR in softmax (launch 4) at step 3.
Direct HOST leak of 0.000488 Mb(s) at 0xADDR in softmax (launch 4) at step 3.
Direct kvpool leak of 0.000244 Mb(s) at 0xADDR in softmax (launch 4) at step 3.
Direct HOST leak of 0.001953 Mb(s) at 0xADDR in cache (launch 5) at step 4.
Per-step leaks by allocation stack: 5 blocks, 3.3 KiB from 5 stacks
  2.0 KiB in 1 block (largest 0xADDR, 2.0 KiB, step 4, operator cache)
  512 bytes in 1 block (largest 0xADDR, 512 bytes, step 3, operator softmax)
  512 bytes in 1 block (largest 0xADDR, 512 bytes, step 3, operator softmax)
  256 bytes in 1 block (largest 0xADDR, 256 bytes, step 3, operator softmax)
  100 bytes in 1 block (largest 0xADDR, 100 bytes, step 3)
====== SUMMARY: 0.003269 Mb(s) leaked in 5 allocation(s) ======
====== Blocks leaked at exit: the program no longer pointed to them ======
Leaked at exit by allocation stack: 5 blocks, 4.1 KiB from 5 stacks
  2.0 KiB in 1 block (largest 0xADDR, 2.0 KiB, step 4, operator cache)
  1000 bytes in 1 block (largest 0xADDR, 1000 bytes, step 1, operator init)
  512 bytes in 1 block (largest 0xADDR, 512 bytes, step 3, operator softmax)
  512 bytes in 1 block (largest 0xADDR, 512 bytes, step 3, operator softmax)
  100 bytes in 1 block (largest 0xADDR, 100 bytes, step 3)
====== SUMMARY: 0.003979 Mb(s) leaked at exit in 5 allocation(s) ======
====== Other memory still live at exit (mappings, pools, device memory) ======
Live at exit by allocation stack: 1 block, 256 bytes
  256 bytes in 1 block (largest 0xADDR, 256 bytes, step 3, operator softmax)
====== SUMMARY: 0.000244 Mb(s) live at exit in 1 allocation(s) ======
Live HOST bytes per step, steps 2-6 (lowest/highest within each step):
           MinAlloc/MaxAlloc(%)   MinAllocMem(MB)   StepId
  MinGap   47.080979              0.000954          3
  MaxGap   97.023256              0.003979          5
Live POOL bytes per step, steps 2-6 (lowest/highest within each step):
           MinAlloc/MaxAlloc(%)   MinAllocMem(MB)   StepId
  MinGap   0.000000               0.000000          3
  MaxGap   100.000000             0.000244          4
Steps that allocated more than the step before, largest increase first:
  step 3: 1380 bytes in 4 allocation(s), 880 bytes more than step 2
  step 4: 2048 bytes in 1 allocation(s), 668 bytes more than step 3
Steps that ended with more live memory than the step before, largest increase first:
  step 4: HOST 4172 bytes live at its end, 2048 more than step 3
  step 3: HOST 2124 bytes live at its end, 824 more than step 2
  step 2: HOST 1300 bytes live at its end, 300 more than step 1
  step 3: POOL 256 bytes live at its end, 256 more than step 2
  step 5: HOST 4300 bytes live at its end, 128 more than step 4
EOF
# The pool block is the arena the program handed to msmemscope_pool_alloc.
grep -q "^Direct kvpool leak of 0.000244 Mb(s) at $arena in softmax (launch 4) at step 3\.$" rec.err ||
	fail "the kvpool leak is not at the arena $arena: $(grep kvpool rec.err)"
# The stacks name the functions that allocated.
[ "$(grep -c '^      #0  leak_buf (.*leaks.c:' rec.err)" = 4 ] ||
	fail "expected leak_buf on top of 4 stacks: $(grep '#0' rec.err)"
[ "$(grep -c '^      #0  suppressed_alloc (.*leaks.c:' rec.err)" = 2 ] ||
	fail "expected suppressed_alloc on top of 2 stacks: $(grep '#0' rec.err)"
note "launcher: 5 per-step leaks (3428 bytes) in softmax, cache and kernel_2; 5 heap blocks (4172 bytes) leaked at exit, the pool's 256 bytes live; steps 3 and 4 allocate more, steps 2 to 5 end with more live"

# --- msmemscope-replay: the same report on stdout --------------------------
"$MMS_REPLAY" "$log" --analysis leaks >replay.out 2>replay.err || fail "--analysis leaks exited $?: $(cat replay.err)"
[ ! -s replay.err ] || fail "--analysis leaks wrote to stderr: $(cat replay.err)"
normalize replay.out >replay.txt
cmp -s report.txt replay.txt || fail "msmemscope-replay's report differs from the launcher's: $(diff report.txt replay.txt)"

# --- JSON: one object with the same figures ----------------------------------
"$MMS_REPLAY" "$log" --analysis leaks --json >leaks.json || fail "--analysis leaks --json exited $?"
[ "$(wc -l <leaks.json)" = 1 ] || fail "--json printed more than one line"
"$MMS_PYTHON" - leaks.json "$arena" <<'PY' || fail "the JSON report is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
ps, ex, gap = d["per_step"], d["at_exit"], d["gap"]
def check(what, got, want):
    if got != want:
        sys.exit("%s: got %r, expected %r" % (what, got, want))
check("analysis", d["analysis"], "leaks")
check("per_step leaks", (ps["leaks"], ps["bytes"]), (5, 3428))
check("per_step list", [(l["bytes"], l["memory"], l["op"], l["op_launch"], l["step"], l["found_at_step_end"])
                        for l in ps["list"]],
      [(100, "HOST", None, 0, 3, 4), (512, "HOST", "softmax", 4, 3, 4), (512, "HOST", "softmax", 4, 3, 4),
       (256, "kvpool", "softmax", 4, 3, 4), (2048, "HOST", "cache", 5, 4, 5)])
check("kernel launches before the kernel_2 leak", ps["list"][0]["kernel_launches"], 2)
check("kvpool address", ps["list"][3]["addr"], sys.argv[2])
check("per_step groups", [g["bytes"] for g in ps["by_stack"]["groups"]], [2048, 512, 512, 256, 100])
check("at_exit", (ex["leaks"], ex["bytes"], len(ex["list"])), (6, 4428, 6))
check("suppressed", (ps["suppressed_leaks"], ex["suppressed_bytes"]), (0, 0))
check("steps", d["steps_total"], 6)
check("HOST min gap", (gap["HOST"]["min_gap"]["step"], gap["HOST"]["min_gap"]["min_bytes"]), (3, 1000))
check("HOST max gap", (gap["HOST"]["max_gap"]["step"], gap["HOST"]["max_gap"]["min_bytes"]), (5, 4172))
check("bytes allocated per step", [s["bytes_allocated"] for s in d["steps"]], [1000, 500, 1380, 2048, 192, 0])
check("steps allocating more", [s["step"] for s in d["steps"] if s["more_than_previous"]], [3, 4])
check("HOST live in step 3", (d["steps"][2]["HOST"]["min_bytes"], d["steps"][2]["HOST"]["max_bytes"]), (1000, 2124))
check("HOST live at each step's end", [s["HOST"]["end_bytes"] for s in d["steps"]], [1000, 1300, 2124, 4172, 4300, 4172])
check("POOL live at each step's end", [s["POOL"]["end_bytes"] for s in d["steps"]], [0, 0, 256, 256, 256, 256])
PY
note "--json: the same leaks, groups, gap table and per-step allocations"

# --- suppressions ---------------------------------------------------------------
cat >supp.txt <<'EOF'
# LeakSanitizer's format: comments, blank lines, leak:PATTERN

leak:suppressed_alloc
leak:^no_such_function$
EOF
"$MMS_REPLAY" "$log" --analysis leaks --suppressions supp.txt >supp.out || fail "--suppressions exited $?"
normalize supp.out | sed -n '1,/^====== SUMMARY/p' >supp.txt.out
expect_text "the report with suppressions" supp.txt.out <<'EOF'
====== ERROR: Detected memory leaks ======
Direct HOST leak of 0.000095 Mb(s) at 0xADDR in kernel_2 at step 3.
Direct HOST leak of 0.000488 Mb(s) at 0xADDR in softmax (launch 4) at step 3.
Direct HOST leak of 0.000488 Mb(s) at 0xADDR in softmax (launch 4) at step 3.
Direct kvpool leak of 0.000244 Mb(s) at 0xADDR in softmax (launch 4) at step 3.
Per-step leaks by allocation stack: 4 blocks, 1.3 KiB from 4 stacks
  512 bytes in 1 block (largest 0xADDR, 512 bytes, step 3, operator softmax)
  512 bytes in 1 block (largest 0xADDR, 512 bytes, step 3, operator softmax)
  256 bytes in 1 block (largest 0xADDR, 256 bytes, step 3, operator softmax)
  100 bytes in 1 block (largest 0xADDR, 100 bytes, step 3)
====== SUMMARY: 0.001316 Mb(s) leaked in 4 allocation(s) ======
EOF
[ "$(grep -c '^         1         2048  suppressed_alloc$' supp.out)" = 2 ] ||
	fail "the suppressions table of both sections should show suppressed_alloc once, 2048 bytes: $(cat supp.out)"
grep -q '^====== SUMMARY: 0.002026 Mb(s) leaked at exit in 4 allocation(s) ======$' supp.out ||
	fail "the exit section should leave out the suppressed block: $(cat supp.out)"
"$MMS_LAUNCHER" --call-stack=c:16 --output=out2 --suppressions=supp.txt -- "$prog" >/dev/null 2>rec2.err ||
	fail "msmemscope --suppressions exited $?: $(cat rec2.err)"
grep -q '^====== SUMMARY: 0.001316 Mb(s) leaked in 4 allocation(s) ======$' rec2.err ||
	fail "msmemscope --suppressions did not leave out suppressed_alloc: $(cat rec2.err)"
# Every leak suppressed: the verdict says so, not that every block was freed.
printf 'leak:*\n' >all.txt
"$MMS_REPLAY" "$log" --analysis leaks --suppressions all.txt >all.out || fail "--suppressions leak:* exited $?"
grep -q '^No leaks at exit but those suppressed (below): every other block was freed\.$' all.out ||
	fail "every leak suppressed: the verdict does not say so: $(cat all.out)"
! grep -q 'every block was freed' all.out || fail "every leak suppressed: a claim that every block was freed"

# How LSan matches: anywhere in a function, file or module name unless
# anchored, '*' for any run of characters. The count is of per-step leaks.
for case in '^suppressed_alloc$ 1 2048' 'supp*alloc 1 2048' '_alloc$ 1 2048' '^alloc 0 0' 'uppressed 1 2048' \
	'^leak_buf$ 2 1024' 'tests/progs/leaks.c 5 3428' 'progs/leaks$ 5 3428' 'no_such_name 0 0'; do
	set -- $case
	printf '# one pattern\r\n  leak:%s  \r\n' "$1" >one.txt
	"$MMS_REPLAY" "$log" --analysis leaks --json --suppressions one.txt >one.json ||
		fail "--suppressions with leak:$1 exited $?"
	expect_eq "per-step leaks suppressed by leak:$1" "$(jget one.json per_step.suppressed_leaks)" "$2"
	expect_eq "per-step bytes suppressed by leak:$1" "$(jget one.json per_step.suppressed_bytes)" "$3"
done

# A bad line is a usage error naming the file and the line, before the
# program runs.
printf 'leak:ok\n\nleek:typo\n' >bad.txt
rc=0
"$MMS_REPLAY" "$log" --analysis leaks --suppressions bad.txt >/dev/null 2>bad.err || rc=$?
expect_eq "exit status of msmemscope-replay with a bad suppressions file" "$rc" 2
grep -q 'bad.txt:3: not a suppression' bad.err || fail "the error does not name bad.txt:3: $(cat bad.err)"
rc=0
"$MMS_LAUNCHER" --output=out3 --suppressions=bad.txt -- "$prog" >/dev/null 2>bad.err || rc=$?
expect_eq "exit status of msmemscope with a bad suppressions file" "$rc" 2
grep -q 'bad.txt:3: not a suppression' bad.err || fail "the error does not name bad.txt:3: $(cat bad.err)"
[ ! -e out3 ] || fail "msmemscope ran the program despite the bad suppressions file"
note "suppressions: leak:suppressed_alloc takes out 2048 bytes from both sections; anchors, wildcards, files and modules match as in LSan; bad.txt:3 is refused"

# --- a queue: the per-step rule's block freed in a later step, before the
# last step ended, is held, not leaked; one freed only in the teardown is a
# leak ---------------------------------------------------------------------------
"$MMS_LAUNCHER" --output=out7 -- "$prog" queue >/dev/null 2>queue.err ||
	fail "msmemscope -- leaks queue exited $?: $(cat queue.err)"
grep -q '^====== SUMMARY: 0.003841 Mb(s) leaked in 6 allocation(s) ======$' queue.err ||
	fail "the 600 bytes freed only in the teardown should join the 5 per-step leaks: $(cat queue.err)"
grep -q '^Held past the next step, then freed in a later one: 2 allocation(s), 8.4 KiB (not leaks: ' queue.err ||
	fail "the 400 bytes freed in step 4 and the mapping unmapped in steps 4 and 5 should be held, not leaked: $(cat queue.err)"
grep -q '^  --show-held lists them by allocation stack\.$' queue.err || fail "no pointer to --show-held: $(cat queue.err)"
set -- out7/msmemscope_*/memscope_*.mms
"$MMS_REPLAY" "$1" --analysis leaks --json >queue.json || fail "--analysis leaks --json on the queue log exited $?"
"$MMS_PYTHON" - queue.json <<'PY' || fail "the queue's JSON is wrong: $(cat queue.json)"
import json, sys
d = json.load(open(sys.argv[1]))
held, ps = d["per_step_held"], d["per_step"]
assert (held["blocks"], held["bytes"]) == (2, 8592), held
h, m = held["list"]
assert (h["memory"], h["bytes"], h["step"], h["found_at_step_end"], h["freed_at_step"]) == ("HOST", 400, 2, 3, 4), h
# A mapping is held once its last page is unmapped.
assert (m["memory"], m["bytes"], m["step"], m["found_at_step_end"], m["freed_at_step"]) == ("MMAP", 8192, 2, 3, 5), m
assert (ps["leaks"], ps["bytes"]) == (6, 4028), (ps["leaks"], ps["bytes"])
q = [l for l in ps["list"] if l["bytes"] == 600]
assert len(q) == 1 and (q[0]["step"], q[0]["freed_at_step"]) == (3, 6), q
assert all("freed_at_step" not in l for l in ps["list"] if l["bytes"] != 600), ps["list"]
PY
"$MMS_REPLAY" "$1" --analysis leaks --show-held >held.out || fail "--show-held exited $?"
grep -q '^Held past the next step by allocation stack: 2 blocks, 8.4 KiB' held.out ||
	fail "--show-held does not list the held block: $(cat held.out)"
rc=0
"$MMS_REPLAY" "$1" --show-held >/dev/null 2>held.err || rc=$?
expect_eq "exit status of --show-held without --analysis" "$rc" 2
note "a queue: 400 bytes of step 2 freed in step 4 are held (per_step_held, freed_at_step 4), so is a mapping of step 2 unmapped half in step 4 and half in step 5 (freed_at_step 5), 600 bytes of step 3 freed in the teardown are the sixth per-step leak"

# --- msMemScope's "step start" ranges: the same leaks; the teardown is in
# no step, so there are 5 steps, not 6 ----------------------------------------
"$MMS_LAUNCHER" --call-stack=c:16 --output=out6 -- "$prog" ranges >/dev/null 2>ranges.err ||
	fail "msmemscope -- leaks ranges exited $?: $(cat ranges.err)"
sed -n '/^====== ERROR/,$p' ranges.err | normalize >ranges.txt
sed 's/steps 2-6/steps 2-5/' report.txt >ranges.expected.txt
cmp -s ranges.expected.txt ranges.txt || fail "the report with step ranges differs: $(diff ranges.expected.txt ranges.txt)"
set -- out6/msmemscope_*/memscope_*.mms
"$MMS_REPLAY" "$1" --analysis leaks --json >ranges.json || fail "--analysis leaks --json on the ranges log exited $?"
expect_eq "steps of the ranges log" "$(jget ranges.json steps_total)" 5
note "\"step start\" ranges: the same 5 per-step leaks over 5 steps"

# --- no steps: only the blocks live at exit, with no "step 0" (recorded without stacks: one
# group) ---------------------------------------------------------------------------
"$MMS_LAUNCHER" --output=out4 -- "$prog" flat >/dev/null 2>flat.err || fail "msmemscope -- leaks flat exited $?"
sed -n '/^====== /,$p' flat.err | normalize >flat.txt
expect_text "the report of a program without steps" flat.txt <<'EOF'
====== Blocks leaked at exit: the program no longer pointed to them ======
Leaked at exit by allocation stack: 5 blocks, 4.1 KiB
  4.1 KiB in 5 blocks (largest 0xADDR, 2.0 KiB, operator cache)
      (no stack recorded; record with --call-stack=c:N to get them)
====== SUMMARY: 0.003979 Mb(s) leaked at exit in 5 allocation(s) ======
====== Other memory still live at exit (mappings, pools, device memory) ======
Live at exit by allocation stack: 1 block, 256 bytes
  256 bytes in 1 block (largest 0xADDR, 256 bytes, operator softmax)
      (no stack recorded; record with --call-stack=c:N to get them)
====== SUMMARY: 0.000244 Mb(s) live at exit in 1 allocation(s) ======
EOF

# --- nothing leaked: clear words ------------------------------------------------------
"$MMS_LAUNCHER" --output=out5 -- "$prog" tidy >/dev/null 2>tidy.err || fail "msmemscope -- leaks tidy exited $?"
grep -q '^No per-step leaks: no block allocated in step 2 or later was still live at the end of the step after it\.$' tidy.err ||
	fail "no clear words for no per-step leaks: $(cat tidy.err)"
grep -q '^No leaks at exit: every block was freed\.$' tidy.err || fail "no clear words for no leaks at exit: $(cat tidy.err)"
grep -q 'Detected memory leaks' tidy.err && fail "a program that frees everything got a leak report: $(cat tidy.err)"
note "a program without steps gets the exit section only; one that frees everything is told so"

# --- --error-exitcode: leaks of the kinds --errors-for-leak-kinds names
# decide the status, as valgrind's ---------------------------------------------
"$MMS_REPLAY" "$log" --analysis leaks --json >ec.json || fail "--analysis leaks --json exited $?"
definite=$(($(jget ec.json at_exit.by_reach.leaked.leaks) + $(jget ec.json at_exit.by_reach.possible.leaks)))
step=$(jget ec.json per_step.leaks)
expect_ge "leaked at exit in the leaks program" "$definite" 1
# exits STATUS PATTERN CMD...: CMD exits STATUS, and its stderr (ec.err)
# has a line matching PATTERN (a basic regular expression; "" for none).
exits() {
	_want=$1 _pat=$2
	shift 2
	_rc=0
	"$@" >/dev/null 2>ec.err || _rc=$?
	expect_eq "the exit status of $*" "$_rc" "$_want"
	[ -z "$_pat" ] || grep -q -e "$_pat" ec.err || fail "$* said no line matching '$_pat': $(tail -3 ec.err)"
}
exits 7 "^msmemscope: $definite errors: $definite leaks (definite,possible) and 0 guard findings: exit status 7 (--error-exitcode)\$" \
	"$MMS_LAUNCHER" --error-exitcode=7 --output=oute -- "$prog"
exits 7 "^msmemscope: $step errors: $step leaks (step) and 0 guard findings" \
	"$MMS_LAUNCHER" --error-exitcode=7 --errors-for-leak-kinds=step --output=oute -- "$prog"
# none, and a tidy program: the program's status.
exits 0 "" "$MMS_LAUNCHER" --error-exitcode=7 --errors-for-leak-kinds=none --output=oute -- "$prog"
exits 0 "" "$MMS_LAUNCHER" --error-exitcode=7 --output=oute -- "$prog" tidy
exits 4 "^msmemscope-replay: $((definite + step)) errors: $((definite + step)) leaks (definite,step)" \
	"$MMS_REPLAY" "$log" --analysis leaks --error-exitcode 4 --errors-for-leak-kinds definite,step
# The leaks program keeps nothing reachable.
exits 0 "" "$MMS_REPLAY" "$log" --analysis leaks --error-exitcode 4 --errors-for-leak-kinds reachable
exits 2 "no leak kind 'often'; the leak kinds are definite, indirect, possible, reachable and step" \
	"$MMS_LAUNCHER" --error-exitcode=7 --errors-for-leak-kinds=often --output=oute -- "$prog"
# Without --error-exitcode: a usage error.
exits 2 "" "$MMS_REPLAY" "$log" --analysis leaks --errors-for-leak-kinds all
note "--error-exitcode: $definite leaks at exit (definite,possible), $step per-step (step) decide the status; none and a tidy program keep it"

# --- a damaged log: its records after the damage are lost, frees among
# them, so the replay stops before the damage and no report speaks of exit
# or leaks there (recorded without the scan at exit, whose records would
# end the chunk) -----------------------------------------------------------
"$MMS_LAUNCHER" --no-reach-scan --output=out7 -- "$prog" tidy >/dev/null 2>tidy7.err ||
	fail "msmemscope --no-reach-scan -- leaks tidy exited $?: $(cat tidy7.err)"
set -- out7/msmemscope_*/memscope_*.mms
"$MMS_PYTHON" - "$1" damaged.mms <<'PY' || fail "cannot damage the log"
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
used = struct.unpack_from("<Q", d, 4096 + 8)[0]
# The last 40 bytes of the first chunk's records: the program's last events.
end = 4096 + 16 + used
d[end - 40:end] = b"\xff" * 40
open(sys.argv[2], "wb").write(d)
PY
"$MMS_REPLAY" damaged.mms --summary --json >damaged.json 2>/dev/null || fail "the summary of a damaged log exited $?"
stop=$(jget damaged.json stopped_at_event)
expect_key damaged.json damaged true
expect_key damaged.json cut false
expect_key damaged.json events "$stop"
"$MMS_REPLAY" damaged.mms --analysis leaks >damaged.txt 2>damaged.err || fail "leaks on a damaged log exited $?"
grep -q "damaged at byte .*; the replay stops at event $stop, where records may be missing" damaged.err ||
	fail "no warning about the damage and where the replay stops: $(cat damaged.err)"
grep -q 'every block was freed\|at exit' damaged.txt && fail "a damaged log's report speaks of exit: $(cat damaged.txt)"
grep -q "^====== Blocks still live at event $stop, where the damage stops the replay (not leaks) ======\$" damaged.txt ||
	fail "no clear words for a damaged log: $(cat damaged.txt)"
"$MMS_REPLAY" damaged.mms --analysis leaks --json 2>/dev/null >damaged-leaks.json
expect_key damaged-leaks.json damaged true
expect_key damaged-leaks.json stopped_at_event "$stop"
expect_key damaged-leaks.json at_exit.live_when "\"at event $stop, where the damage stops the replay (not leaks)\""
"$MMS_REPLAY" damaged.mms >damaged.sum 2>/dev/null || fail "the summary of a damaged log exited $?"
grep -q "^live at the damage .*: live at event $stop, where the damage stops the replay (not leaks)\$" damaged.sum ||
	fail "the summary of a damaged log speaks of exit: $(cat damaged.sum)"
note "a damaged log's reports stop at event $stop, before the damage, and call nothing there a leak"

# --- a recording of some steps only: the analyses say that frees outside
# them are missing, once ---------------------------------------------------------
"$MMS_LAUNCHER" --steps=2,3 --output=out6 -- "$prog" >/dev/null 2>steps.err || fail "msmemscope --steps=2,3 exited $?"
[ "$(grep -c 'was recorded with --steps=2,3: memory events of the other steps are not in the log' steps.err)" = 1 ] ||
	fail "no single warning about a recording of steps 2 and 3: $(cat steps.err)"
"$MMS_LAUNCHER" --output=out7 -- "$prog" >/dev/null 2>all.err || fail "msmemscope -- leaks exited $?"
grep -q 'was recorded with' all.err && fail "a whole recording got the partial-recording warning: $(cat all.err)"
note "a recording of steps 2 and 3 only is said to lack the other steps' frees"

# --- --warmup-steps: the blocks of the first N steps are no per-step leaks -------
"$MMS_REPLAY" "$log" --analysis leaks --json --warmup-steps 3 >warm.json || fail "--warmup-steps 3 exited $?"
"$MMS_PYTHON" - warm.json <<'PY' || fail "--warmup-steps 3 reports other leaks: $(cat warm.json)"
import json, sys
d = json.load(open(sys.argv[1]))
ps = d["per_step"]
assert d["warmup_steps"] == 3, d["warmup_steps"]
assert (ps["leaks"], ps["bytes"]) == (1, 2048), (ps["leaks"], ps["bytes"])
assert [l["step"] for l in ps["list"]] == [4], ps["list"]
# What is live at exit does not depend on the warm-up.
assert (d["at_exit"]["leaks"], d["at_exit"]["bytes"]) == (6, 4428), d["at_exit"]
PY
"$MMS_REPLAY" "$log" --analysis leaks --warmup-steps 4 >warm4.out || fail "--warmup-steps 4 exited $?"
grep -q "^No per-step leaks: no block allocated in step 5 or later was still live at the end of the step after it.$" \
	warm4.out || fail "--warmup-steps 4 still finds per-step leaks: $(cat warm4.out)"
"$MMS_LAUNCHER" --warmup-steps=3 --output=out8 -- "$prog" >/dev/null 2>warm.err || fail "msmemscope --warmup-steps=3 exited $?"
expect_eq "per-step leaks the launcher reports with --warmup-steps=3" "$(grep -c '^Direct .* leak of' warm.err)" 1
for bad in 0 -1 x; do
	st=0
	"$MMS_REPLAY" "$log" --analysis leaks --warmup-steps "$bad" >/dev/null 2>&1 || st=$?
	expect_eq "msmemscope-replay --warmup-steps $bad" "$st" 2
	st=0
	"$MMS_LAUNCHER" --warmup-steps="$bad" -- "$prog" >/dev/null 2>&1 || st=$?
	expect_eq "msmemscope --warmup-steps=$bad" "$st" 2
done
note "--warmup-steps=N leaves the blocks of steps 1 to N out of the per-step rule, in both programs"

# A leak in a loop: the first 100 leak lines, then how many more, and the
# stacks that say where; --top 0 lists every one.
"$MMS_LAUNCHER" --call-stack=c:8 --output=out9 -- "$prog" many >/dev/null 2>many.err || fail "msmemscope -- leaks many exited $?"
expect_eq "leak lines the launcher prints for 155 per-step leaks" "$(grep -c '^Direct .* leak of' many.err)" 100
grep -q "^\.\.\. and 55 more per-step leaks, counted by stack below (msmemscope-replay LOG --analysis leaks --top 0 lists every one)$" \
	many.err || fail "leaks many: the 55 leaks not listed are not counted: $(cat many.err)"
grep -q "^====== SUMMARY: .* leaked in 155 allocation(s) ======$" many.err || fail "leaks many: the summary does not count 155: $(cat many.err)"
grep -A1 "^  2.3 KiB in 150 blocks" many.err | grep -q "leak_buf" || fail "leaks many: the 150 blocks are not one stack in leak_buf: $(cat many.err)"
"$MMS_REPLAY" out9/msmemscope_*/memscope_*.mms --analysis leaks --top 0 >many.all || fail "--analysis leaks --top 0 exited $?"
expect_eq "leak lines with --top 0" "$(grep -c '^Direct .* leak of' many.all)" 155
! grep -q "more per-step leaks" many.all || fail "--top 0 still says leaks are not listed"
note "a leak in a loop: 100 leak lines and the count of the others; --top 0 lists all 155"

# The leaks in a child of a script (`; true` keeps sh from exec'ing it):
# the launcher names the busiest log and the command that reports on it.
"$MMS_LAUNCHER" --call-stack=c:8 --output=out10 -- sh -c "'$prog' many; true" >/dev/null 2>script.err ||
	fail "msmemscope -- sh -c 'leaks many; true' exited $?"
busy=$(sed -n "s|^  most events are in \(memscope_[0-9]*\.mms\) ($prog: [0-9]* events, more than the program's own); its report: msmemscope-replay \(out10/msmemscope_[0-9_]*/memscope_[0-9]*\.mms\) --analysis leaks\$|\2|p" script.err)
[ -n "$busy" ] && [ -f "$busy" ] || fail "the launcher does not name the child's log: $(cat script.err)"
"$MMS_REPLAY" "$busy" --analysis leaks >script.leaks 2>&1 || fail "the command it gives exited $?: $(cat script.leaks)"
grep -q "^====== SUMMARY: .* leaked in 155 allocation(s) ======$" script.leaks ||
	fail "the child's report does not count its 155 leaks: $(cat script.leaks)"
note "a script running the leaking program: the launcher names its log and the command for its report"

# --- a block allocated once in step 3 of 10 and lost: set apart by the
# per-step rule, yet a leak at exit; no line may say it is none ------------
"$MMS_LAUNCHER" --output=out-once --call-stack=c:8 -- "$prog" once >/dev/null 2>once.err ||
	fail "msmemscope -- leaks once exited $?: $(cat once.err)"
grep -q '^Kept from one step only: 1 allocation(s), 777 bytes (not counted as per-step leaks: .* those the program lost are in the leaks at exit)$' once.err ||
	fail "the block kept from step 3 is not set apart, or is called no leak: $(cat once.err)"
grep -q '^No per-step leaks: what was allocated in step 2 or later and still live at the end of the step after it is set apart below' once.err ||
	fail "the no-per-step-leaks line does not say what the rule set apart: $(cat once.err)"
! grep -q 'not leaks: allocated once\|no block allocated in step 2 or later was still live' once.err ||
	fail "a line still says the lost block is no leak, or that none was live: $(cat once.err)"
grep -q '^====== SUMMARY: 0.000741 Mb(s) leaked at exit in 1 allocation(s) ======$' once.err ||
	fail "the lost 777 bytes are not a leak at exit: $(cat once.err)"
note "once: the block kept from step 3 is not counted as a per-step leak, and is a leak at exit"
