#!/bin/sh
# SPDX-License-Identifier: MIT
# fork.sh: following a fork child (follow-fork-mode child), the memscope
# commands answer from the child's own log, which its recorder writes from
# its first event, and say so; before that event they say the child has
# recorded nothing yet (not that the recorder could not write its log).
# The parent, detached at the fork, runs on and records. A followed
# grandchild that exits, and a child kept with detach-on-fork off, answer
# from their own logs too; a kill there is not named by another process's
# signal.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

prog=$top_builddir/tests/progs/forkheap
src=$top_srcdir/tests/progs/forkheap.c
# The child's free(c[i]) in its step 2 (the last one in forkheap.c; the
# grandchild's comes first).
line=$(grep -n 'free(c\[i\]);' "$src" | tail -n 1 | cut -d: -f1)
[ -n "$line" ] || fail "no free(c[i]) in $src"

session fork "$prog" -ex 'set follow-fork-mode child' -ex 'break child' -ex run -ex 'memscope leaks' \
	-ex "break forkheap.c:$line" -ex continue -ex 'memscope info' -ex 'memscope at step 1' -ex 'info inferiors'
log='WORK/state/msmemscope/gdb/gdb_PID_TIME/memscope_PID.mms'
expect fork "memscope: the program was detached: process N goes on running, and its recorder goes on writing its log $log." \
	"the parent, detached at the fork, runs on and records"
expect fork "is a fork child of process N: its recorder writes a log of its own, $log, from its first event, and has recorded none so far." \
	"before the child's first event"
expect_not fork 'could not write it' "not: the recorder could not write the log"
expect_count fork "is a fork child of process N; from its own log $log, which begins at the fork:" 2 \
	"info and at step in the child say they answer from its own log"
expect fork '  now: step 2, no operator running' "info: the child's step, from its log"
expect fork 'memscope_PID.mms: step 1 of 2 (events #0..#30)' "at step 1: the child's step 1 (30 frees)"
expect fork '  allocated 0 blocks, 0 bytes; freed 30 blocks, 30.9 KiB; live bytes -30.9 KiB' "the child's step 1"
expect_rc "gdb's exit status"

# A followed grandchild that exits: the queries answer from its finished
# log (gdb never stopped in it past its first event) and say whose child
# it was; before, "the program is not running".
session grand "$prog" -ex 'set follow-fork-mode child' -ex 'break grandchild' -ex run -ex continue \
	-ex 'memscope info'
expect grand "memscope: the program (process N, a fork child of process N, its log beginning at the fork) has exited; from its finished log $log:" \
	"the grandchild's finished log"
expect grand "  at its end: no step marked (forked in process N's step 3); the program reached its exit" \
	"info: the grandchild's end (its steps go on from its parent's)"
expect grand '  live at the end: 37 blocks, 24.6 KiB (HOST 37 blocks 24.6 KiB)' "info: the grandchild's blocks"
expect_not grand 'is not running' "not: not running"
expect_rc "gdb's exit status (grandchild)"

# detach-on-fork off: gdb keeps parent and child; each inferior's queries
# answer from its own process's log, and the child killed in step 2
# answers from its cut log, not from the parent's, which gdb read last.
session forkoff "$prog" -ex 'set detach-on-fork off' -ex 'set schedule-multiple on' -ex "break forkheap.c:$line" \
	-ex run -ex 'inferior 2' -ex 'memscope info' -ex 'inferior 1' -ex 'memscope info' -ex 'kill inferiors 2' \
	-ex 'inferior 2' -ex 'memscope info' -ex 'kill inferiors 1'
expect forkoff "is a fork child of process N; from its own log $log, which begins at the fork:" "inferior 2: the child"
expect_count forkoff '  events so far: 51; operator launches: 0' 1 "inferior 2: the child's events so far"
expect_count forkoff '  events so far: 144; operator launches: 0' 1 "inferior 1: the parent's events so far"
expect forkoff "memscope: the program (process N, a fork child of process N, its log beginning at the fork) was killed; from its cut log $log, what the recorder wrote until the kill:" \
	"the killed child: its cut log"
expect forkoff '  events: 51; operator launches: 0' "the killed child's log, not its parent's (144 events)"
expect_rc "gdb's exit status (detach-on-fork off)"

# detach-on-fork off, the child dead from a signal (gdb's `signal
# SIGSEGV', the parent held), then the parent killed: a kill, though
# $_exitsignal, which gdb leaves as it was at a kill, names the child's
# signal. Each inferior answers for its own process's end: the child's
# is not the parent's, which ended last.
session forksig "$prog" -ex 'set detach-on-fork off' -ex 'set schedule-multiple on' -ex "break forkheap.c:$line" \
	-ex run -ex 'set schedule-multiple off' -ex 'signal SIGSEGV' -ex 'inferior 1' -ex 'kill inferiors 1' \
	-ex 'memscope info' -ex 'print $_exitsignal' -ex 'inferior 2' -ex 'memscope info' -ex 'memscope leaks'
expect forksig "memscope: the program was killed; from its cut log $log, what the recorder wrote until the kill:" \
	"the parent killed after its child's death from a signal: a kill"
expect forksig '  events: 144; operator launches: 0' "the parent's log"
expect forksig '  at its end: no step marked; the log was cut (the process was killed)' \
	"info: the parent's end is not the child's signal"
expect forksig '$1 = 11' "\$_exitsignal is left as gdb set it (the child's SIGSEGV)"
expect_count forksig "memscope: the program (process N, a fork child of process N, its log beginning at the fork) died from SIGSEGV (Segmentation fault); from its cut log $log, what the recorder wrote until the signal:" 2 \
	"inferior 2's info and leaks: the child's death from a signal, from its own log"
expect forksig '  events: 51; operator launches: 0' "inferior 2: the child's log (51 events), not the parent's"
expect forksig '  at its end: 2 steps; the log was cut (the process died from SIGSEGV (Segmentation fault))' \
	"info: the child's end"
expect forksig 'memscope: live blocks allocated in step 1 (step 2 ran until the signal): 0 bytes in 0 blocks' \
	"leaks: the child's step 1 allocated nothing (it freed 30 of the parent's blocks)"
expect_rc "gdb's exit status (a signal, then a kill)"

# detach-on-fork off, at gdb's prompt: the $memscope_ values, set at the
# stop in the child, are the parent's own once `inferior 1' selects it,
# and $_memscope_events() reads the selected inferior's log; after the
# parent's kill, its values come from its cut log.
cat >forkvars.gdb <<EOS
set detach-on-fork off
set schedule-multiple on
break forkheap.c:$line
run
print \$memscope_events
inferior 1
print \$memscope_events
print \$_memscope_events()
print \$memscope_step
inferior 2
print \$memscope_events
print \$memscope_step
kill inferiors 1
inferior 1
print \$memscope_events
kill inferiors 2
EOS
session_prompt forkvars "$prog"
expect forkvars '$1 = 51' "the child's events, at its stop"
expect forkvars '$2 = 144' "inferior 1: the parent's events"
expect forkvars '$3 = 144' "inferior 1: \$_memscope_events() reads the parent's log"
expect forkvars '$4 = 1' "inferior 1: the parent's step (it marked none)"
expect forkvars '$5 = 51' "inferior 2 again: the child's events"
expect forkvars '$6 = 2' "inferior 2: the child's step"
expect forkvars '$7 = 144' "inferior 1, killed: its cut log's events"
expect_rc "gdb's exit status (values per inferior)"

# The logs' folder changed while the program runs (`set memscope output'
# applies to the next runs): its fork child is still known as such, and
# its log named in the folder its recorder writes to.
session output "$prog" -ex 'break main' -ex run -ex 'set memscope output other' -ex 'set follow-fork-mode child' \
	-ex 'break child' -ex continue -ex 'memscope info' -ex 'info inferiors'
expect output "is a fork child of process N: its recorder writes a log of its own, $log, from its first event, and has recorded none so far." \
	"a fork child after set memscope output"
expect_not output 'does not exist' "not: the recorder could not write the log"
expect_rc "gdb's exit status (output)"
