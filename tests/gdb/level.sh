#!/bin/sh
# SPDX-License-Identifier: MIT
# level.sh: `set memscope level op' records operator launches as
# msmemscope --level=op does: the recorder's configuration of the next
# run says so (torch_ops=1, launch events), a value gdb does not know is
# refused and the setting stays; and, where PyTorch is installed, a
# training loop that marks no steps stops at `memscope break step 3' (its
# optimizer's steps) with no change to it.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session lv "$top_builddir/tests/gdb/leaky" -ex 'show memscope level' -ex 'set memscope level op' \
	-ex 'set memscope level bogus' -ex 'show memscope level' -ex 'break exit' -ex run -ex 'memscope info'
expect lv "The next runs record launches at level none." "the default"
expect lv "memscope: the next runs record operator launches" "the setting's answer"
expect lv 'Undefined item: "bogus".' "a value gdb does not know"
expect lv "The next runs record launches at level op." "the setting stays after a refused value"
expect lv "events=alloc,free,launch;" "the launches in the run's configuration"
expect lv ";torch_ops=1" "a PyTorch program's operators in the run's configuration"
expect_rc "gdb's exit status"
note "set memscope level op: the run records with --level=op's configuration"

py=${MMS_PYTHON:-/usr/bin/python3}
if [ ! -e "$top_builddir/hooks/python/build/msmemscope/_msmemscope.so" ] || ! "$py" -c 'import torch' 2>/dev/null; then
	echo "$test_name: no Python package or no torch ($py): the PyTorch loop under gdb is not checked"
	exit 0
fi
cat >loop.py <<'PY'
import torch
torch.manual_seed(1)
net = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
for i in range(5):
    loss = net(torch.randn(4, 8)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
PY
session tl "$py" -ex 'set memscope level op' -ex 'memscope break step 3' -ex "set args $work/loop.py" -ex run \
	-ex 'memscope info' -ex kill
expect tl "step 3 begins" "the stop where the loop's second optimizer step ended"
expect tl "now: step 3" "memscope info at the stop"
expect tl "operator launches: " "the aten operators counted"
expect_not tl "operator launches: 0" "aten operators recorded"
note "a PyTorch loop that marks no steps stops at step 3 under gdb with set memscope level op"
