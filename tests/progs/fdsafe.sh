#!/bin/sh
# SPDX-License-Identifier: MIT
# fdsafe.sh: the recorder keeps its descriptors out of the program's way
# (doc/recorder.md, "What the recorder promises"). fdsafe closes every
# inherited descriptor (closefrom, close_range, a close loop), opens 1000
# files, allocates while they are open, probes and dup2s onto the top of
# the descriptor range, and checks its files: natively and recorded (no
# stacks, stacks, stacks with every one also taken by libunwind) it must
# print the same descriptor numbers and results, leave byte-identical
# files, and the log must be whole. With raw close system calls, which the
# recorder cannot see, the program's files take the recorder's numbers:
# the recorder must stop (the log says why) and never write into them.
# And a program that opens files until EMFILE opens as many recorded as
# natively: the recorder's descriptors sit above its soft limit.
. "$top_srcdir/tests/progs/lib.sh"

prog=$MMS_PROGS/fdsafe

# run NAME MODE [ENV...]: runs fdsafe MODE in NAME.d, recorded to NAME.mms
# when ENV is given (env settings for the recorder), natively otherwise.
run() {
	name=$1 mode=$2
	shift 2
	mkdir "$name.d"
	status=0
	if [ $# -gt 0 ]; then
		env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG="$PWD/$name.mms" "$@" "$prog" "$mode" "$name.d" \
			>"$name.out" 2>"$name.err" || status=$?
	else
		"$prog" "$mode" "$name.d" >"$name.out" 2>"$name.err" || status=$?
	fi
	expect_eq "$name exit status" $status 0
}

for mode in closefrom close_range loop raw; do
	run $mode-native $mode
	grep -q "0 of [0-9]* files damaged" $mode-native.out || fail "fdsafe $mode natively: $(cat $mode-native.out)"
	for rec in plain:call_stack=0 stacks:call_stack=32 check:call_stack=32; do
		name=$mode-${rec%%:*}
		extra=
		[ "${rec%%:*}" != check ] || extra=MSMEMSCOPE_UNWIND_CHECK=1
		run $name $mode MSMEMSCOPE_CONFIG="${rec#*:}" $extra
		cmp -s $mode-native.out $name.out ||
			fail "$name printed something else than natively: $(diff $mode-native.out $name.out | head -20)"
		diff -r $mode-native.d $name.d >/dev/null || fail "$name: the program's files differ from native ones"
		summarize $name.mms
		if [ $mode = raw ]; then
			# The log's number was taken over by one of the program's
			# files: recording stopped, and says why.
			expect_key $name.mms.json cut true
			"$MMS_REPLAY" $name.mms --summary >/dev/null 2>$name.why || true
			grep -q "closed the log's descriptor" $name.why ||
				fail "$name: the replay does not say why recording stopped: $(cat $name.why)"
			# Said whole: the reason's parentheses all close (a
			# buffer of 192 bytes cut it short).
			grep "the log is cut at byte" $name.why | awk -F '' \
				'{ n = 0; for (i = 1; i <= NF; i++) n += ($i == "(") - ($i == ")") } n != 0 { bad = 1 } END { exit bad }' ||
				fail "$name: the replay's warning is cut short: $(cat $name.why)"
			# And the recorder said so on stderr when it stopped.
			grep -q "^msmemscope: recording of pid [0-9]* stopped: the program closed the log's descriptor" \
				$name.err || fail "$name: the recorder did not say it stopped: $(cat $name.err)"
		else
			expect_key $name.mms.json cut false
			expect_key $name.mms.json complete true
			expect_key $name.mms.json damaged false
			expect_ge "$name allocations recorded" "$(jget $name.mms.json allocs)" 800000
		fi
	done
done
note "descriptor numbers, probes and files as native in every mode; raw closes stop the recorder"

# emfile: files opened until EMFILE under a soft limit of 64, where the
# hard limit lets the recorder put its log above it (not where soft and
# hard are one: the log then takes one of the program's numbers, as
# doc/recorder.md says).
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -ge 256 ]; then
	mkdir emfile.d
	(ulimit -Sn 64 && "$prog" emfile emfile.d) >emfile-native.out || fail "fdsafe emfile natively exited $?"
	for cfg in call_stack=0 call_stack=32; do
		rm -f emfile.*.mms
		(ulimit -Sn 64 && env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG="$PWD/emfile.mms" MSMEMSCOPE_LOG_FORCE=1 \
			MSMEMSCOPE_CONFIG=$cfg "$prog" emfile emfile.d) >emfile.out 2>emfile.err ||
			fail "fdsafe emfile recorded exited $?"
		expect_eq "files opened until EMFILE under a soft limit of 64, recorded ($cfg)" "$(cat emfile.out)" \
			"$(cat emfile-native.out)"
		# The worker forked at the limit: its log is there, and its
		# stderr has no word of the recorder's (before: "not recording
		# pid N ... Too many open files").
		[ ! -s emfile.err ] || fail "the worker forked at the limit wrote on stderr ($cfg): $(cat emfile.err)"
		ls emfile.*.mms >/dev/null 2>&1 || fail "the worker forked at the limit has no log ($cfg): $(ls)"
	done
	note "until EMFILE under a soft limit of 64: $(cat emfile-native.out | tr '\n' ' ')natively and recorded; the worker forked then is recorded"
else
	note "the hard descriptor limit here is $hard: the EMFILE count is not compared"
fi
