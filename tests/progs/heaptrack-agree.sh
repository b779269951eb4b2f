#!/bin/sh
# SPDX-License-Identifier: MIT
# heaptrack-agree.sh: the high-water mark (watermark) and the leaked bytes
# (leakage) of a run agree with heaptrack's "peak heap memory consumption"
# and "total memory leaked" for the same program and input, to the byte
# where the definitions match: the malloc family (--memory host), on top of
# what each tool's own libraries allocate (the run with "none": heaptrack's
# preload library pulls in libstdc++, whose emergency pool heaptrack
# counts). heaptrack's figures are read exactly from its data file and
# checked against what heaptrack_print prints. With every kind counted
# (the default), the mapping of tests/progs/tracer and the pool blocks of
# examples/infer come on top: doc/analyses.md, "heaptrack", says why.
. "$top_srcdir/tests/progs/lib.sh"

command -v heaptrack >/dev/null 2>&1 || skip "heaptrack is not installed (apt-get install heaptrack)"
command -v heaptrack_print >/dev/null 2>&1 || skip "heaptrack_print is not installed (apt-get install heaptrack)"
command -v zstd >/dev/null 2>&1 || skip "zstd is needed to read heaptrack's data file (apt-get install zstd)"
infer=$top_builddir/examples/infer
[ -x "$infer" ] || fail "examples/infer is not built: $infer"

# heaptrack_figures NAME PROG ARGS...: runs PROG under heaptrack and writes
# NAME.ht: "peak leaked" in bytes from the data file, then the two lines of
# heaptrack_print.
heaptrack_figures() {
	_name=$1
	shift
	heaptrack -o "$PWD/$_name" "$@" >"$_name.htout" 2>&1 || fail "heaptrack $* exited $?: $(tail -n 5 "$_name.htout")"
	[ -f "$_name.zst" ] || fail "heaptrack wrote no $_name.zst: $(tail -n 5 "$_name.htout")"
	heaptrack_print -f "$_name.zst" -p 0 -a 0 -T 0 >"$_name.print" 2>&1 || fail "heaptrack_print $_name.zst exited $?"
	zstd -dc "$_name.zst" >"$_name.data" || fail "cannot decompress $_name.zst"
	# The data file: "a SIZE TRACE" defines allocation kinds (numbered
	# from 0), "+ N" allocates one, "- N" frees one; numbers in hex.
	"$MMS_PYTHON" - "$_name.data" >"$_name.ht" <<'PY' || fail "cannot read heaptrack's data in $_name.data"
import sys
sizes, live, peak = [], 0, 0
for line in open(sys.argv[1], errors="replace"):
    f = line.split()
    if not f:
        continue
    if f[0] == "a":
        sizes.append(int(f[1], 16))
    elif f[0] == "+":
        live += sizes[int(f[1], 16)]
        peak = max(peak, live)
    elif f[0] == "-":
        live -= sizes[int(f[1], 16)]
print(peak, live)
PY
	grep -E "^(peak heap memory consumption|total memory leaked):" "$_name.print" >>"$_name.ht" ||
		fail "heaptrack_print printed no figures: $(tail -n 5 "$_name.print")"
}

# ours NAME MEMORY PROG ARGS...: records PROG and writes NAME.ours: the
# watermark's and leakage's bytes with --memory MEMORY ("" = all kinds).
ours() {
	_name=$1
	_mem=$2
	shift 2
	[ -f "$_name.mms" ] || record "$_name.mms" "$@" >"$_name.out" || fail "$* exited $? under the recorder"
	rm -rf "$_name.d${_mem:+-$_mem}"
	mkdir "$_name.d${_mem:+-$_mem}"
	"$MMS_REPLAY" "$_name.mms" --analysis watermark,leakage --json ${_mem:+--memory $_mem} \
		--output-dir "$_name.d${_mem:+-$_mem}" >"$_name.json" 2>"$_name.err" ||
		fail "the analyses of $_name.mms exited $?: $(cat "$_name.err")"
	"$MMS_PYTHON" -c 'import json, sys
w, l = (json.loads(x) for x in open(sys.argv[1]))
print(w["bytes"], l["bytes"])' "$_name.json" >"$_name.ours${_mem:+-$_mem}"
}

# heaptrack's way of printing bytes: B, then K, M, G of 1000 with two decimals.
ht_format() {
	awk -v n="$1" 'BEGIN { if (n < 1000) { printf "%dB", n; exit }
		split("K M G T", u, " "); i = 0; while (n >= 1000 && i < 4) { n /= 1000; i++ }
		printf "%.2f%s", n, u[i] }'
}

heaptrack_figures ht-none "$MMS_PROGS/tracer" none
ours none host "$MMS_PROGS/tracer" none
read -r ht_peak0 ht_live0 <ht-none.ht
read -r our_peak0 our_leak0 <none.ours-host
expect_eq "recorder alone: peak" "$our_peak0" 0
note "heaptrack's own libraries: $ht_peak0 bytes at the peak, $ht_live0 live at the end"

# check NAME: our figures with --memory host against heaptrack's, over
# what each tool's libraries allocate by themselves.
check() {
	read -r hp hl <"$1-ht.ht"
	read -r op ol <"$1.ours-host"
	expect_eq "$1: peak (ours, heaptrack's)" "$((op - our_peak0))" "$((hp - ht_peak0))"
	expect_eq "$1: live at the end (ours, heaptrack's)" "$((ol - our_leak0))" "$((hl - ht_live0))"
	# heaptrack_print agrees with its data file (the reading is right),
	# and its leaked bytes, which leave out the libraries' own blocks
	# (heaptrack's suppressions), are ours.
	grep -qx "peak heap memory consumption: $(ht_format "$hp")" "$1-ht.ht" ||
		fail "$1: heaptrack_print's peak is not $(ht_format "$hp"): $(cat "$1-ht.ht")"
	grep -qx "total memory leaked: $(ht_format "$((ol - our_leak0))")" "$1-ht.ht" ||
		fail "$1: heaptrack_print's leak is not $(ht_format "$((ol - our_leak0))"): $(cat "$1-ht.ht")"
	note "$1: peak $((op - our_peak0)) bytes, leaked $((ol - our_leak0)) bytes: heaptrack agrees"
}

# tracer heap: the malloc family only; every kind gives the same figures.
heaptrack_figures tracer-ht "$MMS_PROGS/tracer" heap
ours tracer host "$MMS_PROGS/tracer" heap
check tracer
expect_eq "tracer: peak" "$(cut -d' ' -f1 tracer.ours-host)" 14000
expect_eq "tracer: leaked" "$(cut -d' ' -f2 tracer.ours-host)" 8000
ours tracer "" "$MMS_PROGS/tracer" heap
expect_eq "tracer, every kind" "$(cat tracer.ours)" "$(cat tracer.ours-host)"

# tracer with its mapping: heaptrack does not see mmap; every kind counts
# the 4 pages (3 left at the end), and the peak moves to the 5000 bytes.
page=$(getconf PAGESIZE)
heaptrack_figures tracermap-ht "$MMS_PROGS/tracer"
ours tracermap host "$MMS_PROGS/tracer"
check tracermap
ours tracermap "" "$MMS_PROGS/tracer"
expect_eq "tracer with a mapping, every kind" "$(cat tracermap.ours)" "$((10000 + 4 * page)) $((8000 + 3 * page))"

# examples/infer: pool blocks reported through the API lie inside malloc'd
# memory; heaptrack counts the malloc'd memory once.
heaptrack_figures infer-ht "$infer"
ours infer host "$infer"
check infer
ours infer "" "$infer"
read -r ap al <infer.ours
read -r hp hl <infer.ours-host
expect_ge "infer: every kind at the peak" "$ap" "$hp"
note "infer, every kind: peak $ap bytes, leaked $al (the pool's blocks on top of the malloc family's)"
