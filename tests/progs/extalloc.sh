#!/bin/sh
# SPDX-License-Identifier: MIT
# extalloc.sh: a replacement allocator's functions of its own
# (hooks/redirect.c). tests/progs/extalloc calls jemalloc's mallocx()
# family, tcmalloc's tc_ functions and mimalloc's mi_ functions (weak
# references), mixed with malloc and free, under Debian's
# libjemalloc.so.2, libtcmalloc_minimal.so.4 and libmimalloc.so.2
# preloaded after the recorder (as -ljemalloc, -ltcmalloc_minimal,
# -lmimalloc link them), built with lazy binding and with -z now
# (read-only GOT), and in a plugin (tests/progs/extplug.so) loaded with
# dlopen() after start-up:
#  - its output and exit status are as natively;
#  - every allocation and release is recorded: no free of an unknown
#    block, the program's only block live at exit is the one it keeps
#    (before: each block malloc'd and released by sdallocx was a leak,
#    each mallocx'd one freed was a bad free, the kept one was missed);
#  - in guard mode it runs with no finding, and a write past a mallocx'd
#    block is found when sdallocx releases it;
#  - the same where the program looks the functions up with dlsym()
#    (RTLD_DEFAULT and the allocator's handle) and calls them through
#    those pointers (before: the allocator's own, unrecorded);
#  - mimalloc's heaps: the blocks of a heap destroyed with them
#    (mi_heap_destroy) are recorded freed, an aligned one among them at
#    the address it was handed out at; the arena mimalloc maps for itself
#    (mi_reserve_os_memory) is no mapping of the program's, and neither
#    are the mappings under its blocks (before: 1000 bad frees and 32 MiB
#    of mimalloc's segments live at exit for a program that mixed
#    mi_malloc and free);
#  - a write past an mi_zalloc'd block is found in guard mode;
#  - without any allocator the recorder defines none of these names
#    (a program that looks for mallocx must not find it, nor dlsym()).
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

for p in extalloc extalloc-now; do
	[ -x "$MMS_PROGS/$p" ] || fail "the test program is not built: $MMS_PROGS/$p"
done
timeout=
command -v timeout >/dev/null 2>&1 && timeout="timeout 120"

# --- no allocator: the names stay undefined ----------------------------------
"$MMS_PROGS/extalloc" probe >probe.native 2>&1 || fail "extalloc probe exited $?: $(cat probe.native)"
record probe.mms "$MMS_PROGS/extalloc" probe >probe.out 2>&1 || fail "extalloc probe under the recorder exited $?: $(cat probe.out)"
expect_eq "what extalloc probe finds natively" "$(cat probe.native)" \
	"mallocx absent, tc_malloc absent, mi_malloc absent, dlsym mallocx absent, dlsym tc_malloc absent, dlsym mi_malloc absent"
expect_eq "what extalloc probe finds under the recorder" "$(cat probe.out)" "$(cat probe.native)"

libdirs="/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu) /usr/lib64 /usr/lib /usr/local/lib"
find_lib() {
	for d in $libdirs; do
		[ -f "$d/$1" ] && echo "$d/$1" && return 0
	done
	return 0
}
jemalloc=$(find_lib libjemalloc.so.2)
tcmalloc=$(find_lib libtcmalloc_minimal.so.4)
mimalloc=$(find_lib libmimalloc.so.2)
[ -n "$jemalloc$tcmalloc$mimalloc" ] ||
	skip "none of libjemalloc.so.2, libtcmalloc_minimal.so.4, libmimalloc.so.2 is installed (apt-get install libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0)"

pairs=5000
# run NAME LIB MODE KEPT_BYTES CALLS: extalloc MODE under LIB, natively
# and recorded, with both builds; CALLS: its allocations besides the
# threads' pairs.
run() {
	_name=$1 _lib=$2 _mode=$3 _kept=$4 _calls=$5
	for _p in extalloc extalloc-now; do
		_t=$_name-$_mode-$_p
		_rc=0
		LD_PRELOAD=$_lib "$MMS_PROGS/$_p" "$_mode" $pairs >"$_t.native" 2>&1 || _rc=$?
		expect_eq "$_p $_mode's exit status under $_name alone" "$_rc" 0
		_rc=0
		$timeout env LD_PRELOAD="$MMS_HOOKS:$_lib" MSMEMSCOPE_LOG="$_t.mms" "$MMS_PROGS/$_p" "$_mode" $pairs \
			>"$_t.out" 2>"$_t.err" || _rc=$?
		expect_eq "$_p $_mode's exit status under the recorder and $_name" "$_rc" 0
		diff -u "$_t.native" "$_t.out" >"$_t.diff" ||
			fail "$_p $_mode's output differs under the recorder: $(cat "$_t.diff") $(cat "$_t.err")"
		summarize "$_t.mms"
		expect_consistent "$_t.mms.json"
		# The two threads' pairs, and the calls before them.
		expect_ge "$_t: allocations recorded" "$(jget "$_t.mms.json" allocs)" $((2 * pairs + _calls))
		"$MMS_REPLAY" "$_t.mms" --analysis leaks --json >"$_t.leaks" 2>>"$_t.err" ||
			fail "leaks of $_t.mms exited $?: $(cat "$_t.err")"
		expect_eq "$_t: the program's blocks live at exit (and their bytes)" \
			"$(kept_at_exit "$_t.leaks") $(kept_at_exit "$_t.leaks" bytes)" "1 $_kept"
		# Guard mode: guarded blocks through the same functions, freed
		# by the others, with no finding.
		_rc=0
		$timeout env LD_PRELOAD="$MMS_HOOKS:$_lib" MSMEMSCOPE_LOG="$_t.g.mms" MSMEMSCOPE_CONFIG=guard=1 \
			"$MMS_PROGS/$_p" "$_mode" $pairs >"$_t.g.out" 2>"$_t.g.err" || _rc=$?
		expect_eq "$_p $_mode's exit status in guard mode under $_name" "$_rc" 0
		diff -u "$_t.native" "$_t.g.out" >"$_t.g.diff" ||
			fail "$_p $_mode's output differs in guard mode: $(cat "$_t.g.diff") $(cat "$_t.g.err")"
		"$MMS_REPLAY" "$_t.g.mms" --analysis guard --json >"$_t.g.json" 2>>"$_t.g.err" ||
			fail "guard of $_t.g.mms exited $?: $(cat "$_t.g.err")"
		expect_key "$_t.g.json" errors 0
		summarize "$_t.g.mms"
		expect_consistent "$_t.g.mms.json"
	done
}

# overflow_found LIB MODE: extalloc MODE in guard mode under LIB writes
# one byte past a block of 100 bytes and releases it: that one finding.
overflow_found() {
	env LD_PRELOAD="$MMS_HOOKS:$1" MSMEMSCOPE_LOG="$2.mms" MSMEMSCOPE_CONFIG=guard=1 \
		"$MMS_PROGS/extalloc" "$2" >"$2.out" 2>&1 || fail "extalloc $2 exited $?: $(cat "$2.out")"
	"$MMS_REPLAY" "$2.mms" --analysis guard --json >"$2.json" 2>"$2.err" ||
		fail "guard of $2.mms exited $?: $(cat "$2.err")"
	expect_key "$2.json" errors 1
	expect_key "$2.json" findings.0.kind '"overflow"'
	expect_key "$2.json" findings.0.size 100
	expect_key "$2.json" findings.0.offset 100
}

if [ -n "$jemalloc" ]; then
	LD_PRELOAD=$jemalloc "$MMS_PROGS/extalloc" probe >probe.je.native 2>&1
	env LD_PRELOAD="$MMS_HOOKS:$jemalloc" MSMEMSCOPE_LOG=probe.je.mms "$MMS_PROGS/extalloc" probe >probe.je.out 2>&1
	expect_eq "extalloc probe under jemalloc and the recorder" "$(cat probe.je.out)" "$(cat probe.je.native)"
	run jemalloc "$jemalloc" je 64 8
	run jemalloc "$jemalloc" je-dlsym 91 3
	# A plugin loaded with dlopen() after start-up: its calls are
	# redirected when the program reaches it through dlsym().
	[ -f "$MMS_PROGS/extplug.so" ] || fail "the test plugin is not built: $MMS_PROGS/extplug.so"
	env LD_PRELOAD="$MMS_HOOKS:$jemalloc" MSMEMSCOPE_LOG=plug.mms "$MMS_PROGS/extalloc" je-plugin $pairs \
		"$MMS_PROGS/extplug.so" >plug.out 2>&1 || fail "extalloc je-plugin exited $?: $(cat plug.out)"
	expect_eq "extalloc je-plugin's output" "$(cat plug.out)" "plugin: ran"
	summarize plug.mms
	expect_consistent plug.mms.json
	expect_ge "the plugin's allocations recorded" "$(jget plug.mms.json allocs)" $((pairs + 1))
	"$MMS_REPLAY" plug.mms --analysis leaks --json >plug.leaks 2>plug.err || fail "leaks of plug.mms exited $?: $(cat plug.err)"
	expect_eq "the plugin's blocks live at exit (and their bytes)" \
		"$(kept_at_exit plug.leaks) $(kept_at_exit plug.leaks bytes)" "1 77"
	# A write past a mallocx'd block, found in guard mode when sdallocx
	# releases it.
	overflow_found "$jemalloc" je-overflow
	note "jemalloc ($jemalloc): mallocx, rallocx, xallocx, sallocx, dallocx, sdallocx recorded (lazy and -z now GOT, a dlopen()ed plugin, pointers from dlsym()), guard mode whole"
else
	note "libjemalloc.so.2 is not installed: its part not run (apt-get install libjemalloc2)"
fi
if [ -n "$tcmalloc" ]; then
	run tcmalloc "$tcmalloc" tc 48 8
	run tcmalloc "$tcmalloc" tc-dlsym 39 3
	note "tcmalloc ($tcmalloc): its tc_ functions recorded (lazy and -z now GOT, pointers from dlsym()), guard mode whole"
else
	note "libtcmalloc_minimal.so.4 is not installed: its part not run (apt-get install libtcmalloc-minimal4)"
fi
if [ -n "$mimalloc" ]; then
	run mimalloc "$mimalloc" mi 57 126
	run mimalloc "$mimalloc" mi-dlsym 43 3
	for _p in extalloc extalloc-now; do
		expect_key "mimalloc-mi-$_p.mms.json" kinds.mmap.allocs 0
		expect_key "mimalloc-mi-$_p.g.mms.json" kinds.mmap.allocs 0
		# Its one refusal: mi_zalloc() of 4 EiB (not mi_mallocn()'s
		# overflow, which sets no errno, nor mi_strdup(NULL)'s NULL with
		# errno ENOMEM from before). Guard mode records none.
		expect_key "mimalloc-mi-$_p.mms.json" by_kind.alloc_fail 1
	done
	overflow_found "$mimalloc" mi-overflow
	note "mimalloc ($mimalloc): its mi_ functions recorded, its heaps' too (one destroyed with its blocks), its own mappings not the program's (lazy and -z now GOT, pointers from dlsym()), guard mode whole"
else
	note "libmimalloc.so.2 is not installed: its part not run (apt-get install libmimalloc2.0)"
fi
