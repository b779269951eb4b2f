#!/bin/sh
# SPDX-License-Identifier: MIT
# python.sh: the msmemscope Python package (hooks/python) as a Python
# program uses it: without the recorder every call does nothing and
# start() says once how to record (config() refuses the values the
# command line would, naming each); under `msmemscope -- python3 prog.py`
# its steps, operator launches, owners, marks, ranges, watched buffers
# and a pool's blocks are in the log (a watch of a range that is none
# refused, saying why), an operator left by an exception is closed, config()
# says which of its options the running recorder could not take, and
# tracer writes msMemScope's python_trace CSV into the run folder (a
# session in the same second as the last into its own, _2); a
# tag at a pool block that starts its arena names the pool's block.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

pkg=$top_builddir/hooks/python/build
[ -e "$pkg/msmemscope/_msmemscope.so" ] ||
	skip "configure built no Python package (Debian: apt-get install -y python3-dev, then configure again)"
export PYTHONPATH="$pkg"

cat >prog.py <<'EOF'
import sys
import msmemscope

msmemscope.config(call_stack="c:8", analysis="leaks,decompose", keep_stacktraces="alloc", device="npu")
msmemscope.start()
keep = []
for i in range(3):
    with msmemscope.op("layer%d" % i):
        with msmemscope.owner("cache"):
            keep.append(bytearray(100000 + i))
    msmemscope.step()
try:
    with msmemscope.op("failing"):
        raise ValueError("inside an operator")
except ValueError:
    pass
with msmemscope.range("load"):
    msmemscope.mark("loaded")
buf = bytearray(64)
msmemscope.watch(buf, "buf")
try:
    msmemscope.watch(3.5, "x")
except TypeError as e:
    print("watch refused:", e)
try:
    msmemscope.config(colour="blue")
except TypeError as e:
    print("config refused:", "colour" in str(e))
try:
    msmemscope.config(level=7, device="gpu:99", steps="abc", call_stack="c:8", log_level="loud")
except ValueError as e:
    print("config values refused:", e)

def traced(x):
    return x * 2

msmemscope.tracer.start()
traced(21)
path = msmemscope.tracer.stop()
print("trace written:", path is not None)
# Sessions within one second: each its own file, none overwritten.
paths = [path]
for _ in range(3):
    msmemscope.tracer.start()
    traced(1)
    paths.append(msmemscope.tracer.stop())
print("traces apart:", len(set(paths)) == 4 and all(open(p).read().count("(traced)") == 1 for p in paths),
      any(p[:-len(".csv")] + "_2.csv" in paths for p in paths))
print("recording:", msmemscope.recording())
msmemscope.stop()
try:
    msmemscope.owner_tag(object(), "t")
except TypeError as e:
    print("owner_tag refused:", e)
for bad in (lambda: msmemscope.watch(12345, "x", size=-1), lambda: msmemscope.watch(-8, "x", size=8),
            lambda: msmemscope.watch(2**64 - 1, "x", size=2), lambda: msmemscope._c.watch_range(2**64 - 1, 2, "x")):
    try:
        bad()
    except ValueError as e:
        print("watch range refused:", e)
EOF

# Without the recorder: the program runs as it does, one line on stderr.
"$MMS_PYTHON" prog.py >plain.out 2>plain.err || fail "prog.py exited $? without the recorder: $(cat plain.err)"
expect_eq "lines on stderr without the recorder" "$(wc -l <plain.err)" 1
grep -q "^msmemscope: this process is not recorded, so msmemscope calls do nothing; record it with: msmemscope --call-stack=c:8 --analysis=leaks,decompose --keep-stacktraces=alloc --device=npu --collect-mode=deferred -- .*prog.py$" plain.err ||
	fail "start() did not say how to record the program: $(cat plain.err)"
grep -q "^watch refused: msmemscope.watch(): float has neither" plain.out || fail "watch(3.5) was not refused: $(cat plain.out)"
grep -qx "owner_tag refused: msmemscope.owner_tag(): object has neither the buffer protocol nor data_ptr(); pass an address" plain.out ||
	fail "owner_tag(object()) was not refused naming owner_tag(): $(cat plain.out)"
grep -qx "config refused: True" plain.out || fail "config(colour=) was not refused: $(cat plain.out)"
expect_eq "config()'s refusal of bad values" "$(grep '^config values refused: ' plain.out)" \
	"config values refused: msmemscope.config(): level='7': expected op or kernel (0 or 1); device='gpu:99': expected cuda (every device) or cuda:N (N a device ordinal from 0 to 63), several separated by commas; npu and npu:N, msMemScope's spellings, are taken as cuda and cuda:N; steps='abc': expected 1 to 5 step numbers (from 1 to 2147483647) separated by commas; log_level='loud': expected info, warn or error"
expect_eq "watch()'s refusals of a bad range" "$(grep '^watch range refused: ' plain.out)" \
	"watch range refused: msmemscope.watch(): size must be from 1 to 2**64 - 1, not -1
watch range refused: msmemscope.watch(): address must be from 0 to 2**64 - 1, not -8
watch range refused: msmemscope.watch(): 2 bytes at 0xffffffffffffffff go past the end of the address space (2**64)
watch range refused: msmemscope.watch(): 2 bytes at 0xffffffffffffffff go past the end of the address space (2**64)"
grep -qx "recording: False" plain.out || fail "recording() is not False without the recorder"
grep -qx "traces apart: True True" plain.out ||
	fail "four tracer sessions in a row did not write four files, the second of a second with _2: $(cat plain.out)"
set -- python_trace_*.csv
[ -f "$1" ] || fail "tracer.stop() wrote no python_trace CSV in the current folder"
note "without the recorder the calls do nothing and start() says how to record"

# Under the recorder.
"$MMS_LAUNCHER" --output=out -- "$MMS_PYTHON" prog.py >rec.out 2>rec.err ||
	fail "msmemscope -- python3 prog.py exited $?: $(cat rec.err)"
sed 's/^recording: True$/recording: False/' rec.out | cmp -s - plain.out ||
	fail "the program printed something else under the recorder: $(diff plain.out rec.out)"
grep -q "^msmemscope: config(call_stack=c:8, analysis=leaks,decompose, keep_stacktraces=alloc, device=npu) comes after the recorder started" rec.err ||
	fail "config() under the recorder did not say its options come too late: $(cat rec.err)"
set -- out/msmemscope_*/memscope_*.mms
[ -f "$1" ] || fail "no log: $(ls -R out)"
log=$1
run=$(dirname "$log")
summarize "$log"
s=$log.json
# 4 launches opened and closed (the one an exception left included).
expect_key "$s" by_kind.op_launch 8
expect_key "$s" by_kind.step 3
expect_key "$s" steps 4
expect_key "$s" by_kind.owner 6
# A mark, and a range's start and end.
expect_key "$s" by_kind.mstx 3
expect_key "$s" by_kind.watch 1
note "steps, launches, owners, marks, ranges and the watch are in the log"

"$MMS_REPLAY" "$log" --step 2 >step2.txt 2>&1 || fail "msmemscope-replay --step 2 exited $?: $(cat step2.txt)"
grep -q "layer1" step2.txt || fail "--step 2 does not show operator layer1: $(cat step2.txt)"
mkdir an
"$MMS_REPLAY" "$log" --analysis decompose --output-dir an >dec.txt 2>&1 ||
	fail "--analysis decompose exited $?: $(cat dec.txt)"
grep -q "cache" dec.txt || fail "decompose shows no owner 'cache': $(cat dec.txt)"
note "--step shows the Python operator, decompose the Python owner"

set -- "$run"/python_trace_*_*.csv
[ -f "$1" ] || fail "no python_trace CSV in the run folder: $(ls "$run")"
expect_eq "the trace's header" "$(head -1 "$1")" "FuncInfo,StartTime(ns),EndTime(ns),Thread Id,Process Id"
pid=${log##*/memscope_}
pid=${pid%.mms}
grep -q "^$work/prog.py:34(traced),[0-9]*,[0-9]*,$pid,$pid$" "$1" ||
	grep -q "^prog.py:34(traced),[0-9]*,[0-9]*,$pid,$pid$" "$1" ||
	fail "the trace has no row for traced() at prog.py:34 on thread $pid: $(cat "$1")"
# Every call ends after it starts.
"$MMS_PYTHON" - "$1" "$s" <<'PY' || fail "the trace's times are not ordered: $(cat "$1")"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows
for r in rows:
    assert int(r["StartTime(ns)"]) <= int(r["EndTime(ns)"]), r
PY
note "tracer wrote python_trace_{TID}_{timestamp}.csv in the run folder"
# The tracer's two arrays (the calls open, the rows) are the package's,
# kept for the next start: no report calls them the program's leak.
"$MMS_REPLAY" "$log" --analysis leaks --json >tleaks.json 2>tleaks.err || fail "--analysis leaks --json exited $?: $(cat tleaks.err)"
expect_key tleaks.json runtime.by_kind.msmemscope.blocks 2
note "the tracer's own arrays are msmemscope's, not the program's"

# A pool of the program's own, carved from a bytearray: its blocks are
# POOL memory under its name; bad frees and double allocations refused.
cat >pool.py <<'EOF3'
import msmemscope
arena = bytearray(1 << 20)
base, n = msmemscope._c.buffer_range(arena)
kv = msmemscope.Pool("kvcache", reserved=n)
blocks = [kv.alloc(base + i * 4096, 4096) for i in range(8)]
for a in blocks[:5]:
    kv.free(a)
for bad in (lambda: kv.free(base + 123), lambda: kv.alloc(blocks[6], 4096), lambda: msmemscope.pool_alloc("x", -1, 10)):
    try:
        bad()
    except ValueError as e:
        print("refused:", str(e).split(":")[0])
try:
    kv.alloc(base)
except TypeError as e:
    print("type refused:", e)
msmemscope.pool_alloc(None, base + 900000, 100, n, 100)
print("used", kv.used)
EOF3
"$MMS_PYTHON" pool.py >pool.plain 2>&1 || fail "pool.py exited $? without the recorder: $(cat pool.plain)"
"$MMS_LAUNCHER" --output=pout -- "$MMS_PYTHON" pool.py >pool.out 2>pool.err || fail "pool.py exited $? recorded: $(cat pool.err)"
cmp -s pool.plain pool.out || fail "pool.py printed something else recorded: $(diff pool.plain pool.out)"
expect_eq "pool.py's refusals" "$(grep -c '^refused: msmemscope' pool.out)" 3
grep -qx "type refused: msmemscope.Pool('kvcache').alloc(address, size): an address needs its size" pool.out ||
	fail "Pool.alloc(address) without a size was not refused so: $(cat pool.out)"
grep -qx "used 12288" pool.out || fail "Pool.used is not 3 blocks of 4096: $(cat pool.out)"
grep -q "^    live at exit    4 blocks, 12.1 KiB (12388 bytes)   <- never released to the pool$" pool.err ||
	fail "the launcher's summary does not show the 4 pool blocks left: $(cat pool.err)"
set -- pout/msmemscope_*/memscope_*.mms
"$MMS_REPLAY" "$1" --analysis decompose >pdec.txt 2>&1 || fail "decompose of pool.py's log exited $?: $(cat pdec.txt)"
grep -q "^ *12288 *3 .* kvcache$" pdec.txt && grep -q "^ *32768 *8 .* kvcache$" pdec.txt && grep -q "^ *100 *1 .* POOL$" pdec.txt ||
	fail "decompose does not show kvcache's 3 blocks at the end and 8 at the peak, and the unnamed pool's: $(cat pdec.txt)"
note "msmemscope.Pool: a Python pool's blocks are POOL memory under its name (decompose, the summary), bad calls refused"

# python3 -m msmemscope: the launcher records the script, with its options.
cat >m.py <<'EOF2'
import sys
import msmemscope
with msmemscope.op("m"):
    b = bytearray(5000)
print("args", sys.argv[1:], "recording", msmemscope.recording())
EOF2
"$MMS_PYTHON" -m msmemscope --output=mout -- m.py one two >m.out 2>m.err || fail "python3 -m msmemscope exited $?: $(cat m.err)"
grep -qx "args \['one', 'two'\] recording True" m.out || fail "python3 -m msmemscope: the script ran otherwise: $(cat m.out)"
set -- mout/msmemscope_*/memscope_*.mms
[ -f "$1" ] || fail "python3 -m msmemscope --output=mout left no log: $(ls -R mout 2>&1)"
grep -q "^msmemscope: recorded $MMS_PYTHON " m.err || fail "python3 -m msmemscope: no report: $(cat m.err)"
st=0
"$MMS_PYTHON" -m msmemscope >usage.out 2>&1 || st=$?
expect_eq "python3 -m msmemscope without a script" "$st" 2
note "python3 -m msmemscope [options --] script.py records the script"

# A pool's first block starts where the memory it is carved from does
# (here a ctypes buffer's heap block): a tag at that address names the
# pool's block, the inner one, as a tag at a tensor at the start of
# PyTorch's CUDA segment names the tensor's.
cat >carve.py <<'EOF2'
import ctypes
import msmemscope
arena = ctypes.create_string_buffer(4096)
base = ctypes.addressof(arena)
msmemscope.pool_alloc("carved", base, 1024, 4096, 1024)
msmemscope.owner_tag(base, "inner")
print("carved")
EOF2
record carve.mms "$MMS_PYTHON" carve.py >carve.out 2>carve.err || fail "carve.py exited $?: $(cat carve.err)"
"$MMS_REPLAY" carve.mms --analysis decompose >carve.txt 2>carve.err || fail "decompose exited $?: $(cat carve.err)"
sed -n '1,/^$/p' carve.txt | grep -A1 '^ *1024 *1 .*  carved$' | grep -q '^ *1024 *1 .*    inner$' ||
	fail "the tag at the pool block's start did not name the pool's block: $(cat carve.txt)"
note "a tag at a pool block that starts its arena names the pool's block"
