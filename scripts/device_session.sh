#!/bin/bash
# One GPU session's device calls, issued back to back (the machine stays warm
# only 30 s between calls; its /tmp and setsid daemons live while it is
# warm): stage what one call cannot carry, train two models beside each
# other across calls, run the GPU tests during the training, time quietly
# at the end. Run from the repository root on the device:
#
#   scripts/device_session.sh A|B|C|D
#
# Prepared here first (git-excluded .carry/, see docs/performance.md, "The
# next GPU session"): .carry/gtest (a copy of /usr/src/googletest),
# .carry/gpu.tar.xz (the OpenCV-free CUDA build, slimmed: scripts/
# slim_build.sh), .carry/photo12mp.jpg (scripts/bench_models_12mp.sh's photo),
# .carry/commit (git rev-parse --short HEAD), the shards
# (weights/data/pack_shards.py). 64 MiB travel a call; the carry of each
# (sizes measured 2026-12-02, tracked tree 77.7 MB):
#   A  tree without the *.h5 but denoise-unet.h5 and deblock.h5, and without
#      docs/images and docs/results (41.2 MB); carry .carry/gtest,
#      .carry/commit, weights/data/shards/heldout.tar: 63.1 MB.
#      Stages the two models and the held-out shard in /tmp; builds the
#      kernels and runs the GPU op tests and memcheck (scripts/gpu_host.sh).
#   B  tree without any *.h5 (5.4 MB); carry train-03.tar, train-04.tar
#      (42 MB). Starts the two training daemons (denoise-unet further on 03
#      then 04, sigma drawn toward low noise; deblock fine-tuned into a
#      quality-aware model, weights/README.md "A level input"), holds.
#   C  tree with the *.h5 the device lacks; carry .carry/gpu.tar.xz. The CLI
#      and runner tests on CUDA beside the training, then waits for both
#      and returns their model files, logs and curves.
#   D  quiet: --bench of the U-Nets at 12 MP, pixel_shuffle's vector kernel
#      forced (--kernel) or the planner's pick, twice each; then the folder
#      of 64 12 MP photos twice (bench_folder.sh: images cross as samples).
set -u
mode=${1:-}
O=${OUT:-/tmp/out}
mkdir -p "$O" /tmp/models /tmp/shards /tmp/ck /tmp/tr
root=$(pwd)
case $mode in
A)  # stage the model and held-out photos; GPU op tests + memcheck (kernels-only build here)
    cp weights/denoise-unet.h5 weights/deblock.h5 /tmp/models/ && cp weights/data/shards/heldout.tar /tmp/shards/
    cp -r .carry/gtest .gtest-src
    (nvidia-smi; nvcc --version | tail -1; python3 -c 'import torch; print(torch.__version__)') > "$O/env.log" 2>&1
    SKIP_BENCH=1 MEMCHECK_FILTER='*PixelShuffle*/cuda:*Convert*/cuda:*ImagePlanes*/cuda' IMRESTORE_COMMIT="$(cat .carry/commit)" \
        timeout 520 scripts/gpu_host.sh "$O/gh" 2>&1 | tail -60
    ls -la /tmp/models /tmp/shards ;;
B)  # start the training daemon: denoise-unet further on shards 03 then 04
    cp weights/data/shards/train-03.tar weights/data/shards/train-04.tar /tmp/shards/
    rm -rf /tmp/wcode && mkdir -p /tmp/wcode && cp weights/*.py weights/*.sh /tmp/wcode/ && cp -r weights/data /tmp/wcode/data
    rm -rf /tmp/wcode/data/shards
    cat > /tmp/tr/daemon.sh <<'EOD'
export ARCH=drunet ARCH_KW='{"widths":[48,96,192,384],"blocks":3}' NAME=denoise-drunet SHARD_DIR=/tmp/shards PYTHONUNBUFFERED=1
A="--lr 2e-4 --sigma-power 1.5 --ckpt-max-mib 40"
TOTAL_MINUTES=15 MINUTES=8.6 TRAIN_ARGS="--init-from /tmp/models/denoise-unet.h5 $A" bash /tmp/wcode/train_unet.sh /tmp/tr/o1 3 /tmp/ck
rm -f /tmp/ck/*; cp /tmp/tr/o1/$NAME.ckpt* /tmp/ck/
FINAL=1 MINUTES=8.6 TRAIN_ARGS="$A" bash /tmp/wcode/train_unet.sh /tmp/tr/o2 4 /tmp/ck
touch /tmp/tr/done
EOD
    cat > /tmp/tr/daemonD.sh <<'EOD'
export TASK=deblock ARCH=drunet ARCH_KW='{"widths":[32,64,128,256],"blocks":2,"level_input":"jpeg_quality"}' NAME=deblock-q SHARD_DIR=/tmp/shards PYTHONUNBUFFERED=1
A="--lr 2e-4 --batch 64 --jpeg-q 5,95 --jpeg-444 0.3 --jpeg-workers 6"
mkdir -p /tmp/ckD
TOTAL_MINUTES=15 MINUTES=8.6 TRAIN_ARGS="--init-from /tmp/models/deblock.h5 $A" bash /tmp/wcode/train_unet.sh /tmp/tr/d1 3 /tmp/ckD
rm -f /tmp/ckD/*; cp /tmp/tr/d1/$NAME.ckpt* /tmp/ckD/
FINAL=1 MINUTES=8.6 TRAIN_ARGS="$A" bash /tmp/wcode/train_unet.sh /tmp/tr/d2 4 /tmp/ckD
touch /tmp/tr/doneD
EOD
    setsid nohup bash /tmp/tr/daemon.sh > /tmp/tr/daemon.log 2>&1 < /dev/null &
    setsid nohup bash /tmp/tr/daemonD.sh > /tmp/tr/daemonD.log 2>&1 < /dev/null &
    sleep "${HOLD:-500}"; tail -4 /tmp/tr/o1/train.log /tmp/tr/d1/train.log; nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv ;;
C)  # the full CLI suite on CUDA beside the training; then wait for it and bring the model back
    mkdir -p /tmp/bgs && tar -xJf .carry/gpu.tar.xz -C /tmp/bgs
    for f in weights/*.h5; do cp -n "$f" /tmp/models/; done
    cp /tmp/models/*.h5 weights/ 2>/dev/null
    [ -e /work/main ] || { mkdir -p /work && ln -s "$root" /work/main; }
    rm -rf build-gpu && ln -s /tmp/bgs/build-gpu-slim build-gpu
    export LD_LIBRARY_PATH=/tmp/bgs/build-gpu-slim/lib
    ctest --test-dir build-gpu -R '^(app|cli_cuda)$' --output-on-failure > "$O/ctest.log" 2>&1
    grep -E "tests passed|Failed|\*\*\*|FAILED" "$O/ctest.log" | tail -20
    build-gpu/tests/test_app --gtest_filter='ModelRunner.TilesAndBatches*:ModelRunner.Samples*:CudaConvPlan.*' 2>&1 | tail -10
    while { [ ! -f /tmp/tr/done ] || [ ! -f /tmp/tr/doneD ]; } && [ $SECONDS -lt "${HOLD:-540}" ]; do sleep 10; done
    mkdir -p "$O/u" "$O/d"
    cat /tmp/tr/o1/train.log /tmp/tr/o2/train.log > "$O/u/train.log" 2>/dev/null; cp /tmp/tr/o2/models.tar* /tmp/tr/o2/*.curve.jsonl "$O/u/" 2>/dev/null
    cat /tmp/tr/d1/train.log /tmp/tr/d2/train.log > "$O/d/train.log" 2>/dev/null; cp /tmp/tr/d2/models.tar* /tmp/tr/d2/*.curve.jsonl "$O/d/" 2>/dev/null
    ls -la "$O" "$O/u" "$O/d"; grep -hE "held-out" /tmp/tr/o*/train.log /tmp/tr/d*/train.log | tail -16 ;;
D)  # quiet: whole-model timings at 12 MP, pixel_shuffle's vector kernel forced or not; the folder run
    [ -d /tmp/bgs/build-gpu-slim ] || { mkdir -p /tmp/bgs && tar -xJf .carry/gpu.tar.xz -C /tmp/bgs; }
    export LD_LIBRARY_PATH=/tmp/bgs/build-gpu-slim/lib; X=/tmp/bgs/build-gpu-slim/imrestore
    cp -n /tmp/models/*.h5 weights/ 2>/dev/null
    sum() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); b=r.get('bench_ms',{}); print('%.2f' % sum(v['median_ms'] for k,v in b.items() if k.startswith('stage ')), r.get('kernels_forced',''), r['files'][0].get('status'))" "$1"; }
    for m in denoise-unet denoise-unet-s; do
      # shellcheck disable=SC2086 # $k below: empty or two words, split on purpose
      for k in "" "--kernel pixel_shuffle=nhwc8_vec16" "" "--kernel pixel_shuffle=nhwc8_vec16"; do
        $X .carry/photo12mp.jpg -o /tmp/o.png --force -m $m -d cuda --bench 20 --json $k > /tmp/r.json 2>/tmp/r.err
        echo "$m ${k:-planner}: $(sum /tmp/r.json) $(tail -1 /tmp/r.err)"; cp /tmp/r.json "$O/$m-${k##*=}.json"
      done
    done
    # Issue 16's folder goal with the 8-bit upload (images cross as their
    # samples): 64 copies of the 12 MP photo, the default model, twice.
    for i in 1 2; do
      BIG_PHOTO=.carry/photo12mp.jpg COPIES_BIG=64 SETS=big OUT="$O/folder-$i" scripts/bench_folder.sh $X -d cuda
    done ;;
*)  echo "usage: $0 A|B|C|D" >&2; exit 2 ;;
esac
