#!/bin/sh
# SPDX-License-Identifier: MIT
# analyses.sh: the speed and memory of every analysis on a log of 20
# million events (mallocbench, one thread, 20 steps, no stacks, as
# bench/replay.sh records it): for each analysis that `msmemscope-replay
# --list-analyses` lists, `msmemscope-replay LOG --analysis NAME` as a user runs it,
# with its events per second (target: 5 million) and its peak memory (max
# RSS), and the same on a log ten times shorter: streaming analyses keep
# their memory when the log grows. Then `msmemscope-replay transform csv`
# where that subcommand exists. Not a test: `make bench` runs it.
#
# Environment: top_builddir (default .), BENCH_REPLAY_ITERATIONS (default
# 10000000: two events each).
set -eu

top_builddir=${top_builddir:-.}
hooks=${MMS_HOOKS:-$top_builddir/hooks/.libs/libmsmemscope-hooks.so}
# Runs write the same log again: let the recorder replace it.
MSMEMSCOPE_LOG_FORCE=1
export MSMEMSCOPE_LOG_FORCE
replay=${MMS_REPLAY:-$top_builddir/src/msmemscope-replay}
bench=${MMS_MALLOCBENCH:-$top_builddir/bench/mallocbench}
iterations=${BENCH_REPLAY_ITERATIONS:-10000000}

for f in "$hooks" "$replay" "$bench"; do
	[ -e "$f" ] || { echo "analyses.sh: $f is not built; run make bench" >&2; exit 2; }
done
# Absolute: transform runs in its own folder.
replay=$(cd "$(dirname "$replay")" && pwd)/$(basename "$replay")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msmemscope-bench-analyses.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# How to measure a command: GNU time (wall and CPU seconds, max RSS), else
# python3's resource module, else VmHWM read from /proc while it runs. The
# machine may be shared: events per second are counted over CPU time
# (user + system), one core's worth, and wall time is shown beside it.
if /usr/bin/time -f %M true >/dev/null 2>&1; then
	meter=gnu-time
elif command -v python3 >/dev/null 2>&1; then
	meter=python3
else
	meter=vmhwm
fi

# anon_peak PID: the highest RssAnon (KiB) of PID's process (or, with GNU
# time, of its child) while it runs, sampled every 10 ms: the memory the
# analysis holds, without the page cache of the mapped log.
anon_peak() {
	_p=$1
	_max=0
	# Until it ends: a finished child stays a zombie until waited for.
	while [ -r /proc/"$_p"/stat ] && ! sed 's/.*) //' /proc/"$_p"/stat 2>/dev/null | grep -q '^[ZX]'; do
		_t=$_p
		if [ $meter = gnu-time ]; then
			_t=$(cat /proc/"$_p"/task/"$_p"/children 2>/dev/null || true)
			_t=${_t%% *}
		fi
		if [ -n "$_t" ]; then
			_v=$(sed -n 's/^RssAnon:[[:space:]]*\([0-9]*\).*/\1/p' /proc/"$_t"/status 2>/dev/null || true)
			[ -z "$_v" ] || [ "$_v" -le "$_max" ] || _max=$_v
		fi
		sleep 0.01
	done
	echo $_max
}

# measure OUT CMD...: runs CMD (its output discarded) and writes "WALL CPU
# MAXRSS_KIB ANON_KIB STATUS" to OUT.
measure() {
	out=$1
	shift
	t0=$(date +%s%N)
	case $meter in
	gnu-time)
		/usr/bin/time -f '%U %S %M' -o "$out.rss" "$@" >/dev/null 2>"$out.err" &
		;;
	python3)
		python3 - "$out" "$@" <<'PY' &
import resource, subprocess, sys
with open(sys.argv[1] + ".err", "w") as err:
    st = subprocess.call(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=err)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1] + ".rss", "w").write("%.3f %.3f %d\n" % (r.ru_utime, r.ru_stime, r.ru_maxrss))
sys.exit(st)
PY
		;;
	vmhwm)
		"$@" >/dev/null 2>"$out.err" &
		;;
	esac
	pid=$!
	anon=$(anon_peak $pid)
	set +e
	wait $pid
	st=$?
	set -e
	t1=$(date +%s%N)
	if [ $meter = vmhwm ]; then
		echo "0 0 0" >"$out.rss"
	fi
	echo "$(((t1 - t0) / 1000)) $(tail -n 1 "$out.rss") $anon $st" |
		awk '{ printf "%.3f %.3f %s %s %s\n", $1 / 1e6, $2 + $3, $4, $5, $6 }' >"$out"
}

# The analyses, as msmemscope-replay lists them.
names=$("$replay" --list-analyses)
[ -n "$names" ] || { echo "analyses.sh: msmemscope-replay --list-analyses lists no analyses" >&2; exit 2; }

record() {
	env LD_PRELOAD="$hooks" MSMEMSCOPE_LOG="$1" MALLOCBENCH_STEPS=20 "$bench" 1 "$2" >/dev/null
}
events_of() {
	"$replay" "$1" --summary --json | sed 's/^{"events":\([0-9]*\),.*/\1/'
}

record "$tmp/big.mms" "$iterations"
record "$tmp/small.mms" $((iterations / 10))
big=$(events_of "$tmp/big.mms")
small=$(events_of "$tmp/small.mms")
echo "== analyses: mallocbench 1 thread, $big events ($small in the short log), measured by $meter"
ls -l "$tmp/big.mms" "$tmp/small.mms" | awk '{ printf "%s %.1f MiB", n++ ? ", short log" : "log size", $5 / 1048576 } END { print "" }'
echo "(events/s over CPU time; max RSS counts the mapped log's pages, anonymous memory does not)"
printf '%-14s %8s %8s %13s %10s %12s %20s\n' analysis "cpu s" "wall s" "events/s" "max RSS" "anon peak" "anon peak (short)"

# row NAME WALL CPU MAXRSS ANON ANON_SHORT: one line of the table.
row() {
	awk -v a="$1" -v w="$2" -v c="$3" -v e="$big" -v r="$4" -v an="$5" -v an2="$6" 'BEGIN {
		s = c > 0 ? c : w
		rate = s > 0 ? e / s : 0
		printf "%-14s %8.3f %8.3f %9.2f M/s %6.1f MiB %8.1f MiB %16s%s\n", a, c, w, rate / 1e6, r / 1024,
			an / 1024, an2 == "" ? "" : sprintf("%.1f MiB", an2 / 1024),
			rate < 5e6 ? "  (below the 5 M/s target)" : ""
	}'
}

# run NAME LOG OUT ARGS...: one analysis over LOG, its files in a fresh folder.
run() {
	rm -rf "$tmp/out"
	mkdir "$tmp/out"
	measure "$3" "$replay" "$2" --analysis "$1" --output-dir "$tmp/out"
}

for a in $names; do
	run "$a" "$tmp/small.mms" "$tmp/m.small"
	run "$a" "$tmp/big.mms" "$tmp/m.big"
	read -r w c rss anon st <"$tmp/m.big"
	read -r w2 c2 rss2 anon2 st2 <"$tmp/m.small"
	if [ "$st" != 0 ] || [ "$st2" != 0 ]; then
		printf '%-14s failed (exit %s): %s\n' "$a" "$st" "$(tail -n 1 "$tmp/m.big.err")"
		continue
	fi
	row "$a" "$w" "$c" "$rss" "$anon" "$anon2"
done
rm -rf "$tmp/out"

# memray's transform reports, where the subcommand exists.
if "$replay" --help | grep -v '^ *-' | grep -qw transform; then
	mkdir "$tmp/out"
	(cd "$tmp/out" && measure "$tmp/m.tr" "$replay" transform csv "$tmp/big.mms")
	read -r w c rss anon st <"$tmp/m.tr"
	if [ "$st" = 0 ]; then
		row "transform csv" "$w" "$c" "$rss" "$anon" ""
	else
		echo "transform csv failed (exit $st): $(tail -n 1 "$tmp/m.tr.err")"
	fi
fi
