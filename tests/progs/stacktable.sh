#!/bin/sh
# SPDX-License-Identifier: MIT
# stacktable.sh: a program whose allocations come from more distinct call
# stacks than the recorder's first table of stack frames holds (3 M
# frames; tests/progs/stacktable.c): the recorder goes on in its second
# table, so the log is not flagged full and the stacks of the last
# allocations are whole (the innermost 16 frames, from the function that allocated; ids
# of the second table). Before the second table, such stacks were cut or
# missing, and no report said so.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

prog=$MMS_PROGS/stacktable
[ -x "$prog" ] || fail "the test program is not built: $prog"

# Without the scan at exit: the blocks the program keeps stay in the
# at-exit list, with the leaked ones.
MSMEMSCOPE_CONFIG='call_stack=16;reach=0' record st.mms "$prog" || fail "stacktable exited $? under the recorder"
summarize st.mms
expect_key st.mms.json stacks_full false
expect_key st.mms.json allocs 200001
expect_key st.mms.json live_blocks 17
"$MMS_REPLAY" st.mms --analysis leaks --json >leaks.json 2>leaks.err || fail "replay --analysis leaks exited $?: $(cat leaks.err)"
"$MMS_PYTHON" - leaks.json <<'PY' || fail "the stacks are not whole: $(head -c 1500 leaks.json)"
import json, sys
d = json.loads(open(sys.argv[1]).readline())
a = d["at_exit"]
walks = [x for x in a["list"] if x["bytes"] == 16]
last = [x for x in a["list"] if x["bytes"] == 24]
assert len(walks) == 16 and len(last) == 1, a["list"]
# Stacks new once the first table (4M slots, ids 1 to 2^22) was full get
# ids of the second: the program did fill it.
assert all(x["stack"] > 1 << 22 for x in walks), [x["stack"] for x in walks]
groups = a["by_stack"]["groups"]
g = [g for g in groups if g["bytes"] == 24][0]
assert g["stack"][0]["function"] == "last_alloc" and g["stack"][1]["function"] == "main", g["stack"][:3]
for g in groups:
    if g["bytes"] == 16:
        names = [f["function"] for f in g["stack"]]
        # leaf, then 15 frames of the walk's steps (walk(0) tail-calls
        # leaf): the innermost 16 of a stack deeper than that.
        assert names[0] == "leaf" and names[1].startswith("step") and len(names) == 16, names
PY
note "200000 allocations from distinct stacks: the second table of frames holds them, their stacks are whole"
