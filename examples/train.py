# SPDX-License-Identifier: MIT
"""train.py: a small CPU training loop (a three-layer MLP, SGD with
momentum) for msmemscope, with one real, classic PyTorch leak on purpose:
after each training step it computes a validation loss without
torch.no_grad() and appends the tensor to a list for a later report. A
tensor with a grad_fn keeps its whole graph alive, and the graph keeps
every activation its forward saved for backward: each step leaves about
70 KiB behind, which the list never lets go.

    msmemscope --warmup-steps=2 --analysis=leaks,decompose -- python3 examples/train.py
    python3 examples/train.py --fixed     # the fix: no_grad() and .item()
    python3 examples/train.py --cuda      # the same loop on the GPU (its
                                          # device memory as CUDA memory)

Run from the build tree with the package on the path:

    PYTHONPATH=hooks/python/build src/msmemscope -- /usr/bin/python3 ../examples/train.py
"""
import sys

import torch

import msmemscope
import msmemscope.torch

STEPS = 8
BATCH, FEATURES, HIDDEN, CLASSES = 64, 32, 128, 4


def make_model():
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, CLASSES))


def main(argv):
    fixed = "--fixed" in argv
    device = torch.device("cuda" if "--cuda" in argv else "cpu")
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("train.py: --cuda: this PyTorch sees no CUDA device (torch.cuda.is_available() is False)")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = make_model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    # Roles (weight, gradient, optimizer_state, activation, aten) and
    # aten operators as launches, when recorded; nothing otherwise.
    msmemscope.torch.track(model, opt)

    x, y = torch.randn(BATCH, FEATURES), torch.randint(0, CLASSES, (BATCH,))
    x_val, y_val = torch.randn(BATCH, FEATURES), torch.randint(0, CLASSES, (BATCH,))
    x, y, x_val, y_val = x.to(device), y.to(device), x_val.to(device), y_val.to(device)
    val_history = []
    for step in range(1, STEPS + 1):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

        if fixed:
            with torch.no_grad():
                val_history.append(loss_fn(model(x_val), y_val).item())
        else:
            val_loss = loss_fn(model(x_val), y_val)  # the leak: no torch.no_grad(),
            val_history.append(val_loss)              # and the tensor (its graph) kept
        print("step %d: loss %.4f, validation %.4f" % (step, loss.item(), float(val_history[-1])), flush=True)
        msmemscope.step()
    print("done: %d steps, %d validation losses kept" % (STEPS, len(val_history)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
