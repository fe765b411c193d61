#!/bin/bash
# One GPU session's device calls, each a whole job (the machine is handed
# back 30 s after a call returns, and with it anything left running: no
# daemons across calls). Run from the repository root on the device:
#
#   scripts/device_session.sh train-denoise|train-deblock-q   (a call that is the training)
#   scripts/device_session.sh train-denoise-l5  (one call of the five-level denoiser's training from scratch)
#   scripts/device_session.sh verify            (tests and timings in one call, after the trainings)
#   scripts/device_session.sh torch-default     (the GPU default against PyTorch on the same weights, 12 MP)
#   scripts/device_session.sh folder            (the folder against its codec floor; model timings)
#   scripts/device_session.sh validate          (a trained model's half precisions, recorded in its file)
#   scripts/device_session.sh graph-ops         (issue 17's graph ops: tests, bench_gpu against cuDNN, counters)
#   scripts/device_session.sh graph-models      (issue 17's large U-Nets against PyTorch, eager, graphs, compiled)
#   scripts/device_session.sh nafnet-stages     (nafnet-large's stages one by one at 12 MP; its 1x1 shapes in bench_tc)
#   scripts/device_session.sh unet-cublaslt     (the bundled U-Net denoisers: half against fp32, tiled, cuBLASLt on/off)
#   scripts/device_session.sh stage|tests|bench (checks and timings over three calls)
#
# In a fresh checkout, scripts/prepare_device_session.sh makes what the training
# and validate calls carry (photos, shards, the CUDA build, .carry/imr.tar.xz and
# .carry/photo12mp.jpg, a PyTorch venv for the CPU work). Older modes' notes:
# Prepared here first (git-excluded .carry/, see docs/performance.md, "The
# next GPU session"): .carry/gpu.tar.xz (the OpenCV-free CUDA build,
# slimmed: scripts/slim_build.sh build-gpu build-gpu-slim, then tar -cJf
# .carry/gpu.tar.xz --exclude=build-gpu-slim/tests/test_{eval,photo_mix}
# build-gpu-slim: 33 MB), .carry/photo12mp.jpg (scripts/bench_models_12mp.sh's
# photo), .carry/commit (git rev-parse --short HEAD), the shards
# (weights/data/pack_shards.py, weights/data/shards.py subset). 64 MiB
# travel a call (the tracked tree without any *.h5 is 9.4 MB).
set -u
mode=${1:-}
O=${OUT:-/tmp/out}
mkdir -p "$O" /tmp/models /tmp/shards
root=$(pwd)
# The tool links cuBLASLt: on the host it is in the CUDA toolkit or PyTorch's nvidia-cublas wheel.
cuda_libs="/usr/local/cuda/lib64:/usr/local/cuda/lib:$(python3 -c "import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__) + '/lib')" 2>/dev/null)"
# A --bench --json report's model time (its stages' medians summed), precision and status.
bench_sum() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); b=r.get('bench_ms',{}); print('%.2f' % sum(v['median_ms'] for k,v in b.items() if k.startswith('stage ')), r['precision']['used'], r['files'][0].get('status'))" "$1"; }
# A model file's 12 MP time (scripts/bench_models_12mp.sh's photo, .carry/photo12mp.jpg; --bench 20,
# the stages' medians summed) in each PRECISION given, twice, alternating, by the slim build of
# .carry/imr.tar.xz: bench_12mp MODEL.h5 TAG PRECISION... The reports and the summary come back
# as one file, $O/bench-12mp-TAG.tar (a training call returns 7 files of the 8 allowed).
bench_12mp() {
    local f=$1 tag=$2 d=/tmp/bench-12mp-$2 k p; shift 2
    mkdir -p /tmp/bgs "$d" && { [ -x /tmp/bgs/build-gpu-slim/imrestore ] || tar -xJf .carry/imr.tar.xz -C /tmp/bgs; }
    for k in 1 2; do for p in "$@"; do
        LD_LIBRARY_PATH=/tmp/bgs/build-gpu-slim/lib:$cuda_libs /tmp/bgs/build-gpu-slim/imrestore .carry/photo12mp.jpg \
            -o /tmp/o.png --force -m "$f" -d cuda --precision "$p" --bench 20 --json > "$d/$tag-$p-$k.json" 2>"$d/$tag-$p-$k.err" \
            && echo "12 MP $tag $p ($k): $(bench_sum "$d/$tag-$p-$k.json")" || echo "12 MP $tag $p ($k): failed: $(tail -1 "$d/$tag-$p-$k.err")"
    done; done | tee "$d/summary.log"
    tar -cf "$O/bench-12mp-$tag.tar" -C "$d" .
}
case $mode in
train-denoise | train-deblock-q)
    # One call that is the training: no daemon to lose when the machine is
    # taken back between calls. Carry the tree with only the starting .h5
    # (denoise-unet.h5 / deblock.h5), one training shard (TRAIN_SHARD, default
    # 03 / 04: shards these models have not seen) and
    # weights/data/shards/heldout-mini.tar (every 4th held-out photo:
    # train.py's own curve; the tool's evaluation on all 34 runs here
    # afterwards, on the CPU). A whole run of 8.5 minutes (MINUTES: the
    # cosine ends in it, FINAL=1), started from the bundled .h5; returns
    # train_unet.sh's files: the model in parts first, the log and curve,
    # then the fp16 checkpoint where it fits (it did for denoise-drunet, 27 +
    # 28 MB; a later run may also start again from the returned .h5,
    # --init-from).
    k=$(printf '%02d' "$((10#${TRAIN_SHARD:-$([ $mode = train-denoise ] && echo 3 || echo 4)}))")
    cp "weights/data/shards/train-$k.tar" /tmp/shards/ && cp weights/data/shards/heldout-mini.tar /tmp/shards/heldout.tar
    if [ $mode = train-denoise ]; then
        export ARCH=drunet ARCH_KW='{"widths":[48,96,192,384],"blocks":3}' NAME=denoise-drunet
        # DENOISE_ARGS: this run's recipe (the eighth session's by default)
        A="--init-from $root/weights/denoise-unet.h5 ${DENOISE_ARGS:---lr 2e-4 --sigma-power 1.5} --ckpt-max-mib 40"
    else
        # DEBLOCK_KW='{"widths":[32,64,128,256],"blocks":2}': the bundled deblock as it is (no quality input)
        export TASK=deblock ARCH=drunet ARCH_KW=${DEBLOCK_KW:-'{"widths":[32,64,128,256],"blocks":2,"level_input":"jpeg_quality"}'} \
            NAME=$([ -n "${DEBLOCK_KW:-}" ] && echo deblock || echo deblock-q)
        # DEBLOCK_ARGS: this run's recipe (the eighth session's by default; e.g. a high-quality
        # fine-tune of the bundled deblock: --lr 1e-4 --jpeg-q-power 0.5 --gray 0.15)
        A="--init-from $root/weights/deblock.h5 --batch 64 --jpeg-q 5,95 --jpeg-workers 6 ${DEBLOCK_ARGS:---lr 2e-4 --jpeg-444 0.3 --jpeg-prior 0.33,60,95}"
    fi
    SHARD_DIR=/tmp/shards TOTAL_MINUTES=${MINUTES:-8.5} MINUTES=${MINUTES:-8.5} FINAL=1 TRAIN_ARGS="$A" \
        bash weights/train_unet.sh "$O" "$k" 2>&1 | tail -25
    ls -la "$O" ;;
train-denoise-l5) # the five-level denoiser from scratch, one call of several (weights/README.md,
    # "Fifteenth session"): widths 48-96-192-256-256, 3 blocks a level, receptive
    # field 572 against denoise-unet's 276 at the same 1.8 MFLOP per pixel.
    # Carry weights/data/shards/train-KK.tar (TRAIN_SHARD: 0 on the first call,
    # then the one the last call's log names) and weights/data/shards/heldout-mini.tar.
    # (The training ended on 2026-12-04 and is the bundled denoise-unet; the folder
    # below was deleted: `git checkout 0a58fd8 -- weights/checkpoints/denoise-l5` brings
    # back its one committed version, call 3's, to resume or redo calls 4-5.)
    # The checkpoint is read from weights/checkpoints/denoise-l5/ (L5_CKPT_DIR), which
    # holds the last call's returned denoise-l5.ckpt.partN and nothing else (rm -f
    # its parts before copying the new ones in: they are joined by name; int8 under
    # --ckpt-max-mib 20: 17 MB, so a training shard and the tree without *.h5 fit
    # beside it). It is in git, not in the ignored .carry/: a training spread over
    # sessions must outlive the checkout (the sixteenth session's checkpoint, kept
    # in .carry/l5/, was lost with its checkout). The cosine
    # spans TOTAL_MINUTES (36; given on the first call only) of training over all
    # calls; FINAL=1 on the last:
    # the PSNR loss and a weight average there, and the model file comes back
    # first. L5_ARGS: further train.py arguments.
    k=$(printf '%02d' "$((10#${TRAIN_SHARD:?TRAIN_SHARD: the shard of this call}))") || exit 2
    cp "weights/data/shards/train-$k.tar" /tmp/shards/ && cp weights/data/shards/heldout-mini.tar /tmp/shards/heldout.tar
    A="--lr 3e-4 --patch 192 --batch 16 --sigma-power 1.5 --ckpt-max-mib 20"
    [ "${FINAL:-0}" = 1 ] && A="$A --loss psnr --ema 0.9995"
    # The schedule's length is set by the first call and kept in the checkpoint:
    # a default here on later calls would silently replace the first call's choice.
    ck=${L5_CKPT_DIR:-$root/weights/checkpoints/denoise-l5}
    [ -e "$ck/denoise-l5.ckpt" ] || [ -e "$ck/denoise-l5.ckpt.part0" ] || : "${TOTAL_MINUTES:=36}"
    ARCH=drunet ARCH_KW='{"widths":[48,96,192,256,256],"blocks":3}' NAME=denoise-l5 SHARD_DIR=/tmp/shards \
        TOTAL_MINUTES=${TOTAL_MINUTES:-} MINUTES=${MINUTES:-8.5} FINAL=${FINAL:-0} TRAIN_ARGS="$A ${L5_ARGS:-}" \
        bash weights/train_unet.sh "$O" "$k" "$ck" 2>&1 | tail -25
    # With .carry/imr.tar.xz and .carry/photo12mp.jpg carried (stash docs/ to make room: 57.7-58.1
    # MiB with train-03 or -04 and the checkpoint): the network's 12 MP time in fp16 and bf16 (any weights of it time
    # alike; not yet validated, so the precisions are given).
    if [ -f .carry/imr.tar.xz ] && [ -f .carry/photo12mp.jpg ]; then
        cat $(ls "$O"/models.tar "$O"/models.tar.part[0-9] 2>/dev/null) | tar -xO denoise-l5.h5 > /tmp/denoise-l5.h5 \
            && bench_12mp /tmp/denoise-l5.h5 denoise-l5 fp16 bf16
    fi
    ls -la "$O" ;;
torch-default) # the GPU default against PyTorch on the same weights and 12 MP input, after
    # it changes (carry .carry/imr.tar.xz; the tree with weights/denoise-unet.h5 only):
    # bench/torch_models.py's fp32, TF32, bf16 and fp16 channels-last (eager and CUDA
    # graph) and torch.compile (default mode: max-autotune would not fit the call) in
    # bf16 and fp16, beside imrestore --bench at auto, fp16, bf16 and fp32.
    mkdir -p /tmp/bgs && tar -xJf .carry/imr.tar.xz -C /tmp/bgs
    export LD_LIBRARY_PATH=/tmp/bgs/build-gpu-slim/lib:$cuda_libs
    timeout 420 python3 bench/torch_models.py --json "$O/torch-vs-imrestore.json" --models weights/denoise-unet.h5 \
        --imrestore /tmp/bgs/build-gpu-slim/imrestore --precisions auto,fp16,bf16,fp32 --configs fp32,tf32,bf16-cl,fp16-cl \
        --compile-models denoise-unet --compile-configs bf16-cl,fp16-cl --compile-mode default --runs 20 \
        --commit "${COMMIT:-}" > "$O/torch-vs-imrestore.log" 2>&1; echo "torch_models rc $?"
    tail -40 "$O/torch-vs-imrestore.log"; ls -la "$O" ;;
verify) # one call after the trainings (carry .carry/gpu.tar.xz with test_ops, .carry/photo12mp.jpg;
    # the tree with denoise.h5 and denoise-unet-s.h5 only): every conv2d way
    # against float64 (the slice-walk rows included), bench_tc's own tests,
    # then alone on the GPU: PyTorch's fp32 and fp16 channels-last (eager,
    # graph, max-autotune for denoise) and imrestore auto/fp32 on the same
    # weights and 12 MP input (bench/torch_models.py), bench_tc's shapes.
    mkdir -p /tmp/bgs && tar -xJf .carry/gpu.tar.xz -C /tmp/bgs
    (nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DIMR_BUILD_SM90A=1 -Ikernels/cuda bench/bench_tensor_core.cu \
        kernels/cuda/conv2d_tensor_core.cu -lcudnn -o /tmp/bench_tc > /tmp/bench_tc_build.log 2>&1 &)
    export LD_LIBRARY_PATH=/tmp/bgs/build-gpu-slim/lib:$cuda_libs; B=/tmp/bgs/build-gpu-slim; c=$(cat .carry/commit 2>/dev/null)
    timeout 170 $B/tests/test_ops --gtest_filter='*Conv2d/cuda' > "$O/test_ops-conv2d.log" 2>&1; echo "test_ops Conv2d/cuda rc $?"
    grep -E "worst error|\[  (PASSED|FAILED) |Failure" "$O/test_ops-conv2d.log" | cut -c1-300 | head -8
    while [ ! -x /tmp/bench_tc ] && [ $SECONDS -lt 260 ]; do sleep 3; done; tail -2 /tmp/bench_tc_build.log
    timeout 80 /tmp/bench_tc --test --json "$O/bench_tc_test.json" > "$O/bench_tc_test.log" 2>&1; echo "bench_tc --test rc $?"
    grep -E "runs, worst|negative|test failure" "$O/bench_tc_test.log"; grep "^FAIL" "$O/bench_tc_test.log" | head -5
    timeout 200 python3 bench/torch_models.py --json "$O/torch-vs-imrestore.json" --models denoise,denoise-unet-s \
        --imrestore $B/imrestore --precisions auto,fp32 --configs fp32,fp16-cl --compile-models denoise \
        --compile-configs fp16-cl --runs 20 --commit "$c" > "$O/torch-vs-imrestore.log" 2>&1; echo "torch_models rc $?"
    tail -30 "$O/torch-vs-imrestore.log"
    timeout $((555 - SECONDS)) /tmp/bench_tc --bench --runs 20 --no-net --json "$O/bench_tc.json" --commit "$c" > "$O/bench_tc.log" 2>&1
    sed -n '/^shape/,/^$/p' "$O/bench_tc.log" | head -40; ls -la "$O" ;;
folder) # the folder against its codec floor and the GPU default's timing (carry
    # .carry/imr.tar.xz: the slim build's imrestore and lib/ alone,
    # .carry/photo12mp.jpg; the tree with denoise.h5 and denoise-unet.h5 only).
    # bench_folder.sh twice with `denoise` (issue 16's folder goal: 64 copies
    # of a 12 MP JPEG), then --bench 20 of denoise-unet and denoise at 12 MP.
    mkdir -p /tmp/bgs && tar -xJf .carry/imr.tar.xz -C /tmp/bgs
    export LD_LIBRARY_PATH=/tmp/bgs/build-gpu-slim/lib:$cuda_libs; X=/tmp/bgs/build-gpu-slim/imrestore
    for k in 1 2; do
        OUT="$O/folder-$k" SETS=big COPIES_BIG=64 BIG_PHOTO=.carry/photo12mp.jpg timeout 100 \
            scripts/bench_folder.sh $X -d cuda -m denoise 2>&1 | head -3
    done
    for m in denoise-unet denoise; do
        $X .carry/photo12mp.jpg -o /tmp/o.png --force -m $m -d cuda --bench 20 --json > "$O/bench-$m.json" 2>/tmp/r.err
        echo "$m: $(bench_sum "$O/bench-$m.json") $(tail -1 /tmp/r.err)"
    done
    ls -la "$O" ;;
validate) # a trained model's half precisions (carry .carry/imr.tar.xz and
    # weights/data/shards/heldout.tar; the tree with weights/$MODEL.h5 only,
    # MODEL default denoise-unet): imrestore model --validate-precision on the
    # 34 held-out photos at its task's degradations; the file with the
    # precisions that hold the bound comes back as $OUT/$MODEL.h5 (when under
    # 16 MiB); with .carry/photo12mp.jpg also its 12 MP times.
    mkdir -p /tmp/bgs /tmp/heldout && tar -xJf .carry/imr.tar.xz -C /tmp/bgs
    export LD_LIBRARY_PATH=/tmp/bgs/build-gpu-slim/lib:$cuda_libs; X=/tmp/bgs/build-gpu-slim/imrestore; m=${MODEL:-denoise-unet}
    python3 -c "
import sys; sys.path.insert(0, 'weights/data')
from shards import read_shard
from PIL import Image
for name, a in read_shard('weights/data/shards/heldout.tar')[1]: Image.fromarray(a).save(f'/tmp/heldout/{name}.png')"
    timeout 500 $X model "weights/$m.h5" --validate-precision /tmp/heldout --write "$O/$m.h5" -d cuda 2>&1 | tee "$O/validate-$m.log"
    # With .carry/photo12mp.jpg carried: the written file's 12 MP times (a file over 16 MiB
    # does not come back: its precisions are in the log, to be set with h5py here).
    [ -f .carry/photo12mp.jpg ] && [ -f "$O/$m.h5" ] && bench_12mp "$O/$m.h5" "$m" auto fp16 bf16
    ls -la "$O" ;;
graph-ops) # issue 17's graph ops (carry .carry/graph.tar.xz: the slim build's imrestore,
    # bench_gpu, tests/test_ops and lib/; .carry/commit; the tree without *.h5):
    # their op tests on CUDA against float64, bench_gpu --suite graph-ops (every
    # case, ours against cuDNN), counters of two kernels (ncu: DRAM bytes,
    # instructions, stalls; NCU_CASES, default a depthwise and a layer_norm case),
    # then memcheck over the same op tests.
    mkdir -p /tmp/g && tar -xJf .carry/graph.tar.xz -C /tmp/g
    export LD_LIBRARY_PATH=/tmp/g/build-gpu-slim/lib:$cuda_libs; B=/tmp/g/build-gpu-slim; c=$(cat .carry/commit 2>/dev/null)
    F=$(for o in ${OPS:-LayerNorm DepthwiseConv2d WindowMean Concat Activation}; do printf 'Backends/OpsTest.%s/cuda:' "$o"; done)
    timeout 150 $B/tests/test_ops --gtest_filter="${F%:}" > "$O/test_ops.log" 2>&1; echo "test_ops rc $?"
    grep -E "worst|PASSED|FAILED|Failure|elements beyond" "$O/test_ops.log" | head -12
    timeout 300 $B/bench_gpu --suite graph-ops --runs 20 ${ONLY:+--only "$ONLY"} --json "$O/graph-ops.json" --commit "$c" > "$O/graph-ops.log" 2>&1
    echo "bench_gpu rc $?"; sed -n '/^graph-ops (floor/,$p' "$O/graph-ops.log" | grep -E "${SHOW:-layer_norm|depthwise|concat|window|gelu|sum over}" | cut -c1-112
    M=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active
    M=$M,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio
    M=$M,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__throughput.avg.pct_of_peak_sustained_active
    M=$M,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__sass_inst_executed_op_local_ld.sum
    IFS=';' read -ra cases <<< "${NCU_CASES:-depthwise3x3 64x4000x3008 f16;layer_norm 256x500x376 f16}"
    for k in "${!cases[@]}"; do
        kernel=${cases[$k]%% *}; kernel=${kernel%%3x3*}  # the op's name begins its kernels' names
        timeout 60 ncu --clock-control none -k "regex:$kernel" -c 2 --metrics "$M" $B/bench_gpu --suite graph-ops --runs 1 \
            --no-cudnn --only "${cases[$k]}" > "$O/ncu-$k.log" 2>&1
        grep -E "kernel|dram__|gpu__time|inst_exec|warps_active|stalled|sectors|throughput|issue_active|local" "$O/ncu-$k.log" \
            | sed -E 's/ +/ /g' | cut -c1-100 | head -28
    done
    left=$((560 - SECONDS))  # memcheck only with time for it (timeout 0 would mean none), at most MEMCHECK_MAX s
    [ "$left" -gt "${MEMCHECK_MAX:-560}" ] && left=$MEMCHECK_MAX
    if [ "$left" -ge 30 ]; then
        timeout "$left" env IMRESTORE_TEST_SKIP_GPU_ONLY=1 compute-sanitizer --tool memcheck --error-exitcode 1 \
            $B/tests/test_ops --gtest_filter="${F%:}" > "$O/memcheck.log" 2>&1
        echo "memcheck rc $?"; grep -E "ERROR SUMMARY|\[  (PASSED|FAILED) " "$O/memcheck.log" | tail -3
    else
        echo "memcheck skipped: ${left} s left"
    fi ;;
graph-models) # issue 17's two large U-Nets at 12 MP against PyTorch (carry as graph-ops):
    # bench/run_graph_bench.sh's phases (PHASES, default "models compile": fresh
    # weights exported here, their floors, imrestore --bench at PRECISIONS
    # (default fp16) against PyTorch's configurations, then torch.compile in
    # COMPILE_MODE (default: fusion without autotuning), each within COMPILE_TIMEOUT).
    mkdir -p /tmp/g && tar -xJf .carry/graph.tar.xz -C /tmp/g && rm -rf build-gpu-slim && ln -s /tmp/g/build-gpu-slim build-gpu-slim
    COMMIT=$(cat .carry/commit 2>/dev/null) PRECISIONS=${PRECISIONS:-fp16} MODEL_RUNS=${MODEL_RUNS:-5} \
        COMPILE_MODE=${COMPILE_MODE:-default} COMPILE_TIMEOUT=${COMPILE_TIMEOUT:-170} \
        bash bench/run_graph_bench.sh "$O" ${PHASES:-models compile} 2>&1 | tail -60 ;;
nafnet-stages) # where nafnet-large's time goes (carry as graph-ops; after it in
    # the same call, or alone): bench_tc built meanwhile; the model exported
    # with fresh weights, `imrestore model` (the stages as fused), --bench 10
    # of a 12 MP image in fp16 (each stage's median in the JSON); bench_tc's
    # nafnet 1x1 rows (ours against cuDNN, %floor) and `ncu` on the 32 -> 64
    # row (NCU_1X1: another row's name).
    [ -d /tmp/g/build-gpu-slim ] || { mkdir -p /tmp/g && tar -xJf .carry/graph.tar.xz -C /tmp/g; }
    export LD_LIBRARY_PATH=/tmp/g/build-gpu-slim/lib:$cuda_libs; B=/tmp/g/build-gpu-slim; c=$(cat .carry/commit 2>/dev/null)
    [ -x /tmp/bench_tc ] || (nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DIMR_BUILD_SM90A=1 -Ikernels/cuda \
        bench/bench_tensor_core.cu kernels/cuda/conv2d_tensor_core.cu -lcudnn -o /tmp/bench_tc > /tmp/bench_tc_build.log 2>&1 &)
    timeout 120 python3 weights/export_graph.py nafnet-large /tmp/nafnet-large.h5 > /tmp/export.log 2>&1 || tail -5 /tmp/export.log
    python3 -c "import numpy as n; from PIL import Image; Image.fromarray((n.random.default_rng(1).random((3000,4000,3))*255).astype('uint8')).save('/tmp/p12.png')"
    $B/imrestore model /tmp/nafnet-large.h5 > "$O/model-nafnet-large.txt" 2>&1; grep -E "stages|fused" "$O/model-nafnet-large.txt" | head -4
    timeout 120 $B/imrestore /tmp/p12.png -o /tmp/o.png --force -m /tmp/nafnet-large.h5 -d cuda --precision fp16 --bench 10 --json \
        > "$O/bench-nafnet-large.json" 2>/tmp/r.err; echo "nafnet-large fp16: $(bench_sum "$O/bench-nafnet-large.json") $(tail -1 /tmp/r.err)"
    python3 bench/stage_classes.py "$O/bench-nafnet-large.json" "$O/model-nafnet-large.txt" 2>&1 | head -24
    while [ ! -x /tmp/bench_tc ] && [ $SECONDS -lt 400 ]; do sleep 3; done; tail -2 /tmp/bench_tc_build.log
    timeout 90 /tmp/bench_tc --bench --runs 20 --no-net --only nafnet --json "$O/bench_tc-nafnet.json" --commit "$c" > /tmp/tc.log 2>&1
    sed -n '/^shape/,/^$/p' /tmp/tc.log | cut -c1-140
    M=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active
    M=$M,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
    M=$M,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
    M=$M,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__throughput.avg.pct_of_peak_sustained_active,launch__registers_per_thread
    timeout 60 ncu --clock-control none -k regex:conv2d_tc -c 1 --metrics "$M" /tmp/bench_tc --bench --runs 1 --no-net --no-cudnn \
        --only "${NCU_1X1:-nafnet 1x1 32->64}" > /tmp/ncu-1x1.log 2>&1
    grep -E "conv2d_tc|dram__|gpu__time|inst_exec|warps_active|stalled|issue_active|throughput|registers" /tmp/ncu-1x1.log \
        | sed -E 's/ +/ /g' | cut -c1-110 | head -16 ;;
unet-cublaslt) # the bundled U-Net denoisers with their deep 1x1 layers on cuBLASLt
    # (carry .carry/imr.tar.xz: the slim build's imrestore and lib/; the tree with
    # weights/denoise-unet*.h5 only, the other *.h5 moved out to stay under 64 MiB):
    # a 12 MP noisy photo (samples/coffee.png upscaled, sigma 15, seed 7) in
    # fp32, fp16 and bf16 with IMRESTORE_CUBLASLT=1 (the default) and 0, tiled
    # (--tile 1000) and not, compared level by level; --bench 10 both ways.
    mkdir -p /tmp/g && tar -xJf .carry/imr.tar.xz -C /tmp/g
    export LD_LIBRARY_PATH=/tmp/g/build-gpu-slim/lib:$cuda_libs
    X=/tmp/g/build-gpu-slim/imrestore
    python3 -c "
import numpy as n; from PIL import Image
a = Image.open('samples/coffee.png').convert('RGB').resize((4000, 3000), Image.BICUBIC)
x = n.asarray(a).astype(n.float64) + n.random.default_rng(7).normal(0, 15, (3000, 4000, 3))
Image.fromarray(n.clip(n.rint(x), 0, 255).astype('uint8')).save('/tmp/n12.png')"
    for m in denoise-unet denoise-unet-s; do
        IMRESTORE_CUBLASLT=1 $X /tmp/n12.png -o /tmp/$m-fp32.png --force -m weights/$m.h5 -d cuda --precision fp32 -q
        for p in fp16 bf16; do
            IMRESTORE_CUBLASLT=1 $X /tmp/n12.png -o /tmp/$m-$p.png --force -m weights/$m.h5 -d cuda --precision $p -q
            IMRESTORE_CUBLASLT=0 $X /tmp/n12.png -o /tmp/$m-$p-own.png --force -m weights/$m.h5 -d cuda --precision $p -q
            IMRESTORE_CUBLASLT=1 $X /tmp/n12.png -o /tmp/$m-$p-tiled.png --force -m weights/$m.h5 -d cuda --precision $p \
                --tile 1000 -q
        done
        for cb in 1 0; do
            IMRESTORE_CUBLASLT=$cb $X /tmp/n12.png -o /tmp/o.png --force -m weights/$m.h5 -d cuda --precision fp16 \
                --bench 10 --json > "$O/bench-$m-cublaslt$cb.json" 2>/dev/null
        done
        python3 -c "
import sys, json, numpy as n; from PIL import Image
m, O = sys.argv[1], sys.argv[2]
L = lambda t: n.asarray(Image.open(f'/tmp/{m}-{t}.png')).astype(int)
def cmp(a, b, name):
    d = abs(L(a) - L(b)); print(f'{m}: {name}: max {d.max()} levels, >1 level {int((d > 1).sum())}, differing {int((d > 0).sum())} of {d.size}')
for p in ('fp16', 'bf16'):
    cmp(p, 'fp32', f'{p} (cuBLASLt) vs fp32'); cmp(p + '-own', 'fp32', f'{p} (own rows) vs fp32')
    cmp(p, p + '-own', f'{p} cuBLASLt vs own rows'); cmp(p + '-tiled', p, f'{p} tiled 1000 vs untiled')
for cb in (1, 0):
    b = json.load(open(f'{O}/bench-{m}-cublaslt{cb}.json'))['bench_ms']
    print(f'{m}: fp16 stages summed, cuBLASLt={cb}: {sum(v[\"median_ms\"] for k, v in b.items() if k.startswith(\"stage \")):.2f} ms')" "$m" "$O"
    done ;;
stage)  # a check-only session, call 1 of 3: the bigger *.h5 to /tmp/models (what call "tests" lacks)
    cp weights/*.h5 /tmp/models/ && ls -la /tmp/models ;;
tests)  # call 2 of 3: the tree with the other *.h5; carry .carry/gpu.tar.xz (with test_ops and bench_gpu).
    # conv2d on CUDA every way (every variant row against float64), the CLI
    # and runner suites on CUDA with every bundled model and the wgmma rows
    # picked (IMRESTORE_WGMMA=1); bench_tc (built
    # here meanwhile) tests every tensor-core row on its own cases.
    # CLI_ONLY=1: the CLI and runner suites alone (GPU_TAR: a build packed
    # without test_ops and bench_gpu, when the op tests ran in another call).
    mkdir -p /tmp/bgs && tar -xJf "${GPU_TAR:-.carry/gpu.tar.xz}" -C /tmp/bgs
    [ "${CLI_ONLY:-0}" = 1 ] || (nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DIMR_BUILD_SM90A=1 -Ikernels/cuda bench/bench_tensor_core.cu \
        kernels/cuda/conv2d_tensor_core.cu -lcudnn -o /tmp/bench_tc > /tmp/bench_tc_build.log 2>&1 &)
    for f in weights/*.h5; do [ -e "/tmp/models/${f##*/}" ] || cp "$f" /tmp/models/; done
    cp /tmp/models/*.h5 weights/ 2>/dev/null
    [ -e /work/main ] || { mkdir -p /work && ln -s "$root" /work/main; }
    rm -rf build-gpu && ln -s /tmp/bgs/build-gpu-slim build-gpu
    export LD_LIBRARY_PATH=/tmp/bgs/build-gpu-slim/lib:$cuda_libs
    if [ "${CLI_ONLY:-0}" != 1 ]; then
        timeout 240 build-gpu/tests/test_ops --gtest_filter='*Conv2d/cuda' > "$O/test_ops-conv2d.log" 2>&1; echo "test_ops Conv2d/cuda rc $?"
        grep -E "worst error|\[  (PASSED|FAILED) |Failure" "$O/test_ops-conv2d.log" | cut -c1-600 | head -8
    fi
    IMRESTORE_WGMMA=1 timeout 330 ctest --test-dir build-gpu -R '^(app|cli_cuda)$' --output-on-failure > "$O/ctest.log" 2>&1
    grep -E "tests passed|Failed|\*\*\*|FAILED" "$O/ctest.log" | tail -12
    [ "${CLI_ONLY:-0}" = 1 ] && exit 0
    while [ ! -x /tmp/bench_tc ] && [ $SECONDS -lt 420 ]; do sleep 3; done
    timeout 100 /tmp/bench_tc --test --json "$O/bench_tc_test.json" > "$O/bench_tc_test.log" 2>&1; echo "bench_tc --test rc $?"
    grep -E "runs, worst|negative|test failure" "$O/bench_tc_test.log"; grep "^FAIL" "$O/bench_tc_test.log" | head -5 ;;
bench)  # call 3 of 3 (carry .carry/gpu.tar.xz, .carry/photo12mp.jpg): quiet timings.
    # bench_tc's shapes with IMRESTORE_WGMMA=1 (wgmma) and with IMRESTORE_WGMMA=0
    # (mma.sync); three models at 12 MP both ways; bench_gpu's conv suite
    # (the fp32 seed shapes).
    [ -d /tmp/bgs/build-gpu-slim ] || { mkdir -p /tmp/bgs && tar -xJf .carry/gpu.tar.xz -C /tmp/bgs; }
    export LD_LIBRARY_PATH=/tmp/bgs/build-gpu-slim/lib:$cuda_libs; X=/tmp/bgs/build-gpu-slim/imrestore
    mkdir -p /tmp/rep && cp /tmp/models/*.h5 weights/ 2>/dev/null
    c=$(cat .carry/commit 2>/dev/null)
    IMRESTORE_WGMMA=1 timeout 150 /tmp/bench_tc --bench --runs 20 --json /tmp/rep/bench_tc-wgmma.json --commit "$c" > /tmp/rep/bench_tc-wgmma.log 2>&1
    IMRESTORE_WGMMA=0 timeout 120 /tmp/bench_tc --bench --runs 20 --no-net --json /tmp/rep/bench_tc-mma.json --commit "$c" > /tmp/rep/bench_tc-mma.log 2>&1
    paste -d'|' <(sed -n '/^shape/,/^$/p' /tmp/rep/bench_tc-wgmma.log | cut -c1-88) <(sed -n '/^shape/,/^$/p' /tmp/rep/bench_tc-mma.log | cut -c49-88)
    sed -n '/^$/,$p' /tmp/rep/bench_tc-wgmma.log | tail -8
    for m in denoise denoise-unet-s denoise-unet; do
      for w in 1 0; do
        IMRESTORE_WGMMA=$w $X .carry/photo12mp.jpg -o /tmp/o.png --force -m weights/$m.h5 -d cuda --bench 20 --json > /tmp/r.json 2>/tmp/r.err
        echo "$m wgmma=$w: $(bench_sum /tmp/r.json)"; cp /tmp/r.json "/tmp/rep/$m-wgmma$w.json"
      done
    done
    timeout 120 /tmp/bgs/build-gpu-slim/bench_gpu --suite conv --json /tmp/rep/bench-conv.json > /tmp/rep/bench-conv.log 2>&1
    tail -6 /tmp/rep/bench-conv.log
    tar -cJf "$O/reports.tar.xz" -C /tmp rep; ls -la "$O" ;;
*)  echo "usage: $0 train-denoise|train-deblock-q|train-denoise-l5|verify|folder|validate|graph-ops|graph-models|nafnet-stages|unet-cublaslt|stage|tests|bench" >&2; exit 2 ;;
esac
