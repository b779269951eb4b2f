#!/bin/sh
# SPDX-License-Identifier: MIT
# logname.sh: MSMEMSCOPE_LOG=P never destroys a file the user did not
# mean to give: the recorder creates P (mode 0640); an existing P is
# replaced only with MSMEMSCOPE_LOG_FORCE=1, and a symbolic link is never
# followed. When it refuses, it says so in one line on stderr and the
# program runs as natively. A process that cannot create its log (a fork
# child that took another user's identity) says so too; run by root, the
# launcher's run folder takes such a process's log.
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

# A log that cannot be made: the process says so in one line and runs on
# unrecorded. Root may write any folder: its fork child that takes
# another user's identity (dropuser) meets a folder only root may write;
# another user, a folder without write permission.
mkdir closed.d
chmod 700 closed.d
if [ "$(id -u)" = 0 ]; then
	status=0
	env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG_DIR=$PWD/closed.d "$MMS_PROGS/dropuser" >drop.out 2>drop.err || status=$?
	expect_eq "dropuser's exit status" $status 0
	expect_eq "dropuser's output" "$(cat drop.out)" done
	grep -q "msmemscope: not recording pid [0-9]* (.*dropuser): cannot create .*closed.d/memscope_[0-9]*.mms: Permission denied (its user may not write that folder)" drop.err ||
		fail "no word of the child's log: $(cat drop.err)"
	expect_eq "lines on stderr" "$(wc -l <drop.err)" 1
	expect_eq "logs in the closed folder" "$(ls closed.d | wc -l)" 1
	# The launcher's run folder (and the output folders it makes) take
	# the logs of every user's processes: the child's is there, its own.
	# The folders above them must let other users pass (this one is the
	# test's own, made for root alone).
	chmod 711 .
	closed=
	d=$PWD
	while [ "$d" != / ]; do
		[ $((0$(stat -c %a "$d") & 1)) = 1 ] || closed=$d
		d=$(dirname "$d")
	done
	if [ -n "$closed" ]; then
		note "$closed is closed to other users: the launcher's run folder for them is not checked below it"
	else
		"$MMS_LAUNCHER" --output=drop.o -- "$MMS_PROGS/dropuser" >drop.out 2>drop.err ||
			fail "msmemscope -- dropuser exited $?: $(tail -3 drop.err)"
		expect_eq "dropuser's output recorded" "$(cat drop.out)" done
		grep -q "not recording" drop.err && fail "a process went unrecorded: $(cat drop.err)"
		run_dir=$(ls -d drop.o/msmemscope_*)
		expect_eq "the run folder's mode" "$(stat -c %a "$run_dir")" 1733
		expect_eq "logs owned by uid 65534" "$(find "$run_dir" -name '*.mms' -uid 65534 | wc -l)" 1
		child=$(find "$run_dir" -name '*.mms' -uid 65534)
		summarize "$child"
		expect_ge "the child's allocations" "$(jget "$child.json" allocs)" 2
		note "a fork child that takes another user's identity is recorded under the launcher, and says so where it cannot be"
	fi
else
	chmod 500 closed.d
	run MSMEMSCOPE_LOG_DIR=$PWD/closed.d
	grep -q "not recording pid [0-9]* (.*): cannot create .*closed.d/memscope_[0-9]*.mms: Permission denied" run.err ||
		fail "no word of the log: $(cat run.err)"
	expect_eq "lines on stderr" "$(wc -l <run.err)" 1
	note "a process that cannot create its log says so (not run by root: the other user's case is not checked)"
fi
