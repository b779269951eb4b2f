#!/bin/sh
# SPDX-License-Identifier: MIT
# headers.sh: every public header compiles on its own, first in its
# translation unit, as strict C11 (-std=c11 -pedantic -Wall -Wextra
# -Werror) and as C++; the umbrella msmemscope-replay.h includes every
# header of include/msmemscope/; no public header includes an internal
# one or names the library's internals (mms__*); and each internal
# header of replay/ compiles on its own.
set -eu
: "${top_srcdir:?run this test through make check}"
: "${top_builddir:?run this test through make check}"
test_dir=tests/progs
. "$top_srcdir/tests/testlib.sh"

inc=$top_srcdir/include
cc=${MMS_CC:-cc}
cxx=${MMS_CXX:-}
# The C++ compiler is optional: configure sets CXX to g++ even when none
# is installed.
if [ -n "$cxx" ] && ! echo 'int main(void) { return 0; }' | $cxx -x c++ -fsyntax-only - 2>/dev/null; then
	cxx=
fi

n=0
for h in "$inc"/msmemscope.h "$inc"/msmemscope-replay.h "$inc"/msmemscope-config.h "$inc"/msmemscope/*.h; do
	[ -f "$h" ] || fail "no header at $h"
	name=${h#"$inc"/}
	printf '#include "%s"\n' "$name" >one.c
	$cc -std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$inc" one.c ||
		fail "$name does not compile alone as C11"
	if [ -n "$cxx" ]; then
		$cxx -x c++ -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$inc" one.c ||
			fail "$name does not compile alone as C++"
	fi
	if grep -nE '#[ 	]*include[ 	]*"(format|conf|[a-z-]*-int)\.h"' "$h"; then
		fail "$name includes an internal header"
	fi
	if grep -nE '\bmms__[a-z]' "$h"; then
		fail "$name names the library's internals"
	fi
	case $name in
	msmemscope/*)
		grep -qF "#include \"$name\"" "$inc/msmemscope-replay.h" ||
			fail "msmemscope-replay.h does not include $name"
		;;
	esac
	n=$((n + 1))
done
[ "$n" -ge 12 ] || fail "only $n public headers found"
note "$n public headers compile alone as C11${cxx:+ and C++}"

# The replay library's internal headers, one per module, compile alone
# too (as GNU C11, the library's dialect).
m=0
for h in "$top_srcdir"/replay/*/*-int.h; do
	name=${h#"$top_srcdir"/}
	printf '#include "%s"\n' "${h##*/}" >one.c
	$cc -std=gnu11 -Wall -Wextra -Werror -fsyntax-only -I"$inc" -I"$top_srcdir/common" \
		-I"$top_srcdir/replay/core" -I"$top_srcdir/replay/analyses" -I"$top_srcdir/replay/exports" \
		-I"$top_builddir" one.c || fail "$name does not compile alone"
	m=$((m + 1))
done
[ "$m" -ge 10 ] || fail "only $m internal headers found"
note "$m internal headers of replay/ compile alone"
