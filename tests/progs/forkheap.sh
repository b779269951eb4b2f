#!/bin/sh
# SPDX-License-Identifier: MIT
# forkheap.sh: a forked child starts from its parent's heap. forkheap's
# parent forks with 60 blocks (64170 bytes) live; its child frees 30 of
# them, allocates 20 blocks and frees 5, and forks a grandchild that frees
# 15 of the 45 blocks it inherited and allocates 7; a second child execs
# /bin/true at once (figures in forkheap.c). Each child's replay starts
# from the blocks live in its parent's log at the parent's FORK event, so
# the children have 0 unmatched frees, and the blocks and bytes in use at
# their exit are valgrind's, from its per-process HEAP SUMMARY
# (--trace-children=yes --child-silent-after-fork=no). valgrind runs
# glibc's freeres at exit by default, and the recorder does not (yet):
# forkheap does no stdio and glibc allocates nothing of its own in it, so
# freeres has nothing to free and both ways of running valgrind give the
# same figures, which the test checks. valgrind's "total heap usage" of a
# child counts its ancestors' allocations before the fork too: the test
# checks that against the sum of the logs. Also: --step and --event in a
# child, the leaks report, a fork+exec child that leaves no log, the
# launcher's list of logs, logs moved together, a parent log gone, and a
# child's steps numbered on from its parent's.
. "$top_srcdir/tests/progs/lib.sh"

prog="$MMS_PROGS/forkheap"

pids() {
	parent=$(sed -n 's/^parent=//p' "$1")
	child=$(sed -n 's/^child=//p' "$1")
	grand=$(sed -n 's/^grandchild=//p' "$1")
	spawned=$(sed -n 's/^spawned=//p' "$1")
	[ -n "$parent" ] && [ -n "$child" ] && [ -n "$grand" ] && [ -n "$spawned" ] ||
		fail "forkheap did not print its pids: $(cat "$1")"
}

# keys FILE KEY=VALUE...: the summary figures.
keys() {
	_f=$1
	shift
	for _kv in "$@"; do
		expect_key "$_f" "${_kv%%=*}" "${_kv#*=}"
	done
}

# 1. The logs of one run (MSMEMSCOPE_LOG_DIR names them by pid).
mkdir logs
env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG_DIR="$work/logs" "$prog" >rec.out || fail "forkheap exited $?"
pids rec.out
rparent=$parent rchild=$child
cd logs
dir=$(pwd -P)
P=memscope_$parent.mms C=memscope_$child.mms G=memscope_$grand.mms S=memscope_$spawned.mms
for f in $P $C $G $S; do
	summarize $f
	expect_consistent $f.json
done
keys $P.json allocs=100 frees=40 live_blocks=60 live_bytes=64170 inherited_blocks=0 fork=null
keys $C.json inherited_blocks=60 inherited_bytes=64170 allocs=20 frees=35 live_blocks=45 live_bytes=37035 \
	inherited_live_blocks=30 inherited_live_bytes=32535 fork.state='"inherited"' fork.parent_pid=$parent \
	fork.parent_log="\"$dir/$P\"" complete=true
keys $G.json inherited_blocks=45 inherited_bytes=37035 allocs=7 frees=15 live_blocks=37 live_bytes=25140 \
	inherited_live_blocks=30 inherited_live_bytes=24790 fork.state='"inherited"' fork.parent_pid=$child \
	fork.parent_log="\"$dir/$C\""
# The fork followed at once by exec left no log of its own: /bin/true's
# is a new process's, not an exec'd image's.
keys $S.json fork=null inherited_blocks=0
[ ! -e memscope_$spawned.exec1.mms ] || fail "the fork+exec child left a log of its own"
expect_eq "logs of one run" "$(ls -- *.mms | wc -l)" 4
# The FORK events: the parent forked twice, the child once.
expect_key $P.json by_kind.system 4
expect_key $C.json by_kind.system 2
note "child $child: 60 blocks inherited, 30 of them freed, 45 blocks (37035 bytes) live at exit;" \
	"grandchild $grand: 45 inherited, 37 (25140 bytes) live at exit; 0 unmatched frees"

# 2. --step and --event in the child: step 1 freed 30 inherited blocks.
"$MMS_REPLAY" $C --step 1 --json >step1.json 2>step1.err || fail "--step 1 exited $?: $(cat step1.err)"
keys step1.json state.kinds.host.live_blocks=30 state.kinds.host.live_bytes=32535 frees=30 bytes_freed=31635 \
	allocs=0 kept.blocks=0
"$MMS_REPLAY" $C --step 2 --json >step2.json 2>step2.err || fail "--step 2 exited $?: $(cat step2.err)"
keys step2.json state.kinds.host.live_blocks=45 state.kinds.host.live_bytes=37035 kept.blocks=15
"$MMS_REPLAY" $C --event 0 >event0.txt 2>&1 || fail "--event 0 exited $?: $(cat event0.txt)"
grep -q "FREE .* 1.0 KiB, allocation 1 (inherited)$" event0.txt &&
	grep -q "^  inherited from the parent: allocated by pid $parent at its event #[0-9]*, owner parent, by:" \
		event0.txt || fail "--event 0 does not show the inherited block: $(cat event0.txt)"

# 3. The leaks report names the inherited blocks among those live at exit
# (still reachable: the program keeps them in its array).
"$MMS_REPLAY" $G --analysis leaks >leaks.txt 2>&1 || fail "leaks exited $?: $(cat leaks.txt)"
grep -q '^====== Still reachable at exit: 37 allocation(s), 24.6 KiB (not leaks: the program still pointed to them) ======$' leaks.txt &&
	grep -q '^Of them 30 allocation(s), 0.023642 Mb(s), were inherited from the parent: allocated before it forked this process.$' \
		leaks.txt || fail "leaks of the grandchild: $(cat leaks.txt)"
# Forked in the child's step 3 (after its two marks), it marks none: its
# steps are all the child's, and no table of them is made.
grep -q "^No step began in this process: it was forked in pid $child's step 3, whose log has the steps; no table of the steps\.$" \
	leaks.txt || fail "the grandchild's steps (all its parent's) are not said: $(cat leaks.txt)"
cd ..

# 3b. With stacks, a grandchild's log lists its modules (its parent, a
# fork child, passes on the modules it inherited): its stacks are
# symbolized, its own blocks' and those its parent allocated. Before, the
# grandchild's log listed no module and every frame was an address.
mkdir slogs
env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG_DIR="$work/slogs" MSMEMSCOPE_CONFIG="call_stack=8" "$prog" >srec.out ||
	fail "forkheap with stacks exited $?"
pids srec.out
"$MMS_REPLAY" slogs/memscope_$grand.mms --analysis leaks --show-reachable >sleaks.txt 2>&1 ||
	fail "leaks of the grandchild with stacks exited $?: $(cat sleaks.txt)"
grep -q '^      #0  grandchild (.*forkheap.c:[0-9]*)$' sleaks.txt &&
	grep -q '^      #0  child (.*forkheap.c:[0-9]*)$' sleaks.txt ||
	fail "the grandchild's stacks are not symbolized: $(cat sleaks.txt)"
note "grandchild with stacks: its blocks' and its parent's allocation stacks symbolized"

# 4. valgrind's per-process heap summaries, with its default freeres at
# exit and without.
VALGRIND=${VALGRIND:-$(command -v valgrind || true)}
if [ -n "$VALGRIND" ] && [ -x "$VALGRIND" ]; then
	for freeres in yes no; do
		mkdir vg-$freeres
		(cd vg-$freeres && "$VALGRIND" --tool=memcheck --leak-check=no --trace-children=yes \
			--child-silent-after-fork=no --run-libc-freeres=$freeres --log-file=vg.%p "$prog" >out) ||
			fail "forkheap under valgrind exited $?"
		pids vg-$freeres/out
		# pid: in use at exit (bytes blocks), total heap usage (allocs frees)
		for who in $parent:$P $child:$C $grand:$G; do
			vgpid=${who%%:*}
			log=logs/${who#*:}.json
			vg=vg-$freeres/vg.$vgpid
			[ -f "$vg" ] || fail "valgrind left no $vg"
			use=$(sed -n 's/.*in use at exit: \([0-9,]*\) bytes in \([0-9,]*\) blocks.*/\1 \2/p' "$vg" | tr -d ,)
			[ -n "$use" ] || fail "no HEAP SUMMARY in $vg: $(cat "$vg")"
			expect_eq "valgrind (freeres=$freeres) vs ${who#*:}: bytes in use at exit" "${use% *}" \
				"$(jget $log live_bytes)"
			expect_eq "valgrind (freeres=$freeres) vs ${who#*:}: blocks in use at exit" "${use#* }" \
				"$(jget $log live_blocks)"
		done
		# A child's totals are its ancestors' until the fork plus its
		# own (the parent did nothing but fork and wait after it).
		tot=$(sed -n 's/.*total heap usage: \([0-9,]*\) allocs, \([0-9,]*\) frees.*/\1 \2/p' \
			vg-$freeres/vg.$grand | tr -d ,)
		expect_eq "valgrind's allocations of the grandchild, with its ancestors'" "${tot% *}" \
			$(($(jget logs/$P.json allocs) + $(jget logs/$C.json allocs) + $(jget logs/$G.json allocs)))
		expect_eq "valgrind's frees of the grandchild, with its ancestors'" "${tot#* }" \
			$(($(jget logs/$P.json frees) + $(jget logs/$C.json frees) + $(jget logs/$G.json frees)))
	done
	note "valgrind agrees on every process's blocks and bytes in use at exit, with freeres and without"
else
	note "valgrind is not installed (apt-get install valgrind): figures checked against forkheap.c only"
fi

# 5. Under the launcher: how each log began.
"$MMS_LAUNCHER" --output=run -- "$prog" >launch.out 2>launch.err || fail "msmemscope exited $?"
pids launch.out
grep -q "^  also memscope_$child.mms: pid $child, .*forkheap, forked from pid $parent at its event [0-9]*: [0-9]* events, 45 heap blocks (36.2 KiB) live at exit (30 of them inherited)$" launch.err &&
	grep -q "^  also memscope_$grand.mms: pid $grand, .*forkheap, forked from pid $child at its event [0-9]*: [0-9]* events, 37 heap blocks (24.6 KiB) live at exit (30 of them inherited)$" launch.err &&
	grep -q "^  also memscope_$spawned.mms: pid $spawned, .*true, spawned by pid $parent (posix_spawn, vfork or fork, then exec): " launch.err ||
	fail "the launcher's list of logs: $(cat launch.err)"
! grep -q "free.* of no live block" launch.err || fail "the launcher reports frees of no live block: $(cat launch.err)"

# 6. Logs moved together: the parent's is found beside the child's.
mkdir moved
cp logs/$P logs/$C moved/
summarize moved/$C
keys moved/$C.json unmatched_frees=0 live_blocks=45 fork.state='"inherited"'

# 7. The parent's log gone: the child starts empty, and says so.
mkdir alone
cp logs/$C alone/
mv logs/$P gone.mms
"$MMS_REPLAY" alone/$C --summary >alone.txt 2>alone.err || fail "summary without the parent's log exited $?"
grep -q "^forked from          pid $rparent; inherited blocks unknown: parent log $dir/$P not found$" alone.txt ||
	fail "the summary does not say the parent's log is missing: $(cat alone.txt)"
grep -q "warning: alone/$C: a forked child whose inherited blocks are unknown: parent log $dir/$P not found; its frees of them count as unmatched frees" alone.err ||
	fail "no warning about the missing parent's log: $(cat alone.err)"
summarize alone/$C
keys alone/$C.json unmatched_frees=30 inherited_blocks=0 live_blocks=15 live_bytes=4500 fork.state='"unknown"' \
	fork.why="\"parent log $dir/$P not found\""
note "without the parent's log: 'inherited blocks unknown', 30 unmatched frees, as before"
# The moved copy, now that the recorded path is gone: the parent's log is
# read beside it, and that is the path the replay names.
summarize moved/$C
keys moved/$C.json live_blocks=45 fork.state='"inherited"' fork.parent_log="\"moved/$P\""

# 8. A script that runs many programs: the launcher lists the first 10
# other logs, then counts the rest with their events (only peeked at: a
# forked child's summary replays its parent's log).
"$MMS_LAUNCHER" --output=many -- sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12; do /bin/true; done' \
	>many.out 2>many.err || fail "msmemscope -- sh -c (12 runs of true) exited $?: $(cat many.err)"
total=$(ls many/msmemscope_*/memscope_*.mms | wc -l)
[ "$total" -gt 12 ] || fail "sh -c with 12 runs of true left $total logs: $(ls -R many)"
expect_eq "'also' lines for $total logs" "$(grep -c '^  also memscope_' many.err)" 10
grep -q "^  \.\.\. and $((total - 11)) more logs in many/msmemscope_[0-9_]*: [0-9]* events (msmemscope-replay LOG reads each)\$" many.err ||
	fail "the logs past the first 10 are not counted ($total logs, the program's included): $(cat many.err)"
note "$total logs of a script: 10 listed, $((total - 11)) counted"

# 9. Steps across a fork: forkheap steps forks in its step 3 (after 2
# msmemscope_step() marks, or inside its third "step start" range); the
# child's log numbers its steps on from there, as the program and
# --steps do: its 400-byte block is step 4's, steps 1-2 are the parent's
# alone (none of them in the child's log) and step 3 is in part.
for mode in marks ranges; do
	"$MMS_LAUNCHER" --output=steps$mode --analysis=leaks -- "$prog" steps $mode >steps$mode.out 2>steps$mode.err ||
		fail "msmemscope -- forkheap steps $mode exited $?: $(cat steps$mode.err)"
	sc=$(sed -n 's/^child=//p' steps$mode.out)
	sp=$(sed -n 's/^msmemscope: recorded .* (pid \([0-9]*\)) to .*/\1/p' steps$mode.err | head -n 1)
	log=$(ls steps$mode/msmemscope_*/memscope_$sc.mms)
	"$MMS_REPLAY" "$log" --summary >steps$mode.sum 2>&1 || fail "--summary of the child ($mode): $(cat steps$mode.sum)"
	grep -q "^forked in            its step 3; this log's steps go on with the parent's numbers$" steps$mode.sum ||
		fail "the child's summary ($mode) does not say the step it was forked in: $(cat steps$mode.sum)"
	"$MMS_REPLAY" "$log" --analysis leaks --json >steps$mode.json 2>/dev/null || fail "leaks --json of the child ($mode)"
	expect_eq "the child's steps, how much of each its log has ($mode)" \
		"$("$MMS_PYTHON" -c 'import json,sys; print(" ".join(s["recorded"] for s in json.load(open(sys.argv[1]))["steps"]))' steps$mode.json)" \
		"none none part all all"
	"$MMS_REPLAY" "$log" --analysis leaks >steps$mode.leaks 2>&1 || fail "leaks of the child ($mode)"
	grep -q '^Direct HOST leak of 0.000381 Mb(s) at 0x[0-9a-f]* in kernel_0 at step 4\.$' steps$mode.leaks ||
		fail "the child's 400-byte block is not step 4's ($mode): $(cat steps$mode.leaks)"
	grep -q "^Steps not recorded whole (begun before the fork, in pid $sp), left out of the tables above: 1-3\.$" \
		steps$mode.leaks || fail "the steps before the fork are not named ($mode): $(cat steps$mode.leaks)"
	"$MMS_REPLAY" "$log" --step 1 >steps$mode.1 2>&1 || fail "--step 1 of the child ($mode): $(cat steps$mode.1)"
	grep -q "^  pid $sp's, before it forked this process: this log holds none of it" steps$mode.1 ||
		fail "--step 1 of the child ($mode) does not send to the parent's log: $(cat steps$mode.1)"
	"$MMS_REPLAY" "$log" --step 3 >steps$mode.3 2>&1 || fail "--step 3 of the child ($mode): $(cat steps$mode.3)"
	grep -q "^  recorded in part (begun in pid $sp before it forked this process): what it allocated and freed before the fork is in the parent's log" steps$mode.3 ||
		fail "--step 3 of the child ($mode) is not said to be in part: $(cat steps$mode.3)"
	"$MMS_REPLAY" "$log" --step 4 --json >steps$mode.4 2>&1 || fail "--step 4 of the child ($mode): $(cat steps$mode.4)"
	keys steps$mode.4 allocs=1 bytes_allocated=400 recorded='"all"'
	printf 'goto step 2\ngoto step 4\n' | "$MMS_REPLAY" "$log" -i >steps$mode.i 2>&1 || true
	grep -q "step 2 is pid $sp's: it ended before that process forked this one" steps$mode.i ||
		fail "-i goto step 2 of the child ($mode) does not send to the parent's log: $(cat steps$mode.i)"
	grep -q '^start of step 4$' steps$mode.i || fail "-i goto step 4 of the child ($mode): $(cat steps$mode.i)"
done
# --steps=4 in the parent's numbers: the child's log has that step alone.
"$MMS_LAUNCHER" --output=steps4 --steps=4 -- "$prog" steps >steps4.out 2>steps4.err ||
	fail "msmemscope --steps=4 -- forkheap steps exited $?: $(cat steps4.err)"
sc=$(sed -n 's/^child=//p' steps4.out)
"$MMS_REPLAY" steps4/msmemscope_*/memscope_$sc.mms --analysis leaks --json >steps4.json 2>/dev/null ||
	fail "leaks --json of the child (--steps=4)"
expect_eq "the child's steps recorded with --steps=4" \
	"$("$MMS_PYTHON" -c 'import json,sys; print(" ".join("%s:%s" % (s["recorded"], s["bytes_allocated"]) for s in json.load(open(sys.argv[1]))["steps"]))' steps4.json)" \
	"none:0 none:0 none:0 all:400 none:0"
note "a fork child's steps go on with its parent's numbers (marks and ranges, and --steps=4)"
