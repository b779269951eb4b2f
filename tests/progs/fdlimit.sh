#!/bin/sh
# SPDX-License-Identifier: MIT
# fdlimit.sh: a program that changes its own descriptor limit keeps its
# descriptor numbers under the recorder (doc/recorder.md, "What the
# recorder promises"). fdlimit raises its soft limit from 1024 to 4096
# (setrlimit, setrlimit64, prlimit on pid 0 and on its own pid, libc's
# syscall()) and opens 1200 files; natively they get the numbers 3 to
# 1202 one after another, and recorded the same (before, the log sat at
# 1024, the old soft limit, and the program's 1022nd file got 1025).
# With soft and hard limits one at 4096 (as containers have them, at
# 1048576), 1100 files get 3 to 1102, as natively (before, the log sat
# at 1023, below select()'s FD_SETSIZE, and the program's 1021st file got
# 1024). Failing calls return what they return natively, with the same
# errno, and change nothing. A program that lowers its soft limit below
# the recorder's descriptors is recorded whole, and so is a child it forks
# then.
. "$top_srcdir/tests/progs/lib.sh"

prog=$MMS_PROGS/fdlimit

# compare NAME LIMITS MODE SOFT COUNT: runs fdlimit MODE SOFT COUNT under
# the shell ulimit commands LIMITS, natively (NAME-native.out) and under
# the launcher (NAME.out, its run folder NAME.run), and wants the same
# output and exit status.
compare() {
	name=$1 limits=$2
	shift 2
	st=0
	(eval "$limits" && exec "$prog" "$@") >$name-native.out 2>$name-native.err || st=$?
	expect_eq "fdlimit $* natively ($limits): exit status" $st 0
	st=0
	(eval "$limits" && exec "$MMS_LAUNCHER" --output=$name.run -- "$prog" "$@") >$name.out 2>$name.err || st=$?
	expect_eq "fdlimit $* under msmemscope ($limits): exit status" $st 0
	cmp -s $name-native.out $name.out ||
		fail "fdlimit $* ($limits) printed something else under msmemscope than natively: $(diff $name-native.out $name.out | head -20)"
	grep -q "^opened .* 0 gaps" $name.out || fail "fdlimit $* ($limits): the numbers are not one after another: $(cat $name.out)"
	log=$(launched_log $name.err)
	[ -n "$log" ] || fail "fdlimit $*: the launcher names no log: $(cat $name.err)"
	summarize "$log"
	expect_key "$log.json" cut false
	expect_key "$log.json" complete true
	expect_key "$log.json" damaged false
}

hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ "$hard" -ge 4096 ] ||
	skip "the hard descriptor limit here is $hard: fdlimit needs 4096 to raise its soft limit from 1024 to 4096"

# (a) From a soft limit of 1024 with the hard limit above, raised in the
# program by each of the calls that can.
for mode in setrlimit setrlimit64 prlimit prlimit-pid syscall; do
	compare raise-$mode "ulimit -Sn 1024" $mode 4096 1200
	grep -q "^opened 1200 files: 3 to 1202, 0 gaps" raise-$mode.out ||
		fail "fdlimit $mode: not the numbers 3 to 1202: $(cat raise-$mode.out)"
done
note "soft limit raised from 1024 to 4096 by setrlimit, setrlimit64, prlimit (pid 0, own pid) and syscall(): 1200 files get 3 to 1202, natively and recorded"

# (b) Soft and hard limits one, above 1024.
compare same "ulimit -Sn 4096 && ulimit -Hn 4096" none 0 1100
grep -q "^opened 1100 files: 3 to 1102, 0 gaps" same.out || fail "soft = hard = 4096: not the numbers 3 to 1102: $(cat same.out)"
note "soft = hard = 4096: 1100 files get 3 to 1102, natively and recorded"

# Failing calls: the same result and errno, and the limits unchanged;
# then a call that succeeds leaves errno alone.
compare errors "ulimit -Sn 1024" errors 0 1200
grep -q "^setrlimit(soft above hard) = -1, errno EINVAL$" errors.out &&
	grep -q "^setrlimit(resource 1000) = -1, errno EINVAL$" errors.out &&
	grep -q "^prlimit(no such pid) = -1, errno ESRCH$" errors.out &&
	grep -q "^prlimit(0, soft above hard): soft 1024 " errors.out &&
	grep -q "^setrlimit(4096) with errno EDOM = 0, errno EDOM (as set)$" errors.out ||
	fail "the failing calls: $(cat errors.out)"
note "failing setrlimit and prlimit: $(grep -c 'errno E[A-Z]*$' errors.out) results and errno values as native; $(grep 'hard above hard' errors.out | head -n 1)"

# (c) The soft limit lowered below the recorder's descriptors: the log
# keeps being written, whole, and the child forked then has its own.
compare lower "ulimit -Sn 1024" lower 32 100
grep -q "^opened 29 files: 3 to 31, 0 gaps, .*, then EMFILE$" lower.out ||
	fail "fdlimit lower: not 29 files up to the lowered limit: $(cat lower.out)"
grep -q "^churn [0-9]*; the child's status 0$" lower.out || fail "fdlimit lower: $(cat lower.out)"
expect_ge "allocations recorded after the limit was lowered" "$(jget "$log.json" allocs)" 300000
set -- lower.run/*/memscope_*.mms
[ $# -eq 2 ] || fail "fdlimit lower: $# logs, expected the program's and its child's: $*"
for child; do
	[ "$child" != "$log" ] || continue
	summarize "$child"
	expect_key "$child.json" cut false
	expect_key "$child.json" complete true
	expect_ge "the child's allocations" "$(jget "$child.json" allocs)" 2000
done
grep -q "cut" lower.err && fail "the launcher says a log is cut: $(cat lower.err)"
note "soft limit lowered to 32 below the recorder's descriptors: 29 files until EMFILE as natively, the log and the child's whole"
exit 0
