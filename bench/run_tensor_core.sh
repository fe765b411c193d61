#!/bin/bash
# One device call for the tensor-core convolution: build if needed, test,
# memcheck (and racecheck), benchmark. Run from a directory holding the
# sources (kernels/cuda/conv2d_tensor_core.cu*, bench/bench_tensor_core.cu)
# and optionally a prebuilt binary (BIN, default bench_tc).
# Usage: [BIN=bench_tc] [FALLBACK=older_binary] [BASELINE=older_binary] [BENCH_ARGS="--only denoise --no-cudnn"]
#        [RACECHECK=1] [REPEAT=1] [NCU=1 NCU_SHAPES="a_b c"] [COMMIT=sha] run_tensor_core.sh OUT_DIR
# FALLBACK: benchmarked instead of BIN when BIN's tests fail (so one call
# still yields numbers of a version that passed). BASELINE: benchmarked
# right after BIN with the same arguments (an A/B within one call).
# BENCH_ARGS: extra benchmark arguments (e.g. only the denoise shapes).
set -u
OUT=${1:?OUT_DIR}
BIN=${BIN:-bench_tc}
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"
if [ ! -x "./$BIN" ] || ldd "./$BIN" | grep -q "not found"; then
  echo "building $BIN here"
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DIMR_BUILD_SM90A=1 -Ikernels/cuda bench/bench_tensor_core.cu \
    kernels/cuda/conv2d_tensor_core.cu -lcudnn -o "$BIN" || exit 1
fi
cuobjdump --dump-sass "$BIN" | grep -cE "HMMA" | sed 's/^/HMMA instructions in SASS: /'
cuobjdump --dump-sass "$BIN" | grep -cE "LDL|STL" | sed 's/^/local-memory instructions in SASS: /'
timeout 150 "./$BIN" --test --json "$OUT/test.json" > "$OUT/test.log" 2>&1; test_rc=$?; echo "test rc $test_rc"
grep -E "FAIL|runs, worst|negative|failure" "$OUT/test.log" | head -20
timeout 120 compute-sanitizer --tool memcheck "./$BIN" --quick > "$OUT/memcheck.log" 2>&1; echo "memcheck rc $?"
tail -2 "$OUT/memcheck.log"
if [ "${RACECHECK:-0}" = 1 ]; then
  timeout 150 compute-sanitizer --tool racecheck "./$BIN" --quick > "$OUT/racecheck.log" 2>&1; echo "racecheck rc $?"
  tail -2 "$OUT/racecheck.log"
fi
if [ $test_rc -ne 0 ] && [ -n "${FALLBACK:-}" ]; then echo "tests failed: benchmarking $FALLBACK instead"; BIN=$FALLBACK; fi
timeout 200 "./$BIN" --bench --runs "${RUNS:-20}" --json "$OUT/bench.json" --commit "${COMMIT:-unknown}" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
if [ -n "${BASELINE:-}" ]; then
  echo "baseline $BASELINE:"
  timeout 200 "./$BASELINE" --bench --runs "${RUNS:-20}" --json "$OUT/baseline.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/baseline.log"
fi
if [ "${REPEAT:-0}" = 1 ]; then  # the same version again: the spread between two runs
  echo "repeat:"; timeout 100 "./$BIN" --bench --only denoise --no-cudnn --runs "${RUNS:-20}" 2>&1 | tail -12
fi
# Hardware counters of single launches (--clock-control none: the clocks are left as found).
STALLS=$(for r in barrier long_scoreboard short_scoreboard math_pipe_throttle wait mio_throttle lg_throttle not_selected selected dispatch_stall no_instruction branch_resolving; do printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' $r; done)
if [ "${NCU:-0}" = 1 ]; then
  for only in ${NCU_SHAPES:-"denoise_48->48"}; do
    only=${only//_/ }
    f="$OUT/ncu-$(echo $only | tr -c 'a-z0-9\n' '_').txt"
    timeout 90 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section Occupancy --section SchedulerStats -k regex:conv2d_tc_kernel -c 1 \
      "./$BIN" --bench --only "$only" --runs 1 --no-net --no-cudnn > "$f" 2>&1
    timeout 60 ncu --clock-control none --metrics "${STALLS}sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.sum,smsp__inst_executed.sum" \
      -k regex:conv2d_tc_kernel -c 1 "./$BIN" --bench --only "$only" --runs 1 --no-net --no-cudnn >> "$f" 2>&1
    echo "ncu $only rc $?"
  done
fi
