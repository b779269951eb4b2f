# SPDX-License-Identifier: MIT
"""torchprog.py: a small CPU training loop for torch.sh: a two-layer MLP
(64 -> 128 -> 10, float32) trained with SGD and momentum for STEPS steps
on one fixed batch, each step marked with msmemscope.step(). Prints the
loss of each step (the same with and without the recorder) and the bytes
of its parameters, which are also those of its gradients and of SGD's
momentum buffers.

    torchprog.py [--ops=record_function|dispatch|none] [--no-track] [--steps=N] [--watch]

--watch watches the second layer's bias (msmemscope.watch()): SGD's
update changes it, in place, once a step.
"""
import sys

import torch

import msmemscope
import msmemscope.torch

opts = dict(a.lstrip("-").partition("=")[::2] for a in sys.argv[1:])
steps = int(opts.get("steps", 5))
torch.manual_seed(0)
torch.set_num_threads(1)

model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x = torch.randn(32, 64)
y = torch.randint(0, 10, (32,))

if opts.get("ops", "") != "none":
    print("ops:", msmemscope.torch.ops(via=opts.get("ops") or None), flush=True)
if "no-track" not in opts:
    msmemscope.torch.track(model, opt)
if "watch" in opts:
    msmemscope.watch(model[2].bias, "bias2")

for step in range(1, steps + 1):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print("step %d loss %.6f" % (step, loss.item()), flush=True)
    msmemscope.step()

print("parameter bytes", sum(p.numel() * p.element_size() for p in model.parameters()), flush=True)
