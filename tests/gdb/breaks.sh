#!/bin/sh
# SPDX-License-Identifier: MIT
# breaks.sh: `memscope break op/step' are real gdb breakpoints (issue 16,
# defect 6). On tests/gdb/leaky (steps 1-4, each launching "load" then
# "compute"): two operator breakpoints with conditions on the step and
# the launch, one with a quoted NAME, both listed by `info breakpoints',
# one with `commands'; both stop in the first run and again after a
# second `run'; an operator never seen gets a warning; `disable' and
# `delete' take them out of the program (the third run goes to its end);
# a step breakpoint and `at step' together.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

cat >breaks.gdb <<'EOS'
memscope break op "compute" if step == 3
memscope break op load if launch == 3
commands 2
  memscope info
end
info breakpoints
run
continue
info breakpoints
run
continue
memscope break op rope
memscope break
disable 1
delete 2
memscope break
info breakpoints
run
memscope break step 2
memscope break step 4
run
memscope at step 3
continue
memscope break delete
continue
EOS
session breaks "$progs/leaky" -x breaks.gdb
expect_count breaks 'memscope: breakpoint 1, operator compute begins: launch 6, step 3, thread 1' 2 \
	"the compute breakpoint (step == 3), in two runs"
expect_count breaks 'memscope: breakpoint 2, operator load begins: launch 3, step 2, thread 1' 2 \
	"the load breakpoint (launch == 3), in two runs"
expect_count breaks "  now: step 2, in operator load (launch 3) on t0 'leaky'" 2 "the breakpoint's commands"
expect breaks '<PENDING>  msmemscope_gdb_stopped if $_memscope_op_begins("compute") && ($_memscope_step() == 3)' \
	"info breakpoints lists the compute breakpoint before run (its quotes gone)"
expect_count breaks '	stop only if $_memscope_op_begins("compute") && ($_memscope_step() == 3)' 2 \
	"info breakpoints lists the compute breakpoint"
expect_count breaks '	stop only if $_memscope_op_begins("load") && ($_memscope_launch() == 3)' 1 \
	"info breakpoints lists the load breakpoint"
expect breaks '	breakpoint already hit 1 time' "gdb counts the hits"
expect breaks 'memscope: warning: no operator named rope has begun so far; the breakpoint waits for one.' \
	"an operator never seen"
expect breaks '1    n        1  each launch of operator compute if step == 3' "disable"
expect_count breaks 'each launch of operator load if launch == 3' 2 "delete (set, listed once, then gone)"
expect_count breaks 'exited normally' 2 "the run with the breakpoints disabled or deleted, and the last one"
expect breaks 'memscope: breakpoint 4, step 2 begins' "a step breakpoint"
expect breaks 'memscope: step 3 begins' "at step 3 with step breakpoints at 2 and 4"
expect breaks 'memscope: breakpoint 5, step 4 begins' "the step breakpoint after at step"
expect breaks 'memscope: deleted 4 operator and step breakpoints.' "break delete"
expect_rc "gdb's exit status"
