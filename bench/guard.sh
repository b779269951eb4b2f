#!/bin/sh
# SPDX-License-Identifier: MIT
# guard.sh: what guard mode costs, on mallocbench (one thread) and on the
# sqlite3 CLI running bench/inserts.awk: BENCH_RUNS rounds of native,
# recorded and guard-mode runs in turn (lib.sh's rounds), and guard mode
# with no quarantine (guard_quarantine=0: red zones and bad frees only),
# printed as the best wall time of each and the median of the rounds'
# ratios (the machine's drift moves the runs of one round alike): the
# last shows what the quarantine costs. Then the floor of the design:
# the red zones and a quarantine of guard mode's default size (4 MiB),
# filled and compared, without a recorder: for mallocbench done by the
# loop itself, inline (MALLOCBENCH_GUARD_FLOOR), for sqlite3 by the bare
# preload of bench/floor.c (FLOOR_GUARD, a mark and the size in each
# block's head where guard mode keeps a set of its own), the least any
# guard mode that fills freed blocks pays there. Then the best of
# BENCH_RUNS under valgrind's memcheck (when installed) and, for
# mallocbench, built with gcc -fsanitize=address, over native's best. Not
# a test: `make bench` runs it.
#
# Environment: top_builddir (default .), MMS_FLOOR (the floor preload),
# BENCH_RUNS (default 3), BENCH_GUARD_ITERATIONS (mallocbench
# iterations, default 1000000),
# BENCH_SQLITE_ROWS (default 20000, 0 skips sqlite3), VALGRIND (path, or
# empty to skip), CC (for the ASan build, default cc).
set -eu

top_builddir=${top_builddir:-.}
hooks=${MMS_HOOKS:-$top_builddir/hooks/.libs/libmsmemscope-hooks.so}
floor=${MMS_FLOOR:-$top_builddir/bench/.libs/libmmsfloor.so}
bench=${MMS_MALLOCBENCH:-$top_builddir/bench/mallocbench}
runs=${BENCH_RUNS:-3}
iterations=${BENCH_GUARD_ITERATIONS:-1000000}
rows=${BENCH_SQLITE_ROWS:-20000}
valgrind=${VALGRIND-$(command -v valgrind || true)}
sqlite=$(command -v sqlite3 || true)
srcdir=$(dirname "$0")

for f in "$hooks" "$bench" "$floor"; do
	[ -e "$f" ] || { echo "guard.sh: $f is not built; run make bench" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msmemscope-bench-guard.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

. "$srcdir/lib.sh"

# row NAME ROUNDS VALGRIND ASAN: one line of figures: the best times of
# native, recorded and guard runs (columns 1 to 3 of ROUNDS, rounds'
# output), their ratios as medians of the rounds' ratios, and valgrind's
# and ASan's best times over native's.
row() {
	_n=$(round_best "$2" 1)
	printf '%-12s native %ss  recorded %ss  guard %ss  guard/native %s  guard/recorded %s' \
		"$1" "$_n" "$(round_best "$2" 2)" "$(round_best "$2" 3)" "$(round_ratio "$2" 3 1)" "$(round_ratio "$2" 3 2)"
	printf '  no quarantine/native %s' "$(round_ratio "$2" 4 1)"
	[ "$(awk 'NR == 1 { print NF }' "$2")" -lt 5 ] || printf '  floor/native %s' "$(round_ratio "$2" 5 1)"
	[ "$3" = - ] || printf '  valgrind/native %s' "$(ratio "$3" "$_n")"
	[ "$4" = - ] || printf '  asan/native %s' "$(ratio "$4" "$_n")"
	printf '\n'
}

rec() { env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/r.mms" "$@"; }
guard() { env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/g.mms" MSMEMSCOPE_CONFIG=guard=1 "$@"; }
guard0() { env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/g.mms" MSMEMSCOPE_CONFIG="guard=1;guard_quarantine=0" "$@"; }
memcheck() { "$valgrind" -q --tool=memcheck "$@"; }

echo "== guard mode: red zones, quarantine, checks (targets: <= 2.5x native on mallocbench, <= 1.5x on sqlite3)"

rounds "\"\$bench\" 1 \$iterations" "rec \"\$bench\" 1 \$iterations" "guard \"\$bench\" 1 \$iterations" \
	"guard0 \"\$bench\" 1 \$iterations" "MALLOCBENCH_GUARD_FLOOR=4194304 \"\$bench\" 1 \$iterations" \
	>"$tmp/mallocbench.rounds"
v=-
[ -z "$valgrind" ] || v=$(best memcheck "$bench" 1 "$iterations")
a=-
if ${CC:-cc} -O2 -fsanitize=address -o "$tmp/mallocbench-asan" "$srcdir/mallocbench.c" -pthread 2>/dev/null; then
	a=$(best "$tmp/mallocbench-asan" 1 "$iterations")
fi
row mallocbench "$tmp/mallocbench.rounds" "$v" "$a"

if [ -n "$sqlite" ] && [ "$rows" -gt 0 ]; then
	awk -v n="$rows" -v pad=100 -f "$srcdir/inserts.awk" >"$tmp/inserts.sql"
	# -batch -init /dev/null: no ~/.sqliterc, no prompts, as run.sh runs it.
	sq() { "$@" "$sqlite" -batch -init /dev/null :memory: <"$tmp/inserts.sql"; }
	rounds "sq env" "sq rec" "sq guard" "sq guard0" "sq env LD_PRELOAD=\"\$floor\" FLOOR_GUARD=4194304" \
		>"$tmp/sqlite3.rounds"
	v=-
	[ -z "$valgrind" ] || v=$(best sq memcheck)
	row sqlite3 "$tmp/sqlite3.rounds" "$v" -
else
	echo "sqlite3      skipped: sqlite3 is not installed (or BENCH_SQLITE_ROWS=0)"
fi
