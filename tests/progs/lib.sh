# SPDX-License-Identifier: MIT
# lib.sh: helpers shared by the recorded-program tests: a private work
# directory per test, running a program under the recorder, reading the
# replay summary's JSON, and assertions that name the figure that failed.
#
# Sourced by each tests/progs/*.sh; make check exports top_srcdir,
# top_builddir, MMS_HOOKS, MMS_LAUNCHER, MMS_REPLAY and MMS_PROGS (see
# tests/progs/Makemodule.am). Exit 77 is a skip, with the reason printed.

set -eu

: "${top_builddir:?run this test through make check}"
: "${MMS_HOOKS:=$top_builddir/hooks/.libs/libmsmemscope-hooks.so}"
: "${MMS_LAUNCHER:=$top_builddir/src/msmemscope}"
: "${MMS_REPLAY:=$top_builddir/src/msmemscope-replay}"
: "${MMS_PROGS:=$top_builddir/tests/progs}"
# Debian's interpreter when there is one: a python3 found first on PATH may
# be a wrapper script (pyenv's shims take 0.1 s a call).
if [ -z "${MMS_PYTHON:-}" ]; then
	MMS_PYTHON=python3
	[ ! -x /usr/bin/python3 ] || MMS_PYTHON=/usr/bin/python3
fi

test_dir=tests/progs
. "$top_srcdir/tests/testlib.sh"

command -v "$MMS_PYTHON" >/dev/null 2>&1 || skip "python3 is needed to read the JSON summary (apt-get install python3)"
[ -f "$MMS_HOOKS" ] || fail "the recorder is not built: $MMS_HOOKS"
[ -x "$MMS_REPLAY" ] || fail "the replay CLI is not built: $MMS_REPLAY"

# gpu_record PROG LOG WHY: for the CUDA examples, where a GPU is: runs
# $top_builddir/examples/PROG natively (native.out, native.err), then
# recorded with C stacks of 16 into LOG (rec.out, rec.err), and wants the
# same output but for the lines that say an address or the device's page
# counts (kept:, cudaMemGetInfo:, cuMemGetInfo:). Skips where PROG is not
# built (WHY: what configure did not find), where the loader finds no
# CUDA driver (127) or PROG no usable GPU (2).
gpu_record() {
	_prog=$top_builddir/examples/$1
	[ -x "$_prog" ] || skip "examples/$1 is not built: configure found no $3 (--with-cuda=DIR)"
	_st=0
	"$_prog" >native.out 2>native.err || _st=$?
	[ $_st -ne 127 ] || skip "no CUDA driver installed here: $(cat native.err)"
	[ $_st -ne 2 ] || skip "no usable GPU here: $(cat native.err)"
	[ $_st -eq 0 ] || fail "$1 exited $_st on its own: $(cat native.err)"
	MSMEMSCOPE_CONFIG=call_stack=16 record "$2" "$_prog" >rec.out 2>rec.err ||
		fail "$1 exited $? under the recorder: $(cat rec.err)"
	expect_eq "$1's output under the recorder" "$(grep -v '^kept:\|MemGetInfo:' rec.out)" \
		"$(grep -v '^kept:\|MemGetInfo:' native.out)"
}

# kept_at_exit JSON [bytes]: the program's blocks live at exit in the leaks
# report's JSON (msmemscope-replay --analysis leaks --json), leaked or still
# reachable (the scan at exit tells them apart), not the runtimes': their
# number, or with "bytes" their bytes.
kept_at_exit() {
	_k=${2:-leaks}
	[ "$_k" = leaks ] && _r=blocks || _r=bytes
	echo $(($(jget "$1" at_exit.$_k) + $(jget "$1" reachable.$_r)))
}

# launched_log ERR: the log of the program the launcher started, as its
# "recorded PROG (pid N) to LOG" line in the stderr file ERR names it (not
# the first log of the run folder: a child's pid may sort before its
# parent's, as when pids pass 99999 -> 100000).
launched_log() {
	sed -n 's/^msmemscope: recorded .* (pid [0-9]*) to \(.*\)$/\1/p' "$1" | head -n 1
}

# record LOG PROG ARGS...: runs PROG under the recorder, writing LOG.
# Extra recorder settings come from the environment of the caller
# (MSMEMSCOPE_CONFIG, MSMEMSCOPE_CLOCK, MSMEMSCOPE_LOG_LIMIT). Returns the
# program's status.
record() {
	_log=$1
	shift
	env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG="$_log" "$@"
}

# summarize LOG: writes LOG's JSON summary to LOG.json; fails the test when
# the replay CLI fails or prints something that is not one JSON object.
summarize() {
	"$MMS_REPLAY" "$1" --summary --json >"$1.json" 2>"$1.json.err" ||
		fail "msmemscope-replay $1 --summary --json exited $?: $(cat "$1.json.err")"
	"$MMS_PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert isinstance(d, dict)' \
		"$1.json" 2>/dev/null || fail "the summary of $1 is not one JSON object: $(head -c 400 "$1.json")"
}

# jget FILE KEY: the value at KEY (dotted path: kinds.mmap.allocs, with
# numbers for list items: bad_frees.0.event) in the JSON file, printed as
# JSON (numbers plain, booleans true/false); fails when the key is missing.
jget() {
	"$MMS_PYTHON" - "$1" "$2" <<'PY' || fail "no key '$2' in $1: $(head -c 600 "$1")"
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split('.'):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(json.dumps(v))
PY
}

# expect_eq WHAT ACTUAL EXPECTED (integers or JSON words)
expect_eq() {
	[ "$2" = "$3" ] || fail "$1: got $2, expected $3"
}

expect_ge() {
	[ "$2" -ge "$3" ] || fail "$1: got $2, expected at least $3"
}

expect_le() {
	[ "$2" -le "$3" ] || fail "$1: got $2, expected at most $3"
}

# expect_key FILE KEY EXPECTED: the summary figure at KEY equals EXPECTED.
expect_key() {
	expect_eq "$(basename "$1" .json) $2" "$(jget "$1" "$2")" "$3"
}

# expect_consistent FILE: what every correct recording must show: no free
# of a block that was not live, no address handed out twice, no damage,
# and inherited_blocks (a fork child's) + allocs - frees == live_blocks.
expect_consistent() {
	expect_key "$1" unmatched_frees 0
	expect_key "$1" double_allocs 0
	expect_key "$1" damaged false
	_i=$(jget "$1" inherited_blocks)
	_a=$(jget "$1" allocs)
	_f=$(jget "$1" frees)
	_l=$(jget "$1" live_blocks)
	expect_eq "$(basename "$1" .json) inherited + allocs - frees" "$((_i + _a - _f))" "$_l"
}

# field NAME LINE: the value of NAME=value in a line of key=value words.
field() {
	printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"
}
