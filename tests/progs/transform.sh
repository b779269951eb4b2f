#!/bin/sh
# SPDX-License-Identifier: MIT
# transform.sh: memray's transforms over tests/progs/transform, whose every
# allocation is known (see its header). The CSV rows of the peak, of the
# leaks and of the temporary allocations at thresholds 0, 1 and 3 must be
# exactly the program's (symbolized functions at the marked lines); the
# gprof2dot JSON must have gprof2dot's structure and the peak's costs (and
# gprof2dot must read it when installed); the flame graph must be
# well-formed SVG with one box per call path, the hover titles with bytes,
# counts and percents, nothing fetched from the network, and render in
# headless Chromium when installed. The CLI's file rules and usage errors
# are checked too.
. "$top_srcdir/tests/progs/lib.sh"

prog=$MMS_PROGS/transform
src=$top_srcdir/tests/progs/transform.c
[ -x "$prog" ] || fail "transform is not built: $prog"
unset DEBUGINFOD_URLS
MSMEMSCOPE_CONFIG="call_stack=8;events=alloc,free"
export MSMEMSCOPE_CONFIG
record t.mms "$prog" >t.out || fail "transform exited $?: $(cat t.out)"
pid=$(sed -n 's/^transform pid=\([0-9][0-9]*\) kept=11$/\1/p' t.out)
[ -n "$pid" ] || fail "transform printed: $(cat t.out)"

# line MARKER: the line of transform.c that carries XF-MARKER.
line() {
	_l=$(grep -n "XF-$1 " "$src" | cut -d: -f1)
	[ -n "$_l" ] || fail "no XF-$1 in $src"
	echo "$_l"
}

# rows CSV [threads PID]: the file's rows, one a line, as
#   allocator num size thread function:line caller
# sorted; checks the header, CRLF line ends and the tid on the way. With
# "threads", rows allocated outside transform.c (the C library's, for the
# thread) are left out and the tid shows as main or other.
rows() {
	"$MMS_PYTHON" - "$1" "${3:-$pid}" "${2:-}" <<'PY' || fail "$1: $(head -c 800 "$1")"
import csv, sys
threads = sys.argv[3] == "threads"
raw = open(sys.argv[1], newline="").read()
lines = raw.split("\r\n")
if lines[0] != "allocator,num_allocations,size,tid,thread_name,stack_trace" or lines[-1] != "":
    sys.exit("header or line ends: %r" % raw[:120])
out = []
for r in csv.reader(lines[1:-1]):
    if len(r) != 6:
        sys.exit("row of %d fields: %r" % (len(r), r))
    if r[3] != sys.argv[2] and not threads:
        sys.exit("tid %s, the program's is %s" % (r[3], sys.argv[2]))
    frames = [f.split(";") for f in r[5].split("|")]
    if any(len(f) != 3 for f in frames):
        sys.exit("a frame is not function;file;line: %r" % r[5])
    f0, f1 = frames[0], frames[1]
    if not f0[1].endswith("tests/progs/transform.c"):
        if threads:
            continue
        sys.exit("innermost frame not in transform.c: %r" % r[5])
    who = ("main" if r[3] == sys.argv[2] else "other") if threads else r[4]
    out.append("%s %s %s %s %s:%s %s" % (r[0], r[1], r[2], who, f0[0], f0[2], f1[0]))
print("\n".join(sorted(out)))
PY
}

# check WHAT ARGS EXPECTED-ROWS EXPECTED-LINE: transform csv ARGS, its rows
# and its line on stderr.
check() {
	"$MMS_REPLAY" transform csv $2 -o "$1.csv" t.mms 2>"$1.err" || fail "transform csv $2 exited $?: $(cat "$1.err")"
	rows "$1.csv" >"$1.rows"
	printf '%s\n' "$3" | sort >"$1.want"
	diff -u "$1.want" "$1.rows" >"$1.diff" || fail "transform csv $2: rows differ:
$(cat "$1.diff")"
	expect_eq "transform csv $2: stderr" "$(cat "$1.err")" "msmemscope-replay: wrote $1.csv: $4"
}

t=transform
check peak "" "malloc 1 8000 $t peak_again:$(line PEAKAGAIN) main
malloc 1 300 $t leak_two:$(line LEAK1) main
malloc 1 300 $t leak_two:$(line LEAK2) main
malloc 3 48 $t one_filler:$(line ONEFILL) temp_one
malloc 2 16 $t three_filler:$(line THREEFILL) temp_three
malloc 2 16 $t three_filler:$(line THREEFILL) temp_three
malloc 2 16 $t three_filler:$(line THREEFILL) temp_three" \
	"12 allocations live at the peak, 8696 bytes, in 7 rows; peak 8696 bytes"
check leaks "--leaks" "malloc 1 300 $t leak_two:$(line LEAK1) main
malloc 1 300 $t leak_two:$(line LEAK2) main
malloc 3 48 $t one_filler:$(line ONEFILL) temp_one
malloc 2 16 $t three_filler:$(line THREEFILL) temp_three
malloc 2 16 $t three_filler:$(line THREEFILL) temp_three
malloc 2 16 $t three_filler:$(line THREEFILL) temp_three" \
	"11 allocations leaked, 696 bytes, in 6 rows; peak 8696 bytes"
# The same program keeping its pointers: every block live at exit is still
# reachable, so none is a leak (before, --leaks listed all 11 as leaked).
record keep.mms "$prog" keep >keep.out || fail "transform keep exited $?: $(cat keep.out)"
"$MMS_REPLAY" transform csv --leaks -o keep.csv keep.mms 2>keep.err || fail "transform csv --leaks (keep): $(cat keep.err)"
grep -q ': 0 allocations leaked, 0 bytes, in 0 rows' keep.err || fail "--leaks of reachable blocks: $(cat keep.err)"
check temp0 "--temporary-allocation-threshold=0" "malloc 1 8000 $t peak_again:$(line PEAKAGAIN) main
malloc 1 5000 $t peak_big:$(line PEAKBIG) main
malloc 4 256 $t temp_zero:$(line ZERO) main" \
	"6 allocations temporary, 13256 bytes, in 3 rows; peak 8696 bytes"
check temp1 "--temporary-allocations" "malloc 1 8000 $t peak_again:$(line PEAKAGAIN) main
malloc 1 5000 $t peak_big:$(line PEAKBIG) main
malloc 1 1000 $t peak_three:$(line PEAKTHREE) main
malloc 3 384 $t temp_one:$(line ONE) main
malloc 4 256 $t temp_zero:$(line ZERO) main" \
	"10 allocations temporary, 14640 bytes, in 5 rows; peak 8696 bytes"
check temp3 "--temporary-allocation-threshold 3" "malloc 1 8000 $t peak_again:$(line PEAKAGAIN) main
malloc 1 5000 $t peak_big:$(line PEAKBIG) main
malloc 3 3000 $t peak_three:$(line PEAKTHREE) main
malloc 2 512 $t temp_three:$(line THREE) main
malloc 3 384 $t temp_one:$(line ONE) main
malloc 4 256 $t temp_zero:$(line ZERO) main" \
	"14 allocations temporary, 17152 bytes, in 6 rows; peak 8696 bytes"
# A large N counts each block's place among its thread's allocations
# instead of a window of N + 1 ids: every allocation freed by its thread.
for n in 100000 18446744073709551615; do
	"$MMS_REPLAY" transform csv --temporary-allocation-threshold $n -o big$n.csv t.mms 2>big$n.err ||
		fail "transform csv --temporary-allocation-threshold $n exited $?: $(cat big$n.err)"
	rows big$n.csv >big$n.rows
	cmp -s big$n.rows temp3.rows || fail "threshold $n: $(diff temp3.rows big$n.rows)"
done
note "csv: peak, leaks and temporary (0, 1, 3, 100000, 2^64 - 1) rows as the program made them"

# Per thread: the worker's block freed after 6 allocations of the main
# thread but none of its own is temporary at N = 0; the block the main
# thread allocated and the worker freed is not, at any N.
record th.mms "$prog" threads >th.out || fail "transform threads exited $?: $(cat th.out)"
tpid=$(sed -n 's/^transform threads pid=\([0-9][0-9]*\) kept=5$/\1/p' th.out)
[ -n "$tpid" ] || fail "transform threads printed: $(cat th.out)"
for n in 0 5; do
	"$MMS_REPLAY" transform csv --temporary-allocation-threshold $n -o th$n.csv th.mms 2>th$n.err ||
		fail "transform csv (threads, $n) exited $?: $(cat th$n.err)"
	got=$(rows th$n.csv threads "$tpid")
	expect_eq "temporary at N = $n, per thread" "$got" "malloc 1 32 other worker_alloc:$(line WORKER) worker"
done
"$MMS_REPLAY" transform csv --temporary-allocation-threshold 100000 -o thbig.csv th.mms 2>thbig.err ||
	fail "transform csv (threads, 100000) exited $?: $(cat thbig.err)"
expect_eq "temporary at N = 100000, per thread" "$(rows thbig.csv threads "$tpid")" \
	"malloc 1 32 other worker_alloc:$(line WORKER) worker"
"$MMS_REPLAY" transform csv --leaks -o thl.csv th.mms 2>thl.err || fail "transform csv --leaks (threads): $(cat thl.err)"
expect_eq "leaks of the threads run" "$(rows thl.csv threads "$tpid")" "malloc 5 120 main main_noise:$(line NOISE) threads"
note "csv: temporary allocations counted per thread, as memray"

# Mappings: the peak holds the 4-page mapping whole (one allocation, though
# it went in two cuts), only the mapping unmapped whole at once is
# temporary, the kept one leaks.
record mm.mms "$prog" mmap >mm.out || fail "transform mmap exited $?: $(cat mm.out)"
mpid=$(sed -n 's/^transform mmap pid=\([0-9][0-9]*\) page=[0-9]*$/\1/p' mm.out)
pg=$(sed -n 's/^transform mmap pid=[0-9]* page=\([0-9][0-9]*\)$/\1/p' mm.out)
[ -n "$mpid" ] && [ -n "$pg" ] || fail "transform mmap printed: $(cat mm.out)"
mcheck() {
	"$MMS_REPLAY" transform csv $2 -o "$1.csv" mm.mms 2>"$1.err" || fail "transform csv $2 (mmap) exited $?: $(cat "$1.err")"
	expect_eq "mappings, transform csv $2" "$(rows "$1.csv" threads "$mpid")" "$3"
}
mcheck mpeak "" "malloc 1 100 main mappings:$(line MMAPMALLOC) main
mmap 1 $((4 * pg)) main map_pages:$(line MMAP) mappings"
mcheck mleaks --leaks "malloc 1 100 main mappings:$(line MMAPMALLOC) main
mmap 1 $((2 * pg)) main map_pages:$(line MMAP) mappings"
mcheck mtemp "--temporary-allocation-threshold 100000" "mmap 1 $((3 * pg)) main map_pages:$(line MMAP) mappings"
mcheck mtemp1 "--temporary-allocations" "mmap 1 $((3 * pg)) main map_pages:$(line MMAP) mappings"
note "csv: mappings at the peak, leaked and temporary (memray's whole-unmapping rule)"

# --- file names and rules ---------------------------------------------------------
mkdir sub
cp t.mms sub/memscope-run.mms
"$MMS_REPLAY" transform csv sub/memscope-run.mms 2>name.err || fail "transform csv (default name) exited $?: $(cat name.err)"
[ -f sub/memscope-csv-run.csv ] || fail "no sub/memscope-csv-run.csv (memray's naming): $(ls sub)"
cmp -s sub/memscope-csv-run.csv peak.csv || fail "the default-named CSV differs from peak.csv"
if "$MMS_REPLAY" transform csv sub/memscope-run.mms 2>again.err; then
	fail "a second transform replaced sub/memscope-csv-run.csv"
fi
grep -q "memscope-csv-run.csv exists; remove it, name another file with -o, or add -f" again.err ||
	fail "refusal message: $(cat again.err)"
"$MMS_REPLAY" transform csv --leaks -f sub/memscope-run.mms 2>force.err || fail "-f: $(cat force.err)"
cmp -s sub/memscope-csv-run.csv leaks.csv || fail "-f did not replace the file with the leaks"
ln -s nowhere link.csv
if "$MMS_REPLAY" transform csv -o link.csv t.mms 2>link.err; then
	fail "transform wrote through a symlink"
fi
for bad in "transform" "transform xml t.mms" "transform csv" "transform csv --leaks --temporary-allocations t.mms" \
	"transform csv --temporary-allocation-threshold=x t.mms" "transform csv --title T t.mms" \
	"transform csv --bogus t.mms" "transform csv t.mms t.mms"; do
	set +e
	"$MMS_REPLAY" $bad >bad.out 2>bad.err
	rc=$?
	set -e
	expect_eq "exit status of '$bad'" "$rc" 2
	grep -q "Try 'msmemscope-replay transform --help'" bad.err || fail "'$bad' does not point to transform --help: $(cat bad.err)"
done
"$MMS_REPLAY" transform csv --leaks --temporary-allocations t.mms 2>conflict.err || :
grep -q -- "--leaks and --temporary-allocations cannot go together" conflict.err ||
	fail "the conflict message names the options: $(cat conflict.err)"
"$MMS_REPLAY" transform --help >help.out || fail "transform --help exited $?"
grep -q -- "--temporary-allocation-threshold N" help.out || fail "transform --help: $(cat help.out)"
note "files: memray's default name, refusal, -f, no symlink followed, 8 usage errors"

# --- gprof2dot ----------------------------------------------------------------------
"$MMS_REPLAY" transform gprof2dot -o p.json t.mms 2>p.err || fail "transform gprof2dot exited $?: $(cat p.err)"
"$MMS_PYTHON" - p.json <<'PY' || fail "p.json: $(head -c 800 p.json)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == 0, d["version"]
assert d["costs"] == [{"description": "Memory", "unit": "bytes"}], d["costs"]
fn = d["functions"]
assert all(set(f) == {"name", "module"} for f in fn), fn
assert len({(f["name"], f["module"]) for f in fn}) == len(fn), "a function listed twice"
total, by_inner = 0, {}
for e in d["events"]:
    assert set(e) == {"callchain", "cost"} and len(e["cost"]) == 1, e
    assert e["callchain"] and all(0 <= i < len(fn) for i in e["callchain"]), e
    total += e["cost"][0]
    name = fn[e["callchain"][0]]["name"]
    by_inner[name] = by_inner.get(name, 0) + e["cost"][0]
    assert fn[e["callchain"][1]]["name"] in ("main", "temp_one", "temp_three"), e
want = {"peak_again": 8000, "leak_two": 600, "one_filler": 48, "three_filler": 48}
assert by_inner == want, by_inner
assert total == 8696, total
PY
if command -v gprof2dot >/dev/null 2>&1; then
	gprof2dot -f json p.json >p.dot 2>p.dot.err || fail "gprof2dot -f json p.json: $(cat p.dot.err)"
	grep -q "peak_again" p.dot || fail "gprof2dot's graph has no peak_again: $(head -c 400 p.dot)"
	note "gprof2dot: the JSON has gprof2dot's structure; gprof2dot reads it"
else
	note "gprof2dot: the JSON has gprof2dot's structure (gprof2dot is not installed, so not run on it: it comes from PyPI, this Debian has no package)"
fi

# --- the flame graph ------------------------------------------------------------------
"$MMS_REPLAY" transform flamegraph -o f.svg t.mms 2>f.err || fail "transform flamegraph exited $?: $(cat f.err)"
"$MMS_REPLAY" transform flamegraph --temporary-allocation-threshold 3 --title 'a <b> & c' -o f3.svg t.mms 2>f3.err ||
	fail "transform flamegraph (temporary) exited $?: $(cat f3.err)"
"$MMS_PYTHON" - f.svg f3.svg peak.csv "$(line PEAKAGAIN)" "$(line LEAK1)" "$(line ONEFILL)" <<'PY' || fail "the flame graphs"
import csv, sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"

def boxes(path):
    raw = open(path, encoding="utf-8").read()
    # Self-contained: the only URL is the SVG namespace.
    if raw.count("http") != 1 or "href" in raw:
        sys.exit(path + ": refers to something outside the file")
    root = ET.fromstring(raw)
    assert root.tag == NS + "svg", root.tag
    out = []
    for g in root.iter(NS + "g"):
        if g.get("class") == "f":
            r, t, txt = g.find(NS + "rect"), g.find(NS + "title"), g.find(NS + "text")
            assert r is not None and t is not None and txt is not None, path
            out.append((t.text, float(r.get("x")), float(r.get("width")), float(r.get("y"))))
    return root, out

root, b = boxes(sys.argv[1])
titles = {t for t, *_ in b}
peak_again, leak1, onefill = sys.argv[4:7]
for want in ("all\n8696 bytes in 12 allocations, 100.00%",
             "peak_again (../tests/progs/transform.c:%s)\n8000 bytes in 1 allocation, 92.00%%" % peak_again,
             "leak_two (../tests/progs/transform.c:%s)\n300 bytes in 1 allocation, 3.45%%" % leak1,
             "one_filler (../tests/progs/transform.c:%s)\n48 bytes in 3 allocations, 0.55%%" % onefill):
    # DWARF may name the file otherwise than ../tests/progs/: compare from the name.
    if not any(t.split("(")[0] == want.split("(")[0] and t.endswith(want.split("transform.c")[-1]) for t in titles):
        sys.exit("no box titled %r among %r" % (want, sorted(titles)))
# One box per call path: the distinct outermost-first prefixes of the CSV's
# stacks (names and lines), and the root.
paths = set()
for r in list(csv.reader(open(sys.argv[3], newline="")))[1:]:
    frames = [f.split(";") for f in r[5].split("|")][::-1]
    for i in range(1, len(frames) + 1):
        paths.add(tuple((f[0], f[2]) for f in frames[:i]))
if len(b) != len(paths) + 1:
    sys.exit("%d boxes, %d call paths + the root" % (len(b), len(paths)))
w = {t.split("\n")[0].split(" (")[0]: width for t, x, width, y in b}
assert abs(w["all"] - 1180) < 0.01, w["all"]
assert abs(w["peak_again"] - 1180 * 8000 / 8696) < 0.01, w["peak_again"]
root3, b3 = boxes(sys.argv[2])
t3 = {t for t, *_ in b3}
assert "all\n17152 bytes in 14 allocations, 100.00%" in t3, sorted(t3)
title = [e for e in root3.iter(NS + "text") if e.get("id") == "title"][0].text
assert title == "a <b> & c", title
PY
note "flamegraph: well-formed SVG, $(grep -c 'class="f"' f.svg) boxes (peak), hover titles with bytes, counts and percents"

# The shortcut: msmemscope-replay LOG --flamegraph FILE draws the same
# picture as transform flamegraph, alone or beside an analysis, and keeps
# an existing file unless --force.
"$MMS_REPLAY" t.mms --flamegraph fs.svg 2>fs.err || fail "--flamegraph exited $?: $(cat fs.err)"
cmp -s f.svg fs.svg || fail "--flamegraph and transform flamegraph drew different pictures"
if "$MMS_REPLAY" t.mms --flamegraph fs.svg 2>fs.err; then fail "--flamegraph replaced fs.svg without --force"; fi
grep -q "fs.svg exists; remove it, name another file, or add --force" fs.err ||
	fail "--flamegraph over an existing file: $(cat fs.err)"
"$MMS_REPLAY" t.mms --analysis leakage --flamegraph fs.svg --force >fs.out 2>fs.err ||
	fail "--analysis leakage --flamegraph --force exited $?: $(cat fs.err)"
cmp -s f.svg fs.svg || fail "--flamegraph beside --analysis drew a different picture"
grep -q "leakage" fs.out || fail "--analysis leakage --flamegraph printed no leakage report: $(head -3 fs.out)"
note "--flamegraph FILE: the same SVG as transform flamegraph, alone or beside --analysis"

browser=
for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then
		browser=$b
		break
	fi
done
if [ -z "$browser" ]; then
	note "flamegraph: not rendered: no Chromium (apt-get install chromium); the XML checks above stand"
	exit 0
fi
HOME=$work timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --window-size=1200,300 \
	--screenshot="$work/f.png" "file://$work/f.svg" >render.out 2>&1 || fail "$browser --headless --screenshot: $(tail -5 render.out)"
"$MMS_PYTHON" - f.png <<'PY' || fail "the rendered flame graph"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w, h = 8, b"", 0, 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp + 1
# Undo the PNG filters to read the pixels of the boxes' row band.
prev = bytearray(stride - 1)
colors = set()
for y in range(h):
    f, line = raw[y * stride], bytearray(raw[y * stride + 1:(y + 1) * stride])
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    if 40 <= y < 140:
        for x in range(20, w - 20, 7):
            colors.add(bytes(line[x * bpp:x * bpp + 3]))
# The boxes are warm colours (red well above blue): a blank or failed page has none.
warm = [c for c in colors if c[0] > 180 and c[2] < 120]
if len(warm) < 3:
    sys.exit("%d warm colours in the boxes' band: the SVG did not render" % len(warm))
PY
note "flamegraph: rendered by $browser --headless"

# Click-to-zoom: a copy of the graph with a script that clicks the box of
# peak_again and logs what its own script made of the boxes.
sed 's#</svg>#<script type="text/ecmascript"><![CDATA[window.addEventListener("load", function () { setTimeout(function () { var fs = Array.prototype.slice.call(document.querySelectorAll("g.f")), z = fs.filter(function (g) { return g.querySelector("title").textContent.indexOf("peak_again ") == 0; })[0]; z.dispatchEvent(new MouseEvent("click")); console.log("ZOOM " + z.querySelector("rect").getAttribute("width") + " " + fs.filter(function (g) { return g.style.display == "none"; }).length + " " + document.getElementById("unzoom").getAttribute("class")); }, 50); });]]></script></svg>#' f.svg >z.svg
HOME=$work timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --enable-logging=stderr --v=0 \
	--virtual-time-budget=2000 --window-size=1200,300 --screenshot="$work/z.png" "file://$work/z.svg" >zoom.out 2>&1 ||
	fail "$browser on the zoom page: $(tail -5 zoom.out)"
zoom=$(sed -n 's/.*"ZOOM \([^"]*\)".*/\1/p' zoom.out)
# peak_again fills the width; the boxes beside it and below its siblings
# (leak_two's and the fillers': all but the 6 on its path) are hidden.
expect_eq "after a click on peak_again (its width, boxes hidden, the reset button)" "$zoom" \
	"1180.00 $(($(grep -c 'class="f"' f.svg) - 6)) btn"
note "flamegraph: a click zooms (its script run by $browser)"
