#!/bin/sh
# SPDX-License-Identifier: MIT
# watchstomp.sh: --watch over tests/progs/watchstomp, whose third launch
# (softmax) overruns its buffer into `weights`, output 1 of its first
# launch (embed). Checks, to the byte: the watch report of the launcher
# (the first launch that changed each block and all that did, checksums
# included), the checksum CSV, the JSON of msmemscope-replay --analysis
# watch, full-content's .bin files against the bytes the program wrote,
# :outN, the refusal of malformed --watch values, and a dump folder that
# cannot be written (one warning, the run goes on).
. "$top_srcdir/tests/progs/lib.sh"

prog=$MMS_PROGS/watchstomp
[ -x "$prog" ] || fail "watchstomp is not built: $prog"
[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"

# crc64 HEXBYTES: CRC-64/XZ of the bytes, computed here independently.
crc64() {
	"$MMS_PYTHON" -c '
import sys
c = (1 << 64) - 1
for x in bytes.fromhex(sys.argv[1]):
    c ^= x
    for _ in range(8):
        c = (c >> 1) ^ 0xC96C5795D7870F42 if c & 1 else c >> 1
print("%016x" % (c ^ ((1 << 64) - 1)))' "$1"
}
rep() { # rep HEXBYTE N
	"$MMS_PYTHON" -c 'import sys; print(sys.argv[1] * int(sys.argv[2]))' "$1" "$2"
}
c0=$(crc64 0000000000000000)
c1=$(crc64 0100000000000000)
c2=$(crc64 0200000000000000)
h21=$(crc64 "$(rep 21 32)")
h22=$(crc64 "$(rep 22 32)")
w11=$(crc64 "$(rep 11 64)")
w5a=$(crc64 "$(rep 5a 8)$(rep 11 56)")
[ "$(crc64 "$(printf 123456789 | od -An -tx1 | tr -d ' \n')")" = 995dc9bbdf1939fa ] ||
	fail "the test's own CRC-64/XZ does not give the check value"

# --- the launcher: --watch=embed,gelu ----------------------------------------
"$MMS_LAUNCHER" --watch=embed,gelu --output=out -- "$prog" >run.out 2>run.err ||
	fail "msmemscope --watch exited $?: $(cat run.err)"
expect_eq "program output" "$(cat run.out)" "watchstomp sum=2760 counter=2"
run=$(ls -d out/msmemscope_*)
log=$(ls "$run"/memscope_*.mms)
ok=$(ls "$run/watch_dump" | sed -n 's/^watch_dump_data_check_sum_host_[0-9]\{14\}\.csv$/x/p')
[ "$ok" = x ] || fail "watch_dump holds: $(ls "$run/watch_dump")"
csv=$(ls "$run"/watch_dump/watch_dump_data_check_sum_host_*.csv)
pid=${log##*memscope_}
pid=${pid%.mms}

# The lines of the report on counter (changed by norm, then between
# launches) and on weights (changed by softmax only).
counter_report() {
	cat <<EOF
  'counter' out 0: ADDR, 8 bytes, 12 checksums from launch 1
    first changed by norm, launch 4, step 1, thread TID: $c0 -> $c1
    changed by 1 launch: norm#4
    changed between launches, found at the start of launch 5: $c1 -> $c2
EOF
}
weights_report() {
	cat <<EOF
  'embed' out 1: ADDR, 64 bytes, 9 checksums from launch 1
    first changed by softmax, launch 3, step 1, thread TID: $w11 -> $w5a
    changed by 1 launch: softmax#3
EOF
}

# The report, addresses and the thread id (the program has one thread)
# masked; the test's folder first (its random name may hold "0x").
sed -n '/^watch: /,$p' run.err | sed -e "s|$PWD/||" -e 's/0x[0-9a-f][0-9a-f]*/ADDR/g' \
	-e "s/thread $pid:/thread TID:/" >report.txt
cat >report.expected <<EOF
watch: 3 watched blocks, 30 checksums ($csv)
$(counter_report)
  'embed' out 0: ADDR, 32 bytes, 9 checksums from launch 1
    first changed by matmul, launch 2, step 1, thread TID: $h21 -> $h22
    changed by 1 launch: matmul#2
$(weights_report)
EOF
diff report.expected report.txt >report.diff || fail "the watch report differs: $(cat report.diff)"

# The CSV: one row per checksum, in the order they were taken.
T=host_$pid
cat >csv.expected <<EOF
Tensor info,Check data sum
$T/embed_1-counter_0_before,$c0
$T/embed_1-counter_0_after,$c0
$T/embed_1-embed_0_after,$h21
$T/embed_1-embed_1_after,$w11
$T/matmul_2-counter_0_before,$c0
$T/matmul_2-embed_0_before,$h21
$T/matmul_2-embed_1_before,$w11
$T/matmul_2-counter_0_after,$c0
$T/matmul_2-embed_0_after,$h22
$T/matmul_2-embed_1_after,$w11
$T/softmax_3-counter_0_before,$c0
$T/softmax_3-embed_0_before,$h22
$T/softmax_3-embed_1_before,$w11
$T/softmax_3-counter_0_after,$c0
$T/softmax_3-embed_0_after,$h22
$T/softmax_3-embed_1_after,$w5a
$T/norm_4-counter_0_before,$c0
$T/norm_4-embed_0_before,$h22
$T/norm_4-embed_1_before,$w5a
$T/norm_4-counter_0_after,$c1
$T/norm_4-embed_0_after,$h22
$T/norm_4-embed_1_after,$w5a
$T/gelu_5-counter_0_before,$c2
$T/gelu_5-embed_0_before,$h22
$T/gelu_5-embed_1_before,$w5a
$T/gelu_5-counter_0_after,$c2
$T/gelu_5-embed_0_after,$h22
$T/gelu_5-embed_1_after,$w5a
$T/proj_6-counter_0_before,$c2
$T/proj_6-counter_0_after,$c2
EOF
cmp csv.expected "$csv" || fail "the checksum CSV differs: $(diff csv.expected "$csv")"

# --- msmemscope-replay --analysis watch --json on the same log ---------------
mkdir rj
"$MMS_REPLAY" "$log" --analysis watch --json --output-dir rj >a.json 2>a.err ||
	fail "msmemscope-replay --analysis watch --json exited $?: $(cat a.err)"
"$MMS_PYTHON" - a.json "$w11" "$w5a" <<'PY' || fail "the JSON report is wrong: $(cat a.json)"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
d = json.loads(lines[0])
assert d["analysis"] == "watch" and d["sums"] == 30, d
b = [(x["name"], x["out"]) for x in d["blocks"]]
assert b == [("counter", 0), ("embed", 0), ("embed", 1)], b
w = d["blocks"][2]
assert w["size"] == 64 and w["sums"] == 9 and w["first_launch"] == 1, w
f = w["first_change"]
assert (f["op"], f["launch"], f["step"], f["before"], f["after"]) == ("softmax", 3, 1, sys.argv[2], sys.argv[3]), f
assert [(c["op"], c["launch"]) for c in w["changes"]] == [("softmax", 3)], w["changes"]
c = d["blocks"][0]["changes"]
assert [(x["op"], x["launch"], x["found_at"]) for x in c] == [("norm", 4, 4), (None, 0, 5)], c
PY
cmp csv.expected rj/watch_dump/watch_dump_data_check_sum_host_*.csv || fail "--output-dir's CSV differs"
# An existing CSV is not replaced without --force.
"$MMS_REPLAY" "$log" --analysis watch --output-dir rj >/dev/null 2>b.err && fail "an existing CSV was replaced"
grep -q 'exists; not replacing it' b.err || fail "no refusal message: $(cat b.err)"
"$MMS_REPLAY" "$log" --analysis watch --output-dir rj --force >/dev/null 2>b.err || fail "--force: $(cat b.err)"

# --- full-content with :out1: the bytes, and no CSV -------------------------
"$MMS_LAUNCHER" --watch=embed:out1,gelu,full-content --analysis=watch --output=full -- "$prog" >/dev/null \
	2>full.err || fail "msmemscope --watch=...,full-content exited $?: $(cat full.err)"
run=$(ls -d full/msmemscope_*)
log=$(ls "$run"/memscope_*.mms)
pid=${log##*memscope_}
pid=${pid%.mms}
(cd "$run/watch_dump" && find . -type f | sort) >bins.txt
{
	for l in embed_1 matmul_2 softmax_3 norm_4 gelu_5 proj_6; do
		echo "./host_$pid/$l-counter_0_after.bin"
		echo "./host_$pid/$l-counter_0_before.bin"
	done
	echo "./host_$pid/embed_1-embed_1_after.bin"
	for l in matmul_2 softmax_3 norm_4 gelu_5; do
		echo "./host_$pid/$l-embed_1_after.bin"
		echo "./host_$pid/$l-embed_1_before.bin"
	done
} | sort >bins.expected
diff bins.expected bins.txt >bins.diff || fail "the watch_dump files differ: $(cat bins.diff)"
hexbin() { od -An -tx1 -v "$1" | tr -d ' \n'; }
d=$run/watch_dump/host_$pid
for f in embed_1-embed_1_after matmul_2-embed_1_before matmul_2-embed_1_after softmax_3-embed_1_before; do
	expect_eq "$f.bin" "$(hexbin "$d/$f.bin")" "$(rep 11 64)"
done
for f in softmax_3-embed_1_after norm_4-embed_1_before norm_4-embed_1_after gelu_5-embed_1_after; do
	expect_eq "$f.bin" "$(hexbin "$d/$f.bin")" "$(rep 5a 8)$(rep 11 56)"
done
expect_eq "norm_4-counter_0_before.bin" "$(hexbin "$d/norm_4-counter_0_before.bin")" 0000000000000000
expect_eq "norm_4-counter_0_after.bin" "$(hexbin "$d/norm_4-counter_0_after.bin")" 0100000000000000
expect_eq "gelu_5-counter_0_before.bin" "$(hexbin "$d/gelu_5-counter_0_before.bin")" 0200000000000000
sed -n '/^watch: /,$p' full.err | sed -e 's/0x[0-9a-f][0-9a-f]*/ADDR/g' -e "s/thread $pid:/thread TID:/" >full.txt
cat >full.expected <<EOF
watch: 2 watched blocks, 21 checksums
$(counter_report)
$(weights_report)
EOF
diff full.expected full.txt >full.diff || fail "the full-content report differs: $(cat full.diff)"

# --- :out0 keeps hidden only (and the full-width comma separates too) --------
fw=$(printf '\357\274\214') # U+FF0C
"$MMS_LAUNCHER" "--watch=embed:out0${fw}gelu" --output=o0 -- "$prog" >/dev/null 2>o0.err ||
	fail "msmemscope --watch=embed:out0，gelu exited $?: $(cat o0.err)"
grep -c "^  '" o0.err >n.txt || true
expect_eq "blocks with :out0" "$(cat n.txt)" 2
grep -q "^  'embed' out 0: 0x[0-9a-f]*, 32 bytes, 9 checksums from launch 1$" o0.err || fail ":out0: $(cat o0.err)"
grep -q "^    first changed by matmul, launch 2, step 1" o0.err || fail ":out0: $(cat o0.err)"

# --- a START that never ran, or without the output asked for: said once ---
"$MMS_LAUNCHER" --watch=embd,gelu --output=typo -- "$prog" >/dev/null 2>typo.err ||
	fail "msmemscope --watch=embd,gelu exited $?: $(cat typo.err)"
grep -q "^msmemscope: warning: watch: --watch named the start operator 'embd', which never ran: check its name" typo.err ||
	fail "no warning for a START that never ran: $(cat typo.err)"
"$MMS_LAUNCHER" --watch=embed:out5,gelu --output=o5 -- "$prog" >/dev/null 2>o5.err ||
	fail "msmemscope --watch=embed:out5,gelu exited $?: $(cat o5.err)"
grep -q "^msmemscope: warning: watch: --watch named output 5 of the start operator 'embed'; it ran 1 time but no launch had that output" o5.err ||
	fail "no warning for an output that no launch had: $(cat o5.err)"
grep -q "warning: watch: --watch named" o0.err && fail "a warning with outputs watched: $(cat o0.err)"

# --- a watched block freed inside the range leaves the set -------------------
# matmul frees hidden (out0): it gets no checksum at matmul's end, nor later.
"$MMS_LAUNCHER" --watch=embed,gelu --output=fr -- "$prog" free >fr.out 2>fr.err ||
	fail "msmemscope --watch=embed,gelu -- watchstomp free exited $?: $(cat fr.err)"
expect_eq "program output" "$(cat fr.out)" "watchstomp sum=1672 counter=2"
sed -n '/^watch: /,$p' fr.err | sed -e 's/0x[0-9a-f][0-9a-f]*/ADDR/g' -e 's/thread [0-9]*:/thread TID:/' \
	-e 's/ (.*\.csv)$//' >fr.txt
cat >fr.expected <<EOF
watch: 3 watched blocks, 23 checksums
$(counter_report)
  'embed' out 0: ADDR, 32 bytes, 2 checksums from launch 1
    never changed ($h21)
$(weights_report)
EOF
diff fr.expected fr.txt >fr.diff || fail "the report with hidden freed differs: $(cat fr.diff)"

# --- ranges the program cannot read are not watched ---------------------------
# msmemscope_watch() of 8 bytes at address 16, and of a range that runs
# into a PROT_NONE page: natively nothing happens; recorded, the program
# must not die of a checksum there. Neither is watched, a warning says so.
"$MMS_LAUNCHER" --output=wild -- "$prog" wild >wild.out 2>wild.err ||
	fail "watchstomp wild exited $? recorded (0 natively): $(cat wild.err)"
expect_eq "program output (wild), recorded and native" "$(cat wild.out)" "$("$prog" wild)"
grep -q '^msmemscope: warning: msmemscope_watch(0x10, 8, "wild"): not watched, the range is not readable' wild.err ||
	fail "no warning for the unreadable range: $(cat wild.err)"
"$MMS_REPLAY" "$(launched_log wild.err)" --analysis watch --output-dir wild >wild.txt 2>&1 ||
	fail "the watch analysis of wild's log failed: $(cat wild.txt)"
grep -q '^watch: 1 watched block,' wild.txt || fail "wild: not counter alone watched: $(cat wild.txt)"
note "msmemscope_watch() of unreadable ranges: not watched, the program runs as natively"

# --- a log without watches: the analysis says so and writes no CSV ----------
MSMEMSCOPE_CONFIG="events=alloc,free,launch" record none.mms "$top_builddir/tests/progs/exportprog" >/dev/null ||
	fail "exportprog exited $?"
mkdir nd
"$MMS_REPLAY" none.mms --analysis watch --output-dir nd >none.txt 2>none.err || fail "replay: $(cat none.err)"
expect_eq "report without watches" "$(cat none.txt)" "watch: 0 watched blocks, 0 checksums"
expect_eq "files without watches" "$(ls -A nd)" ""

# --- malformed values are refused before anything runs -----------------------
for bad in "" "a,b,c" "a:out1" "a:out99,b" "full-content" "a;b,c" "a,b:out2"; do
	"$MMS_LAUNCHER" "--watch=$bad" --output=bad -- "$prog" >/dev/null 2>bad.err && fail "--watch=$bad was accepted"
	rc=$?
	expect_eq "exit status of --watch=$bad" "$rc" 2
	grep -q -- "--watch=" bad.err || fail "--watch=$bad: no message naming the option: $(cat bad.err)"
done
[ ! -e bad ] || fail "a refused --watch left a run folder"

# --- a dump folder that cannot be written: one warning, the run goes on ------
mkdir nowrite
: >nowrite/watch_dump # a file where the folder would go
MSMEMSCOPE_CONFIG="events=alloc,free,launch;watch=embed,gelu,full-content" record nowrite/w.mms "$prog" \
	>nw.out 2>nw.err || fail "watchstomp exited $? when the dump folder could not be written: $(cat nw.err)"
expect_eq "program output" "$(cat nw.out)" "watchstomp sum=2760 counter=2"
expect_eq "warnings" "$(grep -c 'msmemscope: warning: --watch full-content: cannot write' nw.err)" 1
expect_eq "stderr lines" "$(wc -l <nw.err)" 1
"$MMS_REPLAY" nowrite/w.mms --analysis watch --json >nw.json 2>nw.jerr || fail "replay: $(cat nw.jerr)"
expect_eq "checksums without the dump" "$(jget nw.json sums)" 30
# --- the bundled example: gamma, watched by the program, stomped by softmax
# in step 3 (examples/infer.c) ------------------------------------------------
infer=$top_builddir/examples/infer
[ -x "$infer" ] || fail "the example is not built: $infer"
"$MMS_LAUNCHER" --analysis=watch --output=inf -- "$infer" >/dev/null 2>inf.err ||
	fail "msmemscope --analysis=watch -- infer exited $?: $(cat inf.err)"
sed -n '/^watch: /,$p' inf.err | sed -e 's/0x[0-9a-f][0-9a-f]*/ADDR/g' -e 's/thread [0-9]*:/thread TID:/' \
	-e 's/ (.*\.csv)$//' -e 's/: [0-9a-f]\{16\} -> [0-9a-f]\{16\}$//' >inf.txt
cat >inf.expected <<EOF
watch: 1 watched block, 50 checksums
  'ln_gamma' out 0: ADDR, 64 bytes, 50 checksums from launch 1
    first changed by softmax, launch 14, step 3, thread TID
    changed by 1 launch: softmax#14
EOF
diff inf.expected inf.txt >inf.diff || fail "the watch report of infer differs: $(cat inf.diff)"
note "ok"
