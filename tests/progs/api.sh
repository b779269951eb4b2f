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
