#!/bin/sh
# SPDX-License-Identifier: MIT
# pystack-hook.sh: tests/progs/pystack.sh again, with the Python frames
# kept by the package's profile hook (MSMEMSCOPE_PYTHON_FRAMES=hook): the
# way the recorder gets them on the Python versions whose frames the
# package cannot read from the interpreter (before 3.11, after 3.13).
MSMEMSCOPE_PYTHON_FRAMES=hook
export MSMEMSCOPE_PYTHON_FRAMES
. "${top_srcdir:?run this test through make check}/tests/progs/pystack.sh"
