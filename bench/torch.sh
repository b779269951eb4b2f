#!/bin/sh
# SPDX-License-Identifier: MIT
# torch.sh: what recording a PyTorch training loop costs (issue 13's
# target: at most 1.2x native with operators on): bench/torchloop.py, an
# MLP trained on the CPU, timed by its own loop's CPU time (process time:
# the 2-core machine is shared, wall time is not steady), best of
# BENCH_RUNS, run natively; recorded with no msmemscope.torch call;
# recorded with aten operators as launches through the C++ RecordFunction
# callback (ops); through the TorchDispatchMode fallback (dispatch); and
# with track() (operators and roles). Two widths: 32 (a loop of many cheap
# operators: what launches cost) and 512 (a loop of matrix products).
# Not a test. Skipped with a line when torch or the package is missing.
#
# Environment: top_builddir (default .), BENCH_RUNS (default 3),
# BENCH_TORCH_STEPS (width 32, default 300; width 512 runs a tenth).
set -eu

top_builddir=${top_builddir:-.}
srcdir=$(cd "$(dirname "$0")" && pwd)
hooks=${MMS_HOOKS:-$top_builddir/hooks/.libs/libmsmemscope-hooks.so}
pkg=$top_builddir/hooks/python/build
python=${MMS_PYTHON:-/usr/bin/python3}
runs=${BENCH_RUNS:-3}
steps=${BENCH_TORCH_STEPS:-300}

if [ ! -e "$pkg/msmemscope/_msmemscope.so" ] || ! "$python" -c 'import torch' 2>/dev/null; then
	echo "torch.sh: skipped: needs the Python package (python3-dev) and torch (python3-torch)"
	exit 0
fi
PYTHONPATH=$pkg
MSMEMSCOPE_LOG_FORCE=1
export PYTHONPATH MSMEMSCOPE_LOG_FORCE
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msmemscope-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# loop MODE STEPS WIDTH [recorded]: the best loop time of $runs runs.
loop() {
	b=
	i=0
	while [ $i -lt "$runs" ]; do
		if [ "${4:-}" = recorded ]; then
			t=$(env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/t.mms" "$python" "$srcdir/torchloop.py" "$1" "$2" "$3")
		elif [ "${4:-}" = pystack ]; then
			t=$(env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/p.mms" MSMEMSCOPE_CONFIG=python_stack=16 \
				PYTHONMALLOC=malloc PYTHONPATH="$pkg/msmemscope/boot:$pkg" \
				"$python" "$srcdir/torchloop.py" "$1" "$2" "$3")
		else
			t=$("$python" "$srcdir/torchloop.py" "$1" "$2" "$3")
		fi
		b=$(awk -v a="$t" -v b="$b" 'BEGIN { print (b == "" || a < b) ? a : b }')
		i=$((i + 1))
	done
	echo "$b"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }

echo "PyTorch training loop (bench/torchloop.py), loop CPU seconds, best of $runs:"
printf '  %-6s %6s %10s %10s %10s %10s %10s %10s\n' width steps native recorded ops dispatch track python:16
for width in 32 512; do
	n=$steps
	[ "$width" = 32 ] || n=$((steps / 10))
	native=$(loop plain "$n" "$width")
	rec=$(loop plain "$n" "$width" recorded)
	ops=$(loop ops "$n" "$width" recorded)
	disp=$(loop dispatch "$n" "$width" recorded)
	track=$(loop track "$n" "$width" recorded)
	pyst=$(loop plain "$n" "$width" pystack)
	printf '  %-6s %6s %10s %10s %10s %10s %10s %10s\n' "$width" "$n" "$native" "$rec" "$ops" "$disp" "$track" "$pyst"
	printf '  %-6s %6s %10s %10s %10s %10s %10s %10s   (x native; ops and python:16 targets <= 1.2)\n' "" "" 1.00 \
		"$(ratio "$rec" "$native")" "$(ratio "$ops" "$native")" "$(ratio "$disp" "$native")" \
		"$(ratio "$track" "$native")" "$(ratio "$pyst" "$native")"
done
launches=$("$top_builddir/src/msmemscope-replay" "$tmp/t.mms" --summary --json |
	"$python" -c 'import json, sys; d = json.load(sys.stdin); print(d["by_kind"]["op_launch"] // 2, d["allocs"])')
echo "  (the last run, track at width 512: $launches: operator launches and allocations)"
