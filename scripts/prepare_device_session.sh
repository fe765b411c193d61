#!/usr/bin/env bash
# What a GPU session's training and validation calls (scripts/device_session.sh)
# need that a fresh checkout lacks: everything ignored by git is gone in a new
# session's checkout, so this rebuilds it, each step skipped when its output
# is already there.
#
#   scripts/prepare_device_session.sh [STEP...]   (steps: data shards build carry venv; default all)
#
#   data    the training and held-out photos (weights/data/build_dataset.py);
#           repository copies from REPO_MIRRORS/OWNER+NAME/repo when that
#           folder holds them (the fetch tool's layout), else git clone --mirror
#           into weights/data/cache/repos/ (weights/data/README.md, "Rebuilding")
#   shards  weights/data/shards/ (pack_shards.py) and heldout-mini.tar (every 4th
#           held-out photo: train.py's own curve)
#   build   build-gpu: the OpenCV-free CUDA build (the GPU host has no OpenCV) for the
#           H200 alone, 90a-real: sm_90a holds the wgmma convolutions (a plain 90-real
#           leaves them out), and the default's added compute_80 PTX makes the slim
#           archive 16 MB instead of 10, which a validate call's 64 MiB cannot spare
#           (log: build-gpu/build.log)
#   carry   .carry/imr.tar.xz (the slim build's imrestore and lib/: validate,
#           bench_12mp) and .carry/photo12mp.jpg (scripts/make_photo12mp.py, the
#           photo of scripts/bench_models_12mp.sh); .carry/ is excluded from git
#           in .git/info/exclude
#   venv    a PyTorch venv for the Python tools, run on this machine's CPU (VENV,
#           default /tmp/tv; PyPI's torch, a CUDA build of 4.8 GB: PyTorch's CPU
#           index was not reachable here): weight averages (imrestore_model.py
#           --average-with), train.py --export-only, the train smoke test
#
# About 10 minutes on 2 cores (seen here: data and shards 4, the CUDA build 4-5,
# the venv 1; the first run also downloads 350 MB of packages).
set -euo pipefail
cd "$(dirname "$0")/.."
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(data shards build carry venv)
mirrors=${REPO_MIRRORS:-/work/.mirror}
venv=${VENV:-/tmp/tv}
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"

need_debs() {
    local missing=() p
    for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
    if [ ${#missing[@]} -gt 0 ]; then
        $sudo_cmd apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
}

step_data() {
    need_debs python3-numpy python3-pil git
    local repos args=() r d
    repos=$(/usr/bin/python3 -c "import sys; sys.path.insert(0, 'weights/data'); import build_dataset; print(*build_dataset.REPOS)")
    for r in $repos; do
        d=$mirrors/${r/\//+}/repo
        if [ -d "$d" ]; then
            args+=(--repo "$r=$d")
        else
            d=weights/data/cache/repos/${r/\//+}.git
            # cloned beside, then renamed: an interrupted clone is not taken for a copy
            [ -d "$d" ] || { rm -rf "$d.part" && git clone -q --mirror "https://github.com/$r" "$d.part" && mv "$d.part" "$d"; }
        fi
    done
    /usr/bin/python3 weights/data/build_dataset.py -j "$(nproc)" "${args[@]}" | tail -3
    git diff --quiet weights/data/MANIFEST.tsv || { echo "MANIFEST.tsv changed: the photos are not the ones in git" >&2; exit 1; }
}

step_shards() {
    # pack_shards.py writes heldout.tar after the training shards: its presence means all are there
    if [ ! -f weights/data/shards/heldout.tar ]; then /usr/bin/python3 weights/data/pack_shards.py | tail -2; fi
    [ weights/data/shards/heldout-mini.tar -nt weights/data/shards/heldout.tar ] || /usr/bin/python3 \
        weights/data/shards.py subset weights/data/shards/heldout.tar weights/data/shards/heldout-mini.tar 4
}

step_build() {
    need_debs cmake g++ make pkg-config libjpeg62-turbo-dev libpng-dev libhdf5-dev libseccomp-dev \
        libcli11-dev nlohmann-json3-dev libstb-dev libgtest-dev libbenchmark-dev
    [ -f build-gpu/CMakeCache.txt ] || cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DIMRESTORE_WITH_OPENCV=OFF \
        -DIMRESTORE_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a-real >/dev/null
    grep -q '^CMAKE_CUDA_ARCHITECTURES:.*=90a-real$' build-gpu/CMakeCache.txt \
        || { echo "build-gpu is configured for other architectures than 90a-real: remove it and run again" >&2; exit 1; }
    cmake --build build-gpu -j"$(nproc)" > build-gpu/build.log 2>&1 \
        || { tail -20 build-gpu/build.log >&2; echo "the build failed: build-gpu/build.log" >&2; exit 1; }
    tail -1 build-gpu/build.log
}

step_carry() {
    mkdir -p .carry .git/info
    grep -qx '.carry/' .git/info/exclude 2>/dev/null || echo '.carry/' >> .git/info/exclude
    [ -x build-gpu/imrestore ] || { echo "no build-gpu/imrestore: run the build step first" >&2; exit 1; }
    if [ ! -f .carry/imr.tar.xz ] || [ build-gpu/imrestore -nt .carry/imr.tar.xz ]; then
        local t
        t=$(mktemp -d)
        scripts/slim_build.sh build-gpu "$t/build-gpu-slim" >/dev/null
        # written beside, then moved: a failed pack leaves no archive that looks finished
        tar -cJf "$t/imr.tar.xz" -C "$t" build-gpu-slim/imrestore build-gpu-slim/lib && mv "$t/imr.tar.xz" .carry/imr.tar.xz
        rm -rf "$t"
    fi
    [ -f .carry/photo12mp.jpg ] || /usr/bin/python3 scripts/make_photo12mp.py .carry/photo12mp.jpg
    ls -la .carry
}

step_venv() {
    [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import torch, torchvision, h5py, PIL" 2>/dev/null && return
    need_debs python3-venv
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q torch==2.11.0 numpy h5py pillow
    "$venv/bin/pip" install -q torchvision==0.26.0 --no-deps
}

for s in "${steps[@]}"; do
    case $s in
    data | shards | build | carry | venv) echo "== $s"; "step_$s" ;;
    *) echo "unknown step: $s (data shards build carry venv)" >&2; exit 2 ;;
    esac
done
