#!/bin/sh
# SPDX-License-Identifier: MIT
# pystack.sh: Python call stacks (--call-stack=python:N, doc/python.md).
# A script allocates a known bytearray three Python calls deep: the dump's
# Call Stack(Python) names each frame at its file:line, innermost first,
# and the C column holds no Python frame; with c:N,python:M the leaks
# report shows the mixed stack, the Python frames standing where the eval
# loop ran them; a thread started by threading has its own frames; the
# program prints the same as natively; PYTHONMALLOC is malloc unless
# --python-allocator=pymalloc; a fork child's log names the frames it
# inherited from its parent. Where the package reads the frames from the
# interpreter (CPython 3.11 to 3.13), cProfile does not hide them, nor
# does an allocation made without the GIL or by a thread _thread started;
# tests/progs/pystack-hook.sh runs it all again with the profile hook
# that other Python versions use.
. "${top_srcdir:?run this test through make check}/tests/progs/lib.sh"

pkg=$top_builddir/hooks/python/build
[ -e "$pkg/msmemscope/_msmemscope.so" ] ||
	skip "configure built no Python package (Debian: apt-get install -y python3-dev, then configure again)"
export PYTHONPATH="$pkg"

cat >prog.py <<'EOF2'
import os
import threading
import msmemscope

keep = []


def make(n):
    return bytearray(n)


def work(n):
    keep.append(bytearray(777))
    keep.append(make(n))


def in_thread():
    keep.append(bytearray(54321))


msmemscope.step()
work(8000000)
msmemscope.step()
t = threading.Thread(target=in_thread)
t.start()
t.join()
msmemscope.step()
msmemscope.step()
print("done", len(keep), os.environ.get("PYTHONMALLOC"))
EOF2
me=$work/prog.py

"$MMS_PYTHON" prog.py >native.out 2>native.err || fail "prog.py exited $? natively: $(cat native.err)"

# Python frames alone, and the dump. work() allocates on its line 13
# before it calls make() on line 14: its frame moved on to the call.
"$MMS_LAUNCHER" --call-stack=python:8 --output=out --data-format=csv --analysis= -- "$MMS_PYTHON" prog.py \
	>py.out 2>py.err || fail "msmemscope --call-stack=python:8 exited $?: $(cat py.err)"
expect_eq "the program's output with Python stacks" "$(cat py.out)" "done 3 malloc"
set -- out/msmemscope_*/dump/memscope_dump_*.csv
[ -f "$1" ] || fail "no dump CSV: $(ls -R out)"
csv=$1
"$MMS_PYTHON" - "$csv" "$me" >rows.txt <<'PY' || fail "the dump's Python stacks are not the script's: $(cat rows.txt)"
import csv, sys
path, me = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(path, newline="")))
def row(size):
    r = [r for r in rows if r["Event"] == "MALLOC" and ",size:%d}" % size in r["Attr"]]
    assert len(r) == 1, (size, len(r))
    return r[0]
# bytearray(n) asks for n + 1 bytes. 8 MB, more than the interpreter's
# start ever holds at once (compiling the package's source where no .pyc
# is written took 2.8 MB): the log's peak is after make's block, which
# transform csv's check below needs.
r = row(8000001)
want = "make (%s:9)|work (%s:14)|<module> (%s:22)" % (me, me, me)
print("main:", r["Call Stack(Python)"])
assert r["Call Stack(Python)"] == want, (r["Call Stack(Python)"], want)
assert r["Call Stack(C)"] == "", r["Call Stack(C)"]
r = row(54322)
print("thread:", r["Call Stack(Python)"], r["Thread Id"])
assert r["Call Stack(Python)"].startswith("in_thread (%s:18)|Thread.run (" % me), r["Call Stack(Python)"]
# The frames the thread ran when the hook came, and nothing that returned
# before (the package's own sys.setprofile was one, once).
names = [f.split(" (")[0] for f in r["Call Stack(Python)"].split("|")]
assert names == ["in_thread", "Thread.run", "Thread._bootstrap_inner", "Thread._bootstrap"], names
assert r["Thread Id"] != r["Process Id"], "the thread's row is the main thread's"
PY
note "the dump's Call Stack(Python): $(head -1 rows.txt | cut -c7-)"

# C and Python frames: the mixed stack in the leaks report.
"$MMS_LAUNCHER" --call-stack=c:24,python:8 --output=mixed -- "$MMS_PYTHON" prog.py >mix.out 2>mix.err ||
	fail "msmemscope --call-stack=c:24,python:8 exited $?: $(cat mix.err)"
set -- mixed/msmemscope_*/memscope_*.mms
log=$1
"$MMS_REPLAY" "$log" --analysis leaks --depth 0 >leaks.txt 2>&1 || fail "--analysis leaks exited $?: $(cat leaks.txt)"
# The per-step leak of step 2: make's bytearray, C frames down to the
# call the eval loop made, then make, work and <module> in its place.
awk '/in 1 block .*step 2\)$/ { on = 1; next } on && /^  [0-9]/ { exit } on' leaks.txt >group.txt
grep -q "PyByteArray_Resize" group.txt || fail "the leak's stack has no C frame: $(cat leaks.txt)"
sed -n 's/^ *#[0-9]* *\([^ ]*\) (\([^)]*\)).*/\1 \2/p' group.txt | grep '\.py:[0-9]*$' >pyframes.txt || true
expect_eq "the Python frames of the mixed stack" "$(head -3 pyframes.txt | tr '\n' ';')" \
	"make $me:9;work $me:14;<module> $me:22;"
grep -q "_PyEval_EvalFrameDefault" group.txt && fail "the eval loop's frame is still in the mixed stack: $(cat group.txt)"
prev=$(grep -n "make ($me:9)" group.txt | cut -d: -f1)
next=$(grep -n "<module> ($me:22)" group.txt | cut -d: -f1)
expect_eq "the lines between make and <module>" "$((next - prev))" 2
expect_ge "C frames above the Python frames" "$prev" 2
"$MMS_REPLAY" "$log" --analysis leaks --depth 0 --stack-view python >pyview.txt 2>&1 ||
	fail "--stack-view python exited $?: $(cat pyview.txt)"
awk '/in 1 block .*step 2\)$/ { on = 1; next } on && /^  [0-9]/ { exit } on' pyview.txt >pygroup.txt
expect_eq "--stack-view python" "$(sed 's/^ *//' pygroup.txt | tr '\n' ';')" \
	"#0  make ($me:9);#1  work ($me:14);#2  <module> ($me:22);"
"$MMS_REPLAY" "$log" --analysis leaks --depth 0 --stack-view c >cview.txt 2>&1 || fail "--stack-view c exited $?"
awk '/in 1 block .*step 2\)$/ { on = 1; next } on && /^  [0-9]/ { exit } on' cview.txt >cgroup.txt
grep -q "_PyEval_EvalFrameDefault" cgroup.txt || fail "--stack-view c lost the eval loop's frame: $(cat cgroup.txt)"
grep -q "$me" cgroup.txt && fail "--stack-view c shows Python frames: $(cat cgroup.txt)"
"$MMS_REPLAY" transform csv -o tr.csv "$log" >tr.txt 2>&1 || fail "transform csv exited $?: $(cat tr.txt)"
grep -q "PyByteArray_Resize;[^|]*|.*|_PyObject_MakeTpCall;[^|]*|make;$me;9|work;$me;14|<module>;$me;22|" tr.csv ||
	fail "transform csv has not the mixed stack of make's bytearray: $(grep "make;" tr.csv | head -3)"
note "the leaks report and transform csv show the mixed stack (C frames, then make, work, <module>); --stack-view each kind"

# pymalloc kept on request; nothing Python-specific without Python stacks.
"$MMS_LAUNCHER" --call-stack=python:4 --python-allocator=pymalloc --analysis= --output=pm -- "$MMS_PYTHON" prog.py \
	>pm.out 2>pm.err || fail "--python-allocator=pymalloc exited $?: $(cat pm.err)"
expect_eq "the output with --python-allocator=pymalloc" "$(cat pm.out)" "done 3 None"
"$MMS_LAUNCHER" --call-stack=c:8 --analysis= --output=c -- "$MMS_PYTHON" prog.py >c.out 2>c.err ||
	fail "--call-stack=c:8 exited $?: $(cat c.err)"
cmp -s c.out native.out || fail "the output under --call-stack=c:8 is not the native one: $(cat c.out)"
"$MMS_LAUNCHER" --print-env --call-stack=python:8 --output=env >env.txt || fail "--print-env exited $?"
grep -q "^export PYTHONPATH='.*/msmemscope/boot:" env.txt || fail "--print-env sets no PYTHONPATH: $(cat env.txt)"
grep -q '^export PYTHONMALLOC="${PYTHONMALLOC:-malloc}"$' env.txt || fail "--print-env: PYTHONMALLOC: $(cat env.txt)"
"$MMS_LAUNCHER" --print-env --python-allocator=pymalloc --output=env2 >env2.txt 2>env2.err ||
	fail "--print-env --python-allocator=pymalloc exited $?"
grep -q "^msmemscope: warning: --python-allocator goes with --call-stack=python:N" env2.err ||
	fail "--python-allocator without Python stacks: no warning: $(cat env2.err)"
grep -q "PYTHON" env2.txt && fail "--python-allocator without Python stacks set a Python variable: $(cat env2.txt)"
note "--python-allocator=pymalloc leaves PYTHONMALLOC alone (and without Python stacks says it is ignored); C stacks alone change nothing"

# A fork child's log starts empty: the code objects of the frames it
# inherited are defined in it again.
cat >fork.py <<'EOF2'
import os
keep = []


def child_work():
    keep.append(bytearray(7000))


def main():
    pid = os.fork()
    if pid == 0:
        child_work()
        os._exit(0)
    os.waitpid(pid, 0)


main()
EOF2
"$MMS_LAUNCHER" --call-stack=python:8 --analysis= --output=fork -- "$MMS_PYTHON" fork.py >fork.out 2>fork.err ||
	fail "fork.py exited $?: $(cat fork.err)"
n=0
for l in fork/msmemscope_*/memscope_*.mms; do
	n=$((n + 1))
	"$MMS_REPLAY" "$l" --export csv -o "dump$n.csv" >/dev/null 2>&1 || fail "--export csv of $l exited $?"
done
expect_eq "logs of the fork run" "$n" 2
f=$work/fork.py
grep -h ',size:7001}",' dump*.csv >child.txt || fail "no log has the child's bytearray(7000)"
grep -qF "\"child_work ($f:6)|main ($f:12)|<module> ($f:17)\"" child.txt ||
	grep -qF ",child_work ($f:6)|main ($f:12)|<module> ($f:17)," child.txt ||
	fail "the child's stack is not child_work, main, <module>: $(cat child.txt)"
note "a fork child's log names the frames it inherited"

# A profiler set from C (cProfile) replaces the package's hook without a
# word: the frames that return under it are not followed, and must not be
# read (the recorder checks the thread's profile function at each stack).
cat >cprof.py <<'EOF2'
import cProfile
keep = []


def f(n):
    return [bytearray(1111) for _ in range(n)]


def main():
    keep.append(f(3))
    pr = cProfile.Profile()
    pr.enable()
    for i in range(100):
        keep.append(f(20))
    pr.disable()
    for i in range(500):
        keep.append(f(10))
    print("ok", len(keep))


main()
EOF2
"$MMS_LAUNCHER" --call-stack=python:8 --output=cprof --data-format=csv -- "$MMS_PYTHON" cprof.py >cprof.out 2>cprof.err ||
	fail "cprof.py exited $? under Python stacks: $(cat cprof.err)"
expect_eq "cprof.py's output" "$(cat cprof.out)" "ok 601"
c=$work/cprof.py
# A list comprehension has a frame of its own before Python 3.12 (PEP 709).
lc=$("$MMS_PYTHON" -c 'import sys; print("" if sys.version_info >= (3, 12) else "f.<locals>.<listcomp> (%s:6)|" % sys.argv[1])' "$c")
expect_eq "rows of f's bytearrays before cProfile with f's stack" \
	"$(grep -cF ",size:1112}\",${lc}f ($c:6)|main ($c:10)|<module> ($c:21)," \
		cprof/msmemscope_*/dump/*.csv)" 3
note "cProfile replacing the hook: the program runs on, the frames before it were recorded"
# Where the package reads the frames from the interpreter (CPython 3.11 to
# 3.13, unless MSMEMSCOPE_PYTHON_FRAMES=hook), no profile hook is there to
# be replaced: the frames under cProfile and after it are recorded too.
# The package says which way it keeps them.
walk=$("$MMS_LAUNCHER" --call-stack=python:1 --output=walkq --analysis= -- "$MMS_PYTHON" -c \
	'import msmemscope; print(int(not msmemscope._c.stacks_hooked()))' 2>walkq.err) ||
	fail "asking the package how it keeps the frames exited $?: $(cat walkq.err)"
# Which way is the documented one: the interpreter's frames on 3.11 to
# 3.13 (with the GIL), the hook elsewhere or when asked for.
want=$("$MMS_PYTHON" -c 'import sys, sysconfig
print(int((3, 11) <= sys.version_info[:2] <= (3, 13) and not sysconfig.get_config_var("Py_GIL_DISABLED")))')
[ "${MSMEMSCOPE_PYTHON_FRAMES:-}" != hook ] || want=0
expect_eq "frames read from the interpreter (1) or kept by the hook (0)" "$walk" "$want"
if [ "$walk" = 1 ]; then
	expect_eq "rows of f's bytearrays under cProfile with f's stack (frames read from the interpreter)" \
		"$(grep -cF ",size:1112}\",${lc}f ($c:6)|main ($c:14)|<module> ($c:21)," \
			cprof/msmemscope_*/dump/*.csv)" 2000
	expect_eq "rows of f's bytearrays after cProfile with f's stack" \
		"$(grep -cF ",size:1112}\",${lc}f ($c:6)|main ($c:17)|<module> ($c:21)," \
			cprof/msmemscope_*/dump/*.csv)" 5000
	note "frames read from the interpreter: cProfile changes nothing, every row has its stack"
fi

# An allocation made without the GIL (ctypes releases it around a call)
# by functions no stack showed before, and one by a thread the threading
# module did not start (_thread): their Python frames, file:line.
cat >nogil.py <<'EOF2'
import _thread
import ctypes
import time

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]


def raw(n):
    return libc.malloc(n)


def outer():
    return raw(4321)


done = []


def in_thread():
    done.append(raw(5432))


p = outer()
_thread.start_new_thread(in_thread, ())
while not done:
    time.sleep(0.01)
print("ok")
EOF2
"$MMS_LAUNCHER" --call-stack=python:4 --output=nogil --data-format=csv --analysis= -- "$MMS_PYTHON" nogil.py \
	>nogil.out 2>nogil.err || fail "nogil.py exited $?: $(cat nogil.err)"
expect_eq "nogil.py's output" "$(cat nogil.out)" ok
g=$work/nogil.py
expect_eq "the block malloc'd without the GIL with its Python frames" \
	"$(grep -cF ",size:4321}\",raw ($g:11)|outer ($g:15)|<module> ($g:25)," nogil/msmemscope_*/dump/*.csv)" 1
if [ "$walk" = 1 ]; then
	# The profile hook is installed by threads the threading module
	# starts; the frames read from the interpreter need nothing.
	expect_eq "the block malloc'd by a _thread thread with its Python frames" \
		"$(grep -cF ",size:5432}\",raw ($g:11)|in_thread ($g:22)," nogil/msmemscope_*/dump/*.csv)" 1
	note "an allocation without the GIL, and one of a _thread thread, have their Python frames"
else
	note "an allocation without the GIL has its Python frames"
fi

# A stack deeper than the first room of a thread's shadow stack (256) and
# than Python's default recursion limit: the innermost frames are kept.
cat >deep.py <<'EOF2'
import sys
sys.setrecursionlimit(20000)
keep = []
def r(n):
    if n == 0:
        keep.append(bytearray(4321))
        return 0
    return r(n - 1) + 1
print(r(6000))
EOF2
"$MMS_LAUNCHER" --call-stack=python:3 --output=deep --data-format=csv --analysis= -- "$MMS_PYTHON" deep.py >deep.out 2>deep.err ||
	fail "deep.py exited $?: $(cat deep.err)"
expect_eq "deep.py's output" "$(cat deep.out)" 6000
d=$work/deep.py
expect_eq "rows of the bytearray 6001 frames deep with its 3 innermost frames" \
	"$(grep -cF ",size:4322}\",r ($d:6)|r ($d:8)|r ($d:8)," deep/msmemscope_*/dump/*.csv)" 1
note "6001 frames deep: the innermost frames are the ones recorded"

# The boot folder's sitecustomize runs the one it hides.
mkdir -p site
echo 'print("the program'"'"'s sitecustomize ran")' >site/sitecustomize.py
PYTHONPATH=$work/site:$pkg "$MMS_LAUNCHER" --call-stack=python:4 --output=site-out --analysis= -- "$MMS_PYTHON" -c \
	'import msmemscope; print("python_stack", msmemscope._c.stacks())' >site.out 2>site.err ||
	fail "python3 -c with a sitecustomize of its own exited $?: $(cat site.err)"
expect_eq "the output with a sitecustomize of the program's" "$(cat site.out | tr '\n' ';')" \
	"the program's sitecustomize ran;python_stack 4;"
note "the program's own sitecustomize runs after the package's boot"

# Guard mode's findings name the Python frames too.
cat >overflow.py <<'EOF2'
import ctypes

def overflow():
    b = bytearray(100)
    addr = ctypes.addressof((ctypes.c_char * 100).from_buffer(b))
    ctypes.memset(addr + 100, 0x41, 8)
    return b

def main():
    b = overflow()
    del b

main()
EOF2
st=0
"$MMS_LAUNCHER" --guard --call-stack=python:8 --output=guard -- "$MMS_PYTHON" overflow.py >guard.out 2>guard.err || st=$?
expect_eq "overflow.py's status under guard mode" "$st" 0
o=$work/overflow.py
awk '/^==guard== overflow/ { on = 1 } on' guard.err >finding.txt
grep -q "^  7 bytes damaged at offset 101 (past the end): 41 41 41 41 41 41 41$" finding.txt ||
	fail "guard mode did not find the overflow: $(cat guard.err)"
expect_eq "the allocation's Python frames" \
	"$(awk '/allocated at event/ { on = 1; next } on && /^  [a-z]/ { exit } on' finding.txt | sed 's/^ *//' | tr '\n' ';')" \
	"#0  overflow ($o:4);#1  main ($o:10);#2  <module> ($o:13);"
grep -A1 "found at event" finding.txt | grep -qF "#0  main ($o:11)" ||
	fail "the finding is not at main's del: $(cat finding.txt)"
note "guard mode's findings show where Python allocated and freed the block"

# What a module allocates while it is imported is its state, kept as long
# as the module (CPython never unloads one): live at exit, it is CPython's,
# not a leak, though native code allocated it; what native code allocates
# for the program after the imports and never frees is the program's leak.
mkdir -p mods
cat >mods/leakymod.py <<'EOF2'
import ctypes

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
state = libc.malloc(11111)
EOF2
cat >imports.py <<'EOF2'
import ctypes

import leakymod

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p


def later():
    return libc.malloc(22222)


later()
EOF2
PYTHONPATH="$work/mods:$pkg" "$MMS_LAUNCHER" --call-stack=c:16,python:8 --output=imp --analysis= -- \
	"$MMS_PYTHON" imports.py >imp.out 2>imp.err || fail "imports.py exited $? under the recorder: $(cat imp.err)"
# expect_filed DIR KEPT LEAKED: in the log of the run folder DIR, the block of
# KEPT bytes is kept by a runtime at exit, and the one of LEAKED bytes is
# the program's leak.
expect_filed() {
	_log=$(find "$1" -name '*.mms' | head -n 1)
	"$MMS_REPLAY" "$_log" --analysis leaks --json >"$1.json" 2>"$1.err" || fail "leaks exited $?: $(cat "$1.err")"
	"$MMS_PYTHON" - "$1.json" "$2" "$3" <<'EOF2' || fail "$1: the import's block or the later leak is misfiled: $(head -c 2000 "$1.json")"
import json, sys
d = json.load(open(sys.argv[1]))
kept_size, leak_size = int(sys.argv[2]), int(sys.argv[3])
# The program's, leaked or still reachable.
leaks = [b["bytes"] for b in d["at_exit"]["list"] + d["reachable"]["list"]]
kept = [b["bytes"] for b in d["runtime"]["list"]]
sys.exit(not (leak_size in leaks and kept_size not in leaks and kept_size in kept))
EOF2
}
expect_filed imp 11111 22222
note "a block a module allocated while imported is CPython's at exit; one allocated later is the program's leak"

# The same however deep the import is, and however few Python frames are
# recorded: the package scopes importlib's loading of each module (its
# frames are not among the innermost 2 here: the module's own function
# calls the allocator, from a function of the program that imports it
# with importlib.import_module). A failed import's traceback shows no
# frame of msmemscope's.
cat >mods/deepmod.py <<'EOF2'
import ctypes

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p


def helper():
    return libc.malloc(33333)


def setup():
    return helper()


state = setup()
EOF2
cat >mods/badmod.py <<'EOF2'
raise ValueError("badmod refuses to load")
EOF2
cat >deepimports.py <<'EOF2'
import ctypes
import importlib
import traceback

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p


def load(name):
    return importlib.import_module(name)


def outer():
    return load("deepmod")


outer()
try:
    load("badmod")
except ValueError:
    print("".join(traceback.format_exc()).count("msmemscope"))
libc.malloc(44444)
EOF2
PYTHONPATH="$work/mods" "$MMS_PYTHON" deepimports.py >deepimp.native 2>&1 || fail "deepimports.py natively exited $?"
PYTHONPATH="$work/mods:$pkg" "$MMS_LAUNCHER" --call-stack=c:16,python:2 --output=deepimp --analysis= -- \
	"$MMS_PYTHON" deepimports.py >deepimp.out 2>deepimp.err || fail "deepimports.py exited $? under the recorder: $(cat deepimp.err)"
expect_eq "deepimports.py's output (the traceback's frames of msmemscope's)" "$(cat deepimp.out)" "$(cat deepimp.native)"
expect_filed deepimp 33333 44444
# With C stacks alone, the launcher loads the package too, for that.
PYTHONPATH="$work/mods:$pkg" "$MMS_LAUNCHER" --call-stack=c:16 --output=cimp --analysis= -- \
	"$MMS_PYTHON" deepimports.py >cimp.out 2>cimp.err || fail "deepimports.py exited $? under the recorder: $(cat cimp.err)"
expect_eq "deepimports.py's output with C stacks" "$(cat cimp.out)" "$(cat deepimp.native)"
expect_filed cimp 33333 44444
note "with python:2 or C stacks alone, a block allocated three calls deep in an import_module() is CPython's at exit; a later one the program's leak"
