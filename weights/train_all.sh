#!/bin/bash
# Trains the four imrestore CNN models at once on one GPU (weights/README.md, "Training").
#
#   weights/train_all.sh OUT_DIR MINUTES [RESUME_DIR]
#
# Starts four background weights/train.py processes on the same GPU:
#   denoise        --task denoise --channels 64 --depth 14
#   deblock        --task deblock --channels 64 --depth 14
#   deblur         --task deblur  --channels 64 --depth 14
#   denoise-large  --task denoise --channels 96 --depth 16
# each with a wall-clock budget that ends, final evaluation and writing
# included, SLACK_S seconds (default 30) before MINUTES are up. A model whose
# RESUME_DIR/NAME.ckpt exists continues from it (RESUME_DIR: the third
# argument, else the environment variable RESUME_DIR; may be OUT_DIR itself).
#
# OUT_DIR ends up with six files (the GPU host returns at most 8):
#   train.log            the four processes' output, each line prefixed with [NAME]
#   NAME.ckpt (x4)       model + optimizer + step + RNG state, rewritten every 60 s
#   models.tar           NAME.h5 and NAME.f32 of the four models
#                        (tar -xf OUT_DIR/models.tar -C weights/)
# Environment: MODELS (NAME:TASK:C:D:SEED[:FACTOR] entries, default the four
# above with FACTOR 2; the default denoise is denoise:denoise:48:10:5:1), PYTHON (default python3), TRAIN_ARGS (extra train.py arguments
# for all four), SLACK_S, JPEG_WORKERS (deblock's JPEG processes, default 6),
# TRAIN_DIR / HELDOUT_DIR (default weights/data/train and weights/data/heldout).
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 OUT_DIR MINUTES [RESUME_DIR]" >&2
  exit 2
fi
OUT=$1
MINUTES=$2
RESUME_DIR=${3:-${RESUME_DIR:-}}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
SLACK_S=${SLACK_S:-30}
JPEG_WORKERS=${JPEG_WORKERS:-6}
TRAIN_DIR=${TRAIN_DIR:-$HERE/data/train}
HELDOUT_DIR=${HELDOUT_DIR:-$HERE/data/heldout}
export PYTHONUNBUFFERED=1

mkdir -p "$OUT"
LOG=$OUT/train.log
BUDGET=$("$PY" -c "import sys; m = (float(sys.argv[1]) * 60 - float(sys.argv[2])) / 60; print(f'{m:.3f}') if m > 0.25 else sys.exit(1)" "$MINUTES" "$SLACK_S") || {
  echo "$0: MINUTES=$MINUTES leaves too little time after SLACK_S=$SLACK_S s" >&2
  exit 2
}

{
  echo "== train_all.sh $(date -u '+%Y-%m-%d %H:%M:%S UTC'): $MINUTES min, $BUDGET min per model, out $OUT, resume ${RESUME_DIR:-none}"
  nvidia-smi -L 2>/dev/null
  "$PY" -c "import torch, torchvision, numpy, h5py; print('torch', torch.__version__, 'torchvision', torchvision.__version__, 'numpy', numpy.__version__, 'h5py', h5py.__version__, 'cuda', torch.cuda.is_available())" 2>&1
  echo "train: $(ls "$TRAIN_DIR"/*.png 2>/dev/null | wc -l) PNGs in $TRAIN_DIR; held out: $(ls "$HELDOUT_DIR"/*.png 2>/dev/null | wc -l) PNGs in $HELDOUT_DIR"
} >>"$LOG"

# name task channels depth seed [factor]
MODELS=${MODELS:-"denoise:denoise:64:14:1 deblock:deblock:64:14:2 deblur:deblur:64:14:3 denoise-large:denoise:96:16:4"}
for spec in $MODELS; do
  IFS=: read -r name task channels depth seed factor <<<"$spec"
  args=(--task "$task" --channels "$channels" --depth "$depth" --seed "$seed" --name "$name" --factor "${factor:-2}"
        --minutes "$BUDGET" --out "$OUT" --train-dir "$TRAIN_DIR" --heldout-dir "$HELDOUT_DIR"
        --jpeg-workers "$JPEG_WORKERS")
  if [ -n "$RESUME_DIR" ] && [ -f "$RESUME_DIR/$name.ckpt" ]; then
    args+=(--resume "$RESUME_DIR/$name.ckpt")
  fi
  # shellcheck disable=SC2086 # TRAIN_ARGS is split on purpose
  (
    set -o pipefail
    "$PY" "$HERE/train.py" "${args[@]}" ${TRAIN_ARGS:-} 2>&1 | sed -u "s/^/[$name] /" >>"$LOG"
    echo "[$name] exit $?" >>"$LOG"
  ) &
done
wait

status=0
grep -q '\] exit [^0]' "$LOG" && status=1
files=()
for spec in $MODELS; do
  name=${spec%%:*}
  for ext in h5 f32; do
    [ -f "$OUT/$name.$ext" ] && files+=("$name.$ext")
  done
done
if [ ${#files[@]} -gt 0 ]; then
  tar -cf "$OUT/models.tar" -C "$OUT" "${files[@]}" && (cd "$OUT" && rm -f "${files[@]}")
fi
summary=$(grep -E '\] ( *[0-9.]+s (held-out|step [0-9]+: training ends|wrote .*\.h5)|exit )' "$LOG")
{
  echo "== summary"
  echo "$summary"
  echo "== $(date -u '+%H:%M:%S UTC') models.tar: ${files[*]:-nothing}"
  ls -la "$OUT"
} >>"$LOG"
exit $status
