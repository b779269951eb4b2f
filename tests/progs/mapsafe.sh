#!/bin/sh
# SPDX-License-Identifier: MIT
# mapsafe.sh: a program that unmaps, protects, advises, remaps and maps
# over memory it does not own (tests/progs/mapsafe aims at the recorder's
# log mapping) runs on under the recorder, as it does natively: munmap,
# mprotect and madvise(MADV_REMOVE) succeed and leave the recorder's
# memory alone, mmap(MAP_FIXED) and mremap over it fail, and the log,
# written on through that mapping, is whole: its 100,000 allocations are all there.
. "$top_srcdir/tests/progs/lib.sh"

prog=$MMS_PROGS/mapsafe
"$prog" >native.out 2>&1 || fail "mapsafe exited $? natively: $(cat native.out)"
expect_eq "mapsafe natively" "$(cat native.out | tr '\n' ';')" "no log mapping;done;"
for stacks in 0 16; do
	MSMEMSCOPE_CONFIG="call_stack=$stacks"
	export MSMEMSCOPE_CONFIG
	record rec$stacks.mms "$prog" >rec$stacks.out 2>rec$stacks.err ||
		fail "mapsafe exited $? under the recorder (call_stack=$stacks): $(cat rec$stacks.out rec$stacks.err)"
	grep -v '^wide munmap' rec$stacks.out | tr '\n' ';' >rec$stacks.lines
	expect_eq "mapsafe's calls on the recorder's log mapping (call_stack=$stacks)" "$(cat rec$stacks.lines)" \
		"munmap 0;mprotect 0;madvise 0;mmap ENOMEM;mremap EFAULT;done;"
	if grep -q '^wide munmap' rec$stacks.out; then
		expect_eq "a munmap of the program's pages and the recorder's together (call_stack=$stacks)" \
			"$(grep '^wide munmap' rec$stacks.out)" "wide munmap 0, its pages unmapped"
	fi
	summarize rec$stacks.mms
	expect_key rec$stacks.mms.json complete true
	expect_key rec$stacks.mms.json damaged false
	[ "$(jget rec$stacks.mms.json allocs)" -ge 100000 ] ||
		fail "the log lost allocations (call_stack=$stacks): $(jget rec$stacks.mms.json allocs)"
done
note "the recorder's log mapping survived munmap, mprotect, madvise(MADV_REMOVE), mmap(MAP_FIXED) and mremap by the program$(grep -q '^wide munmap' rec0.out && echo ', and a munmap from the program'"'"'s mapping across it')"
