#!/usr/bin/env bash
# Measures the noise estimator that restore uses when a model takes a noise
# level and --noise-level is not given (app/eval/noise_estimate.h): seeded
# Gaussian noise at each sigma on clean photos (imrestore degrade --noise S
# --seed 0), the estimate of each noisy file (--estimate-noise --json), and
# per sigma the mean and largest absolute error of the estimate.
#   scripts/noise_estimate_accuracy.sh [IMRESTORE [CLEAN_DIR [SIGMAS...]]]
# defaults: build/imrestore, weights/data/heldout, 0 5 15 25 50.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/imrestore}
clean=${2:-weights/data/heldout}
shift $(( $# < 2 ? $# : 2 ))
sigmas=("$@")
[ ${#sigmas[@]} -gt 0 ] || sigmas=(0 5 15 25 50)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '| sigma | photos | mean estimate | mean abs error | max abs error (photo) |\n| --- | --- | --- | --- | --- |\n'
for s in "${sigmas[@]}"; do
    "$bin" degrade "$clean" -o "$tmp/$s/" --noise "$s" --seed 0 --estimate-noise --json >"$tmp/$s.json"
    python3 - "$s" "$tmp/$s.json" <<'PY'
import json, os, sys
sigma = float(sys.argv[1])
doc = json.load(open(sys.argv[2]))
est = [(f["levels"][0]["value"], os.path.basename(f["input"])) for f in doc["files"] if f["status"] == "restored"]
err = [(abs(e - sigma), name) for e, name in est]
worst = max(err)
print(f"| {sigma:g} | {len(est)} | {sum(e for e, _ in est) / len(est):.2f} | {sum(e for e, _ in err) / len(err):.2f} "
      f"| {worst[0]:.2f} ({worst[1]}) |")
PY
done
