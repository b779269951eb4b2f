# SPDX-License-Identifier: MIT
# lib.sh: what the benchmark scripts share. Sourced with runs set.

# Each run of a benchmark writes the same log in its own temporary folder:
# let the recorder replace it (MSMEMSCOPE_LOG keeps a file that is there).
MSMEMSCOPE_LOG_FORCE=1
export MSMEMSCOPE_LOG_FORCE

# unwrap PROG LIBDIR: sets unwrapped to the program that libtool's wrapper
# script PROG runs, where the build tree has it (PROG's folder's .libs),
# with LIBDIR put first on LD_LIBRARY_PATH (exported) as the wrapper
# would; else to PROG. The wrapper costs some 10 ms of CPU a run of its
# own, which on both sides of a ratio of two runs would pull it toward 1.
unwrap() {
	unwrapped=$1
	_u=$(dirname "$1")/.libs/$(basename "$1")
	if [ -x "$_u" ] && [ -d "$2" ]; then
		LD_LIBRARY_PATH=$2${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		export LD_LIBRARY_PATH
		# shellcheck disable=SC2034 # the caller reads it
		unwrapped=$_u
	fi
}

# best CMD...: the best wall time of $runs runs of CMD (output dropped), in
# seconds with three decimals.
best() {
	b=
	i=0
	while [ $i -lt "$runs" ]; do
		t0=$(date +%s%N)
		"$@" >/dev/null
		t1=$(date +%s%N)
		t=$(((t1 - t0) / 1000))
		if [ -z "$b" ] || [ $t -lt "$b" ]; then b=$t; fi
		i=$((i + 1))
	done
	awk -v us="$b" 'BEGIN { printf "%.3f", us / 1e6 }'
}

# rounds CMD...: runs the commands (each one string, run with eval, so
# shell functions work) in turn, A B C A B C ..., for $runs rounds, and
# prints a line per round: each command's wall time in microseconds. On a
# shared machine whose speed drifts, the commands of one round see about
# the same machine: take ratios within rounds (round_ratio), not between
# the best of separate series.
rounds() {
	_k=0
	while [ $_k -lt "$runs" ]; do
		_line=
		for _c in "$@"; do
			_t0=$(date +%s%N)
			eval "$_c" >/dev/null
			_t1=$(date +%s%N)
			_line="$_line $(((_t1 - _t0) / 1000))"
		done
		echo $_line
		_k=$((_k + 1))
	done
}

# round_best FILE I: the best time of column I of rounds' output, in
# seconds with three decimals.
round_best() {
	awk -v i="$2" 'NR == 1 || $i < b { b = $i } END { printf "%.3f", b / 1e6 }' "$1"
}

# round_ratio FILE I J: the median over the rounds of FILE of column I
# over column J, with two decimals.
round_ratio() {
	awk -v i="$2" -v j="$3" '$j > 0 { print $i / $j }' "$1" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2; else printf "-" }'
}

# round_usec: converts seconds on stdin (one figure) to microseconds, for
# rounds' columns written by hand (a program that prints its own time).
round_usec() { awk '{ printf "%d", $1 * 1e6 }'; }

# ratio A B: A / B with two decimals, "-" when B is 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }

# The real programs' workloads (replaylogs.sh, endtoend.sh, which runs
# them from files: heaptrack's trace cannot hold a command line with a
# newline): perl -e "$perl_hash" builds a hash of 300,000 keys three times and deletes two
# thirds of each round; python3 -c "$python_dicts" (run with
# PYTHONMALLOC=malloc) builds dicts and lists of a few hundred thousand
# objects.
perl_hash='
my %h;
for my $r (1 .. 3) {
	$h{"key$r-$_"} = [$_, "v$_"] for 1 .. 300000;
	$_ % 3 and delete $h{"key$r-$_"} for 1 .. 300000;
}
print scalar(keys %h), "\n";'
python_dicts='
d = {}
for r in range(2):
    for i in range(150000):
        d["k%d-%d" % (r, i)] = [i, str(i), (i, r)]
    for i in range(150000):
        if i % 3:
            del d["k%d-%d" % (r, i)]
l = [{"a": i, "b": str(i)} for i in range(100000)]
print(len(d), len(l))'

# cpu_us CMD...: the user and the system CPU seconds of one run of CMD
# (output dropped) and its wall seconds, "USER SYSTEM WALL". GNU time
# measures, else python3's resource module and clock.
cpu_us() {
	if /usr/bin/time -f '%U %S %e' true >/dev/null 2>&1; then
		_f=$(mktemp "${TMPDIR:-/tmp}/msmemscope-bench-cpu.XXXXXX")
		/usr/bin/time -f '%U %S %e' -o "$_f" "$@" >/dev/null 2>&1 || true
		tail -n 1 "$_f"
		rm -f "$_f"
	else
		python3 -c 'import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
t = time.monotonic() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_utime, r.ru_stime, t)' "$@"
	fi
}

# median: the median of the numbers on standard input, with two decimals.
median() { sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] }'; }

# cpu_median CMD...: the median of $runs runs' CPU seconds (user + system,
# one core's worth: other work on a shared machine does not add to it) of
# CMD (output dropped), with two decimals.
cpu_median() {
	_i=0
	_all=
	while [ $_i -lt "$runs" ]; do
		_all="$_all $(cpu_us "$@" | awk '{ print $1 + $2 }')"
		_i=$((_i + 1))
	done
	echo "$_all" | tr ' ' '\n' | grep . | median
}

# cpu_pairs "CMD A" "CMD B": $runs pairs of runs, A then B (each command a
# string split into words as the shell splits them: no quoting inside);
# prints the medians of A's user CPU seconds, B's, the pairs' ratios A/B
# of them, then the same of user + system seconds and of wall seconds:
# "A_USER B_USER RATIO A_CPU B_CPU RATIO A_WALL B_WALL RATIO". A pair's
# ratio holds when the machine's speed drifts between pairs; on a guest
# the system time moves with the host's memory (fresh pages' zeroing),
# user time much less; wall time is less than user + system where a
# command works on two cores.
cpu_pairs() {
	_i=0
	_rows=
	while [ $_i -lt "$runs" ]; do
		# shellcheck disable=SC2086 # the commands' words
		_rows="$_rows$(cpu_us $1) $(cpu_us $2)
"
		_i=$((_i + 1))
	done
	for _k in 1 2 3 4 5 6 7 8 9; do
		printf '%s' "$_rows" | awk -v k=$_k '{ au = $1; as = $2; aw = $3; bu = $4; bs = $5; bw = $6
			if (k == 1) print au; else if (k == 2) print bu
			else if (k == 3) print (bu > 0 ? au / bu : 0)
			else if (k == 4) print au + as; else if (k == 5) print bu + bs
			else if (k == 6) print (bu + bs > 0 ? (au + as) / (bu + bs) : 0)
			else if (k == 7) print aw; else if (k == 8) print bw
			else print (bw > 0 ? aw / bw : 0) }' | median
		printf ' '
	done
	echo
}
