#!/bin/sh
# SPDX-License-Identifier: MIT
# guard.sh: guard mode under gdb (issue 14 item 3) on tests/gdb/guardop,
# whose third of six operator launches stores 4 bytes past its 24-byte
# block, into the red zone. With `set memscope guard on': gdb stops at
# the free whose check finds the overflow and shows the finding (block,
# damaged bytes 5e 5a 5a 5a at +24, the window from the block's
# allocation); `memscope pinpoint' runs the program again with a
# hardware watchpoint on those bytes and stops at the store, the line
# marked STRAY; the program then runs on to its end. `memscope check' at
# checked() finds the overflow before the free, without a stop of its own;
# without guard mode it says how to turn it on. At the stop, bt starts
# with the program's frame, the recorder's folded beneath it.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

line=$(grep -n '/\* STRAY \*/' "$top_srcdir/tests/gdb/guardop.c" | cut -d: -f1)
[ -n "$line" ] || fail "no STRAY line in guardop.c"

session stop "$progs/guardop" -ex 'set memscope guard on' -ex 'show memscope guard' -ex run \
	-ex 'memscope pinpoint' -ex continue -ex continue -ex continue
if grep -q 'cannot set hardware watchpoints here\|Could not insert hardware watchpoint' stop.out; then
	skip "gdb cannot use hardware watchpoints on this machine (see $work/stop.raw)"
fi
fires=yes
hw_fires || fires=no
# Without a stop at the store, the last `continue' finds no program and
# batch gdb exits 1; the re-run's normal end is asserted below.
[ $fires = no ] || expect_rc "gdb's exit status"
expect stop 'memscope: the next runs record in guard mode' "set memscope guard on"
expect stop 'Guard mode for the next runs is on.' "show memscope guard"
expect stop 'memscope: guard: overflow of block 0xADDR (24 bytes), found at event #' "the stop at the finding"
expect stop '4 bytes damaged at 0xADDR (+24 from the block, in its tail red zone): 5e 5a 5a 5a' "the damaged bytes"
expect stop "the damage happened after event #1 (the block's allocation)" "the window"
expect stop 'memscope: guard: stopped outside any operator launch (step 1)' "where it stopped"
expect stop "#N  main (...) at SRC/guardop.c:LINE" "the program's frame: the free"
expect stop 'hardware watchpoint 1 on the 4 bytes damaged at 0xADDR (the overflow of block 0xADDR):' \
	"pinpoint's watchpoint"
if [ $fires = yes ]; then
	expect stop '+0x0    fb fb fb fb fb fb fb fb -> 5e 5a 5a 5a fb fb fb fb' "the store's bytes: red zone -> damage"
	expect stop " in op_run at SRC/guardop.c:$line" "the store's line"
	expect stop 'the re-run allocated block 0xADDR as the first run did: 24 bytes at event #1.' "the re-run checked"
else
	# The re-run reaches the finding with no stop at the store: said so.
	expect stop "no hardware watchpoint stopped the program: gdb's hardware watchpoints do not fire on this machine" \
		"pinpoint says the hardware watchpoints did not fire"
fi
expect_count stop 'memscope: guard: overflow of block' 2 "the finding at the free in both runs"
expect_count stop 'exited normally' 1 "the re-run's end"

# bt at the stop: the recorder's frames folded under the program's (the
# memscope-recorder frame filter), left out with -hide, there as they are
# with -no-filters.
session bt "$progs/guardop" -ex 'set memscope guard on' -ex run -ex 'echo ==bt==\n' -ex bt \
	-ex 'echo ==hide==\n' -ex 'bt -hide' -ex 'echo ==raw==\n' -ex 'bt -no-filters 1' -ex 'echo ==end==\n' -ex kill
[ "$(sed -n '/^==bt==$/{n;p;q}' bt.out)" = "#N  main (...) at SRC/guardop.c:LINE" ] ||
	fail "bt at a guard stop does not start with main's frame (session in $work/bt.raw)"
sed -n '/^==bt==$/,/^==hide==$/p' bt.out | grep -q '^    #0  msmemscope_gdb_stopped ()' ||
	fail "bt does not show the recorder's frames folded under main's (session in $work/bt.raw)"
[ "$(sed -n '/^==hide==$/,/^==raw==$/p' bt.out | sed '1d;$d')" = "#N  main (...) at SRC/guardop.c:LINE" ] ||
	fail "bt -hide at a guard stop shows more than main's frame (session in $work/bt.raw)"
sed -n '/^==raw==$/{n;p;q}' bt.out | grep -q '^#N  msmemscope_gdb_stopped (...)' ||
	fail "bt -no-filters does not start in the recorder (session in $work/bt.raw)"

session check "$progs/guardop" -ex 'memscope check' -ex 'set memscope guard on' -ex 'break checked' -ex run \
	-ex 'memscope check' -ex 'memscope check' -ex continue -ex 'set memscope guard off' -ex run -ex 'memscope check'
if grep -q "Couldn't write extended state" check.out; then
	# gdb 13 cannot call a function in the program on some kernels and
	# CPUs (writing the registers' extended state fails): memscope check
	# must say so and leave the session and the program as they were.
	note "gdb cannot call functions in the program on this machine (see $work/check.raw): memscope check's findings not checked, only that it reports the failure"
	expect check 'memscope: the check did not complete: ' "the failed call reported"
else
	expect check 'memscope: check: 1 finding' "memscope check finds the overflow"
	expect check 'memscope: check: overflow of block 0xADDR (24 bytes), found at event #' "the finding"
	expect check ', found at event #15 by a full check on' "by a full check"
	expect check 'memscope: check: no damage found' "a second check: nothing new"
fi
expect_count check 'memscope: guard: ' 0 "no stop during the check"
expect check 'exited normally' "the program's end"
expect check "memscope: the program runs without guard mode: \`set memscope guard on', then \`run' it again." \
	"check without guard mode"
[ $fires = yes ] ||
	skip "gdb's hardware watchpoints never stop a program on this machine (a plain \`watch -l' on a known store did not stop: $work/hw.probe): pinpoint's stop at the store not checked, only that it says so; the rest passed"
