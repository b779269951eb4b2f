#!/bin/sh
# SPDX-License-Identifier: MIT
# inefficient.sh: the inefficient analysis over tests/progs/inefficient,
# whose operator indices are known (see its header): exactly one block of
# each type, named with its operator indices, size, address, the operator
# that allocated it and its stack; the blocks that must not be flagged are
# not; --idle-threshold and --min-size move the idleness verdicts; JSON;
# inefficient_type in the Attr of the dump's MALLOC rows, from
# msmemscope-replay --export csv --analysis inefficient and from the
# launcher's --analysis=inefficient --data-format=csv (which records
# accesses by default, as msMemScope does).
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

prog=$MMS_PROGS/inefficient
[ -x "$prog" ] || fail "inefficient is not built: $prog"
# Debug information comes from the files themselves, never the network.
unset DEBUGINFOD_URLS
MSMEMSCOPE_CONFIG="call_stack=4;events=alloc,free,launch,access"
export MSMEMSCOPE_CONFIG
record i.mms "$prog" >i.out || fail "inefficient exited $?: $(cat i.out)"
l=$(sed -n 's/^inefficient l=\(0x[0-9a-f]*\)$/\1/p' i.out)
e=$(sed -n 's/^inefficient e=\(0x[0-9a-f]*\) .*/\1/p' i.out)
i=$(sed -n 's/^inefficient .* i=\(0x[0-9a-f]*\) .*/\1/p' i.out)
s=$(sed -n 's/^inefficient .* s=\(0x[0-9a-f]*\) .*/\1/p' i.out)
k=$(sed -n 's/^inefficient .* k=\(0x[0-9a-f]*\)$/\1/p' i.out)
[ -n "$l" ] && [ -n "$e" ] && [ -n "$i" ] && [ -n "$s" ] && [ -n "$k" ] || fail "inefficient printed: $(cat i.out)"

# report ARGS...: the text report with two frames per stack, source paths
# reduced to the file name (the build folder may be anywhere).
report() {
	"$MMS_REPLAY" i.mms --analysis inefficient --depth 2 "$@" >r.raw 2>r.err ||
		fail "--analysis inefficient $* exited $?: $(cat r.err)"
	sed 's|([^ ]*/\(inefficient\.c:[0-9]*)\)|(\1|; s|([^ ]*/\(progs\.h:[0-9]*)\)|(\1|' r.raw
}

report --min-size 1024 >r.txt
cat >r.expected <<TXT
inefficient: 3 blocks over 3011 operator steps and 13 accesses (idle threshold 3000, min size 1024)
  early_allocation            1 block          4096 bytes
  late_deallocation           1 block          8192 bytes
  temporary_idleness          1 block         16384 bytes

temporary_idleness: used in operator 9, then not until operator 3011 (3002 apart)
  16384 bytes at $i (HOST, allocation 6), allocated in operator 9 'alloc_idle', live at the end
    #0  prog_malloc (progs.h:83)
    #1  main (inefficient.c:79)
    ... 2 more frames

late_deallocation: last used in operator 6 < operator 7 allocated memory < freed in operator 8
  8192 bytes at $l (HOST, allocation 4), allocated in operator 5 'alloc_late', freed in operator 8
    #0  prog_malloc (progs.h:83)
    #1  main (inefficient.c:58)
    ... 2 more frames

early_allocation: allocated in operator 2 < operator 3 freed memory < first used in operator 4
  4096 bytes at $e (HOST, allocation 2), allocated in operator 2 'alloc_early', live at the end
    #0  prog_malloc (progs.h:83)
    #1  main (inefficient.c:46)
    ... 2 more frames
TXT
diff -u r.expected r.txt >r.diff || fail "the inefficient report differs: $(cat r.diff)"

# The default minimum size (0) lets the 64-byte block S in too; a
# threshold of 2999 catches K, read exactly 3000 launches after its write.
report >d.txt
grep -q '^  temporary_idleness          2 blocks        16448 bytes$' d.txt || fail "min size 0: not 2 idle blocks: $(cat d.txt)"
grep -q "^  64 bytes at $s (HOST, allocation 7), allocated in operator 9 'alloc_idle', live at the end$" d.txt ||
	fail "min size 0: the 64-byte block is not reported: $(cat d.txt)"
report --min-size 1024 --idle-threshold 2999 >t.txt
grep -q '(idle threshold 2999, min size 1024)$' t.txt || fail "--idle-threshold 2999: $(head -1 t.txt)"
grep -q "^temporary_idleness: used in operator 9, then not until operator 3009 (3000 apart)$" t.txt ||
	fail "--idle-threshold 2999: K is not idle: $(cat t.txt)"
grep -q "^  16384 bytes at $k (HOST, allocation 8)" t.txt || fail "--idle-threshold 2999: K's line: $(cat t.txt)"
grep -c '^temporary_idleness:' t.txt | grep -qx 2 || fail "--idle-threshold 2999: not two idle blocks: $(cat t.txt)"
# --top 1: the counts of all, the largest block only.
report --min-size 1024 --top 1 >o.txt
grep -q '^the 1 largest (--top):$' o.txt || fail "--top 1: $(cat o.txt)"
expect_eq "blocks listed with --top 1" "$(grep -c ' bytes at ' o.txt)" 1
grep -q "^  16384 bytes at $i " o.txt || fail "--top 1 does not list the largest block: $(cat o.txt)"

# JSON: one object, the same verdicts with their operator indices.
"$MMS_REPLAY" i.mms --analysis inefficient --min-size 1024 --json >j.json 2>j.err || fail "--json exited $?: $(cat j.err)"
"$MMS_PYTHON" - j.json "$e" "$l" "$i" >j.out 2>&1 <<'PY' || fail "inefficient --json: $(cat j.out)"
import json, sys

path, e, l, i = sys.argv[1:]
lines = open(path).read().splitlines()
assert len(lines) == 1, f"{len(lines)} lines"
d = json.loads(lines[0])
assert (d["analysis"], d["idle_threshold"], d["min_size"], d["ops"], d["accesses"], d["flagged"]) == \
    ("inefficient", 3000, 1024, 3011, 13, 3), d
assert d["counts"] == {"early_allocation": 1, "late_deallocation": 1, "temporary_idleness": 1}, d["counts"]
assert d["bytes"] == {"early_allocation": 4096, "late_deallocation": 8192, "temporary_idleness": 16384}, d["bytes"]
got = [(b["types"], b["addr"], b["size"], b["alloc_id"], b["malloc_op"], b["op"], b["first_access_op"],
        b["free_op"], b["early_free_op"], b["late_access_op"], b["late_malloc_op"], b["idle_from_op"],
        b["idle_to_op"], b["stack"][1]["function"]) for b in d["blocks"]]
assert got == [
    (["temporary_idleness"], i, 16384, 6, 9, "alloc_idle", 3011, 0, 0, 0, 0, 9, 3011, "main"),
    (["late_deallocation"], l, 8192, 4, 5, "alloc_late", 6, 8, 0, 6, 7, 0, 0, "main"),
    (["early_allocation"], e, 4096, 2, 2, "alloc_early", 4, 0, 3, 0, 0, 0, 0, "main"),
], got
PY

# The dump: msmemscope-replay --export csv --analysis inefficient prints
# the report and tags the three MALLOC rows, and only them.
"$MMS_REPLAY" i.mms --export csv -o i.csv --analysis inefficient --min-size 1024 >x.out 2>x.err ||
	fail "--export csv --analysis inefficient exited $?: $(cat x.err)"
grep -q '^inefficient: 3 blocks' x.out || fail "--export with --analysis printed no report: $(cat x.out)"
e16=$(printf '0x%016x' "$e")
l16=$(printf '0x%016x' "$l")
i16=$(printf '0x%016x' "$i")
grep -q "^6,MALLOC,HOST,.*,\"{allocation_id:2,addr:$e16,size:4096,inefficient_type:early_allocation}\"," i.csv ||
	fail "no early_allocation on E's MALLOC row: $(grep '^6,' i.csv)"
grep -q "^15,MALLOC,HOST,.*,\"{allocation_id:4,addr:$l16,size:8192,inefficient_type:late_deallocation}\"," i.csv ||
	fail "no late_deallocation on L's MALLOC row: $(grep '^15,' i.csv)"
grep -q "^31,MALLOC,HOST,.*,\"{allocation_id:6,addr:$i16,size:16384,inefficient_type:temporary_idleness}\"," i.csv ||
	fail "no temporary_idleness on I's MALLOC row: $(grep '^31,' i.csv)"
expect_eq "rows with inefficient_type" "$(grep -c inefficient_type i.csv)" 3
# Without --analysis the dump has no tags.
"$MMS_REPLAY" i.mms --export csv -o plain.csv 2>/dev/null || fail "--export csv exited $?"
expect_eq "plain dump rows with inefficient_type" "$(grep -c inefficient_type plain.csv || true)" 0

# A log without accesses says how to get them.
MSMEMSCOPE_CONFIG="events=alloc,free,launch" record n.mms "$prog" >/dev/null || fail "inefficient exited $?"
"$MMS_REPLAY" n.mms --analysis inefficient >n.txt 2>&1 || fail "--analysis inefficient on n.mms: $(cat n.txt)"
grep -q '^inefficient: 0 blocks over 3011 operator steps and 0 accesses' n.txt || fail "no accesses: $(cat n.txt)"
grep -q 'record with --events=alloc,free,launch,access' n.txt || fail "no hint about accesses: $(cat n.txt)"

# Accesses but no operator launches (launch not recorded): every memory
# event is an operator step of its own, as msMemScope counts them, and the
# report says so.
MSMEMSCOPE_CONFIG="events=alloc,free,access" record nl.mms "$prog" >/dev/null || fail "inefficient exited $?"
"$MMS_REPLAY" nl.mms --analysis inefficient >nl.txt 2>nl.err || fail "--analysis inefficient on nl.mms: $(cat nl.err)"
grep -q 'the log has no operator launches: each memory event counted as an operator step' nl.txt ||
	fail "no note about the missing operator launches: $(head -5 nl.txt)"
grep -q '^inefficient: [0-9]* blocks\{0,1\} over [0-9]* memory events (no operator launches) and ' nl.txt ||
	fail "the head does not count memory events where there are no operator launches: $(head -1 nl.txt)"
"$MMS_REPLAY" nl.mms --analysis inefficient --json >nl.json 2>nl.err || fail "--json on nl.mms: $(cat nl.err)"
"$MMS_PYTHON" -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); assert d["launches"] == 0 and d["ops"] > 0 and d["accesses"] > 0, d' \
	nl.json || fail "JSON of a log without launches: $(head -c 300 nl.json)"

# The launcher: --analysis=inefficient records accesses unless --events
# says otherwise, reports on stderr, and tags the dump (default options:
# S, 64 bytes, is idle too).
if [ -x "$MMS_LAUNCHER" ]; then
	unset MSMEMSCOPE_CONFIG
	"$MMS_LAUNCHER" --output=out --call-stack=c:4 --analysis=inefficient --data-format=csv -- "$prog" \
		>la.out 2>la.err || fail "msmemscope --analysis=inefficient exited $?: $(cat la.err)"
	grep -q '^inefficient: 4 blocks over 3011 operator steps and 13 accesses (idle threshold 3000, min size 0)$' \
		la.err || fail "the launcher's report: $(cat la.err)"
	set -- out/msmemscope_*/dump/memscope_dump_*.csv
	[ $# = 1 ] && [ -f "$1" ] || fail "expected one dump, found: $*"
	expect_eq "launcher dump rows with inefficient_type" "$(grep -c inefficient_type "$1")" 4
	grep -q ',"{allocation_id:7,addr:0x[0-9a-f]*,size:64,inefficient_type:temporary_idleness}",' "$1" ||
		fail "the launcher's dump does not tag S: $(grep allocation_id:7, "$1")"
fi
