#!/bin/bash
# One GPU call's worth of U-Net training (weights/README.md, "Training", "Running").
#
#   weights/train_unet.sh OUT_DIR SHARD_INDEX [CKPT_DIR]
#
# Trains ARCH on training shard SHARD_DIR/train-KK.tar (KK = SHARD_INDEX, two
# digits), evaluating on SHARD_DIR/heldout.tar, resuming from CKPT_DIR/NAME.ckpt
# (or its parts NAME.ckpt.partN, joined here) when that exists, for MINUTES of
# wall clock from the start of train.py (final evaluation and writing included).
#
# OUT_DIR ends up with at most 8 files (what the GPU host returns: 8 files of at
# most 16 MiB, 64 MiB together):
#   train.log              train.py's output and a summary
#   NAME.curve.jsonl       held-out PSNR against cumulative training seconds,
#                          all calls so far (one JSON object a line)
#   NAME.ckpt              compact checkpoint for the next call (split into
#                          NAME.ckpt.part0, .part1, ... of PART_MIB when larger)
#   models.tar             NAME.h5 (format v3, when weights/export_graph.py is
#                          there) and NAME.f32, split into models.tar.partN when
#                          larger than PART_MIB; left out, with a line in
#                          train.log, where it does not fit beside the rest
#                          (FINAL=1 returns it before the checkpoint)
# Environment (defaults in brackets):
#   ARCH [drunet-small]  TASK [denoise]  NAME [TASK-ARCH]  SEED [1]
#   ARCH_KW              JSON constructor sizes (train.py --arch-kw)
#   TOTAL_MINUTES        training minutes the cosine spans over all calls
#                        (train.py --total-train-minutes; kept in the checkpoint,
#                        so later calls may leave it out)
#   MINUTES [9.2]        this call's budget; EVAL_EVERY_S [120]
#   FINAL [0]            1: the last call: the cosine ends in it (train.py
#                        --finish) and models.tar has the first claim on what
#                        comes back
#   SHARD_DIR [weights/data/shards]  PYTHON [python3]  PART_MIB [15]
#   TRAIN_ARGS           further train.py arguments
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 OUT_DIR SHARD_INDEX [CKPT_DIR]" >&2
  exit 2
fi
OUT=$1
K=$2
CKPT_DIR=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
ARCH=${ARCH:-drunet-small}
TASK=${TASK:-denoise}
NAME=${NAME:-$TASK-$ARCH}
SEED=${SEED:-1}
MINUTES=${MINUTES:-9.2}
EVAL_EVERY_S=${EVAL_EVERY_S:-120}
FINAL=${FINAL:-0}
SHARD_DIR=${SHARD_DIR:-$HERE/data/shards}
PART_MIB=${PART_MIB:-15}
export PYTHONUNBUFFERED=1

case $K in '' | *[!0-9]*) echo "$0: SHARD_INDEX must be a number, not '$K'" >&2; exit 2 ;; esac
SHARD=$SHARD_DIR/$(printf 'train-%02d.tar' "$((10#$K))")
for f in "$SHARD" "$SHARD_DIR/heldout.tar"; do
  [ -f "$f" ] || { echo "$0: $f is missing (carry it)" >&2; exit 2; }
done
mkdir -p "$OUT"
LOG=$OUT/train.log

args=(--task "$TASK" --arch "$ARCH" --name "$NAME" --seed "$SEED" --minutes "$MINUTES" --out "$OUT"
      --shard "$SHARD" --heldout-shard "$SHARD_DIR/heldout.tar" --eval-every-s "$EVAL_EVERY_S")
[ -n "${ARCH_KW:-}" ] && args+=(--arch-kw "$ARCH_KW")
[ -n "${TOTAL_MINUTES:-}" ] && args+=(--total-train-minutes "$TOTAL_MINUTES")
[ "$FINAL" = 1 ] && args+=(--finish)

{
  echo "== train_unet.sh $(date -u '+%Y-%m-%d %H:%M:%S UTC'): $NAME ($ARCH ${ARCH_KW:-}), shard $SHARD, $MINUTES min, resume ${CKPT_DIR:-none}"
  nvidia-smi -L 2>/dev/null
  "$PY" -c "import torch, torchvision, numpy, h5py; print('torch', torch.__version__, 'torchvision', torchvision.__version__, 'numpy', numpy.__version__, 'h5py', h5py.__version__, 'cuda', torch.cuda.is_available())" 2>&1
} >>"$LOG"

if [ -n "$CKPT_DIR" ]; then
  if [ -f "$CKPT_DIR/$NAME.ckpt" ]; then
    args+=(--resume "$CKPT_DIR/$NAME.ckpt")
  elif [ -f "$CKPT_DIR/$NAME.ckpt.part0" ]; then
    cat "$CKPT_DIR/$NAME".ckpt.part[0-9] >"/tmp/$NAME.ckpt" || exit 1  # split -d -a 1: at most 10, in order
    args+=(--resume "/tmp/$NAME.ckpt")
    echo "joined $(ls "$CKPT_DIR/$NAME".ckpt.part[0-9] | wc -l) parts into /tmp/$NAME.ckpt" >>"$LOG"
  else
    echo "no $CKPT_DIR/$NAME.ckpt: starting afresh" >>"$LOG"
  fi
fi

set -o pipefail
# shellcheck disable=SC2086 # TRAIN_ARGS is split on purpose
"$PY" "$HERE/train.py" "${args[@]}" ${TRAIN_ARGS:-} 2>&1 | tee -a "$LOG"
status=$?
echo "== train.py exit $status" >>"$LOG"

# What comes back: at most 8 files of PART_MIB (< 16 MiB), 64 MiB together.
# Each of CKPT and MODELS is one file, or PART_MIB parts of it.
part=$((PART_MIB * 1024 * 1024))
limit=$((63 * 1024 * 1024))
files=()
for ext in h5 f32; do
  [ -f "$OUT/$NAME.$ext" ] && files+=("$NAME.$ext")
done
if [ ${#files[@]} -gt 0 ]; then
  tar -cf "$OUT/models.tar" -C "$OUT" "${files[@]}" && (cd "$OUT" && rm -f "${files[@]}")
fi
size() { stat -c %s "$1" 2>/dev/null || echo 0; }
nparts() { echo $((($(size "$1") + part - 1) / part)); }
used=$(($(size "$OUT/train.log") + $(size "$OUT/$NAME.curve.jsonl") + 65536))
nfiles=2
order=("$NAME.ckpt" models.tar)
[ "$FINAL" = 1 ] && order=(models.tar "$NAME.ckpt")
for f in "${order[@]}"; do
  p=$OUT/$f
  [ -f "$p" ] || continue
  n=$(nparts "$p")
  if [ $((used + $(size "$p"))) -gt $limit ] || [ $((nfiles + n)) -gt 8 ]; then
    echo "== NOT returned: $f ($(($(size "$p") / 1048576)) MiB) does not fit beside the rest of what comes back" \
         "(8 files, 64 MiB)$([ "$f" = models.tar ] && echo "; FINAL=1 returns it instead of the checkpoint, or write it from the checkpoint: train.py --resume NAME.ckpt --export-only")" >>"$LOG"
    rm -f "$p"
    continue
  fi
  used=$((used + $(size "$p")))
  nfiles=$((nfiles + n))
  if [ "$n" -gt 1 ]; then
    split -b "$part" -d -a 1 "$p" "$p.part" && rm -f "$p"
    echo "== $f split into $n parts (join: cat $f.part0 $f.part1 ... > $f)" >>"$LOG"
  fi
done
rm -f "$OUT"/*.tmp
{
  echo "== summary"
  grep -E '(held-out|training ends|wrote |torch.compile|NOT writing|next call|resumed)' "$LOG" | grep -v '^==' | tail -40
  echo "== $(date -u '+%H:%M:%S UTC')"
  ls -la "$OUT"
} >>"$LOG"
exit $status
