#!/bin/sh
# SPDX-License-Identifier: MIT
# wildfree.sh: a free of an address that is not a live block (a wild
# pointer, a double free) is recorded and handed to libc, which reacts as
# natively; the recorder never reads through the pointer itself, even
# with a block watched by gdb or by msmemscope_watch() (it used to crash in
# malloc_usable_size() there, with SIGSEGV instead of libc's abort).
. "$top_srcdir/tests/progs/lib.sh"

prog=$MMS_PROGS/wildfree
for what in invalid double; do
	native=0
	"$prog" $what none >$what.native.out 2>$what.native.err || native=$?
	[ $native -ne 0 ] || fail "$what: libc let the bad free pass natively; this test expects an abort"
	for watch in none gdb api; do
		name=$what-$watch
		status=0
		record $PWD/$name.mms "$prog" $what $watch >$name.out 2>$name.err || status=$?
		expect_eq "$name exit status (native $native)" $status $native
		cmp -s $what.native.out $name.out || fail "$name printed: $(cat $name.out)"
		# libc's own message, not a crash in the recorder.
		grep -q "free" $name.err || fail "$name: libc did not say why it stopped: $(cat $name.err)"
		summarize $name.mms
		expect_key $name.mms.json damaged false
		# The bad free is in the log, as an unmatched free.
		expect_key $name.mms.json unmatched_frees 1
	done
done
note "bad frees are recorded and left to libc, with and without watches"
