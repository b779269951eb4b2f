#!/bin/sh
# SPDX-License-Identifier: MIT
# leaks.sh: `memscope leaks' on tests/gdb/leaky at the end of each of its
# four steps: the loss records of the steps that ended (by stack:
# keep_big and keep_small, with their bytes and counts), `full' with the
# step under way, and `new' with only what grew since the last one.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session leaks "$progs/leaky" -ex 'break checkpoint' -ex run -ex 'memscope leaks' \
	-ex continue -ex 'memscope leaks' \
	-ex continue -ex 'memscope leaks' -ex 'memscope leaks full' \
	-ex continue -ex 'memscope leaks new' -ex 'memscope leaks full new' -ex 'memscope leaks new' \
	-ex 'set memscope top 1' -ex 'memscope leaks'
# At the end of step 3, steps 1 and 2 ended: keep_big 4096 bytes in 1
# block, keep_small 300 bytes in 3; with step 3's, keep_big holds 8192.
expect leaks 'memscope: live blocks allocated in steps 1 to 2 (step 3 is under way): 4,396 bytes (4.3 KiB) in 4 blocks, 2 loss records' "the records of steps 1 and 2"
expect leaks 'loss record 1 of 2: 4,096 bytes (4.0 KiB) in 1 block;' "keep_big's record"
expect leaks 'loss record 2 of 2: 300 bytes in 3 blocks;' "keep_small's record"
expect leaks 'loss record 1 of 2: 8,192 bytes (8.0 KiB) in 2 blocks;' "keep_big's record with step 3 (full)"
expect leaks '8,192 bytes (8.0 KiB) in 2 blocks (+4,096 bytes, +1 block)' "what grew in step 3 (new)"
expect leaks '400 bytes in 4 blocks (+100 bytes, +1 block)' "what grew in step 4 (full new)"
expect leaks 'no loss record grew since the last' "nothing new the second time"
compare leaks
