#!/bin/sh
# SPDX-License-Identifier: MIT
# nvtxinfer.sh: the bundled example built with its steps and operators
# marked by NVTX (examples/infer-nvtx) gives what its msmemscope-API build
# (examples/infer) gives: the same output, the same leaks report (with
# stacks), launch for launch, the same launches and memory in each of its
# 6 steps, a compare of the two logs where no launch differs, and the
# watch that names softmax in step 3. Only the step marks differ: 5 STEP
# events against 6 "step start" ranges (12 MSTX events).
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

api=$top_builddir/examples/infer
nvtx=$top_builddir/examples/infer-nvtx
[ -x "$nvtx" ] || skip "examples/infer-nvtx is not built: configure found no nvtx3/nvToolsExt.h (install the CUDA toolkit's headers, or give --with-cuda=DIR)"
[ -x "$api" ] || fail "the example is not built: $api"
[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"

"$api" >api.native || fail "examples/infer exited $?"
"$nvtx" >nvtx.native || fail "examples/infer-nvtx exited $?"
cmp -s api.native nvtx.native || fail "the two builds print different things: $(diff api.native nvtx.native)"

# run NAME PROG: the launcher's default report, with stacks; the log in
# NAME.log.
run() {
	"$MMS_LAUNCHER" --call-stack=c:16 --analysis=leaks,watch --output="$1.out" -- "$2" >"$1.stdout" 2>"$1.err" ||
		fail "msmemscope -- $2 exited $?: $(cat "$1.err")"
	cmp -s "$1.stdout" api.native || fail "$2 printed something else under msmemscope"
	set -- "$1" "$1".out/msmemscope_*/memscope_*.mms
	[ $# = 2 ] && [ -f "$2" ] || fail "expected one log for $1, found: $*"
	ln -s "$2" "$1.mms"
}
run api "$api"
run nvtx "$nvtx"

# The reports without what differs between two runs (addresses, pids,
# folders, times, thread ids, checksums) or between the two programs
# (their names, and the step marks in the events line).
normalize() {
	sed -e 's/0x[0-9a-f]*/ADDR/g' -e 's/examples\/infer-nvtx/examples\/infer/g' -e 's/(infer-nvtx+/(infer+/' \
		-e 's/^msmemscope: recorded .*/msmemscope: recorded/' -e 's/thread [0-9]*:/thread TID:/' \
		-e 's/_[0-9]\{14\}\.csv/_TIME.csv/' -e 's/msmemscope_[0-9]*_[0-9]*/RUN/' \
		-e 's/: [0-9a-f]\{16\} -> [0-9a-f]\{16\}$//' \
		-e 's/^\(  events *\)[0-9]*  (SYSTEM 2, MALLOC 29, FREE 24, OP_LAUNCH 50, \(STEP 5\|MSTX 12\), /\1N  (..., MARKS, /' \
		-e 's/[a-z]*\.out\/RUN/OUT\/RUN/' "$1"
}
grep -q '(SYSTEM 2, MALLOC 29, FREE 24, OP_LAUNCH 50, STEP 5, OWNER 16, WATCH 51)' api.err ||
	fail "the API build's events differ from what infer.c documents: $(head -3 api.err)"
grep -q '(SYSTEM 2, MALLOC 29, FREE 24, OP_LAUNCH 50, MSTX 12, OWNER 16, WATCH 51)' nvtx.err ||
	fail "the NVTX build does not show 12 MSTX events for its 6 step ranges: $(head -3 nvtx.err)"
normalize api.err >api.report
normalize nvtx.err >nvtx.report
diff -u api.report nvtx.report >report.diff || fail "the reports differ (- API, + NVTX):
$(cat report.diff)"
grep -q '^  steps             6$' nvtx.report || fail "the NVTX build has no 6 steps: $(cat nvtx.report)"
[ "$(grep -c '^Direct HOST leak of 0.003906 Mb(s) at ADDR in attention (launch [0-9]*) at step [2-5]\.$' nvtx.report)" = 4 ] ||
	fail "the NVTX build's report does not name the 4 per-step leaks in attention: $(cat nvtx.report)"
grep -q '^    first changed by softmax, launch 14, step 3, thread TID$' nvtx.report ||
	fail "the NVTX build's watch does not name softmax in step 3: $(cat nvtx.report)"
note "the same report from both builds: 6 steps, 4 per-step leaks in attention (launches 7, 12, 17, 22), the watch naming softmax in step 3"

# Each step, launch for launch: names, numbers and memory.
step_figures() {
	"$MMS_REPLAY" "$1" --step "$2" --json >"$1.$2.json" 2>"$1.$2.err" ||
		fail "msmemscope-replay $1 --step $2 exited $?: $(cat "$1.$2.err")"
	"$MMS_PYTHON" - "$1.$2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("step %d of %d: %d/%d %d %d peak %d kept %d" % (d["step"], d["steps"], d["allocs"], d["frees"],
      d["bytes_allocated"], d["delta_bytes"], d["peak_bytes"], d["kept"]["bytes"]))
for l in d["launches"]:
    print("  %d %s %d/%d %d %d" % (l["launch"], l["name"], l["allocs"], l["frees"], l["bytes_allocated"],
                                  l["delta_bytes"]))
PY
}
for n in 1 2 3 4 5 6; do
	step_figures api.mms $n >>api.steps
	step_figures nvtx.mms $n >>nvtx.steps
done
diff -u api.steps nvtx.steps >steps.diff || fail "the steps differ (- API, + NVTX):
$(cat steps.diff)"
[ "$(grep -c '^  [0-9]* attention 2/1 5120 4096$' nvtx.steps)" = 5 ] ||
	fail "expected attention to keep 4096 bytes in each of steps 1 to 5: $(cat nvtx.steps)"
note "steps 1 to 6: the same launches, by name and number, with the same memory"

# compare: the two logs' launches pair up and none differs.
"$MMS_LAUNCHER" --compare --input="$PWD/api.mms,$PWD/nvtx.mms" --output=cmp >compare.out 2>&1 ||
	fail "msmemscope --compare exited $?: $(cat compare.out)"
grep -q '^paired 25 launches; 0 rows differ; total diff 0 bytes (+0 bytes)$' compare.out ||
	fail "the compare of the two logs found differences: $(cat compare.out)"
note "compare: 25 launches paired, none differs"
