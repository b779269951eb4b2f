#!/bin/sh
# SPDX-License-Identifier: MIT
# gpustage.sh: gathers what the GPU checks need into one folder that can
# travel to a machine with a GPU which has no build tools for msmemscope
# (no libdw, libunwind, libsqlite3 or libedit; another distribution), where
# tests/cuda/ongpu.sh runs them from the source tree's root. Run in the
# build tree after make, with the CUDA toolkit found at configure time:
#
#     sh ../tests/cuda/gpustage.sh [STAGE]     (STAGE default: $top_srcdir/_gpu)
#
# STAGE then holds bin/msmemscope-replay (a script that runs the program
# beside it with STAGE/lib: the replay library and the shared libraries it
# and the program need, as ldd lists them here, but glibc's own), lib/ with
# the recorder (libmsmemscope-hooks.so), rec/ with the one library the
# recorder needs (libunwind), for the recorded programs' LD_LIBRARY_PATH,
# examples/cudamem and examples/cudadrv as built here, and in
# static/examples the two linked against the static CUDA runtime
# (libcudart_static.a), for gpu.sh and gpudrv.sh run a second time. The
# folder is ignored by git (.gitignore): name it where a tool carries
# ignored folders along. Environment: top_builddir (default .), top_srcdir
# (default ..), CUDA_HOME (default /usr/local/cuda), CC (default cc).
set -eu

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-..}
cuda=${CUDA_HOME:-/usr/local/cuda}
stage=${1:-$top_srcdir/_gpu}

die() {
	echo "gpustage.sh: $*" >&2
	exit 1
}

hooks=$top_builddir/hooks/.libs/libmsmemscope-hooks.so
replaylib=$top_builddir/replay/.libs/libmsmemscope-replay.so.0
replay=$top_builddir/src/.libs/msmemscope-replay
for f in "$hooks" "$replaylib" "$replay" "$top_builddir/examples/cudamem" "$top_builddir/examples/cudadrv"; do
	[ -e "$f" ] || die "$f is not built: run make, with the CUDA toolkit at configure time (--with-cuda=DIR)"
done
[ -e "$cuda/lib64/libcudart_static.a" ] || die "no $cuda/lib64/libcudart_static.a for the static builds (CUDA_HOME=DIR)"

rm -rf "$stage"
mkdir -p "$stage/bin/.real" "$stage/lib" "$stage/rec" "$stage/examples" "$stage/tests/progs" \
	"$stage/static/examples" "$stage/static/tests/progs"

# deps FILE...: the shared libraries FILEs need, as paths, but glibc's
# own (every Linux has a glibc at least as new as Debian 12's) and ours.
deps() {
	LD_LIBRARY_PATH=$top_builddir/replay/.libs ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' |
		grep -v '/\(libc\|libm\|libdl\|librt\|libpthread\|libresolv\|ld-linux-x86-64\)\.so\|libmsmemscope' | sort -u
}

cp "$hooks" "$stage/lib/"
cp "$replaylib" "$stage/lib/"
cp "$replay" "$stage/bin/.real/"
for lib in $(deps "$replaylib" "$replay"); do
	cp -L "$lib" "$stage/lib/"
done
for lib in $(deps "$hooks"); do
	case $lib in
	*/libunwind*) cp -L "$lib" "$stage/rec/" ;;
	*) ;; # what libunwind needs (liblzma) every distribution has
	esac
done
cat >"$stage/bin/msmemscope-replay" <<'EOF'
#!/bin/sh
# The replay with the libraries staged beside it (gpustage.sh).
here=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH=$here/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec "$here/.real/msmemscope-replay" "$@"
EOF
chmod +x "$stage/bin/msmemscope-replay"

cp "$top_builddir/examples/cudamem" "$top_builddir/examples/cudadrv" "$stage/examples/"
for prog in cudamem cudadrv; do
	drv=
	[ $prog = cudamem ] || drv="-L$cuda/lib64/stubs -lcuda"
	# shellcheck disable=SC2086 # $drv: two words or none
	"${CC:-cc}" -O2 -g -I"$cuda/include" -I"$top_srcdir/examples" -o "$stage/static/examples/$prog" \
		"$top_srcdir/examples/$prog.c" $drv -L"$cuda/lib64" -lcudart_static -ldl -lrt -lpthread
done

echo "gpustage.sh: staged in $stage ($(du -sh "$stage" | cut -f1)):"
(cd "$stage" && find . -type f | sort | sed 's/^/  /')
