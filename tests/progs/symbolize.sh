#!/bin/sh
# SPDX-License-Identifier: MIT
# symbolize.sh: the recorded stacks of tests/progs/symprog must symbolize
# to the functions, files and exact lines (found by their SYM-... marker
# comments) that allocated: in the PIE executable, in an inlined function
# (reported as inlined, then its caller at the call site), and in a C++
# library the program dlopen()s (demangled). A stripped copy of the
# library still names its exported functions from .dynsym; a library
# rebuilt or deleted since the recording gives module+offset, no names.
. "$top_srcdir/tests/progs/lib.sh"

prog=$MMS_PROGS/symprog
check=$MMS_PROGS/symcheck
src=$top_srcdir/tests/progs
sizes="7001 7002 7003 7004"

command -v strip >/dev/null 2>&1 || skip "strip is needed to make a stripped library (apt-get install binutils)"
# Debug information comes from the files themselves, never the network.
unset DEBUGINFOD_URLS
MSMEMSCOPE_CONFIG=call_stack=16
export MSMEMSCOPE_CONFIG

# marker NAME FILE: the number of the line marked SYM-NAME in FILE.
marker() {
	_m=$(grep -nE "SYM-$1( |\$)" "$src/$2" | cut -d: -f1)
	[ -n "$_m" ] && [ "$(echo "$_m" | wc -l)" = 1 ] || fail "not one SYM-$1 marker in $2: '$_m'"
	echo "$_m"
}

# val OUT SIZE K FIELD: FIELD of frame K of the SIZE-byte allocation, as
# symcheck printed it to OUT.
val() {
	awk -v s="$2" -v k="$3" -v f="$4" '
		$1 == s && $2 == k && $3 == f { sub(/^[^ ]* [^ ]* [^ ]* /, ""); print; found = 1; exit }
		END { exit !found }' "$1" || fail "$1: no $4 for frame $3 of the $2-byte allocation"
}

# expect_frame OUT SIZE K FUNCTION FILE LINE INLINED: FILE relative to
# tests/progs, or - for none.
expect_frame() {
	_what="$1: frame $3 of the $2-byte allocation"
	expect_eq "$_what: function" "$(val "$1" "$2" "$3" fn)" "$4"
	_file=$(val "$1" "$2" "$3" file)
	# As DWARF names it: relative to the compilation directory, where
	# make compiled it, unless absolute.
	case $_file in
	/* | -) _abs=$_file ;;
	*) _abs=$top_builddir/$_file ;;
	esac
	if [ "$5" = - ]; then
		expect_eq "$_what: file" "$_file" -
	elif [ "$_file" = - ] || [ "$(readlink -f "$_abs")" != "$(readlink -f "$src/$5")" ]; then
		fail "$_what: file $_file, expected $src/$5"
	fi
	expect_eq "$_what: line" "$(val "$1" "$2" "$3" line)" "$6"
	expect_eq "$_what: inlined" "$(val "$1" "$2" "$3" inlined)" "$7"
}

symcheck() {
	"$check" "$1" $sizes >"$2" 2>"$2.err" || fail "symcheck $1 exited $?: $(cat "$2.err")"
}

exe=$(readlink -f "$prog")
l_direct=$(marker DIRECT symprog.c)
l_main_direct=$(marker MAIN-DIRECT symprog.c)
l_main_inline=$(marker MAIN-INLINE symprog.c)
l_main_lib=$(marker MAIN-LIB symprog.c)
l_inl_alloc=$(marker INL-ALLOC syminl.c)
l_inl_call=$(marker INL-CALL syminl.c)
l_lib_alloc=$(marker LIB-ALLOC symlib.cc)
l_lib_call=$(marker LIB-CALL symlib.cc)
take='symns::Pool::take(unsigned int)'

# The library with its debug information, from a copy this test may
# replace and delete afterwards.
cp "$MMS_PROGS/symlib.so" libsymcopy.so
record full.mms "$prog" "$work/libsymcopy.so" >full.out || fail "symprog exited $?: $(cat full.out)"
symcheck full.mms full.txt

expect_frame full.txt 7001 0 sym_direct symprog.c "$l_direct" 0
expect_frame full.txt 7001 1 main symprog.c "$l_main_direct" 0
expect_eq "full.txt: module of sym_direct" "$(val full.txt 7001 0 module)" "$exe"
# A PIE executable: the module offset is not the address.
[ "$(val full.txt 7001 0 ip)" != "$(val full.txt 7001 0 off)" ] ||
	fail "symprog was not loaded at a bias (not PIE?): ip = offset = $(val full.txt 7001 0 ip)"
expect_eq "full.txt: text of sym_direct" "$(val full.txt 7001 0 text)" \
	"sym_direct ($(val full.txt 7001 0 file):$l_direct)"

expect_frame full.txt 7002 0 sym_inl_alloc syminl.c "$l_inl_alloc" 1
expect_frame full.txt 7002 1 sym_outer syminl.c "$l_inl_call" 0
expect_frame full.txt 7002 2 main symprog.c "$l_main_inline" 0
expect_eq "full.txt: ip of the inlined frame" "$(val full.txt 7002 0 ip)" "$(val full.txt 7002 1 ip)"

# Rust's names (the functions are C, named as Rust mangles): with
# libiberty (configure's), Rust's own; else legacy's as C++'s demangler
# gives it (the hash last), v0's mangled.
if [ "${MMS_IBERTY:-}" = yes ]; then
	rust_legacy=symprog::legacy rust_v0=symprog::rust_like
else
	rust_legacy=symprog::legacy::h0123456789abcdef rust_v0=_RNvCs1234_7symprog9rust_like
	note "built without libiberty (apt-get install libiberty-dev): Rust's names are not checked demangled"
fi
expect_frame full.txt 7004 0 "$rust_legacy" symprog.c "$(marker RUST-ALLOC symprog.c)" 0
expect_frame full.txt 7004 1 "$rust_v0" symprog.c "$(marker RUST-CALL symprog.c)" 0
expect_frame full.txt 7004 2 main symprog.c "$(marker MAIN-RUST symprog.c)" 0

expect_frame full.txt 7003 0 "$take" symlib.cc "$l_lib_alloc" 0
expect_frame full.txt 7003 1 symlib_alloc symlib.cc "$l_lib_call" 0
expect_frame full.txt 7003 2 main symprog.c "$l_main_lib" 0
expect_eq "full.txt: module of the library" "$(val full.txt 7003 0 module)" "$work/libsymcopy.so"
lib_off=$(val full.txt 7003 0 off)

# A stripped copy: the exported names from .dynsym, at the same offset;
# no files or lines.
cp "$MMS_PROGS/symlib.so" libsymstrip.so
strip libsymstrip.so
record strip.mms "$prog" "$work/libsymstrip.so" >strip.out || fail "symprog exited $?: $(cat strip.out)"
symcheck strip.mms strip.txt
expect_frame strip.txt 7003 0 "$take" - 0 0
expect_frame strip.txt 7003 1 symlib_alloc - 0 0
expect_frame strip.txt 7003 2 main symprog.c "$l_main_lib" 0
expect_eq "strip.txt: offset in the library" "$(val strip.txt 7003 0 off)" "$lib_off"
expect_eq "strip.txt: text" "$(val strip.txt 7003 0 text)" "$take (libsymstrip.so+$lib_off)"

# Another file where the library was (another build-id), then none: module
# and offset only, and the executable's frames as before.
cp "$prog" libsymcopy.so
for state in rebuilt deleted; do
	symcheck full.mms "$state.txt"
	expect_frame "$state.txt" 7003 0 - - 0 0
	expect_frame "$state.txt" 7003 1 - - 0 0
	expect_eq "$state.txt: text" "$(val "$state.txt" 7003 0 text)" "libsymcopy.so+$lib_off"
	expect_frame "$state.txt" 7003 2 main symprog.c "$l_main_lib" 0
	expect_frame "$state.txt" 7001 0 sym_direct symprog.c "$l_direct" 0
	rm -f libsymcopy.so
done
note "ok: $(val full.txt 7002 0 text) <- $(val full.txt 7002 1 text); $(val strip.txt 7003 0 text)"
