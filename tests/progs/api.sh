#!/bin/sh
# SPDX-License-Identifier: MIT
# api.sh: a program that calls every function of the instrumentation API a
# known number of times (tests/progs/api.c) must show exactly those events
# by kind, its steps, its pool blocks and its heap blocks; in deferred
# collection only what follows msmemscope_start(); and linked against the
# no-op stubs it must run the same without the recorder.
. "$top_srcdir/tests/progs/lib.sh"

prog=$MMS_PROGS/api

# Without the recorder: the stubs answer, range ids are 0.
"$prog" >native.out || fail "api without the recorder exited $?"
expect_eq "api output without the recorder" "$(cat native.out)" "api done ranges=0,0,0"

# by_kind FILE KIND=N...: the summary's events by kind (names compared
# without case) are exactly these; kinds not named must be 0 or absent.
by_kind() {
	"$MMS_PYTHON" - "$@" <<'PY' || fail "events by kind differ (see above)"
import json, sys
d = json.load(open(sys.argv[1]))
got = {k.lower(): v for k, v in d["by_kind"].items()}
want = {k.lower(): int(v) for k, v in (a.split("=") for a in sys.argv[2:])}
bad = [f"{k}: got {got.get(k, 0)}, expected {want.get(k, 0)}"
       for k in sorted(set(got) | set(want)) if got.get(k, 0) != want.get(k, 0)]
if bad:
    print(sys.argv[1] + ": " + "; ".join(bad), file=sys.stderr)
    sys.exit(1)
PY
}

# Access events are recorded only when asked for.
MSMEMSCOPE_CONFIG="events=alloc,free,launch,access"
export MSMEMSCOPE_CONFIG

# Immediate collection: everything, stop..start excepted.
record api.mms "$prog" >api.out || fail "api under the recorder exited $?"
sed -n 's/^api done ranges=\([0-9]*\),\([0-9]*\),\([0-9]*\)$/\1 \2 \3/p' api.out | {
	read -r r1 r2 r3 || fail "api printed: $(cat api.out)"
	[ "$r1" != 0 ] && [ "$r2" != 0 ] && [ "$r3" != 0 ] && [ "$r1" != "$r2" ] && [ "$r2" != "$r3" ] ||
		fail "range ids under the recorder must be distinct and non-zero: $r1 $r2 $r3"
}
summarize api.mms
j=api.mms.json
expect_consistent $j
# malloc: 15 heap + 3 pool; free: 15 heap + 2 pool; mstx: 3 marks and
# 3 ranges (start and end); op_launch: 4 begin/end pairs; owner: 3 push/pop
# pairs; step: 3 msmemscope_step() (the "step start" range is an mstx
# event); collect: stop and start; system: init and fini; watch: the
# msmemscope_watch() call and the block's checksums before and after each
# of the 3 launches after it.
by_kind $j system=2 malloc=18 free=17 access=3 op_launch=8 kernel_launch=5 \
	mstx=9 step=3 owner=6 watch=7 collect=2
expect_key $j events 80
# Step 1 is the code before the first msmemscope_step(); the replay counts
# steps by the first kind of mark it meets, so the range adds none.
expect_key $j steps 4
expect_key $j allocs 15
expect_key $j frees 15
expect_key $j bytes_allocated $((15 * 64))
expect_key $j live_blocks 0
expect_key $j kinds.pool.allocs 3
expect_key $j kinds.pool.frees 2
expect_key $j kinds.pool.bytes_allocated 600
expect_key $j kinds.pool.peak_bytes 600
expect_key $j kinds.pool.live_blocks 1
expect_key $j kinds.pool.live_bytes 300
note "immediate: every API call recorded, 4 steps, pool 3/2, heap 15/15"

# Deferred collection: no memory events (heap, pool, access) until
# msmemscope_start(), then 5 blocks; structure events (steps, operators,
# marks, owners, watch) are recorded all along, so steps stay numbered.
MSMEMSCOPE_CONFIG="$MSMEMSCOPE_CONFIG;collect=deferred" record deferred.mms "$prog" >deferred.out ||
	fail "api with collect=deferred exited $?"
summarize deferred.mms
j=deferred.mms.json
expect_consistent $j
expect_key $j allocs 5
expect_key $j frees 5
expect_key $j bytes_allocated $((5 * 64))
by_kind $j system=2 malloc=5 free=5 access=0 op_launch=8 kernel_launch=5 \
	mstx=9 step=3 owner=6 watch=7 collect=2
expect_key $j kinds.pool.allocs 0
expect_key $j steps 4
note "deferred: only the 5 blocks after msmemscope_start(), and the structure events"

# Steps marked by mstx "step start" ranges only: one step per range.
record ranges.mms "$prog" ranges 6 || fail "api ranges 6 exited $?"
summarize ranges.mms
j=ranges.mms.json
expect_consistent $j
expect_key $j steps 6
expect_key $j by_kind.mstx 12
expect_key $j allocs 6
note "\"step start\" ranges: 6 steps"

# Steps the recorder infers (the ends of a PyTorch optimizer's steps,
# which msmemscope._torchops reports): the log's steps where the program
# marks none, numbered as msmemscope_step() would number them, said so in
# the summary; each iteration keeps a block, found as a per-step leak from
# step 3 (steps inferred have two warm-up steps; --warmup-steps=1 gives
# msMemScope's one). Where the program marks its own steps
# too, its marks count and the inferred ones are left out (format 13).
record inferred.mms "$prog" inferred 5 || fail "api inferred 5 exited $?"
summarize inferred.mms
j=inferred.mms.json
expect_consistent $j
expect_key $j steps 5
expect_key $j steps_from '"optimizer"'
expect_key $j by_kind.step 5
"$MMS_REPLAY" inferred.mms --summary >inferred.txt 2>&1 || fail "--summary exited $?: $(cat inferred.txt)"
grep -q '^steps *5 (inferred: the ends of its PyTorch optimizer steps; it marks no steps itself)$' inferred.txt ||
	fail "the summary does not say the steps were inferred: $(grep steps inferred.txt)"
"$MMS_REPLAY" inferred.mms --analysis leaks --json >inferred-leaks.json 2>inferred-leaks.err ||
	fail "--analysis leaks exited $?: $(cat inferred-leaks.err)"
"$MMS_PYTHON" - inferred-leaks.json >inferred-leaks.check 2>&1 <<'PY' || fail "inferred steps' leaks: $(cat inferred-leaks.check)"
import json, sys
d = json.load(open(sys.argv[1]))
got = sorted((l["step"], l["bytes"]) for l in d["per_step"]["list"])
# The block of step k (100 + k - 1 bytes) is live at the end of step k + 1;
# steps 1 and 2 are the warm-up, step 5's has no step after it.
assert got == [(3, 102), (4, 103)], got
assert d["warmup_steps"] == 2, d["warmup_steps"]
PY
"$MMS_REPLAY" inferred.mms --analysis leaks --warmup-steps 1 --json >inferred-w1.json 2>&1 ||
	fail "--analysis leaks --warmup-steps 1 exited $?: $(cat inferred-w1.json)"
expect_eq "per-step leaks of inferred steps with --warmup-steps 1" "$(jget inferred-w1.json per_step.leaks)" 3
"$MMS_REPLAY" inferred.mms --analysis leaks >inferred-leaks.txt 2>&1 || fail "--analysis leaks exited $?"
grep -q '^(Steps 1 and 2 were warm-up, as for steps inferred from a PyTorch optimizer; --warmup-steps=1 ' \
	inferred-leaks.txt || fail "the report does not say steps 1 and 2 were warm-up: $(cat inferred-leaks.txt)"
"$MMS_REPLAY" inferred.mms --step 3 --json >inferred-step3.json 2>&1 || fail "--step 3 exited $?: $(cat inferred-step3.json)"
expect_key inferred-step3.json allocs 1

record marked.mms "$prog" inferred 5 marked || fail "api inferred 5 marked exited $?"
summarize marked.mms
j=marked.mms.json
expect_consistent $j
expect_key $j steps 5
expect_key $j steps_from '"program"'
# The program's 5 marks, and the one step inferred before its first mark
# (the recorder writes none after it).
expect_key $j by_kind.step 6
"$MMS_REPLAY" marked.mms --analysis leaks --json >marked-leaks.json 2>&1 || fail "--analysis leaks exited $?"
expect_eq "per-step leaks with the program's marks" "$(jget marked-leaks.json per_step.leaks)" 3

# --steps (the recorder's filter) counts the inferred steps the same way.
MSMEMSCOPE_CONFIG=steps=3 record filtered.mms "$prog" inferred 5 || fail "api inferred 5 with steps=3 exited $?"
summarize filtered.mms
expect_key filtered.mms.json allocs 1
expect_key filtered.mms.json bytes_allocated 102
note "inferred steps: 5 steps, per-step leaks in steps 3-4 (2-4 with --warmup-steps 1); left out where the program marks its own; --steps=3 records step 3"
