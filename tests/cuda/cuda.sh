#!/bin/sh
# SPDX-License-Identifier: MIT
# cuda.sh: CUDA device memory captured at the driver's entry points
# (hooks/cuda.c, hooks/dlsym.c), against driver/libcuda.so.1, a test double
# of the driver (fakecuda.c): cudaprog reaches it as the CUDA runtime does
# and makes a known sequence of calls (see cudaprog.c). The program's
# output, errno after each driver call and exit status are the same under
# the recorder; dlsym() keeps its meaning for everyone (dlsymnext); the log
# holds the device events and kernel launches, with the device ordinal
# the double reports (1), or for VMM mappings the device of the handle (2).
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

cuda=$top_builddir/tests/cuda
for p in cudaprog drvprog drvplug libdrvuse.so dlsymnext driver/libcuda.so.1; do
	[ -e "$cuda/$p" ] || fail "not built: $cuda/$p"
done

# The figures of cudaprog's sequence, on device 1 (the context's) and on
# device 2 (the VMM handles'), in chunks of 2 MiB. The recorder's view of
# the VMM part: 5 mappings (3 + c0 again + 3 chunks at c1..c3); the middle
# chunk's unmap frees the 3-chunk mapping and allocates its two ends again
# (2 allocations, 1 free); the failing unmap of c3 and the chunk past the
# reservation frees c3 before the call and allocates it again after
# (1 and 1); 5 successful unmaps free the rest but c0.
dev1_allocs=10           # 4 device, 3 async, 1 managed, 2 pinned
dev1_frees=9             # all but leaky_upload's
vmm_allocs=8             # 5 mappings, 2 ends, 1 allocated again
vmm_frees=7              # c0; c1 and c2 (one call); the 3-chunk mapping; c3
                         # before the failing call; c1 and c3
dev_allocs=$((dev1_allocs + vmm_allocs))
dev_frees=$((dev1_frees + vmm_frees))
dev_bytes=24266752       # 1071104 device + 114688 async + 2097152 managed + 12288 pinned
                         # + 20971520 vmm (10 chunks)
dev_live_bytes=2101248   # leaky_upload's block, and c0 mapped by grow_segment
kernels=6                # vector_add 3 times, reduce_sum, one unnamed, scale_rows
                         # (a library's kernel: named by cuKernelGetName)

# dlsym() as the loader defines it: RTLD_NEXT relative to the caller.
LD_LIBRARY_PATH=$cuda "$cuda/dlsymnext" >next.native || fail "dlsymnext exited $? on its own"
grep -q '^next which=2 cu_which=20$' next.native || fail "unexpected native dlsymnext output: $(cat next.native)"
LD_LIBRARY_PATH=$cuda record next.mms "$cuda/dlsymnext" >next.rec || fail "dlsymnext exited $? under the recorder"
expect_eq "dlsymnext output under the recorder" "$(cat next.rec)" "$(cat next.native)"
note "dlsym(RTLD_NEXT, ...) finds the next definition after its caller, recorded or not"

# Without a driver: the same failure either way.
st=0
"$cuda/cudaprog" >nodrv.native 2>&1 || st=$?
rst=0
record nodrv.mms "$cuda/cudaprog" >nodrv.rec 2>&1 || rst=$?
expect_eq "cudaprog without a driver: exit status under the recorder" "$rst" "$st"
expect_eq "cudaprog without a driver: output under the recorder" "$(cat nodrv.rec)" "$(cat nodrv.native)"

# With the double: the same accounting, no driver call failed or lost
# its errno.
LD_LIBRARY_PATH=$cuda/driver "$cuda/cudaprog" >prog.native || fail "cudaprog exited $? on its own"
grep -q '^launches=6 failures=0$' prog.native || fail "unexpected native cudaprog output: $(cat prog.native)"
for config in "" "call_stack=16"; do
	log=prog${config:+-stacks}.mms
	MSMEMSCOPE_CONFIG=$config LD_LIBRARY_PATH=$cuda/driver record $log "$cuda/cudaprog" >prog.rec ||
		fail "cudaprog exited $? under the recorder (${config:-default configuration})"
	[ -s $log ] || fail "no log written (${config:-default configuration})"
	expect_eq "cudaprog output under the recorder (${config:-default configuration})" "$(cat prog.rec)" \
		"$(cat prog.native)"
done
note "cudaprog: the same output and status, errno kept, under the recorder"

# The log: the summary's device figures, the dump's rows, the leak.
"$MMS_REPLAY" prog.mms --summary --json >prog.json 2>prog.err || fail "msmemscope-replay exited $?: $(cat prog.err)"
j=prog.json
expect_consistent $j
expect_key $j by_kind.kernel_launch $kernels
expect_key $j kinds.device.allocs $dev_allocs
expect_key $j kinds.device.frees $dev_frees
expect_key $j kinds.device.bytes_allocated $dev_bytes
expect_key $j kinds.device.live_bytes $dev_live_bytes
note "$dev_allocs device allocations of $dev_bytes bytes, $dev_frees frees, $dev_live_bytes bytes left, $kernels kernels"

# msMemScope's dump: device memory is Event Type HAL, Device Id the
# ordinal, Attr its kind; the kernels are KERNEL_LAUNCH rows by name.
"$MMS_REPLAY" prog-stacks.mms --export csv -o prog.csv >/dev/null 2>prog.err ||
	fail "the csv export exited $?: $(cat prog.err)"
rows() { grep -c "$1" prog.csv || true; }
expect_eq "HAL MALLOC rows on device 1" "$(rows '^[0-9]*,MALLOC,HAL,N/A,[0-9]*,[0-9]*,[0-9]*,1,')" $dev1_allocs
expect_eq "HAL FREE rows on device 1" "$(rows '^[0-9]*,FREE,HAL,N/A,[0-9]*,[0-9]*,[0-9]*,1,')" $dev1_frees
expect_eq "HAL MALLOC rows on device 2" "$(rows '^[0-9]*,MALLOC,HAL,N/A,[0-9]*,[0-9]*,[0-9]*,2,')" $vmm_allocs
expect_eq "HAL FREE rows on device 2" "$(rows '^[0-9]*,FREE,HAL,N/A,[0-9]*,[0-9]*,[0-9]*,2,')" $vmm_frees
for kind in device:4 async:3 managed:1 pinned:2 vmm:$vmm_allocs; do
	expect_eq "MALLOC rows of kind ${kind%:*}" "$(rows "MALLOC,HAL,.*kind:${kind%:*}}")" "${kind#*:}"
done
expect_eq "vector_add launches on device 1" \
	"$(rows '^[0-9]*,KERNEL_LAUNCH,KERNEL_LAUNCH,vector_add,[0-9]*,[0-9]*,[0-9]*,1,')" 3
expect_eq "scale_rows launches (a library's kernel) on device 1" \
	"$(rows '^[0-9]*,KERNEL_LAUNCH,KERNEL_LAUNCH,scale_rows,[0-9]*,[0-9]*,[0-9]*,1,')" 1
expect_eq "host rows' Device Id" "$(rows '^[0-9]*,MALLOC,HOST,N/A,[0-9]*,[0-9]*,[0-9]*,host,')" \
	"$(rows '^[0-9]*,MALLOC,HOST,')"
# The same in SQLite, and the blocks table names the device.
if command -v sqlite3 >/dev/null 2>&1; then
	"$MMS_REPLAY" prog-stacks.mms --export db -o prog.db >/dev/null 2>prog.err ||
		fail "the db export exited $?: $(cat prog.err)"
	expect_eq "SQLite HAL MALLOC rows on device 1" \
		"$(sqlite3 prog.db "select count(*) from memscope_dump where Event = 'MALLOC' and \"Event Type\" = 'HAL' and \"Device Id\" = '1'")" \
		"$(rows '^[0-9]*,MALLOC,HAL,N/A,[0-9]*,[0-9]*,[0-9]*,1,')"
	expect_eq "SQLite KERNEL_LAUNCH rows on device 1" \
		"$(sqlite3 prog.db "select count(*) from memscope_dump where Event = 'KERNEL_LAUNCH' and \"Device Id\" = '1'")" "$kernels"
	expect_eq "SQLite device blocks on cuda:1" \
		"$(sqlite3 prog.db "select count(*) from blocks where kind = 'DEVICE' and pool = 'cuda:1'")" \
		"$(rows '^[0-9]*,MALLOC,HAL,N/A,[0-9]*,[0-9]*,[0-9]*,1,')"
else
	note "sqlite3 is not installed: the SQLite dump is not checked"
fi
note "the dump: $dev1_allocs HAL MALLOC rows on device 1, $vmm_allocs of kind vmm on device 2, and the kernels by name"

# A kernel-level compare names each kernel's device, from two logs and
# from two dumps alike.
for input in prog.mms,prog-stacks.mms prog.csv,prog.csv; do
	rm -rf cmp
	"$MMS_LAUNCHER" --compare --input=$input --level=kernel --output=cmp >cmp.out 2>&1 ||
		fail "the kernel compare of $input exited $?: $(cat cmp.out)"
	expect_eq "compare rows of $input: vector_add on device 1" \
		"$(grep -c '^KERNEL_LAUNCH,vector_add,1,' cmp/compare/memory_compare_*.csv)" 3
	expect_eq "compare rows of $input on the host" "$(grep -c '^KERNEL_LAUNCH,.*,host,' cmp/compare/memory_compare_*.csv)" 0
done
note "the kernel compare: Device Id 1 from logs and from dumps"

# The leaks: the two blocks still allocated, named by their stacks, as
# device memory of cuda:1 and of cuda:2 (the VMM handle's device).
"$MMS_REPLAY" prog-stacks.mms --analysis leaks >leaks.txt 2>prog.err || fail "leaks exited $?: $(cat prog.err)"
grep -q '4.0 KiB in 1 block of CUDA memory on cuda:1' leaks.txt || fail "no device leak group in: $(cat leaks.txt)"
grep -A1 'of CUDA memory on cuda:1' leaks.txt | grep -q 'leaky_upload (.*cudaprog.c:' ||
	fail "the device leak is not named by leaky_upload: $(cat leaks.txt)"
# crt1's _start has no line table; main's ends where it begins (main is in
# .text.startup at -O2): its frame must not take main's last line.
grep '_start (.*cudaprog\.c:' leaks.txt && fail "_start given a line of cudaprog.c: $(grep _start leaks.txt | head -1)"
grep -q '2.0 MiB in 1 block of CUDA memory on cuda:2' leaks.txt || fail "no VMM leak group in: $(cat leaks.txt)"
grep -A2 'of CUDA memory on cuda:2' leaks.txt | grep -q '#1  grow_segment (.*cudaprog.c:' ||
	fail "the VMM leak is not named by grow_segment: $(cat leaks.txt)"
# What the driver keeps for itself to the end (the double's first cuInit:
# a malloc'd block, a mapping, a strdup()) is the runtime's, not the
# program's leak: the recorder marks what the driver allocated or mapped
# itself, with or without stacks, and without stacks what it allocated
# through a C library function by a short walk of the stack; with stacks
# the replay reads that off the recorded stack.
"$MMS_REPLAY" prog.mms --analysis leaks --json >leaks0.json 2>prog.err || fail "leaks exited $?: $(cat prog.err)"
expect_eq "the driver's blocks kept at exit, recorded without stacks" "$(jget leaks0.json runtime.by_kind.cuda.blocks)" 3
expect_eq "the driver's bytes kept at exit, recorded without stacks" "$(jget leaks0.json runtime.by_kind.cuda.bytes)" \
	$((4000 + 65536 + 43))
expect_eq "leaks at exit without stacks (the two device blocks alone)" "$(jget leaks0.json at_exit.leaks)" 2
"$MMS_REPLAY" prog-stacks.mms --analysis leaks --json >leaks1.json 2>prog.err || fail "leaks exited $?: $(cat prog.err)"
expect_eq "the driver's blocks kept at exit, recorded with stacks" "$(jget leaks1.json runtime.by_kind.cuda.blocks)" 3
expect_eq "leaks at exit with stacks (the two device blocks alone)" "$(jget leaks1.json at_exit.leaks)" 2
grep -q "the CUDA driver's (libcuda), for itself" leaks.txt || fail "the report does not say what the driver keeps: $(cat leaks.txt)"
note "the driver's own memory at exit (3 blocks, with or without stacks) is the runtime's; the leaks are the device blocks"
"$MMS_REPLAY" prog-stacks.mms --analysis decompose >decompose.txt 2>prog.err || fail "decompose exited $?"
grep -q "^ *4096 *1 .* cuda:1\$" decompose.txt || fail "decompose has no cuda:1 row: $(cat decompose.txt)"
grep -q "^ *2097152 *1 .* cuda:2\$" decompose.txt || fail "decompose has no cuda:2 row: $(cat decompose.txt)"
note "the device leaks: 4096 bytes on cuda:1 (leaky_upload), c0's 2 MiB on cuda:2 (grow_segment); decompose files them so"
# With --memory device, decompose is at the device memory's own peak:
# its devices' rows add up to the summary's device peak.
peak=$("$MMS_REPLAY" prog.mms --summary --json | sed -n 's/.*"device":{[^}]*"peak_bytes":\([0-9]*\).*/\1/p')
[ -n "$peak" ] || fail "no device peak in the summary"
"$MMS_REPLAY" prog.mms --analysis decompose --memory device >dpeak.txt 2>prog.err || fail "decompose --memory device exited $?"
at_peak=$(sed -n '/^decompose at the peak/,$p' dpeak.txt | awk '/%  cuda:[0-9]+$/ { n += $1 } END { print n + 0 }')
expect_eq "decompose --memory device: bytes of the devices at the peak" "$at_peak" "$peak"
grep -q '%  HOST$' dpeak.txt && fail "decompose --memory device shows host memory: $(cat dpeak.txt)"
note "decompose --memory device: $peak bytes on the devices at their peak, as the summary says"

# Device memory that PyTorch keeps at exit is not the program's leak: a
# segment allocated through libc10_cuda.so, a cuBLAS handle's workspace
# allocated through libtorch_cuda.so and libcublas.so.13 (the stand-ins)
# are the runtime's; leaky_upload's block and a handle's workspace that
# the program's own cuBLAS call allocated are the program's.
MSMEMSCOPE_CONFIG=call_stack=16 LD_LIBRARY_PATH=$cuda/driver:$cuda record cache.mms "$cuda/cudaprog" cache >cache.out ||
	fail "cudaprog cache exited $? under the recorder"
expect_eq "cudaprog cache output" "$(cat cache.out)" "cache segment=2097152 workspace=65536 own=32768 leaked=4096"
"$MMS_REPLAY" cache.mms --summary --json >cache.json 2>prog.err || fail "msmemscope-replay exited $?: $(cat prog.err)"
expect_key cache.json kinds.device.live_bytes $((2097152 + 65536 + 32768 + 4096))
expect_key cache.json runtime.torch-cuda.bytes $((2097152 + 65536))
"$MMS_REPLAY" cache.mms --analysis leaks >cache.leaks 2>prog.err || fail "leaks exited $?: $(cat prog.err)"
grep -A1 '4.0 KiB in 1 block of CUDA memory on cuda:1' cache.leaks | grep -q leaky_upload ||
	fail "leaky_upload's block is not the program's leak: $(cat cache.leaks)"
grep -q "2 blocks, 2.1 MiB: PyTorch's CUDA memory" cache.leaks ||
	fail "the stand-ins' segment and workspace are not PyTorch's: $(cat cache.leaks)"
grep -q '32.0 KiB in 1 block of CUDA memory on cuda:1' cache.leaks ||
	fail "the program's own cuBLAS workspace is not its leak: $(cat cache.leaks)"
note "a segment by libc10_cuda and a workspace by libtorch_cuda through libcublas (stand-ins) are PyTorch's at exit; leaky_upload's block and the program's own cuBLAS workspace are leaks"

# A watch on pinned memory (msmemscope_watch) ends at its cuMemFreeHost:
# the recorder no longer reads the block (the double unmaps it) at the
# next operator.
MSMEMSCOPE_CONFIG="events=alloc,free,launch" LD_LIBRARY_PATH=$cuda/driver record watch.mms "$cuda/cudaprog" watch \
	>watch.out 2>watch.err || fail "cudaprog watch exited $? under the recorder: $(cat watch.err)"
expect_eq "cudaprog watch output" "$(cat watch.out)" "watch pinned=8192 freed"
note "a watched pinned block is no longer read after cuMemFreeHost"

# Refusals (format 8): the double holds 64 blocks; cuMemAlloc of the 65th
# and a cuMemAllocAsync are refused (CUDA_ERROR_OUT_OF_MEMORY). The
# program gets the same results; the log holds two ALLOC_FAIL events of
# DEVICE memory; the oom analysis names the driver calls, the device,
# fill_device() in the stack, and the 64 MiB live on cuda:1 then.
LD_LIBRARY_PATH=$cuda/driver "$cuda/cudaprog" oom >oom.native || fail "cudaprog oom exited $? on its own"
expect_eq "cudaprog oom output" "$(cat oom.native)" "oom blocks=64 failures=0"
MSMEMSCOPE_CONFIG=call_stack=16 LD_LIBRARY_PATH=$cuda/driver record oom.mms "$cuda/cudaprog" oom >oom.rec ||
	fail "cudaprog oom exited $? under the recorder"
expect_eq "cudaprog oom output under the recorder" "$(cat oom.rec)" "$(cat oom.native)"
"$MMS_REPLAY" oom.mms --summary --json >oom.json 2>prog.err || fail "msmemscope-replay exited $?: $(cat prog.err)"
expect_key oom.json by_kind.alloc_fail 2
"$MMS_REPLAY" oom.mms --analysis oom:2 >oom.txt 2>prog.err || fail "--analysis oom exited $?: $(cat prog.err)"
grep -q "cuMemAlloc of 1048576 bytes (1.0 MiB) on cuda:1 refused by the CUDA driver (out of memory)" oom.txt ||
	fail "the refused cuMemAlloc is not named: $(cat oom.txt)"
grep -q "cuMemAllocAsync of 4096 bytes (4.0 KiB) on cuda:1 refused by the CUDA driver (out of memory)" oom.txt ||
	fail "the refused cuMemAllocAsync is not named: $(cat oom.txt)"
# fill_device(): the first refusal's stack, and the 2 + 2 blocks each
# refusal lists (the last allocated, the largest).
expect_eq "stacks whose first frame is fill_device" "$(grep -c '#0  fill_device (' oom.txt)" 9
expect_eq "lines of what was live then" "$(grep -c '^  live then (CUDA memory on that device): 64 blocks, 64.0 MiB$' oom.txt)" 2
"$MMS_REPLAY" oom.mms --analysis oom --json >oom.an.json 2>prog.err || fail "--analysis oom --json exited $?"
"$MMS_PYTHON" - oom.an.json <<'PY' || fail "the oom JSON is wrong: $(head -c 600 oom.an.json)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["failures"] == 2, d["failures"]
a, b = d["list"]
assert (a["fn"], a["memory"], a["device"], a["size"]) == ("cuMemAlloc", "DEVICE", 1, 1048576), a
assert (b["fn"], b["memory"], b["size"]) == ("cuMemAllocAsync", "DEVICE", 4096), b
assert a["live_blocks"] == 64 and a["live_bytes"] == 64 << 20, a
assert all(x["kind"] == "DEVICE" for x in a["recent"] + a["largest"]), a
PY
"$MMS_REPLAY" oom.mms --event "$(jget oom.an.json list.0.event)" >oom.event 2>prog.err || fail "--event exited $?"
grep -q 'ALLOC_FAIL *cuMemAlloc *refused: 1048576 bytes (1.0 MiB) on cuda:1 (out of device memory)' oom.event ||
	fail "--event of the refusal: $(cat oom.event)"
note "cuMemAlloc and cuMemAllocAsync refused: recorded, and the oom analysis shows the 64 MiB live on cuda:1"

# The launcher's report says it too.
LD_LIBRARY_PATH=$cuda/driver "$MMS_LAUNCHER" -- "$cuda/cudaprog" >launch.out 2>launch.err ||
	fail "msmemscope exited $?: $(tail -3 launch.err)"
expect_eq "cudaprog output under msmemscope" "$(cat launch.out)" "$(cat prog.native)"
grep -q "CUDA (driver) *$dev_allocs allocations, $dev_frees frees" launch.err ||
	fail "the launcher's report has no CUDA line: $(cat launch.err)"
note "msmemscope -- cudaprog reports the CUDA memory"

# --device (devices= in the configuration): the device memory of those
# ordinals only, both ends of each block (a free names the freeing
# context's device, so the blocks left out are kept by address: none of
# their frees is recorded, no free of an unknown block); host memory and
# the kernels whole; the reports say what was left out.
for d in "1 $dev1_allocs $dev1_frees 3295232" "2 $vmm_allocs $vmm_frees 20971520" "0 0 0 0"; do
	set -- $d
	MSMEMSCOPE_CONFIG="devices=$1" LD_LIBRARY_PATH=$cuda/driver record dev$1.mms "$cuda/cudaprog" >dev.rec ||
		fail "cudaprog exited $? with devices=$1"
	expect_eq "cudaprog output with devices=$1" "$(cat dev.rec)" "$(cat prog.native)"
	summarize dev$1.mms
	j=dev$1.mms.json
	expect_consistent $j
	expect_key $j kinds.device.allocs $2
	expect_key $j kinds.device.frees $3
	expect_key $j kinds.device.bytes_allocated $4
	expect_key $j by_kind.kernel_launch $kernels
	expect_key $j devices_recorded "\"cuda:$1\""
done
expect_key prog.json devices_recorded null
"$MMS_REPLAY" dev2.mms --summary >dev.txt 2>prog.err || fail "--summary of dev2.mms exited $?"
grep -q "^devices recorded *cuda:2 only (--device): the other devices' memory was not recorded$" dev.txt ||
	fail "--summary does not say the devices recorded: $(cat dev.txt)"
LD_LIBRARY_PATH=$cuda/driver "$MMS_LAUNCHER" --device=npu:1 -- "$cuda/cudaprog" >launch.out 2>launch.err ||
	fail "msmemscope --device=npu:1 exited $?: $(tail -3 launch.err)"
expect_eq "cudaprog output under msmemscope --device=npu:1" "$(cat launch.out)" "$(cat prog.native)"
grep -q "CUDA (driver) *$dev1_allocs allocations, $dev1_frees frees" launch.err ||
	fail "the launcher's report with --device=npu:1 has no CUDA line of device 1's: $(cat launch.err)"
grep -q "CUDA devices *cuda:1 only (--device)" launch.err ||
	fail "the launcher's report does not say the devices recorded: $(cat launch.err)"
note "--device: cuda:1 (npu:1) keeps $dev1_allocs allocations, cuda:2 the $vmm_allocs mappings, cuda:0 none; no free unmatched, the kernels whole"

# run_both NAME OUTPUT LIBPATH PROG [ARGS...]: runs PROG (with LIBPATH as
# LD_LIBRARY_PATH) on its own, which must print OUTPUT, then under the
# recorder with stacks into NAME.mms, which must print the same; leaves
# the log's summary in NAME.mms.json ($j), checked consistent.
run_both() {
	_n=$1 _out=$2 _lp=$3
	shift 3
	LD_LIBRARY_PATH=$_lp "$@" >$_n.native || fail "$_n: $* exited $? on its own"
	expect_eq "$_n: output" "$(cat $_n.native)" "$_out"
	MSMEMSCOPE_CONFIG=call_stack=16 LD_LIBRARY_PATH=$_lp record $_n.mms "$@" >$_n.rec ||
		fail "$_n: $* exited $? under the recorder"
	expect_eq "$_n: output under the recorder" "$(cat $_n.rec)" "$_out"
	summarize $_n.mms
	j=$_n.mms.json
	expect_consistent $j
}

# CUDA arrays (cudaprog arrays): blocks at their handles, of their
# elements' bytes; the one of a format the recorder does not know is left
# out, its destruction too (no free of an unknown block).
arr_bytes=4986272 # 32768 volume + 4915200 image + 4000 line + 12288 layers + 512 BC1 + 21504 mipmapped
run_both arr "arrays allocs=6 failures=0" "$cuda/driver" "$cuda/cudaprog" arrays
expect_key $j kinds.device.allocs 6
expect_key $j kinds.device.frees 5
expect_key $j kinds.device.bytes_allocated $arr_bytes
expect_key $j kinds.device.live_bytes 32768
expect_key $j unmatched_frees 0
"$MMS_REPLAY" arr.mms --export csv -o arr.csv >/dev/null 2>prog.err || fail "--export csv exited $?: $(cat prog.err)"
expect_eq "MALLOC rows of kind array" "$(grep -c '^[0-9]*,MALLOC,HAL,N/A,.*kind:array}' arr.csv)" 6
expect_eq "FREE rows of kind array" "$(grep -c '^[0-9]*,FREE,HAL,N/A,.*kind:array}' arr.csv)" 5
grep -q ',"{allocation_id:[0-9]*,addr:0x[0-9a-f]*,size:4915200,kind:array}",' arr.csv ||
	fail "no row of the 640 x 480 float4 image: $(grep kind:array arr.csv)"
"$MMS_REPLAY" arr.mms --analysis leaks >arr.leaks 2>prog.err || fail "leaks exited $?: $(cat prog.err)"
grep -q '32.0 KiB in 1 block of CUDA memory on cuda:1' arr.leaks || fail "no array leak group in: $(cat arr.leaks)"
grep -A1 'of CUDA memory on cuda:1' arr.leaks | grep -q '#0  leaky_volume (.*cudaprog.c:' ||
	fail "the array leak is not named by leaky_volume: $(cat arr.leaks)"
"$MMS_REPLAY" arr.mms --from 0 >arr.events 2>prog.err || fail "--from 0 exited $?: $(cat prog.err)"
expect_eq "events named cuArrayCreate" "$(grep -c 'MALLOC *cuArrayCreate ' arr.events)" 6
expect_eq "events named cuArrayDestroy" "$(grep -c 'FREE *cuArrayDestroy ' arr.events)" 5
note "CUDA arrays: 6 made (4986272 bytes) and 5 destroyed recorded, the one of an unknown format left out, the kept one a leak of leaky_volume"

# A driver-API program linked against libcuda (drvprog): its calls
# through its GOT are recorded, and the one it makes through a pointer
# cuGetProcAddress handed out, each once; the driver's own memory is the
# runtime's, the block it keeps a leak of leaky_direct on cuda:1.
run_both drv "direct allocs=6 frees=5 launches=1 failures=0" "$cuda/driver" "$cuda/drvprog"
expect_key $j kinds.device.allocs 6
expect_key $j kinds.device.frees 5
expect_key $j kinds.device.bytes_allocated 87040 # 4096 + 65536 + 8192 + 4096 + 4096 (the array) + 1024
expect_key $j kinds.device.live_bytes 4096
expect_key $j by_kind.kernel_launch 1
expect_key $j unmatched_frees 0
"$MMS_REPLAY" drv.mms --analysis leaks >drv.leaks 2>prog.err || fail "leaks exited $?: $(cat prog.err)"
grep -q '4.0 KiB in 1 block of CUDA memory on cuda:1' drv.leaks || fail "no device leak in: $(cat drv.leaks)"
grep -A1 'of CUDA memory on cuda:1' drv.leaks | grep -q '#0  leaky_direct (.*drvprog.c:' ||
	fail "the device leak is not named by leaky_direct: $(cat drv.leaks)"
grep -q '^No heap block leaked at exit' drv.leaks || fail "the driver's own memory taken for leaks: $(cat drv.leaks)"
note "a program linked against libcuda: 6 allocations (5 through its GOT, 1 through cuGetProcAddress's pointer), 5 frees, 1 launch, each once; the kept block a leak of leaky_direct"

# A library linked against libcuda, loaded with dlopen() (drvplug loads
# libdrvuse.so, which brings the driver in): its calls are recorded from
# the recorder's next look at the loader's list (a chunk of heap work
# later).
run_both plug "plugin allocs=2 frees=1 launches=1 failures=0" "$cuda/driver:$cuda" "$cuda/drvplug"
expect_key $j kinds.device.allocs 2
expect_key $j kinds.device.frees 1
expect_key $j kinds.device.live_bytes 8192
expect_key $j by_kind.kernel_launch 1
"$MMS_REPLAY" plug.mms --analysis leaks >plug.leaks 2>prog.err || fail "leaks exited $?: $(cat prog.err)"
grep -A1 '8.0 KiB in 1 block of CUDA memory on cuda:1' plug.leaks | grep -q '#0  leaky_plugin (.*drvuse.c:' ||
	fail "the plugin's device leak is not named by leaky_plugin: $(cat plug.leaks)"
note "a library linked against libcuda and loaded with dlopen(): its 2 allocations, free and launch recorded, the kept block a leak of leaky_plugin"
echo "cuda.sh: ok"
