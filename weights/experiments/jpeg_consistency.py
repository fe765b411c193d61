#!/usr/bin/env python3
"""Tried and dropped (docs/performance.md, fourth session): does projecting
`deblock`'s output back into the JPEG's quantization cells help? For each
photo and quality: PIL's JPEG of the clean photo, `imrestore -m deblock -d
cpu` on it, then the output's luma DCT clamped to [c - 1/2, c + 1/2] steps of
the JPEG's own coefficients c (recovered from the decoded luma: an
approximation; chroma untouched). Prints PSNR of the JPEG, the model and the
projection per photo and the means.

    /usr/bin/python3 weights/experiments/jpeg_consistency.py IMRESTORE HELDOUT_DIR 20,90 \\
        matplotlib-hopper sklearn-china plasma-cups budgie-canyon-wren pop-facade
"""

import io
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

from jpeg_common import blocks_dct, blocks_idct, luma


def ycc(rgb):
    y = luma(rgb)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return np.stack([y, -0.168736 * r - 0.331264 * g + 0.5 * b + 128, 0.5 * r - 0.418688 * g - 0.081312 * b + 128], -1)


def rgb(ycc_):
    y, cb, cr = ycc_[..., 0], ycc_[..., 1] - 128, ycc_[..., 2] - 128
    return np.stack([y + 1.402 * cr, y - 0.344136 * cb - 0.714136 * cr, y + 1.772 * cb], -1)


def pad8(p):
    h, w = p.shape
    return np.pad(p, ((0, -h % 8), (0, -w % 8)), mode="edge")


def project(out_rgb, jpeg_bytes):
    im = Image.open(io.BytesIO(jpeg_bytes))
    q = np.array(im.quantization[0], np.float64).reshape(8, 8)  # Pillow: natural order
    dec = np.asarray(im.convert("RGB"), np.float64)
    h, w = dec.shape[:2]
    c = np.round(blocks_dct(pad8(luma(dec)) - 128) / q)
    o = ycc(out_rgb)
    d = np.clip(blocks_dct(pad8(o[..., 0]) - 128), (c - 0.5) * q, (c + 0.5) * q)
    o[..., 0] = blocks_idct(d)[:h, :w] + 128
    return np.clip(rgb(o), 0, 255)


def psnr(a, b):
    return 10 * np.log10(255 ** 2 / np.mean((np.round(np.clip(a, 0, 255)) - b) ** 2))


def main():
    exe, heldout, qualities, names = sys.argv[1], sys.argv[2], [int(v) for v in sys.argv[3].split(",")], sys.argv[4:]
    with tempfile.TemporaryDirectory() as tmp:
        for q in qualities:
            rows = []
            for n in names:
                clean = np.asarray(Image.open(os.path.join(heldout, n + ".png")).convert("RGB"), np.float64)
                b = io.BytesIO()
                Image.fromarray(clean.astype(np.uint8)).save(b, "JPEG", quality=q)
                with open(os.path.join(tmp, "in.jpg"), "wb") as f:
                    f.write(b.getvalue())
                subprocess.run([exe, os.path.join(tmp, "in.jpg"), "-m", "deblock", "-d", "cpu", "-o",
                                os.path.join(tmp, "out.png"), "-f", "-q"], check=True)
                out = np.asarray(Image.open(os.path.join(tmp, "out.png")).convert("RGB"), np.float64)
                dec = np.asarray(Image.open(io.BytesIO(b.getvalue())).convert("RGB"), np.float64)
                rows.append((psnr(dec, clean), psnr(out, clean), psnr(project(out.copy(), b.getvalue()), clean)))
                print(q, n, " ".join(f"{v:.2f}" for v in rows[-1]), flush=True)
            print("mean, quality", q, "(jpeg, deblock, projected):", " ".join(f"{v:.3f}" for v in np.mean(rows, 0)))


if __name__ == "__main__":
    main()
