#!/usr/bin/env python3
"""What carrying a network's weights as int8 would cost it (weights/README.md,
"Fifteenth session"): writes a copy of a model file whose weights went through
train.py's own compact-checkpoint rounding (encode_compact with int8, then
decode_compact: each tensor of rank >= 2 and at least INT8_MIN_NUMEL elements
to int8 per slice along its first dimension, max |w| -> 127; the others are
left as they are), drops its validated precisions, and prints the relative RMS
change of those weights; the copy is then measured like any model, e.g.
`imrestore eval weights/data/heldout --noise 15 --seed 0 -m OUT.h5 -d cpu
--baselines none --json`.

    python3 weights/experiments/int8_rounding.py MODEL.h5 OUT.h5
"""

import os
import shutil
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import train  # noqa: E402


def main():
    src, dst = sys.argv[1:3]
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        for key in ("validated_precisions", "precision_validation"):
            if key in f.attrs:
                del f.attrs[key]
        datasets = {}

        def collect(name, obj):  # returns None: visititems stops at a callback's first other value
            if isinstance(obj, h5py.Dataset) and obj.dtype.kind == "f":
                datasets[name] = obj
        f.visititems(collect)
        weights = {name: torch.from_numpy(d[...].astype(np.float32)) for name, d in datasets.items()}
        enc = train.encode_compact(weights, "int8")
        rounded = {name: v for name, v in train.decode_compact(enc).items() if isinstance(enc[name], dict)}
        num = den = 0.0
        for name, q in rounded.items():
            w = weights[name].double()
            num += float(((q.double() - w) ** 2).sum())
            den += float((w ** 2).sum())
            datasets[name][...] = q.numpy().astype(datasets[name].dtype)
    print(f"wrote {dst}: {len(rounded)} weight tensors rounded to int8 per slice, "
          f"relative RMS change {(num / den) ** 0.5:.4f}")


if __name__ == "__main__":
    main()
