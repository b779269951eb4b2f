#!/bin/sh
# SPDX-License-Identifier: MIT
# vmexit.sh: Node.js and the Java virtual machine do not free their state
# when they exit (V8's heap and isolate, the Java heap, code cache and
# metaspace): live at exit, it is theirs, not the program's leak. Every
# `msmemscope -- node ...` listed some 13,000 blocks as leaked at exit,
# `java -version` 3,700 and 577 MiB of mappings; and `java -version`
# hung recorded with C stacks (threadattr in unwind.sh). With stacks, a
# block a native addon or a JNI library allocated itself stays the
# program's leak. The real interpreters are run where installed (CI
# installs nodejs and default-jdk-headless; the addon needs node_api.h,
# from libnode-dev or NodeSource's nodejs); stand-ins named node and java,
# built here, check the rule without them.
. "$top_srcdir/tests/progs/lib.sh"

# leaks_at_exit LOG: the program's blocks live at exit in LOG, leaked or
# still reachable, not the runtime's (the leaks report's JSON in
# LOG.leaks.json).
leaks_at_exit() {
	"$MMS_REPLAY" "$1" --analysis leaks --json >"$1.leaks.json" 2>"$1.leaks.err" ||
		fail "leaks --json on $1 exited $?: $(cat "$1.leaks.err")"
	kept_at_exit "$1.leaks.json"
}

# Node.js: a script that builds 100,000 objects.
if command -v node >/dev/null 2>&1; then
	js='let a = []; for (let i = 0; i < 100000; i++) a.push({i}); console.log(a.length)'
	for stacks in 0 16; do
		MSMEMSCOPE_CONFIG=call_stack=$stacks timeout 300 env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG=$PWD/node$stacks.mms \
			node -e "$js" >node$stacks.out || fail "node recorded (call_stack=$stacks) exited $?"
		expect_eq "node's output recorded (call_stack=$stacks)" "$(cat node$stacks.out)" 100000
		expect_eq "node (call_stack=$stacks): the program's leaks at exit" "$(leaks_at_exit node$stacks.mms)" 0
		expect_ge "node (call_stack=$stacks): Node.js's blocks at exit" \
			"$(jget node$stacks.mms.leaks.json runtime.by_kind.node.blocks)" 100
	done
	note "node: what it holds at exit is Node.js's ($(jget node16.mms.leaks.json runtime.by_kind.node.blocks) blocks with stacks)"
	# A native addon (N-API) that keeps a block its own code allocated:
	# with stacks, the program's leak.
	inc=
	for d in /usr/include/node /usr/local/include/node; do
		[ -f $d/node_api.h ] && inc=$d && break
	done
	cc=${CC:-cc}
	if [ -n "$inc" ] && command -v "$cc" >/dev/null 2>&1; then
		cat >addon.c <<'EOF'
#include <stdlib.h>
#include <node_api.h>

static void *kept;

static napi_value keep(napi_env env, napi_callback_info info)
{
	napi_value n;

	(void)info;
	kept = malloc(54321);
	napi_create_int32(env, kept != NULL, &n);
	return n;
}

NAPI_MODULE_INIT()
{
	napi_value fn;

	napi_create_function(env, "keep", NAPI_AUTO_LENGTH, keep, NULL, &fn);
	napi_set_named_property(env, exports, "keep", fn);
	return exports;
}
EOF
		"$cc" -shared -fPIC -I"$inc" -o addon.node addon.c || fail "cannot build the N-API addon with $cc"
		MSMEMSCOPE_CONFIG=call_stack=32 timeout 300 env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG=$PWD/addon.mms \
			node -e "console.log(require('$PWD/addon.node').keep())" >addon.out ||
			fail "node with the addon recorded exited $?"
		expect_eq "node with the addon: output" "$(cat addon.out)" 1
		expect_eq "node with the addon: the program's leaks at exit" "$(leaks_at_exit addon.mms)" 1
		# Kept in the addon's static variable: still reachable at exit.
		expect_key addon.mms.leaks.json reachable.bytes 54321
		note "node: a block a native addon kept is the program's (still reachable from its static variable)"
	else
		note "no node_api.h (apt-get install libnode-dev) or no C compiler: the native addon's leak not checked"
	fi
else
	note "node is not installed (apt-get install nodejs): Node.js's state at exit not checked with node itself"
fi

# The JVM: java -version, with and without stacks (with them, it hung).
if command -v java >/dev/null 2>&1; then
	java -version 2>java.native || fail "java -version natively exited $?"
	for stacks in 0 16; do
		MSMEMSCOPE_CONFIG=call_stack=$stacks timeout 300 env LD_PRELOAD="$MMS_HOOKS" MSMEMSCOPE_LOG=$PWD/java$stacks.mms \
			java -version 2>java$stacks.err || fail "java -version recorded (call_stack=$stacks) exited $?"
		expect_eq "java -version's output recorded (call_stack=$stacks)" "$(grep -v '^msmemscope' java$stacks.err)" \
			"$(cat java.native)"
		expect_eq "java (call_stack=$stacks): the program's leaks at exit" "$(leaks_at_exit java$stacks.mms)" 0
		expect_ge "java (call_stack=$stacks): the JVM's blocks at exit" \
			"$(jget java$stacks.mms.leaks.json runtime.by_kind.jvm.blocks)" 100
	done
	note "java: what the JVM holds at exit is its own, with and without stacks"
else
	note "java is not installed (apt-get install default-jdk-headless): the JVM's state at exit not checked with java itself"
fi

# Stand-ins: a program named node that keeps a block itself (node's) and
# one through a library of its own (an addon's: the program's, with
# stacks); a program named java that loads a library named libjvm.so
# which keeps a block (the JVM's) and one of its own through another
# library (a JNI library's: the program's). Named nodeapp, neither rule
# applies.
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || skip "no C compiler ($cc): the stand-ins cannot be built"
mkdir sd
printf '#include <stdlib.h>\nvoid *own_keep;\nvoid own_leak(void) { own_keep = malloc(4321); }\n' >sd/own.c
printf '#include <stdlib.h>\nvoid *vm_keep;\nvoid vm_state(void) { vm_keep = malloc(1234); }\n' >sd/vm.c
printf '#include <stdlib.h>\nvoid own_leak(void);\nvoid *state;\nint main(void) { state = malloc(1234); own_leak(); return 0; }\n' >sd/node.c
printf 'void own_leak(void);\nvoid vm_state(void);\nint main(void) { vm_state(); own_leak(); return 0; }\n' >sd/java.c
"$cc" -shared -fPIC -o sd/libown.so sd/own.c && "$cc" -shared -fPIC -o sd/libjvm.so sd/vm.c &&
	"$cc" -o sd/node sd/node.c -Lsd -lown "-Wl,-rpath,$PWD/sd" && cp sd/node sd/nodeapp &&
	"$cc" -o sd/java sd/java.c -Lsd -ljvm -lown "-Wl,-rpath,$PWD/sd" || fail "cannot build the stand-ins with $cc"
MSMEMSCOPE_CONFIG=call_stack=32 record $PWD/sdnode.mms sd/node || fail "sd/node recorded exited $?"
expect_eq "a program named node: the program's leaks at exit" "$(leaks_at_exit sdnode.mms)" 1
expect_key sdnode.mms.leaks.json reachable.bytes 4321
expect_key sdnode.mms.leaks.json runtime.by_kind.node.bytes 1234
record $PWD/sdnode0.mms sd/node || fail "sd/node recorded exited $?"
expect_eq "a program named node, no stacks: the program's leaks at exit" "$(leaks_at_exit sdnode0.mms)" 0
# Every heap block live at exit is node's then: the recorder does not scan
# the process's memory at exit (hooks/reach.c); with stacks it does.
summarize sdnode0.mms
expect_key sdnode0.mms.json reach_scan '"none"'
summarize sdnode.mms
expect_key sdnode.mms.json reach_scan '"whole"'
"$MMS_REPLAY" sdnode0.mms --analysis leaks >sdnode0.leaks || fail "leaks on sdnode0.mms exited $?"
grep -q "recorded without stacks: a block a native addon leaked is counted as Node.js's" sdnode0.leaks ||
	fail "without stacks the report does not say Node.js's count may hold a leak: $(cat sdnode0.leaks)"
MSMEMSCOPE_CONFIG=call_stack=32 record $PWD/sdapp.mms sd/nodeapp || fail "sd/nodeapp recorded exited $?"
expect_eq "a program named nodeapp: the program's leaks at exit" "$(leaks_at_exit sdapp.mms)" 2
MSMEMSCOPE_CONFIG=call_stack=32 record $PWD/sdjava.mms sd/java || fail "sd/java recorded exited $?"
expect_eq "a program named java: the program's leaks at exit" "$(leaks_at_exit sdjava.mms)" 1
expect_key sdjava.mms.leaks.json reachable.bytes 4321
expect_key sdjava.mms.leaks.json runtime.by_kind.jvm.bytes 1234
note "stand-ins: the runtime's block is the runtime's, the library's own is the program's (still reachable from its global)"

# A program that embeds CPython (gdb, perf, an editor with Python
# scripting loads libpython): only what its stacks show the interpreter
# allocating is CPython's; without stacks its blocks are its own (every
# block of gdb's was CPython's before, "No leaks at exit"). Stand-in: a
# library named libpython3.99.so keeping a block, the program keeping
# one itself and one through a library of its own.
printf 'void own_leak(void);\nvoid vm_state(void);\n#include <stdlib.h>\nvoid *mine;\nint main(void) { vm_state(); own_leak(); mine = malloc(777); return 0; }\n' >sd/embed.c
"$cc" -shared -fPIC -o sd/libpython3.99.so sd/vm.c &&
	"$cc" -o sd/embed sd/embed.c -Lsd -lpython3.99 -lown "-Wl,-rpath,$PWD/sd" || fail "cannot build the embedder with $cc"
MSMEMSCOPE_CONFIG=call_stack=32 record $PWD/sdembed.mms sd/embed || fail "sd/embed recorded exited $?"
expect_eq "a program that embeds libpython: the program's blocks at exit" "$(leaks_at_exit sdembed.mms)" 2
expect_key sdembed.mms.leaks.json reachable.bytes 5098
expect_key sdembed.mms.leaks.json runtime.by_kind.python.bytes 1234
# The summary's runtimes by memory kind: the heap's under live at exit.
summarize sdembed.mms
expect_key sdembed.mms.json runtime.python.kinds.host.bytes 1234
"$MMS_REPLAY" sdembed.mms --summary >sdembed.sum || fail "--summary on sdembed.mms exited $?"
grep -q '^    python  *1 block, 1234 bytes' sdembed.sum || fail "the summary's python line: $(cat sdembed.sum)"
record $PWD/sdembed0.mms sd/embed || fail "sd/embed recorded exited $?"
expect_eq "a program that embeds libpython, no stacks: the program's blocks at exit" "$(leaks_at_exit sdembed0.mms)" 3
expect_key sdembed0.mms.leaks.json reachable.bytes 6332
note "a program that embeds libpython: with stacks the interpreter's block is CPython's, without them all are the program's"

# A log that ends before the exit (a program killed) says what the
# runtimes keep without the words of an exit that never came: the
# loader's state for a library loaded with dlopen() is "still loaded at
# exit" only in the log of a process that exited.
printf '#include <dlfcn.h>\n#include <signal.h>\n#include <stdlib.h>\nint main(int c, char **v) { if (!dlopen(v[1], RTLD_NOW)) return 2; if (c > 2) raise(SIGKILL); return 0; }\n' >sd/dlkill.c
"$cc" -o sd/dlkill sd/dlkill.c -ldl || fail "cannot build sd/dlkill with $cc"
for how in exit kill; do
	set -- "$PWD/sd/libown.so"
	[ $how = exit ] || set -- "$@" kill
	status=0
	MSMEMSCOPE_CONFIG=call_stack=32 record $PWD/dl$how.mms sd/dlkill "$@" || status=$?
	[ $how = exit ] && want=0 || want=137
	expect_eq "sd/dlkill ($how) exit status" $status $want
	"$MMS_REPLAY" dl$how.mms --summary >dl$how.sum 2>dl$how.sum.err || fail "--summary on dl$how.mms exited $?"
	"$MMS_REPLAY" dl$how.mms --analysis leaks >dl$how.leaks 2>dl$how.leaks.err ||
		fail "leaks on dl$how.mms exited $?: $(cat dl$how.leaks.err)"
	for f in dl$how.sum dl$how.leaks; do
		grep -q "the dynamic loader's, for a library loaded with dlopen()" $f ||
			fail "$f does not say the loader's blocks: $(cat $f)"
		if [ $how = exit ]; then
			grep -q "dlopen() and still loaded at exit" $f || fail "$f: not the words of the exit: $(cat $f)"
		elif grep "dynamic loader's" $f | grep -q "exit"; then
			fail "$f: the log of a killed process speaks of its exit: $(grep "dynamic loader's" $f)"
		fi
	done
done
note "the loader's blocks: 'still loaded at exit' where the process exited, not where it was killed"
