#!/bin/sh
# SPDX-License-Identifier: MIT
# replaylogs.sh: measures replay through the heap state on logs of real
# programs with many live blocks: Debian's perl building a hash of 300,000
# keys three times and deleting two thirds of each round, /usr/bin/python3
# with PYTHONMALLOC=malloc building dicts and lists of a few hundred
# thousand objects, and the sqlite3 CLI running bench/inserts.awk into an
# in-memory database of 512-byte pages. Each is recorded without stacks,
# then bench/statebench prints events per CPU second (median of
# BENCH_RUNS replays), the same over a bare table's beside each run (the
# floor: what this machine's memory allows) and the anonymous memory per
# live block; then the
# CPU time of `msmemscope-replay LOG --analysis
# leaks,decompose,inefficient,watermark,usage,leakage` over that of
# `--summary` on the same log (target: at most 1.5x), in BENCH_PAIRS
# pairs of runs (a pair's ratio moves by a few percent here), user time,
# user + system time and wall time (on a guest the system time
# moves with the host's memory: the zeroing of fresh pages took from 0.01
# to 0.4 s of the same run). A program that is not installed is skipped,
# saying so. Not a test: `make bench` runs it.
#
# Environment: top_builddir (default .), BENCH_RUNS (default 5),
# BENCH_PAIRS (default 9),
# BENCH_PERL, BENCH_PYTHON, BENCH_SQLITE (the programs; empty skips one).
set -eu

top_builddir=${top_builddir:-.}
hooks=${MMS_HOOKS:-$top_builddir/hooks/.libs/libmsmemscope-hooks.so}
statebench=${MMS_STATEBENCH:-$top_builddir/bench/statebench}
replay=${MMS_REPLAY:-$top_builddir/src/msmemscope-replay}
runs=${BENCH_RUNS:-5}
pairs=${BENCH_PAIRS:-9}
perl=${BENCH_PERL-/usr/bin/perl}
python=${BENCH_PYTHON-/usr/bin/python3}
sqlite=${BENCH_SQLITE-$(command -v sqlite3 || true)}
srcdir=$(dirname "$0")

for f in "$hooks" "$statebench" "$replay"; do
	[ -e "$f" ] || { echo "replaylogs.sh: $f is not built; run make bench" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msmemscope-bench-replaylogs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

. "$srcdir/lib.sh"

# The six analyses' time over the summary's: of the program itself.
if [ -z "${MMS_REPLAY:-}" ]; then
	unwrap "$replay" "$top_builddir/replay/.libs"
	replay=$unwrapped
fi

six=leaks,decompose,inefficient,watermark,usage,leakage

# replay NAME: replays $tmp/NAME.mms and prints the figure with its target,
# then the six analyses' time over the summary's.
replay() {
	printf '%-8s ' "$1"
	"$statebench" "$tmp/$1.mms" "$runs"
	_n=$1
	# shellcheck disable=SC2046 # the six figures
	set -- $(runs=$pairs cpu_pairs "$replay $tmp/$_n.mms --analysis $six --force --output-dir $tmp" \
		"$replay $tmp/$_n.mms --summary")
	printf '%-8s --analysis %s over --summary (target <= 1.5x), medians of %s pairs:\n' "$_n" "$six" "$pairs"
	printf '%-8s   user CPU s %s over %s: %sx; user + system %s over %s: %sx; wall %s over %s: %sx\n' "" "$1" "$2" "$3" \
		"$4" "$5" "$6" "$7" "$8" "$9"
}

echo "== replay of real programs' logs through the heap state (target >= 25 million events/s, one core)"

if [ -n "$perl" ] && [ -x "$perl" ]; then
	env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/perl.mms" "$perl" -e "$perl_hash" >/dev/null
	replay perl
else
	echo "perl     skipped: ${perl:-perl} is not installed"
fi

if [ -n "$python" ] && [ -x "$python" ]; then
	env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/python3.mms" PYTHONMALLOC=malloc "$python" -c "$python_dicts" >/dev/null
	replay python3
else
	echo "python3  skipped: ${python:-python3} is not installed"
fi

if [ -n "$sqlite" ] && [ -x "$sqlite" ]; then
	awk -v n=150000 -v pad=200 -f "$srcdir/inserts.awk" >"$tmp/inserts.sql"
	env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$tmp/sqlite3.mms" "$sqlite" -cmd 'PRAGMA page_size=512' :memory: \
		<"$tmp/inserts.sql" >/dev/null
	replay sqlite3
else
	echo "sqlite3  skipped: sqlite3 is not installed"
fi
