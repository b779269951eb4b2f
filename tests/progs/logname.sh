#!/bin/sh
# SPDX-License-Identifier: MIT
# logname.sh: MSMEMSCOPE_LOG=P never destroys a file the user did not
# mean to give: the recorder creates P (mode 0640); an existing P is
# replaced only with MSMEMSCOPE_LOG_FORCE=1, and a symbolic link is never
# followed. When it refuses, it says so in one line on stderr and the
# program runs as natively.
. "$top_srcdir/tests/progs/lib.sh"

mkdir fd.d

prog=$MMS_PROGS/fdsafe
"$prog" closefrom fd.d >native.out 2>&1 || fail "fdsafe natively exited $?"

run() {
	status=0
	env LD_PRELOAD="$MMS_HOOKS" "$@" "$prog" closefrom fd.d >run.out 2>run.err || status=$?
	expect_eq "exit status" $status 0
	cmp -s native.out run.out || fail "the program printed something else"
}

run MSMEMSCOPE_LOG=$PWD/new.mms
[ "$(stat -c %a new.mms)" = 640 ] || fail "a new log has mode $(stat -c %a new.mms), expected 640"
[ ! -s run.err ] || fail "a new log: unexpected stderr: $(cat run.err)"

echo "the user's data" >mine.txt
run MSMEMSCOPE_LOG=$PWD/mine.txt
expect_eq "the user's file" "$(cat mine.txt)" "the user's data"
grep -q "not recording: MSMEMSCOPE_LOG=.*mine.txt exists; set MSMEMSCOPE_LOG_FORCE=1" run.err ||
	fail "no word of the refusal: $(cat run.err)"
expect_eq "lines on stderr" "$(wc -l <run.err)" 1

ln -s mine.txt link.mms
run MSMEMSCOPE_LOG=$PWD/link.mms MSMEMSCOPE_LOG_FORCE=1
expect_eq "the file behind the link" "$(cat mine.txt)" "the user's data"
grep -q "is a symbolic link" run.err || fail "no word of the link: $(cat run.err)"

run MSMEMSCOPE_LOG=$PWD/mine.txt MSMEMSCOPE_LOG_FORCE=1
summarize mine.txt
expect_key mine.txt.json complete true
note "new logs created, existing files kept unless forced, links not followed"
