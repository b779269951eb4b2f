#!/bin/sh
# SPDX-License-Identifier: MIT
# ownertag.sh: owner tags given after the fact (msmemscope_owner_tag,
# format 5) over tests/progs/ownertag: decompose at the end and at the peak
# names the blocks by the tags they were given later, by start address or
# by an address inside; a tag of no block changes nothing; the event list
# shows each tag with its block; a seek past the tags (the checkpoint
# index) keeps them; the dump's MALLOC rows name the last owner.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

prog=$MMS_PROGS/ownertag
[ -x "$prog" ] || fail "ownertag is not built: $prog"
record t.mms "$prog" >t.out || fail "ownertag exited $?: $(cat t.out)"

"$MMS_REPLAY" t.mms --analysis decompose >t.txt 2>t.err || fail "--analysis decompose exited $?: $(cat t.err)"
cat >t.expected <<'TXT'
decompose at the end of the log (after event 12): 7.0 KiB live in 3 blocks
         bytes   blocks        %  kind, owner levels
          7168        3  100.00%  HOST
          4096        1   57.14%    weight
          2048        1   28.57%    gradient
          1024        1   14.29%    activation

decompose at the peak (after event 5): 14.0 KiB live in 3 blocks
         bytes   blocks        %  kind, owner levels
         14336        3  100.00%  HOST
          8192        1   57.14%    (no owner)
          4096        1   28.57%    weight
          2048        1   14.29%    gradient
TXT
diff -u t.expected t.txt >t.diff || fail "the decompose report differs from the expected one: $(cat t.diff)"

# The tags in the event list: the block each names, or none.
"$MMS_REPLAY" t.mms --from 7 --to 11 >l.txt 2>l.err || fail "--from 7 --to 11 exited $?: $(cat l.err)"
grep -q "^#7  .* OWNER  *tag  *0x[0-9a-f]* 'weight' (allocation 1)$" l.txt || fail "event 7: $(cat l.txt)"
grep -q "^#8  .* OWNER  *tag  *0x[0-9a-f]* 'gradient' (allocation 2)$" l.txt || fail "event 8: $(cat l.txt)"
grep -q "^#11 .* OWNER  *tag  *0x[0-9a-f]* 'nothing' (no live block)$" l.txt || fail "event 11: $(cat l.txt)"

# Through the seek index: after event 10, the three tagged blocks.
"$MMS_REPLAY" t.mms --analysis decompose --at-event 10 >e.txt 2>e.err || fail "--at-event 10 exited $?: $(cat e.err)"
cat >e.expected <<'TXT'
decompose after event 10: 7.0 KiB live in 3 blocks
         bytes   blocks        %  kind, owner levels
          7168        3  100.00%  HOST
          4096        1   57.14%    weight
          2048        1   28.57%    gradient
          1024        1   14.29%    activation
TXT
diff -u e.expected e.txt >e.diff || fail "decompose --at-event 10 differs: $(cat e.diff)"

# The dump's MALLOC rows carry the owner each block ends with, as
# msMemScope's (it writes them once the block is freed): the export reads
# the log twice when it has tags.
"$MMS_REPLAY" t.mms --export csv -o t.csv >x.out 2>x.err || fail "--export csv exited $?: $(cat x.err)"
for want in 'allocation_id:1,addr:0x[0-9a-f]*,size:4096,owner:weight}' \
	'allocation_id:2,addr:0x[0-9a-f]*,size:2048,owner:gradient}' \
	'allocation_id:3,addr:0x[0-9a-f]*,size:8192}' \
	'allocation_id:4,addr:0x[0-9a-f]*,size:1024,owner:activation}'; do
	grep -q "^[0-9]*,MALLOC,HOST,.*,\"{$want\"," t.csv || fail "no MALLOC row with {$want: $(grep MALLOC t.csv)"
done
