#!/bin/sh
# SPDX-License-Identifier: MIT
# keepstacks.sh: --keep-stacktraces (valgrind's option). With stacks on,
# a free records the stack of the call that freed (alloc-and-free, the
# default); with alloc it records none, the allocations keep theirs, and
# the replay says the log keeps none rather than that no stack was
# recorded. tests/progs/stepper.c frees its first 100-byte block in main
# (the line after its malloc). The values valgrind has and this recorder
# has not are refused; without --call-stack the option warns and does
# nothing.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

prog=$MMS_PROGS/stepper
src=$top_srcdir/tests/progs/stepper.c
[ -x "$prog" ] || fail "not built: $prog"
[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"
mline=$(grep -n 'a = use(malloc(100), 100);' "$src" | cut -d: -f1)
fline=$(grep -n '		free(a);' "$src" | cut -d: -f1)
[ -n "$mline" ] && [ -n "$fline" ] || fail "stepper.c has no malloc(100)/free(a) lines"

# first_free LOG: the id of LOG's first FREE event.
first_free() {
	"$MMS_REPLAY" "$1" --from 0 --json 2>/dev/null |
		"$MMS_PYTHON" -c 'import json, sys
print(next(e["id"] for e in map(json.loads, sys.stdin) if e["kind"] == "FREE"))'
}

# run NAME OPTION...: records stepper with c:8 stacks and OPTION into
# NAME/, shows its first free into NAME.txt.
run() {
	_name=$1
	shift
	"$MMS_LAUNCHER" --call-stack=c:8 "$@" --output="$_name" -- "$prog" >"$_name.out" 2>"$_name.err" ||
		fail "msmemscope $* -- stepper exited $?: $(cat "$_name.err")"
	set -- "$_name"/msmemscope_*/memscope_*.mms
	[ -f "$1" ] || fail "$_name: no log"
	_id=$(first_free "$1")
	[ -n "$_id" ] || fail "$_name: no FREE event in the log"
	"$MMS_REPLAY" "$1" --event "$_id" >"$_name.txt" 2>&1 || fail "$_name: --event $_id exited $?: $(cat "$_name.txt")"
}

run both
grep -A1 '^  freed by:$' both.txt | grep -q "^    #0  main (.*stepper.c:$fline)" ||
	fail "the default: the free's stack is not main at stepper.c:$fline: $(cat both.txt)"

run explicit --keep-stacktraces=alloc-and-free
grep -A1 '^  freed by:$' explicit.txt | grep -q "^    #0  main (.*stepper.c:$fline)" ||
	fail "alloc-and-free: the free's stack is not main at stepper.c:$fline: $(cat explicit.txt)"

run alloc --keep-stacktraces=alloc
grep -q "^    #0  main (.*stepper.c:$mline)" alloc.txt ||
	fail "alloc: the allocation's stack is not main at stepper.c:$mline: $(cat alloc.txt)"
grep -A1 '^  freed by:$' alloc.txt |
	grep -q "^    (none kept: recorded with --keep-stacktraces=alloc, allocations' stacks only)\$" ||
	fail "alloc: the free does not say the log keeps no stack for it: $(cat alloc.txt)"
grep -q "#0  main (.*stepper.c:$fline)" alloc.txt && fail "alloc: a free's stack was recorded: $(cat alloc.txt)"

# Refused values, and the option without stacks.
for v in none free alloc-then-free bogus; do
	"$MMS_LAUNCHER" --call-stack=c:8 --keep-stacktraces=$v -- "$prog" >/dev/null 2>bad.err && fail "--keep-stacktraces=$v was taken"
	grep -q "^msmemscope: --keep-stacktraces=$v: expected alloc or alloc-and-free" bad.err ||
		fail "--keep-stacktraces=$v: not the expected message: $(cat bad.err)"
done
"$MMS_LAUNCHER" --keep-stacktraces=alloc --output=nostack -- "$prog" >/dev/null 2>nostack.err ||
	fail "--keep-stacktraces without --call-stack exited $?: $(cat nostack.err)"
grep -q "warning: --keep-stacktraces goes with --call-stack" nostack.err ||
	fail "no warning for --keep-stacktraces without --call-stack: $(cat nostack.err)"
exit 0
