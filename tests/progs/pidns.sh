#!/bin/sh
# SPDX-License-Identifier: MIT
# pidns.sh: processes of two PID namespaces with the same pids (two
# `unshare -pf` in one run, as sandboxes make them) each get logs of
# their own: the first process of each namespace (pid 1) writes
# memscope_1.mms and memscope_1-2.mms, the image it execs
# memscope_1.exec1.mms and memscope_1-2.exec1.mms; the launcher lists
# each with its true origin. Before, the second namespace's pid 1 took
# the first's log for its own: its log was called an image exec'd from
# the other process's, and a fork child there was not recorded (its
# name was taken). Skips where this machine allows no PID namespace.
. "$top_srcdir/tests/progs/lib.sh"

[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"
command -v unshare >/dev/null 2>&1 || skip "unshare (util-linux) is not installed"
unshare -pf true 2>/dev/null || unshare -Urpf true 2>/dev/null ||
	skip "this machine allows no new PID namespace (unshare -pf, unshare -Urpf: a container without CAP_SYS_ADMIN or user namespaces)"
ns="unshare -pf"
unshare -pf true 2>/dev/null || ns="unshare -Urpf"

prog=$MMS_PROGS/family
# Each namespace: sh as pid 1, which forks a child (pid 2, recorded from
# its first event) and then execs family.
inner='( : ); echo "pid $$"; exec '"$prog"
"$MMS_LAUNCHER" --output=out -- sh -c "$ns sh -c '$inner'; $ns sh -c '$inner'" >run.out 2>run.err ||
	fail "msmemscope -- sh (two PID namespaces) exited $?: $(cat run.err)"
expect_eq "both namespaces' sh were pid 1" "$(grep -c '^pid 1$' run.out)" 2
dir=$(ls -d out/msmemscope_*)
for f in memscope_1.mms memscope_1.exec1.mms memscope_1-2.mms memscope_1-2.exec1.mms; do
	[ -f "$dir/$f" ] || fail "no $f in the run folder: $(ls "$dir")"
done
[ ! -e "$dir/memscope_1.exec2.mms" ] || fail "the second namespace's pid 1 wrote memscope_1.exec2.mms: taken for an image of the first's"
grep -q "memscope_1-2.exec1.mms: pid 1, .*family, exec'd from memscope_1-2.mms" run.err ||
	fail "the launcher does not list memscope_1-2.exec1.mms as exec'd from memscope_1-2.mms: $(cat run.err)"
grep -q "memscope_1-2.mms: pid 1, .*the first process of a new PID namespace" run.err ||
	fail "the launcher does not list memscope_1-2.mms as the first process of a new PID namespace: $(cat run.err)"
for f in memscope_1.exec1.mms memscope_1-2.exec1.mms; do
	summarize "$dir/$f"
	expect_consistent "$dir/$f.json"
	expect_key "$dir/$f.json" inherited_blocks 0
done
set -- "$dir"/*.mms
note "two PID namespaces with the same pids: logs of their own ($# logs), each exec'd image beside its own process's"
