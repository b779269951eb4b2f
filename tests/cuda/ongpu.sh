#!/bin/sh
# SPDX-License-Identifier: MIT
# ongpu.sh: on a machine with a GPU, runs issue 15's checks of the real
# driver with what gpustage.sh staged, from the source tree's root (where
# tests/ and bench/ are): gpu.sh with examples/cudamem over the shared and
# the static CUDA runtime, gpudrv.sh with examples/cudadrv (the driver
# called by name beside the runtime) over both too, torchgpu.sh (a PyTorch CUDA loop's
# segments against the log), torchnvtx.sh (a PyTorch program's
# torch.cuda.nvtx ranges as steps and launches, its refused 1 TiB), then bench/torchcuda.sh's cost of recording
# that loop (BENCH_RUNS rounds, default 3). Each check's output goes to
# OUTDIR/NAME.log and a line per check to stdout; the exit status is 1
# when a check failed (77, a skip, is not a failure).
#
#     sh tests/cuda/ongpu.sh [STAGE [OUTDIR]]   (defaults: _gpu, and $OUT or .)
#
# MMS_PYTHON: the interpreter whose PyTorch sees the GPU (default python3);
# ONGPU_ONLY: the checks to run, by name (gpu gpu-static gpudrv
# gpudrv-static torchgpu torchnvtx; default all), then the bench.
set -u

stage=$(cd "${1:-_gpu}" && pwd) || exit 2
out=${2:-${OUT:-.}}
[ -x "$stage/bin/msmemscope-replay" ] || {
	echo "ongpu.sh: $stage is not a folder gpustage.sh made" >&2
	exit 2
}
mkdir -p "$out"

top_srcdir=$(pwd)
MMS_HOOKS=$stage/lib/libmsmemscope-hooks.so
MMS_REPLAY=$stage/bin/msmemscope-replay
MMS_PYTHON=${MMS_PYTHON:-python3}
# The recorder's libunwind, where the machine has none.
LD_LIBRARY_PATH=$stage/rec${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export top_srcdir MMS_HOOKS MMS_REPLAY MMS_PYTHON LD_LIBRARY_PATH

echo "== $(date -u '+%F %T') $(uname -srm)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/GPU: /'
"$MMS_PYTHON" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "sees a GPU:", torch.cuda.is_available())' 2>&1
"$MMS_REPLAY" --version 2>&1 | head -1

failed=0
# check NAME BUILDDIR SCRIPT: runs the test SCRIPT with top_builddir=BUILDDIR.
check() {
	case " ${ONGPU_ONLY:-$1} " in
	*" $1 "*) ;;
	*) return 0 ;;
	esac
	_t0=$(date +%s)
	top_builddir=$2 sh "$3" >"$out/$1.log" 2>&1
	_rc=$?
	case $_rc in
	0) _what=PASS ;;
	77) _what=SKIP ;;
	*)
		_what=FAIL
		failed=1
		;;
	esac
	echo "$_what: $1 ($(($(date +%s) - _t0)) s): $(grep -v '^$' "$out/$1.log" | tail -n 1)"
	grep "^$1: \|^gpu: \|^gpudrv: " "$out/$1.log" | sed 's/^/  /'
}

check gpu "$stage" tests/cuda/gpu.sh
check gpu-static "$stage/static" tests/cuda/gpu.sh
check gpudrv "$stage" tests/cuda/gpudrv.sh
check gpudrv-static "$stage/static" tests/cuda/gpudrv.sh
check torchgpu "$stage" tests/cuda/torchgpu.sh
check torchnvtx "$stage" tests/cuda/torchnvtx.sh
_t0=$(date +%s)
BENCH_RUNS=${BENCH_RUNS:-3} top_builddir=$stage sh bench/torchcuda.sh >"$out/torchcuda.log" 2>&1
echo "torchcuda.sh: exit $? ($(($(date +%s) - _t0)) s)"
sed 's/^/  /' "$out/torchcuda.log" | head -n 40
exit $failed
