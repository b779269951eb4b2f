#!/bin/sh
# SPDX-License-Identifier: MIT
# guard.sh: what guard mode costs, on mallocbench (one thread) and on the
# sqlite3 CLI running bench/inserts.awk: the best wall time of BENCH_RUNS
# runs of each program natively, recorded, recorded in guard mode, under
# valgrind's memcheck (when installed) and, for mallocbench, built with
# gcc -fsanitize=address; then the ratios to native and to recording. Not
# a test: `make bench` runs it.
#
# Environment: top_builddir (default .), BENCH_RUNS (default 3),
# BENCH_GUARD_ITERATIONS (mallocbench iterations, default 1000000),
# BENCH_SQLITE_ROWS (default 20000, 0 skips sqlite3), VALGRIND (path, or
# empty to skip), CC (for the ASan build, default cc).
set -eu

top_builddir=${top_builddir:-.}
hooks=${MMS_HOOKS:-$top_builddir/hooks/.libs/libmsmemscope-hooks.so}
bench=${MMS_MALLOCBENCH:-$top_builddir/bench/mallocbench}
runs=${BENCH_RUNS:-3}
iterations=${BENCH_GUARD_ITERATIONS:-1000000}
rows=${BENCH_SQLITE_ROWS:-20000}
valgrind=${VALGRIND-$(command -v valgrind || true)}
sqlite=$(command -v sqlite3 || true)
srcdir=$(dirname "$0")

for f in "$hooks" "$bench"; do
	[ -e "$f" ] || { echo "guard.sh: $f is not built; run make bench" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msmemscope-bench-guard.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

. "$srcdir/lib.sh"

# row NAME NATIVE RECORDED GUARD VALGRIND ASAN: one line of figures.
row() {
	printf '%-12s native %ss  recorded %ss  guard %ss  guard/native %s  guard/recorded %s' \
		"$1" "$2" "$3" "$4" "$(ratio "$4" "$2")" "$(ratio "$4" "$3")"
	[ "$5" = - ] || printf '  valgrind/native %s' "$(ratio "$5" "$2")"
	[ "$6" = - ] || printf '  asan/native %s' "$(ratio "$6" "$2")"
	printf '\n'
}

rec() { env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/r.mms" "$@"; }
guard() { env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/g.mms" MSMEMSCOPE_CONFIG=guard=1 "$@"; }
memcheck() { "$valgrind" -q --tool=memcheck "$@"; }

echo "== guard mode: red zones, quarantine, checks (targets: <= 2.5x native on mallocbench, <= 1.5x on sqlite3)"

n=$(best "$bench" 1 "$iterations")
r=$(best rec "$bench" 1 "$iterations")
g=$(best guard "$bench" 1 "$iterations")
v=-
[ -z "$valgrind" ] || v=$(best memcheck "$bench" 1 "$iterations")
a=-
if ${CC:-cc} -O2 -fsanitize=address -o "$tmp/mallocbench-asan" "$srcdir/mallocbench.c" -pthread 2>/dev/null; then
	a=$(best "$tmp/mallocbench-asan" 1 "$iterations")
fi
row mallocbench "$n" "$r" "$g" "$v" "$a"

if [ -n "$sqlite" ] && [ "$rows" -gt 0 ]; then
	awk -v n="$rows" -v pad=100 -f "$srcdir/inserts.awk" >"$tmp/inserts.sql"
	sq() { "$@" "$sqlite" :memory: <"$tmp/inserts.sql"; }
	n=$(best sq env)
	r=$(best sq rec)
	g=$(best sq guard)
	v=-
	[ -z "$valgrind" ] || v=$(best sq memcheck)
	row sqlite3 "$n" "$r" "$g" "$v" -
else
	echo "sqlite3      skipped: sqlite3 is not installed (or BENCH_SQLITE_ROWS=0)"
fi
