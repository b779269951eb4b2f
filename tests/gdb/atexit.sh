#!/bin/sh
# SPDX-License-Identifier: MIT
# atexit.sh: the report at exit (issue 16, item 11). When the program
# exits under gdb, one line gives its live blocks from the
# finished log, as `memscope leaks full' counts them: tests/gdb/leaky
# keeps 6 blocks, 8,592 bytes, from 2 stacks, and forgets them before its
# exit (definitely lost, as the recorder's scan at exit finds);
# tests/gdb/stomp frees all it allocates; threads allocating as the
# program exits leave no block called leaked; a pool's block live at exit
# is no heap leak; bad frees (tests/progs/mismatch's six mismatched ones)
# get a line of their own after the leaks'; a program with its own
# operator new (tests/progs/ownnew) gets the warning that they are not
# checked, at exit and in memscope info, as does a plugin with its own
# copy of them (tests/progs/ownplug-own.so) for the frees across. Nothing when gdb kills the
# program, nor when the run had no recorder (an exec-wrapper without it).
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session leaky "$progs/leaky" -ex run -ex 'memscope leaks full'
expect leaky "memscope: at exit: 6 blocks leaked, 8,592 bytes (8.4 KiB), in 2 loss records; \`memscope leaks full' for the detail." \
	"the leaks at exit"
expect leaky 'memscope: all live blocks: 8,592 bytes (8.4 KiB) in 6 blocks, 2 loss records' "memscope leaks full agrees"
# The recorder's scan at exit found no pointer left to them: valgrind's words.
expect leaky 'loss record 1 of 2: 8,192 bytes (8.0 KiB) in 2 blocks, definitely lost; largest' "the verdict at exit"
expect leaky 'loss record 2 of 2: 400 bytes in 4 blocks, definitely lost; largest' "the verdict at exit"
expect_count leaky '^memscope: at exit' 1 "one line at exit"
expect_rc "gdb's exit status"

# Recorded without the scan at exit (reach=0, as --no-reach-scan): no
# verdicts, so never freed, not said leaked.
session noscan "$progs/leaky" -ex 'set environment MSMEMSCOPE_CONFIG=reach=0' -ex run
expect noscan "memscope: at exit: 6 blocks never freed, 8,592 bytes (8.4 KiB), in " "no verdicts without the scan"
expect_not noscan "blocks leaked" "nothing called leaked without the scan"
expect_rc "gdb's exit status"

# Threads that allocate and free without a pause as the program exits
# (tests/progs/reach busy, every block reachable from a global table):
# nothing leaked in 4 runs; the blocks they made as the scan ran that it
# found no pointer to are not judged, in the line and in the loss records.
unjudged=0
for i in 1 2 3 4; do
	session busy "$top_builddir/tests/progs/reach" -ex 'set args busy' -ex run -ex 'memscope leaks full'
	expect busy "memscope: at exit: no leak; not leaks: " "threads allocating at exit: no leak (run $i)"
	expect_not busy "leaked" "threads allocating at exit: nothing called leaked (run $i)"
	expect_not busy "lost" "threads allocating at exit: no loss record called lost (run $i)"
	if grep -q "not judged" busy.out; then
		unjudged=$((unjudged + 1))
		grep -q "^memscope: at exit: no leak; .*; [0-9]* blocks\{0,1\}, .*, not judged (made by a thread still running while the scan at exit read memory); " busy.out ||
			fail "the line at exit does not count the blocks not judged (session in $work/busy.raw)"
		expect busy "not judged (made by a thread still running while the scan at exit read memory); largest" \
			"memscope leaks full marks the loss record not judged"
	fi
	expect_rc "gdb's exit status"
done
note "threads allocating at exit: no leak in 4 runs, blocks not judged in $unjudged"

# Memory that is not the heap's (a mapping, a pool's block, device
# memory) still live at exit is no heap leak, and the scan at exit, which
# judges heap blocks only, gave it no verdict: tests/progs/leaks (one
# thread) keeps a pool block of 256 bytes in a static arena, beside its
# 5 heap blocks leaked. Before, the line and the loss record said that
# block was "not judged (made by a thread still running ...)".
session pool "$top_builddir/tests/progs/leaks" -ex run -ex 'memscope leaks full'
expect pool "memscope: at exit: 5 blocks leaked, 4,172 bytes (4.1 KiB), in 5 loss records; 1 block, 256 bytes, of mappings, pools or device memory still live (not heap blocks); \`memscope leaks full' for the detail." \
	"a pool's block live at exit: no heap leak"
expect pool "memscope: all live blocks: 4,428 bytes (4.3 KiB) in 6 blocks, 6 loss records" "memscope leaks full counts it"
expect pool "256 bytes in 1 block, pool memory; largest" "its loss record says it is pool memory"
expect_not pool "not judged" "nothing said made as the scan ran in a program of one thread"
expect_rc "gdb's exit status"

session stomp "$progs/stomp" -ex start -ex kill -ex run
expect_count stomp '^memscope: at exit' 1 "no report when gdb kills the program, one when it exits"
expect stomp 'memscope: at exit: no leak, the program freed every block; 20 events recorded.' "no live block"
expect_rc "gdb's exit status"

session mismatch "$top_builddir/tests/progs/mismatch" -ex run
expect mismatch 'memscope: at exit: no leak, the program freed every block; ' "no live block"
expect mismatch "memscope: at exit: also 6 mismatched frees (\`msmemscope-replay " "the bad frees at exit"
expect_not mismatch 'are not checked' "no warning about the program's own operators"
expect_rc "gdb's exit status"

# A program with its own operator new: no mismatched frees told, and the
# line at exit and memscope info say why; the leaks report does not.
session ownnew "$top_builddir/tests/progs/ownnew" -ex run -ex 'memscope leaks' -ex 'memscope info'
expect ownnew 'memscope: at exit: 1 block leaked, 12 bytes, in 1 loss record' "the leak at exit"
expect_count ownnew '^memscope: warning: .*/ownnew defines operator new(std::size_t) itself, so mismatched frees are not checked' \
	1 "the warning at exit"
expect_count ownnew '^  warning: .*/ownnew defines operator new(std::size_t) itself' 1 "memscope info's warning"
expect_count ownnew 'are not checked' 2 "the warning at exit and in memscope info only"
expect_not ownnew 'mismatched frees: ' "no mismatched free counted"
expect_rc "gdb's exit status"

# A plugin with its own copy of the operators (tests/progs/ownplug-own.so):
# its new[] released by the program's delete[] and the reverse are not
# told mismatched, and the line at exit and memscope info say why; the
# program's own new[] released by delete still is.
session ownplug "$top_builddir/tests/progs/ownplug" -ex "set args $top_builddir/tests/progs/ownplug-own.so" -ex run \
	-ex 'memscope info'
expect ownplug 'memscope: at exit: also 1 mismatched free' "the real mismatched free at exit"
expect_count ownplug '^memscope: warning: 2 frees between the malloc and C++ families not told mismatched: .*/ownplug-own.so calls its own operator new(std::size_t)' \
	1 "the warning at exit"
expect_count ownplug '^  warning: 2 frees between the malloc and C++ families not told mismatched: .*/ownplug-own.so' 1 \
	"memscope info's warning"
expect ownplug '  mismatched frees: 1 ' "memscope info counts the real one"
expect_rc "gdb's exit status"
# Stopped in the plugin's delete[], after the first release across: the
# plugin, loaded with dlopen() and reached through dlsym(), is in the log
# already (the recorder records the modules loaded since at dlsym()), so
# the release is not told mismatched while the program runs either.
session ownplugrun "$top_builddir/tests/progs/ownplug" -ex "set args $top_builddir/tests/progs/ownplug-own.so" \
	-ex 'set breakpoint pending on' -ex 'break ownplug_drop' -ex run -ex 'memscope info' -ex delete -ex continue
expect_count ownplugrun '^  warning: 1 free between the malloc and C++ families not told mismatched: .*/ownplug-own.so' 1 \
	"memscope info while the program runs"
expect_not ownplugrun '  mismatched frees: ' "no mismatched free while the program runs"
expect_rc "gdb's exit status"

session norec "$progs/leaky" -ex 'set exec-wrapper env' -ex run -ex 'printf "events %d\n", $memscope_events'
expect norec 'exited normally' "the program ran without the recorder"
expect_not norec 'memscope: at exit' "no report when nothing was recorded"
expect norec 'events 0' "no events"
expect_rc "gdb's exit status"

# A CPython interpreter's state at exit is what the runtime keeps for
# itself: no leak, counted apart, as msmemscope's leaks report does.
if [ -x /usr/bin/python3 ]; then
	printf 'x = [dict(a=i) for i in range(100)]\n' >py.py
	session py /usr/bin/python3 -ex "set args $work/py.py" -ex run -ex 'memscope leaks full'
	expect py "memscope: at exit: no leak, the program freed every block; not leaks: " "python3's state at exit is no leak"
	expect py "kept by a runtime for itself: CPython's, at exit" "memscope leaks names the runtime"
	expect_not py "blocks leaked" "nothing called leaked"
	expect_rc "gdb's exit status"
	# Stopped before its exit, the same blocks are told without the
	# words of an exit that has not come.
	printf 'import os, signal\nx = [dict(a=i) for i in range(100)]\nos.kill(os.getpid(), signal.SIGTRAP)\n' >pystop.py
	session pystop /usr/bin/python3 -ex "set args $work/pystop.py" -ex run -ex 'memscope leaks full' -ex kill
	expect pystop "kept by a runtime for itself: CPython's: the state of the interpreter" \
		"memscope leaks names the runtime while the program runs"
	expect_not pystop "at exit" "no word of an exit while the program runs"
	expect_rc "gdb's exit status"
else
	note "/usr/bin/python3 is not installed: the runtime split at exit is not checked"
fi
