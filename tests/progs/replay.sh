#!/bin/sh
# SPDX-License-Identifier: MIT
# replay.sh: msmemscope-replay's queries on a recorded program with known
# steps (tests/progs/stepper.c): --step N, --event N, --from/--to, the
# interactive stepper fed on stdin, the index beside the log, seeking
# against replaying from the start, and the errors a user can make.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

prog=$MMS_PROGS/stepper
seekcheck=$top_builddir/tests/unit/seekcheck
src=$top_srcdir/tests/progs/stepper.c
[ -x "$prog" ] || fail "not built: $prog"
[ -x "$seekcheck" ] || fail "not built: $seekcheck"

MSMEMSCOPE_CONFIG="call_stack=8" record st.mms "$prog" >prog.out || fail "stepper exited $? under the recorder"
line=$(grep -n 'stepper.c: cache_alloc line' "$src" | cut -d: -f1)
keep2=$(sed -n 's/^keep2 \(0x[0-9a-f]*\) keep3.*/\1/p' prog.out)
[ -n "$keep2" ] || fail "stepper printed no addresses: $(cat prog.out)"

summarize st.mms
expect_key st.mms.json steps 5
expect_key st.mms.json live_bytes 5000

# py CODE FILE...: runs a python check; a failed assert names the figure.
py() {
	code=$1
	shift
	"$MMS_PYTHON" -c "import json, sys
$code" "$@" || fail "check failed (see above)"
}

# --step 3: the block kept by 'work', its stack, the launches, the owners.
"$MMS_REPLAY" st.mms --step 3 --json >step3.json 2>step3.err || fail "--step 3 --json exited $?: $(cat step3.err)"
py "
d = json.load(open(sys.argv[1])); line = int(sys.argv[2])
def eq(what, got, want):
    assert got == want, '%s: got %r, want %r' % (what, got, want)
eq('step', d['step'], 3)
eq('steps', d['steps'], 5)
eq('begin', d['begin'], 25)
eq('end', d['end'], 37)
eq('live bytes at the end', d['state']['live_bytes'], 4096 + 2000 + 3000)
eq('peak in the step', d['peak_bytes'], 4096 + 2000 + 3000 + 64)
eq('allocs', d['allocs'], 3)
eq('frees', d['frees'], 2)
eq('delta', d['delta_bytes'], 3000)
eq('kept bytes', d['kept']['bytes'], 3000)
eq('kept groups', len(d['kept']['groups']), 1)
top = d['kept']['groups'][0]['stack'][0]
eq('kept function', top['function'], 'cache_alloc')
eq('kept line', top['line'], line)
assert top['file'].endswith('stepper.c'), top['file']
eq('launches', [(l['name'], l['launch']) for l in d['launches']], [('load', 5), ('work', 6)])
w = d['launches'][1]
eq('work allocs/frees/delta', (w['allocs'], w['frees'], w['delta_bytes']), (2, 1, 3000))
eq('owners', [(o['owner'], o['bytes']) for o in d['owners']], [('cache', 5000), ('model', 4096)])
" step3.json "$line"
"$MMS_REPLAY" st.mms --step 3 >step3.txt 2>&1 || fail "--step 3 exited $?"
for want in "step 3 of 5 (events #25..#36)" "Allocated in this step and still live at its end: 1 block, 2.9 KiB" \
	"cache_alloc (" "stepper.c:$line)" "      6  work" "cache"; do
	grep -qF -- "$want" step3.txt || fail "--step 3 does not show '$want':
$(cat step3.txt)"
done
note "--step 3: 3000 bytes kept by work (launch 6) at stepper.c:$line, peak 9160, owners cache/model"

# --event N: the event and the state after it.
"$MMS_REPLAY" st.mms --event 31 --json >ev31.json 2>ev.err || fail "--event 31 exited $?: $(cat ev.err)"
py "
d = json.load(open(sys.argv[1])); e = d['event']; b = e['block']
assert (e['id'], e['kind'], e['size']) == (31, 'MALLOC', 3000), e
assert (b['owner'], b['op'], b['op_launch'], b['step'], b['allocation_id']) == ('cache', 'work', 6, 3, 8), b
assert d['state']['position'] == 32 and d['state']['step'] == 3, d['state']
" ev31.json
"$MMS_REPLAY" st.mms --event 35 >ev35.txt 2>&1 || fail "--event 35 exited $?"
grep -q "OP_LAUNCH *end *'work'" ev35.txt || fail "--event 35 does not name the operator that ended: $(cat ev35.txt)"

# --from/--to: one line per event, both ends included.
n=$("$MMS_REPLAY" st.mms --from 12 --to 24 | wc -l)
[ "$n" = 13 ] || fail "--from 12 --to 24 printed $n lines, want 13"
n=$("$MMS_REPLAY" st.mms --from 40 --json | wc -l)
[ "$n" = 8 ] || fail "--from 40 --json printed $n lines, want 8 (events 40..47)"

# The stepper, fed on stdin, answering in JSON one line per command.
interior=$(printf '0x%x' $((keep2 + 10)))
printf '%s\n' "goto step 4" "leaks" "info block $interior" "op work" "where" "next 2" "back 1" \
	"goto event 46" "event 46" "block $interior" "info block 0x1" "bogus" "step" "quit" "where" >steps.in
"$MMS_REPLAY" st.mms -i --json <steps.in >steps.json 2>steps.err && rc=0 || rc=$?
# The commands ran: a bad one answers {"error": ...}, the status stays 0.
[ "$rc" = 0 ] || fail "the stepper exited $rc after a bad command, want 0 (its commands ran): $(cat steps.err)"
py "
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 13, 'want 13 answers (quit stops before the last where), got %d' % len(lines)
start, leaks, blk, op, where, nxt, back, ev46, ev46b, blkb, nob, bogus, step = lines
assert start['position'] == 37 and start['step'] == 4, start
assert leaks['bytes'] == 2000 and leaks['groups'][0]['stack'][0]['function'] == 'cache_alloc', leaks
assert blk['addr'] == sys.argv[2] and blk['size'] == 2000 and blk['step'] == 2, blk
assert blk['owner'] == 'cache' and blk['free_event'] is None, blk
assert op['event']['id'] == 41 and op['event']['name'] == 'work', op
assert where['op'] == 'work' and where['op_launch'] == 8, where
assert nxt['applied'] == 2 and nxt['last_event']['id'] == 43, nxt
assert back['event']['id'] == 42, back
assert ev46['event']['kind'] == 'FREE' and ev46['where']['live_bytes'] == 5000, ev46
assert ev46b == ev46, ('event N is goto event N', ev46b, ev46)
assert blkb['addr'] == blk['addr'] and blkb['size'] == blk['size'] and blkb['step'] == blk['step'], (blkb, blk)
assert 'error' in nob and 'error' in bogus and 'bogus' in bogus['error'], (nob, bogus)
assert step['position'] == 48 and step['step'] == 5, step
" steps.json "$keep2"

# The same in text, as a person reads it.
printf 'goto end\ninfo block %s\nhelp\n' "$(sed -n 's/.*"addr":"\(0x[0-9a-f]*\)".*/\1/p' ev31.json | head -1)" |
	"$MMS_REPLAY" st.mms -i >text.out 2>&1 || fail "the stepper exited $?: $(cat text.out)"
for want in "live block 0x" "3000 bytes (2.9 KiB), HOST, allocation 8" "operator work (launch 6), owner cache" \
	"cache_alloc (" "goto step N" "info block ADDR"; do
	grep -qF -- "$want" text.out || fail "the stepper's text does not show '$want':
$(cat text.out)"
done
# A command typed with an escape sequence in it is quoted back without it:
# the terminal is not the input's to drive.
printf 'x\033]0;title\007y\n' | "$MMS_REPLAY" st.mms -i >esc.out 2>&1 || fail "the stepper exited $?: $(cat esc.out)"
grep -qF "unknown command 'x?]0;title?y'" esc.out || fail "the stepper does not quote the bad command: $(od -c esc.out | head)"
LC_ALL=C grep -q "$(printf '\033')" esc.out && fail "the stepper echoed an escape character: $(od -c esc.out | head)"
note "stepper: goto, leaks (2000 bytes of step 2 at the start of step 4), info block, op, next, back, event N and block ADDR (the words of --event); a bad command's control characters quoted as ?"

# The index: written beside the log on first use (mode 0640), reused,
# rebuilt when the log changes, never written over a file that is not one.
[ -f st.mms.idx ] || fail "no index st.mms.idx after the queries"
[ "$(stat -c %a st.mms.idx)" = 640 ] || fail "the index's mode is $(stat -c %a st.mms.idx)"
cp st.mms copy.mms
"$MMS_REPLAY" copy.mms --no-index --step 2 >/dev/null 2>&1 || fail "--no-index --step 2 failed"
[ ! -e copy.mms.idx ] || fail "--no-index wrote an index"
"$MMS_REPLAY" copy.mms --step 2 >/dev/null 2>&1 || fail "--step 2 on the copy failed"
[ -f copy.mms.idx ] || fail "no index for copy.mms"
before=$(stat -c %Y.%s copy.mms.idx)
sleep 1
touch copy.mms
"$MMS_REPLAY" copy.mms --step 2 >/dev/null 2>&1 || fail "--step 2 after touching the log failed"
[ "$(stat -c %Y.%s copy.mms.idx)" != "$before" ] || fail "the index was not rebuilt after the log changed"
printf 'my notes\n' >copy.mms.idx
"$MMS_REPLAY" copy.mms --step 2 >/dev/null 2>idx.err || fail "--step 2 with a foreign .idx failed: $(cat idx.err)"
grep -q "a file that is not an index is in the way" idx.err || fail "no warning about the foreign .idx: $(cat idx.err)"
[ "$(cat copy.mms.idx)" = "my notes" ] || fail "the foreign copy.mms.idx was overwritten"

# Seeking equals replaying from the start, here and on eight threads.
"$seekcheck" st.mms 300 1 7 || fail "seekcheck on the stepper log"
record t8.mms "$MMS_PROGS/threads8" 8 20000 100 >/dev/null || fail "threads8 exited $?"
"$seekcheck" t8.mms 300 5000 11 || fail "seekcheck on the threads8 log"
# Mappings cut and moved (mmap, munmap, mremap), pools, owners, ranges.
record family.mms "$MMS_PROGS/family" >/dev/null || fail "family exited $?"
"$seekcheck" family.mms 300 3 13 || fail "seekcheck on the family log"
record ranges.mms "$MMS_PROGS/api" ranges 6 >/dev/null || fail "api ranges 6 exited $?"
"$seekcheck" ranges.mms 300 2 17 || fail "seekcheck on the api ranges log"

# Mistakes get a message and the right exit status.
expect_fail() {
	want_rc=$1
	want_msg=$2
	shift 2
	"$@" >err.out 2>&1 && rc=0 || rc=$?
	[ "$rc" = "$want_rc" ] || fail "$*: exit $rc, want $want_rc: $(cat err.out)"
	grep -qF -- "$want_msg" err.out || fail "$*: no '$want_msg' in: $(cat err.out)"
}
expect_fail 1 "no step 9: the log has 5 steps" "$MMS_REPLAY" st.mms --step 9
expect_fail 1 "no event 480: the log has 48 events (0 to 47)" "$MMS_REPLAY" st.mms --event 480
expect_fail 1 "not a msmemscope log: not a regular file (a file of /proc or /sys)" "$MMS_REPLAY" /proc/self/maps
expect_fail 2 "steps count from 1" "$MMS_REPLAY" st.mms --step 0
expect_fail 2 "--to goes with --from" "$MMS_REPLAY" st.mms --to 3
expect_fail 2 "one query at a time: --step and --event" "$MMS_REPLAY" st.mms --step 1 --event 2
expect_fail 2 "--step wants a whole number, not 'x'" "$MMS_REPLAY" st.mms --step x
expect_fail 2 "--step wants a whole number up to 18446744073709551615, not '99999999999999999999'" "$MMS_REPLAY" st.mms --step 99999999999999999999
note "index reused, rebuilt when stale, foreign .idx left alone; seeks match full replays; errors explained"
