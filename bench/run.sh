#!/bin/sh
# SPDX-License-Identifier: MIT
# run.sh: measures, in one run, what recording costs against native on a
# malloc-heavy loop (bench/mallocbench, 1 and 2 threads) and on sqlite3
# inserts: recorded without stacks, recorded with C stacks of depth 32, and
# heaptrack on the same workload when installed; prints wall times (best
# of BENCH_RUNS), the ratios with their targets, log bytes per event, and
# the floors: what a bare preload (bench/floor.c) costs on this machine.
# Not a test: nothing here fails on a slow machine. `make bench` runs it.
#
# Environment: top_builddir (default .), BENCH_ITERATIONS (per thread,
# default 3000000), BENCH_RUNS (default 3), BENCH_SQLITE_ROWS (default
# 100000, 0 to skip), HEAPTRACK (default: heaptrack on PATH).
set -eu

top_builddir=${top_builddir:-.}
srcdir=$(cd "$(dirname "$0")" && pwd)
hooks=${MMS_HOOKS:-$top_builddir/hooks/.libs/libmsmemscope-hooks.so}
# Runs write the same log again: let the recorder replace it.
MSMEMSCOPE_LOG_FORCE=1
export MSMEMSCOPE_LOG_FORCE
replay=${MMS_REPLAY:-$top_builddir/src/msmemscope-replay}
bench=${MMS_MALLOCBENCH:-$top_builddir/bench/mallocbench}
floor=${MMS_FLOOR:-$top_builddir/bench/.libs/libmmsfloor.so}
iterations=${BENCH_ITERATIONS:-3000000}
runs=${BENCH_RUNS:-3}
rows=${BENCH_SQLITE_ROWS:-100000}
heaptrack=${HEAPTRACK:-$(command -v heaptrack || true)}

for f in "$hooks" "$replay" "$bench" "$floor"; do
	[ -e "$f" ] || { echo "run.sh: $f is not built; run make bench" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "run.sh: python3 is needed to read the summary" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msmemscope-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

now_ns() { date +%s%N; }

# best MODE CMD...: the best wall time (seconds) of $runs runs of CMD, run
# natively, recorded (rec), recorded with stacks (stacks), under heaptrack
# (heaptrack), or under the bare floor preload (bench/floor.c): its ring
# (floor), writing the recorder's record shape into a log file (floorlog),
# or its ring with stacks (floorstk). The last recorded log is left in
# $tmp/$MODE.mms.
best() {
	mode=$1
	shift
	b=
	i=0
	while [ $i -lt "$runs" ]; do
		rm -f "$tmp/$mode.mms" "$tmp"/ht.* "$tmp/floor.log"
		t0=$(now_ns)
		case $mode in
		native) "$@" >/dev/null ;;
		rec) env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/rec.mms" "$@" >/dev/null ;;
		stacks) env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/stacks.mms" \
			MSMEMSCOPE_CONFIG="call_stack=32" "$@" >/dev/null ;;
		heaptrack) "$heaptrack" -o "$tmp/ht" "$@" >/dev/null 2>&1 ;;
		floor) env LD_PRELOAD="$floor" "$@" >/dev/null ;;
		floorlog) env LD_PRELOAD="$floor" FLOOR_LOG="$tmp/floor.log" "$@" >/dev/null ;;
		floorstk) env LD_PRELOAD="$floor" FLOOR_STACKS=32 "$@" >/dev/null ;;
		esac
		t1=$(now_ns)
		t=$(((t1 - t0) / 1000))
		if [ -z "$b" ] || [ $t -lt "$b" ]; then b=$t; fi
		i=$((i + 1))
	done
	awk -v us="$b" 'BEGIN { printf "%.3f", us / 1e6 }'
}

# per_event LOG: log bytes per recorded event.
per_event() {
	"$replay" "$1" --summary --json 2>/dev/null | python3 -c '
import json, os, sys
d = json.load(sys.stdin)
print("%.2f" % (os.path.getsize(sys.argv[1]) / max(d["events"], 1)))' "$1"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }

# row NAME CMD...: measures one workload and prints its line.
row() {
	name=$1
	shift
	n=$(best native "$@")
	r=$(best rec "$@")
	bpe=$(per_event "$tmp/rec.mms")
	s=$(best stacks "$@")
	if [ -n "$heaptrack" ]; then
		h=$(best heaptrack "$@")
		hs=$(ratio "$h" "$s")
	else
		h=-
		hs=-
	fi
	f=$(best floor "$@")
	fl=$(best floorlog "$@")
	fs=$(best floorstk "$@")
	printf '%-22s %8s %9s %9s %10s %9s %9s %9s %9s %9s %9s %9s\n' "$name" "$n" "$r" "$s" "$h" \
		"$(ratio "$r" "$n")" "$(ratio "$s" "$n")" "$hs" "$bpe" "$(ratio "$f" "$n")" "$(ratio "$fl" "$n")" \
		"$(ratio "$fs" "$n")"
}

echo "msmemscope bench: best of $runs runs, wall seconds; $(nproc) cores, $(uname -r)"
[ -n "$heaptrack" ] || echo "(heaptrack is not installed: apt-get install heaptrack to compare with it)"
printf '%-22s %8s %9s %9s %10s %9s %9s %9s %9s %9s %9s %9s\n' workload native recorded stacks32 heaptrack \
	rec/nat stk/nat ht/stk B/event floor floorlog floorstk
printf '%-22s %8s %9s %9s %10s %9s %9s %9s %9s %9s %9s %9s\n' "(targets)" "" "" "" "" "<=1.5" "<=4.0" ">=5" "<=12" \
	"(/nat)" "(/nat)" "(/nat)"
for threads in 1 2; do
	row "mallocbench ${threads}t" "$bench" $threads "$iterations"
done
if [ "$rows" -gt 0 ] && command -v sqlite3 >/dev/null; then
	awk -v n="$rows" -f "$srcdir/inserts.awk" >"$tmp/inserts.sql"
	row "sqlite3 ${rows} inserts" sqlite3 -batch -init /dev/null :memory: ".read $tmp/inserts.sql"
fi
echo "floor: a bare preload (malloc and free only: rdtsc and a 16-byte store into a reused thread-local"
echo "ring), the least any recorder pays here; floorlog: the same writing the recorder's records into a"
echo "shared file mapping instead (the least this log format costs written inline); floorstk: floor with"
echo "unw_backtrace of 32 frames."
