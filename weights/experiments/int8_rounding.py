#!/usr/bin/env python3
"""What carrying a network's weights as int8 would cost it (weights/README.md,
"Fifteenth session"; train.py's compact checkpoints round each weight tensor of
rank >= 2 to int8 per slice along its first dimension, max |w| -> 127): writes
a copy of a model file with its weights so rounded (its validated precisions
dropped) and prints the relative RMS change of those weights; the copy is then
measured like any model, e.g. `imrestore eval weights/data/heldout --noise 15
--seed 0 -m OUT.h5 -d cpu --baselines none --json`.

    python3 weights/experiments/int8_rounding.py MODEL.h5 OUT.h5
"""

import shutil
import sys

import h5py
import numpy as np

INT8_MIN_NUMEL = 4096  # train.py's: smaller tensors travel as fp16


def main():
    src, dst = sys.argv[1:3]
    shutil.copy(src, dst)
    num = den = 0.0
    count = 0
    with h5py.File(dst, "r+") as f:
        for key in ("validated_precisions", "precision_validation"):
            if key in f.attrs:
                del f.attrs[key]
        datasets = []
        f.visititems(lambda name, obj: datasets.append(obj) if isinstance(obj, h5py.Dataset) else None)
        for d in datasets:
            if d.dtype.kind != "f" or d.ndim < 2 or d.size < INT8_MIN_NUMEL:
                continue
            w = d[...].astype(np.float64)
            rows = w.reshape(w.shape[0], -1)
            scale = np.maximum(np.abs(rows).max(axis=1) / 127.0, 1e-30)[:, None]
            q = (np.clip(np.round(rows / scale), -127, 127) * scale).reshape(w.shape)
            num += ((q - w) ** 2).sum()
            den += (w ** 2).sum()
            d[...] = q.astype(d.dtype)
            count += 1
    print(f"wrote {dst}: {count} weight tensors rounded to int8 per slice, relative RMS change {(num / den) ** 0.5:.4f}")


if __name__ == "__main__":
    main()
