#!/usr/bin/env python3
"""Before/after picture of REAL noisy photos for the README: noise that was
never synthetic (high-ISO photos from outside the project as their authors
published them, licensed CC BY-SA 4.0: docs/images/real-noise/README.md; the
picture is CC BY-SA 4.0 too and names them), restored by `imrestore` with several
bundled models, side by side. No clean reference exists, so there is no PSNR:
the picture is for the eye (does the grain go, does the detail stay).

    scripts/real_noise_crops.py IMRESTORE OUT.png [--models denoise,denoise-unet-s,denoise-unet,photo] [-d cpu]

Each photo of PHOTOS is restored whole by each model (on whatever device the
tool picks; -d passes one), then the same crop of each result is cut out:
one row per photo, noisy | model 1 | model 2 | ..., upscaled 2x with nearest
neighbour so the grain stays visible. It prints, per photo and model, how much
the model changed the whole image (RMS of output minus input, 8-bit levels)
and the high-pass left (standard deviation of the image minus its 5x5 mean,
over the whole image and over its darkest 30%, shrunk by 4 px: on the
Matterhorn the rock, where there are no stars). Needs numpy, PIL and h5py
(weights/imrestore_model.py's box mean).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "weights"))
from crop_grid import framed_row, save_grid  # noqa: E402
from imrestore_model import box_mean  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "docs/images/real-noise")
# (file, crop x, y, w, h, what and whose): a crop where both grain and detail show.
PHOTOS = [
    ("cup-rx100m4-iso6400.jpg", 540, 250, 192, 144,
     "Sony RX100 IV, ISO 6400, darktable export; (c) Andreas Schneider, CC BY-SA 4.0 (pixls.us)"),
    ("matterhorn-d750-iso6400.png", 144, 144, 192, 144,
     "Nikon D750, ISO 6400, 20 s, Lightroom export, a crop; Jean Schmitt, CC BY-SA 4.0 (Wikimedia Commons)"),
]


def hwc_box_mean(img, window):
    """imrestore_model.box_mean (clipped to the image) of an [H, W, C] image."""
    return box_mean(img.transpose(2, 0, 1), window).transpose(1, 2, 0)


def high_pass_std(img, mask):
    return float((img - hwc_box_mean(img, 5))[mask].std())


def dark_region(img):
    """The darkest 30% of pixels, shrunk by 4 px (a pixel stays where its whole 9x9 window is dark)."""
    lum = img.mean(2)
    dark = (lum < np.percentile(lum, 30)).astype(np.float64)[:, :, None]
    return hwc_box_mean(dark, 9)[:, :, 0] > 1 - 1e-9


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
            before = noisy.astype(np.float64)
            every, dark = np.ones(before.shape[:2], bool), dark_region(before)
            print(f"{name}: high-pass {high_pass_std(before, every):.2f} "
                  f"(darkest 30%: {high_pass_std(before, dark):.2f})")
            tiles = [noisy]
            for model in models:
                out = os.path.join(tmp, f"{model}-{os.path.splitext(name)[0]}.png")
                subprocess.run([args.imrestore, path, "-o", out, "-m", model, "-d", args.device, "--force", "-q"],
                               check=True)
                tiles.append(np.asarray(Image.open(out).convert("RGB")))
                after = tiles[-1].astype(np.float64)
                print(f"  {model:15s} change {np.sqrt(((after - before) ** 2).mean()):5.2f} RMS, high-pass left "
                      f"{high_pass_std(after, every):5.2f} (darkest 30%: {high_pass_std(after, dark):.2f})")
            rows.append(framed_row([t[y:y + ch, x:x + cw] for t in tiles]))
            labels.append(f"row {len(rows)}: {name}: {what}")
    save_grid(rows, "noisy | " + " | ".join(models) + " (crops, 2x; this picture: CC BY-SA 4.0)", labels, args.out)
    print("wrote", args.out)


if __name__ == "__main__":
    sys.exit(main())
