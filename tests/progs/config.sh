#!/bin/sh
# SPDX-License-Identifier: MIT
# config.sh: the recording configuration end to end: what the launcher
# writes is what the recorder keeps in the log and mms_log_config() reads
# back; the variables of single keys win over MSMEMSCOPE_CONFIG; a
# configuration written by hand with an unknown key and a bad value runs
# the program as it runs natively and says what it skipped on stderr; the
# launcher refuses a bad variable before anything runs; --print-env prints
# the environment it would set.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

check=$MMS_PROGS/configcheck
[ -x "$check" ] || fail "tests/progs/configcheck is not built"
prog=$MMS_PROGS/threads8

# The launcher's options, through MSMEMSCOPE_CONFIG into the log.
"$MMS_LAUNCHER" --analysis= --call-stack=c:12 --steps=1，3 --collect-mode=deferred --no-freeres \
	--watch=a:out2,b --output=out -- "$prog" 1 100 1 >run.out 2>run.err ||
	fail "msmemscope exited $?: $(cat run.err)"
set -- out/msmemscope_*/memscope_*.mms
[ -f "$1" ] || fail "the launcher left no log: $(ls -R out)"
"$check" "$1" >cfg.txt || fail "configcheck exited $?: $(cat cfg.txt)"
expect_eq "the configuration the launcher's log keeps" "$(head -1 cfg.txt)" \
	"config=call_stack=12;events=alloc,free,launch;collect=deferred;steps=1,3;follow_exec=1;log_level=warn;freeres=0;watch=a:out2,b unknown=0 bad=0"
expect_eq "the header of the launcher's log" "$(tail -1 cfg.txt)" "clock=tsc depth=12"

# The variables of single keys win, and are kept in the log too.
MSMEMSCOPE_CONFIG="call_stack=4;log_limit=8M;clock=tsc" MSMEMSCOPE_LOG_LIMIT=4M MSMEMSCOPE_CLOCK=counter \
	record vars.mms "$prog" 1 100 1 >vars.out 2>vars.err || fail "threads8 exited $?: $(cat vars.err)"
[ -s vars.err ] && fail "a valid configuration made the recorder say something: $(cat vars.err)"
"$check" vars.mms >cfg.txt || fail "configcheck exited $?"
expect_eq "the configuration with variables" "$(head -1 cfg.txt)" \
	"config=call_stack=4;events=alloc,free,launch;collect=immediate;follow_exec=1;log_level=warn;log_limit=4M;clock=counter unknown=0 bad=0"
expect_eq "the header with variables" "$(tail -1 cfg.txt)" "clock=counter depth=4"

# Written by hand: an unknown key and a bad value are skipped, and said.
# One thread: with two, which blocks stay live depends on the schedule.
"$prog" 1 1000 2 >native.out || fail "threads8 exited $? on its own"
MSMEMSCOPE_CONFIG="call_stack=6;colour=blue;follow_exec=maybe" record hand.mms "$prog" 1 1000 2 \
	>hand.out 2>hand.err || fail "threads8 exited $? with a hand-written configuration: $(cat hand.err)"
cmp -s native.out hand.out || fail "threads8 printed something else with a hand-written configuration"
grep -q "^msmemscope: warning: MSMEMSCOPE_CONFIG: follow_exec=maybe: expected 0 or 1; ignored$" hand.err ||
	fail "no warning for the bad value: $(cat hand.err)"
grep -q "^msmemscope: warning: MSMEMSCOPE_CONFIG: colour: not a key of this recorder; ignored$" hand.err ||
	fail "no warning for the unknown key: $(cat hand.err)"
expect_eq "lines on stderr for a hand-written configuration" "$(wc -l <hand.err)" 2
"$check" hand.mms >cfg.txt || fail "configcheck exited $?"
expect_eq "the configuration kept for a hand-written one" "$(head -1 cfg.txt)" \
	"config=call_stack=6;events=alloc,free,launch;collect=immediate;follow_exec=1;log_level=warn unknown=0 bad=0"
MSMEMSCOPE_CONFIG="log_level=error;colour=blue;follow_exec=maybe" record quiet.mms "$prog" 1 10 1 \
	>/dev/null 2>quiet.err || fail "threads8 exited $?"
[ -s quiet.err ] && fail "log_level=error did not keep the recorder quiet: $(cat quiet.err)"
note "the recorder skips an unknown key and a bad value, and says so unless log_level=error"

# The launcher refuses a bad variable before anything is made or run.
for bad in MSMEMSCOPE_LOG_LIMIT=12Q MSMEMSCOPE_CLOCK=hpet MSMEMSCOPE_UNWIND_CHECK=9; do
	st=0
	env "$bad" "$MMS_LAUNCHER" --output=bad -- "$prog" 1 10 1 >bad.out 2>bad.err || st=$?
	expect_eq "exit status with $bad" "$st" 2
	grep -q "^msmemscope: $bad in the environment: expected .*; correct it or unset it$" bad.err ||
		fail "no message naming $bad: $(cat bad.err)"
	[ ! -e bad ] || fail "$bad left an output folder"
done
note "the launcher refuses a bad MSMEMSCOPE_LOG_LIMIT, MSMEMSCOPE_CLOCK, MSMEMSCOPE_UNWIND_CHECK"

# --print-env: the environment of a run as shell commands, which keep an
# LD_PRELOAD already set (after the recorder) and another tool's NVTX
# library, as the launcher does; a program started in it is recorded
# into --output's folder itself.
"$MMS_LAUNCHER" --print-env --call-stack=c:8 --output=pe >env.sh 2>env.err ||
	fail "msmemscope --print-env exited $?: $(cat env.err)"
# (With C stacks, PYTHONPATH leads Python programs to the msmemscope
# package, where it is built: its scope of the imports, pystack.sh.)
lines=4
if [ -f "$top_builddir/hooks/python/build/msmemscope/boot/sitecustomize.py" ]; then
	lines=5
	grep -q "^export PYTHONPATH='.*/msmemscope/boot:" env.sh || fail "--print-env with C stacks sets no PYTHONPATH: $(cat env.sh)"
fi
expect_eq "lines of --print-env" "$(wc -l <env.sh)" $lines
[ -d pe ] || fail "--print-env did not make the --output folder"
hooks=$(realpath "$MMS_HOOKS")
sh -c 'e=$(cat env.sh)
	LD_PRELOAD=/nonexistent/first.so; NVTX_INJECTION64_PATH=/nonexistent/tool.so; export LD_PRELOAD NVTX_INJECTION64_PATH
	eval "$e"
	printf "%s\n" "$LD_PRELOAD" "$MSMEMSCOPE_LOG_DIR" "$MSMEMSCOPE_CONFIG" "$NVTX_INJECTION64_PATH"' >env.out ||
	fail "the shell could not evaluate what --print-env printed: $(cat env.sh)"
expect_eq "the environment --print-env gives" "$(cat env.out)" "$hooks:/nonexistent/first.so
$PWD/pe
call_stack=8;events=alloc,free,launch;collect=immediate;follow_exec=1;log_level=warn
/nonexistent/tool.so"
sh -c 'unset LD_PRELOAD NVTX_INJECTION64_PATH; eval "$(cat env.sh)"; exec "$0" 1 100 1' "$prog" >/dev/null 2>pe.err ||
	fail "threads8 in the environment of --print-env exited $?: $(cat pe.err)"
set -- pe/memscope_*.mms
[ $# = 1 ] && [ -f "$1" ] || fail "a program in the environment of --print-env left no log in pe/: $(ls pe)"
"$check" "$1" >cfg.txt || fail "configcheck exited $?"
expect_eq "the header of the --print-env run" "$(tail -1 cfg.txt)" "clock=tsc depth=8"
for bad in "--analysis=leaks" "-- $prog"; do
	st=0
	"$MMS_LAUNCHER" --print-env $bad >/dev/null 2>bad.err || st=$?
	expect_eq "exit status of --print-env $bad" "$st" 2
	grep -q "^msmemscope: --print-env runs no program" bad.err || fail "--print-env $bad: $(cat bad.err)"
done
# --level is a recording option too: the launches, and with op a PyTorch
# program's aten operators (gdb's `set memscope level' asks for it so).
"$MMS_LAUNCHER" --print-env --level=op --output=pe2 >env2.sh 2>env2.err ||
	fail "msmemscope --print-env --level=op exited $?: $(cat env2.err)"
grep -q "^export MSMEMSCOPE_CONFIG='call_stack=0;events=alloc,free,launch;.*;torch_ops=1'$" env2.sh ||
	fail "--print-env --level=op does not ask for the operators: $(cat env2.sh)"
note "--print-env: 4 variables; LD_PRELOAD and NVTX as the launcher keeps them; a run in it is recorded; --level=op's torch_ops=1"
exit 0
