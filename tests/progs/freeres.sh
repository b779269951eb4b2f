#!/bin/sh
# SPDX-License-Identifier: MIT
# freeres.sh: runtime internals are not the program's leaks. At the end of
# exit, with no other thread left, the recorder has glibc and libstdc++
# free their internal memory (as valgrind does by default), so a program
# that frees everything it allocated has nothing live at exit: 8 C threads
# (threads8) and a C++ program with iostream, stdio and 8 std::threads
# (runtimes). Where freeres cannot run (a thread still alive at exit,
# _exit, or --no-freeres), the blocks the runtimes keep for themselves are
# marked in the log: each thread's TLS vector, libstdc++'s exception pool,
# the standard streams' buffers; and in a CPython or perl process, what
# the interpreter holds at exit.
. "$top_srcdir/tests/progs/lib.sh"

# runtime_marks LOG KIND: how many allocations the log marks as kept by
# runtime KIND.
runtime_marks() {
	"$MMS_REPLAY" "$1" --from 0 --json | grep -c "\"runtime\":\"$2\"" || true
}

# C: 8 threads that free all they allocate.
"$MMS_PROGS/threads8" 8 1000 0 >t8.native || fail "threads8 natively exited $?"
record $PWD/t8.mms "$MMS_PROGS/threads8" 8 1000 0 >t8.out || fail "threads8 recorded exited $?"
summarize t8.mms
expect_key t8.mms.json live_blocks 0
expect_key t8.mms.json live_bytes 0
expect_key t8.mms.json unmatched_frees 0
"$MMS_LAUNCHER" --output=runs -- "$MMS_PROGS/threads8" 8 1000 0 >t8.launch.out 2>t8.launch.err ||
	fail "msmemscope -- threads8 exited $?: $(cat t8.launch.err)"
# (cross= counts frees by another thread: the scheduler's choice.)
expect_eq "threads8 output under msmemscope" "$(sed 's/ cross=.*//' t8.launch.out)" "$(sed 's/ cross=.*//' t8.native)"
grep -q "No leaks at exit: every block was freed" t8.launch.err ||
	fail "msmemscope does not say every block was freed: $(cat t8.launch.err)"

# Without freeres, the threads' TLS vectors are live at exit, and marked.
MSMEMSCOPE_CONFIG=freeres=0 record $PWD/t8-nofree.mms "$MMS_PROGS/threads8" 8 1000 0 >/dev/null ||
	fail "threads8 recorded without freeres exited $?"
summarize t8-nofree.mms
expect_ge "threads8 without freeres: blocks live at exit" "$(jget t8-nofree.mms.json live_blocks)" 1
expect_eq "threads8: TLS vectors marked" "$(runtime_marks t8-nofree.mms thread)" 8
expect_key t8-nofree.mms.json freeres_skipped '"off"'
# All of them are the runtime's, so none is a leak: the summary counts them
# apart, the leaks report says the program freed everything.
expect_key t8-nofree.mms.json runtime_live_blocks "$(jget t8-nofree.mms.json live_blocks)"
"$MMS_REPLAY" t8-nofree.mms --analysis leaks >t8-nofree.leaks 2>&1 || fail "leaks on t8-nofree.mms exited $?"
grep -q "No leaks at exit: every block of the program's was freed" t8-nofree.leaks ||
	fail "the leaks report does not say the program freed everything: $(cat t8-nofree.leaks)"
grep -q "Kept by the runtimes: .* (not leaks)" t8-nofree.leaks ||
	fail "the leaks report does not show what the runtime keeps: $(cat t8-nofree.leaks)"
"$MMS_LAUNCHER" --no-freeres --output=runs -- "$MMS_PROGS/threads8" 8 1000 0 >/dev/null 2>t8-nofree.launch.err ||
	fail "msmemscope --no-freeres -- threads8 exited $?"
grep -q "runtimes'.*kept by the runtimes (C, C++, CPython, perl, Node.js, the JVM, CUDA), not leaks" t8-nofree.launch.err ||
	fail "the launcher's summary does not set the runtime's blocks apart: $(cat t8-nofree.launch.err)"
if grep -q "leaked at exit" t8-nofree.launch.err; then
	fail "the launcher calls the runtime's blocks leaked: $(cat t8-nofree.launch.err)"
fi

# C++: everything freed with freeres, whatever the mode that lets it run.
"$MMS_PROGS/runtimes" clean >cxx.native || fail "runtimes clean natively exited $?"
record $PWD/cxx.mms "$MMS_PROGS/runtimes" clean >cxx.out || fail "runtimes clean recorded exited $?"
cmp -s cxx.native cxx.out || fail "runtimes printed something else under the recorder"
summarize cxx.mms
expect_key cxx.mms.json live_blocks 0
expect_key cxx.mms.json live_bytes 0
# libstdc++'s exception pool, allocated before main, is marked as its own.
expect_eq "runtimes: blocks of libstdc++ before main" "$(runtime_marks cxx.mms cxx)" 1
expect_eq "runtimes: TLS vectors" "$(runtime_marks cxx.mms thread)" 8

# A thread alive at exit: freeres must not run (it would free what that
# thread may still use); the program's own leak is the 77-byte block.
record $PWD/alive.mms "$MMS_PROGS/runtimes" alive >alive.out || fail "runtimes alive recorded exited $?"
summarize alive.mms
expect_ge "runtimes alive: blocks live at exit" "$(jget alive.mms.json live_blocks)" 4
# (The ninth thread takes a cached stack, with its vector, from glibc.)
expect_eq "runtimes alive: TLS vectors marked" "$(runtime_marks alive.mms thread)" 8
# The program's own: the 77-byte block it leaked and the running thread's
# std::thread state; the rest (the exception pool, the TLS vectors, the
# stdout buffer, marked at exit) is the runtimes'.
expect_eq "runtimes alive: the program's blocks at exit" \
	$(($(jget alive.mms.json live_blocks) - $(jget alive.mms.json runtime_live_blocks))) 2
expect_key alive.mms.json runtime.cxx.bytes 72704
expect_key alive.mms.json runtime.stdio.blocks 1
# The log says why freeres did not run, and the reports name it.
expect_key alive.mms.json freeres_skipped '"threads"'
expect_key alive.mms.json freeres_threads 1
"$MMS_REPLAY" alive.mms --analysis leaks >alive.leaks || fail "leaks on alive.mms exited $?"
grep -q "freeres, which free these at the end of exit, did not run: 1 other thread was still running at exit" \
	alive.leaks || fail "the leaks report does not say why freeres did not run: $(cat alive.leaks)"
# The summary's thread count, next to that line, says what it counts.
"$MMS_REPLAY" alive.mms --summary >alive.sum || fail "--summary on alive.mms exited $?"
grep -q '^threads  *[0-9]* (with events in the log; threads that made none are not counted)$' alive.sum ||
	fail "the summary's threads line does not say what it counts: $(cat alive.sum)"
"$MMS_REPLAY" alive.mms --analysis leaks --json >alive.leaks.json || fail "leaks --json on alive.mms exited $?"
expect_eq "alive: the program's blocks live at exit" "$(kept_at_exit alive.leaks.json)" 2
expect_key alive.leaks.json runtime.blocks "$(jget alive.mms.json runtime_live_blocks)"

# _exit: no destructor, no freeres; output as natively.
"$MMS_PROGS/runtimes" quick >quick.native || fail "runtimes quick natively exited $?"
record $PWD/quick.mms "$MMS_PROGS/runtimes" quick >quick.out || fail "runtimes quick recorded exited $?"
cmp -s quick.native quick.out || fail "runtimes quick printed something else under the recorder"
summarize quick.mms
expect_key quick.mms.json complete true
# What the runtimes keep is marked as where exit cannot run freeres, the
# stdout buffer too (before, it read as the program's, still reachable),
# and the log says why freeres did not run: the program's only block is
# its vector of std::threads, which main still holds (64 bytes).
expect_key quick.mms.json freeres_skipped '"_exit"'
expect_key quick.mms.json runtime.stdio.blocks 1
expect_key quick.mms.json runtime.cxx.bytes 72704
"$MMS_REPLAY" quick.mms --analysis leaks >quick.leaks || fail "leaks on quick.mms exited $?"
grep -q "freeres, which free these at the end of exit, did not run: the process left with _exit, which runs no exit handler" \
	quick.leaks || fail "the leaks report does not say freeres did not run for _exit: $(cat quick.leaks)"
"$MMS_REPLAY" quick.mms --analysis leaks --json >quick.leaks.json || fail "leaks --json on quick.mms exited $?"
expect_eq "quick: the program's blocks live at exit" "$(kept_at_exit quick.leaks.json)" 1
expect_eq "quick: the program's bytes live at exit" "$(kept_at_exit quick.leaks.json bytes)" 64
# A C program that prints, then leaves with _exit, keeps nothing of its
# own: a check for reachable blocks passes (it failed on glibc's buffer).
cc=${CC:-cc}
if command -v "$cc" >/dev/null 2>&1; then
	printf '#include <stdio.h>\n#include <unistd.h>\nint main(void) { printf("hello\\n"); fflush(stdout); _exit(0); }\n' >uexit.c
	"$cc" -o uexit uexit.c || fail "cannot build uexit.c with $cc"
	rc=0
	"$MMS_LAUNCHER" --error-exitcode=7 --errors-for-leak-kinds=reachable --output=runs -- ./uexit \
		>uexit.out 2>uexit.err || rc=$?
	expect_eq "uexit's output" "$(cat uexit.out)" hello
	expect_eq "uexit: --error-exitcode=7 --errors-for-leak-kinds=reachable's status" "$rc" 0
	grep -q "^      runtimes'     1 block, 4.0 KiB (4096 bytes)   kept by the runtimes" uexit.err ||
		fail "the launcher's summary does not count stdout's buffer the runtimes' after _exit: $(sed -n '/heap/,/threads/p' uexit.err)"
fi
# A process killed by a signal never reaches exit: the reports say so, not
# the causes a process that exits has (before: "another thread was still
# running, the process left with _exit, or --no-freeres", none of which
# happened); the launcher, which saw the signal, names it.
rc=0
"$MMS_LAUNCHER" --output=runs -- "$MMS_PROGS/runtimes" abort >abort.out 2>abort.err || rc=$?
expect_eq "runtimes abort: the launcher's status" "$rc" 134
grep -q "freeres, which free these at the end of exit, did not run: the process was killed by signal 6 (SIGABRT) before it could exit)" \
	abort.err || fail "the launcher's report does not say the process died of SIGABRT: $(sed -n '/======/,$p' abort.err)"
"$MMS_REPLAY" "$(launched_log abort.err)" --analysis leaks >abort.leaks 2>&1 || fail "leaks on the abort log exited $?"
grep -q "freeres, which free these at the end of exit, did not run: the process did not reach exit (killed by a signal, or still running))" \
	abort.leaks || fail "the leaks report does not say the process did not reach exit: $(cat abort.leaks)"

# CPython does not free all its state at exit, by design: in a python3
# process, what the interpreter allocated and still holds at exit is its
# own; a block that native code under it leaked (here through ctypes) is
# the program's when the stack shows it, and said to be counted as
# CPython's when there is no stack.
if [ -x /usr/bin/python3 ]; then
	cat >leak.py <<'PY'
import ctypes
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
print("leaked", libc.malloc(12345) != 0)
PY
	MSMEMSCOPE_CONFIG=call_stack=32 record $PWD/py.mms /usr/bin/python3 -I leak.py >py.out ||
		fail "python3 leak.py recorded exited $?"
	summarize py.mms
	expect_ge "python3: CPython's blocks at exit" "$(jget py.mms.json runtime.python.blocks)" 1
	"$MMS_REPLAY" py.mms --analysis leaks --json >py.leaks.json || fail "leaks --json on py.mms exited $?"
	expect_eq "py: the program's blocks live at exit" "$(kept_at_exit py.leaks.json)" 1
	expect_eq "py: the program's bytes live at exit" "$(kept_at_exit py.leaks.json bytes)" 12345
	record $PWD/py0.mms /usr/bin/python3 -I leak.py >/dev/null || fail "python3 leak.py recorded exited $?"
	"$MMS_REPLAY" py0.mms --analysis leaks >py0.leaks || fail "leaks on py0.mms exited $?"
	grep -q "recorded without stacks: a block an extension module leaked is counted as CPython's" py0.leaks ||
		fail "without stacks the report does not say CPython's count may hold a leak: $(cat py0.leaks)"
else
	note "/usr/bin/python3 is not installed: CPython's state at exit not checked"
fi
# perl keeps its state at exit too (only a build for debugging honours
# PERL_DESTRUCT_LEVEL): live at exit in the perl executable, what the
# interpreter allocated is its own, not the program's leak.
if command -v perl >/dev/null 2>&1; then
	record $PWD/pl.mms perl -e 'my %h; $h{$_} = "v$_" for 1 .. 2000; print scalar(keys %h), "\n"' >pl.out ||
		fail "perl recorded exited $?"
	expect_eq "perl's output recorded" "$(cat pl.out)" 2000
	summarize pl.mms
	expect_key pl.mms.json complete true
	expect_ge "perl: perl's blocks at exit" "$(jget pl.mms.json runtime.perl.blocks)" 100
	"$MMS_REPLAY" pl.mms --analysis leaks --json >pl.leaks.json || fail "leaks --json on pl.mms exited $?"
	expect_eq "pl: the program's blocks live at exit" "$(kept_at_exit pl.leaks.json)" 0
else
	note "perl is not installed: perl's state at exit not checked with perl itself"
fi
# What tells perl's blocks from an XS module's: the executable's name
# ("perl", not "perlin") and, with stacks, the module that allocated. A
# program named perl keeps a block itself and one through a library of
# its own (as an XS module would).
cc=${CC:-cc}
if command -v "$cc" >/dev/null 2>&1; then
	mkdir xs
	printf '#include <stdlib.h>\nvoid *xs_keep;\nvoid xs_leak(void) { xs_keep = malloc(4321); }\n' >xs/xs.c
	printf '#include <stdlib.h>\nvoid xs_leak(void);\nvoid *state;\nint main(void) { state = malloc(1234); xs_leak(); return 0; }\n' >xs/main.c
	"$cc" -shared -fPIC -o xs/libxsleak.so xs/xs.c && "$cc" -o xs/perl xs/main.c -Lxs -lxsleak "-Wl,-rpath,$PWD/xs" &&
		cp xs/perl xs/perlin || fail "cannot build the XS-like test program with $cc"
	MSMEMSCOPE_CONFIG=call_stack=32 record $PWD/xs.mms xs/perl || fail "xs/perl recorded exited $?"
	"$MMS_REPLAY" xs.mms --analysis leaks --json >xs.leaks.json || fail "leaks --json on xs.mms exited $?"
	expect_eq "xs: the program's blocks live at exit" "$(kept_at_exit xs.leaks.json)" 1
	expect_eq "xs: the program's bytes live at exit" "$(kept_at_exit xs.leaks.json bytes)" 4321
	expect_key xs.leaks.json runtime.by_kind.perl.bytes 1234
	record $PWD/xs0.mms xs/perl || fail "xs/perl recorded exited $?"
	"$MMS_REPLAY" xs0.mms --analysis leaks >xs0.leaks || fail "leaks on xs0.mms exited $?"
	grep -q "recorded without stacks: a block an XS module leaked is counted as perl's" xs0.leaks ||
		fail "without stacks the report does not say perl's count may hold a leak: $(cat xs0.leaks)"
	MSMEMSCOPE_CONFIG=call_stack=32 record $PWD/perlin.mms xs/perlin || fail "xs/perlin recorded exited $?"
	"$MMS_REPLAY" perlin.mms --analysis leaks --json >perlin.leaks.json || fail "leaks --json on perlin.mms exited $?"
	expect_eq "perlin: the program's blocks live at exit" "$(kept_at_exit perlin.leaks.json)" 2
else
	note "no C compiler ($cc): an XS-like leak in a program named perl not checked"
fi
note "freeres at exit leaves nothing live; where it cannot run, the runtimes' blocks are marked"
