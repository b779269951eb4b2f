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
echo "cxxlocal.sh: ok"
