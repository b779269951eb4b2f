#!/bin/sh
# SPDX-License-Identifier: MIT
# diskfull.sh: when the log cannot grow (MSMEMSCOPE_LOG_LIMIT, the stand-in
# for a full disk) or cannot be written at all, recording stops cleanly and
# the program runs on: same output, exit 0. A cut log says cut, stays under
# its limit, and what it holds is a consistent prefix of the run: no free
# without its allocation, no address handed out twice, fewer events than
# the whole run. The program's own file size limit (RLIMIT_FSIZE) stops the
# log the same way, without the SIGXFSZ that would kill the program; and
# the recorder's message that recording stopped, on a stderr whose reader
# is gone, raises no SIGPIPE in it either. And a program that limits its
# address space (RLIMIT_AS) keeps the room it has natively: the log maps
# only the chunks in use, not its whole size ahead.
. "$top_srcdir/tests/progs/lib.sh"

limit=1048576

for threads in 1 8; do
	args="$threads $((400000 / threads)) 10"
	"$MMS_PROGS/threads8" $args >native-$threads.out || fail "threads8 $args natively exited $?"
	full_allocs=$(field allocs "$(cat native-$threads.out)")

	log=cut-$threads.mms
	MSMEMSCOPE_LOG_LIMIT=1M record $log "$MMS_PROGS/threads8" $args >$log.out ||
		fail "threads8 $args with a 1M log limit exited $?"
	expect_eq "threads8 output with the log cut" "$(sed 's/ live_bytes=.*//' $log.out)" "$(sed 's/ live_bytes=.*//' native-$threads.out)"
	size=$(wc -c <$log)
	expect_le "$log size" "$size" $limit
	summarize $log
	j=$log.json
	expect_key $j cut true
	expect_key $j damaged false
	expect_key $j unmatched_frees 0
	expect_key $j double_allocs 0
	allocs=$(jget $j allocs)
	expect_ge "$log allocations kept" "$allocs" 1000
	expect_le "$log allocations kept" "$allocs" $((full_allocs - 1))
	expect_le "$log frees kept" "$(jget $j frees)" "$allocs"
	# Where the replay stops, in every report: the blocks live there
	# were live when recording stopped, not leaked.
	expect_key $j cut_at_byte "$size"
	expect_key $j stopped_at_event "$(jget $j events)"
	expect_key $j complete false
	"$MMS_REPLAY" $log >$log.txt 2>$log.err || fail "msmemscope-replay $log exited $?"
	stop=$(jget $j events)
	grep -q "^live at the cut .*: live when recording stopped at event $stop (the log is cut; not leaks)\$" $log.txt ||
		fail "the summary of a cut log does not say when its blocks were live: $(cat $log.txt)"
	grep -q "$log: the log is cut at byte $size: recording stopped early (.*); the replay stops at event $stop," \
		$log.err || fail "no warning saying where the log is cut: $(cat $log.err)"
	"$MMS_REPLAY" $log --analysis leaks --json >$log.leaks 2>/dev/null || fail "leaks of $log exited $?"
	expect_key $log.leaks cut true
	expect_key $log.leaks cut_at_byte "$size"
	expect_key $log.leaks stopped_at_event "$stop"
	expect_key $log.leaks at_exit.live_when "\"when recording stopped at event $stop (the log is cut; not leaks)\""
	note "$threads thread(s): cut at $size bytes, $allocs of $full_allocs allocations kept, consistent, reports stop at event $stop"
done

# The launcher's report of a cut run: no "leaked at exit".
MSMEMSCOPE_LOG_LIMIT=1M "$MMS_LAUNCHER" --output=launched -- "$MMS_PROGS/threads8" 2 100000 6 >launched.out 2>launched.err ||
	fail "msmemscope -- threads8 with a 1M log limit exited $?"
grep -q 'leaked at exit\|live at exit' launched.err && fail "the launcher calls a cut log's blocks leaked: $(cat launched.err)"
grep -q '^    live at the cut .*(live when recording stopped at event [0-9]* (the log is cut; not leaks))$' launched.err ||
	fail "the launcher does not say when a cut log's blocks were live: $(cat launched.err)"
grep -q '^====== Blocks still live when recording stopped at event [0-9]* (the log is cut; not leaks) ======$' launched.err ||
	fail "the launcher's leaks report calls a cut log's blocks leaks: $(cat launched.err)"
note "the launcher's summary and leaks report of a cut run say where it stopped"

# A program that sets a file size limit of 256 KiB for itself (SIGXFSZ at
# its default, death) and allocates far more than a log of that size holds:
# natively and recorded, the same output, the same file of its own, exit 0;
# the log, grown to 2 MiB before the program set its limit (it is grown
# ahead in steps), is never grown past it: it stops there, and says why.
fl=262144
"$MMS_PROGS/fsize" $fl 300000 own-native.txt 2000 >fsize-native.out || fail "fsize natively exited $?"
status=0
record fsize.mms "$MMS_PROGS/fsize" $fl 300000 own-rec.txt 2000 >fsize.out 2>fsize.err || status=$?
expect_eq "fsize status, recorded under its own 256 KiB file size limit (153: killed by SIGXFSZ)" $status 0
expect_eq "fsize output recorded" "$(cat fsize.out)" "$(cat fsize-native.out)"
cmp -s own-rec.txt own-native.txt || fail "the file fsize wrote differs when recorded"
expect_le "fsize.mms size (grown before the program's limit)" "$(wc -c <fsize.mms)" 2097152
grep -q "recording of pid [0-9]* stopped: the log reached the file size limit the program runs under (RLIMIT_FSIZE" \
	fsize.err || fail "no message saying the program's file size limit stopped the log: $(cat fsize.err)"
summarize fsize.mms
expect_key fsize.mms.json cut true
expect_key fsize.mms.json damaged false
expect_key fsize.mms.json unmatched_frees 0
"$MMS_REPLAY" fsize.mms >fsize.txt 2>fsize.rerr || fail "msmemscope-replay fsize.mms exited $?"
grep -q "file size limit the program runs under" fsize.rerr ||
	fail "the replay's warning does not say why the log was cut: $(cat fsize.rerr)"
note "a program under its own 256 KiB file size limit runs on (exit 0, same output and file); the log, never grown past it, stops at $(wc -c <fsize.mms) bytes, saying why"

# The recorder's message that recording stopped, written to a stderr pipe
# whose reader has gone (`prog 2>&1 | head -0`): the program, which writes
# nothing there itself, must not die of SIGPIPE (status 141).
rm -f pipe.status
{
	MSMEMSCOPE_LOG_LIMIT=1M record pipe.mms "$MMS_PROGS/threads8" 2 100000 6 2>&1 >pipe.out
	echo $? >pipe.status
} | :
expect_eq "threads8 status, its log cut with its stderr a pipe nobody reads (141: killed by SIGPIPE)" \
	"$(cat pipe.status)" 0
"$MMS_PROGS/threads8" 2 100000 6 >pipe-native.out
expect_eq "threads8 output, cut log and a closed stderr pipe" "$(sed 's/ live_bytes=.*//' pipe.out)" \
	"$(sed 's/ live_bytes=.*//' pipe-native.out)"
note "the recorder's message on a stderr pipe nobody reads: no SIGPIPE, the program ran on"

# A program that limits its address space to 512 MiB, then allocates 384
# MiB: natively and recorded alike (before, the recorder's reservation of
# the whole log, 64 GiB, made its first large malloc fail), with stacks
# too.
"$MMS_PROGS/aslimit" 512 384 >as-native.out || fail "aslimit natively: $(cat as-native.out)"
for cfg in "" "call_stack=16"; do
	status=0
	MSMEMSCOPE_CONFIG="$cfg" record as.mms "$MMS_PROGS/aslimit" 512 384 >as.out 2>as.err || status=$?
	expect_eq "aslimit status recorded (config '$cfg'): $(cat as.out)" $status 0
	expect_eq "aslimit output recorded (config '$cfg')" "$(cat as.out)" "$(cat as-native.out)"
	summarize as.mms
	expect_key as.mms.json cut false
	expect_ge "as.mms allocations (config '$cfg')" "$(jget as.mms.json allocs)" 24
	rm -f as.mms
done
note "a program under its own 512 MiB address space limit allocates its 384 MiB recorded too, with and without stacks"

# A real full disk, where this user may mount a 512 KiB tmpfs (root,
# outside a restricted container): the log runs out of blocks, not of a
# limit. The log is copied out before the tmpfs goes away.
mkdir fs
if mount -t tmpfs -o size=512k msmemscope-test "$work/fs" 2>/dev/null; then
	status=0
	record "$work/fs/full.mms" "$MMS_PROGS/threads8" 2 100000 5 >fs.out 2>fs.err || status=$?
	cp "$work/fs/full.mms" full.mms || true
	umount "$work/fs"
	expect_eq "threads8 status with the disk full" $status 0
	"$MMS_PROGS/threads8" 2 100000 5 >fs-native.out
	expect_eq "threads8 output with the disk full" "$(sed 's/ live_bytes=.*//' fs.out)" \
		"$(sed 's/ live_bytes=.*//' fs-native.out)"
	summarize full.mms
	expect_key full.mms.json cut true
	expect_key full.mms.json damaged false
	expect_key full.mms.json unmatched_frees 0
	expect_key full.mms.json double_allocs 0
	expect_ge "full.mms allocations kept" "$(jget full.mms.json allocs)" 1000
	note "disk full (512 KiB tmpfs): cut at $(wc -c <full.mms) bytes, $(jget full.mms.json allocs) allocations kept"
else
	note "cannot mount a tmpfs here (not root, or not allowed): the real full disk is not tried"
fi

# Logs that cannot be written: the program runs unharmed, and the recorder
# removes nothing it did not create (a FIFO stands for a device file, which
# it must never replace).
"$MMS_PROGS/threads8" 2 20000 5 >small.out || fail "threads8 natively exited $?"
mkfifo fifo.mms
: >notadir
for target in "$work/no/such/dir/x.mms" "$work/notadir/x.mms" "$work/fifo.mms"; do
	status=0
	timeout 60 env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG="$target" "$MMS_PROGS/threads8" 2 20000 5 \
		>unwritable.out 2>unwritable.err </dev/null || status=$?
	[ $status != 124 ] || fail "threads8 hung (killed after 60 s) when its log was $target"
	expect_eq "threads8 status when its log was $target" $status 0
	expect_eq "threads8 output with the log $target" "$(sed 's/ live_bytes=.*//' unwritable.out)" \
		"$(sed 's/ live_bytes=.*//' small.out)"
	note "log $target: the program ran on (stderr: $(head -c 200 unwritable.err))"
done
[ -p fifo.mms ] || fail "the recorder removed or replaced a FIFO named as its log (it must only ever remove files it created)"

# A program that closed stderr and opened a file of its own on descriptor 2:
# the recorder's message that recording stopped does not land in it.
"$MMS_PROGS/stderrfile" native.file >stderrfile.native || fail "stderrfile natively exited $?"
MSMEMSCOPE_LOG_LIMIT=1M record stderrfile.mms "$MMS_PROGS/stderrfile" rec.file >stderrfile.out ||
	fail "stderrfile with a 1M log limit exited $?"
expect_eq "stderrfile output" "$(cat stderrfile.out)" "done"
summarize stderrfile.mms
expect_key stderrfile.mms.json cut true
cmp -s native.file rec.file ||
	fail "the program's file on descriptor 2 differs from the native run (the recorder wrote into it?): $(head -c 300 rec.file)"

