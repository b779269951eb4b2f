#!/bin/sh
# SPDX-License-Identifier: MIT
# torch.sh: what recording a PyTorch training loop costs (issue 13's
# target: at most 1.2x native with operators on): bench/torchloop.py, an
# MLP trained on the CPU, timed by its own loop's CPU time (process time:
# the 2-core machine is shared, wall time is not steady), BENCH_RUNS
# rounds that each run every mode once, in turn: natively; recorded with
# no msmemscope.torch call;
# recorded with aten operators as launches through the C++ RecordFunction
# callback (ops); through the TorchDispatchMode fallback (dispatch); and
# with track() (operators and roles). Two widths: 32 (a loop of many cheap
# operators: what launches cost) and 512 (a loop of matrix products).
# Not a test. Skipped with a line when torch or the package is missing.
#
# Prints each mode's best loop time and the median over the rounds of its
# ratio to the native run of the same round.
#
# Environment: top_builddir (default .), BENCH_RUNS (default 3),
# BENCH_TORCH_STEPS (width 32, default 1000: about a second natively),
# BENCH_TORCH_WIDE_STEPS (width 512, default 30: about 5 seconds).
set -eu

top_builddir=${top_builddir:-.}
srcdir=$(cd "$(dirname "$0")" && pwd)
hooks=${MMS_HOOKS:-$top_builddir/hooks/.libs/libmsmemscope-hooks.so}
pkg=$top_builddir/hooks/python/build
python=${MMS_PYTHON:-/usr/bin/python3}
runs=${BENCH_RUNS:-3}
steps=${BENCH_TORCH_STEPS:-1000}
wide_steps=${BENCH_TORCH_WIDE_STEPS:-30}

if [ ! -e "$pkg/msmemscope/_msmemscope.so" ] || ! "$python" -c 'import torch' 2>/dev/null; then
	echo "torch.sh: skipped: needs the Python package (python3-dev) and torch (python3-torch)"
	exit 0
fi
. "$srcdir/lib.sh"
PYTHONPATH=$pkg
export PYTHONPATH
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msmemscope-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# once MODE STEPS WIDTH [recorded|pystack]: one run's loop time.
once() {
	if [ "${4:-}" = recorded ]; then
		env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/t.mms" "$python" "$srcdir/torchloop.py" "$1" "$2" "$3"
	elif [ "${4:-}" = pystack ]; then
		env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/p.mms" MSMEMSCOPE_CONFIG=python_stack=16 \
			PYTHONMALLOC=malloc PYTHONPATH="$pkg/msmemscope/boot:$pkg" \
			"$python" "$srcdir/torchloop.py" "$1" "$2" "$3"
	else
		"$python" "$srcdir/torchloop.py" "$1" "$2" "$3"
	fi
}

echo "PyTorch training loop (bench/torchloop.py), loop CPU seconds: the best of $runs rounds that run"
echo "the six modes in turn; the ratios are the medians of the rounds' (the machine's drift moves a round's runs alike):"
printf '  %-6s %6s %10s %10s %10s %10s %10s %10s\n' width steps native recorded ops dispatch track python:16
for width in 32 512; do
	n=$steps
	[ "$width" = 32 ] || n=$wide_steps
	: >"$tmp/rounds"
	r=0
	while [ $r -lt "$runs" ]; do
		line=
		for m in "plain -" "plain recorded" "ops recorded" "dispatch recorded" "track recorded" "plain pystack"; do
			set -- $m
			line="$line $(once "$1" "$n" "$width" "$2" | round_usec)"
		done
		echo $line >>"$tmp/rounds"
		r=$((r + 1))
	done
	printf '  %-6s %6s %10s %10s %10s %10s %10s %10s\n' "$width" "$n" "$(round_best "$tmp/rounds" 1)" \
		"$(round_best "$tmp/rounds" 2)" "$(round_best "$tmp/rounds" 3)" "$(round_best "$tmp/rounds" 4)" \
		"$(round_best "$tmp/rounds" 5)" "$(round_best "$tmp/rounds" 6)"
	printf '  %-6s %6s %10s %10s %10s %10s %10s %10s   (x native; ops and python:16 targets <= 1.2)\n' "" "" \
		1.00 "$(round_ratio "$tmp/rounds" 2 1)" "$(round_ratio "$tmp/rounds" 3 1)" \
		"$(round_ratio "$tmp/rounds" 4 1)" "$(round_ratio "$tmp/rounds" 5 1)" "$(round_ratio "$tmp/rounds" 6 1)"
done
launches=$("$top_builddir/src/msmemscope-replay" "$tmp/t.mms" --summary --json |
	"$python" -c 'import json, sys; d = json.load(sys.stdin); print(d["by_kind"]["op_launch"] // 2, d["allocs"])')
echo "  (the last run, track at width 512: $launches: operator launches and allocations)"
