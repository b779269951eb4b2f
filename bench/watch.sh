#!/bin/sh
# SPDX-License-Identifier: MIT
# watch.sh: what --watch costs the recorder, on bench/opbench (LAUNCHES
# short operator launches): wall times (best of BENCH_RUNS) of the
# program with the recorder and no watch, with --watch given but nothing
# to watch (opbench's START operator has no outputs), and with a block of
# 256 bytes and of 64 KiB watched (msmemscope_watch(), so checksummed
# before and after every launch), each with its ratio to the recorder
# alone; then the watch analysis's speed, in events per second, over a
# log of a million launches with 256 bytes watched. Not a test: `make bench` runs it.
#
# Environment: top_builddir (default .), BENCH_LAUNCHES (default 1000000),
# BENCH_RUNS (default 3).
set -eu

top_builddir=${top_builddir:-.}
hooks=${MMS_HOOKS:-$top_builddir/hooks/.libs/libmsmemscope-hooks.so}
bench=${MMS_OPBENCH:-$top_builddir/bench/opbench}
replay=${MMS_REPLAY:-$top_builddir/src/msmemscope-replay}
launches=${BENCH_LAUNCHES:-1000000}
runs=${BENCH_RUNS:-3}
for f in "$hooks" "$bench" "$replay"; do
	[ -e "$f" ] || { echo "watch.sh: $f is not built; run make bench" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msmemscope-bench-watch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/lib.sh"

rec() { # rec CONFIG-EXTRA WATCH-BYTES
	env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/w.mms" MSMEMSCOPE_CONFIG="events=alloc,free,launch$1" \
		${2:+OPBENCH_WATCH=$2} "$bench" "$launches"
}

echo "== watch: opbench, $launches launches, best of $runs"
base=$(best rec "" "")
echo "recorder, no --watch           $base s"
for c in "--watch, nothing watched|;watch=embed,norm|" "256 B watched|;watch=embed,norm|256" \
	"64 KiB watched|;watch=embed,norm|65536"; do
	name=${c%%|*}
	rest=${c#*|}
	t=$(best rec "${rest%%|*}" "${rest#*|}")
	printf '%-30s %s s  ratio %s\n' "$name" "$t" "$(ratio "$t" "$base")"
done
# The analysis over a larger log: 1,000,000 launches, 256 B watched (2
# million launch events, 2 million checksums, as many CSV rows).
launches=1000000
rec ";watch=embed,norm" 256 >/dev/null
events=$("$replay" "$tmp/w.mms" --summary --json | sed -n 's/.*"events":\([0-9]*\).*/\1/p')
t=$(best "$replay" "$tmp/w.mms" --analysis watch --output-dir "$tmp" --force)
echo "watch analysis: $events events in $t s, $(awk -v e="$events" -v t="$t" 'BEGIN { printf "%.1f", e / t / 1e6 }') M events/s"
