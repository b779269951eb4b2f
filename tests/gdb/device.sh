#!/bin/sh
# SPDX-License-Identifier: MIT
# device.sh: `set memscope device cuda:N' records the device memory of
# those CUDA devices only, as msmemscope --device does: the recorder's
# configuration of the next run says so (devices=...), msMemScope's npu:N
# is taken as cuda:N, a list the launcher refuses is refused and the
# setting stays, and `set memscope device cuda' records every device
# again (no devices= key).
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session dv "$top_builddir/tests/gdb/leaky" -ex 'show memscope device' -ex 'set memscope device cuda:1,npu:3' \
	-ex 'set memscope device gpu:2' -ex 'show memscope device' -ex 'show exec-wrapper' \
	-ex 'set memscope device cuda' -ex 'show memscope device' -ex 'show exec-wrapper'
expect dv "The next runs record the device memory of every CUDA device." "the default"
expect dv "memscope: the next runs record the device memory of cuda:1,npu:3." "the setting's answer"
expect dv "memscope: gpu:2 is not a device list the recorder takes (cuda, or cuda:N with N from 0 to 63, several separated by commas); the devices stay cuda:1,npu:3." \
	"a list the launcher refuses"
expect dv "The next runs record the device memory of cuda:1,npu:3." "the setting stays after a refused list"
expect_count dv ';devices=1,3' 1 "the devices in the run's configuration, once (not after cuda)"
expect dv "memscope: the next runs record the device memory of every CUDA device." "back to every device"
expect_rc "gdb's exit status"
note "set memscope device cuda:1,npu:3: the run records with --device's configuration; cuda: every device again"
