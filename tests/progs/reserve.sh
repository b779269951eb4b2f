#!/bin/sh
# SPDX-License-Identifier: MIT
# reserve.sh: mapped memory is what the program may access (format 9):
# tests/progs/reserve reserves 256 MiB with PROT_NONE and opens and closes
# pieces with mprotect and mmap(MAP_FIXED, PROT_NONE). The program sees
# what it sees natively (a watched page closed inside an operator does not
# stop it); the summary's mappings peak at the 3 MiB it opened at once,
# with 512 KiB mapped at exit and the reservation in no figure; the event
# list names mprotect and the reservation; the leaks report lists the
# 512 KiB mapping only.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

prog=$MMS_PROGS/reserve
[ -x "$prog" ] || fail "the test program is not built: $prog"

"$prog" >native.out 2>&1 || fail "reserve exited $? natively: $(cat native.out)"
record rec.mms "$prog" >rec.out 2>rec.err || fail "reserve exited $? under the recorder: $(cat rec.err)"
diff -u native.out rec.out >diff.out || fail "the program's output changed under the recorder: $(cat diff.out)"

"$MMS_REPLAY" rec.mms --summary --json >sum.json 2>sum.err || fail "--summary --json exited $?: $(cat sum.err)"
"$MMS_PYTHON" - sum.json <<'PY' || fail "the mappings' figures are wrong: $(cat sum.json)"
import json, sys
m = json.load(open(sys.argv[1]))["kinds"]["mmap"]
MIB = 1 << 20
# Opened: A 1 MiB, B 2 MiB, C 512 KiB, the watched page; A made read-only
# opens nothing; closing B (mmap PROT_NONE) and A (mprotect) frees them.
assert m["peak_bytes"] == 3 * MIB, m
assert m["live_bytes"] == MIB // 2 and m["live_blocks"] == 1, m
assert m["allocs"] == 4 and m["bytes_allocated"] == 3 * MIB + MIB // 2 + 4096, m
assert m["frees"] == 3, m
PY

"$MMS_REPLAY" rec.mms --from 0 >events.out 2>events.err || fail "--from 0 exited $?: $(cat events.err)"
grep -q 'FREE  *mmap  *0x[0-9a-f]* 256.0 MiB reserved with PROT_NONE (address space, not memory)$' events.out ||
	fail "the reservation is not shown as such: $(cat events.out)"
[ "$(grep -c 'MALLOC  *mprotect  *0x[0-9a-f]* [0-9.]* [KM]iB, allocation' events.out)" = 4 ] ||
	fail "expected 4 mprotect calls that opened memory: $(cat events.out)"
grep -q 'MALLOC  *mprotect  *0x[0-9a-f]* 1.0 MiB, no memory opened or closed$' events.out ||
	fail "making A read-only is not shown as changing nothing: $(cat events.out)"
grep -q 'FREE  *mprotect  *0x[0-9a-f]* 1.0 MiB, allocation 1$' events.out ||
	fail "closing A with mprotect is not shown as its end: $(cat events.out)"

"$MMS_REPLAY" rec.mms --analysis leaks >leaks.out 2>leaks.err || fail "--analysis leaks exited $?: $(cat leaks.err)"
grep -q '512.0 KiB in 1 block' leaks.out || fail "the 512 KiB mapping is not listed live at exit: $(cat leaks.out)"
if grep -q 'MiB in' leaks.out; then
	fail "the leaks report counts reserved address space: $(cat leaks.out)"
fi
note "reserved address space: the program unchanged, mappings peak at the 3 MiB opened, the reservation in no figure, mprotect named"
