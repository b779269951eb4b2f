#!/bin/sh
# SPDX-License-Identifier: MIT
# train.sh: the PyTorch example, examples/train.py, under the launcher:
# its leak (a validation loss computed without torch.no_grad() and kept
# in a list, which keeps each step's graph and activations) is found as
# per-step leaks of the same size in every step after warm-up, each block
# allocated inside an aten operator, the largest the hidden layers'
# activations (64 x 128 floats, in relu); the fixed loop (--fixed) has no
# per-step leak; the program prints the same recorded as not.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

. "$top_srcdir/tests/progs/torchlib.sh"
[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"
train=$top_srcdir/examples/train.py

"$MMS_PYTHON" "$train" >native.out 2>native.err || fail "train.py exited $? natively: $(cat native.err)"
"$MMS_LAUNCHER" --warmup-steps=2 --output=leak -- "$MMS_PYTHON" "$train" >leak.out 2>leak.err ||
	fail "msmemscope -- train.py exited $?: $(tail -5 leak.err)"
diff -u native.out leak.out >out.diff || fail "train.py printed otherwise under the recorder: $(cat out.diff)"
grep -q '^====== ERROR: Detected memory leaks ======$' leak.err || fail "no leak reported: $(head -30 leak.err)"
grep -q '^Direct HOST leak of 0.031250 Mb(s) at 0x[0-9a-f]* in aten::clamp_min (launch [0-9]*) at step 3\.$' leak.err ||
	fail "no 32 KiB activation of step 3 reported in aten::clamp_min: $(grep -m5 '^Direct' leak.err)"

log=$(ls leak/msmemscope_*/memscope_*.mms)
"$MMS_REPLAY" "$log" --analysis leaks --warmup-steps 2 --json >leaks.json 2>leaks.err ||
	fail "--analysis leaks exited $?: $(cat leaks.err)"
"$MMS_PYTHON" - leaks.json >leaks.check 2>&1 <<'PY' || fail "the per-step leaks: $(cat leaks.check)"
import json, sys
from collections import defaultdict
d = json.load(open(sys.argv[1]))
leaks = d["per_step"]["list"]
by_step = defaultdict(list)
for l in leaks:
    by_step[l["step"]].append(l)
# Steps 3 to 7 (8 is found only at the end of 9, the teardown, which frees it).
assert sorted(by_step) == [3, 4, 5, 6, 7], sorted(by_step)
sizes = {s: (len(v), sum(l["bytes"] for l in v)) for s, v in by_step.items()}
assert len(set(sizes.values())) == 1, sizes      # the same graph every step
other = [l for l in leaks if not (l["op"] or "").startswith("aten::")]
assert not other, other[:3]                      # all allocated by aten operators
for s, v in by_step.items():
    acts = [l for l in v if l["bytes"] == 64 * 128 * 4 and l["op"] in ("aten::relu", "aten::clamp_min")]
    assert len(acts) == 2, (s, [(l["bytes"], l["op"]) for l in v if l["bytes"] >= 4096])
print(sizes[3])
PY

"$MMS_LAUNCHER" --warmup-steps=2 --output=fixed -- "$MMS_PYTHON" "$train" --fixed >fixed.out 2>fixed.err ||
	fail "msmemscope -- train.py --fixed exited $?: $(tail -5 fixed.err)"
grep -q '^No per-step leaks' fixed.err || fail "per-step leaks in the fixed loop: $(grep -m5 'leak' fixed.err)"

# With Python stacks the leak report names the line of train.py whose
# graph is kept: the validation loss computed without torch.no_grad().
line=$(grep -n 'val_loss = loss_fn' "$train" | head -n 1 | cut -d: -f1)
"$MMS_LAUNCHER" --call-stack=python:12 --warmup-steps=2 --output=py -- "$MMS_PYTHON" "$train" >py.out 2>py.err ||
	fail "msmemscope --call-stack=python:12 -- train.py exited $?: $(tail -5 py.err)"
diff -u native.out py.out >py.diff || fail "train.py printed otherwise with Python stacks: $(cat py.diff)"
grep -q "^  [0-9.]* [KM]iB in [0-9]* blocks (largest 0x[0-9a-f]*, .*, step 3, operator aten::" py.err ||
	fail "no per-step leak group of step 3 in an aten operator: $(grep -m5 'blocks (largest' py.err)"
grep -q "^      #[0-9]*  main (.*train\.py:$line)\$" py.err ||
	fail "the leak report does not name train.py:$line: $(grep -m10 'train\.py' py.err)"
# What msmemscope.torch's tracker allocates while it tags tensors (the
# saved tensors it unpacks from the graph, which the leaked graph keeps)
# is the package's, not the program's: no leak group has a stack in it,
# and the runtimes' section counts it apart.
sed -n '/^Per-step leaks/,/^====== SUMMARY/p' py.err >py.leaks
! grep -q 'msmemscope/torch\.py' py.leaks ||
	fail "the program's leaks hold msmemscope.torch's own blocks: $(grep -B8 'msmemscope/torch\.py' py.leaks | head -30)"
grep -q "^  [0-9]* blocks, .*: msmemscope's own Python package" py.err ||
	fail "the runtimes' section does not count msmemscope.torch's own blocks: $(sed -n '/Kept by the runtimes/,+4p' py.err)"
note "with Python stacks, the leak's groups name train.py:$line, their aten operator and their step; msmemscope.torch's own blocks are apart"
