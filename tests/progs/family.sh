#!/bin/sh
# SPDX-License-Identifier: MIT
# family.sh: every interposed allocator and mapping function, called with
# known sizes (tests/progs/family.c), must be counted by valgrind's rules:
# a realloc of a block is one allocation and one free (moved or not),
# realloc(NULL, n) an allocation, realloc(p, 0) a free, free(NULL) nothing;
# pvalloc counts the page it returns. mmap, mremap and munmap are counted
# under kinds.mmap (mremap as one unmap and one map). The figures are on top
# of what the C runtime allocates by itself (the program run with "none").
. "$top_srcdir/tests/progs/lib.sh"

page=$(getconf PAGESIZE)
record base.mms "$MMS_PROGS/family" none || fail "family none exited $?"
summarize base.mms
b=base.mms.json
expect_consistent $b

for clock in tsc counter; do
	log=family-$clock.mms
	if [ $clock = counter ]; then
		MSMEMSCOPE_CLOCK=counter record $log "$MMS_PROGS/family" >$log.out || fail "family exited $?"
	else
		record $log "$MMS_PROGS/family" >$log.out || fail "family exited $?"
	fi
	expect_eq "family output" "$(cat $log.out)" "family done"
	summarize $log
	j=$log.json
	expect_consistent $j
	# sizes: malloc 10x100, calloc 5x200, realloc 64 -> 4096 -> 1000 -> 0,
	# reallocarray 32 -> 64, posix_memalign 2x100, aligned_alloc 128,
	# memalign 200, valloc 300, pvalloc one page, 2 leaked blocks of 333.
	expect_key $j allocs $(($(jget $b allocs) + 28))
	expect_key $j frees $(($(jget $b frees) + 26))
	expect_key $j bytes_allocated $(($(jget $b bytes_allocated) + 8084 + page + 666))
	expect_key $j live_blocks $(($(jget $b live_blocks) + 2))
	expect_key $j live_bytes $(($(jget $b live_bytes) + 666))
	# The most live at once: the six aligned blocks, 828 B and a page.
	expect_key $j peak_bytes $(($(jget $b peak_bytes) + 828 + page))
	# Mappings: 3 x 8192, mremap of one to 16384, all unmapped.
	expect_key $j kinds.mmap.allocs $(($(jget $b kinds.mmap.allocs) + 4))
	expect_key $j kinds.mmap.frees $(($(jget $b kinds.mmap.frees) + 4))
	expect_key $j kinds.mmap.bytes_allocated $(($(jget $b kinds.mmap.bytes_allocated) + 3 * 8192 + 16384))
	expect_key $j kinds.mmap.live_bytes "$(jget $b kinds.mmap.live_bytes)"
	expect_key $j kinds.mmap.peak_bytes $(($(jget $b kinds.mmap.peak_bytes) + 8192 * 2 + 16384))
	note "$clock: 28 allocations, 26 frees, $((8084 + page + 666)) bytes, mappings 4/4: as expected"
done

