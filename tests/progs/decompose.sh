#!/bin/sh
# SPDX-License-Identifier: MIT
# decompose.sh: the decompose analysis over tests/progs/decompose, whose
# blocks, owners (nested three deep) and pools are known: the tree at the
# end of the log and at its peak, to the byte and the percent, as text and
# JSON; the tree after one event (--at-event, through the seek index); the
# owner in the Attr of the dump's MALLOC rows; and the launcher's
# --analysis=decompose.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

prog=$MMS_PROGS/decompose
[ -x "$prog" ] || fail "decompose is not built: $prog"
record d.mms "$prog" >d.out || fail "decompose exited $?: $(cat d.out)"

# The end (the scratch and layer2 blocks freed, the mapping's first page
# unmapped) and the peak (the scratch block just allocated): pools named
# by their names, owners split on '@', what an owner holds itself beside
# its sub-levels as "(itself)".
"$MMS_REPLAY" d.mms --analysis decompose >d.txt 2>d.err || fail "--analysis decompose exited $?: $(cat d.err)"
cat >d.expected <<'TXT'
decompose at the end of the log (after event 28): 30.0 KiB live in 6 blocks
         bytes   blocks        %  kind, owner levels
         11264        2   36.67%  arena
         11264        2   36.67%    model
          8192        1   26.67%      encoder
          8192        1   26.67%        layer1
          3072        1   10.00%      decoder
          8192        1   26.67%  MMAP
          8192        1   26.67%    model
          8192        1   26.67%      cache
          6144        1   20.00%  kv
          6144        1   20.00%    (no owner)
          5120        2   16.67%  HOST
          5120        2   16.67%    model
          1024        1    3.33%      (itself)
          4096        1   13.33%      encoder
          4096        1   13.33%        layer1

decompose at the peak (after event 23): 52.0 KiB live in 8 blocks
         bytes   blocks        %  kind, owner levels
         23552        4   44.23%  HOST
         16384        1   30.77%    scratch
          7168        3   13.46%    model
          1024        1    1.92%      (itself)
          6144        2   11.54%      encoder
          4096        1    7.69%        layer1
          2048        1    3.85%        layer2
         12288        1   23.08%  MMAP
         12288        1   23.08%    model
         12288        1   23.08%      cache
         11264        2   21.15%  arena
         11264        2   21.15%    model
          8192        1   15.38%      encoder
          8192        1   15.38%        layer1
          3072        1    5.77%      decoder
          6144        1   11.54%  kv
          6144        1   11.54%    (no owner)
TXT
diff -u d.expected d.txt >d.diff || fail "the decompose report differs from the expected one: $(cat d.diff)"

# After event 11 (the 1024-byte block of "model" itself), through LOG.idx.
"$MMS_REPLAY" d.mms --analysis decompose --at-event 11 >e.txt 2>e.err || fail "--at-event 11 exited $?: $(cat e.err)"
cat >e.expected <<'TXT'
decompose after event 11: 15.0 KiB live in 4 blocks
         bytes   blocks        %  kind, owner levels
          8192        1   53.33%  arena
          8192        1   53.33%    model
          8192        1   53.33%      encoder
          8192        1   53.33%        layer1
          7168        3   46.67%  HOST
          7168        3   46.67%    model
          1024        1    6.67%      (itself)
          6144        2   40.00%      encoder
          4096        1   26.67%        layer1
          2048        1   13.33%        layer2
TXT
diff -u e.expected e.txt >e.diff || fail "decompose --at-event 11 differs: $(cat e.diff)"
[ -f d.mms.idx ] || fail "--at-event did not use the seek index (no d.mms.idx)"
if "$MMS_REPLAY" d.mms --analysis decompose --at-event 29 >/dev/null 2>x.err; then
	fail "--at-event 29 (past the 29 events) succeeded"
fi
grep -q "no event 29: the log has 29 events" x.err || fail "--at-event 29 said: $(cat x.err)"
! grep -q "warning" x.err || fail "--at-event 29 fails the command but calls it a warning: $(cat x.err)"
if "$MMS_REPLAY" d.mms --at-event 3 >/dev/null 2>x.err; then
	fail "--at-event without --analysis was accepted"
fi

# JSON: one object per line, the same figures as a nested tree.
"$MMS_REPLAY" d.mms --analysis decompose --json >d.json 2>d.err || fail "--json exited $?: $(cat d.err)"
"$MMS_PYTHON" - d.json >j.err 2>&1 <<'PY' || fail "decompose --json: $(cat j.err)"
import json, sys

lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, f"{len(lines)} lines, expected 2"
end, peak = (json.loads(l) for l in lines)

def flat(nodes, path=()):
    for n in nodes:
        p = path + (n["name"],)
        yield "/".join(p), (n["bytes"], n["blocks"], n["percent"], n["self_bytes"], n["self_blocks"])
        yield from flat(n["children"], p)

assert (end["analysis"], end["at"], end["position"], end["bytes"], end["blocks"]) == \
    ("decompose", "end", 29, 30720, 6), end
assert (peak["at"], peak["position"], peak["bytes"], peak["blocks"]) == ("peak", 24, 53248, 8), peak
e = dict(flat(end["tree"]))
assert e == {
    "arena": (11264, 2, 36.67, 0, 0),
    "arena/model": (11264, 2, 36.67, 0, 0),
    "arena/model/encoder": (8192, 1, 26.67, 0, 0),
    "arena/model/encoder/layer1": (8192, 1, 26.67, 8192, 1),
    "arena/model/decoder": (3072, 1, 10.0, 3072, 1),
    "MMAP": (8192, 1, 26.67, 0, 0),
    "MMAP/model": (8192, 1, 26.67, 0, 0),
    "MMAP/model/cache": (8192, 1, 26.67, 8192, 1),
    "kv": (6144, 1, 20.0, 0, 0),
    "kv/(no owner)": (6144, 1, 20.0, 6144, 1),
    "HOST": (5120, 2, 16.67, 0, 0),
    "HOST/model": (5120, 2, 16.67, 1024, 1),
    "HOST/model/encoder": (4096, 1, 13.33, 0, 0),
    "HOST/model/encoder/layer1": (4096, 1, 13.33, 4096, 1),
}, e
p = dict(flat(peak["tree"]))
assert p["HOST/scratch"] == (16384, 1, 30.77, 16384, 1), p
assert p["HOST/model/encoder/layer2"] == (2048, 1, 3.85, 2048, 1), p
assert p["MMAP/model/cache"] == (12288, 1, 23.08, 12288, 1), p
assert [n["name"] for n in peak["tree"]] == ["HOST", "MMAP", "arena", "kv"], peak["tree"]
PY

# The owner is in the Attr of the MALLOC rows of the dump.
"$MMS_REPLAY" d.mms --export csv -o d.csv 2>/dev/null || fail "--export csv exited $?"
grep -q '^4,MALLOC,HOST,.*,"{allocation_id:1,addr:0x[0-9a-f]*,size:4096,owner:model@encoder@layer1}",' d.csv ||
	fail "no owner model@encoder@layer1 in the Attr of the first MALLOC: $(grep '^4,' d.csv)"
grep -q '^5,MALLOC,arena,.*,"{allocation_id:2,addr:0x[0-9a-f]*,size:8192,owner:model@encoder@layer1,total:11264,used:8192}",' d.csv ||
	fail "the pool block's Attr: $(grep '^5,' d.csv)"

# The launcher runs it after the run, on stderr.
if [ -x "$MMS_LAUNCHER" ]; then
	"$MMS_LAUNCHER" --output=out --analysis=decompose -- "$prog" >l.out 2>l.err ||
		fail "msmemscope --analysis=decompose exited $?: $(cat l.err)"
	sed -n '/^decompose at the end/,$p' l.err >l.txt
	diff -u d.expected l.txt >l.diff || fail "the launcher's decompose report differs: $(cat l.diff)"
fi
