#!/usr/bin/env bash
# The one command for the GPU host (CUDA 13, CMake, ninja, cuDNN; no OpenCV,
# CLI11 or stb): a kernels-only build, the GPU op tests, compute-sanitizer
# memcheck, and the kernel benchmark against cuDNN.
#
#   scripts/gpu_host.sh [OUT_DIR]        OUT_DIR defaults to $OUT (the device
#                                        tool's return folder), else ./gpu-out
#
# Writes to OUT_DIR: env.log (GPU, driver, tools), build.log, ctest.log,
# memcheck.log, bench.log, bench.json. Prints a short summary and the
# benchmark table last. Environment knobs:
#   BUILD_DIR        build folder (default build-gpuhost in the repo)
#   IMRESTORE_COMMIT commit recorded in bench.json (default: git HEAD, else "uncommitted")
#   GTEST_SRC        googletest sources to build when GTest is not installed
#                    (default .gtest-src in the repo, a copy of /usr/src/googletest)
#   MEMCHECK_FILTER  gtest filter run under memcheck (default: every CUDA test,
#                    every kernel variant, without the GPU-only big shapes unless
#                    MEMCHECK_ALL_CASES=1)
#   BENCH_ARGS       extra bench_gpu arguments
#   SKIP_BENCH=1     build, test and memcheck only
#   CLI_BUILD        a full-tool build folder made elsewhere (OpenCV-free, CUDA on:
#                    -DIMRESTORE_WITH_OPENCV=OFF -DIMRESTORE_WITH_CUDA=ON) and carried
#                    here: its whole ctest suite runs too (Gpu.* CLI tests, the
#                    model runner and layers on CUDA), but for `install` and
#                    `format`, which need the build machine's CMake and clang-format.
#                    Its test binaries name files by the absolute paths of the
#                    machine that built them: CLI_BUILD_ROOT (default /work/main) is
#                    made a link to this repo when it does not exist here.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${OUT:-$root/gpu-out}}
mkdir -p "$out"
build=${BUILD_DIR:-$root/build-gpuhost}
jobs=$(nproc)
status=0
summary=()

# step NAME LOG COMMAND...: scripts/step.sh
source "$root/scripts/step.sh"

{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
    nvcc --version | tail -2
    cmake --version | head -1
    ls /usr/include/x86_64-linux-gnu/cudnn_version*.h /usr/include/cudnn_version*.h 2>/dev/null
} >"$out/env.log" 2>&1

# GTest: installed, or built from the carried sources into a private prefix.
cmake_extra=()
if ! ls /usr/lib/x86_64-linux-gnu/libgtest* /usr/lib/libgtest* /usr/local/lib/libgtest* >/dev/null 2>&1; then
    src=${GTEST_SRC:-$root/.gtest-src}
    prefix=$build-gtest
    if [ ! -f "$prefix/include/gtest/gtest.h" ]; then
        step gtest "$out/build.log" cmake -S "$src" -B "$build-gtest-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
            -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_GMOCK=OFF &&
            step gtest-build "$out/build.log" cmake --build "$build-gtest-build" -j "$jobs" --target install
    fi
    cmake_extra+=("-DCMAKE_PREFIX_PATH=$prefix")
fi

step configure "$out/build.log" cmake -S "$root" -B "$build" -G Ninja -DIMRESTORE_KERNELS_ONLY=ON \
    -DIMRESTORE_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release "${cmake_extra[@]}" &&
    step build "$out/build.log" cmake --build "$build" -j "$jobs"
if [ $status -ne 0 ]; then
    tail -40 "$out/build.log"
    exit 1
fi

step ctest-gpu "$out/ctest.log" ctest --test-dir "$build" -L gpu --output-on-failure -V
# ctest shows a CUDA test without a GPU as "Skipped"; on this host that is a failure.
if grep -q "Skipped" "$out/ctest.log" && ! grep -q "tests passed, 0 tests failed" "$out/ctest.log"; then status=1; fi
grep -E "^\s*[0-9]+: \[ +(OK|FAILED|SKIPPED) +\]|worst error|tests passed|Failure|Expected|got " "$out/ctest.log" | tail -20

# Every CUDA test on every kernel variant, without the big GPU-only shapes
# (minutes under the sanitizer; MEMCHECK_ALL_CASES=1 keeps them).
skip_big=IMRESTORE_TEST_SKIP_GPU_ONLY=1
[ "${MEMCHECK_ALL_CASES:-0}" = 1 ] && skip_big=IMRESTORE_TEST_NO_SKIP=1
step memcheck "$out/memcheck.log" env "$skip_big" compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$build/tests/test_ops" --gtest_filter="${MEMCHECK_FILTER:-*/cuda}"
grep -E "ERROR SUMMARY|\[  (PASSED|FAILED) " "$out/memcheck.log" | tail -5

if [ -n "${CLI_BUILD:-}" ]; then
    cli_root=${CLI_BUILD_ROOT:-/work/main}
    if [ ! -e "$cli_root" ]; then mkdir -p "$(dirname "$cli_root")" && ln -s "$root" "$cli_root"; fi
    step ctest-cli "$out/ctest-cli.log" ctest --test-dir "$CLI_BUILD" --output-on-failure -E '^(install|format)$'
    grep -E "tests passed|\(Failed\)|\(SEGFAULT\)|Skipped|\*\*\*" "$out/ctest-cli.log" | tail -20
fi

if [ "${SKIP_BENCH:-0}" != 1 ]; then
    commit=${IMRESTORE_COMMIT:-$(git -C "$root" rev-parse HEAD 2>/dev/null || echo uncommitted)}
    step bench "$out/bench.log" "$build/bench_gpu" --json "$out/bench.json" --commit "$commit" ${BENCH_ARGS:-}
fi

echo
printf '%s\n' "${summary[@]}"
[ -f "$out/bench.log" ] && sed -n '/^case /,$p' "$out/bench.log"
exit $status
