#!/usr/bin/env python3
"""How app/image/jpeg_quality.cpp's estimate_jpeg_quality got its window
(weights/README.md, "JPEG quality estimate"): the same estimator in numpy on
every third held-out photo from FIRST, JPEG'd by PIL at qualities 10-90,
for a window A + B q and a fewest count; prints each photo's estimates and
the mean and largest absolute error (matplotlib-hopper, a JPEG before, left
out of both).

    /usr/bin/python3 weights/experiments/jpeg_quality_window.py HELDOUT_DIR A B FEWEST FIRST
    # the three tried: 0.6 0.1 20 0; 0.6 0.04 20 0; 0.8 0.04 40 0
"""

import io
import os
import sys

import numpy as np
from PIL import Image

from jpeg_common import blocks_dct, ijg_luma, luma

COEFFICIENTS = [(0, 1), (1, 0), (2, 0), (1, 1), (0, 2), (0, 3), (1, 2), (2, 1), (3, 0)]  # zigzag 1..9


def step(values, a, b, fewest):
    best = 1
    for q in range(2, 256):
        window = a + b * q
        large = np.abs(values) > 0.5 * q
        if large.sum() < fewest:
            continue
        r = values[large] / q
        near = np.mean(np.abs(r - np.round(r)) * q < window)
        chance = min(1, 2 * window / q)
        if near > chance + 0.5 * (1 - chance):
            best = q
    return best


def estimate(rgb, a, b, fewest):
    y = luma(rgb) - 128
    h, w = y.shape[0] // 8 * 8, y.shape[1] // 8 * 8
    d = blocks_dct(y[:h, :w]).reshape(-1, 8, 8)
    steps = {(u, v): step(d[:, u, v], a, b, fewest) for u, v in COEFFICIENTS}
    err = [(sum(abs(np.log(ijg_luma(q)[u, v] / s)) for (u, v), s in steps.items()), q) for q in range(1, 101)]
    return min(err)[1]


def main():
    heldout, a, b, fewest, first = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    names = sorted(f[:-4] for f in os.listdir(heldout) if f.endswith(".png"))[first::3]
    errors = []
    for n in names:
        clean = Image.open(os.path.join(heldout, n + ".png")).convert("RGB")
        row = []
        for q in (10, 20, 30, 40, 60, 80, 90):
            buf = io.BytesIO()
            clean.save(buf, "JPEG", quality=q)
            e = estimate(np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"), float), a, b, fewest)
            row.append(f"{q}->{e}")
            if n != "matplotlib-hopper":
                errors.append(abs(e - q))
        print(n, " ".join(row), flush=True)
    print(f"window {a:g} + {b:g} q, fewest {fewest}: mean abs error {np.mean(errors):.2f}, largest {max(errors)}")


if __name__ == "__main__":
    main()
