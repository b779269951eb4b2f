#!/bin/sh
# SPDX-License-Identifier: MIT
# logthread.sh: the recorder's log thread (msmemscope-log, doc/recorder.md
# "Cost") starts only once a process's log passes 8 MiB and a CPU is free
# for it (the program records on fewer threads than it may use CPUs),
# starts again in a fork child that logs that much, never with
# MSMEMSCOPE_LOG_THREAD=0, and leaves logs that replay whole and are
# trimmed to what they hold. It is the recorder's, not the program's: the
# calls refused to a process of more than one thread (unshare of a user
# namespace or of the signal handlers, setns into a user or mount
# namespace) answer as natively (the thread is ended first, and starts
# again).
. "$top_srcdir/tests/progs/lib.sh"

big=${MMS_LOGTHREAD_BLOCKS:-1500000} # about 2 x 7 bytes x 1.5M: 20 MiB of log
# logthread allocates on one thread: the log thread needs a second CPU.
if [ "$(nproc)" -ge 2 ]; then
	want=yes
else
	want=no
	note "one CPU here: the log thread must not start (it would only take turns with the program)"
fi

record small.mms "$MMS_PROGS/logthread" 1000 >small.out || fail "logthread 1000 exited $?"
expect_eq "a small run's log thread" "$(field log_thread "$(cat small.out)")" no

record big.mms "$MMS_PROGS/logthread" "$big" >big.out || fail "logthread $big exited $?"
expect_eq "a large run's log thread" "$(field log_thread "$(cat big.out)")" $want
summarize big.mms
expect_consistent big.mms.json
expect_key big.mms.json complete true
expect_key big.mms.json threads 1
# Allocations: the program's own and its report's (opendir, readdir).
expect_ge "big.mms allocations" "$(jget big.mms.json allocs)" "$big"
# Trimmed at exit to the chunks taken (the header, then 64 KiB chunks),
# whatever the log thread had prepared ahead of them.
size=$(wc -c <big.mms)
expect_eq "big.mms size past the header, modulo 64 KiB" $(((size - 4096) % 65536)) 0
expect_le "big.mms size" "$size" $((big * 2 * 12))
note "large run: $(cat big.out), log $size bytes"

MSMEMSCOPE_LOG_THREAD=0 record off.mms "$MMS_PROGS/logthread" "$big" >off.out || fail "logthread with MSMEMSCOPE_LOG_THREAD=0 exited $?"
expect_eq "the log thread with MSMEMSCOPE_LOG_THREAD=0" "$(field log_thread "$(cat off.out)")" no
expect_eq "threads with MSMEMSCOPE_LOG_THREAD=0" "$(field threads "$(cat off.out)")" 1

# A program recording on as many threads as it may use CPUs gets none:
# pinned to one CPU, logthread's one thread leaves no CPU free.
if command -v taskset >/dev/null; then
	taskset -c 0 env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG=pinned.mms "$MMS_PROGS/logthread" "$big" >pinned.out ||
		fail "logthread on one CPU exited $?"
	expect_eq "the log thread on one CPU" "$(field log_thread "$(cat pinned.out)")" no
	summarize pinned.mms
	expect_consistent pinned.mms.json
else
	note "taskset is missing: the one-CPU case is not run"
fi
summarize off.mms
expect_consistent off.mms.json

record fork.mms "$MMS_PROGS/logthread" "$big" fork >fork.out || fail "logthread fork exited $?"
expect_eq "the fork child's log thread" "$(sed -n 1p fork.out | sed 's/ .*//')" log_thread=$want
expect_eq "the parent's log thread" "$(sed -n 2p fork.out | sed 's/ .*//')" log_thread=$want
child=$(ls fork.*.mms 2>/dev/null | head -n 1)
[ -n "$child" ] || fail "the fork child wrote no log: $(ls)"
summarize "$child"
expect_consistent "$child.json"
expect_key "$child.json" complete true
note "fork: the child's log thread: ${want} ($child)"

# unshare(CLONE_SIGHAND), setns() into a mount namespace and
# unshare(CLONE_NEWUSER), each after the log thread started: as natively
# (ok, or the same refusal where the privilege is missing), and the log
# replays whole.
"$MMS_PROGS/logthread" "$big" unshare >uns-native.out || fail "logthread unshare natively exited $?"
record uns.mms "$MMS_PROGS/logthread" "$big" unshare >uns.out || fail "logthread unshare recorded exited $?"
expect_eq "unshare(CLONE_SIGHAND), setns(CLONE_NEWNS), unshare(CLONE_NEWUSER) after the log thread started" \
	"$(head -3 uns.out | tr '\n' ' ')" "$(head -3 uns-native.out | tr '\n' ' ')"
summarize uns.mms
expect_consistent uns.mms.json
expect_key uns.mms.json complete true
expect_ge "uns.mms allocations" "$(jget uns.mms.json allocs)" $((2 * big))
note "with the log thread started: $(head -3 uns.out | tr '\n' ' '), as natively"
