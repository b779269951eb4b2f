#!/bin/sh
# SPDX-License-Identifier: MIT
# compare.sh: msMemScope's compare over tests/progs/compareprog, whose
# operator launches and their net bytes are known (see compare.c). Two runs
# (base, and "big": matmul +2000 bytes, one more operator), compared as
# logs, as dump CSVs and mixed, at op and kernel level; two steps of one
# run; the memory_compare CSV is checked to the byte (its name only by
# pattern: it holds the time), the printed report by the named operators,
# and the usage errors and a malformed CSV by their messages.
. "$top_srcdir/tests/progs/lib.sh"

prog=$MMS_PROGS/compareprog
[ -x "$prog" ] || fail "compareprog is not built: $prog"

record a.mms "$prog" >a.out || fail "compareprog exited $?: $(cat a.out)"
record b.mms "$prog" big >b.out || fail "compareprog big exited $?: $(cat b.out)"

# compare_file DIR: the one memory_compare_{time}.csv under DIR/compare.
compare_file() {
	set -- "$1"/compare/memory_compare_*.csv
	[ $# = 1 ] && [ -f "$1" ] || fail "no single memory_compare_{time}.csv in $1/compare: $(ls -R "${1%%/compare/*}" 2>&1)"
	case ${1##*/} in
	memory_compare_[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9].csv) ;;
	*) fail "file name ${1##*/}" ;;
	esac
	echo "$1"
}

# expect_file FILE: FILE holds exactly what comes on stdin.
expect_file() {
	cat >expected.csv
	cmp -s expected.csv "$1" || fail "$1 differs from what it must hold:
$(diff -u expected.csv "$1")"
}

header=',,,Base,Compare
Event,Name,Device Id,Allocated Memory(byte),Allocated Memory(byte),Diff Memory(byte)'

# --- two logs, through the launcher ------------------------------------------
"$MMS_LAUNCHER" --compare --input=a.mms,b.mms --output=o1 >o1.out 2>o1.err ||
	fail "msmemscope --compare exited $?: $(cat o1.err)"
f1=$(compare_file o1)
expect_file "$f1" <<EOF
$header
OP_LAUNCH,embed,host,1000,1000,0
OP_LAUNCH,matmul,host,4000,6000,2000
OP_LAUNCH,dropout,host,N/A,300,300
OP_LAUNCH,"attn,""qkv""",host,200,200,0
OP_LAUNCH,relu,host,0,0,0
OP_LAUNCH,softmax,host,-1000,-1000,0
OP_LAUNCH,embed,host,1000,1000,0
OP_LAUNCH,matmul,host,4500,6500,2000
OP_LAUNCH,"attn,""qkv""",host,200,200,0
OP_LAUNCH,extra2,host,10,10,0
OP_LAUNCH,relu,host,0,0,0
OP_LAUNCH,softmax,host,-1000,-1000,0
EOF
# The report: the two matmul launches first (+2000 each), then dropout,
# which only the second run has.
grep -q '^base     a.mms: 11 launches, net 8910 bytes, 0 only here$' o1.out || fail "report: $(cat o1.out)"
grep -q '^compare  b.mms: 12 launches, net 13210 bytes, 1 only here$' o1.out || fail "report: $(cat o1.out)"
sed -n '/^largest differences (3 of 3):$/,$p' o1.out | awk 'NR > 2 && NF >= 5 { print $1, $2, $3, $NF }' >top.txt
expect_eq "largest differences" "$(cat top.txt)" "+2000 4000 6000 matmul
+2000 4500 6500 matmul
+300 N/A 300 dropout"
# What moved outside every launch: the whole runs end with all freed, so
# it is the launches' net taken back (stdio's buffer aside).
grep '^outside the op launches: ' o1.out >outside.txt || fail "no line for what moved outside the launches: $(cat o1.out)"
outa=$(sed 's/.*base net \(-*[0-9]*\) bytes.*/\1/' outside.txt)
outb=$(sed 's/.*compare net \(-*[0-9]*\) bytes.*/\1/' outside.txt)
expect_eq "outside the launches, compare - base" "$((outb - outa))" -4300
grep -q "; diff -4300 bytes (-4.2 KiB)$" outside.txt || fail "outside line: $(cat outside.txt)"
note "logs: $(wc -l <"$f1") lines, matmul +2000 twice, dropout only in the second run; outside the launches -4300"

# --- the same runs as dump CSVs, and mixed -----------------------------------
"$MMS_REPLAY" a.mms --export csv -o a.csv 2>/dev/null || fail "export of a.mms failed"
"$MMS_REPLAY" b.mms --export csv -o b.csv 2>/dev/null || fail "export of b.mms failed"
"$MMS_LAUNCHER" --compare --input=a.csv,b.csv --output=o2 >o2.out 2>o2.err ||
	fail "msmemscope --compare of two CSVs exited $?: $(cat o2.err)"
cmp -s "$f1" "$(compare_file o2)" || fail "comparing the dump CSVs differs from comparing the logs"
expect_eq "outside the launches, CSVs against logs" "$(grep '^outside' o2.out)" "$(cat outside.txt)"
"$MMS_LAUNCHER" --compare --input=a.mms,b.csv --output=o3 >o3.out 2>o3.err ||
	fail "msmemscope --compare of a log and a CSV exited $?: $(cat o3.err)"
cmp -s "$f1" "$(compare_file o3)" || fail "comparing a log with a CSV differs from comparing the logs"
expect_eq "outside the launches, a log and a CSV" "$(grep '^outside' o3.out)" "$(cat outside.txt)"

# The big run again, recorded by the launcher with its dump
# (--data-format=csv): compared with the first log, the same rows.
"$MMS_LAUNCHER" --data-format=csv --analysis= --output=runs -- "$prog" big >runs.out 2>runs.err ||
	fail "msmemscope --data-format=csv compareprog big exited $?: $(cat runs.err)"
set -- runs/msmemscope_*/dump/memscope_dump_*.csv
[ -f "$1" ] || fail "--data-format=csv wrote no dump: $(ls -R runs)"
"$MMS_LAUNCHER" --compare --input="a.mms,$1" --output=o9b >/dev/null 2>o9b.err ||
	fail "msmemscope --compare with the launcher's dump exited $?: $(cat o9b.err)"
cmp -s "$f1" "$(compare_file o9b)" || fail "comparing with the launcher's dump differs from comparing the logs"

# Two compares into one folder (likely in the same second) leave two files
# with the same rows: the second never replaces the first.
"$MMS_LAUNCHER" --compare --input=a.mms,b.mms --output=o10 >/dev/null 2>o10.err || fail "compare into o10: $(cat o10.err)"
"$MMS_LAUNCHER" --compare --input=a.mms,b.mms --output=o10 >/dev/null 2>o10.err || fail "compare into o10 again: $(cat o10.err)"
set -- o10/compare/memory_compare_*.csv
expect_eq "files after two compares into one folder" "$#" 2
cmp -s "$1" "$f1" && cmp -s "$2" "$f1" || fail "$1 or $2 differs from $f1"

# --- kernel level --------------------------------------------------------------
"$MMS_LAUNCHER" --compare --input=a.csv,b.mms --level=kernel --output=o4 >o4.out 2>o4.err ||
	fail "msmemscope --compare --level=kernel exited $?: $(cat o4.err)"
expect_file "$(compare_file o4)" <<EOF
$header
KERNEL_LAUNCH,gemm,host,4000,6000,2000
KERNEL_LAUNCH,relu_kernel,host,0,0,0
KERNEL_LAUNCH,gemm,host,4500,6500,2000
KERNEL_LAUNCH,relu_kernel,host,0,0,0
EOF
# Outside the kernel launches' spans, the same from a log as from its CSV.
"$MMS_LAUNCHER" --compare --input=a.mms,b.csv --level=kernel --output=o4b >o4b.out 2>o4b.err ||
	fail "msmemscope --compare --level=kernel exited $?: $(cat o4b.err)"
grep -q '^outside the kernel launches: ' o4.out || fail "no line for what moved outside the kernel launches: $(cat o4.out)"
expect_eq "outside the kernel launches, logs against CSVs" "$(grep '^outside' o4b.out)" "$(grep '^outside' o4.out)"

# --- two steps of one log, through the replay command ---------------------------
"$MMS_REPLAY" a.mms --compare-steps 1,2 --output-dir o5 >o5.out 2>o5.err ||
	fail "msmemscope-replay --compare-steps exited $?: $(cat o5.err)"
expect_file "$(compare_file o5)" <<EOF
$header
OP_LAUNCH,embed,host,1000,1000,0
OP_LAUNCH,matmul,host,4000,4500,500
OP_LAUNCH,"attn,""qkv""",host,200,200,0
OP_LAUNCH,extra2,host,N/A,10,10
OP_LAUNCH,relu,host,0,0,0
OP_LAUNCH,softmax,host,-1000,-1000,0
EOF
"$MMS_REPLAY" a.mms --compare-steps 1,2 --json --top 1 --output-dir o6 >o6.json 2>o6.err ||
	fail "msmemscope-replay --compare-steps --json exited $?: $(cat o6.err)"
top=$("$MMS_PYTHON" -c 'import json,sys; t=json.load(open(sys.argv[1]))["top"]; print(len(t), t[0]["name"], t[0]["base"], t[0]["compare"], t[0]["diff"])' o6.json) ||
	fail "o6.json: $(cat o6.json)"
expect_eq "--top 1: the largest difference" "$top" "1 matmul 4000 4500 500"
expect_key o6.json compare.only 1
expect_key o6.json paired 5
expect_key o6.json differing 2
grep -qx 'outside the op launches: base net 0 bytes, compare net 700 bytes; diff 700 bytes (+700 bytes)' o5.out ||
	fail "the 700 bytes kept outside the operators in step 2 are not reported: $(cat o5.out)"
expect_key o6.json outside.base 0
expect_key o6.json outside.compare 700
expect_key o6.json outside.diff 700
note "steps: matmul +500, extra2 only in step 2, 700 bytes kept outside the operators"

# --- errors ------------------------------------------------------------------------
st=0
"$MMS_LAUNCHER" --compare >e1.out 2>e1.err || st=$?
expect_eq "--compare without --input: exit status" "$st" 2
grep -q -- '--compare needs --input=BASE,COMPARE' e1.err || fail "--compare without --input says: $(cat e1.err)"
st=0
"$MMS_LAUNCHER" --compare --input=a.mms >e2.out 2>e2.err || st=$?
expect_eq "--compare with one input: exit status" "$st" 2
grep -q 'names only a.mms' e2.err || fail "--compare with one input says: $(cat e2.err)"
# Recording options would go unused: refused, naming the option; so
# would the error options (a compare finds no errors).
for rec in --analysis=leaks --call-stack=c:4 --watch=a,b --data-format=csv --steps=1 --error-exitcode=9 \
	--errors-for-leak-kinds=all; do
	case $rec in
	--error*) why="finds no errors" ;;
	*) why="runs no program" ;;
	esac
	st=0
	"$MMS_LAUNCHER" --compare --input=a.mms,b.mms "$rec" --output=orec >erec.out 2>erec.err || st=$?
	expect_eq "--compare with $rec: exit status" "$st" 2
	grep -q -- "--compare $why, so ${rec%%=*} does not go with it" erec.err ||
		fail "--compare with $rec says: $(cat erec.err)"
done
[ ! -e orec ] || fail "a refused --compare wrote into orec"
st=0
"$MMS_REPLAY" a.mms --compare-steps 1,9 --output-dir o7 >e3.out 2>e3.err || st=$?
expect_eq "a missing step: exit status" "$st" 1
grep -q 'no step 9: the log has 3 steps' e3.err || fail "a missing step says: $(cat e3.err)"
# A CSV row cut short on line 4, and a quote out of place on line 3.
head -n 3 a.csv >bad.csv
sed -n 4p a.csv | cut -d, -f1-5 >>bad.csv
st=0
"$MMS_LAUNCHER" --compare --input=bad.csv,b.csv --output=o8 >e4.out 2>e4.err || st=$?
expect_eq "a short CSV row: exit status" "$st" 1
grep -q 'bad.csv:4: 5 fields; the header has 12' e4.err || fail "a short CSV row says: $(cat e4.err)"
head -n 2 a.csv >bad2.csv
echo '9,MALLOC,HOST,N/"A",1,2,3,host,0x1,"{size:1}",,' >>bad2.csv
st=0
"$MMS_LAUNCHER" --compare --input=a.csv,bad2.csv --output=o9 >e5.out 2>e5.err || st=$?
expect_eq "a misplaced quote: exit status" "$st" 1
grep -q 'bad2.csv:3: a quote inside a field' e5.err || fail "a misplaced quote says: $(cat e5.err)"
# A log cut inside its header is binary data, not a CSV to parse.
head -c 100 a.mms >cut.mms
st=0
"$MMS_LAUNCHER" --compare --input=a.mms,cut.mms --output=o9c >e6.out 2>e6.err || st=$?
expect_eq "a log cut in its header: exit status" "$st" 1
grep -q 'cut.mms: neither a msmemscope log (the log is truncated: .*) nor a memscope_dump CSV (it holds binary data)' e6.err ||
	fail "a log cut in its header says: $(cat e6.err)"
[ ! -e o8/compare ] || [ -z "$(ls o8/compare)" ] || fail "a failed compare left a file: $(ls o8/compare)"
note "errors: usage (2), missing step and malformed CSVs (1) named by file and line"
