#!/bin/sh
# SPDX-License-Identifier: MIT
# nocall.sh: gdb never calls a function in the program for a memscope
# command (issue 16, defect 3). A string literal (which gdb would copy
# into the program with its malloc), a call, an array literal: refused
# with a message, with a breakpoint on malloc that would stop any call
# gdb made; the log records no allocation for them; gdb's own
# may-call-functions setting is left as it was; gdb goes on and exits 0.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session nocall "$progs/stomp" -ex 'break ready' -ex run -ex 'memscope info' -ex 'break malloc' \
	-ex 'memscope watch "abc"' -ex 'memscope block "str"' -ex 'memscope watch ready()' \
	-ex 'memscope watch nb sizeof("abcd")' -ex 'memscope block (char *)"x" + 1' \
	-ex 'memscope watch {1, 2}' -ex 'show may-call-functions' -ex 'memscope info' -ex 'delete' \
	-ex 'memscope unwatch' -ex 'memscope watch nb' -ex continue -ex continue -ex continue
expect nocall 'memscope: "abc" is not an address, a pointer nor an object in the program'"'"'s memory.' "a string literal to watch"
expect nocall 'memscope: "str" is not an address nor an object in the program'"'"'s memory.' "a string literal to block"
expect nocall 'memscope: ready() would need gdb to call a function in the program' "a call"
expect nocall 'memscope: (char *)"x" + 1 would need gdb to call a function in the program' "a literal cast to a pointer"
expect nocall 'Permission to call functions in the program is on.' "may-call-functions restored"
expect_count nocall '  events so far: 4; operator launches: 0' 2 "no allocation in the program between the two infos"
expect_not nocall 'called from GDB' "gdb called into the program"
expect nocall 'changed in operator scale (launch 3, step 1)' "a watch after the refusals works"
expect nocall 'exited normally' "the program's end"
expect_rc "gdb's exit status"
