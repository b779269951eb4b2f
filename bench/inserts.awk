# SPDX-License-Identifier: MIT
# inserts.awk: writes an SQL script of n single-row INSERT statements in one
# transaction (awk -v n=ROWS -f inserts.awk), then an index and a query
# whose output checks the result. The sqlite3 workload of bench/run.sh and
# of tests/progs/valgrind-agree.sh; with -v pad=W each name is padded to W
# bytes, so that rows fill more pages (bench/replaylogs.sh).
BEGIN {
	fmt = pad > 0 ? "%-" pad "s" : "%s"
	print "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);"
	print "BEGIN;"
	for (i = 1; i <= n; i++)
		printf "INSERT INTO t(name, v) VALUES('" fmt "', %d.5);\n", "name-" (i * 7919 % n), i
	print "COMMIT;"
	print "CREATE INDEX t_name ON t(name);"
	print "SELECT count(*), sum(v), min(name), max(name) FROM t;"
}
