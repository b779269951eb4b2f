#!/bin/sh
# SPDX-License-Identifier: MIT
# breaks.sh: `memscope break op/step' are real gdb breakpoints (issue 16,
# defect 6). On tests/gdb/leaky (steps 1-4, each launching "load" then
# "compute"): two operator breakpoints with conditions on the step and
# the launch, one with a quoted NAME, both listed by `info breakpoints',
# one with `commands'; both stop in the first run and again after a
# second `run'; an operator never seen gets a warning; `disable' and
# `delete' take them out of the program (the third run goes to its end);
# a step breakpoint and `at step' together. Names over what the recorder
# takes: those that fit are armed, the others named in a warning.
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

# The recorder takes up to 127 bytes of operator names together, each
# with one byte for its end. Names of 60 bytes: compute (breakpoint 1)
# and the first fit; a second, added while the first was disabled, and
# the first enabled again, no longer do. At `run' the names that fit are
# armed in breakpoint number order (compute stops), and one warning says
# which breakpoint is not and why (arming failed as a whole: no operator
# breakpoint stopped). A name that cannot fit, an empty one and one past
# 127 bytes are refused saying no breakpoint was made.
x59=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
session names "$progs/leaky" -ex 'memscope break op compute if step == 2' -ex "memscope break op ${x59}1" \
	-ex 'disable 2' -ex "memscope break op ${x59}2" -ex 'enable 2' -ex "memscope break op ${x59}3" \
	-ex 'memscope break op ""' -ex "memscope break op ${x59}${x59}xxxxxxxxxxxxxxxxxxxxxx" -ex run -ex continue \
	-ex 'memscope break'
expect names "memscope: warning: breakpoint 3 (operator ${x59}2) is not armed, so it will not stop: the recorder takes up to 127 bytes of operator names together, each name counted with one byte more for its end, and the enabled operator breakpoints before it take 69 of them. Delete or disable one to make room." \
	"the breakpoint left out, named with the reason"
expect_count names 'is not armed' 1 "one warning"
expect names 'memscope: breakpoint 1, operator compute begins: launch 4, step 2, thread 1' \
	"the breakpoints that fit are armed"
expect names "memscope: no breakpoint made: the recorder takes up to 127 bytes of operator names together, each name counted with one byte more for its end, and the names armed now and ${x59}3 would take 130. Delete or disable an operator breakpoint first." \
	"a name that does not fit"
expect names 'memscope: no breakpoint made: the operator name is empty.' "an empty name"
expect names "memscope: no breakpoint made: an operator breakpoint's name has at most 127 bytes (the recorder compares names on their first 127), and ${x59}${x59}xxxxxxxxxxxxxxxxxxxxxx has 140." \
	"a name too long"
expect names "3    y        0  each launch of operator ${x59}2" "the breakpoint left out stays set"
expect_not names 'ValueError' "no Python exception"
expect_rc "gdb's exit status (names)"
