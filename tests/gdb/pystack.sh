#!/bin/sh
# SPDX-License-Identifier: MIT
# pystack.sh: `set memscope call-stack c:N,python:M' records the Python
# frames of a CPython program under gdb (the recorder's environment then
# has the interpreter import the msmemscope package at start-up), and the
# commands print the mixed stack: the Python function and file:line where
# the interpreter's eval loop ran them. A specification the recorder does
# not take is refused, and the setting stays. With Python frames alone,
# a block allocated before Python code ran is said to have no stack.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

# The interpreter the package was built for.
py=${MMS_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || skip "$py is not installed: Python stacks under gdb not checked"
[ -e "$top_builddir/hooks/python/build/msmemscope/_msmemscope.so" ] ||
	skip "configure built no Python package (Debian: apt-get install -y python3-dev, then configure again)"

cat >pp.py <<'PY'
import os
def make(n):
    return bytearray(n)

def work():
    return [make(100000) for _ in range(3)]

x = work()
os.getpgrp()
PY
session py "$py" -ex 'set memscope call-stack bogus' -ex 'set memscope call-stack c:8,python:8' \
	-ex 'show memscope call-stack' -ex 'set breakpoint pending on' -ex 'break getpgrp' -ex "set args $work/pp.py" \
	-ex run -ex 'set memscope depth 0' -ex 'set memscope top 1' -ex 'memscope leaks full'
expect py "memscope: bogus is not a stack specification the recorder takes" "a bad specification refused"
expect py "The next runs record stacks of c:8,python:8." "the setting"
expect py "make (WORK/pp.py:3)" "the Python frame that allocated, with its line"
expect py "work (WORK/pp.py:6)" "its caller"
expect py "<module> (WORK/pp.py:8)" "the module's line"
expect_rc "gdb's exit status"
note "Python frames under gdb, in the mixed stack"

# Python frames alone: the blocks allocated before any Python code ran
# (the interpreter's start) have no stack, which says so; the recorder
# did record stacks, so no word of call_stack=0.
session pyonly "$py" -ex 'set memscope call-stack python:4' -ex 'set breakpoint pending on' -ex 'break getpgrp' \
	-ex "set args $work/pp.py" -ex run -ex 'set memscope top 40' -ex 'memscope leaks full'
expect pyonly "make (WORK/pp.py:3)" "the Python frame that allocated"
expect pyonly "(no stack recorded for this block)" "a block of the interpreter's start"
expect_not pyonly "call_stack=0" "no claim that the recorder ran without stacks"
expect_rc "gdb's exit status (python:4)"
note "with Python frames alone, a block without a stack is said to have none, not the recording"
