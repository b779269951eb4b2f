# SPDX-License-Identifier: MIT
# testlib.sh: what every shell test shares: messages that name the test,
# skipping with exit 77 and a reason, and a private work directory under
# the build tree, removed when the test passes or skips and kept (and
# named) when it fails. Sourced with test_dir set to the test's folder
# (tests/progs, tests/gdb); the caller is then in the work directory.

test_name=$(basename "$0" .sh)

fail() {
	echo "FAIL: $test_name: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $test_name: $*" >&2
	exit 77
}

note() {
	echo "$test_name: $*"
}

work=$(mktemp -d "$top_builddir/$test_dir/$test_name.XXXXXX")
cleanup() {
	rc=$?
	if [ "$rc" = 0 ] || [ "$rc" = 77 ]; then
		rm -rf "$work"
	else
		echo "$test_name: kept its files in $work" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
cd "$work"
