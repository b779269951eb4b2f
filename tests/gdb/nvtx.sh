#!/bin/sh
# SPDX-License-Identifier: MIT
# nvtx.sh: memscope.gdb makes the recorder the program's NVTX injection
# library: tests/progs/nvtx (NVTX calls only) stops at the launch of the
# pushed range io::read (launch 5, step 1) and when its second
# "step start" range begins; an NVTX_INJECTION64_PATH the user set in gdb
# is left alone.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

prog=$top_builddir/tests/progs/nvtx
[ -x "$prog" ] || skip "the NVTX test program is not built: configure found no nvtx3/nvToolsExt.h (--with-cuda=DIR)"

native=$("$prog") || fail "nvtx exited $? on its own"
session nvtx "$prog" -ex 'memscope break op io::read' -ex run -ex 'memscope info' \
	-ex 'memscope at step 2' -ex 'memscope info' -ex 'memscope break delete' -ex continue
expect nvtx 'memscope: breakpoint 1, operator io::read begins: launch 5, step 1, thread 1' "the break at the pushed range io::read"
expect nvtx "now: step 1, in operator io::read (launch 5) on t0 'nvtx-main'" "the launch and the NVTX thread name"
expect nvtx 'memscope: step 2 begins, thread 1' "the stop at the second \"step start\" range"
expect nvtx 'events so far: 35; operator launches: 7' "step 1's 7 launches"
expect nvtx 'now: step 2, no operator running' "where step 2 begins"
expect nvtx "${native%unset}set" "the program's output under gdb (its heap as without it)"

session other "$prog" -ex 'set environment NVTX_INJECTION64_PATH=/nonexistent/libtool.so' -ex run
expect other 'range=unset' "the user's NVTX_INJECTION64_PATH, left alone"
