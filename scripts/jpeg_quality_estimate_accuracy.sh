#!/usr/bin/env bash
# Measures the JPEG quality estimator that restore uses when a model takes a
# JPEG quality, --jpeg-quality is not given and an input is no JPEG
# (image/jpeg_quality.h, estimate_jpeg_quality): clean photos JPEG'd at each
# quality and decoded (imrestore degrade --jpeg Q, written as PNG), the
# estimate of each (--estimate-jpeg-quality --json), and per quality the mean
# and largest absolute error; "none" estimates the clean photos themselves.
#   scripts/jpeg_quality_estimate_accuracy.sh [IMRESTORE [CLEAN_DIR [QUALITIES...]]]
# defaults: build/imrestore, weights/data/heldout, none 10 20 30 40 60 80 90 95.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/imrestore}
clean=${2:-weights/data/heldout}
shift $(( $# < 2 ? $# : 2 ))
qualities=("$@")
[ ${#qualities[@]} -gt 0 ] || qualities=(none 10 20 30 40 60 80 90 95)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '| quality | photos | mean estimate | mean abs error | max abs error (photo) |\n| --- | --- | --- | --- | --- |\n'
for q in "${qualities[@]}"; do
    jpeg=(--jpeg "$q")
    [ "$q" = none ] && jpeg=()
    "$bin" degrade "$clean" -o "$tmp/$q/" "${jpeg[@]}" --estimate-jpeg-quality --json -q >"$tmp/$q.json"
    python3 - "$q" "$tmp/$q.json" <<'PY'
import json, os, sys
q = sys.argv[1]
doc = json.load(open(sys.argv[2]))
est = [(f["levels"][0]["value"], os.path.basename(f["input"])) for f in doc["files"] if f["status"] == "restored"]
mean = sum(e for e, _ in est) / len(est)
if q == "none":
    low = min(est)
    print(f"| none (the clean photos) | {len(est)} | {mean:.1f} | | lowest {low[0]:g} ({low[1]}) |")
else:
    err = [(abs(e - float(q)), name) for e, name in est]
    worst = max(err)
    print(f"| {q} | {len(est)} | {mean:.1f} | {sum(e for e, _ in err) / len(err):.2f} | {worst[0]:g} ({worst[1]}) |")
PY
done
