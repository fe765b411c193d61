#!/usr/bin/env bash
# The model-graph benchmarks (issue 17) on the GPU host, in two device calls
# (docs/performance.md, "Model graphs: what the next GPU session measures").
# Run from the repository root, with an OpenCV-free CUDA build made on the
# build machine and slimmed there (scripts/slim_build.sh build-gpu
# build-gpu-slim), carried beside it.
#
#   bench/run_graph_bench.sh OUT_DIR [PHASE...]
#
# PHASE (default: check models):
#   verify   the correctness half of check, which can share the GPU with other
#            work (a training run): ctest, memcheck, and tests/torch_export_test.py
#            with the tool on the GPU (fp32 within one level of PyTorch; fp16 and
#            bf16 reported, at least 40 dB PSNR against it). About 3 minutes.
#   check    ctest -R $CTEST_REGEX (ops_cuda) on the carried build; compute-sanitizer
#            memcheck over the CUDA op tests of the graph ops; bench_gpu --suite
#            graph-ops (ours against cuDNN); torch_models.py --ops (PyTorch on the
#            same cases). About 5 minutes.
#   models   exports drunet-large and nafnet-large (weights/export_graph.py, fresh
#            weights: the timing does not depend on them) to $MODELS_DIR, their
#            floors (bench/graph_floors.py), then torch_models.py on both at 12 MP:
#            PyTorch fp32/TF32/bf16/fp16 channels-last, eager and CUDA graph, against
#            `imrestore --bench` in fp16, bf16 and fp32. About 4 minutes.
#   compile  torch.compile of each in fp16 channels-last, NAFNet first, each bounded
#            by COMPILE_TIMEOUT (270 s); COMPILE_MODE max-autotune (default: minutes of
#            autotuning per model) or default (fusion only, no autotuning: faster).
# Writes to OUT_DIR: env.log, ctest.log, memcheck.log, graph-ops.{log,json},
# torch-ops.{log,json}, floors.txt, model-*.txt, torch-models.{log,json},
# torch-compile-MODEL-MODE.{log,json}; prints a summary last.
# Environment: BUILD (default build-gpu-slim), SRC_ROOT (the build machine's
# source path; default: read from BUILD's CTestTestfile.cmake), RUNS (20),
# MODEL_RUNS (10), CTEST_REGEX (ops_cuda), MODELS_DIR (/tmp/graph-models: the
# large models are 117-131 MB, too big to come back in OUT_DIR), OPS_COMPILE=1
# (torch_models.py --ops-compile), PRECISIONS (fp16,bf16,tf32,fp32), COMMIT.
set -uo pipefail
out=${1:?OUT_DIR}
shift
phases=${*:-check models}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
mkdir -p "$out"
build=${BUILD:-build-gpu-slim}
runs=${RUNS:-20}
models_dir=${MODELS_DIR:-/tmp/graph-models}
commit=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
status=0
summary=()

# step NAME LOG --limit SECONDS COMMAND...: scripts/step.sh
source "$root/scripts/step.sh"

{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
        --format=csv 2>&1
    python3 -c "import torch; print('torch', torch.__version__, 'cuDNN', torch.backends.cudnn.version())" 2>&1
    echo "commit $commit, build $build"
} >"$out/env.log" 2>&1
cat "$out/env.log"

# The carried build names its files by the build machine's absolute paths:
# make its source path lead here and its build path to the slim copy.
if [ -f "$build/CTestTestfile.cmake" ]; then
    src_root=${SRC_ROOT:-$(sed -n 's/^# Source directory: //p' "$build/CTestTestfile.cmake")}
    build_path=$(sed -n 's/^# Build directory: //p' "$build/CTestTestfile.cmake")
    if [ -n "$src_root" ] && [ ! -e "$src_root" ]; then mkdir -p "$(dirname "$src_root")" && ln -s "$root" "$src_root"; fi
    if [ -n "$build_path" ] && [ ! -e "$build_path" ]; then ln -s "$root/$build" "$build_path"; fi
else
    echo "no $build/CTestTestfile.cmake: carry the slimmed build (scripts/slim_build.sh build-gpu $build)" >&2
    exit 1
fi
export LD_LIBRARY_PATH="$root/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# bench_gpu links libcudnn.so.9: the system's, else the one PyTorch's wheel brings.
if ldd "$build/bench_gpu" 2>/dev/null | grep -q "libcudnn.*not found"; then
    cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" \
        2>/dev/null)
    [ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$cudnn_lib"
fi

for phase in $phases; do
    case $phase in
    check | verify)
        step ctest "$out/ctest.log" --limit 600 ctest --test-dir "$build" -R "${CTEST_REGEX:-ops_cuda}" --output-on-failure
        grep -E "tests passed|\(Failed\)|Skipped|worst" "$out/ctest.log" | tail -10
        new_ops="Elementwise Activation SimpleGate Concat LayerNorm DepthwiseConv2d WindowMean PixelShuffle Convert"
        filter=$(for o in $new_ops; do printf 'Backends/OpsTest.%s/cuda:' "$o"; done)
        step memcheck "$out/memcheck.log" --limit 600 env IMRESTORE_TEST_SKIP_GPU_ONLY=1 compute-sanitizer --tool memcheck \
            --error-exitcode 1 "$build/tests/test_ops" --gtest_filter="${filter%:}"
        grep -E "ERROR SUMMARY|\[  (PASSED|FAILED) " "$out/memcheck.log" | tail -5
        if [ "$phase" = verify ]; then
            step torch-export-gpu "$out/torch-export-gpu.log" --limit 400 env IMRESTORE_TOOL_DEVICE=cuda \
                IMRESTORE_TOOL_PRECISIONS=fp32,fp16,bf16,tf32 python3 tests/torch_export_test.py "$build/imrestore"
            grep -E "imrestore vs torch|FAIL|passed|failed" "$out/torch-export-gpu.log" | tail -16
            continue
        fi
        step graph-ops "$out/graph-ops.log" --limit 540 "$build/bench_gpu" --suite graph-ops --runs "$runs" \
            --json "$out/graph-ops.json" --commit "$commit"
        step torch-ops "$out/torch-ops.log" --limit 420 python3 bench/torch_models.py --ops --runs "$runs" \
            --json "$out/torch-ops.json" --commit "$commit" ${OPS_COMPILE:+--ops-compile}
        ;;
    models | compile)
        mkdir -p "$models_dir"
        for arch in drunet-large nafnet-large; do
            [ -f "$models_dir/$arch.h5" ] ||
                step "export $arch" "$out/export.log" --limit 300 python3 weights/export_graph.py "$arch" "$models_dir/$arch.h5"
        done
        models="$models_dir/drunet-large.h5,$models_dir/nafnet-large.h5"
        if [ "$phase" = models ]; then
            python3 bench/graph_floors.py "$models_dir/drunet-large.h5" "$models_dir/nafnet-large.h5" >"$out/floors.txt" 2>&1
            for arch in drunet-large nafnet-large; do
                "$build/imrestore" model "$models_dir/$arch.h5" >"$out/model-$arch.txt" 2>&1
            done
            step torch-models "$out/torch-models.log" --limit 580 python3 bench/torch_models.py --models "$models" \
                --imrestore "$build/imrestore" --precisions "${PRECISIONS:-fp16,bf16,tf32,fp32}" --runs "${MODEL_RUNS:-10}" \
                --compile-models none --json "$out/torch-models.json" --commit "$commit"
        else  # one model at a time, NAFNet first (its element-wise chains are what compiling fuses)
            mode=${COMPILE_MODE:-max-autotune}
            for arch in nafnet-large drunet-large; do
                step "torch-compile $arch $mode" "$out/torch-compile-$arch-$mode.log" --limit "${COMPILE_TIMEOUT:-270}" \
                    python3 bench/torch_models.py --models "$models_dir/$arch.h5" --configs fp16-cl \
                    --compile-models all --compile-configs fp16-cl --compile-mode "$mode" --runs "${MODEL_RUNS:-10}" \
                    --json "$out/torch-compile-$arch-$mode.json" --commit "$commit"
            done
        fi
        ;;
    *)
        echo "unknown phase $phase (verify, check, models, compile)" >&2
        exit 2
        ;;
    esac
done

echo
printf '%s\n' "${summary[@]}"
[ -f "$out/graph-ops.log" ] && sed -n '/^graph-ops (floor/,$p' "$out/graph-ops.log"
[ -f "$out/torch-ops.log" ] && grep -E "window_mean|layer_norm|simple_gate" "$out/torch-ops.log" | grep -E "f16" | head -20
for f in "$out"/floors.txt "$out"/torch-models.log "$out"/torch-compile-*.log; do
    [ -f "$f" ] && { echo "-- $(basename "$f")"; grep -E "total|^NVIDIA|^model |torch |imrestore " "$f" | tail -30; }
done
exit $status
