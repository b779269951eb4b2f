#!/bin/sh
# SPDX-License-Identifier: MIT
# unwind.sh: the recorder's stack walker must capture the same stacks as
# libunwind. With MSMEMSCOPE_UNWIND_CHECK=1 the recorder captures every
# stack both ways and prints, at exit, how many it captured, how many the
# walker handled itself and how many differed; that count must be 0 for
# the test programs (deep recursion, a dlopen'd library, threads, signal
# handlers, C++ exceptions) and for sqlite3, python3 and gcc when they are
# installed. Stacks through a signal frame or on an alternate signal stack
# are libunwind's: the counts of those fallbacks are checked too. With
# MSMEMSCOPE_UNWIND=libunwind, libunwind alone captures the same stacks.
. "$top_srcdir/tests/progs/lib.sh"

# checked NAME DEPTH CMD...: runs CMD recorded with stacks of DEPTH frames
# in the check mode; sets stacks, walked, mismatches and the fallback
# counts (no_stack, unsupported), summed over its processes.
checked() {
	_name=$1
	_depth=$2
	shift 2
	# (timeout: a hang, as a deadlock between unwinders, fails the test.)
	MSMEMSCOPE_UNWIND_CHECK=1 MSMEMSCOPE_CONFIG="call_stack=$_depth" timeout 300 \
		env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG="$_name.mms" "$@" \
		>"$_name.out" 2>"$_name.err" </dev/null || fail "$_name under the recorder exited $?: $(tail -3 "$_name.err")"
	grep -q '^msmemscope: unwind check:' "$_name.err" || fail "$_name printed no unwind check line"
	set -- $(awk '/^msmemscope: unwind check:/ {
		for (i = 1; i <= NF; i++) {
			v = $(i - 1) + 0
			if ($i == "stacks,") s += v; else if ($i == "walked,") w += v
			else if ($i == "mismatches;") m += v
			else if ($(i - 1) == "no-stack") ns += $i
			else if ($(i - 1) == "unsupported") u += $i
		}
	} END { printf "%d %d %d %d %d\n", s, w, m, ns, u }' "$_name.err")
	stacks=$1 walked=$2 mismatches=$3 no_stack=$4 unsupported=$5
	note "$_name: $stacks stacks, $walked walked, $mismatches mismatches, fell back: $no_stack off the stack, $unsupported unsupported"
	expect_eq "$_name stacks that differ from libunwind's" "$mismatches" 0
	expect_ge "$_name stacks captured" "$stacks" 1
	rm -f "$_name.mms"
}

[ "$(uname -m)" = x86_64 ] || skip "the stack walker is x86-64 only: everything else is libunwind's"
lib=$MMS_PROGS/unwindlib.so
lib2=$MMS_PROGS/unwindlib2.so
[ -f "$lib" ] && [ -f "$lib2" ] || fail "tests/progs/unwindlib.so and unwindlib2.so are not built"

# Deep enough for the whole stack (walks end at _start or clone3), and
# shorter than most stacks (walks end at the depth, and go on from the
# last walk's frames).
for depth in 1000 24; do
	checked unwind$depth $depth "$MMS_PROGS/unwind" "$lib" "$lib2" 150
	allocs=$(sed -n 's/^allocs=//p' unwind$depth.out)
	expect_ge "unwind$depth allocations" "$allocs" 8000
	expect_ge "unwind$depth stacks" "$stacks" "$allocs"
	# All but the signal handlers' stacks (and a few the C runtime
	# makes at start-up, before main) are the walker's.
	expect_ge "unwind$depth stacks walked" "$walked" $((allocs - 200))
	# 20 handlers on an alternate stack, 4 allocations each, and 20 on
	# the thread's stack, whose stacks go through a signal frame; 10
	# stacks through a frame whose CFA is in rbx.
	expect_ge "unwind$depth stacks on the alternate signal stack" "$no_stack" 80
	expect_ge "unwind$depth stacks through a signal frame or the rbx frame" "$unsupported" 90
done

checked unwindxx 64 "$MMS_PROGS/unwindxx" 400
expect_eq "unwindxx output" "$(cat unwindxx.out)" "caught=800"
expect_ge "unwindxx stacks walked" "$walked" 4000

checked cxx 32 "$MMS_PROGS/cxx" 2 2000
expect_ge "cxx stacks walked" "$walked" 8000
checked threads8 16 "$MMS_PROGS/threads8" 4 5000 10
expect_ge "threads8 stacks walked" "$walked" 20000

# MSMEMSCOPE_UNWIND=libunwind: every stack is libunwind's, and the leaks
# program's stacks are the walker's, frame for frame.
for u in walker libunwind; do
	MSMEMSCOPE_UNWIND=$u MSMEMSCOPE_CONFIG=call_stack=16 record leaks-$u.mms "$MMS_PROGS/leaks" \
		>leaks-$u.out 2>leaks-$u.err || fail "leaks with MSMEMSCOPE_UNWIND=$u exited $?: $(tail -3 leaks-$u.err)"
	"$MMS_REPLAY" leaks-$u.mms --analysis leakage --output-dir leaks-$u >/dev/null 2>&1 ||
		fail "msmemscope-replay --analysis leakage on leaks-$u.mms failed"
	# Size, kind, type, owner and the stack of each block live at the end.
	cut -f4- leaks-$u/leakage.tsv >leaks-$u.stacks
done
expect_ge "leaks blocks with main on their stack" "$(grep -c 'main (leaks)' leaks-walker.stacks)" 5
expect_eq "leaks stacks by libunwind alone" "$(cat leaks-libunwind.stacks)" "$(cat leaks-walker.stacks)"

# Programs of the real world, when installed.
# Threads with stacks of PTHREAD_STACK_MIN (16 KiB): the capture's
# frames are kept in the recorder's memory, not on those stacks, with
# every unwinder and the deepest stacks asked for.
for threads in 1 4; do
	"$MMS_PROGS/smallstack" $threads >small.native-$threads || fail "smallstack natively exited $?"
done
# Four threads at once, with every unwinder. libunwind and the check
# mode deadlocked here (a free that dlclose makes, holding the loader's
# lock of the module list, waited for libunwind's lock, which another
# thread's libunwind walk held while it waited for the loader's): the
# loader's own calls are not walked by libunwind now.
for how in walker:16 walker:1000 libunwind:64; do
	threads=4
	s=small-${how%%:*}-${how#*:}
	# (timeout: a child waiting for the loader's lock would wait forever.)
	MSMEMSCOPE_UNWIND=${how%%:*} MSMEMSCOPE_CONFIG="call_stack=${how#*:}" timeout 120 env LD_PRELOAD="$MMS_HOOKS" \
		MSMEMSCOPE_LOG=$s.mms "$MMS_PROGS/smallstack" $threads >$s.out 2>$s.err ||
		fail "smallstack recorded ($how) exited $?: $(tail -3 $s.err)"
	expect_eq "smallstack's output recorded ($how)" "$(cat $s.out)" "$(cat small.native-$threads)"
	summarize $s.mms
	expect_ge "smallstack's allocations in the log ($how)" "$(jget $s.mms.json allocs)" $((6400 * threads))
	expect_eq "smallstack's fork children's logs ($how)" "$(ls $s.*.mms | wc -l)" $((10 * threads))
done
checked small 32 "$MMS_PROGS/smallstack" 4
expect_eq "smallstack's output in the check mode" "$(cat small.out)" "$(cat small.native-4)"
expect_eq "smallstack: stacks that differ" "$mismatches" 0

# Threads whose first allocation pthread_getattr_np() makes, holding the
# thread's lock (a JVM's, Rust's), or whose first event is an mmap an
# allocator of the program's own makes there (rustc's jemalloc): the
# first capture asked it for the thread's stack from inside, and waited
# forever.
"$MMS_PROGS/threadattr" 8 >attr.native || fail "threadattr natively exited $?"
for how in walker libunwind guard own; do
	prog=threadattr unwind=$how config="call_stack=16"
	[ $how = guard ] && unwind=walker config="call_stack=16;guard=1"
	[ $how = own ] && unwind=walker prog=threadattr-own
	MSMEMSCOPE_UNWIND=$unwind MSMEMSCOPE_CONFIG="$config" timeout 120 env LD_PRELOAD="$MMS_HOOKS" \
		MSMEMSCOPE_LOG=attr-$how.mms "$MMS_PROGS/$prog" 8 >attr-$how.out 2>attr-$how.err ||
		fail "$prog recorded ($how) exited $?: $(tail -3 attr-$how.err)"
	expect_eq "$prog's output recorded ($how)" "$(cat attr-$how.out)" "$(cat attr.native)"
done
checked attr 16 "$MMS_PROGS/threadattr" 8
note "threads whose first allocation is pthread_getattr_np()'s run recorded with stacks, in every mode"

# An allocator that holds its lock across fork and protects a page under
# it (in its child handler, and in another thread meanwhile), as
# chromium's PartitionAlloc does: the child's first capture asked
# pthread_getattr_np(), which allocates, for its stack (forklock, whose
# allocator glibc's stdio uses); the recorder's prepare handler, run
# before the allocator's, held the recorder's locks while that waited for
# its own (forklock-plug, whose allocator's handlers are older than the
# recorder's). Both hung.
"$MMS_PROGS/forklock-plug" 1 >/dev/null 2>&1 && fail "forklock-plug ran without its allocator"
for prog in forklock forklock-plug; do
	plug=
	[ $prog = forklock-plug ] && plug=" $MMS_PROGS/forklock.so"
	for how in walker libunwind guard; do
		unwind=$how config="call_stack=16"
		[ $how = guard ] && unwind=walker config="call_stack=16;guard=1"
		MSMEMSCOPE_UNWIND=$unwind MSMEMSCOPE_CONFIG="$config" timeout 120 \
			env LD_PRELOAD="$MMS_HOOKS$plug" MSMEMSCOPE_LOG=$prog-$how.mms \
			"$MMS_PROGS/$prog" 200 >$prog-$how.out 2>$prog-$how.err ||
			fail "$prog recorded ($how) exited $?: $(tail -3 $prog-$how.err)"
		expect_eq "$prog's output recorded ($how)" "$(cat $prog-$how.out)" "done 200"
		expect_eq "$prog's children's logs ($how)" "$(ls $prog-$how.*.mms | wc -l)" 200
	done
done
note "forks under an allocator that holds its lock across fork run recorded with stacks, in every mode"

if command -v sqlite3 >/dev/null 2>&1; then
	awk 'BEGIN { print "create table t(a, b);"; print "begin;";
		for (i = 0; i < 2000; i++) printf "insert into t values(%d, \"row %d of the table\");\n", i, i;
		print "commit;"; print "select count(*) from t;" }' >inserts.sql
	checked sqlite3 32 sqlite3 -batch -init /dev/null :memory: ".read inserts.sql"
	expect_eq "sqlite3 output" "$(cat sqlite3.out)" 2000
else
	note "sqlite3 is not installed: not checked"
fi
if command -v "$MMS_PYTHON" >/dev/null 2>&1; then
	checked python3 32 "$MMS_PYTHON" -c 'import json; d = [{"k": i, "v": str(i) * 3} for i in range(5000)]; print(len(json.loads(json.dumps(d))))'
	expect_eq "python3 output" "$(cat python3.out)" 5000
fi
if command -v gcc >/dev/null 2>&1; then
	printf '#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n' >hello.c
	checked gcc 32 gcc -O2 -c hello.c -o hello.o
else
	note "gcc is not installed: not checked"
fi
exit 0
