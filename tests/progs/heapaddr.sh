#!/bin/sh
# SPDX-License-Identifier: MIT
# heapaddr.sh: the recorder never allocates from the program's heap, so
# the program's blocks are where they are natively (doc/recorder.md, "What
# the recorder promises"): heapaddr prints its first two small blocks and
# 200 more after frees, reallocs, stdio and calloc; recorded without
# stacks, with 32 frames (the first stack capture used to read
# /proc/self/maps with stdio between the first two mallocs) and with every
# stack also taken by libunwind, it must print the same offsets, and with
# address space randomization off (setarch -R) the same addresses.
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

$norand "$prog" >native.out || fail "heapaddr failed natively"
grep -q "second - first = 32" native.out || fail "unexpected native layout: $(head -1 native.out)"
for rec in plain:call_stack=0 stacks:call_stack=32 check:call_stack=32; do
	name=${rec%%:*}
	extra=
	[ $name != check ] || extra=MSMEMSCOPE_UNWIND_CHECK=1
	$norand env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG="$PWD/$name.mms" MSMEMSCOPE_CONFIG="${rec#*:}" $extra \
		"$prog" >$name.out 2>$name.err || fail "heapaddr failed recorded ($name): $(cat $name.err)"
	offsets native.out >native.off
	offsets $name.out >$name.off
	cmp -s native.off $name.off || fail "$name: offsets between blocks differ: $(diff native.off $name.off | head -8)"
	if [ -n "$norand" ]; then
		cmp -s native.out $name.out || fail "$name: addresses differ: $(diff native.out $name.out | head -8)"
	fi
	summarize $name.mms
	expect_key $name.mms.json complete true
	expect_ge "$name allocations recorded" "$(jget $name.mms.json allocs)" 270
done
note "the program's blocks are where they are natively, with and without stacks"
