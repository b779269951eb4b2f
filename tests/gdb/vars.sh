#!/bin/sh
# SPDX-License-Identifier: MIT
# vars.sh: the convenience variables $memscope_step, $memscope_launch,
# $memscope_op and $memscope_events (issue 16, item 10) on
# tests/gdb/leaky (four steps, each with a launch of "load" then one of
# "compute"; the third step's compute keeps a 4096-byte block): 0 and ""
# before the first run; current at each stop, for printf and commands;
# in conditions, of gdb's own breakpoints and of `memscope break', read
# at the hit (the condition is rewritten to the $_memscope_ functions);
# from the finished log after exit; 0 and "" when the log is gone, with
# no traceback. Conditions set before the run too.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

show='printf "vars: step %d, launch %d, op [%s], events %d\n", $memscope_step, $memscope_launch, $memscope_op, $memscope_events'
printf 'commands\n%s\nend\n' "$show" >commands.gdb
session vars "$progs/leaky" -ex "$show" \
	-ex 'break checkpoint if $memscope_step == 3' \
	-ex 'break keep_big if $_streq($memscope_op, "compute") && $memscope_step == 3' \
	-ex 'info breakpoints' -ex run -ex "$show" -ex 'p $_streq($memscope_op, "compute")' \
	-ex continue -ex "$show" -ex 'memscope info' -ex delete \
	-ex 'memscope break op load if $memscope_launch == 7' -x commands.gdb \
	-ex continue -ex delete -ex continue -ex "$show" -ex 'p $_memscope_step()' \
	-ex 'shell rm -f "$XDG_STATE_HOME"/msmemscope/gdb/gdb_*/memscope_*.mms' -ex 'p $_memscope_events()' \
	-ex 'p $_memscope_op()' -ex 'info inferiors'
expect vars 'vars: step 0, launch 0, op [], events 0' "before the first run"
expect vars 'memscope: breakpoint 1: the condition reads the $memscope_ values at the hit: $_memscope_step() == 3' \
	"a condition on \$memscope_step is rewritten"
expect vars '	stop only if $_streq($_memscope_op(), "compute") && $_memscope_step() == 3' \
	"info breakpoints shows the rewritten condition"
expect_count vars '^Breakpoint 2, keep_big' 1 "keep_big stops once, in step 3's compute"
expect vars 'vars: step 3, launch 6, op [compute], events 20' "at keep_big in step 3: in compute, launch 6"
expect vars '$1 = 1' "\$_streq on \$memscope_op"
expect_count vars '^Breakpoint 1, checkpoint (...) at SRC/leaky.c:LINE' 1 "checkpoint stops once, in step 3"
expect vars 'vars: step 3, launch 0, op [], events 22' "at checkpoint(3): between launches"
expect vars '  now: step 3, no operator running' "memscope info agrees"
expect vars 'memscope: breakpoint 3, operator load begins: launch 7, step 4' "memscope break op if \$memscope_launch == 7"
expect vars 'vars: step 4, launch 7, op [load], events 24' "the breakpoint's commands print the values at the stop"
expect vars 'vars: step 5, launch 0, op [], events 30' "after exit: the finished log's"
expect vars '$2 = 5' "\$_memscope_step() after exit"
expect vars '$3 = 0' "\$_memscope_events() when the log is gone: 0"
expect vars '$4 = ""' "\$_memscope_op() when the log is gone: empty"
expect_rc "gdb's exit status"

# Conditions set before the run: a `memscope break' pending until the
# recorder is loaded (rewritten when gdb resolves it), and one given
# with gdb's `condition'.
session pending "$progs/leaky" -ex 'memscope break op compute if $memscope_step == 2' -ex 'break checkpoint' \
	-ex 'condition 2 $memscope_events > 20' -ex run -ex "$show" -ex continue -ex "$show"
expect pending 'memscope: breakpoint 2: the condition reads the $memscope_ values at the hit: $_memscope_events() > 20' \
	"condition N rewritten"
expect pending 'memscope: breakpoint 1, operator compute begins: launch 4, step 2' "the pending memscope break, in step 2"
expect pending 'vars: step 2, launch 4, op [compute], events 14' "the values at that stop"
expect_count pending '^Breakpoint 2, checkpoint' 1 "checkpoint stops once, past 20 events"
expect pending 'vars: step 3, launch 0, op [], events 22' "the values at checkpoint(3)"
expect_rc "gdb's exit status"

# A long run's stops: the values come from a replay that follows the
# running program's log, reading only what was written since the last
# stop. follow.py continues STOPS times and, at each stop, compares the
# followed values with a fresh replay's of the whole log, and counts the
# fresh starts (the follower given up).
watchprog=$top_builddir/tests/progs/gdbwatch
[ -x "$watchprog" ] || fail "not built: $watchprog"
cat >follow.py <<'PY'
import gdb
import msmemscope_gdb.variables as V
same = differ = 0
starts = [0]
_drop = V._drop_follow
def counted():
    starts[0] += 1
    _drop()
V._drop_follow = counted
for _ in range(int(gdb.parse_and_eval("$stops"))):
    try:
        gdb.execute("continue", to_string=True)
    except gdb.error:
        break
    if not V._session.running():
        break
    a = V.from_running_log(V._session.run_log)
    b = V.from_log(V._session.run_log)
    if a == b:
        same += 1
    else:
        differ += 1
        print("follow: differs: followed %r, fresh %r" % (a, b))
print("follow: %d the same, %d different, %d fresh starts" % (same, differ, starts[0]))
PY
# One thread (tests/gdb/leaky, a stop at each of its 8 launches): the
# follower goes on from stop to stop, never starting afresh.
session follow1 "$progs/leaky" -ex 'set $stops = 7' -ex 'memscope break op load' -ex 'memscope break op compute' \
	-ex run -ex 'source follow.py' -ex kill
expect follow1 'follow: 7 the same, 0 different, 0 fresh starts' "the followed replay at a single thread's stops"
# Four threads launching 2000 operators each (thread 2's are "writer"),
# 200 stops at writer launches: the values are a fresh replay's at each
# stop. (A thread that gdb stopped inside a hook, its event stamped and
# not yet written, makes the follower start afresh at the next stop, by
# design: a few times in 200 on a loaded machine.)
session follow4 "$watchprog" -ex 'set args threads' -ex 'set $stops = 200' -ex 'break main' -ex run \
	-ex 'memscope break op writer' -ex 'source follow.py' -ex kill
expect follow4 'follow: 200 the same, 0 different,' "the followed replay at 200 stops of 4 threads"
