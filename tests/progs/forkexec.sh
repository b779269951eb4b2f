#!/bin/sh
# SPDX-License-Identifier: MIT
# forkexec.sh: a parent allocates 100 blocks (frees 40), forks a child
# that allocates 200 (frees 150), then execs itself and the new image
# allocates 300 (frees 299). Each process image gets its own log, named by
# MSMEMSCOPE_LOG (x.mms, x.CHILD.mms, x.exec1.mms) or by MSMEMSCOPE_LOG_DIR
# (memscope_PID.mms, memscope_CHILD.mms, memscope_PID.exec1.mms), holding
# exactly its own allocations, and the child's replay starts from the 60
# blocks of 1000 bytes the parent held when it forked; with follow_exec=0
# the exec'd image is not recorded.
. "$top_srcdir/tests/progs/lib.sh"

# check LOG ALLOCS FREES SIZE [INHERITED]: the log's malloc-family
# figures; INHERITED blocks of 1000 bytes were the parent's at the fork;
# the summary in JSON of these healthy logs says nothing on stderr (an
# exec is the JSON's exec_away).
check() {
	[ -f "$1" ] || fail "no log $1 (logs here: $(ls -- *.mms 2>/dev/null | tr '\n' ' '))"
	summarize "$1"
	[ ! -s "$1.json.err" ] || fail "--summary --json of $1 printed on stderr: $(cat "$1.json.err")"
	expect_consistent "$1.json"
	expect_key "$1.json" allocs "$2"
	expect_key "$1.json" frees "$3"
	expect_key "$1.json" bytes_allocated $(($2 * $4))
	expect_key "$1.json" inherited_blocks "${5:-0}"
	expect_key "$1.json" inherited_live_bytes $((${5:-0} * 1000))
	expect_key "$1.json" live_bytes $((($2 - $3) * $4 + ${5:-0} * 1000))
}

pids() {
	parent=$(sed -n 's/^parent=//p' "$1")
	child=$(sed -n 's/^child=//p' "$1")
	[ -n "$parent" ] && [ -n "$child" ] || fail "forkexec did not print its pids: $(cat "$1")"
	grep -qx 'exec done' "$1" || fail "the exec'd image did not run: $(cat "$1")"
}

# 1. MSMEMSCOPE_LOG names the logs.
mkdir named && cd named
record fe.mms "$MMS_PROGS/forkexec" >out || fail "forkexec exited $?"
pids out
check fe.mms 100 40 1000
check fe.$child.mms 200 150 300 60
check fe.exec1.mms 300 299 70
expect_key fe.exec1.mms.json complete true
expect_key fe.$child.mms.json complete true
# The parent's image ends at its exec: its log says so, and is not complete.
expect_key fe.mms.json exec_away true
# Its file holds what was written: the space reserved ahead went back at
# the exec (2 MiB a process that forks and execs held before).
expect_le "the parent's log's bytes on disk" $(($(stat -c %b fe.mms) * $(stat -c %B fe.mms))) $((4096 + 8 * 65536))
# The summary says so, and names the next image's log.
"$MMS_REPLAY" fe.mms --summary >fe.sum 2>fe.sum.err || fail "--summary of fe.mms exited $?: $(cat fe.sum.err)"
grep -q "fe.mms: the process exec'd another program; blocks \"live at exec\" are those it held then (its log: fe.exec1.mms)$" fe.sum.err ||
	fail "the summary of the parent's log does not name the exec'd image's log: $(cat fe.sum.err)"
# leaks speaks of exec there too, as the summary does.
"$MMS_REPLAY" fe.mms --analysis leaks >fe.leaks 2>/dev/null || fail "leaks of fe.mms exited $?"
grep -q '^====== SUMMARY: 0.057220 Mb(s) live at exec in 60 allocation(s) ======$' fe.leaks ||
	fail "leaks of the parent's log does not speak of its exec: $(cat fe.leaks)"
expect_key fe.mms.json complete false
expect_key fe.exec1.mms.json exec_away false
expect_eq "logs written with MSMEMSCOPE_LOG" "$(ls -- *.mms | wc -l)" 3
note "MSMEMSCOPE_LOG: parent, child $child and exec'd image each have their own log"
cd ..

# 2. MSMEMSCOPE_LOG_DIR names them by pid.
mkdir dir
env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG_DIR="$work/dir" "$MMS_PROGS/forkexec" >dir.out ||
	fail "forkexec with MSMEMSCOPE_LOG_DIR exited $?"
pids dir.out
cd dir
check memscope_$parent.mms 100 40 1000
check memscope_$child.mms 200 150 300 60
check memscope_$parent.exec1.mms 300 299 70
expect_eq "logs written with MSMEMSCOPE_LOG_DIR" "$(ls -- *.mms | wc -l)" 3
note "MSMEMSCOPE_LOG_DIR: memscope_$parent.mms, memscope_$child.mms, memscope_$parent.exec1.mms"
cd ..

# 3. follow_exec=0: the exec'd image runs unrecorded.
mkdir noexec && cd noexec
MSMEMSCOPE_CONFIG="follow_exec=0" record fe.mms "$MMS_PROGS/forkexec" >out ||
	fail "forkexec with follow_exec=0 exited $?"
pids out
check fe.mms 100 40 1000
check fe.$child.mms 200 150 300 60
[ ! -e fe.exec1.mms ] || fail "follow_exec=0 still recorded the exec'd image"
expect_eq "logs written with follow_exec=0" "$(ls -- *.mms | wc -l)" 2
note "follow_exec=0: no log for the exec'd image"
