#!/bin/sh
# SPDX-License-Identifier: MIT
# launcher.sh: msmemscope as a user runs it: the run folder and its log, the
# summary of the bundled example (its known leak), the exit status passed
# through, --analysis= and its options, and the errors for bad options and
# programs that cannot run.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"
infer=$top_builddir/examples/infer
[ -x "$infer" ] || fail "the example is not built: $infer"

# The example under the launcher: same output as alone, exit 0, one run
# folder msmemscope_{PID}_{timestamp} holding memscope_{pid}.mms.
"$infer" >native.out || fail "examples/infer exited $? on its own"
"$MMS_LAUNCHER" --output=out -- "$infer" >rec.out 2>rec.err || fail "msmemscope -- infer exited $?: $(cat rec.err)"
cmp -s native.out rec.out || fail "infer printed something else under msmemscope"
set -- out/msmemscope_*_*
[ $# = 1 ] && [ -d "$1" ] || fail "expected one run folder in out/, found: $*"
run=$1
set -- "$run"/memscope_*.mms
[ $# = 1 ] && [ -f "$1" ] || fail "expected one log in $run, found: $*"
log=$1
[ "$(stat -c %a "$log")" = 640 ] || fail "the log's mode is $(stat -c %a "$log"), expected 640"

# The figures infer.c documents: 5 kv_cache blocks of 4096 bytes never freed.
grep -q "live at exit    5 blocks, 20.0 KiB (20480 bytes)" rec.err ||
	fail "the summary does not show the 5 leaked blocks: $(cat rec.err)"
summarize "$log"
expect_consistent "$log.json"
expect_key "$log.json" live_blocks 5
expect_key "$log.json" live_bytes 20480
expect_key "$log.json" complete true
expect_key "$log.json" by_kind.step 5
expect_key "$log.json" by_kind.op_launch 50
# The default analysis, leaks, after the summary: the kv_cache blocks of
# steps 2 to 5, each live at the end of the step after it, in attention.
grep -q "^====== SUMMARY: 0.015625 Mb(s) leaked in 4 allocation(s) ======$" rec.err ||
	fail "the default leaks report does not show the 4 per-step leaks: $(cat rec.err)"
[ "$(grep -c '^Direct HOST leak of 0.003906 Mb(s) at 0x[0-9a-f]* in attention (launch [0-9]*) at step [2-5]\.$' rec.err)" = 4 ] ||
	fail "expected 4 leak lines naming attention: $(cat rec.err)"
# No pointer to them was left at exit (the scan at exit says so).
grep -q "^====== SUMMARY: 0.019531 Mb(s) leaked at exit in 5 allocation(s) ======$" rec.err &&
	grep -q "^      leaked        5 blocks, 20.0 KiB (20480 bytes)   <- leaked at exit (4 indirectly)$" rec.err ||
	fail "the default leaks report does not show the 5 blocks leaked at exit: $(cat rec.err)"
note "infer: 5 blocks, 20480 bytes leaked at exit, 4 per-step leaks in attention, 25 operator launches, log mode 0640"

# --analysis= records without a summary; the options reach the recorder
# (stacks on: the log says so). -o is --output.
"$MMS_LAUNCHER" --analysis= --call-stack=c:8 -o out2 -- "$infer" >/dev/null 2>quiet.err ||
	fail "msmemscope --analysis= exited $?"
grep -q "live at exit" quiet.err && fail "--analysis= printed a summary: $(cat quiet.err)"
set -- out2/msmemscope_*/memscope_*.mms
[ -f "$1" ] || fail "--analysis= left no log"
"$MMS_REPLAY" "$1" --summary --json >/dev/null || fail "the --analysis= log does not replay"

# --data-format: msMemScope's dump in dump/ of the run folder, one row per
# memory event at least (the rows themselves are checked by export.sh).
"$MMS_LAUNCHER" --data-format=csv --output out6 -- "$infer" >/dev/null 2>dump.err ||
	fail "msmemscope --data-format=csv exited $?: $(cat dump.err)"
set -- out6/msmemscope_*/dump/memscope_dump_*.csv
[ -f "$1" ] || fail "--data-format=csv wrote no dump/memscope_dump_*.csv: $(ls -R out6)"
grep -q "wrote the dump out6/msmemscope_.*/dump/memscope_dump_.*\.csv" dump.err || fail "no line about the dump: $(cat dump.err)"
head -1 "$1" | grep -qx 'ID,Event,Event Type,Name,Timestamp(ns),Process Id,Thread Id,Device Id,Ptr,Attr,Call Stack(Python),Call Stack(C)' ||
	fail "the dump's header is not msMemScope's: $(head -1 "$1")"
n=$(grep -c ',MALLOC,' "$1")
expect_eq "MALLOC rows in the dump" "$n" 29
"$MMS_LAUNCHER" --data-format=db --output out6 -- "$infer" >/dev/null 2>dump.err ||
	fail "msmemscope --data-format=db exited $?: $(cat dump.err)"
set -- out6/msmemscope_*/dump/memscope_dump_*.db
[ -f "$1" ] || fail "--data-format=db wrote no dump/memscope_dump_*.db"
note "--data-format=csv and db write dump/memscope_dump_*.{csv,db}, 29 MALLOC rows"

# The program's exit status comes back, and 128+N for a signal.
rc=0
"$MMS_LAUNCHER" --output=out3 -- sh -c 'exit 42' 2>/dev/null || rc=$?
expect_eq "exit status of 'exit 42'" "$rc" 42
rc=0
"$MMS_LAUNCHER" --output=out3 -- sh -c 'kill -SEGV $$' 2>sig.err || rc=$?
expect_eq "exit status of a SIGSEGV" "$rc" 139
grep -q "signal 11" sig.err || fail "no line about the signal: $(cat sig.err)"
# The launcher dies of that signal after its report (--error-exitcode or
# not), as valgrind does: a shell tells that from an exit with 139, and
# stops a script's loop at a Ctrl-C only for a command killed by SIGINT.
for opts in --output=out3 "--output=out3 --error-exitcode=9"; do
	# shellcheck disable=SC2086 # two words
	st=$("$MMS_PYTHON" -c 'import subprocess, sys
print(subprocess.run(sys.argv[1:], stderr=subprocess.DEVNULL).returncode)' "$MMS_LAUNCHER" $opts -- sh -c 'kill -INT $$')
	expect_eq "the launcher's wait status with $opts, a program killed by SIGINT" "$st" -2
done
note "exit statuses: 42 passed through, SIGSEGV gives 139; the launcher dies of the program's signal"
# The report into a pipe whose reader is gone (msmemscope ... 2>&1 | head):
# the status is still the program's, not 141 from a SIGPIPE in the report.
( rc=0; "$MMS_LAUNCHER" --output=out3 -- sh -c 'sleep 0.5; exit 3' 2>&1 >/dev/null || rc=$?; echo $rc >pipe.rc ) | true
expect_eq "exit status of 'exit 3' with the report into a closed pipe" "$(cat pipe.rc)" 3

# Usage errors: one message naming the option, exit 2, no run folder.
for bad in --bogus --collect-mode=later --steps=1,2,3,4,5,6 --call-stack=c:1001 --analysis=nosuch --data-format=xml --suppressions=no-such-file --device=gpu --device=cuda:64 --device=; do
	rc=0
	"$MMS_LAUNCHER" --output=out4 "$bad" -- "$infer" >/dev/null 2>bad.err || rc=$?
	expect_eq "exit status of msmemscope $bad" "$rc" 2
	opt=${bad%%=*}
	grep -q -- "$opt" bad.err || fail "the error for $bad does not name $opt: $(cat bad.err)"
done
rc=0
"$MMS_LAUNCHER" --output=out4 >/dev/null 2>bad.err || rc=$?
expect_eq "exit status of msmemscope with no program" "$rc" 2
rc=0
"$MMS_LAUNCHER" -o >/dev/null 2>bad.err || rc=$?
expect_eq "exit status of msmemscope -o without a folder" "$rc" 2
grep -q -- "-o needs a folder" bad.err || fail "msmemscope -o without a folder says: $(cat bad.err)"
rc=0
"$MMS_LAUNCHER" -o -- "$infer" >/dev/null 2>bad.err || rc=$?
expect_eq "exit status of msmemscope -o -- prog" "$rc" 2
[ ! -e -- ] || fail "msmemscope -o -- prog made a folder named --"
[ ! -e out4 ] || fail "a usage error created the output folder"

# Programs that cannot run: 127 not found, 126 not executable, like a shell.
rc=0
"$MMS_LAUNCHER" --output=out5 -- ./no-such-program 2>/dev/null || rc=$?
expect_eq "exit status for a missing program" "$rc" 127
: >not-executable
rc=0
"$MMS_LAUNCHER" --output=out5 -- ./not-executable 2>/dev/null || rc=$?
expect_eq "exit status for a file that is not executable" "$rc" 126
note "usage errors exit 2 and create nothing; missing program 127, not executable 126"
# --events without alloc and free: they are recorded all the same (every
# report stands on them), and a warning says so rather than seem obeyed.
"$MMS_LAUNCHER" --output=ev --events=launch -- sh -c 'exit 0' >ev.out 2>ev.err || fail "--events=launch: $(cat ev.err)"
grep -q '^msmemscope: warning: --events=launch: alloc and free are recorded all the same' ev.err ||
	fail "--events=launch: no warning: $(cat ev.err)"
grep -q '^  events  .*MALLOC [0-9]' ev.err || fail "--events=launch: no MALLOC recorded: $(cat ev.err)"

# --help and --version.
"$MMS_LAUNCHER" --help >help.out || fail "--help exited $?"
# The analyses' table names --plot and --buckets, which only the replay
# command takes: the help says so.
grep -q "are msmemscope-replay's: run" help.out || fail "--help does not say whose --plot and --buckets are"
"$MMS_LAUNCHER" --plot=u.svg -- true >/dev/null 2>plot.err && fail "the launcher took --plot"
for opt in --events --call-stack --collect-mode --steps --device --output --log-level --analysis --suppressions --data-format --no-follow-exec --no-freeres --show-runtime; do
	grep -q -- "$opt" help.out || fail "--help does not describe $opt"
done
"$MMS_LAUNCHER" --version | grep -q '^msmemscope [0-9]' || fail "--version does not print 'msmemscope VERSION'"

# A program the recorder cannot be loaded into: a static one is refused up
# front, with one message and no run folder; one that ends up with no log
# (a script whose interpreter is static) runs, keeps its status, and gets
# one message and no empty run folder.
static=$MMS_PROGS/staticprog
if [ -x "$static" ]; then
	st=0
	"$MMS_LAUNCHER" --output=st -- "$static" >st.out 2>st.err || st=$?
	expect_eq "exit status of msmemscope on a static program" $st 1
	grep -q "cannot record .*statically linked" st.err || fail "no reason for a static program: $(cat st.err)"
	expect_eq "messages for a static program" "$(wc -l <st.err)" 1
	[ ! -e st ] || fail "a run folder was made for a static program: $(ls -R st)"
	printf '#!%s\n' "$static" >viastatic
	chmod +x viastatic
	st=0
	"$MMS_LAUNCHER" --output=vs -- ./viastatic >vs.out 2>vs.err || st=$?
	expect_eq "exit status of a script run by a static interpreter" $st 3
	grep -q "left no log" vs.err || fail "no word of the missing log: $(cat vs.err)"
	expect_eq "messages for a run that left no log" "$(wc -l <vs.err)" 1
	[ -z "$(ls vs 2>/dev/null)" ] || fail "an empty run folder was left: $(ls -R vs)"
	# env exec'ing the static program: env's report says the program it
	# exec'd was not recorded, and why.
	st=0
	"$MMS_LAUNCHER" --output=es -- env MMS_X=1 "$static" >es.out 2>es.err || st=$?
	expect_eq "exit status of env running a static program" $st 3
	grep -q "^  then exec'd       another program, which was not recorded (a statically linked or set-user-ID program, or one run with LD_PRELOAD cleared, is not)$" es.err ||
		fail "env's report does not say the program it exec'd was not recorded: $(cat es.err)"
else
	note "no static test program (static linking failed at build time): not checked"
fi
# --no-follow-exec: the exec'd program is not recorded, and the report says why.
"$MMS_LAUNCHER" --no-follow-exec --output=nf -- env MMS_X=1 "$MMS_PROGS/leaks" >nf.out 2>nf.err ||
	fail "msmemscope --no-follow-exec -- env leaks exited $?: $(cat nf.err)"
grep -q "^  then exec'd       another program, which was not recorded (--no-follow-exec)$" nf.err ||
	fail "the report does not say why the exec'd program is missing: $(cat nf.err)"
[ "$(ls nf/msmemscope_*/*.mms | wc -l)" = 1 ] || fail "--no-follow-exec left more than env's log: $(ls -R nf)"
note "a wrapper's exec into a program not recorded: said, with why"

# The launcher frees what it parsed (--watch and --suppressions leaked).
VALGRIND=$(command -v valgrind || true)
if [ "${MMS_SANITIZE:-}" = yes ]; then
	note "valgrind: not run on a launcher built with AddressSanitizer (the two cannot share a process)"
elif [ -n "$VALGRIND" ] && [ -x "$top_builddir/libtool" ]; then
	echo 'leak:nothing_matches_this' >vg.supp
	st=0
	"$top_builddir/libtool" --mode=execute "$VALGRIND" -q --leak-check=full --errors-for-leak-kinds=definite \
		--error-exitcode=9 "$MMS_LAUNCHER" --watch=a,b --suppressions=vg.supp --output=vg -- true \
		>vg.out 2>vg.err || st=$?
	[ "$st" != 9 ] || fail "valgrind found errors or leaks in the launcher: $(cat vg.err)"
	expect_eq "exit status of true under the launcher under valgrind" "$st" 0
	note "valgrind: no definite leak in the launcher"
fi
