# SPDX-License-Identifier: MIT
"""torchloop.py: the PyTorch loop bench/torch.sh times: an MLP
(WIDTH-2*WIDTH-2*WIDTH-10, float32, batch 64) trained with SGD and
momentum on the CPU, one thread, STEPS steps, each marked with
msmemscope.step(). Prints the loop's own time in seconds (import torch
and the set-up excluded). A small WIDTH makes a loop of many cheap
operators (what operator launches cost shows), a large one a loop of
matrix products.

    torchloop.py MODE [STEPS [WIDTH]]
    MODE: plain (no msmemscope.torch call), ops (ops()), dispatch
          (ops(via="dispatch")), track (track(model, opt): ops and roles)
"""
import sys
import time

import torch

import msmemscope
import msmemscope.torch

mode = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
width = int(sys.argv[3]) if len(sys.argv) > 3 else 32
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(width, 2 * width), torch.nn.ReLU(),
                            torch.nn.Linear(2 * width, 2 * width), torch.nn.ReLU(),
                            torch.nn.Linear(2 * width, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x, y = torch.randn(64, width), torch.randint(0, 10, (64,))
if mode == "ops":
    msmemscope.torch.ops()
elif mode == "dispatch":
    msmemscope.torch.ops(via="dispatch")
elif mode == "track":
    msmemscope.torch.track(model, opt)
t0 = time.process_time()
for _ in range(steps):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    msmemscope.step()
print("%.4f" % (time.process_time() - t0))
