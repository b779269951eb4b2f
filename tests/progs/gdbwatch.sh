#!/bin/sh
# SPDX-License-Identifier: MIT
# gdbwatch.sh: the recorder's half of the gdb interface (hooks/gdbif.h),
# driven by plain gdb in batch mode, as the gdb side drives it but with no
# Python: gdb writes the descriptor msmemscope_gdb by offset (found with
# the minimal symbol alone: the recorder is stripped of its debug
# information first) and keeps a breakpoint on msmemscope_gdb_stopped.
# On tests/progs/gdbwatch (six launches in two steps, launch 3 "softmax"
# overruns its buffer by 8 bytes into the watched neighbour block):
#  - a watch stops exactly once, at launch 3, with the 8 bytes changed
#    between the previous bytes and the snapshot;
#  - changes outside any launch, and inside a launch that encloses another,
#    are attributed as hooks/gdbif.c says;
#  - a block the hooks cannot read is marked and skipped, not read;
#  - break_op stops at each launch of that operator, break_step when the
#    step begins, break_end when that launch ends (one that encloses
#    another too); with nothing armed there is no stop.
. "$top_srcdir/tests/progs/lib.sh"

command -v gdb >/dev/null 2>&1 || skip "gdb is not installed (apt-get install gdb)"
prog=$MMS_PROGS/gdbwatch
[ -x "$prog" ] || fail "not built: $prog"

"$prog" >native.out || fail "gdbwatch without the recorder exited $?"
expect_eq "gdbwatch output without the recorder" "$(cat native.out)" "gdbwatch done"

# off_*, w_*, watch_stride: the descriptor's layout, from the header.
"$prog" offsets >offsets.sh || fail "gdbwatch offsets exited $?"
. ./offsets.sh
expect_eq "MMS_GDB_VERSION" "$gdb_version" 4

# The recorder as installed: no debug information, only its symbols.
hooks=$MMS_HOOKS
if command -v strip >/dev/null 2>&1 && strip --strip-unneeded -o hooks.so "$MMS_HOOKS" 2>/dev/null; then
	hooks=$PWD/hooks.so
else
	note "strip is not installed: the recorder keeps its debug information"
fi

# session NAME MODE [GDB COMMANDS...]: runs gdbwatch MODE under gdb with the
# recorder (log NAME.mms), stops at main, runs the commands (which arm the
# descriptor through $mms, its address), then runs to the end, printing a
# STOP line (key=value) at each stop and dumping the watched block's
# previous bytes and snapshot to NAME.prevN and NAME.snapN. The output is
# in NAME.out.
session() {
	_name=$1
	_mode=$2
	shift 2
	{
		cat <<EOF
set pagination off
set confirm off
set exec-wrapper env LD_PRELOAD=$hooks MSMEMSCOPE_LOG=$_name.mms
break main
run
set \$mms = (char *)(unsigned long)&msmemscope_gdb
printf "LOG %s\n", \$mms + $off_log_path
printf "VERSION %u\n", *(unsigned int *)(\$mms + $off_version)
set \$n = 0
EOF
		for _c in "$@"; do
			printf '%s\n' "$_c"
		done
		cat <<EOF
break msmemscope_gdb_stopped
commands
silent
set \$n = \$n + 1
set \$w = \$mms + $off_watch + *(unsigned int *)(\$mms + $off_hit_watch) * $watch_stride
set \$w1 = \$mms + $off_watch + $watch_stride
printf "STOP n=%d reason=%u watch=%u launch=%llu name=%s step=%llu launches=%llu changes=%llu tid=%llu w1seen=%llu w1snapshot=%llu\n", \$n, *(unsigned int *)(\$mms + $off_reason), *(unsigned int *)(\$mms + $off_hit_watch), *(unsigned long long *)(\$mms + $off_op_launch), \$mms + $off_op_name, *(unsigned long long *)(\$mms + $off_step), *(unsigned long long *)(\$mms + $off_launches), *(unsigned long long *)(\$w + $w_changes), *(unsigned long long *)(\$mms + $off_tid), *(unsigned long long *)(\$w1 + $w_seen), *(unsigned long long *)(\$w1 + $w_snapshot)
if *(unsigned int *)(\$mms + $off_reason) == 1
eval "dump binary memory $_name.prev%d %llu %llu", \$n, *(unsigned long long *)(\$w + $w_previous), *(unsigned long long *)(\$w + $w_previous) + *(unsigned long long *)(\$w + $w_size)
eval "dump binary memory $_name.snap%d %llu %llu", \$n, *(unsigned long long *)(\$w + $w_snapshot), *(unsigned long long *)(\$w + $w_snapshot) + *(unsigned long long *)(\$w + $w_size)
end
continue
end
continue
printf "END stops=%d\n", \$n
EOF
	} >"$_name.gdb"
	gdb -nx -batch -x "$_name.gdb" --args "$prog" $_mode >"$_name.out" 2>"$_name.err" ||
		fail "gdb session $_name exited $?: $(tail -5 "$_name.err")"
	grep -q 'gdbwatch done' "$_name.out" || fail "$_name: the program did not finish under gdb: $(tail -5 "$_name.out") $(tail -5 "$_name.err")"
	grep -q '^END stops=' "$_name.out" || fail "$_name: the gdb script did not finish: $(tail -5 "$_name.err")"
}

# Arming commands. watch SLOT ADDR-EXPR SIZE: arms a watch (generation 1).
watch() {
	_b="\$mms + $off_watch + $1 * $watch_stride"
	printf '%s\n' "set var *(unsigned long long *)($_b + $w_addr) = $2" \
		"set var *(unsigned long long *)($_b + $w_size) = $3" \
		"set var *(unsigned long long *)($_b + $w_generation) = *(unsigned long long *)($_b + $w_generation) + 1"
}
# break_op NAME: the operator name, byte by byte, and its terminator.
break_op() {
	printf '%s' "$1" | od -An -v -tu1 | tr -s ' ' '\n' | sed '/^$/d' | {
		_i=0
		while read -r _ch; do
			printf 'set var *(unsigned char *)($mms + %d) = %d\n' $((off_break_op + _i)) "$_ch"
			_i=$((_i + 1))
		done
		printf 'set var *(unsigned char *)($mms + %d) = 0\n' $((off_break_op + _i))
	}
}
arm="set var *(unsigned int *)(\$mms + $off_armed) = 1"
neighbour="(unsigned long long)&gdbwatch_blocks + 64"

stops() { grep -c '^STOP ' "$1.out" || true; }
stop_line() { sed -n "/^STOP n=$2 /p" "$1.out"; }

# expect_stop NAME N KEY=VALUE...: stop N of session NAME shows these.
expect_stop() {
	_l=$(stop_line "$1" "$2")
	[ -n "$_l" ] || fail "$1: no stop $2 (stops: $(stops "$1"))"
	_s=$1
	_k=$2
	shift 2
	for _kv in "$@"; do
		expect_eq "$_s stop $_k ${_kv%%=*}" "$(field "${_kv%%=*}" "$_l")" "${_kv#*=}"
	done
}

# --- nothing armed: no stop; the descriptor is there and names the log ----
session none ""
expect_eq "stops with nothing armed" "$(stops none)" 0
expect_eq "descriptor version" "$(sed -n 's/^VERSION //p' none.out)" 4
expect_eq "descriptor log path" "$(sed -n 's/^LOG //p' none.out)" "$(pwd -P)/none.mms"
summarize none.mms
expect_consistent none.mms.json
note "nothing armed: no stop; version 4; log_path is the log's absolute path"

# --- a watch on the neighbour block: one stop, at the overrun -------------
session watch "" "$(watch 0 "$neighbour" 64)" "$arm"
expect_eq "stops of the watch" "$(stops watch)" 1
expect_stop watch 1 reason=1 watch=0 launch=3 name=softmax step=1 launches=3 changes=1
[ -f watch.prev1 ] && [ -f watch.snap1 ] || fail "gdb could not dump the previous bytes and the snapshot"
expect_eq "size of the previous bytes" "$(wc -c <watch.prev1)" 64
# cmp -l: 1-based offsets of the differing bytes, then the octal bytes.
diff_bytes=$(cmp -l watch.prev1 watch.snap1 | awk '{ printf "%s%d:%s>%s", s, $1 - 1, $2, $3; s = " " }')
expect_eq "bytes changed by the overrun" "$diff_bytes" \
	"0:0>63 1:0>63 2:0>63 3:0>63 4:0>63 5:0>63 6:0>63 7:0>63"
summarize watch.mms
expect_consistent watch.mms.json
expect_key watch.mms.json steps 2
note "watch: one stop, launch 3 softmax in step 1, the 8 bytes 0..7 changed 0 -> 0x33"

# --- an unreadable block in slot 1: skipped, no crash; slot 0 still works -
session bad "" "$(watch 1 16 64)" "$(watch 0 "$neighbour" 64)" "$arm"
expect_eq "stops with an unreadable block armed" "$(stops bad)" 1
expect_stop bad 1 reason=1 watch=0 launch=3 name=softmax w1seen=1 w1snapshot=0
note "unreadable block: its slot marked (seen 1, snapshot 0) and skipped; the other slot stops"

# --- attribution outside a launch and in an enclosing one -----------------
session more more "$(watch 0 "$neighbour" 64)" "$arm"
expect_eq "stops of the watch (more)" "$(stops more)" 3
expect_stop more 1 reason=1 launch=3 name=softmax step=1 changes=1
# Written between launch 4 (embed) and 5: no launch, after embed.
expect_stop more 2 reason=1 launch=0 name=embed step=2 launches=5 changes=2
# Written in launch 7 (layer) before it launched 8 (inner).
expect_stop more 3 reason=1 launch=7 name=layer step=2 launches=8 changes=3
expect_eq "bytes changed outside a launch" \
	"$(cmp -l more.prev2 more.snap2 | awk '{ printf "%s%d", s, $1 - 1; s = " " }')" "16 17 18 19"
note "outside any launch: launch 0 after embed; nested: the enclosing launch 7 layer"

# --- threads: every change found once, none merged with the next --------
# Thread 2 writes a byte every 500 of its launches while 3 others launch
# too; whichever thread compares first reports a change (the hooks cannot
# tell who wrote), but each byte is a stop of its own: a thread compares
# at each of its own boundaries, waiting for the slot and for a stop in
# progress rather than skipping.
session threads threads "$(watch 0 "$neighbour" 64)" "$arm"
expect_eq "stops of the watch (threads)" "$(stops threads)" 4
expect_stop threads 4 reason=1 changes=4
for k in 1 2 3 4; do
	expect_eq "bytes changed at stop $k (threads)" \
		"$(cmp -l threads.prev$k threads.snap$k | awk '{ printf "%s%d", s, $1 - 1; s = " " }')" "$k"
done
note "threads: 4 changes by thread 2 among 4 threads, 4 stops of one byte each"

# --- break_op: every launch of matmul -------------------------------------
session op "" "$(break_op matmul)" "$arm"
expect_eq "stops at operator matmul" "$(stops op)" 2
expect_stop op 1 reason=2 launch=2 name=matmul step=1 launches=2
expect_stop op 2 reason=2 launch=5 name=matmul step=2 launches=5
note "break_op matmul: stops at launches 2 and 5"

# --- break_step: when step 2 begins ---------------------------------------
session step "" "set var *(unsigned long long *)(\$mms + $off_break_step) = 2" "$arm"
expect_eq "stops at step 2" "$(stops step)" 1
expect_stop step 1 reason=3 launch=0 name=softmax step=2 launches=3
note "break_step 2: one stop, after the 3 launches of step 1"

# --- break_end: when launch 2 ends, and launch 7 around launch 8 ---------
session end "" "set var *(unsigned long long *)(\$mms + $off_break_end) = 2" "$arm"
expect_eq "stops at the end of launch 2" "$(stops end)" 1
expect_stop end 1 reason=6 launch=2 name=matmul step=1 launches=2
session endout more "set var *(unsigned long long *)(\$mms + $off_break_end) = 7" "$arm"
expect_eq "stops at the end of launch 7" "$(stops endout)" 1
expect_stop endout 1 reason=6 launch=7 name=layer step=2 launches=8
note "break_end: one stop as launch 2 ends; launch 7 ends after launch 8 inside it"

# --- armed with nothing to do: still no stop ------------------------------
session idle "" "$arm"
expect_eq "stops when armed with no watch or break" "$(stops idle)" 0
note "armed, nothing set: no stop"

# --- the compare itself: every length and alignment ------------------------
# The hooks compare 128 bytes a round (AVX2) and the rest apart: a change
# in the first, middle or last byte of blocks of 1 byte to 68 KiB, at
# three alignments, is each one change (gdbwatch arms the descriptor
# itself, without gdb).
record sizes.mms "$prog" sizes >sizes.out 2>sizes.err || fail "gdbwatch sizes exited $?: $(cat sizes.err)"
expect_eq "changes counted by the compare (gdbwatch sizes)" "$(cat sizes.out)" "sizes ok"
note "sizes: first, middle and last byte changes found at 13 lengths and 3 alignments"
