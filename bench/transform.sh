#!/bin/sh
# SPDX-License-Identifier: MIT
# transform.sh: measures `msmemscope-replay transform csv` (one streaming
# pass, as memray's transform) on a log of 20 million events (mallocbench,
# one thread, no stacks): events per second for the peak, the leaks and
# the temporary allocations (threshold 1), best of BENCH_RUNS, against the
# 5 million events/s target. Not a test: `make bench` runs it.
#
# Environment: top_builddir (default .), BENCH_REPLAY_ITERATIONS (default
# 10000000: two events each), BENCH_RUNS (default 3).
set -eu

top_builddir=${top_builddir:-.}
hooks=${MMS_HOOKS:-$top_builddir/hooks/.libs/libmsmemscope-hooks.so}
# Runs write the same log again: let the recorder replace it.
MSMEMSCOPE_LOG_FORCE=1
export MSMEMSCOPE_LOG_FORCE
replay=${MMS_REPLAY:-$top_builddir/src/msmemscope-replay}
bench=${MMS_MALLOCBENCH:-$top_builddir/bench/mallocbench}
iterations=${BENCH_REPLAY_ITERATIONS:-10000000}
runs=${BENCH_RUNS:-3}

for f in "$hooks" "$replay" "$bench"; do
	[ -e "$f" ] || { echo "transform.sh: $f is not built; run make bench" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msmemscope-bench-transform.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "== transform: mallocbench 1 thread x $iterations iterations, recorded without stacks"
env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/big.mms" "$bench" 1 "$iterations" >/dev/null
events=$("$replay" "$tmp/big.mms" --summary --json | sed 's/^{"events":\([0-9]*\),.*/\1/')
echo "log            $events events"

# best CMD...: the best wall time of $runs runs, in microseconds.
best() {
	b=
	i=0
	while [ $i -lt "$runs" ]; do
		rm -f "$tmp/out"
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		t=$(((t1 - t0) / 1000))
		if [ -z "$b" ] || [ $t -lt "$b" ]; then b=$t; fi
		i=$((i + 1))
	done
	echo "$b"
}

for sel in "peak:" "leaks:--leaks" "temporary:--temporary-allocations"; do
	name=${sel%%:*}
	opt=${sel#*:}
	us=$(best "$replay" transform csv $opt -o "$tmp/out" "$tmp/big.mms")
	awk -v n="$name" -v us="$us" -v ev="$events" 'BEGIN {
		printf "transform csv %-10s %.3f s  %.1f million events/s (target >= 5)\n", n, us / 1e6, ev / us }'
done
