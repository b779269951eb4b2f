#!/bin/sh
# SPDX-License-Identifier: MIT
# args.sh: every size, count and step number a memscope command takes is
# checked before use (issue 16, defect 1): a SIZE of 2^64-1 or 1 TiB, a
# step or event past what the recorder can number, a negative SIZE after
# the expression (`nb -8'), are usage errors, not a gdb killed by "virtual
# memory exhausted" nor a Python OverflowError; gdb goes on (a watch set
# after them works, the program runs to its end) and exits 0. SIZE and N
# are expressions, as ADDR is (`sizeof(float)*4', `$n').
. "${top_srcdir:?run this test through make check}/tests/gdb/lib.sh"

session args "$progs/stomp" -ex 'break ready' -ex run \
	-ex 'memscope watch nb 18446744073709551615' -ex 'memscope watch nb 1099511627776' \
	-ex 'memscope watch nb 0' -ex 'memscope watch nb -8' -ex 'memscope watch nb 99999999999999999999' \
	-ex 'memscope at step 99999999999999999999' -ex 'memscope at step 4294967296' -ex 'memscope at step 0' \
	-ex 'memscope at event -1' -ex 'memscope at event 18446744073709551615' \
	-ex 'memscope break step 99999999999999999999' -ex 'memscope break step 1.5' \
	-ex 'memscope block 0' -ex 'memscope watch' -ex 'memscope watch no_such_var 16' \
	-ex 'set $n = 4' -ex 'memscope watch nb sizeof(float)*$n' -ex 'memscope watch' -ex 'memscope info' \
	-ex continue -ex continue -ex continue -ex 'memscope watch'
expect args 'memscope: SIZE 18446744073709551615 is out of range: it must be from 1 to 268435456.' "SIZE 2^64-1"
expect args 'memscope: SIZE 1099511627776 is out of range: it must be from 1 to 268435456.' "SIZE 1 TiB"
expect args 'memscope: SIZE 0 is out of range' "SIZE 0"
expect args 'memscope: SIZE -8 is out of range' "a negative SIZE after the expression"
expect args 'memscope: cannot evaluate 99999999999999999999: Numeric constant too large.' "a number gdb cannot hold"
expect args 'memscope: step 4294967296 is out of range: it must be from 1 to 4294967295.' "a step past 32 bits"
expect args 'memscope: steps count from 1.' "step 0"
expect args 'memscope: event -1 is out of range' "a negative event"
expect args 'memscope: event 18446744073709551615 is out of range' "an event past the log's numbering"
expect args 'memscope: step 1.5 is not an integer' "a step that is not an integer"
expect args 'memscope: cannot evaluate no_such_var: No symbol "no_such_var" in current context.' \
	"an EXPR that does not evaluate, with a SIZE: the error is EXPR's"
expect args 'memscope: no watches.' "no watch set by the refused commands"
expect args 'memscope: watch 1: nb, 16 bytes at' "SIZE as an expression with a convenience variable"
expect args 'changed in operator scale (launch 3, step 1)' "the watch set after the errors works"
expect args 'exited normally' "the program's end"
expect_count args 'usage: memscope' 13 "a usage line for each refused command"
expect_rc "gdb's exit status"
