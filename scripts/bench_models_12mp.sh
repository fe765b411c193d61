#!/usr/bin/env bash
# Times bundled models on one 12-megapixel photo (by default one of each
# network: denoise-unet; denoise-unet-s, whose network deblock, deblur and
# photo share; denoise; denoise-fast, whose network deblock-fast and
# deblur-fast share; the speed budgets of
# the trained models are per 12 MP photo): makes a 4000x3000 JPEG (quality 95)
# from a held-out photo, then runs `imrestore --timing` on the CPU (whole
# run, as a user sees it) and, where a GPU is usable, `--bench 10 -d cuda`
# (median per stage; the model's compute is the sum of the stage rows).
#   scripts/bench_models_12mp.sh IMRESTORE [OUT_DIR] [MODEL...]
# Needs /usr/bin/python3 with PIL to make the photo (or an existing
# OUT_DIR/photo12mp.jpg, e.g. carried to a GPU host without PIL), and the
# held-out photos of weights/data/build_dataset.py. SKIP_CPU=1: the GPU runs only.
set -euo pipefail
exe=$1
out=${2:-bench12mp}
shift $(( $# >= 2 ? 2 : 1 ))
root=$(cd "$(dirname "$0")/.." && pwd)
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(denoise-unet denoise-unet-s denoise denoise-fast)
mkdir -p "$out"
photo=$out/photo12mp.jpg
[ -f "$photo" ] || /usr/bin/python3 "$root/scripts/make_photo12mp.py" "$photo"
gpu=0
"$exe" "$photo" -o "$out/probe.png" --force -m sharpen -d cuda -q >/dev/null 2>&1 && gpu=1
printf '%-14s %14s %18s\n' model "cpu whole run" "gpu model compute"
for m in "${models[@]}"; do
    cpu="(skipped)"
    if [ "${SKIP_CPU:-0}" != 1 ]; then
        "$exe" "$photo" -o "$out/$m.png" --force -m "$m" -d cpu --timing >"$out/$m-cpu.txt" 2>&1
        cpu=$(grep -oE 'in [0-9.]+ s' "$out/$m-cpu.txt" | head -1)
    fi
    g="(no GPU)"
    if [ $gpu = 1 ]; then
        "$exe" "$photo" -o "$out/$m.png" --force -m "$m" -d cuda --bench 10 >"$out/$m-gpu.txt" 2>&1
        g=$(awk '/min ms  median ms/{on=1; next} on && $1=="stage" {sum += $(NF-2)} END {printf "%.1f ms", sum}' \
            "$out/$m-gpu.txt")
    fi
    printf '%-14s %14s %18s\n' "$m" "${cpu#in }" "$g"
done
