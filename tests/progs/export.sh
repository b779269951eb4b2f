#!/bin/sh
# SPDX-License-Identifier: MIT
# export.sh: msMemScope's dump of tests/progs/exportprog, whose every event
# is known. The CSV must hold exactly the rows of export.golden once its
# timestamps, pid, tid and addresses are masked (the same address keeps the
# same mask, so MALLOC/FREE pairing shows), with msMemScope's header and
# quoting, non-decreasing timestamps, the program's pid and tid, and C
# stacks naming the allocating functions. exportcheck checks the rules of
# the output files through the library (refusal, no partial or temporary
# file, mode, symlinks, cancel, raw stacks, file name). The database must
# hold the CSV's rows, and answer doc/export.md's example queries, and the
# blocks and steps tables, with the program's figures.
. "$top_srcdir/tests/progs/lib.sh"

prog=$MMS_PROGS/exportprog
golden=$top_srcdir/tests/progs/export.golden
doc=$top_srcdir/doc/export.md

[ -x "$prog" ] || fail "exportprog is not built: $prog"
# Debug information comes from the files themselves, never the network.
unset DEBUGINFOD_URLS
MSMEMSCOPE_CONFIG="call_stack=8;events=alloc,free,launch,access"
export MSMEMSCOPE_CONFIG
record e.mms "$prog" >e.out || fail "exportprog exited $?: $(cat e.out)"
pid=$(sed -n 's/^exportprog pid=\([0-9][0-9]*\)$/\1/p' e.out)
[ -n "$pid" ] || fail "exportprog printed: $(cat e.out)"

# --- the CSV, through the CLI, against the golden file ----------------------
"$MMS_REPLAY" e.mms --export csv -o e.csv 2>csv.err || fail "msmemscope-replay --export csv exited $?: $(cat csv.err)"
"$MMS_PYTHON" - e.csv "$pid" >e.masked 2>mask.err <<'PY' || fail "e.csv: $(cat mask.err)"
import csv, re, sys

path, pid = sys.argv[1], sys.argv[2]
HEADER = ("ID,Event,Event Type,Name,Timestamp(ns),Process Id,Thread Id,Device Id,Ptr,Attr,"
          "Call Stack(Python),Call Stack(C)")
raw = open(path, newline="").read()
if not raw.endswith("\n"):
    sys.exit("the file does not end with a newline")
lines = raw[:-1].split("\n")
if lines[0] != HEADER:
    sys.exit(f"header {lines[0]!r}, expected {HEADER!r}")

def field(s, always=False):
    """A field as the exporter must write it (RFC 4180; Attr always quoted)."""
    if (always and s) or any(c in s for c in ',"\r\n'):
        return '"' + s.replace('"', '""') + '"'
    return s

def line(row):
    return ",".join(field(v, i == 9) for i, v in enumerate(row))

addrs = {}
def mask_addr(m):
    return addrs.setdefault(m.group(0), f"<A{len(addrs) + 1}>")

last_t = 0
print(HEADER)
for n, row in enumerate(csv.reader(lines[1:]), 2):
    if len(row) != 12:
        sys.exit(f"line {n}: {len(row)} fields")
    if line(row) != lines[n - 1]:
        sys.exit(f"line {n} is not quoted as msMemScope quotes: {lines[n - 1]!r}")
    t = int(row[4])
    if t < last_t:
        sys.exit(f"line {n}: timestamp {t} before the previous row's {last_t}")
    last_t = t
    if row[5] != pid or row[6] != pid:
        sys.exit(f"line {n}: process {row[5]}, thread {row[6]}; the program's pid is {pid}")
    row[4], row[5], row[6] = "<T>", "<PID>", "<TID>"
    row[8] = re.sub(r"0x[0-9a-f]{16}", mask_addr, row[8])
    row[9] = re.sub(r"0x[0-9a-f]{16}", mask_addr, row[9])
    # The frames of the program itself, by function: the C runtime's
    # frames and the lines vary with the system and the compiler.
    frames = row[11].split("|") if row[11] else []
    own = [f.split(" (")[0] for f in frames if "exportprog.c:" in f]
    if row[1] == "MALLOC" and not own:
        sys.exit(f"line {n}: a MALLOC row with no frame in exportprog.c: {row[11]!r}")
    row[11] = "|".join(own)
    print(line(row))
PY
diff -u "$golden" e.masked >golden.diff || fail "the CSV differs from $golden (masked):
$(cat golden.diff)"
rows=$(($(wc -l <e.csv) - 1))
note "CSV: $rows rows as export.golden"

# The default name is msMemScope's, and is not replaced.
"$MMS_REPLAY" e.mms --export csv 2>name.err || fail "msmemscope-replay --export csv (default name) exited $?: $(cat name.err)"
set -- memscope_dump_*.csv
[ $# = 1 ] && [ -f "$1" ] || fail "no memscope_dump_{time}.csv in the current folder: $(ls)"
case $1 in
memscope_dump_[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9].csv) ;;
*) fail "default export name $1" ;;
esac
cmp -s "$1" e.csv || fail "$1 differs from e.csv"
if "$MMS_REPLAY" e.mms --export csv 2>again.err; then
	fail "a second export to $1 replaced it"
fi

# --- the output-file rules, through the library ------------------------------
mkdir files
"$MMS_PROGS/exportcheck" e.mms "$work/files" >check.out 2>&1 || fail "exportcheck: $(cat check.out)"
note "files: $(grep -c '^ok' check.out) checks of exportcheck"

# --- the database -------------------------------------------------------------
"$MMS_REPLAY" e.mms --export db -o e.db 2>db.err || fail "msmemscope-replay --export db exited $?: $(cat db.err)"
if ! command -v sqlite3 >/dev/null 2>&1; then
	note "SKIP the database checks: the sqlite3 shell is not installed (apt-get install sqlite3)"
	exit 0
fi

q() {
	sqlite3 -batch -init /dev/null "$@" 2>q.err || fail "sqlite3 $*: $(cat q.err)"
}

expect_eq "memscope_dump rows" "$(q e.db 'SELECT COUNT(*) FROM memscope_dump')" "$rows"
q -csv e.db 'SELECT * FROM memscope_dump ORDER BY "ID"' >dump.csv
"$MMS_PYTHON" - e.csv dump.csv <<'PY' || fail "memscope_dump differs from the CSV"
import csv, sys
a = list(csv.reader(open(sys.argv[1], newline="")))[1:]
b = list(csv.reader(open(sys.argv[2], newline="")))
for x, y in zip(a, b):
    if x != y:
        sys.exit(f"CSV row {x} is {y} in memscope_dump")
if len(a) != len(b):
    sys.exit(f"{len(a)} CSV rows, {len(b)} in memscope_dump")
PY
expect_eq "memscope_dump column types" \
	"$(q e.db "SELECT group_concat(name || ':' || type, ',') FROM pragma_table_info('memscope_dump')")" \
	'ID:INTEGER,Event:TEXT,Event Type:TEXT,Name:TEXT,Timestamp(ns):INTEGER,Process Id:INTEGER,Thread Id:INTEGER,Device Id:TEXT,Ptr:TEXT,Attr:TEXT,Call Stack(Python):TEXT,Call Stack(C):TEXT'

# The blocks, launches and steps of exportprog.c (see its header).
expect_eq "blocks" "$(q e.db 'SELECT alloc_id, kind, fn, pool, size, thread, alloc_event, free_event, alloc_step,
	op, op_launch, owner FROM blocks ORDER BY alloc_id')" "1|HOST|malloc||100|$pid|1|18|1|||
2|HOST|malloc||200|$pid|5|23|1|conv|1|model@weights
3|POOL||arena|512|$pid|14|16|2|relu|2|
4|HOST|malloc||300|$pid|17||2|relu|2|"
expect_eq "steps" "$(q e.db 'SELECT step, begin_event, end_event, events, launches, allocs, frees,
	bytes_allocated, bytes_freed, live_bytes_begin, live_bytes_end, peak_bytes, peak_event FROM steps')" \
	"1|0|11|12|1|2|0|300|0|0|300|300|5
2|12|22|11|1|2|2|812|612|300|500|812|14
3|23|24|2|0|0|1|0|200|500|300|500|22"
expect_eq "threads" "$(q e.db 'SELECT thread, tid, name FROM threads')" "0|$pid|exportprog"
expect_eq "stack of the leak" "$(q e.db "SELECT f.function FROM blocks b JOIN stack_frames s USING (stack_id)
	JOIN frames f USING (ip) WHERE b.alloc_id = 4 AND f.file LIKE '%exportprog.c' ORDER BY s.depth")" "leaky_alloc
main"

# doc/export.md's example queries, in order, with their answers here.
awk '/^## Example queries/ { on = 1 } on && /^```sql$/ { n++; f = sprintf("query%d.sql", n); next }
	f && /^```$/ { close(f); f = ""; next } f { print > f }' "$doc"
[ -f query4.sql ] && [ ! -f query5.sql ] || fail "doc/export.md: expected 4 example queries, found $(ls query*.sql 2>/dev/null | wc -l)"
expect_eq "live bytes by allocating function (query 1)" "$(q e.db <query1.sql)" "leaky_alloc|1|300"
largest=$(q e.db <query2.sql)
expect_eq "largest blocks never freed (query 2)" "$(echo "$largest" | cut -d'|' -f1-4)" "4|HOST|300|leaky_alloc"
leak_ptr=$(awk -F, '$1 == 17 && $2 == "MALLOC" { print $9 }' e.csv)
[ -n "$leak_ptr" ] || fail "e.csv: no MALLOC row 17"
expect_eq "address of the leak (query 2)" "$(printf '%d' "$(echo "$largest" | cut -d'|' -f7)")" "$(printf '%d' "$leak_ptr")"
expect_eq "memory per launch (query 3)" "$(q e.db <query3.sql)" "1|conv|1|200|0|0|200
2|relu|2|812|2|612|200"
expect_eq "leaks by msMemScope's step rule (query 4)" "$(q e.db <query4.sql)" "2|1|300"
note "database: the CSV's $rows rows, blocks, steps, and the doc's 4 queries"
