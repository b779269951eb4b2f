# SPDX-License-Identifier: MIT
"""torchnvtx.py: a PyTorch CUDA training loop annotated for Nsight Systems
alone (torch.cuda.nvtx, no msmemscope call), for tests/cuda/torchnvtx.sh:
3 steps, each a "step start" range holding the ranges "forward",
"backward" and "optimizer"; a mark "after" at the end of the loop; then
a tensor of 1 TiB, which no GPU has: PyTorch's caching allocator asks
the CUDA runtime for it, is refused, and raises OutOfMemoryError, which
the program catches. Prints what it did; the same with the recorder.
"""
import sys

import torch

if not torch.cuda.is_available():
    sys.exit("torchnvtx.py: this PyTorch sees no CUDA device")
dev = torch.device("cuda:0")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 256, device=dev)
for i in range(3):
    with torch.cuda.nvtx.range("step start"):
        with torch.cuda.nvtx.range("forward"):
            loss = model(x).square().mean()
        with torch.cuda.nvtx.range("backward"):
            loss.backward()
        with torch.cuda.nvtx.range("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
torch.cuda.nvtx.mark("after")
print("steps 3")
try:
    torch.empty(1 << 40, dtype=torch.uint8, device=dev)
    print("1 TiB: allocated")
except torch.cuda.OutOfMemoryError:
    print("1 TiB: refused (out of memory)")
