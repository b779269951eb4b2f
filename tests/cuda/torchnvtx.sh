#!/bin/sh
# SPDX-License-Identifier: MIT
# torchnvtx.sh: a PyTorch CUDA program annotated for Nsight Systems alone
# (tests/cuda/torchnvtx.py: torch.cuda.nvtx ranges, no msmemscope call),
# recorded with NVTX_INJECTION64_PATH naming the recorder as msmemscope
# and memscope.gdb set it, where PyTorch sees a GPU: its 3 "step start"
# ranges are the log's steps, each holding the launches forward, backward
# and optimizer; its mark is an MSTX mark; the tensor of 1 TiB that
# PyTorch's caching allocator asked the CUDA driver for and was refused is
# in --analysis oom, on cuda:0, with the stack that asked. The program's
# output is the same recorded or not. Skipped (77) where $MMS_PYTHON has
# no PyTorch that sees a CUDA device, as on CI (Debian's python3-torch is
# built for the CPU); MMS_PYTHON names another interpreter.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

"$MMS_PYTHON" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' >/dev/null 2>&1 ||
	skip "$MMS_PYTHON has no PyTorch that sees a CUDA device (set MMS_PYTHON to an interpreter that has one)"
py=$top_srcdir/tests/cuda/torchnvtx.py
"$MMS_PYTHON" "$py" >native.out 2>native.err || fail "torchnvtx.py exited $? on its own: $(cat native.err)"
MSMEMSCOPE_CONFIG=call_stack=16 NVTX_INJECTION64_PATH="$MMS_HOOKS" record t.mms "$MMS_PYTHON" "$py" >rec.out 2>rec.err ||
	fail "torchnvtx.py exited $? under the recorder: $(cat rec.err)"
expect_eq "torchnvtx.py's output under the recorder" "$(cat rec.out)" "$(cat native.out)"
expect_eq "torchnvtx.py's output" "$(cat native.out)" "steps 3
1 TiB: refused (out of memory)"

summarize t.mms
expect_consistent t.mms.json
expect_key t.mms.json steps 3
expect_ge "MSTX events (3 steps' start and end, the mark)" "$(jget t.mms.json by_kind.mstx)" 7
for s in 1 2 3; do
	"$MMS_REPLAY" t.mms --step $s --json >step$s.json 2>step.err || fail "--step $s exited $?: $(cat step.err)"
	"$MMS_PYTHON" - step$s.json >step$s.txt <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(l["name"] for l in d["launches"]))
PY
	expect_eq "step $s's launches" "$(cat step$s.txt)" "forward backward optimizer"
done
"$MMS_REPLAY" t.mms --export csv -o t.csv >/dev/null 2>step.err || fail "the csv export exited $?: $(cat step.err)"
"$MMS_PYTHON" - t.csv >marks.txt <<'PY'
import csv, sys
print(" ".join(r["Name"] for r in csv.DictReader(open(sys.argv[1], newline=""))
               if r["Event"] == "MSTX" and r["Event Type"] == "Mark"))
PY
expect_eq "the dump's MSTX marks" "$(cat marks.txt)" after

"$MMS_REPLAY" t.mms --analysis oom >oom.txt 2>oom.err || fail "--analysis oom exited $?: $(cat oom.err)"
grep -q "of 1099511627776 bytes (1.0 TiB) on cuda:0 refused by the CUDA driver (out of memory)" oom.txt ||
	fail "--analysis oom does not list the refused 1 TiB on cuda:0: $(head -c 3000 oom.txt)"
grep -q "libc10_cuda" oom.txt || fail "the refused allocation's stack does not show PyTorch's allocator: $(head -c 3000 oom.txt)"
note "3 steps from torch.cuda.nvtx \"step start\" ranges, each with forward, backward, optimizer; $(jget t.mms.json by_kind.alloc_fail) allocations refused, the 1 TiB on cuda:0 among them"
echo "torchnvtx.sh: ok"
