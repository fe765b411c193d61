#!/usr/bin/env bash
# A build folder made here, slimmed to what its tests need on another machine
# (the GPU host, which cannot build the full tool: no OpenCV, CLI11, stb,
# nlohmann-json or libseccomp headers there): the ctest files, the stripped
# programs and test programs, the test library, the man page, and the shared
# libraries the host may lack (libseccomp) in lib/. The device tool carries at
# most 64 MiB, so object files and static libraries stay behind.
#   scripts/slim_build.sh BUILD_DIR SLIM_DIR
# There: link SLIM_DIR to BUILD_DIR's name (its test files name it), make the
# build's absolute source path lead to the repo, LD_LIBRARY_PATH=SLIM_DIR/lib.
set -euo pipefail
src=$1 dst=$2
rm -rf "$dst"
mkdir -p "$dst/lib"
(cd "$src" && find . -name CTestTestfile.cmake -o -name '*.so' -o -name imrestore.1 -o \
    \( -type f -perm -u+x ! -path '*/CMakeFiles/*' \)) | while read -r f; do
    mkdir -p "$dst/$(dirname "$f")"
    cp "$src/$f" "$dst/$f"
    case "$f" in *.cmake | *.1) ;; *) strip --strip-unneeded "$dst/$f" 2>/dev/null || true ;; esac
done
for lib in libseccomp.so.2; do
    path=$(ldconfig -p | awk -v l="$lib" '$1 == l && !found {print $NF; found = 1}')
    [ -n "$path" ] && cp -L "$path" "$dst/lib/"
done
du -sh "$dst"
