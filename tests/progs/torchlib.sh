# SPDX-License-Identifier: MIT
# torchlib.sh: what the PyTorch tests (torch.sh, train.sh) share, sourced
# after lib.sh: skip (77) unless the Python package is built and the
# interpreter imports torch; then put the build tree's package on the path.
pkg=$top_builddir/hooks/python/build
[ -e "$pkg/msmemscope/_msmemscope.so" ] ||
	skip "configure built no Python package (Debian: apt-get install -y python3-dev, then configure again)"
"$MMS_PYTHON" -c 'import torch' 2>/dev/null ||
	skip "$MMS_PYTHON cannot import torch (Debian: apt-get install -y python3-torch)"
export PYTHONPATH="$pkg"
