#!/bin/sh
# SPDX-License-Identifier: MIT
# memlock.sh: a program's mlockall() answers recorded as it does natively
# and locks the program's memory, not the recorder's (some 50 MiB of
# address space: under the default limit of 8 MiB, a small program's
# mlockall failed recorded and not natively, and as root it filled
# the recorder's reserved memory). tests/progs/memlock sets its own
# RLIMIT_MEMLOCK; the limit binds a process without CAP_IPC_LOCK, which
# the cases run without (setpriv drops it from a root shell).
. "$top_srcdir/tests/progs/lib.sh"

prog=$MMS_PROGS/memlock
nocap=
if grep -q '^CapEff:.*[1-9a-f]' /proc/self/status 2>/dev/null; then
	command -v setpriv >/dev/null 2>&1 ||
		skip "running with capabilities and without setpriv (util-linux) to drop CAP_IPC_LOCK"
	setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock -- true 2>/dev/null ||
		skip "setpriv cannot drop CAP_IPC_LOCK here"
	nocap="setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock --"
fi

# run NAME [native|rec] LIMIT FLAGS [CAPS]: memlock's output in NAME.out.
run() {
	_pre=$nocap
	[ "${5:-}" != caps ] || _pre=
	if [ "$2" = native ]; then
		$_pre "$prog" "$3" "$4" >"$1.out" 2>&1 || fail "memlock $3 $4 natively exited $?: $(cat "$1.out")"
	else
		$_pre env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG="$1.mms" "$prog" "$3" "$4" >"$1.out" 2>&1 ||
			fail "memlock $3 $4 recorded exited $?: $(cat "$1.out")"
	fi
}

field() { sed -n "s/^$2 //p" "$1.out"; }

# The program's own mappings take some 2-3 MiB: a limit of 8 MiB holds
# them, one of 1 MiB does not, one of 0 allows no locking at all.
for flags in current current,future current,onfault; do
	for limit in 8192 1024 0; do
		n=n-$flags-$limit
		r=r-$flags-$limit
		run "$n" native $limit $flags
		run "$r" rec $limit $flags
		expect_eq "mlockall($flags) under a limit of $limit KiB, recorded" \
			"$(field "$r" mlockall)" "$(field "$n" mlockall)"
	done
done
expect_eq "mlockall(current) under 8 MiB natively" "$(field n-current-8192 mlockall)" 0
expect_eq "mlockall(current) under 1 MiB natively" "$(field n-current-1024 mlockall)" ENOMEM
expect_eq "mlockall(current) under 0 natively" "$(field n-current-0 mlockall)" EPERM

# What is locked and resident: the program's, and the libraries the
# recorder brings (libunwind, liblzma: some hundreds of KiB), not the
# recorder's own memory.
for flags in current current,future; do
	for caps in nocap caps; do
		run n-$caps native 8192 $flags $caps
		run r-$caps rec 8192 $flags $caps
		expect_eq "mlockall($flags) recorded ($caps)" "$(field r-$caps mlockall)" 0
		expect_le "KiB locked recorded ($flags, $caps; $(field n-$caps locked) natively)" \
			"$(field r-$caps locked)" $(($(field n-$caps locked) + 4096))
		expect_le "KiB resident recorded after mlockall ($flags, $caps; $(field n-$caps rss) natively)" \
			"$(field r-$caps rss)" $(($(field n-$caps rss) + 8192))
		summarize r-$caps.mms
		expect_key r-$caps.mms.json complete true
		expect_ge "allocations in the log ($flags, $caps)" "$(jget r-$caps.mms.json allocs)" 10000
	done
done
note "mlockall answers as natively under limits of 8 MiB, 1 MiB and 0; recorded, $(field r-caps locked) KiB locked and $(field r-caps rss) KiB resident against $(field n-caps locked) and $(field n-caps rss) natively"
