#!/bin/sh
# SPDX-License-Identifier: MIT
# gdb.sh: measures what watching a block costs in a gdb session: the whole
# batch session (start, run to main, arm, run to the end) of bench/opbench
# (LAUNCHES operator launches, 3 of which change the watched 64 KiB block)
# with the recorder preloaded and the block watched through the hooks'
# descriptor, against the same session of the same program without the
# recorder. Prints wall times and the ratio (see below) against its
# target (<= 3.0), and the stops seen (must be 3), plus the session with
# the recorder and nothing armed; then the same watch as a user sets it,
# `memscope watch` under memscope.gdb (the whole session: target <= 1.5,
# issue 16), and the time `memscope leaks` takes
# on a process holding 100,000 live blocks (bench/holdbench; target 2 s).
# Not a test: `make bench` runs it.
#
# The sessions run in turn, BENCH_RUNS rounds (lib.sh's rounds): each
# time is the best of its series, each ratio the median of the rounds'.
#
# Environment: top_builddir (default .), BENCH_LAUNCHES (default 100000),
# BENCH_RUNS (default 3), GDB (default gdb).
set -eu

top_builddir=${top_builddir:-.}
hooks=${MMS_HOOKS:-$top_builddir/hooks/.libs/libmsmemscope-hooks.so}
bench=${MMS_OPBENCH:-$top_builddir/bench/opbench}
holdbench=${MMS_HOLDBENCH:-$top_builddir/bench/holdbench}
memscope_gdb=${MMS_GDB_SCRIPT:-$top_builddir/gdb/memscope.gdb}
launches=${BENCH_LAUNCHES:-100000}
runs=${BENCH_RUNS:-3}
gdb=${GDB:-gdb}

command -v "$gdb" >/dev/null 2>&1 || { echo "gdb.sh: gdb is not installed (apt-get install gdb); skipped"; exit 0; }
for f in "$hooks" "$bench"; do
	[ -e "$f" ] || { echo "gdb.sh: $f is not built; run make bench" >&2; exit 2; }
done
# Absolute: the sessions run in the temporary folder.
abs() { case $1 in /*) echo "$1" ;; *) echo "$(pwd)/$1" ;; esac; }
hooks=$(abs "$hooks")
bench=$(abs "$bench")
holdbench=$(abs "$holdbench")
memscope_gdb=$(abs "$memscope_gdb")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msmemscope-bench-gdb.XXXXXX")
# memscope.gdb's logs go under $XDG_STATE_HOME: the bench's own folder.
XDG_STATE_HOME=$tmp/state
export XDG_STATE_HOME
trap 'rm -rf "$tmp"' EXIT
eval "$("$bench" offsets)"

# script MODE: the gdb commands of a session: native (no recorder),
# idle (recorder, nothing armed) or watch (recorder, the block watched,
# counting the stops).
script() {
	echo "set pagination off"
	echo "set confirm off"
	[ "$1" = native ] || echo "set exec-wrapper env LD_PRELOAD=$hooks MSMEMSCOPE_LOG=$tmp/bench.mms"
	echo "break main"
	echo "run"
	echo "set \$n = 0"
	if [ "$1" = watch ]; then
		w="(char *)(unsigned long)&msmemscope_gdb + $off_watch"
		cat <<EOF
set var *(unsigned long long *)($w + $w_addr) = (unsigned long long)&opbench_block
set var *(unsigned long long *)($w + $w_size) = 65536
set var *(unsigned long long *)($w + $w_generation) = *(unsigned long long *)($w + $w_generation) + 1
set var *(unsigned int *)((char *)(unsigned long)&msmemscope_gdb + $off_armed) = 1
break msmemscope_gdb_stopped
commands
silent
set \$n = \$n + 1
continue
end
EOF
	fi
	echo "continue"
	printf '%s\n' 'printf "stops=%d\n", $n'
}

for mode in native idle watch; do
	script $mode >"$tmp/$mode.gdb"
done
# The user's way: memscope.gdb and `memscope watch`, continuing after each
# stop until the program exits.
{
	echo "set pagination off"
	echo "set confirm off"
	echo "source $memscope_gdb"
	echo "break main"
	echo "run"
	echo "memscope watch opbench_block 65536"
	echo "while 1"
	echo "continue"
	echo "end"
} >"$tmp/memscope.gdb"

. "$(dirname "$0")/lib.sh"

# session MODE: one gdb session of MODE, its output in $tmp/MODE.out.
session() {
	rm -f "$tmp/bench.mms"
	# The memscope session ends with an error (continue after the
	# exit): it is judged by its output instead.
	(cd "$tmp" && "$gdb" -nx -batch -x "$tmp/$1.gdb" --args "$bench" "$launches") >"$tmp/$1.out" \
		2>"$tmp/$1.err" || [ "$1" = memscope ] || {
		echo "gdb.sh: the $1 session failed: $(tail -3 "$tmp/$1.err")" >&2
		exit 1
	}
}

echo "== gdb: opbench $launches launches, one 64 KiB block watched, 3 launches change it"
echo "   (best of $runs rounds of the sessions in turn; ratios: the median of the rounds')"
if [ -f "$memscope_gdb" ]; then
	rounds "session native" "session idle" "session watch" "session memscope" >"$tmp/rounds"
else
	rounds "session native" "session idle" "session watch" >"$tmp/rounds"
fi
stops=$(sed -n 's/^stops=//p' "$tmp/watch.out")
printf 'gdb session, no recorder       %8s s\n' "$(round_best "$tmp/rounds" 1)"
printf 'gdb session, recorder idle     %8s s  (%s x)\n' "$(round_best "$tmp/rounds" 2)" "$(round_ratio "$tmp/rounds" 2 1)"
printf 'gdb session, block watched     %8s s  (%s x, target <= 3.0)\n' "$(round_best "$tmp/rounds" 3)" \
	"$(round_ratio "$tmp/rounds" 3 1)"
printf 'stops while watching           %8s    (expected 3)\n' "${stops:-?}"

if [ -f "$memscope_gdb" ]; then
	mstops=$(grep -c 'changed in operator' "$tmp/memscope.out" || true)
	printf 'memscope.gdb, memscope watch   %8s s  (%s x, target <= 1.5), %s stops (expected 3)\n' \
		"$(round_best "$tmp/rounds" 4)" "$(round_ratio "$tmp/rounds" 4 1)" "$mstops"
	if [ -x "$holdbench" ]; then
		{
			echo "set pagination off"
			echo "source $memscope_gdb"
			echo "break holdbench_ready"
			echo "run"
			echo "python import time; t0 = time.time()"
			echo "memscope leaks full"
			echo 'python print("leaks_seconds=%.3f" % (time.time() - t0))'
		} >"$tmp/leaks.gdb"
		(cd "$tmp" && "$gdb" -nx -batch -x "$tmp/leaks.gdb" --args "$holdbench" 100000) >"$tmp/leaks.out" 2>&1 || true
		printf 'memscope leaks, 100000 live blocks %6s s  (target < 2 s)\n' \
			"$(sed -n 's/^leaks_seconds=//p' "$tmp/leaks.out")"
		grep -m1 'memscope: all live blocks' "$tmp/leaks.out" || true
	fi
else
	echo "gdb.sh: $memscope_gdb is not built; the memscope.gdb sessions are skipped"
fi
