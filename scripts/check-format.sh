#!/usr/bin/env bash
# Fails if any C++/CUDA source differs from .clang-format (clang-format 14,
# Debian 12). Fix with: clang-format -i $(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(find app kernels tests bench \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
clang-format --dry-run -Werror $files
echo "format: $(echo "$files" | wc -l) files clean"
