#!/bin/sh
# SPDX-License-Identifier: MIT
# abi.sh: the gdb side's ctypes copies of the replay library's structs
# (gdb/msmemscope_gdb/replaylib.py) have the C layout: every size and
# every field offset, as abicheck prints them from the public header. A
# field added on one side only would make gdb read the wrong bytes.
set -eu
: "${top_srcdir:?run this test through make check}"
: "${top_builddir:?run this test through make check}"
test_dir=tests/gdb
. "$top_srcdir/tests/testlib.sh"

py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3 || true)
[ -n "$py" ] || skip "python3 is not installed (apt-get install python3)"
"$top_builddir/tests/gdb/abicheck" >c.txt || fail "abicheck exited $?"
"$py" - c.txt "$top_srcdir/gdb/msmemscope_gdb/replaylib.py" <<'PY' || fail "the ctypes structs differ from the C ones (above)"
import ctypes
import importlib.util
import sys
# The module alone: the package imports gdb, which only gdb's Python has.
spec = importlib.util.spec_from_file_location("replaylib", sys.argv[2])
r = importlib.util.module_from_spec(spec)
spec.loader.exec_module(r)
bad = 0
for line in open(sys.argv[1]):
    name, size, *fields = line.split()
    cls = getattr(r, name)
    if ctypes.sizeof(cls) != int(size):
        print(f"{name}: ctypes size {ctypes.sizeof(cls)}, C size {size}")
        bad += 1
    names = [f[0] for f in cls._fields_]
    cnames = [f.split("=")[0] for f in fields]
    if names != cnames:
        print(f"{name}: ctypes fields {names}\n  C fields {cnames}")
        bad += 1
    for f in fields:
        k, off = f.split("=")
        if hasattr(cls, k) and getattr(cls, k).offset != int(off):
            print(f"{name}.{k}: ctypes offset {getattr(cls, k).offset}, C offset {off}")
            bad += 1
print(f"{sum(1 for _ in open(sys.argv[1]))} structs compared, {bad} differences")
sys.exit(1 if bad else 0)
PY
note "the gdb side's ctypes structs match the C layout"
