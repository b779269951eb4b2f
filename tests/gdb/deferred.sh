#!/bin/sh
# SPDX-License-Identifier: MIT
# deferred.sh: a program recorded with collect=deferred under gdb
# (tests/progs/deferred): the blocks live at exit that were allocated
# before msmemscope_stop() are not called leaked in the report at exit
# (their fate after the stop is not in the log); the leak of a window that
# lasts to exit still is.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

prog=$top_builddir/tests/progs/deferred
session stop "$prog" -ex 'set environment MSMEMSCOPE_CONFIG=collect=deferred' -ex 'run stop'
expect stop 'memscope: at exit: no leak; 2 blocks, 500 bytes, allocated before recording stopped, freed later or not (the log cannot tell), not counted as leaks' \
	"stopped before exit: no leak, the 2 blocks set apart"
expect_not stop 'leaked' "nothing called leaked"
session two "$prog" -ex 'set environment MSMEMSCOPE_CONFIG=collect=deferred' -ex 'run'
expect two 'memscope: at exit: 1 block leaked, 400 bytes, in 1 loss record; 2 blocks, 500 bytes, allocated before recording stopped' \
	"two windows: the second window's leak, the first's blocks set apart"
expect_rc "gdb's exit status"
# A program that never calls msmemscope_start() recorded no block: the
# line says so, not that "the program freed every block".
session nostart /bin/sh -ex 'set environment MSMEMSCOPE_CONFIG=collect=deferred' -ex 'run -c true'
expect nostart 'memscope: at exit: no leak the log can tell: it recorded no block (recorded with collect=deferred: only between msmemscope_start() and msmemscope_stop())' \
	"never started: no block recorded"
expect_not nostart 'freed every block' "no claim of what was not recorded"
expect_rc "gdb's exit status (never started)"
# Immediate mode, msmemscope_stop(), then a leak the log never saw: no
# block is live in the log, and the line says what the log can tell.
session pause "$prog" -ex 'run pause'
expect pause 'memscope: at exit: no leak the log can tell: every block it recorded was freed (recorded only while on: msmemscope_stop() paused recording' \
	"paused in immediate mode: no claim of what was not recorded"
expect_not pause 'freed every block' "no claim of the 700 bytes lost while recording was off"
expect_rc "gdb's exit status (paused)"
