#!/bin/sh
# SPDX-License-Identifier: MIT
# replay.sh: measures replay on a log of 20 million events (mallocbench,
# one thread, 20 steps, no stacks): events per second through the heap
# state, the index build, seeks with the index loaded, memory; then the
# wall time of `msmemscope-replay LOG --step N` and `--event N` as a user
# runs them once the index exists (best of BENCH_RUNS), against the 0.5 s
# target. Not a test: `make bench` runs it after run.sh.
#
# Environment: top_builddir (default .), BENCH_REPLAY_ITERATIONS (default
# 10000000: two events each), BENCH_RUNS (default 3).
set -eu

top_builddir=${top_builddir:-.}
hooks=${MMS_HOOKS:-$top_builddir/hooks/.libs/libmsmemscope-hooks.so}
replay=${MMS_REPLAY:-$top_builddir/src/msmemscope-replay}
bench=${MMS_MALLOCBENCH:-$top_builddir/bench/mallocbench}
replaybench=${MMS_REPLAYBENCH:-$top_builddir/bench/replaybench}
iterations=${BENCH_REPLAY_ITERATIONS:-10000000}
runs=${BENCH_RUNS:-3}

for f in "$hooks" "$replay" "$bench" "$replaybench"; do
	[ -e "$f" ] || { echo "replay.sh: $f is not built; run make bench" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msmemscope-bench-replay.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "== replay: mallocbench 1 thread x $iterations iterations, 20 steps, recorded without stacks"
env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/big.mms" MALLOCBENCH_STEPS=20 "$bench" 1 "$iterations" >/dev/null
ls -l "$tmp/big.mms" | awk '{ printf "log size       %.1f MiB\n", $5 / 1048576 }'
"$replaybench" "$tmp/big.mms" 20

. "$(dirname "$0")/lib.sh"

events=$("$replay" "$tmp/big.mms" --summary --json | sed 's/^{"events":\([0-9]*\),.*/\1/')
s=$(best "$replay" "$tmp/big.mms" --step 13)
e=$(best "$replay" "$tmp/big.mms" --event $((events * 3 / 4)))
echo "msmemscope-replay --step 13: ${s} s, --event $((events * 3 / 4)): ${e} s (target < 0.5 s each, index present)"
