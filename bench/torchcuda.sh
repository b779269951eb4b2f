#!/bin/sh
# SPDX-License-Identifier: MIT
# torchcuda.sh: on a machine with a GPU, what recording a PyTorch CUDA
# training loop costs (issue 15's target: at most 1.2x native), and
# whether the log's CUDA memory is what PyTorch says it holds.
# bench/torchcuda.py's loop (an MLP trained with AdamW on cuda:0) runs
# BENCH_RUNS rounds of three modes in turn: natively, recorded (the
# recorder's default settings), recorded with C stacks of depth 16. Each
# mode's figure is the loop's own wall time (set-up and import excluded)
# and the whole process's; ratios are medians over the rounds of each
# round's ratio to its native run.
#
# Then one recorded run with stacks, and one with PyTorch's expandable
# segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, which maps
# memory with cuMemCreate/cuMemMap): every segment PyTorch's caching
# allocator holds at the end (torch.cuda.memory_snapshot()) must be
# covered by live CUDA blocks of the log (one block of its address and
# size, or with expandable segments its mappings side by side); the other live CUDA
# blocks (the CUDA libraries' own) are listed by the runtime that holds
# them, and the log's peak beside torch.cuda.max_memory_reserved(); the
# peak of PyTorch's pool in the log (its tensors' blocks, "PyTorch
# cuda:0") must be torch.cuda.max_memory_allocated(). Prints
# "torchcuda.sh: MISMATCH" and exits 1 when a segment is missing, when
# the pool's peak differs, or when a CUDA block live at exit is counted
# as the program's leak (the loop's device memory is all PyTorch's: its
# segments, its cuBLAS handles').
# Skipped (exit 0, with a line) where PyTorch sees no GPU. Not run by
# make bench: CI has no GPU.
#
# Environment: top_builddir (default .), MMS_HOOKS, MMS_REPLAY, MMS_PYTHON
# (default python3: the interpreter that has a CUDA PyTorch), BENCH_RUNS
# (default 3; 0: the check alone), BENCH_TORCH_CUDA_STEPS (default 300), BENCH_TORCH_CUDA_WIDTH
# (default 1024).
set -eu

top_builddir=${top_builddir:-.}
srcdir=$(cd "$(dirname "$0")" && pwd)
hooks=${MMS_HOOKS:-$top_builddir/hooks/.libs/libmsmemscope-hooks.so}
replay=${MMS_REPLAY:-$top_builddir/src/msmemscope-replay}
python=${MMS_PYTHON:-python3}
runs=${BENCH_RUNS:-3}
steps=${BENCH_TORCH_CUDA_STEPS:-300}
width=${BENCH_TORCH_CUDA_WIDTH:-1024}
loop=$srcdir/torchcuda.py

for f in "$hooks" "$replay"; do
	[ -e "$f" ] || { echo "torchcuda.sh: $f is not built" >&2; exit 2; }
done
if ! "$python" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
	echo "torchcuda.sh: skipped: $python has no PyTorch that sees a CUDA device"
	exit 0
fi
. "$srcdir/lib.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msmemscope-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# once MODE: one run; prints the loop's time and the process's, in
# microseconds.
once() {
	_t0=$(date +%s%N)
	case $1 in
	native) "$python" "$loop" "$steps" "$width" >"$tmp/out" ;;
	recorded) env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/r.mms" "$python" "$loop" "$steps" "$width" >"$tmp/out" ;;
	stacks)
		env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/s.mms" MSMEMSCOPE_CONFIG=call_stack=16 \
			"$python" "$loop" "$steps" "$width" >"$tmp/out"
		;;
	esac
	_t1=$(date +%s%N)
	echo "$(round_usec <"$tmp/out") $(((_t1 - _t0) / 1000))"
}

if [ "$runs" -gt 0 ]; then
	echo "PyTorch CUDA training loop (bench/torchcuda.py: width $width, $steps steps), $runs rounds of the modes in turn:"
	: >"$tmp/rounds"
	r=0
	while [ $r -lt "$runs" ]; do
		echo "$(once native) $(once recorded) $(once stacks)" >>"$tmp/rounds"
		r=$((r + 1))
	done
	printf '  %-22s %10s %10s %10s\n' "" native recorded "stacks:16"
	printf '  %-22s %10s %10s %10s\n' "loop, best s" "$(round_best "$tmp/rounds" 1)" "$(round_best "$tmp/rounds" 3)" \
		"$(round_best "$tmp/rounds" 5)"
	printf '  %-22s %10s %10s %10s   (target <= 1.2)\n' "loop, x native" 1.00 "$(round_ratio "$tmp/rounds" 3 1)" \
		"$(round_ratio "$tmp/rounds" 5 1)"
	printf '  %-22s %10s %10s %10s\n' "process, best s" "$(round_best "$tmp/rounds" 2)" "$(round_best "$tmp/rounds" 4)" \
		"$(round_best "$tmp/rounds" 6)"
	printf '  %-22s %10s %10s %10s\n' "process, x native" 1.00 "$(round_ratio "$tmp/rounds" 4 2)" \
		"$(round_ratio "$tmp/rounds" 6 2)"
fi

# check NAME [ENV...]: one recorded run with stacks and PyTorch's report;
# compares the log's live CUDA blocks at the end with the segments.
status=0
check() {
	_name=$1
	shift
	env "$@" LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/$_name.mms" MSMEMSCOPE_CONFIG=call_stack=16 \
		"$python" "$loop" 50 "$width" --report "$tmp/$_name.json" >/dev/null
	"$replay" "$tmp/$_name.mms" --summary --json >"$tmp/$_name.summary"
	"$replay" "$tmp/$_name.mms" --analysis leaks --memory device --json >"$tmp/$_name.leaks"
	"$python" - "$_name" "$tmp/$_name.json" "$tmp/$_name.summary" "$tmp/$_name.leaks" <<'PY' || status=1
import json, sys
name, torch_f, summary_f, leaks_f = sys.argv[1:]
t = json.load(open(torch_f))
s = json.load(open(summary_f))
l = json.load(open(leaks_f))
# The CUDA blocks live at the end (msMemScope calls device memory HAL):
# the program's leaks and what the runtimes keep.
live = {}
for part in ("at_exit", "runtime"):
    for b in l[part]["list"]:
        if b["memory"] == "HAL":
            live[int(b["addr"], 16)] = (b["bytes"], part, b.get("device"))
segs = t["segments"]
# A segment is one block, or with expandable segments several mappings
# (cuMemMap) side by side: the live blocks inside it must cover it.
def inside(g):
    return [a for a in live if g["address"] <= a and a + live[a][0] <= g["address"] + g["size"]]
missing = [g for g in segs if sum(live[a][0] for a in inside(g)) != g["size"]]
in_segs = {a for g in segs for a in inside(g)}
others = {a: v for a, v in live.items() if a not in in_segs}
dev = s["kinds"]["device"]
print("  %s: torch %s (CUDA %s): %d segments, %d bytes reserved (%d allocated) at the end; "
      "max reserved %d" % (name, t["torch"], t["cuda"], len(segs), t["memory_reserved"],
                             t["memory_allocated"], t["max_memory_reserved"]))
print("  %s: the log: %d CUDA blocks live at the end, %d bytes; peak %d bytes; %d allocations, %d frees"
      % (name, len(live), sum(v[0] for v in live.values()), dev["peak_bytes"], dev["allocs"], dev["frees"]))
print("  %s: segments covered by live blocks of the log: %d of %d" % (name, len(segs) - len(missing), len(segs)))
print("  %s: other live CUDA blocks: %d, %d bytes (%s); cudaMemGetInfo's used memory grew by %d bytes"
      % (name, len(others), sum(v[0] for v in others.values()),
         ", ".join(sorted({v[1] for v in others.values()})) or "none", t["mem_get_info_used_delta"]))
for a, v in sorted(others.items(), key=lambda kv: -kv[1][0])[:6]:
    print("  %s:   0x%x, %d bytes (%s)" % (name, a, v[0], "the program's" if v[1] == "at_exit" else "a runtime's"))
# Who allocated the program's: their stacks' first frames.
def frame(f):
    where = (f.get("module") or "?").rsplit("/", 1)[-1]
    return "%s (%s)" % (f["function"], where) if f.get("function") else "%s+%s" % (where, f.get("module_offset"))
for g in [g for g in l["at_exit"]["by_stack"]["groups"] if g.get("memory") == "DEVICE"][:4]:
    print("  %s:   %d bytes in %d blocks from: %s" % (name, g["bytes"], g["blocks"],
                                                   " <- ".join(frame(f) for f in g["stack"][:8])))
for g in missing[:5]:
    print("  %s: MISSING segment 0x%x of %d bytes (%s): the log has %s" % (name, g["address"], g["size"], g["kind"],
                                                                    live.get(g["address"], "nothing there")))
# The tensors: each block the caching allocator handed out is a block of
# the pool "PyTorch cuda:0" (the recorder takes c10's profiler hook): the
# log's peak of them must be torch.cuda.max_memory_allocated().
pool = s["kinds"]["pool"]
bad_pool = not pool["allocs"] or pool["peak_bytes"] != t["max_memory_allocated"]
print("  %s: PyTorch's pool in the log: %d allocations, %d frees, peak %d bytes; "
      "torch.cuda.max_memory_allocated() %d: %s" % (name, pool["allocs"], pool["frees"], pool["peak_bytes"],
                                                  t["max_memory_allocated"], "MISMATCH" if bad_pool else "equal"))
# The loop allocates device memory through PyTorch alone: none of it may
# be called the program's leak.
own = [a for a, v in live.items() if v[1] == "at_exit"]
if own:
    print("  %s: %d CUDA blocks live at exit counted as the program's leaks, not PyTorch's" % (name, len(own)))
if missing or own or bad_pool:
    print("torchcuda.sh: MISMATCH (%s)" % name)
    sys.exit(1)
PY
}
echo "What the log holds against PyTorch's own accounting (50 steps, recorded with stacks):"
check segments
check expandable PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
exit $status
