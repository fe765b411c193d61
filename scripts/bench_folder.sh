#!/usr/bin/env bash
# End-to-end folder throughput against the codec floor, measured in the same
# run (docs/performance.md reports it; issue: the pipeline must reach the
# floor). Two folders, made here from the bundled samples:
#   big:   COPIES_BIG copies of a 12 MP JPEG (a sample upscaled to 4000x3000,
#          quality 95, by Python/PIL where there is one; else carried in:
#          BIG_PHOTO=path/to/a/12mp.jpg)
#   small: COPIES_SMALL copies of each sample photo (4 photos, 0.91 MP)
# For each: the tool's wall time, images/s and MP/s from its --json report,
# and the codec floor = (its own read+decode + encode+write milliseconds,
# summed over the images) / cores: what decoding and encoding alone would
# take spread over every core, the bound no pipeline can beat.
#   scripts/bench_folder.sh [IMRESTORE [extra imrestore args...]]
#   e.g. scripts/bench_folder.sh build/imrestore -d cuda
# Environment: COPIES_BIG (16), COPIES_SMALL (64), BIG_PHOTO, OUT (keep the
# reports there), CORES (default nproc), SETS ("big small": which folders),
# SPLIT=N: also run each folder as N one-thread processes (-j 1) splitting
# its files, the run one process must not lose to (issue 10's CPU goal).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exe=${1:-$root/build/imrestore}
shift $(($# < 1 ? $# : 1))
copies_big=${COPIES_BIG:-16}
copies_small=${COPIES_SMALL:-64}
cores=${CORES:-$(nproc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/big" "$work/small"
big=${BIG_PHOTO:-$work/photo12mp.jpg}
if [ ! -f "$big" ]; then
    /usr/bin/python3 -c "
from PIL import Image
Image.open('$root/samples/chelsea.png').convert('RGB').resize((4000, 3000), Image.LANCZOS).save('$big', quality=95)"
fi
for i in $(seq 1 "$copies_big"); do cp "$big" "$work/big/$i.jpg"; done
for i in $(seq 1 "$copies_small"); do
    for f in "$root"/samples/*.png "$root"/samples/*.jpg; do cp "$f" "$work/small/$i-$(basename "$f")"; done
done
for set in ${SETS:-big small}; do
    "$exe" "$work/$set" -o "$work/out-$set" -q --json "$@" >"$work/$set.json"
    [ -n "${OUT:-}" ] && mkdir -p "$OUT" && cp "$work/$set.json" "$OUT/bench_folder_$set.json"
    python3 - "$work/$set.json" "$set" "$cores" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s, t, cores = r["summary"], r["timing_ms"], int(sys.argv[3])
n, wall = s["restored"], s["wall_ms"]
codec = sum(t.get(k, {}).get("total_ms", 0.0) for k in ("read+decode", "encode+write"))
floor = codec / cores
print(f"{sys.argv[2]:5s}: {n} images, {s['megapixels']:.1f} MP in {wall:.0f} ms: {1000 * n / wall:.1f} images/s, "
      f"{s['megapixels_per_s']:.1f} MP/s; codec floor {floor:.0f} ms on {cores} cores "
      f"(decode+encode {codec:.0f} ms of CPU): {100 * floor / wall:.0f}% of the floor"
      f" ({s['failed']} failed, {s['skipped']} skipped)")
for k, v in t.items():
    print(f"       {k:28s} {v['total_ms']:10.1f} ms total, {v['median_ms']:8.2f} ms median")
PY
    if [ -n "${SPLIT:-}" ]; then
        # Files dealt round-robin into SPLIT folders of links, one process each.
        files=("$work/$set"/*)
        for k in $(seq 0 $((SPLIT - 1))); do mkdir -p "$work/split-$set/$k"; done
        for i in "${!files[@]}"; do ln -s "${files[$i]}" "$work/split-$set/$((i % SPLIT))/"; done
        t0=$(date +%s.%N)
        for k in $(seq 0 $((SPLIT - 1))); do
            "$exe" "$work/split-$set/$k" -o "$work/out-split-$set/$k" -q "$@" -j 1 &
        done
        wait
        python3 -c "import sys; print(f'       {sys.argv[1]} one-thread processes splitting the files: {1000 * (float(sys.argv[3]) - float(sys.argv[2])):.0f} ms')" \
            "$SPLIT" "$t0" "$(date +%s.%N)"
    fi
done
