#!/bin/bash
# One device call: build if needed, test, memcheck, benchmark. Run from the
# directory holding the sources (kernels/, bench/) or a prebuilt bench_tc.
# Usage: run_tensor_core.sh OUT_DIR
set -u
OUT=${1:?OUT_DIR}
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"
if [ ! -x ./bench_tc ] || ldd ./bench_tc | grep -q "not found"; then
  echo "building bench_tc here"
  nvcc -std=c++17 -O3 -gencode=arch=compute_90,code=sm_90 -Ikernels/cuda bench/bench_tensor_core.cu \
    kernels/cuda/conv2d_tensor_core.cu -lcudnn -o bench_tc || exit 1
fi
cuobjdump --dump-sass bench_tc | grep -cE "HMMA" | sed 's/^/HMMA instructions in SASS: /'
cuobjdump --dump-sass bench_tc | grep -cE "LDL|STL" | sed 's/^/local-memory instructions in SASS: /'
timeout 120 ./bench_tc --test --json "$OUT/test.json" > "$OUT/test.log" 2>&1; echo "test rc $?"
grep -E "FAIL|runs, worst|negative|failure" "$OUT/test.log" | head -20
timeout 120 compute-sanitizer --tool memcheck ./bench_tc --quick > "$OUT/memcheck.log" 2>&1; echo "memcheck rc $?"
tail -3 "$OUT/memcheck.log"
timeout 200 ./bench_tc --bench --runs 20 --json "$OUT/bench.json" --commit "${COMMIT:-unknown}" 2>&1 | tee "$OUT/bench.log"
# Hardware counters of single launches (--clock-control none: the clocks are left as found).
STALLS=$(for r in barrier long_scoreboard short_scoreboard math_pipe_throttle wait mio_throttle lg_throttle not_selected selected dispatch_stall no_instruction branch_resolving; do printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' $r; done)
if [ "${NCU:-0}" = 1 ]; then
  for only in ${NCU_SHAPES:-"denoise 48->48"}; do
    only=${only//_/ }
    f="$OUT/ncu-$(echo $only | tr -c 'a-z0-9\n' '_').txt"
    timeout 90 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section Occupancy --section SchedulerStats -k regex:conv2d_tc_kernel -c 1 \
      ./bench_tc --bench --only "$only" --runs 1 --no-net --no-cudnn > "$f" 2>&1
    timeout 60 ncu --clock-control none --metrics "${STALLS}sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.sum,smsp__inst_executed.sum" \
      -k regex:conv2d_tc_kernel -c 1 ./bench_tc --bench --only "$only" --runs 1 --no-net --no-cudnn >> "$f" 2>&1
    echo "ncu $only rc $?"
  done
fi
