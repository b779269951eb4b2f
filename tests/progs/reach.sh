#!/bin/sh
# SPDX-License-Identifier: MIT
# reach.sh: the recorder scans the process's memory at the end of exit
# (hooks/reach.c) and the reader tells the blocks live then apart
# (replay/core/reach.c), as valgrind's leak check does: leaked (no pointer
# left), indirectly leaked (only from leaked blocks), possibly leaked (only
# into their middle), still reachable (from globals, stacks, thread-local
# storage, the program's own mappings, through other blocks). reach.c
# gives each case a block of its own size; the verdicts are checked in the
# leaks report's JSON, its text, the launcher's summary and the replay's
# --summary, with a thread still running at exit too, and against
# valgrind's LEAK SUMMARY where valgrind is installed. Without the scan
# (--no-reach-scan) every block live at exit is listed, as before.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

prog=$MMS_PROGS/reach
[ -x "$prog" ] || fail "the test program is not built: $prog"

# verdicts JSON: "size:verdict" of every heap block live at exit, sorted.
verdicts() {
	"$MMS_PYTHON" - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
out = []
for b in d["at_exit"]["list"] + d["reachable"]["list"]:
    if b["memory"] == "HOST":
        out.append("%d:%s" % (b["bytes"], b.get("reach", "unknown")))
print(" ".join(sorted(out, key=lambda x: int(x.split(":")[0]))))
PY
}

want="1001:leaked 1002:leaked 1003:leaked 1004:leaked 1009:leaked 1010:leaked 1011:indirect 1020:leaked 1021:indirect 1031:possible 1032:possible 1041:possible"
want="$want 2001:reachable 2002:reachable 2003:reachable 2004:reachable 2005:reachable 2008:reachable"
# quick leaves with _exit, as shells and forked children do: no freeres,
# the same verdicts (the scan runs in the _exit hook).
for mode in plain threads quick; do
	rm -rf "out-$mode"
	"$MMS_LAUNCHER" --call-stack=c:8 --output="out-$mode" -- "$prog" $mode >"$mode.out" 2>"$mode.err" ||
		fail "reach $mode exited $? under the recorder: $(cat "$mode.err")"
	expect_eq "reach $mode's output" "$(cat "$mode.out")" done
	log=$(launched_log "$mode.err")
	[ -f "$log" ] || fail "reach $mode: no log: $(cat "$mode.err")"
	"$MMS_REPLAY" "$log" --analysis leaks --json >"$mode.json" 2>"$mode.json.err" ||
		fail "reach $mode: leaks --json exited $?: $(cat "$mode.json.err")"
	expect_key "$mode.json" at_exit.reach_known true
	w="$want 2007:reachable"
	# threads: 2006 on a running thread's stack, 2009 in another's
	# registers only (read leaked before), 1005 in the dead frames below
	# the first one's stack pointer (read reachable before), 2010 below a
	# third one's stack in the mapping that holds it (not its frames).
	[ $mode = threads ] && w="$w 1005:leaked 2006:reachable 2009:reachable 2010:reachable"
	w="$w 300001:leaked 300002:reachable"
	got=$(verdicts "$mode.json" | tr ' ' '\n' | sort -t: -k1,1n | tr '\n' ' ')
	w=$(echo "$w" | tr ' ' '\n' | sort -t: -k1,1n | tr '\n' ' ')
	expect_eq "reach $mode: the verdicts at exit" "$got" "$w"
	# The launcher's summary and its report say the same.
	leaked="13 blocks, 304.9 KiB (312186 bytes)"
	[ $mode = threads ] && leaked="14 blocks, 305.9 KiB (313191 bytes)"
	grep -q "^      leaked        $leaked   <- leaked at exit (2 indirectly, 3 possibly)$" "$mode.err" ||
		fail "reach $mode: the launcher's summary does not count $leaked leaked, 2 indirectly, 3 possibly: $(sed -n '/heap/,/threads/p' "$mode.err")"
	grep -q "^Of them 2 allocation(s), 0.001938 Mb(s), were pointed to only from other leaked blocks" "$mode.err" &&
		grep -q "^Of them 3 allocation(s), 0.002960 Mb(s), were reached only through pointers into their middle (possibly leaked)\.$" "$mode.err" &&
		grep -q "^====== Still reachable at exit: [0-9]* allocation(s), .* (not leaks: the program still pointed to them) ======$" "$mode.err" ||
		fail "reach $mode: the leaks report does not tell them apart: $(sed -n '/======/,$p' "$mode.err")"
	# The leaked blocks' stacks name where they were allocated.
	grep -q "#1  work (.*reach.c:" "$mode.err" || fail "reach $mode: no stack names work(): $(cat "$mode.err")"
	summarize "$log"
	expect_key "$log.json" reach_scan '"whole"'
	expect_key "$log.json" reach.reachable.bytes "$(jget "$mode.json" reachable.bytes)"
done
# With a thread still running, freeres did not run, and the scan read that
# thread's stack whole.
expect_key threads.json at_exit.reach_known true
"$MMS_REPLAY" "$(launched_log threads.err)" --summary >threads.sum || fail "--summary exited $?"
grep -q "^scan at exit         read .* in .* ms, [0-9]* pointers (other threads still ran)$" threads.sum ||
	fail "--summary does not say what the scan read: $(cat threads.sum)"

# --show-reachable lists them by stack.
"$MMS_REPLAY" "$(launched_log plain.err)" --analysis leaks --show-reachable >show.txt 2>&1 ||
	fail "--show-reachable exited $?: $(cat show.txt)"
grep -q "^Still reachable at exit by allocation stack: " show.txt || fail "--show-reachable lists nothing: $(cat show.txt)"

# Without the scan: every block live at exit is listed, as before.
rm -rf out-noscan
"$MMS_LAUNCHER" --no-reach-scan --output=out-noscan -- "$prog" >noscan.out 2>noscan.err ||
	fail "--no-reach-scan exited $?: $(cat noscan.err)"
"$MMS_REPLAY" "$(launched_log noscan.err)" --analysis leaks --json >noscan.json || fail "leaks --json exited $?"
expect_key noscan.json at_exit.reach_known false
expect_key noscan.json reachable.blocks 0
grep -q "^====== Blocks still live at exit ======$" noscan.err ||
	fail "--no-reach-scan: the report is not the one of blocks live at exit: $(cat noscan.err)"
# The launcher's summary calls them never freed, not leaked, as the report.
grep -q "^    live at exit    [0-9]* blocks, .*   <- never freed$" noscan.err ||
	fail "--no-reach-scan: the launcher's summary does not mark the blocks never freed: $(sed -n '/heap/,/threads/p' noscan.err)"
# More pointers than the scan writes: it stops, says so, and no block gets
# a verdict (every block live at exit is listed, as without the scan).
rm -rf out-limit
"$MMS_LAUNCHER" --output=out-limit -- "$prog" limit >limit.out 2>limit.err ||
	fail "reach limit exited $? under the recorder: $(cat limit.err)"
"$MMS_REPLAY" "$(launched_log limit.err)" --summary >limit.sum || fail "--summary exited $?"
grep -q "^scan at exit         stopped at its limit (16 Mi pointers, 4 GiB read, 65536 mappings) after 16777216 pointers in " limit.sum ||
	fail "--summary does not say the scan stopped at its limit: $(cat limit.sum)"
grep -q "^====== Blocks still live at exit ======$" limit.err ||
	fail "reach limit: the report is not the one of blocks live at exit: $(sed -n '/======/,$p' limit.err)"

# Threads still running at exit, allocating and freeing as the scan reads
# memory: a block made after the scan read the place of its pointer read
# leaked (6 runs in 8 on two cores, --error-exitcode failing them); now
# it is reachable where the scan found a pointer to it, else not judged,
# and no leak.
unjudged=0
for i in 1 2 3 4 5 6 7 8 9 10; do
	rm -rf out-busy
	"$MMS_LAUNCHER" --error-exitcode=3 --output=out-busy -- "$prog" busy >busy.out 2>busy.err ||
		fail "reach busy (run $i) exited $? under the recorder: $(sed -n '/heap/,$p' busy.err)"
	expect_eq "reach busy's output" "$(cat busy.out)" done
	"$MMS_REPLAY" "$(launched_log busy.err)" --analysis leaks --json >busy.json 2>busy.json.err ||
		fail "reach busy: leaks --json exited $?: $(cat busy.json.err)"
	expect_key busy.json at_exit.reach_known true
	got=$(verdicts busy.json | tr ' ' '\n' | grep '^[48]00[1-8]:')
	bad=$(echo "$got" | grep -v ':reachable$' | grep -v ':unknown$' || true)
	[ -z "$bad" ] || fail "reach busy (run $i): blocks made as the scan ran judged leaked: $bad"
	n=$(echo "$got" | grep -c ':unknown$' || true)
	if [ "$n" -gt 0 ]; then
		grep -q "^      not judged    $n blocks\{0,1\}, .*   made as the scan at exit ran, not judged$" busy.err ||
			fail "reach busy: the launcher's summary does not say $n blocks were not judged: $(sed -n '/heap/,/threads/p' busy.err)"
		grep -q "^====== Heap blocks not judged (made by threads still running while the scan at exit read memory" busy.err ||
			fail "reach busy: the leaks report does not list the blocks not judged: $(sed -n '/======/,$p' busy.err)"
	fi
	expect_key busy.json at_exit.by_reach.not_judged.blocks "$n"
	unjudged=$((unjudged + n))
done
note "threads allocating as the scan at exit ran (10 runs): no block judged leaked; $unjudged blocks made after the scan read their pointers' places were not judged"

# 100 bytes leaked alone, then "done" through stdout: freeres frees its
# buffer, made after the block, into the top chunk, which then begins in
# the block's last 8 bytes. glibc's main arena pointed there, and so did a
# word the dead frames of freeres left below the recorder's: the block read
# possibly leaked, and --error-exitcode for definite leaks gave 0.
rc=0
"$MMS_LAUNCHER" --error-exitcode=9 --errors-for-leak-kinds=definite --output=out-stdio -- "$prog" stdio \
	>stdio.out 2>stdio.err || rc=$?
expect_eq "reach stdio's output" "$(cat stdio.out)" done
expect_eq "reach stdio: --error-exitcode=9 --errors-for-leak-kinds=definite's status" "$rc" 9
"$MMS_REPLAY" "$(launched_log stdio.err)" --analysis leaks --json >stdio.json || fail "leaks --json exited $?"
expect_eq "reach stdio: the verdicts at exit" "$(verdicts stdio.json)" "100:leaked"
grep -q "^      leaked        1 block, 100 bytes   <- leaked at exit$" stdio.err ||
	fail "reach stdio: the launcher's summary does not count 100 bytes definitely leaked: $(sed -n '/heap/,/threads/p' stdio.err)"

note "the scan at exit: 13 blocks leaked (2 of them indirectly, through a cycle too, 3 possibly (one only 8 bytes in, its first word a pointer; one at its last word, where the next chunk's header begins); one whose pointer was on the stack of a thread that exited, one the main arena's top chunk follows; and 100 bytes alone, freeres having freed stdout's buffer into the top chunk after them), the rest reachable from a global, a block, TLS, a mapping, new[]'s offset, a second base class's vtable pointer, another arena, a running thread's stack, a running thread's last allocation"

# What each leaked block lost with it: 1010 the 1011 it points to, 1020
# the 1021 of its cycle; no other block leads to one.
"$MMS_PYTHON" - plain.json >lost.txt <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for b in sorted(d["at_exit"]["list"], key=lambda b: b["bytes"]):
    if "indirect" in b:
        print("%d:%d:%d" % (b["bytes"], b["indirect"]["blocks"], b["indirect"]["bytes"]))
PY
expect_eq "the blocks lost with each leaked block (size:blocks:bytes)" "$(tr '\n' ' ' <lost.txt)" "1010:1:1011 1020:1:1021 "
grep -q "; lost with it: 1011 bytes in 1 block, indirectly leaked$" plain.err ||
	fail "the leaks report does not say what 1010 lost with it: $(cat plain.err)"

# valgrind's leak check, on the same program: the same counts of each kind.
VALGRIND=${VALGRIND:-$(command -v valgrind || true)}
if [ -z "$VALGRIND" ]; then
	note "valgrind is not installed (apt-get install valgrind): its leak check not compared"
	exit 0
fi
vg() { sed -n "s/^==[0-9]*== *$1: \([0-9,]*\) bytes in \([0-9,]*\) blocks.*/\2 \1/p" vg.err | tr -d ,; }
"$MMS_PYTHON" - plain.json >ours.txt <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = {"leaked": [0, 0], "indirect": [0, 0], "possible": [0, 0]}
for b in d["at_exit"]["list"]:
    if b["memory"] == "HOST" and b.get("reach") in n:
        n[b["reach"]][0] += 1
        n[b["reach"]][1] += b["bytes"]
r = d["reachable"]
print("%d %d\n%d %d\n%d %d\n%d %d" % (n["leaked"][0], n["leaked"][1], n["indirect"][0], n["indirect"][1],
                                      n["possible"][0], n["possible"][1], r["blocks"], r["bytes"]))
PY
# valgrind's scan is conservative too: now and then a stray word (a
# register's or a stack slot's leftover) points into a leaked block and it
# calls that block possibly lost (seen once in some hundred runs, on the
# 300,001-byte one). Up to three runs of valgrind: the first that agrees is
# kept, and the note says how many it took.
tries=0
while :; do
	tries=$((tries + 1))
	"$VALGRIND" --leak-check=full "$prog" >vg.out 2>vg.err || fail "valgrind exited $?: $(tail -20 vg.err)"
	printf '%s\n%s\n%s\n%s\n' "$(vg 'definitely lost')" "$(vg 'indirectly lost')" "$(vg 'possibly lost')" \
		"$(vg 'still reachable')" >theirs.txt
	cmp -s ours.txt theirs.txt && break
	[ $tries -lt 3 ] || break
	cp vg.err "vg.err.$tries"
done
# Each kind to the block and the byte (glibc's own blocks, which freeres
# frees under both tools, are in neither).
expect_eq "definitely, indirectly, possibly leaked: msmemscope vs valgrind" "$(head -3 ours.txt | tr '\n' ' ')" \
	"$(head -3 theirs.txt | tr '\n' ' ')"
expect_eq "still reachable: msmemscope vs valgrind" "$(sed -n 4p ours.txt)" "$(sed -n 4p theirs.txt)"
note "valgrind agrees (run $tries of at most 3): $(head -3 theirs.txt | tr '\n' ' ')(blocks bytes of definitely, indirectly, possibly lost); still reachable: ours $(sed -n 4p ours.txt), valgrind's $(sed -n 4p theirs.txt)"
