#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer
# (the CI's sanitizer stage, .ci/run): builds build-asan/ (-O1, no CUDA) and
# runs ctest there. Any ASan or UBSan report fails the run; the only
# suppressions are OpenCV's own per-thread buffers (tests/sanitizer/lsan.supp).
#   scripts/sanitize.sh [CTEST_ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-asan
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 -DIMRESTORE_WITH_CUDA=OFF \
    -DIMRESTORE_SANITIZE=address,undefined >"$build.log" 2>&1 || { tail -30 "$build.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" >>"$build.log" 2>&1 || { grep -E "error" "$build.log" | head -30; exit 1; }
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
export LSAN_OPTIONS=suppressions=$PWD/tests/sanitizer/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$build" --output-on-failure "$@"
