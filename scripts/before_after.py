#!/usr/bin/env python3
"""Before/after picture for the README: crops of a held-out photo, degraded by
`imrestore degrade` and restored by `imrestore`, side by side.

    scripts/before_after.py IMRESTORE OUT.png [--photo weights/data/heldout/NAME.png]

For each model (denoise and denoise-unet at noise 25, deblock at JPEG
quality 20, deblur at blur 1.5 + noise 2, photo on the photo mix: this photo's
draw of --seed) one row: clean | degraded | restored, the same crop of
each, upscaled 2x with nearest neighbour so single pixels stay visible, and
each row's whole-photo PSNR under the picture. Needs /usr/bin/python3 with numpy and PIL
(python3-numpy, python3-pil); the photos come from weights/data/build_dataset.py.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crop_grid import framed_row, save_grid  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS = [
    ("denoise", ["--noise", "25"], "noise sigma 25"),
    ("denoise-unet", ["--noise", "25"], "noise sigma 25"),
    ("deblock", ["--jpeg", "20"], "JPEG quality 20"),
    ("deblur", ["--blur", "1.5", "--noise", "2"], "blur 1.5 px + noise 2"),
    ("photo", ["--mix", "photo"], "the photo mix"),
]


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return 10 * np.log10(255.0**2 / mse)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("imrestore")
    ap.add_argument("out")
    ap.add_argument("--photo", default=os.path.join(ROOT, "weights/data/heldout/lomiri-nuthatch.png"))
    ap.add_argument("--crop", default="", help="X,Y,W,H of the crop (default: a 192x128 centre crop)")
    ap.add_argument("--seed", default="1")
    args = ap.parse_args()

    clean = np.asarray(Image.open(args.photo).convert("RGB"))
    h, w = clean.shape[:2]
    if args.crop:
        x, y, cw, ch = map(int, args.crop.split(","))
    else:
        cw, ch = 192, 128
        x, y = (w - cw) // 2, (h - ch) // 2
    tiles, labels = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for model, degradation, what in ROWS:
            degraded_path = os.path.join(tmp, model + "-in.png")
            restored_path = os.path.join(tmp, model + "-out.png")
            subprocess.run([args.imrestore, "degrade", args.photo, "-o", degraded_path, "--seed", args.seed,
                            *degradation], check=True, stdout=subprocess.DEVNULL)
            subprocess.run([args.imrestore, degraded_path, "-o", restored_path, "-m", model, "--force"], check=True,
                           stdout=subprocess.DEVNULL)
            degraded = np.asarray(Image.open(degraded_path).convert("RGB"))
            restored = np.asarray(Image.open(restored_path).convert("RGB"))
            tiles.append(framed_row([img[y:y + ch, x:x + cw] for img in (clean, degraded, restored)]))
            labels.append(f"{model}: {what}, whole photo {psnr(clean, degraded):.2f} -> {psnr(clean, restored):.2f} dB")
    save_grid(tiles, f"clean | degraded | restored ({os.path.basename(args.photo)}, crop {cw}x{ch} at {x},{y}, 2x)",
              labels, args.out)
    print("\n".join(labels))
    print("wrote", args.out)


if __name__ == "__main__":
    sys.exit(main())
