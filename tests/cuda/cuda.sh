#!/bin/sh
# SPDX-License-Identifier: MIT
# cuda.sh: CUDA device memory captured at the driver's entry points
# (hooks/cuda.c, hooks/dlsym.c), against driver/libcuda.so.1, a test double
# of the driver (fakecuda.c): cudaprog reaches it as the CUDA runtime does
# and makes a known sequence of calls (see cudaprog.c). The program's
# output, errno after each driver call and exit status are the same under
# the recorder; dlsym() keeps its meaning for everyone (dlsymnext); the log
# holds the device events and kernel launches, with the device ordinal
# the double reports (1).
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

cuda=$top_builddir/tests/cuda
for p in cudaprog dlsymnext driver/libcuda.so.1; do
	[ -e "$cuda/$p" ] || fail "not built: $cuda/$p"
done

# The figures of cudaprog's sequence.
dev_allocs=10            # 4 device, 3 async, 1 managed, 2 pinned
dev_frees=9              # all but leaky_upload's
dev_bytes=3295232        # 1071104 device + 114688 async + 2097152 managed + 12288 pinned
dev_live_bytes=4096      # leaky_upload's block
kernels=5                # vector_add 3 times, reduce_sum, one unnamed

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
grep -q '^launches=5 failures=0$' prog.native || fail "unexpected native cudaprog output: $(cat prog.native)"
for config in "" "call_stack=16"; do
	log=prog${config:+-stacks}.mms
	MSMEMSCOPE_CONFIG=$config LD_LIBRARY_PATH=$cuda/driver record $log "$cuda/cudaprog" >prog.rec ||
		fail "cudaprog exited $? under the recorder (${config:-default configuration})"
	[ -s $log ] || fail "no log written (${config:-default configuration})"
	expect_eq "cudaprog output under the recorder (${config:-default configuration})" "$(cat prog.rec)" \
		"$(cat prog.native)"
done
note "cudaprog: the same output and status, errno kept, under the recorder"

# The log. Format 6's device records need a reader that knows them; until
# this branch has one, what the recorder wrote was checked by hand (see
# the commit that added this test).
"$MMS_REPLAY" prog.mms --summary --json >prog.json 2>prog.err || fail "msmemscope-replay exited $?: $(cat prog.err)"
if grep -q 'tag 0x88 unknown' prog.err; then
	skip "the recorder's part passed; the reader does not know device records (format 6) yet"
fi
j=prog.json
expect_consistent $j
expect_key $j by_kind.kernel_launch $kernels
expect_key $j kinds.device.allocs $dev_allocs
expect_key $j kinds.device.frees $dev_frees
expect_key $j kinds.device.bytes_allocated $dev_bytes
expect_key $j kinds.device.live_bytes $dev_live_bytes
note "$dev_allocs device allocations of $dev_bytes bytes, $dev_frees frees, $dev_live_bytes bytes left, $kernels kernels"
