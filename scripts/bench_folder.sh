#!/usr/bin/env bash
# End-to-end folder throughput, as docs/performance.md reports it: COPIES
# copies of each bundled sample photo (4 photos, 0.91 MP) restored by
# imrestore with the default model, wall time from its --json report.
#   scripts/bench_folder.sh [IMRESTORE [COPIES [extra imrestore args...]]]
#   e.g. scripts/bench_folder.sh build/imrestore 64 -d cuda -b 4
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exe=${1:-$root/build/imrestore}
copies=${2:-64}
shift $(($# < 2 ? $# : 2))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/in"
for i in $(seq 1 "$copies"); do
    for f in "$root"/samples/*.png "$root"/samples/*.jpg; do cp "$f" "$work/in/$i-$(basename "$f")"; done
done
"$exe" "$work/in" -o "$work/out" -q --json "$@" >"$work/report.json"
python3 - "$work/report.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
n = s["restored"]
print(f"{n} images, {s['megapixels']:.1f} MP in {s['wall_ms']:.0f} ms: "
      f"{1000 * n / s['wall_ms']:.0f} images/s, {s['megapixels_per_s']:.1f} MP/s "
      f"({s['failed']} failed, {s['skipped']} skipped)")
PY
