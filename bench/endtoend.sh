#!/bin/sh
# SPDX-License-Identifier: MIT
# endtoend.sh: what a user waits for, end to end: `msmemscope -- prog` with
# the default report (record, then the summary and leaks on stderr) against
# the program alone and against heaptrack, on the workloads of
# bench/replaylogs.sh: Debian's perl building a hash of 300,000 keys three
# times and deleting two thirds of each round, and /usr/bin/python3 with
# PYTHONMALLOC=malloc (for every run, native included) building dicts and
# lists. heaptrack is timed as `heaptrack prog` (it records, then prints
# the command to analyse) and with `heaptrack_print` on its output after
# it: the fair "record + report"; msmemscope is also timed with
# --no-live-report (ms-after: the log read only after the exit, where
# the default reads it while the program runs). The runs alternate
# (native, msmemscope, msmemscope --no-live-report,
# heaptrack, heaptrack_print, then again) and each figure is the median
# of BENCH_RUNS wall times; the ratios come from this one run. Targets:
# msmemscope at most 1.5x native, and faster than heaptrack. A program
# that is not installed is skipped, saying so; without heaptrack its
# columns say "-". Not a test: `make bench` runs it.
#
# Environment: top_builddir (default .), BENCH_RUNS (default 5),
# BENCH_PERL, BENCH_PYTHON (the programs; empty skips one), HEAPTRACK
# (default: heaptrack on PATH), MMS_LAUNCHER, MMS_HOOKS.
set -eu

top_builddir=${top_builddir:-.}
hooks=${MMS_HOOKS:-$top_builddir/hooks/.libs/libmsmemscope-hooks.so}
launcher=${MMS_LAUNCHER:-$top_builddir/src/msmemscope}
runs=${BENCH_RUNS:-5}
perl=${BENCH_PERL-/usr/bin/perl}
python=${BENCH_PYTHON-/usr/bin/python3}
heaptrack=${HEAPTRACK-$(command -v heaptrack || true)}
heaptrack_print=$(command -v heaptrack_print || true)
srcdir=$(dirname "$0")

for f in "$hooks" "$launcher"; do
	[ -e "$f" ] || { echo "endtoend.sh: $f is not built; run make bench" >&2; exit 2; }
done
# The launcher of the build tree preloads the recorder of the build tree.
MSMEMSCOPE_HOOKS=$(cd "$(dirname "$hooks")" && pwd)/$(basename "$hooks")
export MSMEMSCOPE_HOOKS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msmemscope-bench-endtoend.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

. "$srcdir/lib.sh"

if [ -z "$heaptrack" ] || [ ! -x "$heaptrack" ]; then
	echo "heaptrack is not installed: its columns are skipped (-)"
	heaptrack=
elif [ -z "$heaptrack_print" ]; then
	echo "heaptrack_print is not installed: heaptrack+print is skipped (-)"
fi

# secs CMD...: runs CMD (stdout and stderr into $tmp/out, $tmp/err) and
# prints its wall time in seconds; fails when CMD does.
secs() {
	t0=$(date +%s%N)
	"$@" >"$tmp/out" 2>"$tmp/err" || {
		echo "endtoend.sh: '$*' exited $?: $(tail -5 "$tmp/err")" >&2
		exit 1
	}
	t1=$(date +%s%N)
	awk -v ns="$((t1 - t0))" 'BEGIN { printf "%.3f\n", ns / 1e9 }'
}

# median FILE: the median of the numbers in FILE, one a line.
median() {
	sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f", m }'
}

# workload NAME CMD...: the runs of CMD and one line of figures.
workload() {
	name=$1
	shift
	: >"$tmp/t.native"
	: >"$tmp/t.ms"
	: >"$tmp/t.after"
	: >"$tmp/t.ht"
	: >"$tmp/t.htp"
	i=0
	while [ $i -lt "$runs" ]; do
		secs "$@" >>"$tmp/t.native"
		rm -rf "$tmp/ms"
		secs "$launcher" --output="$tmp/ms" -- "$@" >>"$tmp/t.ms"
		grep -q "events" "$tmp/err" || { echo "endtoend.sh: msmemscope printed no summary: $(cat "$tmp/err")" >&2; exit 1; }
		rm -rf "$tmp/ms"
		secs "$launcher" --no-live-report --output="$tmp/ms" -- "$@" >>"$tmp/t.after"
		if [ -n "$heaptrack" ]; then
			rm -f "$tmp"/heaptrack.*
			t=$(secs "$heaptrack" -o "$tmp/heaptrack" "$@")
			echo "$t" >>"$tmp/t.ht"
			if [ -n "$heaptrack_print" ]; then
				set -- "$tmp"/heaptrack.* "$@"
				p=$(secs "$heaptrack_print" "$1")
				shift
				awk -v a="$t" -v b="$p" 'BEGIN { printf "%.3f\n", a + b }' >>"$tmp/t.htp"
			fi
		fi
		i=$((i + 1))
	done
	n=$(median "$tmp/t.native")
	m=$(median "$tmp/t.ms")
	a=$(median "$tmp/t.after")
	h=-
	hp=-
	[ ! -s "$tmp/t.ht" ] || h=$(median "$tmp/t.ht")
	[ ! -s "$tmp/t.htp" ] || hp=$(median "$tmp/t.htp")
	printf '%-8s %7s %10s %10s %10s %10s   %9s %9s %9s %9s %7s %7s\n' "$name" "$n" "$m" "$a" "$h" "$hp" \
		"$(ratio "$m" "$n")" "$(ratio "$a" "$n")" "$(ratio "$h" "$n")" "$(ratio "$hp" "$n")" "$(ratio "$m" "$h")" \
		"$(ratio "$m" "$hp")"
}

echo "== end to end: msmemscope -- prog (default report) against native and heaptrack;"
echo "   wall seconds, median of $runs alternating runs (targets: ms/native <= 1.5, ms/ht < 1)"
echo "   (ms-after: --no-live-report, the log read only after the program exits)"
printf '%-8s %7s %10s %10s %10s %10s   %9s %9s %9s %9s %7s %7s\n' workload native msmemscope ms-after heaptrack \
	ht+print ms/native msa/native ht/native htp/native ms/ht ms/htp

if [ -n "$perl" ] && [ -x "$perl" ]; then
	# From files: heaptrack writes the command line into its trace, where
	# a newline of a -e script breaks the trace's format.
	printf '%s\n' "$perl_hash" >"$tmp/hash.pl"
	workload perl "$perl" "$tmp/hash.pl"
else
	echo "perl     skipped: ${perl:-perl} is not installed"
fi

if [ -n "$python" ] && [ -x "$python" ]; then
	PYTHONMALLOC=malloc
	export PYTHONMALLOC
	printf '%s\n' "$python_dicts" >"$tmp/dicts.py"
	workload python3 "$python" "$tmp/dicts.py"
	unset PYTHONMALLOC
else
	echo "python3  skipped: ${python:-python3} is not installed"
fi
