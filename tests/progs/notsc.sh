#!/bin/sh
# SPDX-License-Identifier: MIT
# notsc.sh: a program that turns its time stamp counter off (prctl
# PR_SET_TSC, seccomp's strict mode), or installs a seccomp filter that
# kills it at fallocate (through prctl, or syscall(SYS_seccomp) as
# libseccomp does), runs on under the recorder as it does natively:
# recording stops first, the log says why, and nothing of the recorder's
# reads the counter or makes a system call afterwards; an image it execs
# runs without the recorder.
. "$top_srcdir/tests/progs/lib.sh"

prog=$MMS_PROGS/notsc
for mode in prctl strict filter filter-syscall filter-exec; do
	status=0
	"$prog" $mode >$mode.native 2>&1 || status=$?
	[ $status != 77 ] || skip "$(cat $mode.native)"
	expect_eq "notsc $mode natively: exit status" $status 0
	expect_eq "notsc $mode natively" "$(cat $mode.native)" "survived"
	record $mode.mms "$prog" $mode >$mode.out 2>$mode.err ||
		fail "notsc $mode exited $? under the recorder: $(cat $mode.out $mode.err)"
	expect_eq "notsc $mode recorded" "$(cat $mode.out)" "survived"
	case $mode in
	filter*) why='the program installed a seccomp filter' ;;
	*) why='the program turned off the time stamp counter' ;;
	esac
	grep -q "stopped: $why" $mode.err || fail "notsc $mode: the recorder did not say why it stopped: $(cat $mode.err)"
	summarize $mode.mms
	expect_key $mode.mms.json cut true
	expect_key $mode.mms.json damaged false
	"$MMS_REPLAY" $mode.mms --summary >/dev/null 2>$mode.replay ||
		fail "msmemscope-replay --summary on the cut log exited $?: $(cat $mode.replay)"
	grep -q "recording stopped early ($why" $mode.replay ||
		fail "the reader does not say why the log is cut: $(cat $mode.replay)"
done
# The image exec'd under the filter ran without the recorder (loaded
# there, it died of SIGSYS at its log's ftruncate): no log of its own.
for f in filter-exec.exec*; do
	[ ! -e "$f" ] || fail "notsc filter-exec: the exec'd image was recorded, to $f"
done

# libseccomp's probes at its start (man-db, file(1)) install nothing:
# recording goes on (it stopped at the first, the log cut after a few
# events).
"$prog" probe >probe.native 2>&1 || status=$?
case $(cat probe.native) in
skip:*) skip "$(cat probe.native)" ;;
esac
expect_eq "notsc probe natively" "$(cat probe.native)" "survived"
record probe.mms "$prog" probe >probe.out 2>probe.err ||
	fail "notsc probe exited $? under the recorder: $(cat probe.out probe.err)"
expect_eq "notsc probe recorded" "$(cat probe.out)" "survived"
grep -q "stopped" probe.err && fail "notsc probe: recording stopped at a probe: $(cat probe.err)"
summarize probe.mms
expect_key probe.mms.json cut false
expect_ge "notsc probe: allocations in the log (2,000,000 made after the probes)" "$(jget probe.mms.json allocs)" 2000000
note "prctl(PR_SET_TSC), seccomp's strict mode, a seccomp filter through prctl and through syscall(), and one an exec'd image inherits: the program ran on, the log cut with the reason; libseccomp's probes (and a filter refused for want of no_new_privs): the log whole"
