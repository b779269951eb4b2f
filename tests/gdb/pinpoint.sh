#!/bin/sh
# SPDX-License-Identifier: MIT
# pinpoint.sh: `memscope pinpoint' on tests/gdb/pinpoint, whose third of
# six operator launches ("scale") stores past its own block into bytes
# 8..15 of the watched neighbour `nb'. `memscope watch nb' names launch 3;
# `memscope pinpoint' re-runs to its start, says the re-run allocated the
# block as the first run did, puts a watchpoint on the 8 changed bytes,
# and `continue' stops at the store: the line marked "STRAY store" in
# stray(), the bytes a8..af -> 57..57; for a store made by memset or
# memcpy, the routine and the program's line that called it. After the
# stop the program runs on to a normal exit. A re-run whose allocations
# moved (the "drift" mode) is said to differ. More changed bytes than the
# debug registers hold: the first ones watched, the rest listed, and
# pinpoint works after the program exited, and again. Before any watch
# stop, and with a wrong argument, the command says why not.
# With `set can-use-hw-watchpoints 0' pinpoint uses software watchpoints
# and finds the store all the same; a launch that ends without a store
# into the watched bytes is said so where it ends; a re-run killed or
# dead from a signal before the store is said so.
# Where hardware watchpoints fire (hw_fires) the sessions use them. On a
# machine whose debug registers never trap, the first pinpoint must say
# so where launch 3 ends, and the next one use software watchpoints
# (gdb single-steps launch 3): every session then runs with
# `memscope pinpoint software'.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

src=$top_srcdir/tests/gdb/pinpoint.c
line_of() {
	_l=$(grep -n "/\\* STRAY $1 \\*/" "$src" | cut -d: -f1)
	[ -n "$_l" ] || fail "no STRAY $1 line in $src"
	echo "$_l"
}

# The mode the sessions use: hardware watchpoints where they fire here,
# software ones where they do not (checked first, below).
if hw_fires; then
	kind=hardware
	pp='memscope pinpoint'
else
	kind=software
	pp='memscope pinpoint software'
fi

watch_then_pinpoint() {
	_n=$1
	shift
	session "$_n" "$progs/pinpoint" "$@" -ex 'break ready' -ex run -ex 'memscope watch nb' -ex continue \
		-ex "$pp" -ex 'info breakpoints' -ex continue -ex 'memscope pinpoint 3' -ex 'memscope pinpoint soft' \
		-ex continue
	expect_rc "$_n: gdb's exit status"
	expect "$_n" 'changed in operator scale (launch 3, step 1)' "$_n: the watch stop names the launch"
	expect "$_n" 'pinpoint: running the program again to the start of launch 3 of operator scale (step 1)' \
		"$_n: the re-run"
	expect "$_n" 'exited normally' "$_n: the program runs on to its end after the store"
	expect_count "$_n" 'exited normally' 1 "$_n: one normal exit (the first run was killed for the re-run)"
}

# Where the debug registers never fire, the first pinpoint must say so
# where launch 3 ends (not claim the re-run made no store), and the next
# one use software watchpoints by itself.
if [ $kind = software ]; then
	session silent "$progs/pinpoint" -ex 'break ready' -ex run -ex 'memscope watch nb' -ex continue \
		-ex 'memscope pinpoint' -ex continue -ex 'memscope pinpoint' -ex continue -ex continue
	expect_rc "silent: gdb's exit status"
	expect silent 'pinpoint: running the program again to the start of launch 3 of operator scale (step 1)' \
		"silent: the re-run"
	expect silent 'hardware watchpoint 2 on 8 bytes (8 bytes the first run saw change):' "silent: the watchpoint set"
	expect silent "memscope: pinpoint: launch 3 ended; the watched bytes changed in it but no hardware watchpoint stopped the program: gdb's hardware watchpoints do not fire on this machine" \
		"silent: said where launch 3 ends"
	expect silent "\`memscope pinpoint' again uses software watchpoints" "silent: what to do"
	expect_not silent 'the re-run did not change them' "silent: no claim that nothing stored"
	expect silent "software watchpoint 3 on 8 bytes (8 bytes the first run saw change):" \
		"silent: the next pinpoint's software watchpoint"
	expect silent "software watchpoints (the hardware watchpoints of this session's last pinpoint did not fire)" \
		"silent: why software ones"
	expect silent " in stray at SRC/pinpoint.c:$(line_of store)" "silent: the software watchpoint finds the store"
	expect_count silent 'exited normally' 1 "silent: one normal exit"
	note "this machine's hardware watchpoints do not fire ($work/hw.probe): the sessions below use software ones"
fi

# A plain store.
watch_then_pinpoint store
expect store "memscope: pinpoint: the re-run allocated watch 1's block (nb) as the first run did: 0xADDR, 32 bytes, allocation 3." \
	"the re-run checked against the first run"
expect store "memscope: pinpoint: at the start of launch 3 of operator scale (step 1); $kind watchpoint 2 on 8 bytes (8 bytes the first run saw change):" \
	"the watchpoint on the changed bytes"
expect store '(watch 1, nb, at +8)' "where the watchpoint lies in the watch"
expect store 'a store changed 8 bytes at 0xADDR (watch 1, nb, at +8) (old -> new):' "the store's stop"
expect store '+0x0    a8 a9 aa ab ac ad ae af -> 57 57 57 57 57 57 57 57' "the bytes old -> new"
expect store " in stray at SRC/pinpoint.c:$(line_of store)" "the source line of the store"
expect store "its watchpoint is deleted; \`continue' runs the program on." "the watchpoint removed after the stop"
expect_count store 'usage: memscope pinpoint \[hardware|software\]' 2 "a wrong argument refused"
if [ $kind = hardware ]; then
	expect_count store 'Hardware watchpoint 2' 1 "gdb's own line when the watchpoint is set"
else
	expect_count store 'Watchpoint 2: ' 1 "gdb's own line when the watchpoint is set"
	expect store 'software watchpoints (asked for): gdb single-steps the program until the launch ends' \
		"the cost of software watchpoints said"
fi
expect store '1       breakpoint     keep y' "the session's breakpoint enabled again at the start of launch 3"

# Through the C library: the routine, and the program's call of it.
for how in memset memcpy; do
	watch_then_pinpoint "$how" -ex "set args $how"
	expect "$how" 'a C library routine,' "$how: the store is in the C library"
	expect "$how" "  called by the program from stray at SRC/pinpoint.c:$(line_of "$how")" \
		"$how: the program's line that called it"
done
expect memset '+0x0    a8 a9 aa ab ac ad ae af -> 5a 5a 5a 5a 5a 5a 5a 5a' "memset's bytes"
expect memcpy '+0x0    a8 a9 aa ab ac ad ae af -> 50 51 52 53 54 55 56 57' "memcpy's bytes"

# More changed bytes than debug registers (launch 1 fills 64 bytes of the
# arena, 60 of which change): with hardware watchpoints, the first 32
# watched, the other 32 listed; with software ones, all 64. Pinpoint
# after the program exited (no question to ask), twice.
session wide "$progs/pinpoint" -ex 'break ready' -ex run -ex 'memscope watch own' -ex continue \
	-ex 'memscope unwatch' -ex continue -ex "$pp" -ex continue -ex continue \
	-ex "$pp" -ex continue -ex continue
expect_rc "wide: gdb's exit status"
expect wide 'changed in operator embed (launch 1, step 1)' "wide: the watch stop"
if [ $kind = hardware ]; then
	expect wide 'hardware watchpoint 2 on 32 bytes (30 bytes the first run saw change):' "wide: 4 words watched"
	expect wide 'not all changed bytes fit in the 4 debug registers (an aligned 8-byte word each); left out' \
		"wide: the message when not all fit"
	expect wide '    0xADDR..0xADDR (32 bytes)' "wide: the words left out"
else
	expect wide 'software watchpoint 2 on 64 bytes (60 bytes the first run saw change):' "wide: all 64 bytes watched"
	expect_not wide 'not all changed bytes fit' "wide: no register limit"
fi
expect_count wide " in fill at SRC/pinpoint.c:$(line_of fill)" 2 "wide: the store in launch 1, twice"
expect_count wide 'exited normally' 3 "wide: the three runs end normally"

# Without hardware watchpoints (gdb told not to use them): software ones,
# said why, the store found, gdb's setting as the user left it.
session nohw "$progs/pinpoint" -ex 'break ready' -ex run -ex 'memscope watch nb' -ex continue \
	-ex 'set can-use-hw-watchpoints 0' -ex 'memscope pinpoint' -ex 'info breakpoints' -ex continue \
	-ex 'show can-use-hw-watchpoints' -ex continue
expect_rc "nohw: gdb's exit status"
expect nohw "memscope: pinpoint: software watchpoints (gdb cannot set hardware watchpoints here (\`show can-use-hw-watchpoints')): gdb single-steps the program until the launch ends" \
	"nohw: software watchpoints, said why"
expect nohw '1       breakpoint     keep y' "nohw: info breakpoints lists the session's breakpoint"
expect nohw ' in stray at SRC/pinpoint.c:' "nohw: the store found"
expect nohw "Debugger's willingness to use watchpoint hardware is 0." "nohw: gdb's setting kept"
expect nohw 'exited normally' "nohw: the program runs on"

# A re-run whose launch 3 makes no stray store (the "once" mode stores
# only in a run that does not find pinpoint.ran): said where launch 3
# ends (software watchpoints, deleted there) or at the program's end
# (hardware ones), no watchpoint left, the program runs on.
rm -f pinpoint.ran
# Software watchpoints stop where launch 3 ends: one `continue' more runs
# the program to its end (with hardware ones it has ended already).
last=continue
[ $kind = software ] || last='info breakpoints'
session once "$progs/pinpoint" -ex 'set args once' -ex 'break ready' -ex run -ex 'memscope watch nb' -ex continue \
	-ex "$pp" -ex continue -ex 'info breakpoints' -ex "$last"
expect_rc "once: gdb's exit status"
expect once 'changed in operator scale (launch 3, step 1)' "once: the first run's stray store"
if [ $kind = software ]; then
	# Software watchpoints end with launch 3: said there.
	expect once "memscope: pinpoint: launch 3 ended without a store into the watched bytes: the re-run did not change them there (it differs from the first run)." \
		"once: no store in the re-run, said where launch 3 ends"
	expect once "memscope: pinpoint: its software watchpoint is deleted; \`continue' runs the program on." \
		"once: the watchpoint deleted there"
else
	# Hardware ones that work stay on after launch 3 (a later store would
	# stop too): said at the end.
	expect once "memscope: pinpoint: the program ended without a store into the watched bytes from the start of launch 3 on: the re-run did not change them (it differs from the first run)." \
		"once: no store in the re-run, said at the end"
fi
expect_not once 'watchpoint     keep' "once: no watchpoint left"
expect_count once 'exited normally' 1 "once: the re-run ends normally"
# The same with hardware watchpoints asked for, on any machine (the bytes
# do not change, so whether the debug registers trap does not matter):
# no stop where launch 3 ends, the watchpoint kept to the end, said there.
rm -f pinpoint.ran
session oncehw "$progs/pinpoint" -ex 'set args once' -ex 'break ready' -ex run -ex 'memscope watch nb' -ex continue \
	-ex 'memscope pinpoint hardware' -ex continue -ex 'info breakpoints'
expect_rc "oncehw: gdb's exit status"
expect oncehw 'hardware watchpoint 2 on 8 bytes' "oncehw: a hardware watchpoint set"
expect_not oncehw 'launch 3 ended' "oncehw: no stop where launch 3 ends"
expect oncehw "memscope: pinpoint: the program ended without a store into the watched bytes from the start of launch 3 on: the re-run did not change them (it differs from the first run)." \
	"oncehw: said at the end"
expect_not oncehw 'watchpoint     keep' "oncehw: no watchpoint left"
expect_count oncehw 'exited normally' 1 "oncehw: the re-run ends normally"

# A re-run whose allocations differ, and the command's refusals.
rm -f pinpoint.ran
session drift "$progs/pinpoint" -ex 'memscope pinpoint' -ex 'set args drift' -ex 'break ready' -ex run \
	-ex 'memscope pinpoint' -ex 'memscope watch nb' -ex continue -ex "$pp" -ex continue -ex continue
expect_count drift 'no watch has stopped the program yet, so there is nothing to pinpoint' 2 \
	"pinpoint before any watch stop, before and after run"
expect drift "memscope: pinpoint: warning: the re-run differs from the first run: the block at 0xADDR is 96 bytes, allocation 2; the first run's was 0xADDR, 32 bytes, allocation 3." \
	"the re-run's allocations said to differ"
expect drift 'exited normally' "the drifted re-run's end"

# The re-run killed (`kill'), or dead from a signal, while pinpoint
# waits for the store, and again at gdb's batch end (which kills it): said
# so, not that the launch's end was unseen or that the re-run stored
# nothing.
for end in kill 'signal SIGABRT'; do
	cn=cut${end%% *}
	session "$cn" "$progs/pinpoint" -ex 'break ready' -ex run -ex 'memscope watch nb' -ex continue -ex "$pp" \
		-ex "$end" -ex "$pp"
	expect_rc "$cn: gdb's exit status"
	killed="memscope: pinpoint: the program was killed before a stop at a store into the watched bytes; its $kind watchpoint is deleted."
	case $end in
	kill) expect_count "$cn" "$killed" 2 "$cn: the kill and the batch end said as they were" ;;
	*)
		expect "$cn" "memscope: pinpoint: the program died from SIGABRT (Aborted) before a stop at a store into the watched bytes; its $kind watchpoint is deleted." \
			"$cn: the signal said"
		expect_count "$cn" "$killed" 1 "$cn: the batch end said as it was"
		;;
	esac
	expect_count "$cn" 'pinpoint: the program' 2 "$cn: one word at each end"
	expect_not "$cn" 'was not seen' "$cn: no claim about nested launches"
	expect_not "$cn" 'did not change them' "$cn: no claim that nothing was stored"
done
