#!/bin/sh
# SPDX-License-Identifier: MIT
# ownmalloc.sh: programs whose malloc family is not the C library's.
#  - tests/progs/ownmalloc defines malloc itself (tests/progs/ownalloc.c
#    linked in, as a program built with a static jemalloc or an allocator
#    of its own): it must run to its end under the launcher as natively
#    (an allocator that calls mmap under its lock, from libstdc++'s
#    start-up before the recorder's, once made the recorder's start-up
#    wait for that lock forever), and the reports must say that its
#    malloc's blocks are not recorded, naming the program, instead of "no
#    leak" (launcher, --summary and its JSON's own_malloc, leaks).
#  - tests/progs/family under tests/progs/allocplug.so, the same
#    allocator as a library preloaded after the recorder (the recorder's
#    real malloc, as -ljemalloc is): every call recorded as with glibc's,
#    and the allocator's own mmap and munmap inside malloc and free are
#    its internals, not events lost to a signal (no warning, lost_events 0).
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"
prog=$MMS_PROGS/ownmalloc
plug=$MMS_PROGS/allocplug.so
family=$MMS_PROGS/family
for f in "$prog" "$family"; do
	[ -x "$f" ] || fail "the test program is not built: $f"
done
[ -f "$plug" ] || fail "the test allocator is not built: $plug"
timeout=
command -v timeout >/dev/null 2>&1 && timeout="timeout 120"

# --- a malloc of the program's own ------------------------------------------
"$prog" >native.out 2>&1 || fail "ownmalloc exited $? natively: $(cat native.out)"
rc=0
$timeout "$MMS_LAUNCHER" --output=out -- "$prog" >rec.out 2>rec.err || rc=$?
[ "$rc" != 124 ] || fail "ownmalloc under the launcher did not finish in 120 s (the recorder's start-up waits for the allocator's lock?)"
expect_eq "ownmalloc's exit status under the launcher" "$rc" 0
diff -u native.out rec.out >diff.out || fail "ownmalloc's output differs under the recorder: $(cat diff.out)"
exe=$(cd "$MMS_PROGS" && pwd -P)/ownmalloc
grep -qF "$exe defines malloc itself (an allocator linked into the program): the calls of its malloc family never reach the recorder" rec.err ||
	fail "the launcher does not say that the program's own malloc is not recorded: $(cat rec.err)"
grep -qF 'No recorded block live at exit; the program'"'"'s own malloc'"'"'s blocks were not recorded (see the warning).' rec.err ||
	fail "the leaks report does not say the program's blocks were not recorded: $(cat rec.err)"
if grep -q 'every block was freed' rec.err; then
	fail "the report claims every block was freed: $(cat rec.err)"
fi
set -- out/msmemscope_*/memscope_*.mms
[ $# = 1 ] && [ -f "$1" ] || fail "expected one log in out/, found: $*"
log=$1
summarize "$log"
expect_key "$log.json" own_malloc "\"$exe\""
"$MMS_REPLAY" "$log" --summary >summary.out 2>summary.err || fail "--summary exited $?: $(cat summary.err)"
grep -qF "$exe defines malloc itself" summary.err || fail "--summary does not warn: $(cat summary.err)"
note "ownmalloc: ran as natively; its own malloc said to be unrecorded"

# --- an allocator preloaded after the recorder ------------------------------
# (Preloaded into the program only, with the recorder first, as the launcher
# does: a launcher built with ASan refuses a preload of its own.)
LD_PRELOAD=$plug "$family" >plug.native 2>&1 || fail "family under allocplug.so exited $? natively: $(cat plug.native)"
rc=0
$timeout env LD_PRELOAD="$MMS_HOOKS:$plug" MSMEMSCOPE_LOG=plug.mms "$family" >plug.out 2>plug.err || rc=$?
expect_eq "family's exit status under the recorder and allocplug.so" "$rc" 0
diff -u plug.native plug.out >diff.out || fail "family's output differs under the recorder: $(cat diff.out)"
"$MMS_REPLAY" plug.mms --summary >plug.summary 2>>plug.err || fail "--summary exited $?: $(cat plug.err)"
if grep -q 'not recorded\|defines malloc' plug.err; then
	fail "a warning about events not recorded with a preloaded allocator: $(cat plug.err)"
fi
set -- plug.mms
summarize "$1"
expect_key "$1.json" lost_events 0
expect_key "$1.json" own_malloc null
expect_consistent "$1.json"
# family.c's malloc family: 28 allocations, 26 frees, 2 blocks of 333 bytes
# live at exit (what the C runtime allocates for itself may add some).
expect_ge "family's allocations recorded" "$(jget "$1.json" allocs)" 28
expect_ge "family's frees recorded" "$(jget "$1.json" frees)" 26
# What the allocator's library allocated for itself at its start-up (24
# bytes, as tcmalloc's does) is not the program's leak: family's two
# blocks of 333 bytes are.
"$MMS_REPLAY" "$1" --analysis leaks --json >plug.leaks 2>>plug.err || fail "leaks of $1 exited $?: $(cat plug.err)"
expect_eq "the program's blocks live at exit under allocplug.so" "$(kept_at_exit plug.leaks) $(kept_at_exit plug.leaks bytes)" "2 666"
expect_eq "the allocator's own block" "$(jget plug.leaks runtime.by_kind.c.blocks) $(jget plug.leaks runtime.by_kind.c.bytes)" "1 24"
# No scan at exit under a malloc that replaces glibc's: its caches and
# metadata keep pointers to blocks (jemalloc's made every leaked block
# read as reachable: "no leaks"); the blocks are listed as live at exit,
# and the reports say why.
expect_key "$1.json" reach_scan '"allocator"'
"$MMS_REPLAY" "$1" --analysis leaks >plug.txt 2>>plug.err || fail "leaks of $1 exited $?: $(cat plug.err)"
grep -q "^(scan at exit: not made: the program's malloc is a library's that replaces glibc's" plug.txt ||
	fail "the leaks report does not say why its blocks have no verdicts: $(cat plug.txt)"
# --error-exitcode counts them as definite leaks, and says they are only
# live at exit.
rc=0
"$MMS_REPLAY" "$1" --analysis leaks --error-exitcode 7 >/dev/null 2>plug.ec || rc=$?
expect_eq "--error-exitcode 7 with 2 blocks live at exit and no scan" "$rc" 7
grep -q "^msmemscope-replay: 2 errors: 2 leaks (definite,possible; 2 of them live at exit, with no scan to tell leaked from reachable) and 0 guard findings" plug.ec ||
	fail "--error-exitcode does not say its leaks were not told by a scan: $(cat plug.ec)"
note "family under allocplug.so: its calls recorded, the allocator's own mmap and munmap not counted as lost, its own state at start-up not a leak, no scan at exit"

# The same with Debian's jemalloc and mimalloc, where installed: their
# leaks are listed, not called reachable.
# other_allocator NAME FILE PACKAGE: reach and cxx under the library FILE.
other_allocator() {
	_n=$1 _lib=
	for d in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib; do
		[ -f "$d/$2" ] && _lib=$d/$2 && break
	done
	if [ -z "$_lib" ] || [ ! -x "$MMS_PROGS/reach" ]; then
		note "$2 is not installed (apt-get install $3): not checked with $_n"
		return 0
	fi
	$timeout env LD_PRELOAD="$MMS_HOOKS:$_lib" MSMEMSCOPE_LOG="$_n.mms" "$MMS_PROGS/reach" >"$_n.out" 2>"$_n.err" ||
		fail "reach under $_n exited $?: $(cat "$_n.err")"
	"$MMS_REPLAY" "$_n.mms" --analysis leaks --json >"$_n.json" 2>>"$_n.err" ||
		fail "leaks of $_n.mms exited $?: $(cat "$_n.err")"
	expect_key "$_n.json" at_exit.reach_known false
	expect_ge "reach's blocks listed live at exit under $_n" "$(jget "$_n.json" at_exit.leaks)" 11
	note "$_n ($_lib): no scan at exit, reach's leaked blocks listed as live at exit"
	# jemalloc's (and mimalloc's) own operator new and delete allocate
	# without malloc and free: the recorder's operators go through its
	# malloc hooks instead, so that each new and delete is recorded (none
	# was under jemalloc: 2 allocations, and the deletes as frees of
	# blocks never allocated); the aligned nothrow ones too (100 of them:
	# before, unrecorded news and their deletes bad frees).
	[ -x "$MMS_PROGS/cxx" ] || return 0
	$timeout env LD_PRELOAD="$MMS_HOOKS:$_lib" MSMEMSCOPE_LOG="${_n}cxx.mms" "$MMS_PROGS/cxx" 2 1000 100 \
		>"${_n}cxx.out" 2>"${_n}cxx.err" || fail "cxx under $_n exited $?: $(cat "${_n}cxx.err")"
	grep -q ' allocs=4100$' "${_n}cxx.out" || fail "cxx under $_n printed $(cat "${_n}cxx.out")"
	summarize "${_n}cxx.mms"
	expect_ge "cxx's allocations recorded under $_n (2 threads x 1000 x 2, 100 aligned)" \
		"$(jget "${_n}cxx.mms.json" allocs)" 4100
	expect_ge "cxx's frees recorded under $_n" "$(jget "${_n}cxx.mms.json" frees)" 4100
	expect_key "${_n}cxx.mms.json" lost_events 0
	expect_consistent "${_n}cxx.mms.json"
	"$MMS_REPLAY" "${_n}cxx.mms" --analysis leaks --json >"${_n}cxx.json" 2>>"${_n}cxx.err" ||
		fail "leaks of ${_n}cxx.mms exited $?: $(cat "${_n}cxx.err")"
	expect_eq "cxx's blocks live at exit under $_n" "$(jget "${_n}cxx.json" at_exit.leaks)" 0
	note "$_n: C++ new and delete recorded through the malloc hooks (4100 of each, 100 aligned nothrow), none live at exit"
}
other_allocator jemalloc libjemalloc.so.2 libjemalloc2
other_allocator mimalloc libmimalloc.so.2 libmimalloc2.0

# --- gdb: memscope info, memscope leaks and the line at exit say it too ----
script=$top_builddir/gdb/memscope.gdb
if [ "${MMS_SANITIZE:-}" = yes ]; then
	note "gdb: not run with the replay library built with AddressSanitizer (gdb's Python cannot load it)"
elif command -v gdb >/dev/null 2>&1 && [ -f "$script" ]; then
	XDG_STATE_HOME=$PWD/state gdb -nx -batch -x "$script" -ex run -ex 'memscope info' -ex 'memscope leaks' \
		--args "$prog" >gdb.out 2>&1 </dev/null || fail "the gdb session exited $?: $(tail -5 gdb.out)"
	grep -q 'Traceback\|Python Exception' gdb.out && fail "gdb's Python raised: $(cat gdb.out)"
	grep -qF 'memscope: at exit: no leak, the program freed every recorded block' gdb.out ||
		fail "gdb's exit line does not say 'recorded': $(cat gdb.out)"
	expect_eq "gdb's warnings of the program's own malloc (exit, info, leaks)" \
		"$(grep -c "$exe defines malloc itself" gdb.out)" 3
	note "gdb: the exit line, memscope info and memscope leaks say the program's malloc is not recorded"
else
	note "gdb or memscope.gdb missing: the gdb part is not checked"
fi
