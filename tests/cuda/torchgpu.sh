#!/bin/sh
# SPDX-License-Identifier: MIT
# torchgpu.sh: a PyTorch CUDA training loop recorded, where PyTorch sees a
# GPU: bench/torchcuda.sh's check alone (BENCH_RUNS=0), with and without
# expandable segments: every segment torch.cuda.memory_snapshot() lists
# at the end is covered by live CUDA blocks of the log, and no CUDA block
# live at exit is counted as the program's leak (the loop's device memory
# is PyTorch's: its caching allocator's segments, its cuBLAS handles'
# workspaces). Skipped (77) where $MMS_PYTHON has no PyTorch that sees a
# CUDA device, as on CI (Debian's python3-torch is built for the CPU);
# MMS_PYTHON names another interpreter.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

"$MMS_PYTHON" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' >/dev/null 2>&1 ||
	skip "$MMS_PYTHON has no PyTorch that sees a CUDA device (set MMS_PYTHON to an interpreter that has one)"
st=0
BENCH_RUNS=0 MMS_HOOKS="$MMS_HOOKS" MMS_REPLAY="$MMS_REPLAY" MMS_PYTHON="$MMS_PYTHON" \
	sh "$top_srcdir/bench/torchcuda.sh" >check.out 2>&1 || st=$?
cat check.out
expect_eq "torchcuda.sh's check" "$st" 0
for mode in segments expandable; do
	grep -q "^  $mode: segments covered by live blocks of the log: \([0-9][0-9]*\) of \1\$" check.out ||
		fail "$mode: not every segment is covered: $(cat check.out)"
done
echo "torchgpu.sh: ok"
