#!/usr/bin/env bash
# One command from a fresh Debian 12 checkout to a restored sample:
# installs the build dependencies (apt-get), configures and builds imrestore in
# build/, then restores samples/chelsea.png with the default model and prints
# where the output went and the time per stage.
#   BUILD_DIR=...  build folder (default build)
#   CMAKE_ARGS=... extra configure flags, e.g. -DIMRESTORE_WITH_CUDA=OFF
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

packages=(cmake g++ make pkg-config clang-format groff-base python3-h5py python3-numpy libopencv-dev libjpeg62-turbo-dev libpng-dev libhdf5-dev libseccomp-dev libcli11-dev nlohmann-json3-dev libstb-dev libgtest-dev libbenchmark-dev)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"$(nproc)"

mkdir -p restored
"$BUILD_DIR/imrestore" samples/chelsea.png -o restored/chelsea.png --force --timing
