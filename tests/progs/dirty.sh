#!/bin/sh
# SPDX-License-Identifier: MIT
# dirty.sh: gdb's watches where the kernel tells which pages were written
# (hooks/dirty.c): tests/progs/dirty arms watches in the gdb descriptor as
# gdb would (a 1 MiB heap block, 64 KiB of a global sharing its first page
# with data written at every launch) and checks that each change is found
# once, at the boundary after it, blamed on the right launch: a store,
# stores 40 pages apart, stores in 10 of 1000 launches back to back, a
# read() into the block, a store between launches, the shared page, a
# fork child's copy, a second thread, two watches overlapping; and aio_read, written by a thread
# libc starts for itself, found once (soon, not at a given launch). Where
# the kernel cannot track (before Linux 6.7) every byte is compared
# instead: the same checks then test that path, and the test says so.
# The program run again under a seccomp filter must compare (a filter may
# kill on userfaultfd) and pass the same checks. Then msmemscope_watch()
# of 1 MiB, whose checksum is kept while no page is written: the watch
# analysis must find a store, a read() and a store between launches at
# their launches.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

prog=$MMS_PROGS/dirty
[ -x "$prog" ] || fail "the test program is not built: $prog"

rc=0
record rec.mms "$prog" >out 2>err || rc=$?
[ "$rc" = 0 ] || fail "dirty exited $rc under the recorder: $(cat out err)"
grep -q '^FAILED' out && fail "a check failed: $(cat out)"
[ "$(grep -c '^ok:' out)" = 20 ] || fail "expected 20 checks: $(cat out)"
mode=$(sed -n 1p out)
case $mode in
tracked) ;;
compared) note "the kernel cannot track written pages here (Linux $(uname -r)): the compared path was tested" ;;
*) fail "unexpected first line: $(cat out)" ;;
esac

rc=0
record rec2.mms "$prog" seccomp >out2 2>err2 || rc=$?
[ "$rc" = 0 ] || fail "dirty exited $rc under a seccomp filter: $(cat out2 err2)"
[ "$(sed -n 1p out2)" = compared ] || fail "under a seccomp filter the watches were not compared: $(cat out2)"
[ "$(grep -c '^ok:' out2)" = 20 ] || fail "under a seccomp filter, expected 20 checks: $(cat out2)"
# msmemscope_watch() of 1 MiB: its checksum kept while no page is written;
# the watch analysis must find each change at its launch.
rc=0
record api.mms "$prog" api >out3 2>err3 || rc=$?
[ "$rc" = 0 ] || fail "dirty api exited $rc under the recorder: $(cat out3 err3)"
[ "$(cat out3)" = "$mode" ] || fail "dirty api: the block was not $mode: $(cat out3)"
"$MMS_REPLAY" api.mms --analysis watch --json >api.json 2>api.err ||
	fail "msmemscope-replay --analysis watch --json exited $?: $(cat api.err)"
"$MMS_PYTHON" - api.json <<'PY' || fail "the watch analysis of dirty api is wrong: $(cat api.json)"
import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[0])
b = d["blocks"]
assert len(b) == 1 and b[0]["name"] == "blk" and b[0]["size"] == 1 << 20 and b[0]["sums"] == 2000, b
c = [(x["op"], x["launch"], x["found_at"]) for x in b[0]["changes"]]
assert c == [("hit", 500, 500), ("kread", 700, 700), (None, 0, 800)], c
PY
note "20 checks passed ($mode), and the same 20 under a seccomp filter (compared); msmemscope_watch: 3 changes at their launches"
