# SPDX-License-Identifier: MIT
# lib.sh: what the benchmark scripts share. Sourced with runs set.

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
