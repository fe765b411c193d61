#!/bin/bash
# One GPU session's device calls, issued back to back (the machine stays warm
# only 30 s between calls; its /tmp and setsid daemons live while it is
# warm). The two training daemons start first, so that they span the tests
# of the calls after them; the timing runs last, alone. Run from the
# repository root on the device:
#
#   scripts/device_session.sh 1|2|3|4          (training beside the checks)
#   scripts/device_session.sh train-denoise|train-deblock-q   (a call that is the training)
#   scripts/device_session.sh stage|tests|bench (checks and timings only)
#
# Prepared here first (git-excluded .carry/, see docs/performance.md, "The
# next GPU session"): .carry/gtest (a copy of /usr/src/googletest),
# .carry/gpu.tar.xz (the OpenCV-free CUDA build, slimmed: scripts/
# slim_build.sh build-gpu build-gpu-slim, then tar -cJf .carry/gpu.tar.xz
# --exclude=build-gpu-slim/tests/test_{ops,eval,photo_mix} build-gpu-slim,
# which calls 3 and 4 do not run: 18 MB), .carry/photo12mp.jpg (scripts/bench_models_12mp.sh's photo),
# .carry/commit (git rev-parse --short HEAD), the shards
# (weights/data/pack_shards.py). 64 MiB travel a call (the tracked tree
# without any *.h5 is 9.4 MB); what each carries:
#   1  the tree with only denoise-unet.h5; carry weights/data/shards/
#      train-03.tar (54 MB). Starts the denoise-unet daemon (further on 03
#      then 04, sigma drawn toward low noise), which waits for call 2's
#      held-out shard. Returns at once.
#   2  the tree with only deblock.h5; carry heldout.tar, train-04.tar,
#      .carry/gtest, .carry/commit (57 MB). Starts the deblock-q daemon
#      (deblock fine-tuned into a quality-aware model, weights/README.md "A
#      level input"); checks the wgmma descriptor (scripts/wgmma_probe.cu,
#      adapting the source if the probe says the offsets are the other way
#      round); then builds the kernels (and bench_tc in the background) and
#      runs the GPU op tests (scripts/gpu_host.sh) beside the training.
#   3  the tree with the *.h5 the device lacks; carry .carry/gpu.tar.xz.
#      The CLI and runner tests on CUDA beside the training, memcheck of
#      every conv2d row (the wgmma ones), bench_tc's own tests of every
#      tensor-core row; then waits for the denoise-unet daemon and returns
#      its model (two parts), log and curve.
#   4  the tree with no *.h5; carry .carry/gpu.tar.xz, .carry/photo12mp.jpg.
#      Waits for the deblock-q daemon; then, quiet: --bench of three models
#      at 12 MP in auto (wgmma), auto with IMRESTORE_WGMMA=0 (mma.sync), fp32
#      and tf32; bench_tc's shapes with and without wgmma; bench_gpu's conv
#      suite (the fp32 seed shapes). Returns deblock-q and one tar of the
#      reports. The new models are evaluated on the held-out photos here,
#      on the CPU (imrestore eval), not in device time.
# A session of checks and timings only (no training): "stage" carries the
# tree with denoise-unet, deblock, deblur and photo .h5 (63 MB) and leaves
# them in /tmp/models; "tests" the tree with the other .h5 and
# .carry/gpu.tar.xz packed with test_ops and bench_gpu (tests/test_eval and
# tests/test_photo_mix left out); "bench" carries gpu.tar.xz and
# .carry/photo12mp.jpg.
set -u
mode=${1:-}
O=${OUT:-/tmp/out}
mkdir -p "$O" /tmp/models /tmp/shards /tmp/ck /tmp/tr
root=$(pwd)
case $mode in
1)  # stage denoise-unet and shard 03; start its daemon; return
    cp weights/denoise-unet.h5 /tmp/models/ && cp weights/data/shards/train-03.tar /tmp/shards/
    rm -rf /tmp/wcode && mkdir -p /tmp/wcode && cp weights/*.py weights/*.sh /tmp/wcode/ && cp -r weights/data /tmp/wcode/data
    rm -rf /tmp/wcode/data/shards
    cat > /tmp/tr/daemon.sh <<'EOD'
export ARCH=drunet ARCH_KW='{"widths":[48,96,192,384],"blocks":3}' NAME=denoise-drunet SHARD_DIR=/tmp/shards PYTHONUNBUFFERED=1
A="--lr 2e-4 --sigma-power 1.5 --ckpt-max-mib 40"
while [ ! -f /tmp/shards/ready ]; do sleep 2; done
TOTAL_MINUTES=12 MINUTES=6 TRAIN_ARGS="--init-from /tmp/models/denoise-unet.h5 $A" bash /tmp/wcode/train_unet.sh /tmp/tr/o1 3 /tmp/ck
rm -f /tmp/ck/*; cp /tmp/tr/o1/$NAME.ckpt* /tmp/ck/
FINAL=1 MINUTES=6 TRAIN_ARGS="$A" bash /tmp/wcode/train_unet.sh /tmp/tr/o2 4 /tmp/ck
touch /tmp/tr/done
EOD
    setsid nohup bash /tmp/tr/daemon.sh > /tmp/tr/daemon.log 2>&1 < /dev/null &
    (nvidia-smi; nvcc --version | tail -1; python3 -c 'import torch; print(torch.__version__)') > "$O/env.log" 2>&1
    ls -la /tmp/models /tmp/shards ;;
2)  # stage the rest; start the deblock-q daemon; the wgmma probe; GPU op tests (kernels-only build)
    cp weights/deblock.h5 /tmp/models/ && cp weights/data/shards/train-04.tar weights/data/shards/heldout.tar /tmp/shards/
    touch /tmp/shards/ready
    # --jpeg-prior: a third of the patches were JPEGs of quality 60-95 before
    # (target included), so that with the quality given the model learns to
    # leave a photo's own blocking alone (weights/README.md, deblock-q).
    cat > /tmp/tr/daemonD.sh <<'EOD'
export TASK=deblock ARCH=drunet ARCH_KW='{"widths":[32,64,128,256],"blocks":2,"level_input":"jpeg_quality"}' NAME=deblock-q SHARD_DIR=/tmp/shards PYTHONUNBUFFERED=1
A="--lr 2e-4 --batch 64 --jpeg-q 5,95 --jpeg-444 0.3 --jpeg-prior 0.33,60,95 --jpeg-workers 6"
mkdir -p /tmp/ckD
TOTAL_MINUTES=12 MINUTES=6 TRAIN_ARGS="--init-from /tmp/models/deblock.h5 $A" bash /tmp/wcode/train_unet.sh /tmp/tr/d1 3 /tmp/ckD
rm -f /tmp/ckD/*; cp /tmp/tr/d1/$NAME.ckpt* /tmp/ckD/
FINAL=1 MINUTES=6 TRAIN_ARGS="$A" bash /tmp/wcode/train_unet.sh /tmp/tr/d2 4 /tmp/ckD
touch /tmp/tr/doneD
EOD
    setsid nohup bash /tmp/tr/daemonD.sh > /tmp/tr/daemonD.log 2>&1 < /dev/null &
    # The descriptor's two offsets, checked before anything is built on them.
    nvcc -arch=sm_90a -o /tmp/wgmma_probe scripts/wgmma_probe.cu 2>/dev/null && /tmp/wgmma_probe | tee "$O/wgmma_probe.log"
    if [ "${PIPESTATUS[0]}" = 3 ]; then
        sed -i 's/constexpr uint32_t lbo = kWgmmaCoreBytes, sbo = 2 \* kWgmmaCoreBytes;/constexpr uint32_t lbo = 2 * kWgmmaCoreBytes, sbo = kWgmmaCoreBytes;/' \
            kernels/cuda/conv2d_tensor_core.cu && grep -n "constexpr uint32_t lbo" kernels/cuda/conv2d_tensor_core.cu | tee -a "$O/wgmma_probe.log"
    fi
    (nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DIMR_BUILD_SM90A=1 -Ikernels/cuda bench/bench_tensor_core.cu \
        kernels/cuda/conv2d_tensor_core.cu -lcudnn -o /tmp/bench_tc > /tmp/bench_tc_build.log 2>&1 &)
    cp -r .carry/gtest .gtest-src
    SKIP_BENCH=1 MEMCHECK_FILTER='*Convert*/cuda' IMRESTORE_COMMIT="$(cat .carry/commit)" \
        timeout 520 scripts/gpu_host.sh "$O/gh" 2>&1 | tail -40
    tail -2 /tmp/tr/o1/train.log /tmp/tr/d1/train.log; nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv ;;
3)  # the CLI suite on CUDA beside the training; memcheck and bench_tc's tests of the conv2d rows; then denoise-unet back
    mkdir -p /tmp/bgs && tar -xJf .carry/gpu.tar.xz -C /tmp/bgs
    for f in weights/*.h5; do cp -n "$f" /tmp/models/; done
    cp /tmp/models/*.h5 weights/ 2>/dev/null
    [ -e /work/main ] || { mkdir -p /work && ln -s "$root" /work/main; }
    rm -rf build-gpu && ln -s /tmp/bgs/build-gpu-slim build-gpu
    export LD_LIBRARY_PATH=/tmp/bgs/build-gpu-slim/lib
    ctest --test-dir build-gpu -R '^(app|cli_cuda)$' --output-on-failure > "$O/ctest.log" 2>&1
    grep -E "tests passed|Failed|\*\*\*|FAILED" "$O/ctest.log" | tail -20
    build-gpu/tests/test_app --gtest_filter='ModelRunner.TilesAndBatches*:ModelRunner.Samples*:CudaConvPlan.*' 2>&1 | tail -6
    IMRESTORE_TEST_SKIP_GPU_ONLY=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 \
        build-gpuhost/tests/test_ops --gtest_filter='*Conv2d/cuda' > "$O/memcheck-conv2d.log" 2>&1
    echo "memcheck conv2d rc $?"; grep -E "ERROR SUMMARY|\[  (PASSED|FAILED) " "$O/memcheck-conv2d.log" | tail -3
    tail -3 /tmp/bench_tc_build.log
    timeout 150 /tmp/bench_tc --test --json "$O/bench_tc_test.json" > "$O/bench_tc_test.log" 2>&1; echo "bench_tc --test rc $?"
    grep -E "FAIL|runs, worst|negative|failure" "$O/bench_tc_test.log" | head -12
    while [ ! -f /tmp/tr/done ] && [ $SECONDS -lt "${HOLD:-560}" ]; do sleep 5; done
    mkdir -p "$O/u"
    cat /tmp/tr/o1/train.log /tmp/tr/o2/train.log > "$O/u/train.log" 2>/dev/null; cp /tmp/tr/o2/*.curve.jsonl "$O/u/" 2>/dev/null
    # the model alone (no .f32), in parts under 16 MiB
    (cd /tmp/tr/o2 && tar -xf models.tar 2>/dev/null || cat models.tar.part* | tar -x) && cp /tmp/tr/o2/denoise-drunet.h5 /tmp/models/ 2>/dev/null
    split -b 15M -d -a 1 /tmp/models/denoise-drunet.h5 "$O/u/denoise-drunet.h5.part" 2>/dev/null
    ls -la "$O" "$O/u"; grep -hE "held-out" /tmp/tr/o*/train.log | tail -8 ;;
4)  # wait for deblock-q; quiet: whole-model timings at 12 MP (wgmma against mma.sync); bench_tc; bench_gpu conv
    [ -d /tmp/bgs/build-gpu-slim ] || { mkdir -p /tmp/bgs && tar -xJf .carry/gpu.tar.xz -C /tmp/bgs; }
    export LD_LIBRARY_PATH=/tmp/bgs/build-gpu-slim/lib; X=/tmp/bgs/build-gpu-slim/imrestore
    while [ ! -f /tmp/tr/doneD ] && [ $SECONDS -lt "${HOLD:-240}" ]; do sleep 5; done
    mkdir -p "$O/d" /tmp/rep
    cat /tmp/tr/d1/train.log /tmp/tr/d2/train.log > "$O/d/train.log" 2>/dev/null; cp /tmp/tr/d2/*.curve.jsonl "$O/d/" 2>/dev/null
    (cd /tmp/tr/d2 && tar -xf models.tar 2>/dev/null || cat models.tar.part* | tar -x) && cp /tmp/tr/d2/deblock-q.h5 "$O/d/"
    cp -n /tmp/models/*.h5 weights/ 2>/dev/null
    sum() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); b=r.get('bench_ms',{}); print('%.2f' % sum(v['median_ms'] for k,v in b.items() if k.startswith('stage ')), r['files'][0].get('status'))" "$1"; }
    # wgmma (the pick on this GPU) against mma.sync (IMRESTORE_WGMMA=0), and
    # fp32 against tf32 (written 2026-12-02, predicted ~40 ms for denoise at
    # 12 MP against 99.9)
    for m in denoise denoise-unet-s denoise-unet; do
      for p in auto auto-mma fp32 tf32; do
        W=1; [ $p = auto-mma ] && W=0
        IMRESTORE_WGMMA=$W $X .carry/photo12mp.jpg -o /tmp/o.png --force -m $m -d cuda --precision ${p%-mma} --bench 20 --json > /tmp/r.json 2>/tmp/r.err
        echo "$m $p: $(sum /tmp/r.json) $(tail -1 /tmp/r.err)"; cp /tmp/r.json "/tmp/rep/$m-$p.json"
      done
    done
    /tmp/bench_tc --bench --runs 20 --json /tmp/rep/bench_tc-wgmma.json --commit "$(cat .carry/commit 2>/dev/null)" > /tmp/rep/bench_tc-wgmma.log 2>&1
    IMRESTORE_WGMMA=0 /tmp/bench_tc --bench --runs 20 --no-net --json /tmp/rep/bench_tc-mma.json > /tmp/rep/bench_tc-mma.log 2>&1
    paste -d'|' <(sed -n '/^shape/,/^$/p' /tmp/rep/bench_tc-wgmma.log | cut -c1-90) <(sed -n '/^shape/,/^$/p' /tmp/rep/bench_tc-mma.log | cut -c49-80) | head -50
    tail -14 /tmp/rep/bench_tc-wgmma.log
    timeout 150 build-gpuhost/bench_gpu --suite conv --json /tmp/rep/bench-conv.json > /tmp/rep/bench-conv.log 2>&1
    tail -8 /tmp/rep/bench-conv.log
    tar -cJf "$O/reports.tar.xz" -C /tmp rep; ls -la "$O" "$O/d" ;;
train-denoise | train-deblock-q)
    # One call that is the training: no daemon to lose when the machine is
    # taken back between calls. Carry the tree with only the starting .h5
    # (denoise-unet.h5 / deblock.h5), one training shard (TRAIN_SHARD, default
    # 03 / 04: shards these models have not seen) and
    # weights/data/shards/heldout-mini.tar (every 4th held-out photo:
    # train.py's own curve; the tool's evaluation on all 34 runs here
    # afterwards, on the CPU). A whole run of 8.5 minutes (MINUTES: the
    # cosine ends in it, FINAL=1), started from the bundled .h5; returns
    # train_unet.sh's files: the model in parts first, the log and curve (a
    # 14 M-parameter model leaves no room for its checkpoint: a later run
    # starts again from the returned .h5, --init-from).
    k=$(printf '%02d' "$((10#${TRAIN_SHARD:-$([ $mode = train-denoise ] && echo 3 || echo 4)}))")
    cp "weights/data/shards/train-$k.tar" /tmp/shards/ && cp weights/data/shards/heldout-mini.tar /tmp/shards/heldout.tar
    if [ $mode = train-denoise ]; then
        export ARCH=drunet ARCH_KW='{"widths":[48,96,192,384],"blocks":3}' NAME=denoise-drunet
        A="--init-from $root/weights/denoise-unet.h5 --lr 2e-4 --sigma-power 1.5 --ckpt-max-mib 40"
    else
        export TASK=deblock ARCH=drunet ARCH_KW='{"widths":[32,64,128,256],"blocks":2,"level_input":"jpeg_quality"}' NAME=deblock-q
        A="--init-from $root/weights/deblock.h5 --lr 2e-4 --batch 64 --jpeg-q 5,95 --jpeg-444 0.3 --jpeg-prior 0.33,60,95 --jpeg-workers 6"
    fi
    SHARD_DIR=/tmp/shards TOTAL_MINUTES=${MINUTES:-8.5} MINUTES=${MINUTES:-8.5} FINAL=1 TRAIN_ARGS="$A" \
        bash weights/train_unet.sh "$O" "$k" 2>&1 | tail -25
    ls -la "$O" ;;
stage)  # a check-only session, call 1 of 3: the bigger *.h5 to /tmp/models (what call "tests" lacks)
    cp weights/*.h5 /tmp/models/ && ls -la /tmp/models ;;
tests)  # call 2 of 3: the tree with the other *.h5; carry .carry/gpu.tar.xz (with test_ops and bench_gpu).
    # conv2d on CUDA every way (every variant row against float64), the CLI
    # and runner suites on CUDA with every bundled model and the wgmma rows
    # picked (IMRESTORE_WGMMA=1); bench_tc (built
    # here meanwhile) tests every tensor-core row on its own cases.
    mkdir -p /tmp/bgs && tar -xJf .carry/gpu.tar.xz -C /tmp/bgs
    (nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DIMR_BUILD_SM90A=1 -Ikernels/cuda bench/bench_tensor_core.cu \
        kernels/cuda/conv2d_tensor_core.cu -lcudnn -o /tmp/bench_tc > /tmp/bench_tc_build.log 2>&1 &)
    for f in weights/*.h5; do cp -n "$f" /tmp/models/; done
    cp /tmp/models/*.h5 weights/ 2>/dev/null
    [ -e /work/main ] || { mkdir -p /work && ln -s "$root" /work/main; }
    rm -rf build-gpu && ln -s /tmp/bgs/build-gpu-slim build-gpu
    export LD_LIBRARY_PATH=/tmp/bgs/build-gpu-slim/lib
    timeout 240 build-gpu/tests/test_ops --gtest_filter='*Conv2d/cuda' > "$O/test_ops-conv2d.log" 2>&1; echo "test_ops Conv2d/cuda rc $?"
    grep -E "worst error|\[  (PASSED|FAILED) |Failure" "$O/test_ops-conv2d.log" | cut -c1-600 | head -8
    IMRESTORE_WGMMA=1 timeout 240 ctest --test-dir build-gpu -R '^(app|cli_cuda)$' --output-on-failure > "$O/ctest.log" 2>&1
    grep -E "tests passed|Failed|\*\*\*|FAILED" "$O/ctest.log" | tail -12
    while [ ! -x /tmp/bench_tc ] && [ $SECONDS -lt 420 ]; do sleep 3; done
    timeout 100 /tmp/bench_tc --test --json "$O/bench_tc_test.json" > "$O/bench_tc_test.log" 2>&1; echo "bench_tc --test rc $?"
    grep -E "runs, worst|negative|test failure" "$O/bench_tc_test.log"; grep "^FAIL" "$O/bench_tc_test.log" | head -5 ;;
bench)  # call 3 of 3 (carry .carry/gpu.tar.xz, .carry/photo12mp.jpg): quiet timings.
    # bench_tc's shapes with IMRESTORE_WGMMA=1 (wgmma) and with IMRESTORE_WGMMA=0
    # (mma.sync); three models at 12 MP both ways; bench_gpu's conv suite
    # (the fp32 seed shapes).
    [ -d /tmp/bgs/build-gpu-slim ] || { mkdir -p /tmp/bgs && tar -xJf .carry/gpu.tar.xz -C /tmp/bgs; }
    export LD_LIBRARY_PATH=/tmp/bgs/build-gpu-slim/lib; X=/tmp/bgs/build-gpu-slim/imrestore
    mkdir -p /tmp/rep && cp /tmp/models/*.h5 weights/ 2>/dev/null
    c=$(cat .carry/commit 2>/dev/null)
    IMRESTORE_WGMMA=1 timeout 150 /tmp/bench_tc --bench --runs 20 --json /tmp/rep/bench_tc-wgmma.json --commit "$c" > /tmp/rep/bench_tc-wgmma.log 2>&1
    IMRESTORE_WGMMA=0 timeout 120 /tmp/bench_tc --bench --runs 20 --no-net --json /tmp/rep/bench_tc-mma.json --commit "$c" > /tmp/rep/bench_tc-mma.log 2>&1
    paste -d'|' <(sed -n '/^shape/,/^$/p' /tmp/rep/bench_tc-wgmma.log | cut -c1-88) <(sed -n '/^shape/,/^$/p' /tmp/rep/bench_tc-mma.log | cut -c49-88)
    sed -n '/^$/,$p' /tmp/rep/bench_tc-wgmma.log | tail -8
    sum() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); b=r.get('bench_ms',{}); print('%.2f' % sum(v['median_ms'] for k,v in b.items() if k.startswith('stage ')), r['precision']['used'], r['files'][0].get('status'))" "$1"; }
    for m in denoise denoise-unet-s denoise-unet; do
      for w in 1 0; do
        IMRESTORE_WGMMA=$w $X .carry/photo12mp.jpg -o /tmp/o.png --force -m weights/$m.h5 -d cuda --bench 20 --json > /tmp/r.json 2>/tmp/r.err
        echo "$m wgmma=$w: $(sum /tmp/r.json)"; cp /tmp/r.json "/tmp/rep/$m-wgmma$w.json"
      done
    done
    timeout 120 /tmp/bgs/build-gpu-slim/bench_gpu --suite conv --json /tmp/rep/bench-conv.json > /tmp/rep/bench-conv.log 2>&1
    tail -6 /tmp/rep/bench-conv.log
    tar -cJf "$O/reports.tar.xz" -C /tmp rep; ls -la "$O" ;;
*)  echo "usage: $0 1|2|3|4|train-denoise|train-deblock-q|stage|tests|bench" >&2; exit 2 ;;
esac
