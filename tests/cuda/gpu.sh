#!/bin/sh
# SPDX-License-Identifier: MIT
# gpu.sh: CUDA memory recorded from a real driver, where a GPU is: the
# known sequence of examples/cudamem (3 cudaMalloc, 1 cudaMallocAsync, 1
# cudaMallocManaged, 1 cudaMallocHost, 5 launches of the kernel `fill`, all
# freed but upload_weights' 2 MiB) recorded by msmemscope with stacks. The
# program prints what it does the same way recorded or not; the summary
# holds at least its device allocations (the runtime may add its own), the
# leaks report names the kept block by upload_weights on cuda:0, the dump
# has the 5 launches by name; what the driver keeps for itself to the end
# (its contexts and modules: some 120 MiB of heap and mappings on an H200
# with driver 580) is the runtime's, so the kept block is the one leak at
# exit. With --device=cuda:0 every device block is recorded, with a
# device the machine lacks none (the launches whole). What cudaMemGetInfo saw is printed beside
# the recorded figures (it counts pages, so it is not asserted). Skipped
# (77) where examples/cudamem is not built (no CUDA runtime at configure
# time) or cannot run (no GPU or no driver, as on CI).
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

gpu_record cudamem gpu.mms "CUDA runtime"
prog=$top_builddir/examples/cudamem
MiB=1048576

"$MMS_REPLAY" gpu.mms --summary --json >gpu.json 2>gpu.err || fail "msmemscope-replay exited $?: $(cat gpu.err)"
expect_consistent gpu.json
expect_ge "device allocations" "$(jget gpu.json kinds.device.allocs)" 6
expect_ge "device frees" "$(jget gpu.json kinds.device.frees)" 5
expect_ge "device bytes allocated" "$(jget gpu.json kinds.device.bytes_allocated)" $((32 * MiB))
expect_ge "device bytes live at the end" "$(jget gpu.json kinds.device.live_bytes)" $((2 * MiB))

"$MMS_REPLAY" gpu.mms --analysis leaks >leaks.txt 2>gpu.err || fail "leaks exited $?: $(cat gpu.err)"
# Its stack: the runtime's frames (cudaMalloc), then upload_weights.
grep -A6 '2.0 MiB in 1 block of CUDA memory on cuda:0' leaks.txt | grep -q 'upload_weights' ||
	fail "the kept 2 MiB block is not named by upload_weights: $(cat leaks.txt)"
"$MMS_REPLAY" gpu.mms --analysis leaks --json >leaks.json 2>gpu.err || fail "leaks exited $?: $(cat gpu.err)"
expect_eq "leaks at exit (the kept block alone)" "$(jget leaks.json at_exit.leaks)" 1
expect_ge "blocks the CUDA driver keeps for itself" "$(jget leaks.json runtime.by_kind.cuda.blocks)" 1
"$MMS_REPLAY" gpu.mms --export csv -o gpu.csv >/dev/null 2>gpu.err || fail "the csv export exited $?: $(cat gpu.err)"
expect_eq "launches of fill on device 0" \
	"$(grep -c '^[0-9]*,KERNEL_LAUNCH,KERNEL_LAUNCH,fill,[0-9]*,[0-9]*,[0-9]*,0,' gpu.csv || true)" 5
for kind in device async managed pinned; do
	n=$(grep -c "MALLOC,HAL,.*kind:$kind}" gpu.csv || true)
	expect_ge "MALLOC rows of kind $kind" "$n" 1
done
note "recorded: $(jget gpu.json kinds.device.allocs) device allocations, $(jget gpu.json kinds.device.bytes_allocated) bytes, $(jget gpu.json kinds.device.peak_bytes) at the peak, $(jget gpu.json kinds.device.live_bytes) live at the end"
note "the program: $(grep '^cudaMemGetInfo' native.out)"
note "the CUDA driver's own: $(jget leaks.json runtime.by_kind.cuda.blocks) blocks, $(jget leaks.json runtime.by_kind.cuda.bytes) bytes at exit"
# Recorded without stacks, the recorder marks what the driver allocates
# or maps itself, and what it allocates through a C library function
# (strdup, regcomp) by a short walk of the stack: the same one leak.
record gpu0.mms "$prog" >rec0.out 2>rec0.err || fail "cudamem exited $? under the recorder without stacks: $(cat rec0.err)"
summarize gpu0.mms
"$MMS_REPLAY" gpu0.mms --analysis leaks --json >leaks0.json 2>gpu.err || fail "leaks exited $?: $(cat gpu.err)"
expect_ge "blocks the CUDA driver keeps for itself, without stacks" "$(jget leaks0.json runtime.by_kind.cuda.blocks)" 1
expect_eq "leaks at exit without stacks (the kept block alone)" "$(jget leaks0.json at_exit.leaks)" 1
note "without stacks: $(jget leaks0.json at_exit.leaks) leaks at exit ($(jget leaks0.json at_exit.bytes) bytes), the driver's $(jget leaks0.json runtime.by_kind.cuda.blocks) blocks"
# --device (devices= in the configuration) on a real driver: cuda:0
# keeps every device allocation and free of the full recording, a device
# the machine lacks (cuda:7) none; host memory and the launches whole.
for d in "0 $(jget leaks0.json at_exit.leaks)" "7 0"; do
	set -- $d
	MSMEMSCOPE_CONFIG="devices=$1" record dev$1.mms "$prog" >dev.out 2>dev.err ||
		fail "cudamem exited $? with devices=$1: $(cat dev.err)"
	expect_eq "cudamem's output with devices=$1" "$(grep -v '^kept:\|MemGetInfo:' dev.out)" \
		"$(grep -v '^kept:\|MemGetInfo:' native.out)"
	summarize dev$1.mms
	expect_consistent dev$1.mms.json
	expect_key dev$1.mms.json devices_recorded "\"cuda:$1\""
	expect_key dev$1.mms.json by_kind.kernel_launch "$(jget gpu.json by_kind.kernel_launch)"
	"$MMS_REPLAY" dev$1.mms --analysis leaks --json >devleaks.json 2>gpu.err || fail "leaks exited $?: $(cat gpu.err)"
	expect_eq "leaks at exit with devices=$1" "$(jget devleaks.json at_exit.leaks)" "$2"
done
expect_eq "device allocations with devices=0" "$(jget dev0.mms.json kinds.device.allocs)" "$(jget gpu0.mms.json kinds.device.allocs)"
expect_eq "device frees with devices=0" "$(jget dev0.mms.json kinds.device.frees)" "$(jget gpu0.mms.json kinds.device.frees)"
expect_eq "device allocations with devices=7" "$(jget dev7.mms.json kinds.device.allocs)" 0
expect_eq "device frees with devices=7" "$(jget dev7.mms.json kinds.device.frees)" 0
note "--device: cuda:0 keeps all $(jget dev0.mms.json kinds.device.allocs) device allocations, cuda:7 none; the $(jget gpu.json by_kind.kernel_launch) launches whole"
echo "gpu.sh: ok"
