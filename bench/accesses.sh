#!/bin/sh
# SPDX-License-Identifier: MIT
# accesses.sh: measures the analyses that need accesses and owners on
# logs of bench/anbench (operator launches, owners, heap blocks and
# accesses: 8 events per iteration): events per second on one core and
# the anonymous memory of decompose and inefficient (bench/analysisbench),
# on 20 and 40 million events over 1000 live blocks (memory must not grow
# with the log) and on 20 million over 100000 live blocks (it follows
# them); then the wall time of the CLI as a user runs it. Not a test:
# `make bench` runs it.
#
# Environment: top_builddir (default .), BENCH_AN_ITERATIONS (default
# 2500000), BENCH_RUNS (default 3).
set -eu

top_builddir=${top_builddir:-.}
hooks=${MMS_HOOKS:-$top_builddir/hooks/.libs/libmsmemscope-hooks.so}
replay=${MMS_REPLAY:-$top_builddir/src/msmemscope-replay}
anbench=$top_builddir/bench/anbench
analysisbench=$top_builddir/bench/analysisbench
iterations=${BENCH_AN_ITERATIONS:-2500000}
runs=${BENCH_RUNS:-3}

for f in "$hooks" "$replay" "$anbench" "$analysisbench"; do
	[ -e "$f" ] || { echo "accesses.sh: $f is not built; run make bench" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msmemscope-bench-accesses.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# record NAME ITERATIONS LIVE
record() {
	env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/$1.mms" MSMEMSCOPE_CONFIG="events=alloc,free,launch,access" \
		"$anbench" "$2" "$3" >/dev/null
}

. "$(dirname "$0")/lib.sh"

for spec in "a $iterations 1000" "b $((iterations * 2)) 1000" "c $iterations 100000"; do
	set -- $spec
	echo "== anbench $2 iterations over $3 live blocks"
	record "$1" "$2" "$3"
	"$analysisbench" "$tmp/$1.mms"
done

events=$("$replay" "$tmp/a.mms" --summary --json | sed 's/^{"events":\([0-9]*\),.*/\1/')
for a in decompose inefficient; do
	t=$(best "$replay" "$tmp/a.mms" --analysis $a)
	awk -v t="$t" -v n="$events" -v a="$a" \
		'BEGIN { printf "msmemscope-replay --analysis %s on %d events: %.3f s, %.1f million events/s (target >= 5)\n", a, n, t, n / t / 1e6 }'
done
