#!/bin/sh
# SPDX-License-Identifier: MIT
# help.sh: what a new user sees before the program runs: `help memscope'
# and each command's help, tab completion, the settings, and the usage
# line of every command given wrong arguments.
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

set --
for c in watch unwatch leaks at info block break pinpoint check; do
	set -- "$@" -ex "help memscope $c"
done
session help "$progs/leaky" -ex 'help memscope' "$@" \
	-ex 'complete memscope ' -ex 'complete memscope l' -ex 'complete memscope leaks ' \
	-ex 'complete memscope leaks full ' -ex 'complete memscope at ' -ex 'complete memscope break ' \
	-ex 'complete memscope pinpoint ' \
	-ex 'show memscope depth' -ex 'set memscope top 5' -ex 'show memscope top' \
	-ex 'memscope' -ex 'memscope frob' -ex 'memscope watch nb' -ex 'memscope info' -ex 'memscope leaks' \
	-ex 'memscope leaks bogus' -ex 'memscope leaks full summary' -ex 'memscope at' -ex 'memscope at step' \
	-ex 'memscope at step x' -ex 'memscope at step 0' -ex 'memscope at moment 3' -ex 'memscope unwatch 3' \
	-ex 'memscope unwatch x' -ex 'memscope block' -ex 'memscope break op' -ex 'memscope break step 0' \
	-ex 'memscope break later' -ex 'memscope break op load' -ex 'memscope break delete' \
	-ex 'start' -ex 'memscope watch' -ex 'memscope watch kept[0]' -ex 'memscope watch main' \
	-ex 'memscope watch nosuchthing' -ex 'memscope watch kept 0' -ex 'memscope watch 0 8' \
	-ex 'memscope unwatch 1' -ex 'memscope unwatch' -ex 'memscope pinpoint' -ex 'memscope pinpoint now'
expect help 'List of memscope subcommands:' "help memscope"
compare help
