# SPDX-License-Identifier: MIT
# lib.sh: what the benchmark scripts share, sourced by them: the best wall
# time of a command over $runs runs.

# best CMD...: the best wall time of $runs runs, in seconds.
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
