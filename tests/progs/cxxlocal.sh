#!/bin/sh
# SPDX-License-Identifier: MIT
# cxxlocal.sh: a C++ library loaded with RTLD_LOCAL (as Python loads
# PyTorch) calls the allocation operators, which the recorder exports,
# while its C++ runtime is out of the global scope where the recorder
# looks first: libstdc++ as the plugin's dependency (cxxplug.so), or
# linked into it (cxxplugs.so, -static-libstdc++: no runtime the recorder
# can find). The operators must work as natively (aligned new keeps its
# alignment: before, the recorder fell back to plain malloc there, and
# looked the runtime up again, failing, at every call) and every
# allocation is recorded.
. "$top_srcdir/tests/progs/lib.sh"

n=2000
for plug in cxxplug.so cxxplugs.so; do
	[ -e "$MMS_PROGS/$plug" ] || fail "$plug is not built"
	native=$("$MMS_PROGS/cxxlocal" "$MMS_PROGS/$plug" $n) || fail "cxxlocal $plug exited $? natively"
	expect_eq "$plug natively" "$native" "cxxlocal $n 0"
	record $plug.mms "$MMS_PROGS/cxxlocal" "$MMS_PROGS/$plug" $n >$plug.out || fail "cxxlocal $plug exited $?"
	expect_eq "$plug recorded" "$(cat $plug.out)" "cxxlocal $n 0"
	summarize $plug.mms
	# Five allocations an iteration, each freed.
	a=$(jget $plug.mms.json allocs)
	[ "$a" -ge $((5 * n)) ] || fail "$plug: $a allocations recorded, want at least $((5 * n))"
done

# What is live at exit is not the program's: the plugin stays loaded (no
# dlclose), so the dynamic loader keeps its link map and version data
# (runtime "loader", told by the innermost frame of each block's stack, in
# ld.so), and libstdc++'s exception pool, allocated when the plugin's
# libstdc++ was loaded, is freed at exit by its __gnu_cxx::__freeres,
# found out of the global scope (RTLD_NOLOAD).
MSMEMSCOPE_CONFIG=call_stack=16 record exit.mms "$MMS_PROGS/cxxlocal" "$MMS_PROGS/cxxplug.so" 10 >exit.out ||
	fail "cxxlocal cxxplug.so exited $? with stacks"
summarize exit.mms
expect_ge "cxxplug.so: the loader's blocks live at exit" "$(jget exit.mms.json runtime.loader.blocks)" 1
expect_key exit.mms.json runtime_live_blocks "$(jget exit.mms.json live_blocks)"
"$MMS_REPLAY" exit.mms --analysis leaks >exit.leaks 2>&1 || fail "leaks on exit.mms exited $?"
grep -q "No leaks at exit: every block of the program's was freed" exit.leaks ||
	fail "the loader's or libstdc++'s blocks are called the program's leaks: $(cat exit.leaks)"
grep -q "the dynamic loader's, for a library loaded with dlopen() and still loaded at exit" exit.leaks ||
	fail "the leaks report does not name the loader's blocks: $(cat exit.leaks)"
# Without stacks too: the recorder marks what ld.so allocates (its
# caller's address is in ld.so) as the loader's, and a failed dlopen()'s
# dlerror() state, read or not, is glibc's: the dlsym() the recorder
# makes at exit frees it, recorded (made unrecorded, as before, the state
# looked leaked). The program's output stays its own: the plugin's first
# new, after the failed dlopen, has the recorder look libstdc++'s
# operator up, which must leave the pending error for the program's
# dlerror() (a dlsym() there, as before, consumed it: "no error").
# Guard mode records through guard.c, which must pass the caller along.
for stacks in 0 16 guard; do
	for how in none unread read; do
		n=exit$stacks$how
		set -- "$MMS_PROGS/cxxlocal" "$MMS_PROGS/cxxplug.so" 10
		[ $how = none ] || set -- "$@" $how "$PWD/no-such-plugin.so"
		native=$("$@") || fail "cxxlocal $how exited $? natively"
		config=call_stack=$stacks
		[ $stacks != guard ] || config=guard=1
		MSMEMSCOPE_CONFIG=$config record $n.mms "$@" >$n.out || fail "cxxlocal $how exited $? recorded"
		expect_eq "$n: the program's output" "$(cat $n.out)" "$native"
		summarize $n.mms
		expect_consistent $n.mms.json
		expect_ge "$n: the loader's blocks live at exit" "$(jget $n.mms.json runtime.loader.blocks)" 1
		expect_key $n.mms.json runtime_live_blocks "$(jget $n.mms.json live_blocks)"
		"$MMS_REPLAY" $n.mms --analysis leaks >$n.leaks 2>&1 || fail "leaks on $n.mms exited $?"
		grep -q "No leaks at exit: every block of the program's was freed" $n.leaks ||
			fail "$n: the loader's or glibc's blocks are called the program's leaks: $(cat $n.leaks)"
	done
done
echo "cxxlocal.sh: ok"
