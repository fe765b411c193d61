#!/usr/bin/env python3
"""PSNR of restored images against their clean photo, split by how textured
each pixel's neighbourhood is in the clean photo (the standard deviation of
its gray 7x7 window, cut at its quartiles): where a method wins or loses
within one photo (weights/README.md, "Eighteenth session": the five-level
denoiser against CBM3D on skimage-rocket, better on the flat half, worse on
the most textured quarter).

    python3 weights/psnr_by_texture.py CLEAN.png NAME=RESTORED.png [NAME=RESTORED.png ...]

Needs numpy and PIL. Each restored image must have the clean photo's size;
the PSNR is over 8-bit RGB, its squared error averaged over the channels
first, as `imrestore eval` computes it over the whole image.
"""
import sys

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from PIL import Image

WINDOW = 7  # the neighbourhood whose spread says "textured": about a noise grain's reach at sigma 15-50
QUARTILES = (0.0, 0.25, 0.5, 0.75, 1.0)


def load(path):
    return np.asarray(Image.open(path).convert("RGB"), np.float64)


def psnr(mse):
    return float("inf") if mse == 0 else 10.0 * np.log10(255.0 ** 2 / mse)


def main():
    if len(sys.argv) < 3 or any("=" not in a for a in sys.argv[2:]):
        sys.exit(__doc__)
    clean = load(sys.argv[1])
    gray = clean.mean(axis=2)
    r = WINDOW // 2
    spread = sliding_window_view(np.pad(gray, r, mode="edge"), (WINDOW, WINDOW)).std(axis=(2, 3))
    cuts = np.quantile(spread, QUARTILES)
    # Quartile k holds cuts[k] <= spread < cuts[k + 1] (the last one closed): each pixel in one.
    which = np.clip(np.searchsorted(cuts, spread, side="right") - 1, 0, len(QUARTILES) - 2)
    print(f"{sys.argv[1]}: {WINDOW}x{WINDOW} gray spread quartiles " + ", ".join(f"{c:.1f}" for c in cuts))
    for arg in sys.argv[2:]:
        name, path = arg.split("=", 1)
        img = load(path)
        if img.shape != clean.shape:
            sys.exit(f"{path}: {img.shape[1]}x{img.shape[0]}, not the clean photo's {clean.shape[1]}x{clean.shape[0]}")
        err = ((img - clean) ** 2).mean(axis=2)
        parts = [f"q{k + 1} {psnr(err[which == k].mean()):.2f}" for k in range(len(QUARTILES) - 1)]
        print(f"  {name:12s} whole {psnr(err.mean()):.2f} dB; flattest to most textured quarter: " + ", ".join(parts))


if __name__ == "__main__":
    main()
