#!/bin/sh
# SPDX-License-Identifier: MIT
# progress.sh: the progress line of both programs: nothing on stderr when it
# is not a terminal; on a pseudo-terminal (util-linux's script), lines
# "reading LOG: X of Y events (N%)" redrawn with '\r' and erased at the end,
# the answer on stdout the same as without a terminal; none with --quiet
# or -q. A signal in the middle of the work cancels it: no file it was
# writing is left, nothing more is printed, and the program ends by the
# signal; at the prompt of -i on a terminal, Ctrl-C drops the line typed
# and the prompt comes back. The log (threads8, one thread) is made large
# enough that reading it lasts 0.8 s or more, as the line waits half a
# second before it shows.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

prog=$MMS_PROGS/threads8
[ -x "$prog" ] || fail "not built: $prog"
[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"

ms() {
	date +%s%3N
}

# plain: records big.mms with $blocks blocks and reads its summary without
# a terminal: the summary on stdout, nothing on stderr; $t is its time.
plain() {
	rm -f big.mms big.mms.idx
	record big.mms "$prog" 1 "$blocks" 0 >prog.out || fail "threads8 exited $? under the recorder"
	t0=$(ms)
	"$MMS_REPLAY" big.mms >plain.out 2>plain.err || fail "msmemscope-replay big.mms exited $?: $(cat plain.err)"
	t=$(($(ms) - t0))
	[ ! -s plain.err ] || fail "stderr is not a terminal, yet msmemscope-replay wrote to it: $(od -c plain.err | head)"
}

# The log grows until one summary lasts 0.8 s (a faster machine needs more).
blocks=6000000
plain
while [ "$t" -lt 800 ] && [ "$blocks" -lt 64000000 ]; do
	blocks=$((blocks * 2))
	plain
done
note "$((blocks * 2)) events read in $t ms without a terminal: stderr empty"

# await PID: waits until usage.tsv's temporary file is in intr/ (the read
# of msmemscope-replay PID has begun; it lasts 0.8 s or more) or usage.tsv
# itself (it is over).
await() {
	n=0
	until ls intr/usage.tsv.*.tmp >/dev/null 2>&1 || [ -s intr/usage.tsv ]; do
		n=$((n + 1))
		[ $n -lt 400 ] || { kill -9 "$1"; fail "no temporary usage.tsv in 20 s: $(ls -la intr)"; }
		sleep 0.05
	done
}

# interrupt SIG STATUS: msmemscope-replay's analyses writing three files get
# SIG once the read has begun: the program ends by SIG (STATUS), leaves no
# file, and prints nothing.
interrupt() {
	rm -rf intr
	"$MMS_REPLAY" big.mms --analysis usage,watermark,leakage --output-dir intr >intr.out 2>intr.err &
	pid=$!
	await $pid
	kill -"$1" $pid
	st=0
	wait $pid || st=$?
	expect_eq "status after SIG$1" "$st" "$2"
	[ -z "$(ls -A intr)" ] || fail "SIG$1 left files: $(ls -la intr)"
	if [ -s intr.out ] || [ -s intr.err ]; then fail "SIG$1: printed $(cat intr.out intr.err)"; fi
}
interrupt TERM 143
interrupt HUP 129
# A signal ignored stays ignored (nohup): the work goes on to its end.
rm -rf intr
(
	trap '' TERM
	exec "$MMS_REPLAY" big.mms --analysis usage --output-dir intr >intr.out 2>intr.err
) &
pid=$!
await $pid
kill -TERM $pid
st=0
wait $pid || st=$?
expect_eq "status with SIGTERM ignored" "$st" 0
[ -s intr/usage.tsv ] || fail "SIGTERM ignored, yet usage.tsv is not written: $(ls -la intr; cat intr.err)"
note "SIGTERM and SIGHUP cancel a read: no file left, status 128+N; ignored, SIGTERM changes nothing"

# -i builds the index first (as long as a read): SIGHUP then cancels it,
# and no index is left.
rm -f big.mms.idx*
"$MMS_REPLAY" big.mms -i </dev/null >idx.out 2>idx.err &
pid=$!
sleep 0.3
kill -HUP $pid
st=0
wait $pid || st=$?
expect_eq "status after SIGHUP while -i builds the index" "$st" 129
if ls big.mms.idx* >/dev/null 2>&1; then fail "SIGHUP left an index: $(ls -la big.mms.idx*)"; fi

command -v script >/dev/null 2>&1 || skip "script (util-linux) is needed for a pseudo-terminal"
SHELL=/bin/sh script -qfec true /dev/null </dev/null >/dev/null 2>&1 ||
	skip "script cannot open a pseudo-terminal here"

# tty CMD: runs the shell command CMD with stdin, stdout and stderr on a
# pseudo-terminal (CMD redirects stdout itself); what reached the terminal
# goes to tty.raw and, one line per '\r' or '\n', to tty.lines.
tty() {
	SHELL=/bin/sh script -qfec "$1" /dev/null </dev/null >tty.raw 2>tty.err ||
		fail "on a terminal, '$1' exited $?: $(cat tty.err)"
	tr '\r' '\n' <tty.raw >tty.lines
}

# The summary on a terminal: progress lines with a percentage, then an
# erased line; stdout as without a terminal.
t0=$(ms)
tty "'$MMS_REPLAY' big.mms >tty.out"
t=$(($(ms) - t0))
if [ "$t" -lt 700 ] && ! grep -q '%)' tty.lines; then
	# Faster this time than half a second and a little: no line, by
	# design. Once more, on a log twice as large.
	blocks=$((blocks * 2))
	plain
	t0=$(ms)
	tty "'$MMS_REPLAY' big.mms >tty.out"
	t=$(($(ms) - t0))
fi
cmp -s plain.out tty.out || fail "stdout on a terminal differs from stdout without one: $(diff plain.out tty.out)"
# A line shorter than the one before it ends in the spaces that erase the
# rest of that one (998.4 k, then 1.1 M).
re='^msmemscope-replay: reading big\.mms: [0-9.]* [kM]* *of [0-9.]* [kM]* *events ([0-9]*%) *$'
n=$(grep -c "$re" tty.lines || true)
[ "$n" -ge 1 ] || fail "no progress line on the terminal: $(od -c tty.raw | head -20)"
# None in the first half second, then ten a second at most.
[ "$n" -le $(((t - 500) / 100 + 2)) ] || fail "$n progress lines in $t ms: more than ten a second"
extra=$(grep -v "$re" tty.lines | grep -v '^ *$' || true)
[ -z "$extra" ] || fail "the terminal shows more than progress lines: $extra"
tail -c 1 tty.raw | od -c | grep -q '\\r' || fail "the progress line is not erased at the end: $(od -c tty.raw | tail -3)"
note "on a terminal: $n progress lines in $t ms ($(grep "$re" tty.lines | tail -1)), erased; stdout unchanged"

# --quiet: nothing on the terminal.
tty "'$MMS_REPLAY' --quiet big.mms >quiet.out"
cmp -s plain.out quiet.out || fail "stdout with --quiet differs"
[ ! -s tty.raw ] || fail "--quiet on a terminal still printed: $(od -c tty.raw | head)"

# -i on a terminal (env --default-signal: a job started in the background
# of a script has SIGINT ignored, and an ignored signal stays so): Ctrl-C
# while a line is typed drops it and brings the prompt back; so it does
# at an empty prompt; the session goes on to "quit" (status 0). Ctrl-C
# during a long command (the report of longstep's long step) stops it
# where it stands: "Interrupted.", and the replay stands inside the step.
# SIGTERM at the prompt ends the session at once (143).
# repl_start LOG: starts the session on LOG, its input the fifo on
# descriptor 7, and waits for its prompt; $rpid is msmemscope-replay's
# pid. A session that died leaves no reader: say() then fails rather than
# the test dying of SIGPIPE (ignored after the start: the session keeps
# its own).
repl_start() {
	rm -f repl.in repl.out
	mkfifo repl.in
	SHELL=/bin/sh script -qfec "env --default-signal=INT '$MMS_REPLAY' $1 -i; echo status=\$?" /dev/null \
		<repl.in >repl.out 2>&1 &
	spid=$!
	exec 7>repl.in
	n=0
	until grep -q "(msmemscope)" repl.out 2>/dev/null; do
		n=$((n + 1))
		[ $n -lt 400 ] || fail "no prompt in 20 s: $(cat repl.out)"
		sleep 0.05
	done
	rpid=$(pgrep -f -- "$1 -i\$" | head -n 1)
	[ -n "$rpid" ] || fail "no msmemscope-replay -i running: $(pgrep -a -f memscope)"
	trap '' PIPE
}
say() {
	printf '%b' "$1" >&7 || fail "the session ended before '$1': $(cat repl.out)"
}
# repl_end: closes the input, waits for the session, and puts what the
# terminal showed in repl.lines.
repl_end() {
	exec 7>&-
	trap - PIPE
	wait $spid || true
	tr -d '\r' <repl.out >repl.lines
}
if env --default-signal=INT true 2>/dev/null && command -v pgrep >/dev/null 2>&1; then
	repl_start big.mms
	say 'wher'
	sleep 0.3
	kill -INT "$rpid"
	sleep 0.3
	say 'where\n'
	sleep 0.3
	kill -INT "$rpid"
	sleep 0.3
	say 'quit\n'
	repl_end
	grep -q "unknown command" repl.lines && fail "Ctrl-C did not drop the line typed: $(cat repl.lines)"
	grep -q "^position [0-9]* of [0-9]* events" repl.lines || fail "no answer after Ctrl-C: $(cat repl.lines)"
	expect_eq "prompts (start, after Ctrl-C, after where, after Ctrl-C)" "$(grep -o '(msmemscope)' repl.lines | wc -l)" 4
	grep -q "^status=0$" repl.lines || fail "-i after Ctrl-C: $(cat repl.lines)"

	# A step of 2 N events whose report lasts half a second or more:
	# --step 3, which also builds the index (a read of the whole log),
	# lasts a second or more.
	n=4000000
	while :; do
		rm -f long.mms long.mms.idx
		record long.mms "$MMS_PROGS/longstep" $n || fail "longstep exited $?"
		t0=$(ms)
		"$MMS_REPLAY" long.mms --no-index --step 3 >long.out 2>&1 ||
			fail "--step 3 of longstep exited $?: $(cat long.out)"
		t=$(($(ms) - t0))
		if [ "$t" -ge 1000 ] || [ $n -ge 64000000 ]; then
			break
		fi
		n=$((n * 2))
	done
	repl_start long.mms
	say 'report step 3\n'
	sleep 0.1
	kill -INT "$rpid"
	sleep 0.3
	say 'where\n'
	sleep 0.3
	say 'quit\n'
	repl_end
	grep -q "^Interrupted\.$" repl.lines || fail "a report not interrupted ($t ms for --step 3): $(cat repl.lines)"
	grep -q "canceled" repl.lines && fail "Ctrl-C's cancel printed as an error: $(cat repl.lines)"
	grep -q "^position [0-9]* of [0-9]* events (after event #[0-9]*), step 3 of 4$" repl.lines ||
		fail "the replay does not stand inside step 3: $(cat repl.lines)"
	grep -q "^status=0$" repl.lines || fail "-i after an interrupted report: $(cat repl.lines)"

	repl_start big.mms
	kill -TERM "$rpid"
	repl_end
	grep -q "^status=143$" repl.lines || fail "-i after SIGTERM: $(cat repl.lines)"
	note "-i on a terminal: Ctrl-C drops the line typed and interrupts a report ($t ms for --step 3), the prompt comes back; SIGTERM ends it (143)"
else
	note "env --default-signal or pgrep is missing: the prompt's Ctrl-C is not checked"
fi

# The launcher's report reads the program's log with the same line, which
# -q turns off; the report itself (stderr) is whole after it. Read after
# the run (--no-live-report): what is read while the program runs shows
# no line, and on an idle machine little is left to read after it.
# A read that ran faster than half a second this time (a machine less
# busy than when the log's size was chosen) shows no line, by design:
# once more with twice the blocks.
launched() {
	tty "'$MMS_LAUNCHER' --no-live-report --output=out -- '$prog' 1 $blocks 0 >run.out"
	grep -q "^msmemscope: reading memscope_[0-9]*\.mms: .* events ([0-9]*%) *$" tty.lines
}
if ! launched; then
	blocks=$((blocks * 2))
	launched || fail "no progress line from msmemscope's report: $(head -c 2000 tty.lines)"
fi
grep -q "^  events  *[0-9]*  (SYSTEM" tty.lines || fail "the report is garbled after the progress line: $(cat tty.lines)"
tty "'$MMS_LAUNCHER' -q --no-live-report --output=out -- '$prog' 1 $blocks 0 >run.out"
! grep -q "events ([0-9]*%)" tty.lines || fail "msmemscope -q still shows progress: $(grep "%)" tty.lines)"
grep -q "^  events  *[0-9]*  (SYSTEM" tty.lines || fail "msmemscope -q printed no report: $(cat tty.lines)"
note "msmemscope: progress on a terminal, none with -q"
