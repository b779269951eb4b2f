#!/bin/sh
# SPDX-License-Identifier: MIT
# nvtx.sh: the recorder as an NVTX injection library (hooks/nvtx.c), over
# tests/progs/nvtx.c, a program annotated with NVTX only: its "step start"
# ranges are steps (started or pushed), pushed ranges operator launches
# that nest, start/end ranges MSTX ranges and launches (ended on the same
# thread, overlapping, or on another thread), marks MSTX marks, in domains
# "domain::name", with registered and wide-character strings; the
# program's output and heap are what they are without the recorder; the
# launcher sets NVTX_INJECTION64_PATH unless the user did.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

prog=$MMS_PROGS/nvtx
[ -x "$prog" ] || skip "the NVTX test program is not built: configure found no nvtx3/nvToolsExt.h (install the CUDA toolkit's headers, or give --with-cuda=DIR)"
[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"

# nvtx_record LOG ARGS...: the program under the recorder, as the launcher
# and memscope.gdb run it.
nvtx_record() {
	_log=$1
	shift
	NVTX_INJECTION64_PATH="$MMS_HOOKS" record "$_log" "$prog" "$@"
}

# Without a tool, and under the recorder: the same push/pop results (-2)
# and the same heap (the first block after NVTX loaded its library is as
# far from one allocated before as natively); range ids only with a tool.
"$prog" >native.out || fail "nvtx exited $? on its own"
grep -q '^nvtx push=-2 pop=-2 gap=[0-9]* range=unset$' native.out || fail "unexpected native output: $(cat native.out)"
nvtx_record nvtx.mms >rec.out || fail "nvtx exited $? under the recorder"
expect_eq "nvtx output under the recorder" "$(cat rec.out)" "$(sed 's/range=unset$/range=set/' native.out)"

summarize nvtx.mms
j=nvtx.mms.json
expect_consistent $j
expect_key $j steps 3
expect_key $j threads 2
# 7 launches in each of the 3 steps, then io::a, net::b, handoff, x, y:
# 26 begin/end pairs. MSTX: marks setup, 3 x (tick, tock), ended
# elsewhere, after (9); ranges 3 x (step start, async), handoff, x, y
# (start and end each: 18). Live at exit: the 3 blocks of 100 bytes kept.
expect_key $j by_kind.op_launch 52
expect_key $j by_kind.mstx 27
expect_key $j by_kind.step 0
expect_key $j live_blocks 3
expect_key $j live_bytes 300
note "3 steps from \"step start\" ranges, 26 launches, 27 MSTX events, 3 blocks of 100 bytes kept"

# --step N: each step's launches, by name, number, thread and memory.
step_launches() {
	"$MMS_REPLAY" "$1" --step "$2" --json >"$1.step$2.json" 2>"$1.step$2.err" ||
		fail "msmemscope-replay $1 --step $2 exited $?: $(cat "$1.step$2.err")"
	"$MMS_PYTHON" - "$1.step$2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("kept %d %d" % (d["kept"]["blocks"], d["kept"]["bytes"]))
for l in d["launches"]:
    print("%d %s %s %d/%d %d %d" % (l["launch"], l["name"], l["thread_name"], l["allocs"], l["frees"],
                                    l["bytes_allocated"], l["delta_bytes"]))
PY
}

expect_step() {
	step_launches "$1" "$2" >"$1.step$2.txt"
	first=$((7 * ($2 - 1)))
	cat >"$1.step$2.expected" <<EOF
kept 1 100
$((first + 1)) outer nvtx-main 2/1 300 100
$((first + 2)) inner nvtx-main 1/1 200 0
$((first + 3)) größe nvtx-main 1/1 300 0
$((first + 4)) io::write nvtx-main 1/1 16 0
$((first + 5)) io::read nvtx-main 1/1 32 0
$((first + 6)) wide-reg nvtx-main 0/0 0 0
$((first + 7)) async nvtx-main 1/1 400 0
EOF
	diff -u "$1.step$2.expected" "$1.step$2.txt" >"$1.step$2.diff" ||
		fail "$1 --step $2: the launches differ from what the program did:
$(cat "$1.step$2.diff")"
}

for n in 1 2 3; do
	expect_step nvtx.mms $n
done
note "--step 1..3: outer > inner nested, größe (wide), io::write, io::read (domain, registered), wide-reg, async (start/end), named by the ranges, on thread nvtx-main"

# The dump: the rows of each kind of NVTX call, in order.
"$MMS_REPLAY" nvtx.mms --export csv -o nvtx.csv >/dev/null 2>export.err ||
	fail "msmemscope-replay --export csv exited $?: $(cat export.err)"
# rows: "Event,Event Type,Name,thread,Attr" of the OP_LAUNCH and MSTX rows,
# with the thread as main or other and range ids as found.
"$MMS_PYTHON" - nvtx.csv >rows.txt <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
main = rows[0]["Thread Id"]
for r in rows:
    if r["Event"] in ("OP_LAUNCH", "MSTX"):
        who = "main" if r["Thread Id"] == main else "other"
        print(",".join([r["Event"], r["Event Type"], r["Name"], who, r["Attr"]]))
    elif r["Event"] in ("MALLOC", "FREE") and r["Event Type"] == "HOST":
        print(r["Event"])
PY
[ "$(grep -c '^MSTX,Mark,' rows.txt)" = 9 ] || fail "expected 9 MSTX marks: $(grep '^MSTX,Mark,' rows.txt)"
[ "$(grep -c '^MSTX,Mark,tock,main,$' rows.txt)" = 3 ] || fail "the wide mark tock is not 3 MSTX marks"
[ "$(grep -c '^MSTX,Range_start,step start,main,' rows.txt)" = 3 ] || fail "expected 3 \"step start\" ranges"
[ "$(grep -c '^OP_LAUNCH,OP_START,step start' rows.txt)" = 0 ] || fail "a \"step start\" range became a launch"

# after MARKER: the rows from the first one that starts with MARKER.
after() {
	sed -n "/^$1/,\$p" rows.txt
}
# Domains pushed io, net and popped io first: io::a ends with net::b.
after 'OP_LAUNCH,OP_START,io::a' | head -6 >interleave.txt
cat >interleave.expected <<'EOF'
OP_LAUNCH,OP_START,io::a,main,
OP_LAUNCH,OP_START,net::b,main,
MALLOC
FREE
OP_LAUNCH,OP_END,net::b,main,
OP_LAUNCH,OP_END,io::a,main,
EOF
diff -u interleave.expected interleave.txt >interleave.diff || fail "interleaved domains:
$(cat interleave.diff)"

# handoff: started on main, ended by the other thread (its MSTX range
# ends there), its launch ends at main's next NVTX call (the mark
# "after"): the 50 bytes main churned in between count in it.
hid=$(sed -n 's/^MSTX,Range_start,handoff,main,"*{range_id:\([0-9]*\)}"*$/\1/p' rows.txt)
[ -n "$hid" ] || fail "no MSTX range start for handoff: $(grep handoff rows.txt)"
after 'MSTX,Range_start,handoff' | sed '/^MSTX,Mark,after/q' >handoff.txt
cat >handoff.expected <<EOF
MSTX,Range_start,handoff,main,{range_id:$hid}
OP_LAUNCH,OP_START,handoff,main,
MSTX,Mark,ended elsewhere,other,
MSTX,Range_end,Range end from id $hid,other,{range_id:$hid}
MALLOC
FREE
OP_LAUNCH,OP_END,handoff,main,
MSTX,Mark,after,main,
EOF
diff -u handoff.expected handoff.txt >handoff.diff || fail "a range ended on another thread:
$(cat handoff.diff)"

# x and y overlap on one thread: x's launch ends with y's.
xid=$(sed -n 's/^MSTX,Range_start,x,main,"*{range_id:\([0-9]*\)}"*$/\1/p' rows.txt)
after 'MSTX,Range_start,x' | head -8 >overlap.txt
cat >overlap.expected <<EOF
MSTX,Range_start,x,main,{range_id:$xid}
OP_LAUNCH,OP_START,x,main,
MSTX,Range_start,y,main,{range_id:$((xid + 1))}
OP_LAUNCH,OP_START,y,main,
MSTX,Range_end,Range end from id $xid,main,{range_id:$xid}
OP_LAUNCH,OP_END,y,main,
OP_LAUNCH,OP_END,x,main,
MSTX,Range_end,Range end from id $((xid + 1)),main,{range_id:$((xid + 1))}
EOF
diff -u overlap.expected overlap.txt >overlap.diff || fail "overlapping start/end ranges:
$(cat overlap.diff)"
note "dump: 9 marks (tock wide), 3 step ranges and no \"step start\" launch; io::a ends with net::b; handoff ends at main's next NVTX call; x ends with y"

# The per-step leak: step 2's block is live at the end of step 3.
"$MMS_REPLAY" nvtx.mms --analysis leaks >leaks.txt 2>leaks.err || fail "--analysis leaks exited $?: $(cat leaks.err)"
grep -q '^Direct HOST leak of 0.000095 Mb(s) at 0x[0-9a-f]* in outer (launch 8) at step 2\.$' leaks.txt ||
	fail "the per-step leak in outer, step 2, is not reported: $(cat leaks.txt)"
grep -q '^====== SUMMARY: 0.000095 Mb(s) leaked in 1 allocation(s) ======$' leaks.txt ||
	fail "expected exactly one per-step leak: $(cat leaks.txt)"

# Steps marked by pushed "step start" ranges: the same steps and launches.
nvtx_record push.mms pushsteps >push.out || fail "nvtx pushsteps exited $? under the recorder"
summarize push.mms
expect_key push.mms.json steps 3
expect_key push.mms.json by_kind.op_launch 52
expect_key push.mms.json by_kind.mstx 27
for n in 1 2 3; do
	expect_step push.mms $n
done
note "pushed \"step start\" ranges: the same 3 steps and 21 launches in them"

# The launcher sets NVTX_INJECTION64_PATH, and leaves the user's alone.
"$MMS_LAUNCHER" --log-level=info --output=out -- "$prog" >launch.out 2>launch.err ||
	fail "msmemscope -- nvtx exited $?: $(cat launch.err)"
grep -qF "NVTX_INJECTION64_PATH=$MMS_HOOKS" launch.err || fail "the launcher did not say it set NVTX_INJECTION64_PATH: $(cat launch.err)"
grep -q '^  steps             3$' launch.err || fail "no 3 steps under the launcher: $(cat launch.err)"
grep -q '^Direct HOST leak of 0.000095 Mb(s) at 0x[0-9a-f]* in outer (launch 8) at step 2\.$' launch.err ||
	fail "the launcher's leaks report misses the leak in outer: $(cat launch.err)"
NVTX_INJECTION64_PATH=/nonexistent/libtool.so "$MMS_LAUNCHER" --log-level=info --output=out2 -- "$prog" \
	>other.out 2>other.err || fail "msmemscope -- nvtx with a user's NVTX_INJECTION64_PATH exited $?: $(cat other.err)"
grep -qF "NVTX_INJECTION64_PATH=/nonexistent/libtool.so was set already: left alone" other.err ||
	fail "the launcher did not say it left the user's NVTX_INJECTION64_PATH alone: $(cat other.err)"
grep -q 'range=unset$' other.out || fail "NVTX reached the recorder through the user's path: $(cat other.out)"
set -- out2/msmemscope_*/memscope_*.mms
summarize "$1"
expect_key "$1.json" by_kind.op_launch 0
note "launcher: NVTX_INJECTION64_PATH set to the recorder, a user's left alone (then no launches)"
