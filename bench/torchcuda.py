# SPDX-License-Identifier: MIT
"""torchcuda.py: the PyTorch CUDA loop bench/torchcuda.sh times and
checks on a machine with a GPU: an MLP (WIDTH-4*WIDTH-4*WIDTH-WIDTH,
float32, batch 512) trained with AdamW on cuda:0, STEPS steps, each with
a scratch tensor of a size that changes from step to step (so the caching
allocator keeps taking segments), marked with msmemscope.step() when the
package imports. Prints, on stdout, the loop's wall time in seconds (the
set-up excluded, the device synchronized at both ends); with --report
FILE it writes what PyTorch itself says of its memory at the end, as
JSON: memory_allocated, memory_reserved, their maxima, the change of the
device's used memory (cudaMemGetInfo) from before the model to the end,
and the caching allocator's segments (address, size, kind), which a
recording must hold as live CUDA blocks.

    torchcuda.py [STEPS [WIDTH]] [--report FILE]
"""
import json
import sys
import time

import torch

try:
    import msmemscope
    step = msmemscope.step
except ImportError:  # the package is not on the path: no steps marked
    def step():
        pass

args = [a for a in sys.argv[1:] if not a.startswith("--")]
report = sys.argv[sys.argv.index("--report") + 1] if "--report" in sys.argv else None
if report in args:
    args.remove(report)
steps = int(args[0]) if args else 200
width = int(args[1]) if len(args) > 1 else 1024
if not torch.cuda.is_available():
    sys.exit("torchcuda.py: this PyTorch sees no CUDA device (torch.cuda.is_available() is False)")
dev = torch.device("cuda:0")
torch.cuda.init()
free0, total = torch.cuda.mem_get_info(dev)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                            torch.nn.Linear(4 * width, 4 * width), torch.nn.GELU(),
                            torch.nn.Linear(4 * width, width)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(512, width, device=dev)
target = torch.randn(512, width, device=dev)
torch.cuda.synchronize()
t0 = time.perf_counter()
for i in range(steps):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), target)
    loss.backward()
    opt.step()
    # A scratch buffer of 1 to 64 MiB: large blocks take their own
    # segments, which the allocator keeps (and reuses by size).
    scratch = torch.empty((1 + (i * 7) % 64) << 18, device=dev)
    scratch.fill_(1.0)
    del scratch
    step()
torch.cuda.synchronize()
print("%.4f" % (time.perf_counter() - t0))
if report:
    free1, _ = torch.cuda.mem_get_info(dev)
    segments = [{"address": s["address"], "size": s["total_size"], "device": s["device"],
                 "kind": s.get("segment_type", "")} for s in torch.cuda.memory_snapshot()]
    with open(report, "w") as f:
        json.dump({"torch": torch.__version__, "cuda": torch.version.cuda,
                   "memory_allocated": torch.cuda.memory_allocated(dev),
                   "memory_reserved": torch.cuda.memory_reserved(dev),
                   "max_memory_allocated": torch.cuda.max_memory_allocated(dev),
                   "max_memory_reserved": torch.cuda.max_memory_reserved(dev),
                   "mem_get_info_used_delta": free0 - free1, "device_total": total,
                   "segments": segments}, f)
