#!/bin/sh
# SPDX-License-Identifier: MIT
# torchpool.sh: PyTorch's CUDA caching allocator as pools of the log,
# without a GPU: the recorder takes c10's profiler hook
# (c10::reportMemoryUsageToProfiler, hooks/torch.c), which the allocator
# calls for each block it hands out and takes back; _torchops's
# _report_as_cuda, a test double of the allocator, calls it from another
# library as libc10_cuda does. Each block is one of the pool "PyTorch
# cuda:N" (its reserved bytes the pool's total, its allocated bytes used)
# in the summary, the dump and decompose by device, from every thread
# (threading's, _thread's); those still held at exit are PyTorch's, not
# leaks; --device keeps its devices' alone; torch.profiler (legacy and
# Kineto, with memory) runs as it does without the recorder and still
# sees the blocks (the recorder goes on to libc10's hook). tests/cuda/torchgpu.sh checks the real allocator on a
# GPU.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

. "$top_srcdir/tests/progs/torchlib.sh"
[ -e "$pkg/msmemscope/_torchops.so" ] ||
	skip "msmemscope._torchops (its test double) is not built (configure found no libtorch headers: apt-get install -y libtorch-dev)"

cat >pool.py <<'PY'
import _thread
import threading
import torch
from msmemscope import _torchops as t

MiB = 1 << 20
# As the caching allocator reports: address, size (< 0: taken back), the
# device's allocated and reserved bytes after it, the device.
t._report_as_cuda(0x7f0000000000, 4096, 4096, 2 * MiB, 0)
t._report_as_cuda(0x7f0000001000, 8192, 12288, 2 * MiB, 0)
t._report_as_cuda(0x7f0000000000, -4096, 8192, 2 * MiB, 0)
t._report_as_cuda(0x7e0000000000, 1 * MiB, 1 * MiB, 20 * MiB, 1)
t._report_as_cuda(0x7e0000000000, -1 * MiB, 0, 20 * MiB, 1)
t._report_as_cuda(0x7e0000200000, 512, 512, 20 * MiB, 1)
th = threading.Thread(target=t._report_as_cuda, args=(0x7d0000000000, 64, 64, 2 * MiB, 2))
th.start()
th.join()
done = threading.Event()
_thread.start_new_thread(lambda: (t._report_as_cuda(0x7c0000000000, 128, 128, 2 * MiB, 3), done.set()), ())
done.wait()
t._report_as_cuda(0x7c0000000000, -128, 0, 2 * MiB, 3)
# torch's profilers, as without the recorder: they see the blocks too.
x = torch.ones(64, 64)
for kind in ("legacy", "kineto"):
    try:
        if kind == "legacy":
            p = torch.autograd.profiler.profile(use_kineto=False, profile_memory=True)
        else:
            p = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True)
        with p:
            y = x @ x
            t._report_as_cuda(0x7b0000000000, 256, 8448, 2 * MiB, 0)
        print(kind, "profiler:", "aten::mm" in {e.key for e in p.key_averages()},
              sorted(e.cuda_memory_usage for e in p.key_averages() if e.cuda_memory_usage))
    except Exception as e:
        print(kind, "profiler:", type(e).__name__, e)
    t._report_as_cuda(0x7b0000000000, -256, 8192, 2 * MiB, 0)
print("sum", float(x.sum()))
PY
"$MMS_PYTHON" pool.py >native.out 2>native.err || fail "pool.py exited $? natively: $(cat native.err)"
grep -qx "legacy profiler: True \[256\]" native.out || fail "torch's legacy profiler does not run here: $(cat native.out)"
record p.mms "$MMS_PYTHON" pool.py >p.out 2>p.err || fail "pool.py exited $? recorded: $(cat p.err)"
expect_eq "pool.py recorded" "$(cat p.out)" "$(cat native.out)"

summarize p.mms
j=p.mms.json
expect_consistent $j
expect_key $j kinds.pool.allocs 8
expect_key $j kinds.pool.frees 5
expect_key $j kinds.pool.bytes_allocated $((4096 + 8192 + 1048576 + 512 + 64 + 128 + 2 * 256))
expect_key $j kinds.pool.peak_bytes $((8192 + 1048576))
expect_key $j kinds.pool.live_bytes $((8192 + 512 + 64))
expect_key $j unmatched_frees 0
"$MMS_REPLAY" p.mms --analysis leaks --json >leaks.json 2>leaks.err || fail "leaks exited $?: $(cat leaks.err)"
expect_eq "leaks at exit" "$(jget leaks.json at_exit.leaks)" 0
expect_eq "PyTorch's blocks at exit" "$(jget leaks.json runtime.by_kind.torch-cuda.blocks)" 3
expect_eq "PyTorch's bytes at exit" "$(jget leaks.json runtime.by_kind.torch-cuda.bytes)" $((8192 + 512 + 64))

# The dump: each a row of its pool, with the pool's total and used.
"$MMS_REPLAY" p.mms --export csv -o p.csv >/dev/null 2>exp.err || fail "the csv export exited $?: $(cat exp.err)"
"$MMS_PYTHON" - p.csv >rows.txt <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1], newline="")):
    if r["Event Type"].startswith("PyTorch"):
        a = dict(kv.split(":", 1) for kv in r["Attr"].strip("{}").split(","))
        print(r["Event"], r["Event Type"], a["size"], a["total"], a["used"])
PY
expect_eq "the dump's PyTorch rows" "$(cat rows.txt)" "MALLOC PyTorch cuda:0 4096 2097152 4096
MALLOC PyTorch cuda:0 8192 2097152 12288
FREE PyTorch cuda:0 4096 2097152 8192
MALLOC PyTorch cuda:1 1048576 20971520 1048576
FREE PyTorch cuda:1 1048576 20971520 0
MALLOC PyTorch cuda:1 512 20971520 512
MALLOC PyTorch cuda:2 64 2097152 64
MALLOC PyTorch cuda:3 128 2097152 128
FREE PyTorch cuda:3 128 2097152 0
MALLOC PyTorch cuda:0 256 2097152 8448
FREE PyTorch cuda:0 256 2097152 8192
MALLOC PyTorch cuda:0 256 2097152 8448
FREE PyTorch cuda:0 256 2097152 8192"

# decompose at the end: one kind per device.
"$MMS_REPLAY" p.mms --analysis decompose >dec.txt 2>dec.err || fail "decompose exited $?: $(cat dec.err)"
sed -n '1,/^$/p' dec.txt | grep -q '^ *8192 *1 .*PyTorch cuda:0$' || fail "decompose has no PyTorch cuda:0 line: $(cat dec.txt)"
sed -n '1,/^$/p' dec.txt | grep -q '^ *512 *1 .*PyTorch cuda:1$' || fail "decompose has no PyTorch cuda:1 line: $(cat dec.txt)"

# --device=cuda:1: that device's blocks alone, both ends.
MSMEMSCOPE_CONFIG=devices=1 record d.mms "$MMS_PYTHON" pool.py >d.out 2>d.err || fail "pool.py exited $? with devices=1: $(cat d.err)"
summarize d.mms
expect_key d.mms.json kinds.pool.allocs 2
expect_key d.mms.json kinds.pool.frees 1
expect_key d.mms.json kinds.pool.live_bytes 512

# The launcher's report: the pools' blocks at exit are PyTorch's.
PYTHONPATH="$pkg" "$MMS_LAUNCHER" -o run -- "$MMS_PYTHON" pool.py >l.out 2>l.err || fail "msmemscope -- pool.py exited $?: $(tail -5 l.err)"
grep -q "runtimes' *3 blocks, 8.6 KiB (8768 bytes) *kept by PyTorch (tensors of its CUDA caching allocator still held), not leaks" l.err ||
	fail "the launcher's report does not set PyTorch's pool blocks apart: $(cat l.err)"
note "8 blocks reported as PyTorch's CUDA caching allocator does (from 3 threads), 5 taken back; the 3 held at exit PyTorch's; --device=cuda:1 keeps 2; $(grep -c 'profiler: True' native.out) of torch's profilers run as without the recorder and see the blocks"
echo "torchpool.sh: ok"
