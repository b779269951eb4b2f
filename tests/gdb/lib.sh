# SPDX-License-Identifier: MIT
# lib.sh: what the gdb batch tests share: a private work directory per
# test, the reasons to skip (no gdb, no Python in gdb, no ptrace, a
# sanitizer build), running a gdb session in batch mode under the build
# tree's memscope.gdb, failing on any Python error in gdb, masking what
# changes from run to run, and comparing with the golden file.
#
# Sourced by each tests/gdb/*.sh; make check exports top_srcdir,
# top_builddir, GDB and MMS_GDB_SCRIPT (tests/gdb/Makemodule.am).
# MMS_GDB_UPDATE_GOLDEN=1 rewrites the golden files from this run.

set -eu

: "${top_srcdir:?run this test through make check}"
: "${top_builddir:?run this test through make check}"
: "${MMS_GDB_SCRIPT:=$top_builddir/gdb/memscope.gdb}"
progs=$top_builddir/tests/gdb

test_dir=tests/gdb
. "$top_srcdir/tests/testlib.sh"
golden=$top_srcdir/tests/gdb/$test_name.golden

# GDB comes from configure (empty when it found none) or the caller.
gdb=${GDB:-}
[ -n "$gdb" ] || gdb=$(command -v gdb 2>/dev/null || true)
[ -n "$gdb" ] && [ -x "$gdb" ] || skip "gdb is not installed (apt-get install gdb)"
[ "${MMS_SANITIZE:-}" != yes ] ||
	skip "the replay library is built with AddressSanitizer, which gdb's Python cannot load through ctypes"
"$gdb" -nx -batch -ex 'python import ctypes; print("memscope-python-" + "ok")' >py.check 2>&1 || true
grep -q 'memscope-python-ok' py.check ||
	skip "$gdb has no Python support (or no ctypes): the memscope commands are written in Python: $(head -c 200 py.check)"
[ -f "$MMS_GDB_SCRIPT" ] || fail "not built: $MMS_GDB_SCRIPT"
"$gdb" -nx -batch -ex run --args /bin/true >ptrace.check 2>&1 || true
if grep -q 'ptrace: Operation not permitted\|Could not trace the inferior' ptrace.check; then
	skip "gdb may not trace programs here (ptrace refused; kernel.yama.ptrace_scope?)"
fi

timeout=
command -v timeout >/dev/null 2>&1 && timeout="timeout 300"

# memscope.gdb's default log folder is under $XDG_STATE_HOME: the test's own.
XDG_STATE_HOME=$work/state
export XDG_STATE_HOME

# session NAME PROG GDB-ARGS...: runs PROG under gdb -x memscope.gdb in
# batch mode with GDB-ARGS (-ex ... commands), its output in NAME.raw,
# masked in NAME.out. Frames per stack are 2 (the program's own: the
# libc frames below main differ between systems). Fails when gdb's Python
# raised anything.
session() {
	_session batch "$@"
}

# session_prompt NAME PROG GDB-ARGS...: as session, but gdb reads the
# commands of NAME.gdb at its prompt (on its standard input, not in batch
# mode), so what memscope does before each prompt runs as in a person's
# session.
session_prompt() {
	_session prompt "$@"
}

_session() {
	_mode=$1
	_name=$2
	_prog=$3
	shift 3
	[ -x "$_prog" ] || fail "not built: $_prog"
	_rc=0
	if [ "$_mode" = prompt ]; then
		$timeout "$gdb" -nx -q -x "$MMS_GDB_SCRIPT" -ex 'set confirm off' -ex 'set memscope depth 2' "$@" \
			--args "$_prog" >"$_name.raw" 2>&1 <"$_name.gdb" || _rc=$?
	else
		$timeout "$gdb" -nx -batch -x "$MMS_GDB_SCRIPT" -ex 'set memscope depth 2' "$@" --args "$_prog" \
			>"$_name.raw" 2>&1 </dev/null || _rc=$?
	fi
	[ "$_rc" != 124 ] || fail "gdb did not finish in 300 s; its output is in $work/$_name.raw"
	if grep -n 'Python Exception\|Error occurred in Python\|Traceback (most recent call last)' "$_name.raw" >&2; then
		fail "gdb's Python raised (above); the session is in $work/$_name.raw"
	fi
	if grep -n 'internal-error\|A problem internal to GDB\|internal error in' "$_name.raw" >&2; then
		fail "gdb or memscope hit an internal error (above); the session is in $work/$_name.raw"
	fi
	mask <"$_name.raw" >"$_name.out"
}

# mask: what changes between runs, machines and build folders: paths,
# addresses, pids and thread ids, gdb's frame arguments and numbers,
# source lines (their text depends on the optimization level), the libc
# frames' count, and gdb's messages about libthread_db.
mask() {
	sed -e "s|$work|WORK|g" \
		-e 's|[^ ()]*tests/gdb/\([a-z]*\.c\)|SRC/\1|g' \
		-e 's|gdb_[0-9]*_[0-9]*|gdb_PID_TIME|g' \
		-e 's|memscope_[0-9]*\.mms|memscope_PID.mms|g' \
		-e 's|0x[0-9a-f]\{4,\}|0xADDR|g' \
		-e 's@\(stomp\|leaky\)+0xADDR@\1+OFF@g' \
		-e 's|LWP [0-9]*|LWP N|g' \
		-e 's|process [0-9][0-9]*|process N|g' \
		-e 's|^#[0-9]* *\(0xADDR in \)\{0,1\}\([A-Za-z_][A-Za-z_0-9]*\) (.*) at |#N  \2 (...) at |' \
		-e 's@^\(\(Temporary b\|B\)reakpoint [0-9]*, [A-Za-z_][A-Za-z_0-9]*\) (.*) at @\1 (...) at @' \
		-e 's@^\(\(Temporary b\|B\)reakpoint [0-9]*.*SRC/[a-z]*\.c\)\(:\|, line \)[0-9]*@\1\3LINE@' \
		-e 's|^\(#N .* at SRC/[a-z]*\.c\):[0-9]*$|\1:LINE|' \
		-e 's|\.\.\. [0-9]* more frames\{0,1\}|... N more frames|' \
		-e 's|^\(memscope: log .*\) ([0-9.]* [KMG]iB)|\1 (SIZE)|' \
		-e '/^[0-9][0-9]*	/d' \
		-e '/^\[Thread debugging using libthread_db enabled\]$/d' \
		-e '/^Using host libthread_db library/d' \
		-e '/^warning: Error disabling address space randomization/d'
}

# compare NAME: NAME.out against the golden file, or rewrites the golden
# file when MMS_GDB_UPDATE_GOLDEN=1.
compare() {
	if [ "${MMS_GDB_UPDATE_GOLDEN:-}" = 1 ]; then
		cp "$1.out" "$golden"
		echo "$test_name: wrote $golden"
		return
	fi
	diff -u "$golden" "$1.out" >&2 || fail "the session differs from $golden (above; - golden, + this run)"
}

# expect_count NAME PATTERN N WHAT: PATTERN (grep -c) occurs N times in NAME.out.
expect_count() {
	_n=$(grep -c -- "$2" "$1.out" || true)
	[ "$_n" = "$3" ] || fail "$4: '$2' seen $_n times, want $3 (session in $work/$1.raw)"
}

# expect_rc WHAT: the last session's gdb exited 0 (batch mode: the last
# command succeeded, gdb was not killed).
expect_rc() {
	[ "$_rc" = 0 ] || fail "$1: gdb exited $_rc (session in $work/$_name.raw)"
}

# expect_not NAME TEXT WHAT: the fixed string TEXT is not in NAME.out.
expect_not() {
	! grep -qF -- "$2" "$1.out" || fail "$3: '$2' is in the session (in $work/$1.raw)"
}

# expect NAME TEXT WHAT: the fixed string TEXT is in NAME.out.
expect() {
	grep -qF -- "$2" "$1.out" || fail "$3: no '$2' in the session (in $work/$1.raw)"
}

# hw_fires: whether a hardware watchpoint stops at a store here. Some
# virtual machines accept the debug registers and never raise their trap:
# gdb then sets the watchpoint and the program runs past the store. The
# probe is plain gdb (no memscope) on tests/gdb/pinpoint's store into
# nb[8..15] in its third launch.
hw_fires() {
	"$gdb" -nx -batch -ex 'break ready' -ex run -ex 'watch -l *(unsigned long long *)(nb + 8)' -ex continue \
		--args "$progs/pinpoint" >hw.probe 2>&1 </dev/null || true
	grep -q '^New value' hw.probe
}
