#!/bin/sh
# SPDX-License-Identifier: MIT
# torch.sh: PyTorch under the recorder with msmemscope.torch, over
# tests/progs/torchprog.py (a two-layer MLP trained with SGD and momentum):
# the program prints the same losses recorded as not; every aten operator
# is an operator launch (aten::addmm, aten::mm in `--step 2`), through the
# C++ RecordFunction callback where it is built and through the
# TorchDispatchMode fallback; track() tags the model's memory by role, so
# that the owners at the end of step 3 (--step 3 and decompose at that
# event) are its parameter, gradient and momentum bytes exactly; compare,
# watch and (with accesses) inefficient name aten operators; a clean
# loop has no per-step leak after warm-up, nor a GAN's loop of two
# optimizers (one step per iteration); without operator launches
# (--events=alloc,free) no operator is recorded, and msMemScope's --level=op
# asks for them, also in a program that never imports msmemscope; guard
# mode finds nothing in torch and changes nothing.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

. "$top_srcdir/tests/progs/torchlib.sh"
prog=$top_srcdir/tests/progs/torchprog.py

# The same losses, recorded or not.
"$MMS_PYTHON" "$prog" >native.out 2>native.err || fail "torchprog.py exited $? natively: $(cat native.err)"
record t.mms "$MMS_PYTHON" "$prog" >t.out 2>t.err || fail "torchprog.py exited $? recorded: $(cat t.err)"
grep -v '^ops:' native.out >native.cmp
grep -v '^ops:' t.out >t.cmp
diff -u native.cmp t.cmp >t.diff || fail "the recorded program printed otherwise: $(cat t.diff)"
[ "$(grep -c '^step [1-5] loss' t.out)" = 5 ] || fail "five steps expected: $(cat t.out)"
grep -qx 'ops: None' native.out || fail "ops() without the recorder: $(head -1 native.out)"
pbytes=$(sed -n 's/^parameter bytes //p' t.out)
[ "$pbytes" = 38440 ] || fail "the MLP's parameters take 38440 bytes (64*128+128+128*10+10 floats), it says $pbytes"
if [ -e "$pkg/msmemscope/_torchops.so" ]; then
	grep -qx 'ops: record_function' t.out || fail "ops() did not take the RecordFunction callback: $(cat t.out)"
else
	grep -qx 'ops: dispatch' t.out || fail "ops() did not fall back to the dispatch mode: $(cat t.out)"
	echo "msmemscope._torchops is not built (no libtorch-dev): the RecordFunction callback is not tested"
fi

# `--step 2`: the aten operators of the step, each a launch; Linear's
# forward is aten::addmm, its backward aten::mm.
"$MMS_REPLAY" t.mms --step 2 --top 0 >s2.txt 2>s2.err || fail "--step 2 exited $?: $(cat s2.err)"
for op in aten::linear aten::addmm aten::mm aten::relu aten::threshold_backward; do
	grep -q "^ *[0-9]*  $op " s2.txt || fail "no $op launch in step 2: $(sed -n '/^Operator launches/,$p' s2.txt | head -40)"
done
"$MMS_REPLAY" t.mms --step 2 --json >s2.json 2>s2.err || fail "--step 2 --json exited $?: $(cat s2.err)"
"$MMS_PYTHON" - s2.json >s2.check 2>&1 <<'PY' || fail "step 2's launches: $(cat s2.check)"
import json, sys
d = json.load(open(sys.argv[1]))
names = [l["name"] for l in d["launches"]]
# Forward: two Linear layers (addmm each); backward: their weight and input gradients.
assert names.count("aten::addmm") == 2, names
assert names.count("aten::mm") >= 3, names
# The rest: aten operators, the autograd nodes that run them in backward
# ("autograd::engine::evaluate_function: AddmmBackward0"), the optimizer's
# profiler range.
other = [n for n in names if not n.startswith(("aten::", "autograd::engine::evaluate_function: ", "profiler::"))]
assert not other, other
PY

# The owners at the end of step 3: weights, gradients and momentum buffers
# exactly; what operators allocated and no role claimed is aten's.
"$MMS_REPLAY" t.mms --step 3 --json >s3.json 2>s3.err || fail "--step 3 --json exited $?: $(cat s3.err)"
"$MMS_PYTHON" - s3.json "$pbytes" >s3.check 2>&1 <<'PY' || fail "step 3's owners: $(cat s3.check)"
import json, sys
d = json.load(open(sys.argv[1]))
p = int(sys.argv[2])
own = {o["owner"]: (o["bytes"], o["blocks"]) for o in d["owners"]}
for role in ("weight", "gradient", "optimizer_state"):
    assert own.get(role) == (p, 4), (role, own.get(role), p)
# The input batch, saved by the first addmm for backward.
assert own.get("activation") == (32 * 64 * 4, 1), own.get("activation")
assert "aten" in own, own
print(d["end"])
PY
end=$(cat s3.check)
"$MMS_REPLAY" t.mms --analysis decompose --at-event "$end" --json >d.json 2>d.err ||
	fail "decompose --at-event $end exited $?: $(cat d.err)"
"$MMS_PYTHON" - d.json "$pbytes" >d.check 2>&1 <<'PY' || fail "decompose at the end of step 3: $(cat d.check)"
import json, sys
d = json.load(open(sys.argv[1]))
p = int(sys.argv[2])
host = [n for n in d["tree"] if n["name"] == "HOST"][0]
kids = {n["name"]: n["bytes"] for n in host["children"]}
assert (kids["weight"], kids["gradient"], kids["optimizer_state"]) == (p, p, p), kids
PY

# A clean loop: after warm-up (step 1 allocates the gradients and the
# momentum buffers; CPython and SGD's first momentum update keep a few
# small blocks from step 2), no block of a step outlives the next.
"$MMS_REPLAY" t.mms --analysis leaks --warmup-steps 2 >l.txt 2>l.err || fail "leaks exited $?: $(cat l.err)"
grep -q "^No per-step leaks" l.txt || fail "per-step leaks in a clean loop: $(head -20 l.txt)"

# Compare per aten operator: steps 2 and 3 run the same operators, paired
# one to one by name; the one difference is SGD's first aten::mul_ of
# step 2 (see the warm-up above).
"$MMS_REPLAY" t.mms --compare-steps 2,3 --output-dir cmp >c.txt 2>c.err || fail "--compare-steps 2,3 exited $?: $(cat c.err)"
n2=$("$MMS_PYTHON" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["launches"]))' s2.json)
grep -q "^paired $n2 launches; " c.txt || fail "step 2's $n2 launches are not all paired with step 3's: $(head -5 c.txt)"
grep -q "^ *-1040 *1040 *0 *#[0-9]*/#[0-9]* aten::mul_$" c.txt || fail "no aten::mul_ difference of 1040 bytes: $(cat c.txt)"

# Watch per aten operator: SGD's update (aten::add_) changes the watched
# bias once a step.
record w.mms "$MMS_PYTHON" "$prog" --watch --steps=3 >w.out 2>w.err || fail "--watch exited $?: $(cat w.err)"
"$MMS_REPLAY" w.mms --analysis watch >wa.txt 2>wa.err || fail "--analysis watch exited $?: $(cat wa.err)"
grep -q "first changed by aten::add_, launch [0-9]*, step 1," wa.txt || fail "the watch analysis: $(cat wa.txt)"
grep -q "changed by 3 launches: aten::add_#[0-9]* aten::add_#[0-9]* aten::add_#[0-9]*$" wa.txt ||
	fail "the bias is not changed by one aten::add_ a step: $(cat wa.txt)"

# Inefficient per aten operator: with access events the C++ callback
# declares each operator's input storages read and its outputs written;
# the analysis then judges the blocks over aten launches (an output
# written at the end of a launch that ran others is no idle time).
if [ -e "$pkg/msmemscope/_torchops.so" ]; then
	MSMEMSCOPE_CONFIG='events=alloc,free,launch,access' record a.mms "$MMS_PYTHON" "$prog" --steps=3 >a.out 2>a.err ||
		fail "events=...,access exited $?: $(tail -5 a.err)"
	! grep -q 'Exception in RecordFunction callback' a.err || fail "the callback failed in libtorch: $(head -5 a.err)"
	"$MMS_REPLAY" a.mms --analysis inefficient --json --top 0 >i.json 2>i.err || fail "inefficient exited $?: $(cat i.err)"
	"$MMS_PYTHON" - i.json >i.check 2>&1 <<'PY' || fail "the inefficient analysis over aten operators: $(cat i.check)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["accesses"] > d["launches"] > 300, (d["accesses"], d["launches"])
blocks = d["blocks"]
assert any((b["op"] or "").startswith("aten::") for b in blocks), blocks[:3]
assert any(b["owner"] == "gradient" for b in blocks), [b["owner"] for b in blocks]
assert all(b["idle_to_op"] >= b["idle_from_op"] for b in blocks), [b for b in blocks if b["idle_to_op"] < b["idle_from_op"]][:2]
PY
fi

# The dispatch-mode fallback: the same launches.
record f.mms "$MMS_PYTHON" "$prog" --ops=dispatch --steps=3 >f.out 2>f.err || fail "--ops=dispatch exited $?: $(cat f.err)"
grep -qx 'ops: dispatch' f.out || fail "ops(via='dispatch'): $(cat f.out)"
"$MMS_REPLAY" f.mms --step 2 --json >f2.json 2>f2.err || fail "--step 2 of f.mms exited $?: $(cat f2.err)"
"$MMS_PYTHON" - f2.json >f2.check 2>&1 <<'PY' || fail "the fallback's launches: $(cat f2.check)"
import json, sys
d = json.load(open(sys.argv[1]))
names = [l["name"] for l in d["launches"]]
assert names.count("aten::addmm") == 2 and "aten::mm" in names, names
own = {o["owner"]: o["bytes"] for o in d["owners"]}
assert own["weight"] == own["gradient"] == own["optimizer_state"] == 38440, own
PY

# The fallback's inferred steps come from torch.optim's global step hooks
# (torch 2.0 and later; Debian's 1.13 has none): test doubles of
# register_optimizer_step_pre_hook and _post_hook, called around SGD's
# step as torch 2 calls them, in a program that marks no steps; an inner
# optimizer stepped by an outer one (as a GradScaler does) ends no step.
cat >hooks.py <<'PY'
import torch
import torch.optim.optimizer as o
pre, post = [], []
class Handle:  # test double of torch.utils.hooks.RemovableHandle
    def __init__(self, hooks, fn): self.hooks, self.fn = hooks, fn
    def remove(self): self.hooks.remove(self.fn)
o.register_optimizer_step_pre_hook = lambda fn: (pre.append(fn), Handle(pre, fn))[1]
o.register_optimizer_step_post_hook = lambda fn: (post.append(fn), Handle(post, fn))[1]
sgd_step = torch.optim.SGD.step
def step(self, *a, **k):
    for fn in list(pre): fn(self, a, k)
    r = sgd_step(self, *a, **k)
    for fn in list(post): fn(self, a, k)
    return r
torch.optim.SGD.step = step
import msmemscope.torch
print("ops:", msmemscope.torch.ops(via="dispatch"))
torch.manual_seed(3)
net = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
class Outer:  # steps the optimizer inside its own step
    def step(self):
        for fn in list(pre): fn(self, (), {})
        opt.step()
        for fn in list(post): fn(self, (), {})
for i in range(3):
    net(torch.randn(4, 8)).sum().backward()
    (Outer() if i == 2 else opt).step()
msmemscope.torch.ops(False)
print("hooks left:", len(pre), len(post))
PY
record h.mms "$MMS_PYTHON" hooks.py >h.out 2>h.err || fail "hooks.py exited $?: $(cat h.err)"
grep -qx 'ops: dispatch' h.out && grep -qx 'hooks left: 0 0' h.out || fail "hooks.py printed $(cat h.out)"
summarize h.mms
expect_key h.mms.json steps_from '"optimizer"'
expect_key h.mms.json by_kind.step 3

# Without launch events, ops() records nothing.
MSMEMSCOPE_CONFIG='events=alloc,free' record n.mms "$MMS_PYTHON" "$prog" --steps=2 >n.out 2>n.err ||
	fail "events=alloc,free exited $?: $(cat n.err)"
grep -qx 'ops: None' n.out || fail "ops() with events=alloc,free: $(cat n.out)"
summarize n.mms
[ "$(jget n.mms.json by_kind.op_launch)" = 0 ] || fail "operator launches recorded with events=alloc,free"

# msMemScope's --level=op asks for them again, through the launcher.
"$MMS_LAUNCHER" --events=alloc,free --level=op --output=lv -- "$MMS_PYTHON" "$prog" --steps=2 >lv.out 2>lv.err ||
	fail "msmemscope --events=alloc,free --level=op exited $?: $(tail -5 lv.err)"
grep -q '^ops: [a-z_]*$' lv.out && ! grep -qx 'ops: None' lv.out || fail "ops() with --level=op: $(cat lv.out)"
summarize lv/msmemscope_*/memscope_*.mms
[ "$(jget lv/msmemscope_*/memscope_*.mms.json by_kind.op_launch)" -gt 100 ] ||
	fail "few operator launches recorded with --level=op: $(jget lv/msmemscope_*/memscope_*.mms.json by_kind)"

# A PyTorch program that knows nothing of msmemscope: --level=op alone
# makes its aten operators launches (the boot module calls ops() after
# the program's import of torch); without it, none, and nothing changes.
cat >plain.py <<'PY'
import torch
torch.manual_seed(1)
net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for i in range(3):
    loss = net(torch.randn(8, 16)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("loss %.6f" % loss.item())
PY
"$MMS_PYTHON" plain.py >plain-native.out 2>&1 || fail "plain.py exited $? natively: $(cat plain-native.out)"
for how in op default; do
	set -- --output=plain-$how
	[ $how = default ] || set -- "$@" --level=op
	"$MMS_LAUNCHER" "$@" -- "$MMS_PYTHON" plain.py >plain-$how.out 2>plain-$how.err ||
		fail "msmemscope $* -- plain.py exited $?: $(tail -5 plain-$how.err)"
	diff -u plain-native.out plain-$how.out >plain-$how.diff ||
		fail "plain.py printed otherwise recorded ($how): $(cat plain-$how.diff)"
	log=$(ls plain-$how/msmemscope_*/memscope_*.mms)
	summarize "$log"
	launches=$(jget "$log.json" by_kind.op_launch)
	if [ $how = op ]; then
		[ "$launches" -gt 20 ] || fail "--level=op recorded $launches operator launches of plain.py"
		# Its steps, inferred: the ends of its 3 optimizer steps, and
		# what ran after the last (the print, the teardown).
		expect_key "$log.json" steps 4
		expect_key "$log.json" steps_from '"optimizer"'
		# The dump's OP_LAUNCH rows name the operators.
		"$MMS_REPLAY" "$log" --export csv -o plain.csv >plain.exp 2>&1 || fail "--export csv exited $?: $(cat plain.exp)"
		for op in aten::addmm aten::mm aten::relu; do
			grep -q "^[0-9]*,OP_LAUNCH,OP_START,$op," plain.csv ||
				fail "plain.py with --level=op: no $op launch: $(grep -m 20 OP_LAUNCH plain.csv)"
		done
	else
		[ "$launches" = 0 ] || fail "plain.py without --level=op recorded $launches operator launches"
		expect_key "$log.json" steps 0
	fi
done
# Memory that grows from step to step in a program that marks no steps:
# it keeps every loss, and with it each step's graph (its nodes and the
# loss: backward freed the tensors they saved). Its optimizer's steps are
# its steps (--level=op), so the per-step leak rule finds the graph,
# allocated under the forward's line; with Adam (whose state step 1
# allocates) and after the two warm-up steps of inferred steps.
cat >grow.py <<'PY'
import torch
torch.manual_seed(2)
net = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
opt = torch.optim.Adam(net.parameters(), lr=0.01)
losses = []
for i in range(6):
    out = net(torch.randn(32, 16))
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss)
print("kept %d" % len(losses))
PY
"$MMS_LAUNCHER" --level=op --call-stack=python:8 --output=grow -- "$MMS_PYTHON" grow.py >grow.out 2>grow.err ||
	fail "msmemscope --level=op -- grow.py exited $?: $(tail -5 grow.err)"
[ "$(cat grow.out)" = "kept 6" ] || fail "grow.py printed $(cat grow.out)"
grep -q '^  steps  *7 (inferred: the ends of its PyTorch optimizer steps; it marks no steps itself)$' grow.err ||
	fail "the launcher does not say grow.py's steps were inferred: $(grep -m3 steps grow.err)"
log=$(ls grow/msmemscope_*/memscope_*.mms)
"$MMS_REPLAY" "$log" --analysis leaks --json >grow.json 2>grow.jerr || fail "--analysis leaks exited $?: $(cat grow.jerr)"
line=$(grep -n 'out = net(' grow.py | cut -d: -f1)
"$MMS_PYTHON" - grow.json "$line" >grow.check 2>&1 <<'PY' || fail "grow.py's per-step leaks: $(cat grow.check)"
import json, sys
from collections import defaultdict
d, line = json.load(open(sys.argv[1])), int(sys.argv[2])
by_step = defaultdict(int)
for l in d["per_step"]["list"]:
    by_step[l["step"]] += l["bytes"]
# Steps 3 to 5 each keep their graph, the same bytes (step 6's is freed in
# the teardown, the step after it; steps 1 and 2 are warm-up).
assert d["warmup_steps"] == 2, d["warmup_steps"]
assert sorted(by_step) == [3, 4, 5], sorted(by_step)
assert by_step[3] > 1000 and by_step[3] == by_step[4] == by_step[5], dict(by_step)
frames = [f for g in d["per_step"]["by_stack"]["groups"] for f in g["stack"]]
assert any(f.get("file", "").endswith("grow.py") and f.get("line") == line for f in frames), frames[:8]
print(dict(by_step))
PY

# Two optimizers (a GAN's discriminator, then its generator): one
# iteration is one inferred step, ending at the generator's step (the
# iteration's last), so that the losses and outputs an iteration keeps
# until the next reassigns them are no per-step leak, nor held; keeping
# every generator loss (and with it its graph) is a leak of each step,
# found under the line that makes it.
cat >gan.py <<'PY'
import sys, torch
torch.manual_seed(4)
G = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16))
D = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
og = torch.optim.Adam(G.parameters(), lr=0.001)
od = torch.optim.Adam(D.parameters(), lr=0.001)
kept = []
for i in range(6):
    fake = G(torch.randn(16, 8))
    od.zero_grad()
    ld = D(torch.randn(16, 16)).mean() - D(fake.detach()).mean()
    ld.backward()
    od.step()
    og.zero_grad()
    lg = D(fake).mean()
    lg.backward()
    og.step()
    if sys.argv[1:] == ["keep"]:
        kept.append(lg)
print("kept %d" % len(kept))
PY
for how in clean keep; do
	"$MMS_LAUNCHER" --level=op --call-stack=python:8 --output=gan-$how -- "$MMS_PYTHON" gan.py $how >gan-$how.out \
		2>gan-$how.err || fail "msmemscope --level=op -- gan.py $how exited $?: $(tail -5 gan-$how.err)"
	log=$(ls gan-$how/msmemscope_*/memscope_*.mms)
	summarize "$log"
	# 6 iterations and the teardown, not 12 optimizer steps and it.
	expect_key "$log.json" steps 7
	"$MMS_REPLAY" "$log" --analysis leaks --json >gan-$how.json 2>gan-$how.jerr ||
		fail "--analysis leaks on gan.py $how exited $?: $(cat gan-$how.jerr)"
	"$MMS_PYTHON" - gan-$how.json $how "$(grep -n 'lg = D(fake)' gan.py | cut -d: -f1)" >gan-$how.check 2>&1 <<'PY' ||
import json, sys
d, how, line = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
steps = sorted({l["step"] for l in d["per_step"]["list"]})
if how == "clean":
    assert d["per_step"]["leaks"] == 0 and d["per_step_held"]["blocks"] == 0, (d["per_step"], d["per_step_held"])
else:
    # Steps 3 to 5 keep their loss's graph (step 6's goes in the teardown).
    assert steps == [3, 4, 5], steps
    frames = [f for g in d["per_step"]["by_stack"]["groups"] for f in g["stack"]]
    assert any(f.get("file", "").endswith("gan.py") and f.get("line") == line for f in frames), frames[:8]
print(how, d["per_step"]["leaks"], steps)
PY
		fail "gan.py $how's per-step leaks: $(cat gan-$how.check)"
done
# A new optimizer for each iteration (its address alternating between two
# places): the steps do not vanish. The first counts; the next three,
# each a new optimizer that might be a GAN's second, do not; from the
# fifth optimizer on, every step counts: 7 of 10, and the teardown.
cat >reopt.py <<'PY'
import torch
torch.manual_seed(5)
net = torch.nn.Linear(8, 2)
for i in range(10):
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    opt.zero_grad()
    net(torch.randn(4, 8)).sum().backward()
    opt.step()
PY
"$MMS_LAUNCHER" --level=op --output=reopt -- "$MMS_PYTHON" reopt.py >reopt.out 2>reopt.err ||
	fail "msmemscope --level=op -- reopt.py exited $?: $(tail -5 reopt.err)"
log=$(ls reopt/msmemscope_*/memscope_*.mms)
summarize "$log"
expect_key "$log.json" steps 8
note "two optimizers (a GAN): 6 iterations are 6 inferred steps, none leaks; keeping each loss is a leak of steps 3-5 at gan.py's line; a new optimizer each iteration: 7 of 10 steps count"

# A learning-rate scheduler: torch 1.13's leaves reference cycles behind
# at each step, which no collection reached before the loop ended. The
# package's sweep at exit collects them: freed apart, not leaks.
cat >sched.py <<'PY'
import torch
torch.manual_seed(6)
net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
x, y = torch.randn(32, 16), torch.randn(32, 1)
for i in range(10):
    loss = torch.nn.functional.mse_loss(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
print("lr %.4f" % sched.get_last_lr()[0])
PY
"$MMS_PYTHON" sched.py >sched-native.out 2>&1 || fail "sched.py exited $? natively: $(cat sched-native.out)"
"$MMS_LAUNCHER" --level=op --output=sched -- "$MMS_PYTHON" sched.py >sched.out 2>sched.err ||
	fail "msmemscope --level=op -- sched.py exited $?: $(tail -5 sched.err)"
cmp -s sched.out sched-native.out || fail "sched.py printed otherwise recorded: $(diff sched-native.out sched.out)"
! grep -q "Detected memory leaks" sched.err || fail "a loop with a scheduler has per-step leaks: $(sed -n '/ERROR/,/SUMMARY/p' sched.err)"
log=$(ls sched/msmemscope_*/memscope_*.mms)
"$MMS_REPLAY" "$log" --analysis leaks --json >sched.json 2>sched.jerr || fail "--analysis leaks exited $?: $(cat sched.jerr)"
expect_key sched.json per_step.leaks 0
expect_ge "blocks of the scheduler's cycles the sweep freed" "$(jget sched.json per_step_swept.blocks)" 1
note "a loop with a learning-rate scheduler: its cycles, collected by the sweep at exit, are no per-step leaks"

# A first checkpoint and evaluation in step 5: torch builds the argument
# parsers of the functions they call for the first time (kept to the
# end): blocks of one step, none in the 7 steps after it, so a one-time
# increase, not growth. With Python stacks, the last step's gradients
# (and their Python objects), which CPython keeps at exit, are the live
# blocks at exit's, not a per-step leak.
cat >ck.py <<'PY'
import os, tempfile, torch
torch.manual_seed(7)
net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
path = os.path.join(tempfile.mkdtemp(), "ck.pt")
x, y = torch.randn(8, 16), torch.randn(8, 4)
for i in range(12):
    loss = torch.nn.functional.mse_loss(net(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    opt.step()
    if i == 4:
        net.eval()
        with torch.no_grad():
            val = net(x).mean().item()
        net.train()
        torch.save({"model": net.state_dict(), "opt": opt.state_dict()}, path)
print("saved", os.path.getsize(path) > 0)
PY
for how in plain python; do
	set -- --level=op --output=ck-$how
	[ $how = plain ] || set -- "$@" --call-stack=python:8
	"$MMS_LAUNCHER" "$@" -- "$MMS_PYTHON" ck.py >ck-$how.out 2>ck-$how.err ||
		fail "msmemscope $* -- ck.py exited $?: $(tail -5 ck-$how.err)"
	[ "$(cat ck-$how.out)" = "saved True" ] || fail "ck.py printed $(cat ck-$how.out)"
	log=$(ls ck-$how/msmemscope_*/memscope_*.mms)
	"$MMS_REPLAY" "$log" --analysis leaks --json >ck-$how.json 2>ck-$how.jerr ||
		fail "--analysis leaks exited $?: $(cat ck-$how.jerr)"
	expect_ge "blocks kept from step 5 only ($how)" "$(jget ck-$how.json per_step_once.blocks)" 1
	if [ $how = plain ]; then
		expect_key ck-$how.json per_step.leaks 0
	fi
done
# With Python stacks every object is a block of its own: the attribute
# names that torch's C code looks up (a new string each time, kept in
# CPython's method cache until their slot is reused) may be pushed out
# of that cache by the program's own code after its loop, before the
# sweep, and freed there: a string or two, of one step (1 run in 6).
# Nothing else: no block of ck.py's own, none of its last gradients.
"$MMS_PYTHON" - ck-python.json >ck.check 2>&1 <<'PY' || fail "ck.py's per-step leaks with Python stacks: $(cat ck.check)"
import json, sys
leaks = json.load(open(sys.argv[1]))["per_step"]["list"]
assert len(leaks) <= 2 and all(l["bytes"] < 100 for l in leaks), leaks
PY
grep -q "^Kept from one step only: [0-9]* allocation(s), " ck-plain.err ||
	fail "the report does not count the one-time blocks apart: $(sed -n '/ERROR/,/Kept/p' ck-plain.err)"
note "a first checkpoint's lazily built tables are kept from one step only, not leaks; the last step's gradients neither"

# A WGAN: the critic steps 5 times per iteration before the generator, so
# the first iteration's critic steps are steps of their own and the
# generator's Adam state, allocated at its first step, comes after the
# warm-up: kept from that one step only, not a leak.
cat >wgan.py <<'PY'
import torch
torch.manual_seed(4)
G = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16))
D = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
og = torch.optim.Adam(G.parameters(), lr=1e-4)
od = torch.optim.Adam(D.parameters(), lr=1e-4)
for it in range(10):
    for _ in range(5):
        fake = G(torch.randn(16, 8)).detach()
        ld = D(fake).mean() - D(torch.randn(16, 16)).mean()
        od.zero_grad(); ld.backward(); od.step()
    lg = -D(G(torch.randn(16, 8))).mean()
    og.zero_grad(); lg.backward(); og.step()
PY
"$MMS_LAUNCHER" --level=op --output=wgan -- "$MMS_PYTHON" wgan.py >wgan.out 2>wgan.err ||
	fail "msmemscope --level=op -- wgan.py exited $?: $(tail -5 wgan.err)"
log=$(ls wgan/msmemscope_*/memscope_*.mms)
"$MMS_REPLAY" "$log" --analysis leaks --json >wgan.json 2>wgan.jerr || fail "--analysis leaks exited $?: $(cat wgan.jerr)"
expect_key wgan.json per_step.leaks 0
expect_ge "blocks of the generator's Adam state, kept from one step only" "$(jget wgan.json per_step_once.blocks)" 1
note "a WGAN: the generator's Adam state, allocated after the critic's first steps, is kept from one step only"

# A program's own module named torch is left alone: libtorch is not
# loaded into it (that alone is some 800,000 allocations).
mkdir faketorch
echo 'X = 7' >faketorch/torch.py
(cd faketorch && "$MMS_LAUNCHER" --level=op --output=ft -- "$MMS_PYTHON" -c 'import torch; print(torch.X)') \
	>ft.out 2>ft.err || fail "--level=op with a module named torch exited $?: $(tail -5 ft.err)"
[ "$(cat ft.out)" = 7 ] || fail "the program's torch module printed $(cat ft.out)"
log=$(ls faketorch/ft/msmemscope_*/memscope_*.mms)
summarize "$log"
[ "$(jget "$log.json" by_kind.op_launch)" = 0 ] && [ "$(jget "$log.json" events)" -lt 100000 ] ||
	fail "--level=op did more than nothing with a module named torch: $(jget "$log.json" by_kind)"

# --watch names aten operators (names with "::"): the outputs of the
# first aten::addmm are checksummed until aten::mean; no "step 0" in a
# program without steps.
"$MMS_LAUNCHER" --level=op --watch=aten::addmm:out0,aten::mean --analysis=watch --output=pw -- "$MMS_PYTHON" plain.py \
	>pw.out 2>pw.err || fail "msmemscope --watch=aten::addmm:out0,aten::mean exited $?: $(tail -5 pw.err)"
grep -q "^  'aten::addmm' out 0: 0x[0-9a-f]*, .* checksums from launch [0-9]*$" pw.err ||
	fail "--watch=aten::addmm:out0: no watched output in the report: $(sed -n '/watch/,$p' pw.err)"
! grep -q "step 0" pw.err || fail "the watch report speaks of step 0: $(grep 'step 0' pw.err)"

# Guard mode: every heap block moved, C++ new and delete of libtorch
# checked by family; the program prints the same and nothing is found.
"$MMS_LAUNCHER" --guard --error-exitcode=3 --analysis=guard --output=g -- "$MMS_PYTHON" "$prog" --steps=2 >g.out 2>g.err ||
	fail "msmemscope --guard exited $?: $(tail -5 g.err)"
head -2 native.cmp >g.expected
grep "^step" g.out >g.cmp
diff -u g.expected g.cmp >g.diff || fail "the program printed otherwise in guard mode: $(cat g.diff)"
grep -q '^msmemscope: ERROR SUMMARY: 0 errors from 0 contexts (guard mode' g.err || fail "guard mode found errors in torch: $(tail -5 g.err)"
