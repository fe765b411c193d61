#!/usr/bin/env python3
"""Before/after picture of REAL noisy photos for the README: camera noise that
was never synthetic (high-ISO shots from outside the project, licensed CC BY-SA
4.0: docs/images/real-noise/README.md), restored by `imrestore` with several
bundled models, side by side. No clean reference exists, so there is no PSNR:
the picture is for the eye (does the grain go, does the detail stay).

    scripts/real_noise_crops.py IMRESTORE OUT.png [--models denoise,denoise-unet-s,denoise-unet,photo] [-d cpu]

Each photo of PHOTOS is restored whole by each model (on whatever device the
tool picks; -d passes one), then the same crop of each result is cut out:
one row per photo, noisy | model 1 | model 2 | ..., upscaled 2x with nearest
neighbour so the grain stays visible. Needs numpy and PIL.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image, ImageDraw

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "docs/images/real-noise")
# (file, crop x, y, w, h, what): a crop where both grain and detail show.
PHOTOS = [
    ("cup-rx100m4-iso6400.jpg", 540, 250, 192, 144, "Sony RX100 IV, ISO 6400 (camera JPEG)"),
    ("matterhorn-d750-iso6400.png", 144, 144, 192, 144, "Nikon D750, ISO 6400, 20 s (a crop)"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("imrestore")
    ap.add_argument("out")
    ap.add_argument("--models", default="denoise,denoise-unet-s,denoise-unet,photo")
    ap.add_argument("-d", "--device", default="auto")
    args = ap.parse_args()
    models = args.models.split(",")

    rows, labels = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name, x, y, cw, ch, what in PHOTOS:
            path = os.path.join(HERE, name)
            noisy = np.asarray(Image.open(path).convert("RGB"))
            tiles = [noisy]
            for model in models:
                out = os.path.join(tmp, f"{model}-{os.path.splitext(name)[0]}.png")
                subprocess.run([args.imrestore, path, "-o", out, "-m", model, "-d", args.device, "--force", "-q"],
                               check=True)
                tiles.append(np.asarray(Image.open(out).convert("RGB")))
            crops = [t[y:y + ch, x:x + cw] for t in tiles]
            rows.append(np.concatenate([np.pad(c, ((4, 4), (4, 4), (0, 0)), constant_values=255) for c in crops], 1))
            labels.append(f"{name}: {what}")
    grid = np.concatenate(rows, 0).repeat(2, 0).repeat(2, 1)
    label_h = 22
    canvas = Image.new("RGB", (grid.shape[1], grid.shape[0] + label_h * (len(rows) + 1)), "white")
    canvas.paste(Image.fromarray(grid), (0, label_h))
    draw = ImageDraw.Draw(canvas)
    draw.text((8, 4), "noisy | " + " | ".join(models) + " (crops, 2x)", fill="black")
    for i, text in enumerate(labels):
        draw.text((8, grid.shape[0] + label_h * (i + 1) + 4), f"row {i + 1}: {text}", fill="black")
    canvas.save(args.out, optimize=True)
    print("wrote", args.out)


if __name__ == "__main__":
    sys.exit(main())
