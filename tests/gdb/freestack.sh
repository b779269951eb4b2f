#!/bin/sh
# SPDX-License-Identifier: MIT
# freestack.sh: who freed a block (issue 16 item 9). tests/gdb/freer
# allocates a block in step 1 (make) and frees it in step 2, in launch 2
# of operator "release" (drop). Recorded with stacks (memscope.gdb's
# default), `memscope block' shows the free's step, operator and stack,
# its innermost frame drop() at the line marked FREE; `memscope at event'
# on the free shows the stack that freed it after the one that
# allocated it. With stacks off (call_stack=0), the free says no stack
# was recorded; with free_stack=0 (--keep-stacktraces=alloc), that the
# log keeps none for frees, the allocation's stack shown, and the same
# with gdb's `set memscope keep-stacktraces alloc'. The double free of
# tests/gdb/dfree shows both frees' stacks.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

line=$(grep -n '/\* FREE \*/' "$top_srcdir/tests/gdb/freer.c" | cut -d: -f1)
[ -n "$line" ] || fail "no FREE line in freer.c"

session freer "$progs/freer" -ex 'break done' -ex run -ex 'memscope block block' -ex 'memscope at event 6'
expect_rc "gdb's exit status"
expect freer 'freed block 0xADDR, 48 bytes, HOST, allocation 1' "the freed block"
expect freer "  freed at event #6 by t0 'freer' in step 2, operator release (launch 2):" \
	"the free's step and operator"
expect freer "    #0  drop (SRC/freer.c:$line)" "block: the free's stack, at the free"
expect_count freer "    #0  drop (SRC/freer.c:$line)" 2 "block and at event: the free's stack"
expect freer '  freed by:' "at event: the free's stack follows the allocation's"
expect freer "    #0  make (SRC/freer.c:" "the allocation's stack"

MSMEMSCOPE_CONFIG=call_stack=0
export MSMEMSCOPE_CONFIG
session nostack "$progs/freer" -ex 'break done' -ex run -ex 'memscope block block'
unset MSMEMSCOPE_CONFIG
expect_rc "gdb's exit status, stacks off"
expect nostack "  freed at event #6 by t0 'freer' in step 2, operator release (launch 2):" "the free, stacks off"
expect_count nostack '(no stack recorded; the recorder ran with call_stack=0)' 2 \
	"no allocation or free stack with stacks off"

MSMEMSCOPE_CONFIG='call_stack=32;free_stack=0'
export MSMEMSCOPE_CONFIG
session allocst "$progs/freer" -ex 'break done' -ex run -ex 'memscope block block'
unset MSMEMSCOPE_CONFIG
expect_rc "gdb's exit status, free stacks off"
expect allocst "    (none kept: recorded with --keep-stacktraces=alloc, allocations' stacks only)" \
	"the free keeps no stack with free_stack=0"
expect allocst "    #0  make (SRC/freer.c:" "the allocation's stack with free_stack=0"

# The same through gdb's own setting, which shows and refuses as gdb does.
session keepst "$progs/freer" -ex 'show memscope keep-stacktraces' -ex 'set memscope keep-stacktraces alloc' \
	-ex 'set memscope keep-stacktraces none' -ex 'show memscope keep-stacktraces' -ex 'break done' -ex run \
	-ex 'memscope block block'
expect_rc "gdb's exit status, set memscope keep-stacktraces alloc"
expect keepst "The next runs keep stacks: alloc-and-free." "the default shown"
expect keepst "memscope: the next runs keep the stacks of allocations only (frees record none)." "the setting said"
expect keepst 'Undefined item: "none".' "a value gdb's enum does not have refused"
expect keepst "The next runs keep stacks: alloc." "the setting kept after a refused value"
expect keepst "    (none kept: recorded with --keep-stacktraces=alloc, allocations' stacks only)" \
	"the free keeps no stack with set memscope keep-stacktraces alloc"
expect keepst "    #0  make (SRC/freer.c:" "the allocation's stack with set memscope keep-stacktraces alloc"

session dfree "$progs/dfree" -ex run -ex 'set $p = p' -ex 'memscope block $p'
expect dfree "  freed at event #2 by t0 'dfree':" "the first free"
expect dfree "  freed again at event #3 by t0 'dfree': a double free:" "the second free"
expect_count dfree '    #0  main (SRC/dfree.c:' 3 "the allocation's and both frees' stacks"
