#!/bin/sh
# SPDX-License-Identifier: MIT
# heapaddr.sh: the recorder never allocates from the program's heap, so
# the program's blocks are where they are natively (doc/recorder.md, "What
# the recorder promises"): heapaddr prints its first two small blocks and
# 200 more after frees, reallocs, stdio and calloc; recorded without
# stacks, with 32 frames (the first stack capture used to read
# /proc/self/maps with stdio between the first two mallocs) and with every
# stack also taken by libunwind, it must print the same offsets, and with
# address space randomization off (setarch -R) the same addresses. The
# same after threads start and end and grow their vectors of thread-local
# storage (heapaddr threads, hooks/dtv.c).
. "$top_srcdir/tests/progs/lib.sh"

prog=$MMS_PROGS/heapaddr
norand=
if command -v setarch >/dev/null 2>&1 && setarch "$(uname -m)" -R true 2>/dev/null; then
	norand="setarch $(uname -m) -R"
else
	note "setarch -R is not available: comparing offsets between blocks only, not addresses"
fi

# offsets FILE: the lines without their addresses.
offsets() {
	sed 's/0x[0-9a-f]*//g' "$1"
}

# recorded PREFIX NATIVE [ARGS...]: heapaddr ARGS recorded without stacks,
# with 32 frames and with libunwind's stacks checked (PREFIXplain,
# PREFIXstacks, PREFIXcheck): the same offsets as in NATIVE, and the same
# addresses where randomization is off; each log whole and consistent.
recorded() {
	_pre=$1 _native=$2
	shift 2
	for rec in plain:call_stack=0 stacks:call_stack=32 check:call_stack=32; do
		name=$_pre${rec%%:*}
		extra=
		[ "${rec%%:*}" != check ] || extra=MSMEMSCOPE_UNWIND_CHECK=1
		$norand env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG="$PWD/$name.mms" MSMEMSCOPE_CONFIG="${rec#*:}" $extra \
			"$prog" "$@" >$name.out 2>$name.err || fail "heapaddr $* failed recorded ($name): $(cat $name.err)"
		offsets "$_native" >native.off
		offsets $name.out >$name.off
		cmp -s native.off $name.off || fail "$name: offsets between blocks differ: $(diff native.off $name.off | head -8)"
		if [ -n "$norand" ]; then
			cmp -s "$_native" $name.out || fail "$name: addresses differ: $(diff "$_native" $name.out | head -8)"
		fi
		summarize $name.mms
		expect_key $name.mms.json complete true
		expect_consistent $name.mms.json
	done
}

$norand "$prog" >native.out || fail "heapaddr failed natively"
grep -q "second - first = 32" native.out || fail "unexpected native layout: $(head -1 native.out)"
recorded "" native.out
for name in plain stacks check; do
	expect_ge "$name allocations recorded" "$(jget $name.mms.json allocs)" 270
done
note "the program's blocks are where they are natively, with and without stacks"

# Threads: each thread's vector of thread-local storage comes from the
# heap, and the recorder's own modules with thread-local storage made it
# longer than natively (16 bytes each), so every block allocated after a
# thread started moved. heapaddr threads starts 8 threads twice, then
# loads 20 copies of a library with thread-local storage that a waiting
# thread then reaches (glibc grows that thread's vector), printing the
# main thread's blocks in between: the same offsets and addresses as
# natively (hooks/dtv.c).
plugs=
for i in $(seq 1 20); do
	cp "$MMS_PROGS/tlsplug.so" "$PWD/tls$i.so" || fail "cannot copy tlsplug.so"
	plugs="$plugs $PWD/tls$i.so"
done
# shellcheck disable=SC2086 # the libraries, one word each
$norand "$prog" threads $plugs >tnative.out || fail "heapaddr threads failed natively"
grep -q '^after 20 libraries (sum 20) ' tnative.out || fail "heapaddr threads did not load the 20 libraries: $(cat tnative.out)"
# shellcheck disable=SC2086
recorded t tnative.out threads $plugs
note "the program's blocks are where they are natively after threads start, end and grow their TLS vectors"
