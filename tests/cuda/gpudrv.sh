#!/bin/sh
# SPDX-License-Identifier: MIT
# gpudrv.sh: the driver API called by name (a program linked with -lcuda)
# and the runtime beside it, recorded from a real driver, where a GPU is:
# examples/cudadrv's sequence (cuMemAlloc 5 and 6 MiB, cuMemAllocManaged 7
# MiB, cuMemAllocAsync 9 MiB, cuMemHostAlloc 3 MiB, cuArray3DCreate of 512
# KiB, cudaMalloc 11 MiB by the runtime, 5 launches of `fill` by
# cuLaunchKernel; all freed but leaky_driver's 6 MiB). Each of its blocks
# is in the log exactly once (its size is used by no other call of the
# program's: the GOT's wrappers and the runtime's pointers do not both
# record one call), freed where the program freed it; the 6 MiB block is
# the one leak at exit, named by leaky_driver on cuda:0. What
# cuMemGetInfo saw is printed beside the recorded figures (pages: not
# asserted). Skipped (77) where examples/cudadrv is not built (no cuda.h,
# driver stub or runtime at configure time), where the driver is not
# installed (the loader finds no libcuda.so.1, as on CI) or no GPU is.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

gpu_record cudadrv drv.mms "cuda.h, lib64/stubs/libcuda.so or CUDA runtime"
MiB=1048576

"$MMS_REPLAY" drv.mms --summary --json >drv.json 2>drv.err || fail "msmemscope-replay exited $?: $(cat drv.err)"
expect_consistent drv.json
"$MMS_REPLAY" drv.mms --export csv -o drv.csv >/dev/null 2>drv.err || fail "the csv export exited $?: $(cat drv.err)"
# rows KIND EVENT SIZE: the csv rows of that event (MALLOC, FREE) of a
# block of that size and kind.
rows() { grep -c "^[0-9]*,$2,HAL,.*,\"{allocation_id:[0-9]*,addr:0x[0-9a-f]*,size:$3,kind:$1}\"," drv.csv || true; }
for b in "device $((5 * MiB)) 1" "device $((6 * MiB)) 0" "managed $((7 * MiB)) 1" "async $((9 * MiB)) 1" \
	"pinned $((3 * MiB)) 1" "array $((512 * 256 * 4)) 1" "device $((11 * MiB)) 1"; do
	# shellcheck disable=SC2086 # three words
	set -- $b
	expect_eq "MALLOC rows of the $2-byte $1 block" "$(rows "$1" MALLOC "$2")" 1
	expect_eq "FREE rows of the $2-byte $1 block" "$(rows "$1" FREE "$2")" "$3"
done
expect_eq "launches of fill on device 0" \
	"$(grep -c '^[0-9]*,KERNEL_LAUNCH,KERNEL_LAUNCH,fill,[0-9]*,[0-9]*,[0-9]*,0,' drv.csv || true)" 5

"$MMS_REPLAY" drv.mms --analysis leaks >leaks.txt 2>drv.err || fail "leaks exited $?: $(cat drv.err)"
grep -A6 '6.0 MiB in 1 block of CUDA memory on cuda:0' leaks.txt | grep -q 'leaky_driver' ||
	fail "the kept 6 MiB block is not named by leaky_driver: $(cat leaks.txt)"
"$MMS_REPLAY" drv.mms --analysis leaks --json >leaks.json 2>drv.err || fail "leaks exited $?: $(cat drv.err)"
expect_eq "leaks at exit (the kept block alone)" "$(jget leaks.json at_exit.leaks)" 1
note "recorded: $(jget drv.json kinds.device.allocs) device allocations, $(jget drv.json kinds.device.bytes_allocated) bytes, $(jget drv.json kinds.device.peak_bytes) at the peak, $(jget drv.json kinds.device.live_bytes) live at the end"
note "the program: $(grep '^cuMemGetInfo' native.out)"
note "the CUDA driver's own: $(jget leaks.json runtime.by_kind.cuda.blocks) blocks, $(jget leaks.json runtime.by_kind.cuda.bytes) bytes at exit"
echo "gpudrv.sh: ok"
