#!/bin/sh
# SPDX-License-Identifier: MIT
# pysweep.sh: the per-step rule on Python programs. The package's sweep
# at exit: a loop that leaves a reference cycle behind at each step
# (garbage that no collection reaches while it runs) had every step's
# cycle as a per-step leak, since Python
# collects it only when it finalizes; the sweep, after the program's own
# exit handlers, collects it between two SYSTEM records, and the leaks
# report counts what it freed apart (per_step_swept), not as leaks. A
# list that keeps a buffer of every step stays a leak; so do the cycles
# of a program that turned its collector off (the sweep collects only
# where Python would), and those of a program that registered an exit
# handler before it imported msmemscope (the sweep then runs before that
# handler, where a collection could change what it sees: none is made).
# The program prints the same recorded or not, its exit handler included.
# Then caches that turn over (an LRU cache, session slots): what they hold
# when the steps end is set apart (per_step_cached), a list kept beside
# them still leaks. A function decorated with @msmemscope.op in a step
# leaves nothing of an import there.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

pkg=$top_builddir/hooks/python/build
[ -e "$pkg/msmemscope/_msmemscope.so" ] ||
	skip "configure built no Python package (Debian: apt-get install -y python3-dev, then configure again)"
export PYTHONPATH="$pkg"

cat >sweep.py <<'EOF'
import sys
if sys.argv[1] == "late":
    import atexit
    atexit.register(lambda: print("the program's early handler ran"))
import atexit
import gc
import msmemscope

# No collection while the loop runs: each step's cycle stays garbage.
gc.set_threshold(1000000, 1000, 1000)
atexit.register(lambda: print("the program's exit handler ran"))


class Node:
    def __init__(self):
        self.me = self
        self.buf = bytearray(4000)


keep = []
for i in range(8):
    n = Node()
    if sys.argv[1] == "leak":
        keep.append(bytearray(5000))
    msmemscope.step()
if sys.argv[1] == "nogc":
    gc.disable()
print("done", sys.argv[1])
EOF

# run MODE: records sweep.py MODE (its output compared with a plain run)
# and writes MODE.json, the leaks report.
run() {
	"$MMS_PYTHON" sweep.py "$1" >"$1.plain" 2>&1 || fail "sweep.py $1 exited $? without the recorder: $(cat "$1.plain")"
	"$MMS_LAUNCHER" --output="out.$1" --analysis= -- "$MMS_PYTHON" sweep.py "$1" >"$1.out" 2>"$1.err" ||
		fail "msmemscope -- python3 sweep.py $1 exited $?: $(cat "$1.err")"
	cmp -s "$1.out" "$1.plain" || fail "sweep.py $1 printed something else recorded: $(diff "$1.plain" "$1.out")"
	set -- "$1" out."$1"/msmemscope_*/memscope_*.mms
	[ -f "$2" ] || fail "sweep.py $1: no log: $(ls -R "out.$1")"
	eval "log_$1=\$2"
	"$MMS_REPLAY" "$2" --analysis leaks --json >"$1.json" 2>"$1.jerr" ||
		fail "--analysis leaks --json on sweep.py $1's log exited $?: $(cat "$1.jerr")"
}

run clean
grep -qx "the program's exit handler ran" clean.out || fail "the program's exit handler did not run: $(cat clean.out)"
# Eight steps, warm-up 1: the cycles of steps 2 to 7 were found at the
# end of the next step (step 8's is judged at the end of the log).
expect_key clean.json per_step.leaks 0
expect_key clean.json per_step_swept.blocks 6
expect_key clean.json per_step_held.blocks 0
"$MMS_REPLAY" "$log_clean" --from 0 >events.txt 2>&1 || fail "--from 0 exited $?: $(cat events.txt)"
expect_eq "SWEEP_BEGIN records" "$(grep -c " SYSTEM  *SWEEP_BEGIN" events.txt)" 1
expect_eq "SWEEP_END records" "$(grep -c " SYSTEM  *SWEEP_END" events.txt)" 1
"$MMS_REPLAY" "$log_clean" --analysis leaks >clean.txt 2>&1 || fail "--analysis leaks exited $?: $(cat clean.txt)"
grep -q "^Let go of, freed at exit by the sweep of Python's garbage and caches: 6 allocation(s), " clean.txt ||
	fail "the report does not count the swept blocks apart: $(cat clean.txt)"
grep -q "Detected memory leaks" clean.txt && fail "the report finds leaks in a loop that keeps nothing: $(cat clean.txt)"
note "a step's reference cycle, collected by the sweep at exit, is no per-step leak"

run leak
# Each step's bytearray(5000), kept in a list that Python frees only as
# it finalizes, after the sweep: steps 2 to 7 as before.
expect_ge "per-step leaks of a list that keeps every step's buffer" "$(jget leak.json per_step.leaks)" 6
expect_key leak.json per_step_swept.blocks 6
note "a list that keeps every step's buffer stays a leak beside the swept cycles"

run nogc
expect_ge "per-step leaks of a program whose collector is off" "$(jget nogc.json per_step.leaks)" 6
expect_key nogc.json per_step_swept.blocks 0
note "with the collector turned off the sweep collects nothing: the cycles stay leaks"

run late
grep -qx "the program's early handler ran" late.out || fail "the early handler did not run: $(cat late.out)"
expect_ge "per-step leaks where a handler came before the package" "$(jget late.json per_step.leaks)" 6
note "with an exit handler registered before the import, no collection is made"

# Caches that turn over: an LRU cache of 16 rendered pages and 8 session
# slots, replaced as requests come (one step each): what they hold when
# the steps end is no leak, as old blocks of theirs were freed after being
# held as long. A list that keeps every request's buffer beside them
# still leaks, its blocks older than that turnover reported.
cat >cache.py <<'EOF2'
import functools, sys
import msmemscope

@functools.lru_cache(maxsize=16)
def render(key):
    return ("<page %d>" % key) * 200

sessions, kept = {}, []
for req in range(120):
    render(req * 7 % 40)
    sessions[req % 8] = bytearray(3000)
    if sys.argv[1] == "leak":
        kept.append(bytearray(1000))
    msmemscope.step()
print("served", sys.argv[1])
EOF2
for mode in clean leak; do
	"$MMS_LAUNCHER" --output="cache.$mode" --analysis= -- "$MMS_PYTHON" cache.py $mode >cache-$mode.out 2>cache-$mode.err ||
		fail "msmemscope -- python3 cache.py $mode exited $?: $(cat cache-$mode.err)"
	set -- cache."$mode"/msmemscope_*/memscope_*.mms
	"$MMS_REPLAY" "$1" --analysis leaks --json >cache-$mode.json 2>cache-$mode.jerr ||
		fail "--analysis leaks --json on cache.py $mode's log exited $?: $(cat cache-$mode.jerr)"
done
expect_key cache-clean.json per_step.leaks 0
expect_ge "blocks still in the caches when the steps ended" "$(jget cache-clean.json per_step_cached.blocks)" 16
# 118 buffers kept (steps 2 to 119); those younger than the caches'
# turnover are counted with them (recorded without stacks), the rest leak.
expect_ge "per-step leaks of a list kept beside the caches" "$(jget cache-leak.json per_step.leaks)" 60
note "what caches that turn over hold when the steps end is no leak; a list kept beside them still leaks"

# A function decorated with @msmemscope.op in step 2, called and let go
# of there: the decorator imports nothing (it did import functools, and
# collections, operator, ... with it, whose thousands of blocks the
# per-step rule blamed on step 2), and neither does config(), which
# quotes its command line without shlex.
cat >deco.py <<'EOF3'
import msmemscope

def once():
    @msmemscope.op("work")
    def work(n):
        """Doubles n."""
        return n * 2
    msmemscope.config(output="out dir")
    return work(21), work.__name__, work.__doc__, work.__wrapped__.__name__

for i in range(3):
    if i == 1:
        print(*once())
    msmemscope.step()
EOF3
"$MMS_LAUNCHER" --output=deco --call-stack=python:6 --analysis= -- "$MMS_PYTHON" deco.py >deco.out 2>deco.err ||
	fail "msmemscope -- python3 deco.py exited $?: $(cat deco.err)"
grep -qx "42 work Doubles n. work" deco.out || fail "the decorated function is not work() as written: $(cat deco.out)"
grep -q "^msmemscope: config(output=out dir) comes after the recorder started .* msmemscope '--output=out dir' --collect-mode=deferred -- " deco.err ||
	fail "config() did not quote its command line: $(cat deco.err)"
set -- deco/msmemscope_*/memscope_*.mms
"$MMS_REPLAY" "$1" --analysis leaks --json >deco.json 2>deco.jerr || fail "--analysis leaks --json on deco.py's log exited $?: $(cat deco.jerr)"
expect_key deco.json per_step.leaks 0
note "decorating a function with @msmemscope.op in a step, and config(), import nothing there: no per-step leaks"
