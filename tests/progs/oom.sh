#!/bin/sh
# SPDX-License-Identifier: MIT
# oom.sh: allocations the allocator refuses (ALLOC_FAIL records, format 7)
# and msMemScope's oom analysis over tests/progs/oom.c: the program sees
# what it sees natively (NULL, ENOMEM, posix_memalign's codes); the log
# holds one event per refusal (not the EINVAL of a bad alignment); the
# analysis names each request, its stack, step and operator, and lists
# the blocks live then, the last allocated and the largest, as text and
# JSON, through both programs; oom:K; a log without refusals; bad values.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"
prog=$MMS_PROGS/oom
[ -x "$prog" ] || fail "the test program is not built: $prog"
line=$(grep -n 'REFUSED_LINE' "$top_srcdir/tests/progs/oom.c" | sed -n '2s/:.*//p')
[ -n "$line" ] || fail "cannot find REFUSED_LINE in oom.c"

"$prog" >native.out 2>&1 || fail "oom exited $? natively: $(cat native.out)"
expect_text() {
	diff -u "$1" "$2" >diff.out || fail "$3: $(cat diff.out)"
}

# --- the launcher: what the program sees, and the report -----------------
"$MMS_LAUNCHER" --call-stack=c:8 --analysis=oom:2 --output=out -- "$prog" >rec.out 2>rec.err ||
	fail "msmemscope --analysis=oom:2 -- oom exited $?: $(cat rec.err)"
expect_text native.out rec.out "the program saw other results or errno under the recorder"
grep -q '^malloc null errno 12$' rec.out || fail "malloc(2^60) did not fail with ENOMEM: $(cat rec.out)"
set -- out/msmemscope_*/memscope_*.mms
[ $# = 1 ] && [ -f "$1" ] || fail "expected one log in out/, found: $*"
log=$1
grep -q 'ALLOC_FAIL 4' rec.err || fail "the summary does not count 4 refused allocations: $(cat rec.err)"
grep -q '^  refused           4 allocations (out of memory): --analysis=oom shows what was live then$' rec.err ||
	fail "the summary does not say 4 allocations were refused: $(cat rec.err)"
grep -q '^====== OOM: 4 allocations refused ======$' rec.err || fail "no OOM report: $(cat rec.err)"
grep -q "^event [0-9]*, thread 0 'oom', step 2, in grow (launch 1): malloc of 1152921504606846976 bytes (1.0 EiB) refused$" rec.err ||
	fail "the refused malloc is not named with its step and operator: $(cat rec.err)"
grep -q "oom.c:$line" rec.err || fail "the refused malloc's stack does not name oom.c:$line: $(cat rec.err)"
grep -q 'calloc of more bytes than an address space holds refused' rec.err || fail "calloc's overflow: $(cat rec.err)"
grep -q 'posix_memalign of 1152921504606846976 bytes (1.0 EiB) aligned to 64 refused' rec.err ||
	fail "posix_memalign's refusal: $(cat rec.err)"
grep -q 'realloc of 2305843009213693952 bytes' rec.err || fail "realloc's refusal: $(cat rec.err)"
grep -q '^  live then: 5 blocks, 14.6 KiB$' rec.err || fail "the live blocks then: $(cat rec.err)"

# --- the replay, as JSON: the lists, k blocks each --------------------------
"$MMS_REPLAY" "$log" --analysis oom:3 --json >oom.json 2>oom.err || fail "replay --analysis oom:3 exited $?: $(cat oom.err)"
"$MMS_PYTHON" - oom.json <<'PY' || fail "the JSON report is wrong: $(cat oom.json)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["analysis"] == "oom" and d["failures"] == 4 and len(d["list"]) == 4, d
fns = [x["fn"] for x in d["list"]]
assert fns == ["malloc", "calloc", "posix_memalign", "realloc"], fns
m, c, pm, r = d["list"]
assert m["size"] == 1 << 60 and m["align"] == 0 and m["step"] == 2 and m["op"] == "grow", m
assert c["size"] == (1 << 64) - 1, c
assert pm["align"] == 64 and pm["size"] == 1 << 60, pm
assert r["size"] == 1 << 61, r
for x in d["list"]:
    assert x["live_blocks"] == 5 and x["live_bytes"] == 15000, x
    assert [b["size"] for b in x["recent"]] == [5000, 4000, 3000], x["recent"]
    assert [b["size"] for b in x["largest"]] == [5000, 4000, 3000], x["largest"]
    assert x["recent"][0]["allocation_id"] == 5 and x["recent"][0]["step"] == 1, x["recent"][0]
    assert isinstance(x["stack"], list) and x["stack"], x
PY
# The event itself, as the stepper shows it.
"$MMS_REPLAY" "$log" --from 0 >events.txt 2>&1 || fail "replay --from 0 failed: $(cat events.txt)"
[ "$(grep -c 'ALLOC_FAIL' events.txt)" = 4 ] || fail "not 4 ALLOC_FAIL events: $(cat events.txt)"
grep -q 'ALLOC_FAIL    posix_memalign refused: 1152921504606846976 bytes (1.0 EiB), aligned to 64$' events.txt ||
	fail "the posix_memalign event line: $(grep ALLOC_FAIL events.txt)"

# The refused malloc as --event shows it: the request and its stack.
ev=$("$MMS_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["list"][0]["event"])' oom.json)
"$MMS_REPLAY" "$log" --event "$ev" >event.txt 2>&1 || fail "replay --event $ev failed: $(cat event.txt)"
grep -q 'ALLOC_FAIL    malloc         refused: 1152921504606846976 bytes' event.txt || fail "--event $ev: $(cat event.txt)"
grep -q '^  asked for by:$' event.txt || fail "--event $ev shows no stack: $(cat event.txt)"
grep -q "oom.c:$line" event.txt || fail "--event $ev: the stack does not name oom.c:$line: $(cat event.txt)"
"$MMS_REPLAY" "$log" --event "$ev" --json >event.json 2>&1 || fail "replay --event $ev --json failed: $(cat event.json)"
"$MMS_PYTHON" - event.json <<'PY' || fail "--event --json: $(cat event.json)"
import json, sys
d = json.loads(open(sys.argv[1]).readline())
e = d.get("event", d)
assert e["kind"] == "ALLOC_FAIL" and e["size"] == 1 << 60 and e["align"] == 0, e
assert isinstance(e["stack"], list) and e["stack"], e
PY

# --- a log without refusals ------------------------------------------------------
"$MMS_LAUNCHER" --analysis=oom --output=out2 -- "$MMS_PROGS/leaks" tidy >/dev/null 2>none.err ||
	fail "msmemscope --analysis=oom -- leaks tidy exited $?: $(cat none.err)"
grep -q '^No allocation was refused (out of memory) in this log\.$' none.err || fail "no refusal is not said: $(cat none.err)"

# --- bad values -------------------------------------------------------------------
for bad in oom:0 oom:x oom:100001 'oom:'; do
	"$MMS_LAUNCHER" --analysis="$bad" -- "$prog" >usage.out 2>&1 && fail "--analysis=$bad was accepted"
	grep -q 'oom:K wants K from 1 to 100000' usage.out || fail "--analysis=$bad: $(cat usage.out)"
	"$MMS_REPLAY" "$log" --analysis "$bad" >usage.out 2>&1 && fail "replay --analysis $bad was accepted"
	grep -q 'oom:K wants K from 1 to 100000' usage.out || fail "replay --analysis $bad: $(cat usage.out)"
done
note "refused allocations: errno as native, 4 events, the oom report with its lists, as text and JSON"
