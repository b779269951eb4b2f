#!/bin/sh
# SPDX-License-Identifier: MIT
# pinpoint.sh: `memscope pinpoint' on tests/gdb/pinpoint, whose third of
# six operator launches ("scale") stores past its own block into bytes
# 8..15 of the watched neighbour `nb'. `memscope watch nb' names launch 3;
# `memscope pinpoint' re-runs to its start, says the re-run allocated the
# block as the first run did, puts one hardware watchpoint on the 8
# changed bytes, and `continue' stops at the store: the line marked
# "STRAY store" in stray(), the bytes a8..af -> 57..57; for a store made
# by memset or memcpy, the routine and the program's line that called
# it. After the stop the program runs on to a normal exit. A re-run
# whose allocations moved (the "drift" mode) is said to differ. More changed
# bytes than the debug registers hold: the first ones watched, the rest
# listed, and pinpoint works after the program exited, and again. Before any watch
# stop, and with an argument, the command says why not. On a machine
# whose hardware watchpoints never fire (hw_fires), only what pinpoint
# says there is checked, then the test skips.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

src=$top_srcdir/tests/gdb/pinpoint.c
line_of() {
	_l=$(grep -n "/\\* STRAY $1 \\*/" "$src" | cut -d: -f1)
	[ -n "$_l" ] || fail "no STRAY $1 line in $src"
	echo "$_l"
}

# hw_skip NAME: skip when gdb could not use a hardware watchpoint here.
hw_skip() {
	if grep -q 'cannot set hardware watchpoints here\|Could not insert hardware watchpoint' "$1.out"; then
		skip "gdb cannot use hardware watchpoints on this machine (see $work/$1.raw)"
	fi
}

watch_then_pinpoint() {
	_n=$1
	shift
	session "$_n" "$progs/pinpoint" "$@" -ex 'break ready' -ex run -ex 'memscope watch nb' -ex continue \
		-ex 'memscope pinpoint' -ex 'info breakpoints' -ex continue -ex 'memscope pinpoint 3' -ex continue
	hw_skip "$_n"
	expect_rc "$_n: gdb's exit status"
	expect "$_n" 'changed in operator scale (launch 3, step 1)' "$_n: the watch stop names the launch"
	expect "$_n" 'pinpoint: running the program again to the start of launch 3 of operator scale (step 1)' \
		"$_n: the re-run"
	expect "$_n" 'exited normally' "$_n: the program runs on to its end after the store"
	expect_count "$_n" 'exited normally' 1 "$_n: one normal exit (the first run was killed for the re-run)"
}

# Where the debug registers never fire, pinpoint must say so and not
# claim the re-run made no store; what needs the stop is skipped at the end.
if ! hw_fires; then
	session silent "$progs/pinpoint" -ex 'break ready' -ex run -ex 'memscope watch nb' -ex continue \
		-ex 'memscope pinpoint' -ex continue
	hw_skip silent
	expect_rc "silent: gdb's exit status"
	expect silent 'pinpoint: running the program again to the start of launch 3 of operator scale (step 1)' \
		"silent: the re-run"
	expect silent 'hardware watchpoint 2 on 8 bytes (8 bytes the first run saw change):' "silent: the watchpoint set"
	expect silent "the re-run did not change them, or this machine's hardware watchpoints do not fire" \
		"silent: the end of the re-run says both causes"
	expect_not silent 'the program ended with no further store' "silent: no claim that nothing stored"
	skip "gdb's hardware watchpoints never stop a program on this machine (a plain \`watch -l' on a known store did not stop: $work/hw.probe); checked only that pinpoint says the store may have been missed"
fi

# A plain store.
watch_then_pinpoint store
expect store "memscope: pinpoint: the re-run allocated watch 1's block (nb) as the first run did: 0xADDR, 32 bytes, allocation 3." \
	"the re-run checked against the first run"
expect store 'memscope: pinpoint: at the start of launch 3 of operator scale (step 1); hardware watchpoint 2 on 8 bytes (8 bytes the first run saw change):' \
	"the watchpoint on the changed bytes"
expect store '(watch 1, nb, at +8)' "where the watchpoint lies in the watch"
expect store 'a store changed 8 bytes at 0xADDR (watch 1, nb, at +8) (old -> new):' "the store's stop"
expect store '+0x0    a8 a9 aa ab ac ad ae af -> 57 57 57 57 57 57 57 57' "the bytes old -> new"
expect store " in stray at SRC/pinpoint.c:$(line_of store)" "the source line of the store"
expect store "its watchpoint is deleted; \`continue' runs the program on." "the watchpoint removed after the stop"
expect store 'usage: memscope pinpoint' "an argument refused"
expect_count store 'Hardware watchpoint 2' 1 "gdb's own line when the watchpoint is set"
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
# arena): the first 32 watched, the other 32 listed; pinpoint after the
# program exited (no question to ask).
session wide "$progs/pinpoint" -ex 'break ready' -ex run -ex 'memscope watch own' -ex continue \
	-ex 'memscope unwatch' -ex continue -ex 'memscope pinpoint' -ex continue -ex continue \
	-ex 'memscope pinpoint' -ex continue -ex continue
hw_skip wide
expect_rc "wide: gdb's exit status"
expect wide 'changed in operator embed (launch 1, step 1)' "wide: the watch stop"
expect wide 'hardware watchpoint 2 on 32 bytes (30 bytes the first run saw change):' "wide: 4 words watched"
expect wide 'not all changed bytes fit in the 4 debug registers (an aligned 8-byte word each); left out' \
	"wide: the message when not all fit"
expect wide '    0xADDR..0xADDR (32 bytes)' "wide: the words left out"
expect_count wide " in fill at SRC/pinpoint.c:$(line_of fill)" 2 "wide: the store in launch 1, twice"
expect_count wide 'exited normally' 3 "wide: the three runs end normally"

# Without hardware watchpoints: said so, nothing watched, the program
# runs on.
session nohw "$progs/pinpoint" -ex 'break ready' -ex run -ex 'memscope watch nb' -ex continue \
	-ex 'set can-use-hw-watchpoints 0' -ex 'memscope pinpoint' -ex 'info breakpoints' -ex continue
expect nohw "memscope: pinpoint: gdb cannot set hardware watchpoints here (\`show can-use-hw-watchpoints'); a software watchpoint would single-step the program. Nothing is watched." \
	"nohw: no software watchpoint"
expect nohw '1       breakpoint     keep y' "nohw: info breakpoints lists the session's breakpoint"
expect_not nohw 'watchpoint     keep' "nohw: no software watchpoint left"
expect nohw 'exited normally' "nohw: the program runs on"

# A re-run whose allocations differ, and the command's refusals.
rm -f pinpoint.ran
session drift "$progs/pinpoint" -ex 'memscope pinpoint' -ex 'set args drift' -ex 'break ready' -ex run \
	-ex 'memscope pinpoint' -ex 'memscope watch nb' -ex continue -ex 'memscope pinpoint' -ex continue -ex continue
hw_skip drift
expect_count drift 'no watch has stopped the program yet, so there is nothing to pinpoint' 2 \
	"pinpoint before any watch stop, before and after run"
expect drift "memscope: pinpoint: warning: the re-run differs from the first run: the block at 0xADDR is 96 bytes, allocation 2; the first run's was 0xADDR, 32 bytes, allocation 3." \
	"the re-run's allocations said to differ"
expect drift 'exited normally' "the drifted re-run's end"
